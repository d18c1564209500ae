#!/bin/sh
# GPU test (issue 37): the attention template's grouped-query heads (HKV)
# and decoding (SQ) through the correctness gate. Three benchmark shapes,
# each a `check --gpu` over a seeded sample of EVO_GQA_SAMPLE (default 10)
# valid configurations plus one picked for it:
#   GQA     B2 H32 HKV8 S1024 D128, causal: WS with PACKGQA
#   MQA     B4 H8 HKV1 S512 D64: WS with cp.async loads (LOADS=1), LAZY, PACKGQA
#   decode  B8 H32 HKV8 SQ1 S4096 D128: 16-row tiles, 8 KV splits, PACKGQA
# (the seed-37 sample adds FA2 configurations with KV splits merged by
# attn_combine and through a cluster, with and without PACKGQA, and a
# persistent WS one), every one on all of the task's shapes (its GQA, MQA
# and SQ in {1, 3, 16} shapes with odd S, causal and not, among them) with
# 3 input seeds on every input profile. The sample is the same in the three (constraints do not
# depend on the shape's runtime dims), so its units compile once. Passes
# only when every configuration compiles and every one is correct. Skips
# (77) without a GPU.
set -u
E=${EVOENG:?}
ROOT=${EVO_SOURCE_ROOT:?}
. "$ROOT/tests/lib_gate.sh"
"$E" --version 2>&1 | grep -q "^GPU 0:" || { echo "SKIP: no GPU"; exit 77; }
n=${EVO_GQA_SAMPLE:-10} seed=${EVO_GQA_SEED:-37} fail=0
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
one() {   # one LABEL PARAMS DIMS...
    label=$1; params=$2; shift 2
    dims=""
    for d in "$@"; do dims="$dims --dim $d"; done
    # shellcheck disable=SC2086
    "$E" check "$ROOT/templates/attention/task.json" --gpu $dims --params "$params" --sample "$n" \
        --seed "$seed" >"$tmp/$label.log" 2>&1
    rc=$?
    grep -E "\(benchmark\)|configurations \+ the reference|correctness gate on" "$tmp/$label.log"
    gate_verdict "$tmp/$label.log" "$rc" $((n + 1)) "$label" || fail=1
}
one gqa WS=1,BLOCK_M=128,BLOCK_N=128,CONSUMERS=2,PACKGQA=1 B=2 H=32 HKV=8 S=1024 D=128 CAUSAL=1
one mqa WS=1,BLOCK_M=128,CONSUMERS=2,LOADS=1,LAZY=1,PACKGQA=1 HKV=1
one decode BLOCK_M=16,WARPS=1,BLOCK_N=64,STAGES=2,SPLITS=8,PACKGQA=1 B=8 H=32 HKV=8 SQ=1 S=4096 D=128
exit $fail

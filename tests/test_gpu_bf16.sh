#!/bin/sh
# GPU test (issue 37): the attention template's correctness sweep in bf16
# (DTYPE=1). A seeded sample of EVO_BF16_SAMPLE (default 100) distinct
# valid configurations, plus the B4 H8 S2048 D64 winner of the SDPA table
# (WS, PERSIST, LAZY, TAIL, STAGGER, MAXSKIP=2, 256-key tiles), compiled
# with NVRTC in bf16, each through the correctness gate on every shape of
# the task (all in bf16: no shape sets DTYPE) with 3 input seeds on every
# input profile, against the bf16 tolerance. The sample with the default
# seed covers the FA2 mma.sync path, WGMMA, WS (TMA and LOADS=1
# cp.async, LSUM, PVSPLIT, LAZY, MAXSKIP, PERSIST), KV splits merged by
# attn_combine and through a cluster. Passes only when every configuration
# compiles and every one is correct. Skips (77) without a GPU.
set -u
E=${EVOENG:?}
ROOT=${EVO_SOURCE_ROOT:?}
n=${EVO_BF16_SAMPLE:-100}
seed=${EVO_BF16_SEED:-11}
winner=WS=1,BLOCK_M=128,BLOCK_N=256,CONSUMERS=2,PERSIST=1,LAZY=1,TAIL=1,STAGGER=1,MAXSKIP=2
if ! "$E" --version 2>&1 | grep -q "^GPU 0:"; then echo "SKIP: no GPU"; exit 77; fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$E" check "$ROOT/templates/attention/task.json" --gpu --dim DTYPE=1 --params "$winner" --sample "$n" \
    --seed "$seed" >"$tmp/check.log" 2>&1
rc=$?
grep -E "DTYPE=1  \(benchmark\)|configurations \+ the reference|correctness gate on" "$tmp/check.log"
. "$ROOT/tests/lib_gate.sh"
gate_verdict "$tmp/check.log" "$rc" $((n + 1)) "bf16 sweep" || exit 1

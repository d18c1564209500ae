#!/bin/sh
# GPU test: the warp-specialised race of bfac19a stays fixed. WS=1
# OVERLAP=1 PERSIST=1 PACKGQA=1 (BLOCK_M=128 BLOCK_N=128 STAGES=3
# CONSUMERS=2 REGSPLIT TAIL LSUM DESCADD) gave 34 to 1,242 wrong outputs
# in every gate run at B2 H32 HKV8 S1024 D128 (8 seeds) until a6c9446's
# proxy fence between the consumers' ldmatrix reads of the Q tile and the
# persistent producer's next TMA load of it. The task refuses that corner
# until the whole gpu suite has gated it, so a copy of the task without
# that constraint runs the configuration (twice), with O_STAGE=0, and
# with TAIL, LSUM and DESCADD off, each through the gate with 8 seeds at
# that shape: causal as the benchmark, where every run failed. Skips
# (77) without a GPU.
set -u
E=${EVOENG:?}
ROOT=${EVO_SOURCE_ROOT:?}
if ! "$E" --version 2>&1 | grep -q "^GPU 0:"; then echo "SKIP: no GPU"; exit 77; fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
. "$ROOT/tests/lib_gate.sh"
# the task without the race constraint (gate_task_copy fails if it is gone,
# so that the copy never silently stops meaning anything)
GATE_DROP="WS == 0 || OVERLAP == 0 || PERSIST == 0 || PACKGQA == 0" gate_task_copy "$tmp" || exit 1
base=BLOCK_M=128,BLOCK_N=128,STAGES=3,OVERLAP=1,WS=1,CONSUMERS=2,REGSPLIT=1,PERSIST=1,LOADS=0,PACKGQA=1
fail=0
for p in "$base,TAIL=1,LSUM=1,DESCADD=1" "$base,TAIL=1,LSUM=1,DESCADD=1" "$base,TAIL=1,LSUM=1,DESCADD=1,O_STAGE=0" \
         "$base,TAIL=0,LSUM=0,DESCADD=0"; do
    echo "--- $p"
    "$E" check "$tmp/task.json" --gpu --seeds 8 --sample 0 --params "$p" --dim B=2 --dim H=32 --dim HKV=8 \
        --dim S=1024 --dim D=128 --dim CAUSAL=1 >"$tmp/check.log" 2>&1
    rc=$?
    gate_verdict "$tmp/check.log" "$rc" 1 "the configuration that raced" || fail=1
done
exit $fail

#!/bin/sh
# GPU test: OTMA (each consumer warp stores its 16 rows of O with one TMA
# store a 64-column box, from the Q tile's shared memory) through the
# correctness gate. A copy of the attention task whose OTMA takes only 1
# runs a seeded sample of EVO_OTMA_SAMPLE (default 40) valid
# configurations, then half as many in bf16 (DTYPE=1), through the gate:
# every shape of the task (D=64 and D=128: one box or two; S and SQ not a
# multiple of a tile, where the tensor map clips the rows past the end;
# grouped heads packed or not; decoding), 3 input seeds, every input
# profile. Skips (77) without a GPU.
set -u
E=${EVOENG:?}
ROOT=${EVO_SOURCE_ROOT:?}
n=${EVO_OTMA_SAMPLE:-40}
if ! "$E" --version 2>&1 | grep -q "^GPU 0:"; then echo "SKIP: no GPU"; exit 77; fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
. "$ROOT/tests/lib_gate.sh"
gate_task_copy "$tmp" OTMA 1 WS=1 BLOCK_M=128 || exit 1   # a valid default under OTMA's constraint
"$E" check "$tmp/task.json" --gpu --sample "$n" --seed 21 >"$tmp/check.log" 2>&1
rc=$?
gate_verdict "$tmp/check.log" "$rc" $((n + 1)) "OTMA=1 sample" || exit 1
h=$((n / 2))
"$E" check "$tmp/task.json" --gpu --sample "$h" --seed 22 --dim DTYPE=1 >"$tmp/check.log" 2>&1
rc=$?
gate_verdict "$tmp/check.log" "$rc" $((h + 1)) "OTMA=1 bf16 sample" || exit 1

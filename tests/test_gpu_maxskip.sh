#!/bin/sh
# GPU test: MAXSKIP's rare ways through the correctness gate. MAXSKIP=1
# takes a tile's exponentials without row maxima and goes a long way only
# when a row's P grows past 2^15 (rescale by a power of two) or overflows
# (the scores again with mma.sync): N(0, 1) inputs never get there. The
# template's test values force them on every tile: MAXSKIP=3 the rescale
# way, 4 the recompute way. A copy of the attention task whose MAXSKIP
# values are [3, 4] (spills allowed: only correctness is tested) runs a
# seeded sample of EVO_MAXSKIP_SAMPLE (default 40) valid configurations
# through the gate on all of the task's shapes (D=64 and D=128, causal and
# not, S not a multiple of any tile) with 3 input seeds on every input
# profile of the task (the `large` profile's logits, of std 16, send the
# real MAXSKIP=1 and 2 down the long ways too: test_gpu_sweep gates them
# there). Skips (77) without a GPU.
set -u
E=${EVOENG:?}
ROOT=${EVO_SOURCE_ROOT:?}
n=${EVO_MAXSKIP_SAMPLE:-40}
if ! "$E" --version 2>&1 | grep -q "^GPU 0:"; then echo "SKIP: no GPU"; exit 77; fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
. "$ROOT/tests/lib_gate.sh"
# a valid default under MAXSKIP's constraint: WS, LAZY, 128 rows
GATE_SPILLS=1 gate_task_copy "$tmp" MAXSKIP 3,4 WS=1 LAZY=1 BLOCK_M=128 || exit 1
"$E" check "$tmp/task.json" --gpu --sample "$n" --seed 13 >"$tmp/check.log" 2>&1
rc=$?
gate_verdict "$tmp/check.log" "$rc" $((n + 1)) "MAXSKIP 3/4 sample" || exit 1

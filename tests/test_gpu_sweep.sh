#!/bin/sh
# GPU test (issue 6): the attention template's correctness sweep. A seeded
# sample of EVO_SWEEP_SAMPLE (default 200) distinct valid configurations,
# plus the default, is compiled with NVRTC and every one goes through the
# correctness gate on all of the task's shapes (D=64 and D=128, causal and
# not, S not a multiple of any tile, B*H=1) with 3 input seeds on every
# input profile of the task (normal, large logits, outliers, scaled rows:
# issue 33). Passes only
# when every configuration compiles and every one is correct.
# Skips (77) without a GPU.
set -u
E=${EVOENG:?}
ROOT=${EVO_SOURCE_ROOT:?}
n=${EVO_SWEEP_SAMPLE:-200}
seed=${EVO_SWEEP_SEED:-6}
if ! "$E" --version 2>&1 | grep -q "^GPU 0:"; then echo "SKIP: no GPU"; exit 77; fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# progress lines ("... 40/201") go to the terminal as the sweep runs
"$E" check "$ROOT/templates/attention/task.json" --gpu --sample "$n" --seed "$seed" >"$tmp/check.log" 2>&1 &
pid=$!
tail -n +1 -f --pid="$pid" "$tmp/check.log" 2>/dev/null | grep --line-buffered -E "space |configurations \+ the reference|correctness gate on|\.\.\. |gate:|fail|error" &
tpid=$!
wait "$pid"; rc=$?
wait "$tpid"
. "$ROOT/tests/lib_gate.sh"
gate_verdict "$tmp/check.log" "$rc" $((n + 1)) "sweep" || exit 1

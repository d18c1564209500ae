#!/bin/sh
# GPU test (issue 15): one host, two GPUs. Skips (77) with fewer than two.
#  1. `run --gpus 2`: the run completes, no configuration is judged twice,
#     and children were judged on both GPUs (metrics_json "gpu".index 0
#     and 1), each with its calibration scale;
#  2. ten (KILLS) kill -9s and resumes with --gpus 2 (tests/test_gpu_resume.sh,
#     GPUS=2 KILLS=${KILLS:-10}): nothing lost, nothing judged twice;
#  3. `check --gpu --gpus 2`: the sweep over both GPUs passes.
set -u
E=${EVOENG:?}
ROOT=${EVO_SOURCE_ROOT:?}
if ! "$E" --version 2>&1 | grep -q "^GPU 1:"; then echo "SKIP: fewer than two GPUs"; exit 77; fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fails=0
db=$tmp/p.db
q() { python3 -c "import sqlite3,sys; print('\n'.join('|'.join(map(str,r)) for r in sqlite3.connect(sys.argv[1]).execute(sys.argv[2])))" "$db" "$1"; }
"$E" run --generations 4 --gpus 2 --seed 3 --db "$db" > "$tmp/run.log" 2>&1
rc=$?
grep -E "^optimizing|GPU [01]:|finished" "$tmp/run.log" | sed 's/^/  /'
[ "$rc" -eq 0 ] || { echo "FAIL: run --gpus 2 exit $rc"; tail -20 "$tmp/run.log"; fails=$((fails+1)); }
st=$(q "SELECT status FROM runs")
[ "$st" = "completed" ] || { echo "FAIL: run status $st"; fails=$((fails+1)); }
dups=$(q "SELECT count(*) FROM (SELECT params_key FROM candidates GROUP BY params_key HAVING count(*) > 1)")
[ "$dups" = "0" ] || { echo "FAIL: $dups configurations judged twice"; fails=$((fails+1)); }
per=$(q "SELECT json_extract(metrics_json, '\$.gpu.index') AS g, count(*) FROM candidates WHERE metrics_json IS NOT NULL GROUP BY g ORDER BY g")
echo "  children per GPU (index|count):" $per
for g in 0 1; do
    echo "$per" | grep -q "^$g|" || { echo "FAIL: no child judged on GPU $g"; fails=$((fails+1)); }
done
echo "=== kill -9 and resume on two GPUs"
GPUS=2 KILLS=${KILLS:-10} sh "$ROOT/tests/test_gpu_resume.sh" || { echo "FAIL: resume on two GPUs"; fails=$((fails+1)); }
echo "=== check --gpu --gpus 2"
"$E" check "$ROOT/templates/attention/task.json" --sample 40 --seed 9 --gpu --gpus 2 > "$tmp/check.log" 2>&1
rc=$?
tail -3 "$tmp/check.log" | sed 's/^/  /'
[ "$rc" -eq 0 ] || { echo "FAIL: check --gpu --gpus 2 exit $rc"; fails=$((fails+1)); }
if [ "$fails" -eq 0 ]; then echo "1 passed, 0 failed"; exit 0; fi
echo "0 passed, $fails failed"; exit 1

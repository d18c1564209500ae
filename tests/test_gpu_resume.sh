#!/bin/sh
# GPU test: kill -9 a real run at random moments, resume it, and check the
# bookkeeping: the run completes, no configuration is evaluated twice, and
# every candidate committed before a kill is still there, unchanged.
# Skips (77) without a GPU. GPUS=N: the run and its resumes judge on N
# GPUs (--gpus N; skips with fewer). KILLS=K: K kills (default 3), each
# after a few more commits; fewer kills than asked is a failure.
set -u
E=${EVOENG:?}
ROOT=${EVO_SOURCE_ROOT:?}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
if ! "$E" --version 2>&1 | grep -q "^GPU 0:"; then echo "SKIP: no GPU"; exit 77; fi
gpus=""
if [ -n "${GPUS:-}" ]; then
    if ! "$E" --version 2>&1 | grep -q "^GPU $((GPUS - 1)):"; then echo "SKIP: fewer than $GPUS GPUs"; exit 77; fi
    gpus="--gpus $GPUS"
fi
db=$tmp/p.db
fails=0
q() { sqlite3 "$db" "$1" 2>/dev/null || python3 -c "import sqlite3,sys; print('\n'.join('|'.join(map(str,r)) for r in sqlite3.connect(sys.argv[1]).execute(sys.argv[2])))" "$db" "$1"; }
kills=${KILLS:-3}
# Each kill comes once the run (or its resume) has committed a few more
# candidates (6 to 15, seeded by the cycle), so every kill lands mid-run
# however fast the machine is; the run is long enough for all of them.
gens=$(( kills * 4 + 3 ))
args="--task $ROOT/templates/attention/task.json --generations $gens --population 4 --children 4 --seed 5 --db $db $gpus"
count() { q "SELECT count(*) FROM candidates" 2>/dev/null || echo 0; }
"$E" run $args --quiet >"$tmp/run.log" 2>&1 &
pid=$!
killed=0
for cycle in $(seq 1 "$kills"); do
    base=$(count); base=${base:-0}
    target=$(( base + 6 + (cycle * 7 + $$) % 10 ))
    while kill -0 "$pid" 2>/dev/null && [ "$(count)" -lt "$target" ]; do sleep 0.2; done
    if ! kill -0 "$pid" 2>/dev/null; then echo "run ended before kill $cycle"; break; fi
    kill -9 "$pid"; wait "$pid" 2>/dev/null
    killed=$((killed + 1))
    before=$(q "SELECT id||':'||params_key||':'||status||':'||coalesce(latency_us,'') FROM candidates ORDER BY id")
    nbefore=$(echo "$before" | grep -c . )
    echo "cycle $cycle: killed with $nbefore candidates committed"
    "$E" resume --db "$db" $gpus --quiet >>"$tmp/run.log" 2>&1 &
    pid=$!
    sleep 1
    after=$(q "SELECT id||':'||params_key||':'||status||':'||coalesce(latency_us,'') FROM candidates ORDER BY id" | head -n "$nbefore")
    if [ "$before" != "$after" ]; then echo "FAIL: committed candidates changed after resume"; fails=$((fails+1)); fi
done
echo "$killed of $kills kills made"
[ "$killed" -eq "$kills" ] || { echo "FAIL: the run ended after $killed of $kills kills"; fails=$((fails+1)); }
wait "$pid"; rc=$?
echo "final resume exit $rc"
[ "$rc" -eq 0 ] || { echo "FAIL: resume did not finish cleanly"; tail -20 "$tmp/run.log"; fails=$((fails+1)); }
status=$(q "SELECT status||' '||generations_done FROM runs")
echo "run: $status"
[ "$status" = "completed $((gens + 1))" ] || { echo "FAIL: run not completed with $((gens + 1)) generations"; fails=$((fails+1)); }
dups=$(q "SELECT count(*) FROM (SELECT params_key FROM candidates GROUP BY run_id, params_key HAVING count(*) > 1)")
echo "duplicate configurations: $dups"
[ "$dups" = "0" ] || { echo "FAIL: a configuration was evaluated twice"; fails=$((fails+1)); }
runs=$(q "SELECT count(*) FROM runs")
[ "$runs" = "1" ] || { echo "FAIL: resume created a new run"; fails=$((fails+1)); }
q "SELECT generation, count(*) FROM candidates GROUP BY generation" | sed 's/^/  generation|count /'
"$E" status --db "$db" | sed 's/^/  /'
if [ "$fails" -eq 0 ]; then echo "1 passed, 0 failed"; exit 0; fi
echo "0 passed, $fails failed"; exit 1

#!/bin/sh
# GPU test (issue 34): a hung candidate is caught in seconds. The task
# tests/data/hang/ plants an endless loop (HANG=1, every thread spins on an
# input). An exhaustive run over its 6 configurations (in the order
# THREADS=128 HANG=0, 128 1, 256 1, 512 0, 512 1; 256 0 is the baseline)
# judges the three HANG=1 children `timeout` within 10 s each (their
# watchdog: 20 x the baseline's gate time, at least 2 s; 9.75 s on a worker
# just respawned, which rebuilds its inputs first: the 10 s ceiling less
# 250 ms for the kill and reap), kills and respawns the
# worker each time, goes on and completes with the others ok. The run is
# held to one GPU (--gpus 1): on two, the quick children finish on one
# worker while the other waits out a hang, every hang is recorded after
# them, and no candidate is left to show a respawned worker judging on.
# Then `check --gpu` of HANG=1, which
# has no parent: the default ceiling (10 s: a 9750 ms wait), and
# EVOENG_WATCHDOG_S=3 (2750 ms).
# Prints each time to verdict. Exits 77 without a GPU.
set -u
ROOT=${EVO_SOURCE_ROOT:?EVO_SOURCE_ROOT must point to the source tree}
. "$ROOT/tests/lib_expect.sh"
if ! "$EVOENG" --version 2>&1 | grep -q "^GPU 0:"; then echo "SKIP: no GPU"; exit 77; fi
export EVOENG_CACHE_DIR="$tmp/cache"
T=$ROOT/tests/data/hang/task.json
db=$tmp/p.db

t0=$(date +%s)
expect 0 "an exhaustive run with three hung children completes" -- "$EVOENG" run --task "$T" --strategy exhaustive \
    --population 1 --children 2 --gpus 1 --db "$db" --quiet
echo "run: $(( $(date +%s) - t0 )) s wall"
python3 - "$db" <<'PY' >"$tmp/verdicts" 2>&1; rc=$?
import re, sqlite3, sys
c = sqlite3.connect(sys.argv[1])
status = c.execute("SELECT status FROM runs").fetchone()[0]
rows = c.execute("SELECT id, params_key, status, error, log FROM candidates ORDER BY id").fetchall()
for r in rows:
    print("candidate %d %s: %s%s" % (r[0], r[1], r[2], (": " + r[3]) if r[3] else ""))
hung = [r for r in rows if "HANG=1" in r[1]]
bad = 0
if status != "completed":
    print("FAIL: the run is %s, not completed" % status); bad += 1
if len(hung) != 3 or any(r[2] != "timeout" for r in hung):
    print("FAIL: the HANG=1 children are not all three timeout"); bad += 1
for r in hung:
    m = re.search(r"within (\d+) ms", r[3] or "")
    g = re.search(r"gate ([0-9.]+) ms", r[4] or "")
    deadline = int(m.group(1)) if m else None
    verdict = float(g.group(1)) if g else None
    print("time to verdict of candidate %d: deadline %s ms, gate %s ms" % (r[0], deadline, verdict))
    # the verdict, kill and reap included, comes within the 10 s ceiling
    if deadline is None or deadline > 9750 or verdict is None or verdict > 10000:
        print("FAIL: candidate %d was not judged within 10 s" % r[0]); bad += 1
ok_after = [r for r in rows if hung and r[0] > hung[0][0] and r[2] == "ok"]
if not ok_after:
    print("FAIL: no candidate passed after the first hang: the worker was not respawned"); bad += 1
sys.exit(1 if bad else 0)
PY
cat "$tmp/verdicts"
[ "$rc" -eq 0 ] && ok "every hang judged timeout within 10 s, the worker respawned, the run completed" ||
    fail "the run's verdicts (above)"

# No parent (check --gpu): the ceiling, 10 s by default, EVOENG_WATCHDOG_S to change it.
for w in "" 3; do
    t0=$(date +%s)
    if [ -n "$w" ]; then
        expect 1 "check --gpu of the hang with EVOENG_WATCHDOG_S=$w" -- env EVOENG_WATCHDOG_S="$w" \
            "$EVOENG" check "$T" --gpu --params HANG=1 --sample 0
        want=$((w * 1000 - 250))
    else
        expect 1 "check --gpu of the hang (no parent: the default ceiling)" -- \
            "$EVOENG" check "$T" --gpu --params HANG=1 --sample 0
        want=9750
    fi
    echo "check --gpu: $(( $(date +%s) - t0 )) s wall"
    grep "timeout" "$tmp/out" "$tmp/err" | head -3
    grep_out err "timeout (1)" "check counts the hang as a timeout"
    grep_out out "no reply to gate within $want ms" "the deadline is $want ms"
done
finish

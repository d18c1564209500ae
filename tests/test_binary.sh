#!/bin/sh
# The evoeng binary end to end, without a GPU: it starts, answers --help
# and --version with no libcuda.so.1 (forced absent with EVOENG_LIBCUDA),
# serves an empty store, and uses its documented exit codes.
set -u
ROOT=${EVO_SOURCE_ROOT:?EVO_SOURCE_ROOT must point to the source tree}
. "$ROOT/tests/lib_expect.sh"
export EVOENG_LIBCUDA=/nonexistent/libcuda.so.1

expect 0 "--help" -- "$EVOENG" --help
grep_out out "usage: evoeng <command>" "--help prints usage to stdout"
grep_out out "Exit codes" "--help documents exit codes"
for c in run resume status top lineage show export check bench runs; do
    expect 0 "$c --help" -- "$EVOENG" "$c" --help
    grep_out out "usage: evoeng $c" "$c --help prints its usage"
done
expect 0 "--version without libcuda.so.1" -- "$EVOENG" --version
grep_out out "^evoeng [0-9]" "--version prints the version"
grep_out out "NVRTC [0-9]" "--version prints the NVRTC version"
grep_out out "CUDA driver: not found" "--version says the driver is missing"
# Read-only commands never create a store (issue 14): a missing one exits 4.
expect 4 "status on a missing store" -- "$EVOENG" status --db "$tmp/x.db"
if [ -e "$tmp/x.db" ]; then echo "FAIL status created the store"; fails=$((fails + 1)); else echo "ok   status created no store"; pass=$((pass + 1)); fi
# An empty file is no store: refused, and left as it was (issue 35).
: >"$tmp/empty.db"
expect 4 "status on an empty file" -- "$EVOENG" status --db "$tmp/empty.db"
grep_out err "an empty file, not a population store" "status says the file is empty"
if [ -s "$tmp/empty.db" ] || [ -e "$tmp/empty.db-wal" ] || [ -e "$tmp/empty.db-shm" ]; then
    echo "FAIL status wrote to the empty file"; fails=$((fails + 1)); else echo "ok   the empty file is unchanged"; pass=$((pass + 1)); fi
# A store of schema version 0 (evoeng's application_id, no table): read
# through a copy migrated in memory, the file itself unchanged.
PY=${PYTHON3:-python3}
"$PY" -c 'import sqlite3, sys; c = sqlite3.connect(sys.argv[1]); c.execute("PRAGMA application_id = 1163284293"); c.commit()' "$tmp/x.db"
cp "$tmp/x.db" "$tmp/x.orig"
expect 0 "status on an empty store of an older schema" -- "$EVOENG" status --db "$tmp/x.db"
grep_out out "no runs yet" "status says there are no runs"
expect 0 "top on an empty store" -- "$EVOENG" top --db "$tmp/x.db"
if cmp -s "$tmp/x.db" "$tmp/x.orig" && [ ! -e "$tmp/x.db-wal" ]; then echo "ok   reading an older store leaves it unchanged"; pass=$((pass + 1));
else echo "FAIL reading an older store changed it"; fails=$((fails + 1)); fi
expect 1 "show of a missing candidate" -- "$EVOENG" show 3 --db "$tmp/x.db"
grep_out err "no candidate 3" "show names the missing candidate"
expect 2 "unknown option" -- "$EVOENG" status --frobnicate
grep_out err "^evoeng: unknown option '--frobnicate'" "usage errors go to stderr with the prefix"
# the timing variables of the environment are checked before anything else (no GPU needed)
expect 2 "a bad EVOENG_SAMPLE_MS is a usage error" -- env EVOENG_SAMPLE_MS=fast "$EVOENG" bench "$EVO_SOURCE_ROOT/templates/attention/task.json" --db "$tmp/env.db"
grep_out err "EVOENG_SAMPLE_MS='fast': expected the least length of a timing sample in ms, from 0.05 to 1000" "it names the variable, the value and the range"
expect 2 "an out-of-range EVOENG_SAMPLE_MS is a usage error" -- env EVOENG_SAMPLE_MS=0.001 "$EVOENG" run --generations 1 --db "$tmp/env.db"
expect 2 "a bad EVOENG_TIMING_HOLD is a usage error" -- env EVOENG_TIMING_HOLD=yes "$EVOENG" run --generations 1 --db "$tmp/env.db"
grep_out err "EVOENG_TIMING_HOLD='yes': expected 0" "it names the hold variable"
expect 2 "a bad EVOENG_GPU_WAIT is a usage error" -- env EVOENG_GPU_WAIT=busy "$EVOENG" run --generations 1 --db "$tmp/env.db"
grep_out err "EVOENG_GPU_WAIT='busy': expected block (the default), spin or sleep" "it names the wait variable and its values"
expect 2 "a bad EVOENG_WATCHDOG_S is a usage error" -- env EVOENG_WATCHDOG_S=forever "$EVOENG" run --generations 1 --db "$tmp/env.db"
grep_out err "EVOENG_WATCHDOG_S='forever': expected the most seconds" "the error names the variable and what it expects"
expect 2 "an out-of-range EVOENG_WATCHDOG_S is a usage error" -- env EVOENG_WATCHDOG_S=0.1 "$EVOENG" check "$EVO_SOURCE_ROOT/tests/data/hang/task.json" --gpu
if [ -e "$tmp/env.db" ]; then echo "FAIL a rejected run created its store"; fails=$((fails + 1)); else echo "ok   a rejected run creates no store"; pass=$((pass + 1)); fi
expect 2 "unknown command" -- "$EVOENG" frobnicate
expect 2 "no command" -- "$EVOENG"
printf 'not a database at all, just text\n%.0s' 1 2 3 4 5 6 7 8 9 >"$tmp/junk.db"
cp "$tmp/junk.db" "$tmp/junk.orig"
expect 4 "a file that is not a database" -- "$EVOENG" status --db "$tmp/junk.db"
grep_out err "not an evoeng database" "the store error names the problem"
if cmp -s "$tmp/junk.db" "$tmp/junk.orig"; then echo "ok   the foreign file is unchanged"; pass=$((pass + 1));
else echo "FAIL the foreign file was changed"; fails=$((fails + 1)); fi
expect 5 "run without a GPU" -- "$EVOENG" run --generations 1 --db "$tmp/run/population.db"
grep_out err "GPU" "run says a GPU is needed"
# every form of --gpus opens its first worker before the others: none may crash
for g in all 2 0,1; do
    expect 5 "run --gpus $g without a GPU" -- "$EVOENG" run --gpus "$g" --generations 1 --db "$tmp/run/population.db"
done
# No side effects (issue 34): a run that cannot start leaves no store and no
# folder; check puts its compile cache in $XDG_CACHE_HOME/evoeng (else
# ~/.cache/evoeng), never in the current directory.
[ -e "$tmp/run" ] && fail "a run that could not start created $tmp/run" || ok "a run that cannot start creates no store or folder"
mkdir -p "$tmp/cwd"
(cd "$tmp/cwd" && env -u EVOENG_CACHE_DIR XDG_CACHE_HOME="$tmp/xdg" "$EVOENG" check "$EVO_SOURCE_ROOT/templates/softmax/task.json" \
    --arch sm_90 --sample 0 >/dev/null 2>&1) && [ -z "$(ls -A "$tmp/cwd")" ] && ls "$tmp/xdg/evoeng/"*.json >/dev/null 2>&1 &&
    ok "check caches in \$XDG_CACHE_HOME/evoeng and writes nothing in the current directory" ||
    fail "check wrote into the current directory or not into \$XDG_CACHE_HOME/evoeng: $(ls -A "$tmp/cwd")"
(cd "$tmp/cwd" && env -u EVOENG_CACHE_DIR -u XDG_CACHE_HOME HOME="$tmp/home" "$EVOENG" check "$EVO_SOURCE_ROOT/templates/softmax/task.json" \
    --arch sm_90 --sample 0 >/dev/null 2>&1) && [ -z "$(ls -A "$tmp/cwd")" ] && ls "$tmp/home/.cache/evoeng/"*.json >/dev/null 2>&1 &&
    ok "without XDG_CACHE_HOME: ~/.cache/evoeng" || fail "check did not cache in \$HOME/.cache/evoeng"
expect 5 "bench without a GPU" -- "$EVOENG" bench "${EVO_SOURCE_ROOT}/templates/attention/task.json" --db "$tmp/run.db"
grep_out err "GPU" "bench says a GPU is needed"
expect 5 "bench --repeat (A/A) without a GPU" -- "$EVOENG" bench "${EVO_SOURCE_ROOT}/templates/triad/task.json" --repeat 3 --shared 0 --db "$tmp/run.db"
expect 2 "bench --repeat 0 is a usage error" -- "$EVOENG" bench --repeat 0
grep_out err "repeat: expected an integer from 1" "the bad --repeat value is named"
expect 2 "bench --profile of a profile the task lacks is a usage error" -- "$EVOENG" bench "${EVO_SOURCE_ROOT}/templates/attention/task.json" --profile larg --db "$tmp/run.db"
grep_out err "evoeng: --profile: .*task.json: unknown profile 'larg' (did you mean 'large'?) (the task's profiles: normal large outlier peaky)" "the refusal names the task's profiles"
expect 2 "run --profile naming a profile twice is a usage error" -- "$EVOENG" run --profile large,outlier,large --db "$tmp/prof.db"
grep_out err "evoeng: --profile: profile 'large' is named twice" "the repeated profile is named"
expect 2 "run --profile of a profile the task lacks is a usage error" -- "$EVOENG" run --profile normal,outlyer --db "$tmp/prof.db"
grep_out err "unknown profile 'outlyer' (did you mean 'outlier'?)" "the unknown profile is named, with a suggestion"
[ ! -e "$tmp/prof.db" ] && ok "a refused --profile leaves no store" || fail "run --profile refused but made $tmp/prof.db"
expect 2 "resume takes no --profile (it keeps the run's)" -- "$EVOENG" resume --profile normal --db "$tmp/prof.db"
expect 2 "bench --shared 2 is a usage error" -- "$EVOENG" bench --shared 2
# export from a store recorded on an H200 (tests/data/h200_wgmma_run.sql: a
# 60 s run at the seed shape, trimmed to the lineage of its best, a WGMMA
# kernel compiled for sm_90a), then compare_sdpa.py's dry run of the JSON.
if "$PY" - "$EVO_SOURCE_ROOT" "$tmp/h200.db" <<'PYEOF'
import os, sys
sys.path.insert(0, os.path.join(sys.argv[1], "tests"))
import report_store
report_store.h200_store(sys.argv[1], sys.argv[2]).close()
PYEOF
then
    expect 0 "export the best of a stored WGMMA run" -- "$EVOENG" export --best --db "$tmp/h200.db"
    grep_out out "build:    nvcc -gencode=arch=compute_90a,code=sm_90a -std=c++17 -c FILE.cu" "the header's build line builds for the sm_90a target alone (nvcc 13's -arch=sm_90a also runs a compute_90 pass)"
    grep_out out "lineage:  #1 baseline (1.00x) -> #17 reset" "the header carries the lineage"
    grep_out out "^#define WGMMA 1" "the parameters are baked into the source"
    expect 0 "export it as a harness" -- "$EVOENG" export --best --format harness --db "$tmp/h200.db" -o "$tmp/best_harness.cu"
    grep_out err "wrote candidate 32 to .*best_harness.cu" "export --format harness says what it wrote"
    if grep -q "^// build:    nvcc -gencode=arch=compute_90a,code=sm_90a -std=c++17 -O3 -o best_harness best_harness.cu$" "$tmp/best_harness.cu" &&
        grep -q "^int main(int argc, char \*\*argv)" "$tmp/best_harness.cu"; then echo "ok   the harness has main() and its build line"; pass=$((pass + 1));
    else echo "FAIL the harness lacks main() or its build line"; fails=$((fails + 1)); fi
    expect 2 "an unknown export format is a usage error" -- "$EVOENG" export --best --format exe --db "$tmp/h200.db"
    expect 0 "export it as JSON" -- "$EVOENG" export 32 --format json --db "$tmp/h200.db" -o "$tmp/e32.json"
    grep_out err "wrote candidate 32" "export -o says what it wrote"
    expect 0 "compare_sdpa.py --dry-run reads the JSON export" -- "$PY" "$EVO_SOURCE_ROOT/bench/compare_sdpa.py" "$tmp/e32.json" --dry-run
    grep_out out "NVRTC --gpu-architecture=sm_90a" "compare_sdpa.py compiles an arch-specific export for its target"
    grep_out out "B4 H8 S512 D64" "compare_sdpa.py reads the shape from the plan"
    expect 2 "compare_sdpa.py refuses a replay length of 0 ms" -- "$PY" "$EVO_SOURCE_ROOT/bench/compare_sdpa.py" "$tmp/e32.json" --dry-run --replay-ms 0
    expect 2 "compare_sdpa.py refuses --calls 0" -- "$PY" "$EVO_SOURCE_ROOT/bench/compare_sdpa.py" "$tmp/e32.json" --dry-run --calls 0
    expect 0 "compare_sdpa.py --dry-run writes its method to --out" -- "$PY" "$EVO_SOURCE_ROOT/bench/compare_sdpa.py" "$tmp/e32.json" --dry-run --out "$tmp/dry.json"
    expect 0 "compare_sdpa.py --dry-run --profile lists a row per profile" -- "$PY" "$EVO_SOURCE_ROOT/bench/compare_sdpa.py" "$tmp/e32.json" --dry-run --profile large,outlier
    grep_out out "B4 H8 S512 D64  0       outlier" "the table has the profile's row"
    grep_out out "profile large: Q normal std 4, K normal std 4, V normal std 1" "the dry run names each profile's inputs (from the export's plan)"
    expect 1 "compare_sdpa.py refuses a profile the export lacks" -- "$PY" "$EVO_SOURCE_ROOT/bench/compare_sdpa.py" "$tmp/e32.json" --dry-run --profile larg
    grep_out err "no input profile 'larg' (it has: normal large outlier peaky)" "the refusal names the export's profiles"
    if "$PY" -c "import json,sys; m=json.load(open(sys.argv[1]))['meta']; sys.exit(0 if m['hold'] is True and m['diff'] is False and m['calls'] is None and m['replay_ms'] == 0.5 else 1)" "$tmp/dry.json"; then
        echo "ok   compare_sdpa.py's default: held replays, graphs of about 0.5 ms, not differenced"; pass=$((pass + 1))
    else echo "FAIL compare_sdpa.py's --out meta does not say hold / diff / replay_ms / calls"; fails=$((fails + 1)); fi
    expect 0 "show the exported candidate as JSON" -- "$EVOENG" show 32 --json --db "$tmp/h200.db"
    grep_out out '"gate_stage": "full"' "show --json gives the gate stage"

    # Issue 11: the same store with #32, the fastest, gated on the benchmark
    # shape only (stage A): it is no survivor, best or export.
    cp "$tmp/h200.db" "$tmp/stageA.db"
    "$PY" -c 'import sqlite3, sys; c = sqlite3.connect(sys.argv[1]); c.execute("UPDATE candidates SET gate_stage = 1 WHERE id = 32"); c.commit()' "$tmp/stageA.db"
    expect 1 "export refuses a candidate gated on the benchmark shape only" -- "$EVOENG" export 32 --db "$tmp/stageA.db"
    grep_out err "^evoeng: candidate 32 cannot be exported: it was gated on the benchmark shape only (stage A); never gated on the other shapes" "the refusal names the candidate and why"
    if [ -s "$tmp/out" ]; then echo "FAIL the refused export wrote output"; fails=$((fails + 1)); else echo "ok   the refused export wrote nothing"; pass=$((pass + 1)); fi
    expect 1 "export --format json refuses it too" -- "$EVOENG" export 32 --format json --db "$tmp/stageA.db" -o "$tmp/e32a.json"
    if [ -e "$tmp/e32a.json" ]; then echo "FAIL the refused export created its file"; fails=$((fails + 1)); else echo "ok   the refused export created no file"; pass=$((pass + 1)); fi
    expect 0 "export --best skips it" -- "$EVOENG" export --best --db "$tmp/stageA.db"
    grep_out out "candidate 29 of run 1" "export --best takes the fastest candidate gated on every shape"
    expect 0 "show a stage-A candidate" -- "$EVOENG" show 32 --db "$tmp/stageA.db"
    grep_out out "gate stage   bench: gated on the benchmark shape only (stage A); never gated on the other shapes" "show says how far its gate went"
    expect 0 "show it as JSON" -- "$EVOENG" show 32 --json --db "$tmp/stageA.db"
    grep_out out '"gate_stage": "bench"' "show --json gives the stage as a string"
    expect 0 "top as JSON" -- "$EVOENG" top --json --db "$tmp/stageA.db"
    grep_out out '"gate_stage": "full"' "top --json gives the gate stage"
    if grep -q '"id": 32,' "$tmp/out"; then echo "FAIL top lists the stage-A candidate"; fails=$((fails + 1)); else echo "ok   top leaves the stage-A candidate out"; pass=$((pass + 1)); fi
    expect 0 "status" -- "$EVOENG" status --db "$tmp/stageA.db"
    grep_out out "best         #29 " "status's best is gated on every shape"

    # Issue 33: candidates timed on three input profiles (metrics_json
    # "profiles", as the evaluator records them): show, top, their JSON and
    # the report give each profile's latency, and the ratio the run decided
    # on is the worst profile's.
    cp "$tmp/h200.db" "$tmp/prof.db"
    "$PY" - "$tmp/prof.db" <<'PYEOF'
import json, sqlite3, sys
c = sqlite3.connect(sys.argv[1])
def prof(name, us, ratio):
    p = {"name": name, "ms": {"n": 5, "median": us / 1000, "p90": us / 1000 * 1.01}, "tflops": 2 * 4 * 8 * 512 * 512 * 64 / (us * 1e-6) / 1e12}
    if ratio:
        p.update(a_ms={"n": 5, "median": us / 1000 / ratio}, ratio={"n": 5, "median": ratio, "p10": ratio - 0.002, "p90": ratio + 0.002}, attempts=1, noisy=0)
    return p
for cid, r in ((32, (0.963, 1.240, 0.990)), (29, None)):
    m = {"ms": {"n": 5}, "profiles": [prof("normal", 66.9, r and r[0]), prof("large", 88.9, r and r[1]), prof("outlier", 68.1, r and r[2])]}
    c.execute("UPDATE candidates SET metrics_json = ? WHERE id = ?", (json.dumps(m), cid))
c.commit()
PYEOF
    expect 0 "show a candidate timed on three profiles" -- "$EVOENG" show 32 --db "$tmp/prof.db"
    grep_out out "^  profile      large      88.90 us, .* TFLOP/s; vs parent 1.2400 (p10 1.2380, p90 1.2420; parent 71.69 us)" "show gives each profile's latency and A/B ratio"
    grep_out out "^  latency .*(geometric mean of the profiles below)" "show says the latency is the profiles' geometric mean"
    expect 0 "top with profiles" -- "$EVOENG" top --db "$tmp/prof.db"
    grep_out out "latency      normal       large     outlier" "top has a latency column per profile"
    grep_out out "88.90 us" "top gives a profile's latency"
    expect 0 "top --json with profiles" -- "$EVOENG" top --json --db "$tmp/prof.db"
    grep_out out '"name": "outlier"' "top --json lists each candidate's profiles"
    expect 0 "show --json with profiles" -- "$EVOENG" show 32 --json --db "$tmp/prof.db"
    grep_out out '"ratio_to_parent": 1.24' "show --json gives each profile's ratio"
    expect 0 "report with profiles" -- "$EVOENG" report --db "$tmp/prof.db" -o "$tmp/prof.html"
    if grep -q '<th class="profile">large</th>' "$tmp/prof.html" && grep -q "geometric mean over the timing input profiles" "$tmp/prof.html"; then
        echo "ok   the report's top table has a column per profile"; pass=$((pass + 1))
    else echo "FAIL the report's top table has no profile columns"; fails=$((fails + 1)); fi
else
    echo "FAIL could not load tests/data/h200_wgmma_run.sql with $PY"; fails=$((fails + 1))
fi

if [ -e /dev/full ]; then
    expect 7 "write error on stdout is reported" -- sh -c "\"$EVOENG\" --help >/dev/full"
fi

finish

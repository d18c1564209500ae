#!/bin/sh
# The GPU-only scripts of bench/ checked without a GPU: every shell script
# parses (bash -n), every Python one compiles, and bench/burst_study.sh
# runs end to end on a stub evoeng (no nvidia-smi, no torch: its
# compare_sdpa steps fail and must show as n/a, not stop the study).
set -u
ROOT=${EVO_SOURCE_ROOT:?EVO_SOURCE_ROOT must point to the source tree}
PY=${PYTHON:-python3}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fails=0
pass=0
ok() { echo "ok   $1"; pass=$((pass + 1)); }
bad() { echo "FAIL $1"; fails=$((fails + 1)); }
for f in "$ROOT"/bench/*.sh "$ROOT"/bench/*/*.sh; do
    [ -f "$f" ] || continue
    if bash -n "$f" 2>"$tmp/err"; then ok "bash -n ${f#"$ROOT"/}"; else bad "bash -n ${f#"$ROOT"/}: $(head -3 "$tmp/err")"; fi
done
for f in "$ROOT"/bench/*.py "$ROOT"/bench/*/*.py; do
    [ -f "$f" ] || continue
    if PYTHONPYCACHEPREFIX="$tmp/pyc" "$PY" -m py_compile "$f" 2>"$tmp/err"; then ok "py_compile ${f#"$ROOT"/}"
    else bad "py_compile ${f#"$ROOT"/}: $(head -3 "$tmp/err")"; fi
done

# tail_sched.py: the WS path's TAIL schedule computes every row once
"$PY" "$ROOT/bench/tail_sched.py" --check >"$tmp/out" 2>&1
rc=$?
if [ "$rc" -eq 0 ] && grep -q "440 cases: every row computed once" "$tmp/out"; then ok "tail_sched.py --check: every row once"
else bad "tail_sched.py --check: exit $rc: $(head -3 "$tmp/out")"; fi

# scale_report.py on a made-up outdir: ratios against one GPU, and an MPI
# row's CPU-s a candidate from the machine's cores (rank 0 sees only its
# own process), its NVRTC units the agents' (seed-mpi), or unknown where
# rank 0 reported 0 (an older rank 0 counted only its own: s2048-mpi)
mkrun() {  # NAME CANDS_PER_MIN EVALUATED CPU_S UNITS [DROPPED]  (32 cores, 16 busy, 60 s; bound: compile)
    mkdir -p "$tmp/sc/$1"
    echo "0 100 160 1000 2000 2000 4000" >"$tmp/sc/$1/times.txt"
    printf '0, 50\n1, 40\n' >"$tmp/sc/$1/gpu.csv"
    echo "{\"event\": \"summary\", \"candidates_per_min\": $2, \"evaluated\": $3, \"cpu_s_per_candidate\": $4, \"nvrtc_units_per_candidate\": $5, \"slots\": 2, \"bound\": \"compile\"${6:+, \"dropped\": $6, \"held_s\": 1.5}}" >"$tmp/sc/$1/out.jsonl"
}
mkrun seed-1 1000 1000 0.8 1.5
mkrun seed-all 1800 1800 0.8 1.5 3
# seed-all's seconds: 4, 30, 31, 30 and 2 cores busy of 32: median 30
printf '0 0\n4 32\n34 64\n65 96\n95 128\n97 160\n' >"$tmp/sc/seed-all/cpu.txt"
mkrun seed-mpi 1600 1600 0.02 1.4
# an MPI run that lost a rank: mpirun exited 0, rank 0's --json said 8
mkrun s2048-mpi 100 100 0.02 0
printf '{\n  "error": "MPI rank 1 is lost",\n  "exit": 8,\n  "messages": [\n    "x"\n  ]\n}\n' >>"$tmp/sc/s2048-mpi/out.jsonl"
"$PY" "$ROOT/bench/scale_report.py" "$tmp/sc" --cores 32 --json >"$tmp/sc.json" 2>"$tmp/err"
if "$PY" - "$tmp/sc.json" <<'PYEOF'
import json, sys
rows = {r["name"]: r for r in json.load(open(sys.argv[1]))["runs"]}
assert abs(rows["seed-all"]["ratio_vs_1gpu"] - 1.8) < 1e-9, rows["seed-all"]
assert abs(rows["seed-mpi"]["cores_busy"] - 16.0) < 1e-9, rows["seed-mpi"]
assert abs(rows["seed-mpi"]["cpu_s_per_candidate"] - 16.0 * 60 / 1600) < 1e-9, rows["seed-mpi"]
assert rows["seed-mpi"]["nvrtc_units_per_candidate"] == 1.4, rows["seed-mpi"]
assert rows["s2048-mpi"]["nvrtc_units_per_candidate"] is None, rows["s2048-mpi"]
assert rows["seed-1"]["cpu_s_per_candidate"] == 0.8 and rows["seed-1"]["nvrtc_units_per_candidate"] == 1.5
assert abs(rows["seed-all"]["cores_busy_median"] - 30.0) < 1e-9, rows["seed-all"]
assert rows["seed-1"]["cores_busy_median"] is None, rows["seed-1"]
assert abs(rows["seed-1"]["core_cap_per_min"] - 32 * 60 / 0.8) < 1e-9, rows["seed-1"]
assert abs(rows["seed-mpi"]["core_cap_per_min"] - 1600 * 32 / 16.0) < 1e-9, rows["seed-mpi"]
assert rows["seed-all"]["bound"] == "compile" and rows["seed-mpi"]["bound"] is None, rows
assert rows["s2048-mpi"]["exit"] == 8 and rows["seed-mpi"]["exit"] == 0, rows["s2048-mpi"]
assert rows["seed-all"]["dropped"] == 3 and rows["seed-all"]["held_s"] == 1.5, rows["seed-all"]
assert rows["seed-1"]["dropped"] is None, rows["seed-1"]   # a summary from before the taper
PYEOF
then ok "scale_report.py: ratios, MPI CPU-s from the machine's cores, the median second's cores, the cores' cap, the bound, a failed MPI run's exit, the children dropped at the limit"
else bad "scale_report.py: $(head -3 "$tmp/err")"; fi
# the same rule as scale.sh asks it of one run's output
if [ "$("$PY" "$ROOT/bench/scale_report.py" --error-exit "$tmp/sc/s2048-mpi/out.jsonl")" = 8 ] &&
   [ -z "$("$PY" "$ROOT/bench/scale_report.py" --error-exit "$tmp/sc/seed-mpi/out.jsonl")" ]
then ok "scale_report.py --error-exit: 8 for the lost rank's run, nothing for a run that ended well"
else bad "scale_report.py --error-exit"; fi

# rate_ab_report.py on made-up A B B A runs: B judges 10% fewer a minute
# only because more of its children reached stage B; at the pooled
# stage-B share the two are equal. A run without its stage line: exit 1.
mkab() {  # DIR RATE NA NB
    mkdir -p "$tmp/ab/$1"
    echo "{\"event\": \"summary\", \"candidates_per_min\": $2, \"evaluated\": $3, \"slots\": 1, \"slot_busy\": [0.9]}" >"$tmp/ab/$1/out.jsonl"
    echo "dbg slots: stage A $3, 50.0 ms each; stage B $4, 80.0 ms each; idle 1.0 s" >"$tmp/ab/$1/err.txt"
}
mkab r1.a 600 500 100; mkab r2.b 540 450 150; mkab r3.b 540 450 150; mkab r4.a 600 500 100
"$PY" "$ROOT/bench/rate_ab_report.py" "$tmp/ab" >"$tmp/ab.txt" 2>&1
rc=$?
if [ "$rc" -eq 0 ] && grep -q "B / A: 0.900x as measured; 1.000x at the pooled stage-B share" "$tmp/ab.txt" &&
   grep -q "^| 2 | B | 540.0 | 0.90 | 450, 50.0 | 150, 80.0 | 0.333 | - |" "$tmp/ab.txt"
then ok "rate_ab_report.py: the measured ratio and the ratio at the pooled stage-B share"
else bad "rate_ab_report.py: exit $rc: $(head -12 "$tmp/ab.txt")"; fi
: >"$tmp/ab/r4.a/err.txt"
"$PY" "$ROOT/bench/rate_ab_report.py" "$tmp/ab" >"$tmp/ab.txt" 2>&1
rc=$?
if [ "$rc" -eq 1 ] && grep -q "unreadable runs (no summary or stage line): r4.a" "$tmp/ab.txt"
then ok "rate_ab_report.py: a run without its stage line is named, exit 1"
else bad "rate_ab_report.py (a run without its stage line): exit $rc: $(head -3 "$tmp/ab.txt")"; fi
if bash "$ROOT/bench/rate_ab.sh" "$tmp/abx" /bin/true /bin/true --runs 3 >/dev/null 2>"$tmp/err"; rc=$?; [ "$rc" -eq 2 ] &&
   grep -q "a multiple of 4" "$tmp/err"
then ok "rate_ab.sh --runs 3: usage error (2)"
else bad "rate_ab.sh --runs 3: exit $rc: $(head -3 "$tmp/err")"; fi

# sdpa_shapes.sh's exit status: a stub evoeng whose run fails at S=77
cat >"$tmp/evo_sq" <<'STUB'
#!/bin/sh
case "$1 $*" in
    "run "*S=77*) echo "stub: run failed" >&2; exit 3;;
    "export "*) for a; do [ "$p" = -o ] && echo '{}' >"$a"; p=$a; done;;
esac
exit 0
STUB
chmod +x "$tmp/evo_sq"
COMPARE=0 EVOENG="$tmp/evo_sq" bash "$ROOT/bench/sdpa_shapes.sh" "$tmp/sq1" 1 1,1,64,64,0 >"$tmp/out" 2>&1
rc1=$?
COMPARE=0 EVOENG="$tmp/evo_sq" bash "$ROOT/bench/sdpa_shapes.sh" "$tmp/sq2" 1 1,1,64,64,0 1,1,77,64,0 >"$tmp/out2" 2>&1
rc2=$?
if [ "$rc1" -eq 0 ] && [ "$rc2" -eq 1 ] && grep -q "b1h1s77d64c0: evoeng run exited 3" "$tmp/out2" &&
   [ -f "$tmp/sq2/exports/b1h1s64d64c0.json" ]
then ok "sdpa_shapes.sh: exit 0 when all ran, 1 naming the shape whose run failed, the others still run"
else bad "sdpa_shapes.sh: exits $rc1 and $rc2: $(tail -3 "$tmp/out2")"; fi

# GPUS=2: shape k on GPU k mod 2 with half the cores each, both lanes at
# once; a lane's failure still fails the script and is named
cat >"$tmp/evo_lanes" <<'STUB'
#!/bin/sh
[ "$1" = run ] && echo "$*" >>"$STUB_LOG"
case "$1 $*" in
    "run "*S=77*) sleep 2; echo "stub: run failed" >&2; exit 3;;
    "run "*) sleep 2;;
    "export "*) for a; do [ "$p" = -o ] && echo '{}' >"$a"; p=$a; done;;
esac
exit 0
STUB
chmod +x "$tmp/evo_lanes"
: >"$tmp/lanes.log"
t0=$(date +%s)
STUB_LOG="$tmp/lanes.log" GPUS=2 JOBS=3 COMPARE=0 EVOENG="$tmp/evo_lanes" bash "$ROOT/bench/sdpa_shapes.sh" "$tmp/sq3" 1 \
    1,1,64,64,0 1,1,77,64,0 1,1,96,64,0 1,1,128,64,1 >"$tmp/out3" 2>&1
rc3=$?
dt=$(( $(date +%s) - t0 ))
if [ "$rc3" -eq 1 ] && grep -q "b1h1s77d64c0: evoeng run exited 3" "$tmp/out3" &&
   grep -q "S=64 .*--gpus 0, -j 3" "$tmp/lanes.log" && grep -q "S=77 .*--gpus 1, -j 3" "$tmp/lanes.log" &&
   grep -q "S=96 .*--gpus 0, -j 3" "$tmp/lanes.log" && grep -q "S=128 .*--gpus 1, -j 3" "$tmp/lanes.log" &&
   [ -f "$tmp/sq3/exports/b1h1s96d64c0.json" ] && [ -f "$tmp/sq3/exports/b1h1s128d64c1.json" ] && [ "$dt" -lt 7 ]
then ok "sdpa_shapes.sh GPUS=2: shapes alternate GPUs 0 and 1 with -j 3, run at once ($dt s for 4 runs of 2 s), a failure is named"
else bad "sdpa_shapes.sh GPUS=2: rc $rc3, $dt s: $(cat "$tmp/lanes.log"; tail -5 "$tmp/out3")"; fi
: >"$tmp/lanes.log"
STUB_LOG="$tmp/lanes.log" DTYPE=1 COMPARE=0 EVOENG="$tmp/evo_lanes" bash "$ROOT/bench/sdpa_shapes.sh" "$tmp/sq5" 1 1,1,64,64,0 >"$tmp/out5" 2>&1
if [ $? -eq 0 ] && grep -q "S=64 .*--dim DTYPE=1" "$tmp/lanes.log" && [ -f "$tmp/sq5/exports/b1h1s64d64c0bf16.json" ]
then ok "sdpa_shapes.sh DTYPE=1: the run is bf16 (--dim DTYPE=1), its export named ...bf16.json"
else bad "sdpa_shapes.sh DTYPE=1: $(cat "$tmp/lanes.log"; ls "$tmp/sq5/exports"; tail -3 "$tmp/out5")"; fi
# gpu_suite.sh NAME...: a name the suite lacks is refused before anything runs
(cd "$ROOT" && bash bench/gpu_suite.sh "$tmp/gs" cuda multy) >"$tmp/gs.out" 2>&1
if [ $? -eq 2 ] && grep -q "gpu_suite.sh: no gpu test 'multy'" "$tmp/gs.out" && ! grep -q "^===" "$tmp/gs.out"
then ok "gpu_suite.sh: an unknown test name is refused (exit 2) before any test runs"
else bad "gpu_suite.sh cuda multy: $(cat "$tmp/gs.out")"; fi
STUB_LOG="$tmp/lanes7.log" PROFILE=large,outlier COMPARE=0 EVOENG="$tmp/evo_lanes" bash "$ROOT/bench/sdpa_shapes.sh" "$tmp/sq7" 1 1,1,64,64,0 >"$tmp/out7" 2>&1
if [ $? -eq 0 ] && grep -q "S=64 .*--profile large,outlier" "$tmp/lanes7.log" && [ -f "$tmp/sq7/exports/b1h1s64d64c0plarge+outlier.json" ]
then ok "sdpa_shapes.sh PROFILE=large,outlier: the run is timed on those (--profile), its export named ...plarge+outlier.json"
else bad "sdpa_shapes.sh PROFILE: $(cat "$tmp/lanes7.log"; ls "$tmp/sq7/exports"; tail -3 "$tmp/out7")"; fi
DTYPE=2 COMPARE=0 EVOENG="$tmp/evo_lanes" bash "$ROOT/bench/sdpa_shapes.sh" "$tmp/sq6" 1 1,1,64,64,0 >"$tmp/out6" 2>&1
if [ $? -eq 2 ] && grep -q "DTYPE=2: expected 0 (fp16) or 1 (bf16)" "$tmp/out6"
then ok "sdpa_shapes.sh: DTYPE=2 is a usage error"
else bad "sdpa_shapes.sh DTYPE=2: $(cat "$tmp/out6")"; fi
GPUS=x COMPARE=0 EVOENG="$tmp/evo_lanes" bash "$ROOT/bench/sdpa_shapes.sh" "$tmp/sq4" 1 1,1,64,64,0 >"$tmp/out4" 2>&1
if [ $? -eq 2 ] && grep -q "GPUS=x: expected a number of GPUs" "$tmp/out4"
then ok "sdpa_shapes.sh: GPUS=x is a usage error"
else bad "sdpa_shapes.sh GPUS=x: $(cat "$tmp/out4")"; fi

# ws_ab.sh's one-knob A/B modes on a stub evoeng that records each bench
# call: every A and B is a whole configuration (no knob given twice, which
# evoeng refuses) and the two differ in exactly the knob under test (and
# DESCADD's mode also in LSUM's pairs, never within one pair)
cat >"$tmp/evo_ab" <<'STUB'
#!/bin/sh
a=; b=
while [ $# -gt 0 ]; do
    case $1 in --params) a=$2; shift;; --against) b=$2; shift;; esac
    shift
done
echo "$a|$b" >>"$STUB_LOG"
echo "  vs against x: 1 us; interleaved A/B ratio (this/against) 1.2400 (the worst profile's), p10-p90 spread 0.0010: slower"
echo "    profile normal        66.900 us, 504.1 TFLOP/s; A/B ratio 0.9630 (p10 0.9610, p90 0.9650, against 69.470 us)"
echo "    profile large         88.900 us, 379.4 TFLOP/s; A/B ratio 1.2400 (p10 1.2380, p90 1.2420, against 71.690 us)"
STUB
chmod +x "$tmp/evo_ab"
for m in ostage lazy tail lsum descadd stagger bn256 maxskip otma; do
    : >"$tmp/ab_$m.log"
    STUB_LOG="$tmp/ab_$m.log" EVOENG="$tmp/evo_ab" bash "$ROOT/bench/ws_ab.sh" "$tmp/ab_$m" "$m" >"$tmp/out" 2>&1
    rc=$?
    want=$(case $m in ostage) echo O_STAGE;; lazy) echo LAZY;; tail) echo TAIL;; lsum) echo LSUM;; descadd) echo DESCADD;; stagger) echo STAGGER;; bn256) echo BLOCK_N;; maxskip) echo MAXSKIP;; otma) echo OTMA;; esac)
    bad_pairs=$("$PY" - "$tmp/ab_$m.log" "$want" <<'PYEOF'
import sys
bad, n = 0, 0
for line in open(sys.argv[1]):
    a, b = line.strip().split("|")
    n += 1
    da, db = (dict(kv.split("=") for kv in x.split(",")) for x in (a, b))
    if len(da) != a.count(",") + 1 or len(db) != b.count(",") + 1:
        bad += 1; continue
    diff = [k for k in set(da) | set(db) if da.get(k) != db.get(k)]
    if diff != [sys.argv[2]]:
        bad += 1
print(bad if n else -1)
PYEOF
)
    if [ "$rc" -eq 0 ] && [ "$bad_pairs" = 0 ]; then ok "ws_ab.sh $m: each A/B differs in $want alone, no knob twice"
    else bad "ws_ab.sh $m: exit $rc, $bad_pairs bad pairs: $(head -3 "$tmp/out")"; fi
done
# ... and the per-profile summary of a mode: a line per A/B with the knob
# that moved, the worst ratio and each profile's
if grep -q "^B=4 H=8 S=2048 | MAXSKIP 0->1 | worst 1.2400 | normal 0.9630 large 1.2400$" "$tmp/ab_maxskip/maxskip_profiles.txt" &&
   [ "$(wc -l <"$tmp/ab_maxskip/maxskip_profiles.txt")" -eq "$(wc -l <"$tmp/ab_maxskip.log")" ]; then
    ok "ws_ab.sh maxskip_profiles.txt: each A/B's knob, worst and per-profile ratios"
else bad "ws_ab.sh maxskip_profiles.txt: $(head -3 "$tmp/ab_maxskip/maxskip_profiles.txt" 2>&1)"; fi

# bare_time.py: usage errors and a bad export exit 2 before touching a driver;
# the kernel text it fills inputs with is found in src/gpu/devkern.c
"$PY" "$ROOT/bench/bare_time.py" "$tmp/none.json" >"$tmp/out" 2>&1
rc=$?
if [ "$rc" -eq 2 ] && grep -q "cannot read JSON" "$tmp/out"; then ok "bare_time.py, a missing export: exit 2"
else bad "bare_time.py, a missing export: exit $rc: $(head -3 "$tmp/out")"; fi
echo '{"plan": {"shape": "B=4"}}' >"$tmp/badexp.json"
"$PY" "$ROOT/bench/bare_time.py" "$tmp/badexp.json" >"$tmp/out" 2>&1
rc=$?
if [ "$rc" -eq 2 ] && grep -q "no 'source'" "$tmp/out"; then ok "bare_time.py, an export without a source: exit 2"
else bad "bare_time.py, an export without a source: exit $rc: $(head -3 "$tmp/out")"; fi
"$PY" "$ROOT/bench/bare_time.py" "$tmp/badexp.json" --calls 0 >"$tmp/out" 2>&1
rc=$?
if [ "$rc" -eq 2 ] && grep -q "\-\-calls" "$tmp/out"; then ok "bare_time.py --calls 0: exit 2"
else bad "bare_time.py --calls 0: exit $rc"; fi
if (cd "$ROOT/bench" && PYTHONPYCACHEPREFIX="$tmp/pyc" "$PY" -c "
import bare_time as b
t = b.devkern_source()
assert 'evo_fill' in t and t.count('{') == t.count('}') and '\\\\n' not in t, t[:200]
assert b.seed_key(1, b.seed_salt('Q')) != b.seed_key(1, b.seed_salt('K'))
") >"$tmp/out" 2>&1; then ok "bare_time.py finds evo_fill's text in src/gpu/devkern.c"
else bad "bare_time.py devkern_source: $(tail -3 "$tmp/out")"; fi
# sdpa_inputs.py: the generator's text (src/gpu/gensrc.h) and the kernels
# compile with NVRTC as one program, and an export's profile maps onto
# evo_fill's GenSpec field by field
if (cd "$ROOT/bench" && PYTHONPYCACHEPREFIX="$tmp/pyc" "$PY" -c "
import ctypes, sdpa_inputs as si, sdpa_export as se, tempfile
t = si.devkern_source()
assert 'struct GenSpec' in t and 'gen_value(g, key, i)' in t, t[:300]
assert ctypes.sizeof(si.GenSpec) == 64
g = si.gen_spec({'dist': 'outlier', 'mean': 0, 'std': 1, 'p': 0.001, 'outlier_std': 10,
                 'row_scale': {'dist': 'lognormal', 'mean': 0, 'std': 1, 'row_len': 64}})
assert (g.kind, g.b, g.p, g.c, g.rows, g.rb, g.row_len) == (4, 1, 0.001, 10, 1, 1, 64)
assert si.gen_spec({'dist': 'uniform', 'low': -2, 'high': 3}).a == -2
exp = {'path': 'e.json', 'profiles': [{'name': 'normal', 'inputs': {}}, {'name': 'large', 'inputs': {'Q': {'dist': 'normal', 'std': 4}}}]}
assert si.profile_inputs(exp, 'large')['Q']['std'] == 4
try:
    si.profile_inputs(exp, 'larg'); raise SystemExit('no error')
except si.ProfileError as e:
    assert 'it has: normal large' in str(e), e
try:
    se.nvrtc_cubin(t, 'sm_90', tempfile.mkdtemp())
except RuntimeError as e:
    assert 'libnvrtc not found' in str(e), e
") >"$tmp/out" 2>&1; then ok "sdpa_inputs.py: the generator compiles, profiles map onto GenSpec"
else bad "sdpa_inputs.py: $(tail -5 "$tmp/out")"; fi

# burst_study.sh: a usage error without an export
bash "$ROOT/bench/burst_study.sh" "$tmp/bs" >"$tmp/out" 2>&1
rc=$?
if [ "$rc" -eq 2 ] && grep -q "usage: burst_study.sh" "$tmp/out"; then ok "burst_study.sh without an export: usage, exit 2"
else bad "burst_study.sh without an export: exit $rc"; fi

# ... and a whole study on a stub evoeng that reports 8.50 us (samples >= 0.5 ms) or 9.25 (longer)
cat >"$tmp/evoeng" <<'STUB'
#!/bin/sh
if [ "${EVOENG_SAMPLE_MS:-0.5}" = 0.5 ]; then us=8.5; else us=9.25; fi
echo "{\"status\": \"ok\", \"latency_us\": $us, \"batch\": 57, \"args\": \"$*\"}"
STUB
chmod +x "$tmp/evoeng"
cat >"$tmp/exp.json" <<'EXP'
{"plan": {"shape": "B=4 H=8 S=512 D=64 CAUSAL=0"}, "params": {"BLOCK_M": 64, "WS": 0}}
EXP
(cd "$ROOT" && EVOENG="$tmp/evoeng" SAMPLE_LIST="0.5 6" COMPARES="--only evoeng" \
    bash bench/burst_study.sh "$tmp/bs" "$tmp/exp.json") >"$tmp/out" 2>&1
rc=$?
if [ "$rc" -eq 0 ]; then ok "burst_study.sh on a stub: exit 0"; else bad "burst_study.sh on a stub: exit $rc"; sed 's/^/  /' "$tmp/out" | tail -20; fi
if grep -q "evoeng bench, samples >= 0.5 ms .*8.50 us x57" "$tmp/bs/burst_study.txt" &&
   grep -q "evoeng bench, samples >= 6 ms .*9.25 us x57" "$tmp/bs/burst_study.txt"; then
    ok "burst_study.sh reports each sample length's figure"
else bad "burst_study.sh's table lacks the stub's figures"; cat "$tmp/bs/burst_study.txt" 2>/dev/null | sed 's/^/  /'; fi
if grep -q "compare_sdpa --only evoeng .* n/a" "$tmp/bs/burst_study.txt"; then ok "a failed compare_sdpa step shows as n/a"
else bad "a failed compare_sdpa step does not show as n/a"; fi
if grep -q -- "--dim B=4 --dim H=8 --dim S=512 --dim D=64 --dim CAUSAL=0" "$tmp/bs/exp.bench-0.5.json" &&
   grep -q -- "--params BLOCK_M=64,WS=0" "$tmp/bs/exp.bench-0.5.json"; then
    ok "burst_study.sh benches the export's shape and params"
else bad "burst_study.sh did not pass the export's shape and params"; cat "$tmp/bs/exp.bench-0.5.json"; fi

# ws_trace.py: the stamps go into both consumer loops and the producer of
# the WS path's source (here the template's own text), and the CTA's
# timeline into the kernel's entry and ends; a non-WS export is
# refused (exit 2), and the analysis recovers known phase lengths
"$PY" - "$ROOT/templates/attention" "$tmp/ws.json" "$tmp/fa2.json" <<'PYEOF'
import json, sys
# the template's four files, as an export inlines them: a patch point
# must occur once in the whole source, the FA2 path's text included
src = "".join(open(f"{sys.argv[1]}/{f}").read() for f in ("attention.cu", "attention_fa2.cuh", "attention_ws.cuh", "attention_ws_sync.cuh"))
json.dump({"source": src, "params": {"WS": 1}}, open(sys.argv[2], "w"))
json.dump({"source": src, "params": {"WS": 0}}, open(sys.argv[3], "w"))
PYEOF
"$PY" "$ROOT/bench/ws_trace.py" "$tmp/ws.json" --patch-only >"$tmp/traced" 2>"$tmp/err"
rc=$?
n=$(grep -c "WS_TR" "$tmp/traced")
nc=$(grep -c "WS_TRC(" "$tmp/traced")
if [ "$rc" -eq 0 ] && [ "$n" -eq 35 ] && [ "$nc" -eq 6 ]; then ok "ws_trace.py --patch-only: 35 stamp lines in the WS source, 5 of the CTA's timeline"
else bad "ws_trace.py --patch-only: exit $rc, $n stamp lines, $nc timeline lines: $(head -3 "$tmp/err")"; fi
"$PY" "$ROOT/bench/ws_trace.py" "$tmp/fa2.json" --patch-only >/dev/null 2>"$tmp/err"
rc=$?
if [ "$rc" -eq 2 ] && grep -q "not a WS=1 export" "$tmp/err"; then ok "ws_trace.py refuses a non-WS export (exit 2)"
else bad "ws_trace.py on a non-WS export: exit $rc: $(head -3 "$tmp/err")"; fi
PYTHONPATH="$ROOT/bench" "$PY" - >"$tmp/out" 2>&1 <<'PYEOF'
import ws_trace
ctas, tiles = 1, 8
buf = [0] * (ctas * 4 * tiles * 8)
def put(w, t, k, v):
    buf[((0 * 4 + w) * tiles + t) * 8 + k] = v
for w in (1, 2, 3):                      # no overlap: K 10, QK 100, softmax 500, V 10, PV 200
    for t in range(tiles):
        b = 1000 * t + 100 * w + 1
        for k, dt in enumerate((0, 10, 110, 610, 620, 820)):
            put(w, t, k, b + dt)
r = ws_trace.analyse(buf, ctas, tiles, 3, 2)
ph = {p: v["median"] for p, v in r["consumer_phases"].items()}
want = {"wait K": 10, "Q K^T (issue to wait)": 100, "softmax": 500, "wait V": 10,
        "P V (issue to wait)": 200, "to the next tile": 180}
assert r["loop"] == "no overlap", r["loop"]
assert ph == want, ph
c = r["ctas"][0]
assert abs(sum(c[k] for k in ("gemm only", "softmax only", "both", "neither")) - 1) < 1e-9, c
cta = [0] * (ctas * 4 * 4)              # timeline: entry 1, Q 301, first end 2001, last end 9001
for w in range(4):
    cta[w * 4] = 1 + 5 * w
for w in (1, 2, 3):
    cta[w * 4 + 1], cta[w * 4 + 2], cta[w * 4 + 3] = 301, 1601 + 100 * w, 8701 + 100 * w
cta[1] = 7001                            # the producer's last load
tl = ws_trace.analyse(buf, ctas, tiles, 3, 2, cta)["ctas"][0]["timeline"]
assert tl == {"entry to Q in registers": 300, "entry to the first tile's end": 1900, "entry to the end": 9000,
              "producer: entry to its last load": 7000,
              "last KV tile to the end (epilogue)": 9001 - (7000 + 300 + 821)}, tl
for t in range(tiles):                   # overlap: marker in slot 7, turn stamp 6
    for k in range(8):
        put(1, t, k, 0)
    b = 1000 * t + 1
    for k, dt in ((0, 0), (1, 20), (6, 50), (2, 150), (3, 650), (5, 700), (4, 760)):
        put(1, t, k, b + dt)
    put(1, t, 7, 1)
r = ws_trace.analyse(buf, ctas, tiles, 1, 2)
ph = {p: v["median"] for p, v in r["consumer_phases"].items()}
assert r["loop"] == "overlap", r["loop"]
assert ph["wait for the ping-pong turn"] == 30 and ph["softmax (P V of n-1 in flight)"] == 500, ph
assert ph["rescale, pack"] == 60 and ph["to the next tile"] == 240, ph
print("analysis ok")
PYEOF
if grep -q "analysis ok" "$tmp/out"; then ok "ws_trace.py's analysis recovers synthetic phase lengths (both loops)"
else bad "ws_trace.py's analysis: $(tail -3 "$tmp/out")"; fi

# ws_ablate.py: the ablation switches leave the kernel as it was (all 0: the
# same cubin as the export's own source), each variant compiles, and an
# export it cannot ablate is refused with its name
EXP="$ROOT/docs/results/raw/2026-11-26/exports/b4h8s2048d64c0.json"
if "$PY" "$ROOT/bench/ws_ablate.py" "$EXP" --out "$tmp/abl" --prepare-only >"$tmp/out" 2>&1 \
   && [ "$(ls "$tmp"/abl/*.json | wc -l)" -eq 6 ]; then ok "ws_ablate.py --prepare-only: 6 variants"
else bad "ws_ablate.py --prepare-only: $(head -3 "$tmp/out")"; fi
"$PY" "$ROOT/bench/ws_ablate.py" "$ROOT/docs/results/raw/2026-11-26/exports/b1h1s128d64c1.json" \
    --out "$tmp/abl_bad" --prepare-only >"$tmp/out" 2>&1
rc=$?
if [ "$rc" -eq 1 ] && grep -q "b1h1s128d64c1.json: WS=0" "$tmp/out"; then ok "ws_ablate.py refuses a WS=0 export (exit 1, named)"
else bad "ws_ablate.py on a WS=0 export: exit $rc: $(head -3 "$tmp/out")"; fi
"$PY" - "$EXP" "$tmp/noanchor.json" <<'PYEOF'
import json, sys
e = json.load(open(sys.argv[1]))
e["source"] = e["source"].replace("auto row_max = [&]", "auto row_max2 = [&]")
json.dump(e, open(sys.argv[2], "w"))
PYEOF
"$PY" "$ROOT/bench/ws_ablate.py" "$tmp/noanchor.json" --out "$tmp/abl_bad" --prepare-only >"$tmp/out" 2>&1
rc=$?
if [ "$rc" -eq 1 ] && grep -q "noanchor.json: the WS path's 'auto row_max" "$tmp/out"; then ok "ws_ablate.py names a missing anchor (exit 1)"
else bad "ws_ablate.py without an anchor: exit $rc: $(head -3 "$tmp/out")"; fi
# the cubins' sha256 of one source: evoeng check compiles it for the task's variants
cubins() {
    rm -rf "$tmp/cache" && mkdir -p "$tmp/cache"
    EVOENG_CACHE_DIR="$tmp/cache" "$EVOENG" check "$ROOT/templates/attention/task.json" --source "$1" \
        --arch sm_90 --sample 0 -q >"$tmp/chk" 2>&1 || { echo "check-failed"; return; }
    "$PY" -c 'import glob, json, sys
print(" ".join(sorted(json.load(open(f))["cubin_sha256"] for f in glob.glob(sys.argv[1] + "/*.json"))))' "$tmp/cache"
}
if [ -x "${EVOENG:-}" ] && "$EVOENG" check --help >/dev/null 2>&1; then
    "$PY" -c 'import json, sys; print(json.load(open(sys.argv[1]))["source"])' "$EXP" >"$tmp/orig.cu"
    orig=$(cubins "$tmp/orig.cu")
    full=$(cubins "$tmp/abl/b4h8s2048d64c0.full.cu")
    if [ "$orig" != check-failed ] && [ "$orig" = "$full" ]; then ok "ws_ablate.py full: the export's own cubins (NVRTC, sm_90)"
    else bad "ws_ablate.py full: cubins differ from the export's ($(head -3 "$tmp/chk"))"; fi
    for v in nomax nomufu nosoftmax noqk nopv; do
        c=$(cubins "$tmp/abl/b4h8s2048d64c0.$v.cu")
        if [ "$c" != check-failed ] && [ "$c" != "$full" ]; then ok "ws_ablate.py $v compiles, to other cubins"
        else bad "ws_ablate.py $v: $c $(head -3 "$tmp/chk")"; fi
    done
else
    echo "skip ws_ablate.py's compile checks: no evoeng binary (EVOENG)"
fi

echo "$pass passed, $fails failed"
[ "$fails" -eq 0 ]

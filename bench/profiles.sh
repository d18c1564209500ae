#!/usr/bin/env bash
# Issue 33's GPU measurements in one go, on one GPU (about 6-8 minutes on an
# H200): the input profiles of templates/attention/task.json (normal, large,
# outlier timed; peaky gate-only) through the gate, the timing noise and the
# data-dependent knobs. Run from the repository root with the build carried
# (build/), outputs in OUTDIR, one file a step and summary.txt:
#   suite  01-05: the gpu tests that concern profiles: the device generator
#          against the host for every distribution (test_gpu_cuda), the
#          references against the CPU on every profile (test_gpu_ref), A/A
#          per profile of the default configuration and of triad
#          (test_gpu_aa: p95 |r - 1| <= 0.5% each), the sweep (201
#          configurations) and MAXSKIP's forced ways (41), every shape x 3
#          seeds x 4 profiles;
#   aa     06: A/A of the B4 H8 S2048 D64 winner, 40 comparisons: the worst
#          profile's ratio (the revert rule's) and each profile's p95;
#   ab     07: MAXSKIP 2 and 1 against 0 at that winner, 08: LAZY 1 against
#          0 there (MAXSKIP 0, which LAZY 0 needs), 3 comparisons each,
#          every profile's ratio and latencies;
#   sdpa   09: compare_sdpa.py on four of the table's exports (the S2048 D64
#          winner, the seed shape, B8 H16 S512 D64, B4 H8 S2048 D128), each
#          on normal, large and outlier: evoeng, FA2 and cuDNN on the same
#          inputs (evoeng's generator, seed 1), us, TFLOP/s, cuDNN/evo.
# STEP_LIMIT (default 600) caps each step in seconds; EVOENG, PYTHON as usual.
# Usage: bench/profiles.sh OUTDIR [suite|aa|ab|sdpa|all]
set -u
out=${1:?usage: profiles.sh OUTDIR [suite|aa|ab|sdpa|all]}
what=${2:-all}
mkdir -p "$out"
export EVO_SOURCE_ROOT=$PWD
export EVOENG=${EVOENG:-$PWD/build/src/evoeng}
export EVOENG_CACHE_DIR=${EVOENG_CACHE_DIR:-/tmp/evoeng-cache}
E=$EVOENG
T=templates/attention/task.json
PY=${PYTHON:-python3}
S2048="--dim B=4 --dim H=8 --dim S=2048"
W="BLOCK_M=128,BLOCK_N=256,WS=1,CONSUMERS=2,REGSPLIT=1,PERSIST=1,LAZY=1,TAIL=1,STAGGER=1,STAGES=2,O_STAGE=0,MAXSKIP=2"
t_all=$(date +%s)
: >>"$out/summary.txt"

# step NAME PATTERN CMD...: run CMD into OUTDIR/NAME.txt (capped), then its
# exit code, time and the lines matching PATTERN into the summary
step() {
    local name=$1 pat=$2 t0 rc
    shift 2
    echo "=== $name: $*" | tee -a "$out/summary.txt"
    t0=$(date +%s)
    timeout "${STEP_LIMIT:-600}" "$@" >"$out/$name.txt" 2>&1
    rc=$?
    grep -E "$pat" "$out/$name.txt" | tee -a "$out/summary.txt"
    echo "--- $name: exit $rc, $(($(date +%s) - t0)) s" | tee -a "$out/summary.txt"
}

"$E" --version 2>&1 | tee "$out/version.txt"
if [ "$what" = suite ] || [ "$what" = all ]; then
    step 01_gpu_cuda "fill |tests, " build/tests/test_gpu_cuda
    step 02_gpu_ref "bad [1-9]|tests, " build/tests/test_gpu_ref
    step 03_gpu_aa "^A/A|  profile|tests, " build/tests/test_gpu_aa
    step 04_sweep "input profile|^check exit|OK|FAIL" sh tests/test_gpu_sweep.sh
    step 05_maxskip "^check exit|OK|FAIL" sh tests/test_gpu_maxskip.sh
fi
# the lines of an evoeng bench A/B worth keeping
ABPAT="verdict|latency  |profile|vs against|repeat|median|p95|reverts|A/A"
if [ "$what" = aa ] || [ "$what" = all ]; then
    step 06_aa_s2048 "$ABPAT" "$E" bench "$T" $S2048 --params "$W" --repeat 40
fi
if [ "$what" = ab ] || [ "$what" = all ]; then
    m0=${W/MAXSKIP=2/MAXSKIP=0}
    step 07_maxskip_ab "^---|$ABPAT" bash -c 'for v in 2 1; do
        echo "--- MAXSKIP $v against 0"
        "$0" bench "$1" $2 --params "${3/MAXSKIP=2/MAXSKIP=$v}" --against "$4" --repeat 3
    done' "$E" "$T" "$S2048" "$W" "$m0"
    step 08_lazy_ab "$ABPAT" "$E" bench "$T" $S2048 --params "$m0" --against "${m0/LAZY=1/LAZY=0}" --repeat 3
fi
if [ "$what" = sdpa ] || [ "$what" = all ]; then
    # the table's exports: bench/results/raw_DATE/ in this tree, docs/results/raw/DATE/ once moved
    raw() { if [ -d "docs/results/raw/$1" ]; then echo "docs/results/raw/$1"; else echo "bench/results/raw_$1"; fi; }
    step 09_sdpa_profiles "^B[0-9]|^shape|^-|not ok|FAIL" "$PY" bench/compare_sdpa.py \
        "$(raw 2026-11-26c)/exports/b4h8s2048d64c0.json" "$(raw 2026-11-26)/exports/b4h8s512d64c0.json" \
        "$(raw 2026-11-26)/exports/b8h16s512d64c0.json" "$(raw 2026-11-26)/exports/b4h8s2048d128c0.json" \
        --profile normal,large,outlier --task "$T" --out "$out/09_sdpa_profiles.json"
fi
echo "profiles.sh: $what in $(($(date +%s) - t_all)) s" | tee -a "$out/summary.txt"

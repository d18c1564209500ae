#!/usr/bin/env bash
# `evoeng export --format harness` on the GPU (issue 14).
#  1. build/tests/test_export_nvcc --nvcc --keep: makes a store from
#     tests/data/h200_wgmma_run.sql (a recorded H200 run at the seed shape
#     B=4 H=8 S=512 D=64), exports every format of its baseline (#1) and of
#     its best (#32, a WGMMA kernel for sm_90a), builds each with the line it
#     prints, and builds the harnesses of shipped configurations: the
#     warp-specialised attention path (TMA tensor maps, -lcuda), triad and
#     softmax;
#  2. evoeng export ID --format harness from that store, for #1 and #32, each
#     built with the build line of its own header and run (the check against
#     the task's reference, then the timing), #32 with two seeds;
#  3. the harnesses of step 1's shipped configurations run.
# Needs build/ (the evoeng binary and the tests) and nvcc ($NVCC or on PATH).
# Writes log.txt and the exported harness sources to OUTDIR.
# Usage: bench/harness_gpu.sh OUTDIR
set -u
cd "$(dirname "$0")/.."
out=${1:?usage: harness_gpu.sh OUTDIR}
E=${EVOENG:-build/src/evoeng}
NVCC=${NVCC:-$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)}
mkdir -p "$out"
log=$out/log.txt
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fails=0
say() { echo "$@" | tee -a "$log"; }
run_harness() { # run_harness PROGRAM ARGS...
    say "\$ ./$(basename "$1") ${*:2}"
    "$@" 2>&1 | tee -a "$log"
    local rc=${PIPESTATUS[0]}
    [ "$rc" -eq 0 ] || { say "FAIL: $(basename "$1") exited $rc"; fails=$((fails + 1)); }
}
: >"$log"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>&1 | sed 's/^/gpu: /' | tee -a "$log"
"$NVCC" --version | tail -1 | tee -a "$log"

say "=== 1. test_export_nvcc --nvcc --keep (every format built with its printed line)"
NVCC=$NVCC EVO_SOURCE_ROOT=$PWD build/tests/test_export_nvcc --nvcc --keep "$work/t" >>"$log" 2>&1 ||
    { say "FAIL: test_export_nvcc"; fails=$((fails + 1)); }
tail -1 "$log"

db=$work/t/h200.db
for id in 1 32; do
    f=c${id}_cli_harness.cu
    say "=== 2. evoeng export $id --format harness -o $f"
    "$E" export "$id" --format harness --db "$db" -o "$work/$f" 2>&1 | tee -a "$log"
    [ -s "$work/$f" ] || { say "FAIL: no harness for $id"; fails=$((fails + 1)); continue; }
    cp "$work/$f" "$out/"
    line=$(sed -n 's|^// build:    ||p' "$work/$f")
    say "\$ $line"
    if ! (cd "$work" && eval "\"$NVCC\" ${line#nvcc }") >>"$log" 2>&1; then
        say "FAIL: the printed build line of $f"; fails=$((fails + 1)); continue
    fi
    run_harness "$work/${f%.cu}" --seed 1
    [ "$id" = 32 ] && run_harness "$work/${f%.cu}" --seed 2
done

say "=== 3. harnesses of shipped configurations"
for h in ws_harness triad_harness softmax_harness; do
    [ -x "$work/t/$h" ] || { say "FAIL: $h was not built"; fails=$((fails + 1)); continue; }
    cp "$work/t/$h.cu" "$out/"
    run_harness "$work/t/$h"
done
say "harness_gpu: $fails failed"
[ "$fails" -eq 0 ]

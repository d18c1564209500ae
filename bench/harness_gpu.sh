#!/usr/bin/env bash
# `evoeng export --format harness` on the GPU (issue 14): the harness of the
# recorded H200 run's baseline (#1, the seed shape's default configuration)
# and of its best (#32, a WGMMA kernel for sm_90a), each exported from a
# store loaded from tests/data/h200_wgmma_run.sql, built with the build line
# its own header prints, and run (check against the reference, then timing),
# #32 also with another seed. Then the harnesses that
# build/tests/test_export_nvcc builds from shipped configurations (the
# warp-specialised attention path with TMA tensor maps, triad, softmax) run
# too. Needs build/ (the evoeng binary and the tests), nvcc and python3.
# Writes log.txt and the exported .cu files to OUTDIR.
# Usage: bench/harness_gpu.sh OUTDIR   (from the repository root)
set -u
cd "$(dirname "$0")/.."
out=${1:?usage: harness_gpu.sh OUTDIR}
E=${EVOENG:-build/src/evoeng}
NVCC=${NVCC:-nvcc}
command -v "$NVCC" >/dev/null || NVCC=/usr/local/cuda/bin/nvcc
mkdir -p "$out"
out=$(cd "$out" && pwd)
log=$out/log.txt
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fails=0
say() { echo "$@" | tee -a "$log"; }
: >"$log"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>&1 | sed 's/^/gpu: /' | tee -a "$log"
"$NVCC" --version | tail -2 | tee -a "$log"

# A store with evoeng's schema, then the recorded rows.
db=$work/h200.db
"$E" status --db "$db" >/dev/null 2>&1
if [ -s "$db" ] && python3 - "tests/data/h200_wgmma_run.sql" "$db" <<'PY'
import sqlite3, sys
c = sqlite3.connect(sys.argv[2])
c.executescript(open(sys.argv[1]).read())
c.commit()
PY
then
    for id in 1 32; do
        f=c${id}_harness.cu
        say "=== evoeng export $id --format harness -o $f"
        "$E" export "$id" --format harness --db "$db" -o "$work/$f" 2>&1 | tee -a "$log"
        cp "$work/$f" "$out/"
        line=$(sed -n 's|^// build:    ||p' "$work/$f")
        say "\$ $line"
        if ! (cd "$work" && eval "${line/#nvcc/\"$NVCC\"}") >>"$log" 2>&1; then
            say "FAIL: the printed build line of $f"; fails=$((fails + 1)); continue
        fi
        for seed in 1 2; do
            [ "$id" = 1 ] && [ "$seed" = 2 ] && continue
            say "\$ ./${f%.cu} --seed $seed"
            "$work/${f%.cu}" --seed "$seed" 2>&1 | tee -a "$log"
            rc=${PIPESTATUS[0]}
            [ "$rc" -eq 0 ] || { say "FAIL: ${f%.cu} exited $rc"; fails=$((fails + 1)); }
        done
    done
else
    say "(could not make a store with '$E status --db': the CLI export is skipped; the test binary below exports from the same rows)"
fi

# The same exports through the test binary (store, cu, json, harness) plus
# harnesses of shipped configurations, each built with its printed line.
say "=== build/tests/test_export_nvcc --nvcc --keep"
NVCC=$(command -v "$NVCC") EVO_SOURCE_ROOT=$PWD build/tests/test_export_nvcc --nvcc --keep "$work/t" >>"$log" 2>&1 ||
    { say "FAIL: test_export_nvcc"; fails=$((fails + 1)); }
tail -1 "$log"
for h in c32_harness ws_harness triad_harness softmax_harness; do
    [ -x "$work/t/$h" ] || { say "FAIL: $h was not built"; fails=$((fails + 1)); continue; }
    cp "$work/t/$h.cu" "$out/"
    say "\$ ./$h"
    "$work/t/$h" 2>&1 | tee -a "$log"
    rc=${PIPESTATUS[0]}
    [ "$rc" -eq 0 ] || { say "FAIL: $h exited $rc"; fails=$((fails + 1)); }
done
say "harness_gpu: $fails failed"
[ "$fails" -eq 0 ]

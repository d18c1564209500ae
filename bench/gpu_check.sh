#!/usr/bin/env bash
# One batched GPU session for the device machine: evoeng's version line,
# the gpu test suite (run directly: the build dir's absolute paths differ
# there), check, bench of the default configuration, and a short run.
# Usage: bench/gpu_check.sh OUTDIR [GENERATIONS]
# Run from the repository root with a build in ./build (built elsewhere
# and carried is fine: the binary only needs the runtime libraries).
set -u
out=${1:?usage: gpu_check.sh OUTDIR [GENERATIONS]}
gens=${2:-2}
mkdir -p "$out"
export EVO_SOURCE_ROOT=$PWD EVOENG=$PWD/build/src/evoeng EVOENG_CACHE_DIR=/tmp/evoeng-cache
E=$EVOENG
step() { echo; echo "=== $*"; }
{
step "evoeng --version"; $E --version
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,temperature.gpu,power.draw --format=csv 2>/dev/null
for t in build/tests/test_gpu_*; do
    case $t in *.p) continue;; esac
    step "$t"; timeout 400 "$t"; echo "exit $?"
done
step "check"; $E check templates/attention/task.json --sample 4 2>&1 | tail -12
step "bench default"; timeout 300 $E bench templates/attention/task.json --db /tmp/b.db; echo "exit $?"
step "bench default --cold --json"; timeout 300 $E bench templates/attention/task.json --cold --json --db /tmp/b.db | head -40
step "run --generations $gens"; timeout 500 $E run --generations "$gens" --population 4 --children 4 --db "$out/population.db"; echo "exit $?"
step "status/top"; $E status --db "$out/population.db"; $E top --db "$out/population.db"
} 2>&1 | tee "$out/gpu_check.log"

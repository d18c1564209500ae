#!/usr/bin/env bash
# The closing GPU session for issues 5 and 6: a 20-generation run on the
# default task (B=4 H=8 S=512 D=64, non-causal), a shorter causal run, the
# best of each exported (.cu compiled with nvcc, and JSON), then both timed
# side by side against PyTorch SDPA with bench/compare_sdpa.py.
# Usage: bench/final_gpu.sh OUTDIR [RUN_SECONDS] [CAUSAL_SECONDS]
set -u
out=${1:?usage: final_gpu.sh OUTDIR}
t1=${2:-280}
t2=${3:-90}
E=${EVOENG:-build/src/evoeng}
export EVOENG_CACHE_DIR=${EVOENG_CACHE_DIR:-/tmp/evoeng-cache}
mkdir -p "$out/exports"
best_id() { $E export --best --format json --db "$1" | python3 -c "import json,sys; print(json.load(sys.stdin)['id'])"; }
echo "=== evoeng run --generations 20"
$E run --generations 20 --population 8 --children 6 --time-limit "$t1" --db "$out/run20.db" 2>&1 | tail -26
$E top -n 6 --db "$out/run20.db"
id=$(best_id "$out/run20.db")
$E lineage "$id" --db "$out/run20.db"
$E export --best -o "$out/best.cu" --db "$out/run20.db" && head -24 "$out/best.cu"
nvcc -arch=sm_90 -c "$out/best.cu" -o /tmp/best.o && echo "nvcc -c best.cu: OK"
$E export --best --format json -o "$out/exports/b4h8s512d64c0.json" --db "$out/run20.db"
echo "=== causal run"
$E run --dim CAUSAL=1 --generations 20 --population 6 --children 6 --time-limit "$t2" --db "$out/causal.db" --quiet
$E top -n 3 --db "$out/causal.db"
$E export --best --format json -o "$out/exports/b4h8s512d64c1.json" --db "$out/causal.db"
echo "=== compare with SDPA"
python3 bench/compare_sdpa.py "$out"/exports/*.json --out "$out/sdpa.json" 2>&1 | tail -30

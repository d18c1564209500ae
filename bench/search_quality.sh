#!/usr/bin/env bash
# Search quality (issue 5): evolve (20 generations) against exhaustive search
# on the attention task with a reduced space (so exhaustive is feasible),
# on the GPU. Then the two winners side by side in one interleaved A/B.
# Usage (repository root, on a GPU machine): bench/search_quality.sh OUTDIR
set -u
out=${1:?usage: search_quality.sh OUTDIR}
mkdir -p "$out"
E=${EVOENG:-build/src/evoeng}
export EVOENG_CACHE_DIR=${EVOENG_CACHE_DIR:-/tmp/evoeng-cache}
python3 bench/small_space.py templates/attention/task.json "$out/small.json" BLOCK_M BLOCK_N WARPS STAGES SPLITS
$E check "$out/small.json" --sample 0 | grep space
rm -f "$out/evolve.db" "$out/exhaustive.db"
echo "== evolve"; time $E run --task "$out/small.json" --generations 20 --population 8 --children 4 --seed 1 --db "$out/evolve.db"
echo "== exhaustive"; time $E run --task "$out/small.json" --strategy exhaustive --children 16 --db "$out/exhaustive.db" --quiet
python3 bench/search_report.py "$out/evolve.db" "$out/exhaustive.db" | tee "$out/search_report.txt"
best=$(sed -n 's/^BEST_PARAMS //p' "$out/search_report.txt")
evo=${best#evolve=}; evo=${evo%% *}; exh=${best##*exhaustive=}
echo "== side by side: evolve's best vs exhaustive's best"
$E bench "$out/small.json" --params "$evo" --against "$exh" --db /tmp/sq.db | tail -4

#!/usr/bin/env bash
# The attention template's WGMMA path against its mma.sync path, on the GPU
# machine: (1) the correctness gate of WGMMA configurations on every task
# shape, (2) interleaved A/B timing (evoeng bench --against) of the same
# configuration with WGMMA=1 and WGMMA=0, on the seed shape and two larger
# ones. Usage: bench/wgmma_ab.sh OUTDIR
set -u
out=${1:?usage: wgmma_ab.sh OUTDIR}
mkdir -p "$out"
E=${EVOENG:-build/src/evoeng}
T=templates/attention/task.json
export EVOENG_CACHE_DIR=${EVOENG_CACHE_DIR:-/tmp/evoeng-cache}
cfgs=("BLOCK_M=64,WARPS=4" "BLOCK_M=64,WARPS=4,STAGES=2,MIN_BLOCKS=2" "BLOCK_M=128,WARPS=8,BLOCK_N=64"
      "BLOCK_M=128,WARPS=8,BLOCK_N=128,STAGES=2" "BLOCK_M=64,WARPS=4,OVERLAP=1,BLOCK_N=64")
echo "=== correctness gate, every shape"
for c in "${cfgs[@]}"; do
    $E check $T --gpu --sample 0 --params "WGMMA=1,$c" 2>&1 | grep -E "gate:|fail|error|^  [0-9]+ " | tee -a "$out/gate.txt"
done
echo "=== A/B: WGMMA=1 (A) against WGMMA=0 (B), same configuration"
for dims in "" "--dim CAUSAL=1" "--dim S=2048" "--dim B=8 --dim H=16"; do
    for c in "${cfgs[@]}"; do
        echo "--- ${dims:-seed shape} $c"
        $E bench $T $dims --params "WGMMA=1,$c" --against "WGMMA=0,$c" 2>&1 | grep -E "verdict|latency|launch|vs against|error" | tee -a "$out/ab.txt"
    done
done

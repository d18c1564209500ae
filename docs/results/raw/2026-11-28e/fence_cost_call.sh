#!/bin/bash
# x2: what a6c9446's Q proxy fence costs: NOFENCE=0 (the fence) against NOFENCE=1 at four persistent TMA winners
cd "$(dirname "$0")/../.." || exit 1
B=$PWD/build/src/evoeng
export EVO_SOURCE_ROOT=$PWD EVOENG=$B
{ nvidia-smi -L; nproc; } > $OUT/info.txt 2>&1
tmp=/tmp/nf; mkdir -p $tmp
cp templates/attention/*.cu templates/attention/*.cuh templates/attention/task.json $tmp/
python3 .dev/k/nofence.py $tmp
ab() { local g=$1 lab=$2 p=$3; shift 3
  echo "=== $lab [$p] fence (NOFENCE=0) against none (NOFENCE=1) $*"
  $B bench --task $tmp/task.json "$@" --gpus "$g," --params "$p,NOFENCE=0" --against "$p,NOFENCE=1" --repeat 3 2>&1 | grep -E 'ratios|  median|profile (normal|large|outlier) +median|error|fail'
}
( ab 0 s2048 "BLOCK_M=128,BLOCK_N=256,STAGES=2,O_STAGE=0,WS=1,PERSIST=1,LAZY=1,STAGGER=1,PACKGQA=1" --dim S=2048
  ab 0 s2048-causal "BLOCK_M=128,BLOCK_N=256,STAGES=2,O_STAGE=0,WS=1,PERSIST=1,LAZY=1,STAGGER=1,PACKGQA=1" --dim S=2048 --dim CAUSAL=1
  ab 0 b8h16s512 "BLOCK_M=128,BLOCK_N=256,STAGES=2,WS=1,PERSIST=1,LAZY=1,DESCADD=1,STAGGER=1" --dim B=8 --dim H=16 ) > $OUT/streamA.txt 2>&1 &
( ab 1 gqa-s2048-d128 "BLOCK_M=128,BLOCK_N=128,WS=1,CONSUMERS=2,PERSIST=1,TAIL=1,DESCADD=1,EARLY=1,STAGGER=1,PACKGQA=1" --dim B=4 --dim H=32 --dim HKV=8 --dim S=2048 --dim D=128
  ab 1 s4096-d128-twin "BLOCK_M=128,OVERLAP=1,WS=1,PINGPONG=1,PERSIST=1,TAIL=1,DESCADD=1,PACKGQA=0" --dim B=4 --dim H=16 --dim S=4096 --dim D=128 ) > $OUT/streamB.txt 2>&1 &
wait
cat $OUT/streamA.txt $OUT/streamB.txt

#!/bin/bash
# x2: the race bisected: variants of the failing config (fence removed in a task copy), check --gpu --seeds 8, twice each
cd "$(dirname "$0")/../.." || exit 1
B=$PWD/build/src/evoeng
export EVO_SOURCE_ROOT=$PWD EVOENG=$B
{ nvidia-smi -L; nproc; } > $OUT/info.txt 2>&1
tmp=/tmp/racek; mkdir -p $tmp
cp templates/attention/*.cu templates/attention/*.cuh templates/attention/task.json $tmp/
python3 .dev/k/fix_fence.py $tmp/task.json
G="--dim B=2 --dim H=32 --dim HKV=8 --dim S=1024 --dim D=128"
one() { local gpu=$1 name=$2 p=$3; shift 3
  for r in 1 2; do
    echo "=== $name run $r [$p] $*"
    $B check $tmp/task.json --gpu --gpus $gpu, --seeds 8 --sample 0 --params "$p" "$@" 2>&1 | grep -E "gate:|incorrect|error" | cut -c1-330
  done
}
( while read name p; do one 0 "$name" "$p" $G --dim CAUSAL=1; done < .dev/k/variants.txt ) > $OUT/race_variants.txt 2>&1 &
( base=$(grep '^base ' .dev/k/variants.txt | cut -d' ' -f2)
  one 1 "base noncausal" "$base" $G --dim CAUSAL=0
  one 1 "base G=2 (H16 HKV8)" "$base" --dim B=2 --dim H=16 --dim HKV=8 --dim S=1024 --dim D=128 --dim CAUSAL=1
  one 1 "base G=4 B1 H8 HKV2" "$base" --dim B=1 --dim H=8 --dim HKV=2 --dim S=1024 --dim D=128 --dim CAUSAL=1
  one 1 "base G=1 (H8 HKV8)" "$base" --dim B=2 --dim H=8 --dim HKV=8 --dim S=1024 --dim D=128 --dim CAUSAL=1
  one 1 "base S=4096 G=4" "$base" --dim B=1 --dim H=16 --dim HKV=4 --dim S=4096 --dim D=128 --dim CAUSAL=1
) > $OUT/race_shapes.txt 2>&1 &
wait
cat $OUT/race_variants.txt $OUT/race_shapes.txt

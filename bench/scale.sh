#!/usr/bin/env bash
# How evoeng's loop scales over GPUs and MPI ranks on one machine (issue
# 32). For each shape (the seed shape, S=2048) and each mode
#   1     evoeng run --gpus 1
#   all   evoeng run --gpus all                  (skipped with one GPU)
#   mpi   mpirun -np GPUS+1: rank 0 and one agent a GPU (skipped without mpirun)
# a time-limited run into a fresh store with a fresh compile cache, while
# nvidia-smi samples each GPU's utilisation and /proc/stat the cores. It
# prints, per run: candidates a minute, each GPU's busy share, the cores
# busy (of how many: the run's mean, and the median of its seconds, which
# leaves out the start and the end), the best latency reached, the
# children dropped unjudged at the time limit, and the ratios against one
# GPU; OUTDIR/scale.md and OUTDIR/scale.json hold the same.
#
# Usage (repository root): bench/scale.sh [OUTDIR] [--time-limit S]
#        [--shapes "seed s2048"] [--modes "1 all mpi"] [--sync] [--sim]
#   OUTDIR        default $OUT, else ./scale-out
#   --time-limit  seconds a run (default 75)
#   --sync        also each run in the generation-synchronous mode
#   --sim         also the simulated scaling (bench/pipe_sim) at 1, 2, 4
#                 and 8 slots with the per-candidate costs of PIPE_SIM_ARGS
#                 (printed as simulated)
# Env: EVOENG (default $PWD/build/src/evoeng), EVO_SOURCE_ROOT (default
#      $PWD), MPIRUN (the mpirun command), EXTRA (more run options).
# Exit status: 0 when every run ran, 1 otherwise.
set -u
out=${OUT:-scale-out}
tlimit=75
shapes="seed s2048"
modes="1 all mpi"
sync_too=0
sim=0
while [ $# -gt 0 ]; do
    case $1 in
        --time-limit) tlimit=${2:?--time-limit needs a value}; shift 2;;
        --shapes) shapes=${2?--shapes needs a value}; shift 2;;
        --modes) modes=${2?--modes needs a value}; shift 2;;
        --sync) sync_too=1; shift;;
        --sim) sim=1; shift;;
        -h|--help) sed -n '2,26p' "$0"; exit 0;;
        -*) echo "scale.sh: unknown option $1" >&2; exit 2;;
        *) out=$1; shift;;
    esac
done
export EVO_SOURCE_ROOT=${EVO_SOURCE_ROOT:-$PWD}
E=${EVOENG:-$PWD/build/src/evoeng}
MPIRUN=${MPIRUN:-mpirun --allow-run-as-root --oversubscribe --bind-to none --mca orte_enable_recovery 1}
mkdir -p "$out"
out=$(cd "$out" && pwd)
ngpu=$(nvidia-smi -L 2> /dev/null | grep -c '^GPU')
ncpu=$(nproc)
fails=0
{
    "$E" --version 2>&1
    echo "GPUs: $ngpu, cores: $ncpu, time limit: $tlimit s a run"
    nvidia-smi --query-gpu=index,name,clocks.sm,clocks.max.sm,temperature.gpu,power.draw --format=csv 2>&1
} > "$out/machine.txt"
cat "$out/machine.txt"

wrap=$out/one_gpu_per_agent.sh
cat > "$wrap" <<'WRAP'
#!/bin/sh
# rank 0 (local rank 0) needs no GPU; agent i (local rank i) gets GPU i - 1
r=${OMPI_COMM_WORLD_LOCAL_RANK:-0}
[ "$r" -gt 0 ] && export CUDA_VISIBLE_DEVICES=$((r - 1))
exec "$@"
WRAP
chmod +x "$wrap"

# cpu_ticks: "busy total" jiffies of /proc/stat's cpu line
cpu_ticks() { awk '/^cpu / { t = 0; for (i = 2; i <= NF; i++) t += $i; print t - $5 - $6, t }' /proc/stat; }

# run_one NAME DIMS MODE SYNC: one time-limited run; writes NAME.* in OUTDIR
run_one() {
    local name=$1 dims=$2 mode=$3 sync=$4 d=$out/$1
    rm -rf "$d"; mkdir -p "$d"
    export EVOENG_CACHE_DIR=$d/cache
    local -a cmd=("$E" run --time-limit "$tlimit" --generations 100000 --db "$d/population.db" --json)
    # shellcheck disable=SC2206  # $dims and $EXTRA are lists of words
    cmd+=($dims ${EXTRA:-})
    [ "$sync" = 1 ] && cmd+=(--sync)
    case $mode in
        [0-9]*) cmd+=(--gpus "$mode");;
        all) cmd+=(--gpus all);;
        mpi) cmd=(env EVOENG_MPI_TIMEOUT=120 $MPIRUN -x EVOENG_CACHE_DIR -x EVOENG_MPI_TIMEOUT ${EVOENG_MPI_DEBUG:+-x EVOENG_MPI_DEBUG} ${EVOENG_GPU_WAIT:+-x EVOENG_GPU_WAIT} ${EVOENG_COMPILE_NICE:+-x EVOENG_COMPILE_NICE} -np $((ngpu + 1))
                  "$wrap" "${cmd[@]}" --gpus 1);;
    esac
    echo "${cmd[*]}" > "$d/command.txt"
    nvidia-smi --query-gpu=index,utilization.gpu --format=csv,noheader,nounits -lms 200 > "$d/gpu.csv" 2> /dev/null &
    local sampler=$! c0 c1 t0 t1
    # the cores once a second too: the whole run's mean includes its start and end
    while sleep 1; do cpu_ticks; done > "$d/cpu.txt" &
    local cpusampler=$!
    c0=$(cpu_ticks)
    t0=$(date +%s.%N)
    "${cmd[@]}" > "$d/out.jsonl" 2> "$d/err.txt"
    local rc=$?
    # mpirun in Open MPI 4's recovery mode exits 0 whatever rank 0 returns:
    # rank 0's own exit code is in the error document --json prints
    local jx
    jx=$(python3 "$EVO_SOURCE_ROOT/bench/scale_report.py" --error-exit "$d/out.jsonl")
    [ "$rc" -eq 0 ] && [ -n "$jx" ] && rc=$jx
    t1=$(date +%s.%N)
    c1=$(cpu_ticks)
    kill "$sampler" "$cpusampler" 2> /dev/null; wait "$sampler" "$cpusampler" 2> /dev/null
    echo "$rc $t0 $t1 $c0 $c1" > "$d/times.txt"
    [ "$rc" -eq 0 ] || { fails=$((fails + 1)); echo "scale.sh: $name exited $rc (see $d/err.txt)" >&2; tail -3 "$d/err.txt" >&2; }
}

for shape in $shapes; do
    case $shape in
        seed) dims="";;
        s2048) dims="--dim S=2048";;
        *) echo "scale.sh: unknown shape $shape (seed, s2048)" >&2; exit 2;;
    esac
    for mode in $modes; do
        [ "$mode" = all ] && [ "$ngpu" -lt 2 ] && continue
        case $mode in [0-9]*) [ "$mode" -gt "$ngpu" ] && continue;; esac
        [ "$mode" = mpi ] && ! command -v mpirun > /dev/null && { echo "scale.sh: no mpirun: mpi skipped"; continue; }
        for sync in 0 $([ "$sync_too" = 1 ] && echo 1); do
            name=$shape-$mode$([ "$sync" = 1 ] && echo -sync)
            echo "=== $name"
            run_one "$name" "$dims" "$mode" "$sync"
        done
    done
done

if [ "$sim" = 1 ]; then
    for slots in 1 2 4 8; do
        echo "=== simulated, $slots slots"
        # shellcheck disable=SC2086  # PIPE_SIM_ARGS is a list of words
        "$(dirname "$E")/../bench/pipe_sim" --slots "$slots" --lanes $((slots * ncpu)) --seconds "$tlimit" --json \
            ${PIPE_SIM_ARGS:---compile-ms 270 --gate-ms 15 --ab-ms 25 --speed 3} > "$out/sim-$slots.json" \
            || fails=$((fails + 1))
    done
fi

python3 "$EVO_SOURCE_ROOT/bench/scale_report.py" "$out" --cores "$ncpu" | tee "$out/scale.md" || fails=$((fails + 1))
echo "scale.sh: $fails run(s) failed; see $out/scale.md"
[ "$fails" -eq 0 ]

#!/usr/bin/env bash
# The MPI mode against one process on the GPU machine (issue 15 part 2).
# On the default task (attention), `evoeng run --generations G`, each into
# a fresh store and compile cache under OUTDIR:
#   single1  evoeng run --gpus 1                      (one process)
#   mpi2     mpirun -np 2 evoeng run --gpus 1         (rank 0 orchestrates,
#                                                      rank 1 the agent on GPU 0)
# and with two or more GPUs also:
#   single2  evoeng run --gpus 2
#   mpi3     mpirun -np 3 evoeng run --gpus 1         (one agent per GPU: each
#            agent sees only GPU (local rank - 1) through CUDA_VISIBLE_DEVICES)
# Prints, per case, the candidates judged per minute of the loop's time
# and of the wall time, and the best latency found; then the ratios
# mpi2/single1 and mpi3/single2. Everything lands in OUTDIR/summary.txt.
#
# Usage (repository root): bench/mpi_gpu.sh [OUTDIR] [--generations G] [--seed S]
#   OUTDIR default ./mpi-gpu-out; G default 20; S default 1
# Env: EVOENG (default $PWD/build/src/evoeng, built with MPI),
#      MPIRUN (default: mpirun --allow-run-as-root --oversubscribe
#      --bind-to none --mca orte_enable_recovery 1).
# Exit status: 0 when every case ran, 1 otherwise.
set -u
out=mpi-gpu-out
gens=20
seed=1
while [ $# -gt 0 ]; do
    case $1 in
        --generations) gens=${2:?--generations needs a value}; shift 2;;
        --seed) seed=${2:?--seed needs a value}; shift 2;;
        -h|--help) sed -n '2,24p' "$0"; exit 0;;
        -*) echo "mpi_gpu.sh: unknown option $1" >&2; exit 2;;
        *) out=$1; shift;;
    esac
done
export EVO_SOURCE_ROOT=${EVO_SOURCE_ROOT:-$PWD}
E=${EVOENG:-$PWD/build/src/evoeng}
MPIRUN=${MPIRUN:-mpirun --allow-run-as-root --oversubscribe --bind-to none --mca orte_enable_recovery 1}
command -v mpirun > /dev/null || { echo "mpi_gpu.sh: mpirun is not installed" >&2; exit 1; }
mkdir -p "$out"
out=$(cd "$out" && pwd)
: > "$out/summary.txt"
ngpu=$(nvidia-smi -L 2> /dev/null | grep -c '^GPU')
{ "$E" --version; mpirun --version | head -1; echo "GPUs: $ngpu"; } >> "$out/summary.txt" 2>&1
# An agent rank sees one GPU, (local rank - 1); rank 0 uses none.
wrap=$out/one_gpu_per_agent.sh
cat > "$wrap" <<'WRAP'
#!/bin/sh
r=${OMPI_COMM_WORLD_LOCAL_RANK:-0}
[ "$r" -gt 0 ] && export CUDA_VISIBLE_DEVICES=$((r - 1))
exec "$@"
WRAP
chmod +x "$wrap"
fails=0

# run_case NAME CMD...: runs CMD with a fresh store and cache in OUTDIR/NAME.
run_case() {
    local name=$1; shift
    local d=$out/$name t0 t1
    rm -rf "$d"; mkdir -p "$d"
    t0=$(date +%s.%N)
    EVOENG_CACHE_DIR=$d/cache "$@" --generations "$gens" --seed "$seed" --db "$d/population.db" \
        > "$d/out.txt" 2> "$d/err.txt"
    local rc=$?
    t1=$(date +%s.%N)
    [ $rc -eq 0 ] || { fails=$((fails + 1)); echo "$name: exit $rc (see $d/err.txt)" >> "$out/summary.txt"; }
    # "run 1 finished: 123 evaluated, ..., 45.6 s" and "best: candidate 7, 12.34 us, ..."
    awk -v name="$name" -v wall="$(awk -v a="$t0" -v b="$t1" 'BEGIN { print b - a }')" '
        /^run [0-9]+ (finished|stopped)/ { for (i = 1; i <= NF; i++) { if ($(i+1) ~ /^evaluated/) n = $i; if ($(i+1) == "s") s = $i } }
        /^best: candidate/ { b = $4 }
        END { printf "%-8s %5d candidates  loop %7.1f s  %7.1f / min   wall %7.1f s  %7.1f / min   best %s us\n",
                     name, n, s, (s > 0 ? n * 60 / s : 0), wall, (wall > 0 ? n * 60 / wall : 0), b }' \
        "$d/out.txt" | tee -a "$out/summary.txt"
}

run_case single1 "$E" run --gpus 1
run_case mpi2 env EVOENG_MPI_TIMEOUT=120 $MPIRUN -x EVOENG_CACHE_DIR -x EVOENG_MPI_TIMEOUT -np 2 "$E" run --gpus 1
if [ "$ngpu" -ge 2 ]; then
    run_case single2 "$E" run --gpus 2
    run_case mpi3 env EVOENG_MPI_TIMEOUT=120 $MPIRUN -x EVOENG_CACHE_DIR -x EVOENG_MPI_TIMEOUT -np 3 "$wrap" "$E" run --gpus 1
fi

# ratio A B: loop-time candidates per minute of A over B
ratio() {
    awk -v a="$1" -v b="$2" '$1 == a { x = $7 } $1 == b { y = $7 } END { if (x && y) printf "%s / %s: %.2fx candidates per minute (loop time)\n", a, b, x / y }' \
        "$out/summary.txt" | tee -a "$out/summary.txt"
}
ratio mpi2 single1
[ "$ngpu" -ge 2 ] && ratio mpi3 single2
[ $fails -eq 0 ]

#!/usr/bin/env bash
# Throughput and timing noise of evoeng on the GPU machine (issue 11).
#  1. `evoeng run --generations G` on the default task (attention) at the
#     seed shape and at --dim S=2048, each into a fresh store under OUTDIR
#     with a fresh compile cache, while nvidia-smi samples the GPU's
#     utilisation every 100 ms; wall time and the user+sys CPU seconds of
#     the evoeng process tree are measured around each run.
#  2. `evoeng bench --repeat R --json` A/A (the default configuration
#     against itself) on attention, softmax and the bandwidth-bound triad task
#     (templates/triad: 132 MB per launch, more than an H200's L2).
#  3. bench/throughput_report.py on each: OUTDIR/summary.txt, and
#     OUTDIR/<name>.report.json per part.
#
# Usage (repository root): bench/throughput.sh [OUTDIR] [--generations G]
#        [--time-limit T] [--repeat R] [--shared-too]
#   OUTDIR        default $OUT, else ./throughput-out
#   --generations default $GENERATIONS, else 20
#   --time-limit  per run (e.g. 180 or 3m), default $TIME_LIMIT, else none
#   --repeat      A/A comparisons per task, default $REPEAT, else 100
#   --shared-too  also the A/A with --shared 0 (each side on its own buffers)
# Env: EVOENG (default $PWD/build/src/evoeng), EVO_SOURCE_ROOT (default $PWD),
#      SKIP_RUNS=1 (A/A only), SKIP_AA=1 (runs only).
# Exit status: 0 when every step ran (whatever the figures), 1 otherwise.
set -u
out=${OUT:-throughput-out}
gens=${GENERATIONS:-20}
tlimit=${TIME_LIMIT:-}
repeat=${REPEAT:-100}
shared_too=0
while [ $# -gt 0 ]; do
    case $1 in
        --generations) gens=${2:?--generations needs a value}; shift 2;;
        --time-limit) tlimit=${2:?--time-limit needs a value}; shift 2;;
        --repeat) repeat=${2:?--repeat needs a value}; shift 2;;
        --shared-too) shared_too=1; shift;;
        -h|--help) sed -n '2,23p' "$0"; exit 0;;
        -*) echo "throughput.sh: unknown option $1" >&2; exit 2;;
        *) out=$1; shift;;
    esac
done
export EVO_SOURCE_ROOT=${EVO_SOURCE_ROOT:-$PWD}
E=${EVOENG:-$PWD/build/src/evoeng}
R=$EVO_SOURCE_ROOT/bench/throughput_report.py
mkdir -p "$out"
out=$(cd "$out" && pwd)
fails=0
log() { echo "=== $*" | tee -a "$out/summary.txt"; }
: > "$out/summary.txt"

"$E" --version > "$out/version.txt" 2>&1
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,clocks.mem,temperature.gpu,power.draw --format=csv \
    > "$out/gpu.txt" 2>&1
cat "$out/version.txt" "$out/gpu.txt" >> "$out/summary.txt"

# start_sampler FILE: nvidia-smi utilisation samples every 100 ms into FILE;
# sets sampler_pid (empty without nvidia-smi).
start_sampler() {
    sampler_pid=
    if command -v nvidia-smi > /dev/null; then
        # only the GPU evoeng runs on (run's default: the first visible
        # one): every GPU's samples averaged in the idle ones of a 2-GPU host
        local sel=(-i 0)
        case ${CUDA_VISIBLE_DEVICES:-} in [0-9]*) sel=(-i "${CUDA_VISIBLE_DEVICES%%,*}");; esac
        nvidia-smi "${sel[@]}" --query-gpu=utilization.gpu --format=csv,noheader,nounits -lms 100 > "$1" 2> /dev/null &
        sampler_pid=$!
    fi
}
stop_sampler() {
    [ -n "$sampler_pid" ] && kill "$sampler_pid" 2> /dev/null && wait "$sampler_pid" 2> /dev/null
    sampler_pid=
}

# timed NAME CMD...: runs CMD, stdout in NAME.out, stderr in NAME.err; sets wall_s,
# cpu_s (user+sys of CMD and its children) and rc.
timed() {
    local name=$1; shift
    local t0 t1
    t0=$(date +%s.%N)
    if [ -x /usr/bin/time ]; then
        /usr/bin/time -v -o "$out/$name.time" "$@" > "$out/$name.out" 2> "$out/$name.err"
        rc=$?
        cpu_s=$(awk -F': ' '/User time|System time/ {s += $2} END {printf "%.2f", s}' "$out/$name.time")
    else
        # bash's `times` in a subshell: its second line is the children's user and sys.
        ( "$@" > "$out/$name.out" 2> "$out/$name.err"; echo "rc $?"; times ) > "$out/$name.time"
        rc=$(sed -n 's/^rc //p' "$out/$name.time")
        cpu_s=$(tail -1 "$out/$name.time" | awk '{ for (i = 1; i <= 2; i++) { split($i, p, "m"); s += p[1] * 60 + p[2] } } END { printf "%.2f", s }')
    fi
    t1=$(date +%s.%N)
    wall_s=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.2f", b - a }')
}

if [ "${SKIP_RUNS:-0}" != 1 ]; then
    for spec in "seed:" "s2048:--dim S=2048"; do
        tag=${spec%%:*}
        dims=${spec#*:}
        db=$out/$tag.db
        rm -f "$db" "$db-wal" "$db-shm"
        # a fresh compile cache (outside OUTDIR: cubins need not travel back): every compile is measured
        export EVOENG_CACHE_DIR=${TMPDIR:-/tmp}/evoeng-throughput-cache-$tag
        rm -rf "$EVOENG_CACHE_DIR"
        log "run $tag: evoeng run --generations $gens ${tlimit:+--time-limit $tlimit }$dims"
        start_sampler "$out/$tag.gpu_samples.txt"
        # shellcheck disable=SC2086  # $dims is a list of words
        timed "run-$tag" "$E" run --generations "$gens" ${tlimit:+--time-limit "$tlimit"} $dims --db "$db"
        stop_sampler
        echo "exit $rc, wall $wall_s s, evoeng CPU $cpu_s s" | tee -a "$out/summary.txt"
        [ "$rc" = 0 ] || fails=$((fails + 1))
        tail -5 "$out/run-$tag.out" >> "$out/summary.txt"
        rep=(--db "$db" --wall "$wall_s" --cpu "$cpu_s")
        [ -f "$out/$tag.gpu_samples.txt" ] && rep+=(--gpu-samples "$out/$tag.gpu_samples.txt")
        python3 "$R" "${rep[@]}" --json > "$out/$tag.report.json" || fails=$((fails + 1))
        python3 "$R" "${rep[@]}" | tee -a "$out/summary.txt"
    done
fi

if [ "${SKIP_AA:-0}" != 1 ]; then
    export EVOENG_CACHE_DIR=${TMPDIR:-/tmp}/evoeng-throughput-cache-aa
    aa_files=()
    variants=("1")
    [ "$shared_too" = 1 ] && variants+=("0")
    for task in attention softmax triad; do
        for sh in "${variants[@]}"; do
            name=aa-$task-shared$sh
            log "A/A $task: evoeng bench --repeat $repeat --shared $sh"
            start_sampler "$out/$name.gpu_samples.txt"
            timed "$name" "$E" bench "$EVO_SOURCE_ROOT/templates/$task/task.json" --repeat "$repeat" --shared "$sh" \
                --json --db "$out/aa.db"
            stop_sampler
            echo "exit $rc, wall $wall_s s" | tee -a "$out/summary.txt"
            cp "$out/$name.out" "$out/$name.json"
            python3 -m json.tool "$out/$name.json" > /dev/null || { fails=$((fails + 1)); rm -f "$out/$name.json"; }
            [ "$rc" = 0 ] || fails=$((fails + 1))
            [ -s "$out/$name.json" ] && aa_files+=(--aa "$out/$name.json")
        done
    done
    if [ ${#aa_files[@]} -gt 0 ]; then
        python3 "$R" "${aa_files[@]}" --json > "$out/aa.report.json" || fails=$((fails + 1))
        python3 "$R" "${aa_files[@]}" | tee -a "$out/summary.txt"
    fi
fi
echo "throughput.sh: $fails step(s) failed; see $out/summary.txt" | tee -a "$out/summary.txt"
[ "$fails" -eq 0 ]

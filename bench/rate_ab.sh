#!/usr/bin/env bash
# Candidates a minute of two evoeng binaries, A (before) and B (after), on
# one machine, in runs ordered A B B A A B B A ... so that a drift over
# the call (the host warming up, a neighbour) weighs on both alike: the
# before/after pair a change to the loop or the evaluation path owes
# (issue 32). Each run is `run --generations 100000 --time-limit S
# --json` in a fresh store and compile cache with EVOENG_STEADY_DEBUG=1,
# so beside the rate it records what a GPU slot spent a candidate in
# stage A and stage B and how many children reached stage B: the rate
# follows that share, which the search's course decides (2026-11-27h),
# so bench/rate_ab_report.py also prints each binary's rate at the share
# pooled over all runs, which only the two binaries' costs move.
#
# Usage (repository root): bench/rate_ab.sh OUTDIR A_BIN B_BIN [--runs N]
#        [--time-limit S] [--gpus G] [--dim NAME=V ...]
#   --runs        runs in all, a multiple of 4 (default 4: A B B A)
#   --time-limit  seconds a run (default 60)
#   --gpus        passed to run (default 1)
#   --dim         the shape (repeatable; default the task's)
# Env: EVO_SOURCE_ROOT (default $PWD).
# Exit status: 0 when every run ran, 1 otherwise, 2 usage.
set -u
usage() { sed -n '2,22p' "$0"; }
[ $# -ge 3 ] || { usage >&2; exit 2; }
out=$1 a_bin=$2 b_bin=$3
shift 3
runs=4 tlimit=60 gpus=1 dims=()
while [ $# -gt 0 ]; do
    case $1 in
        --runs) runs=${2:?--runs needs a value}; shift 2;;
        --time-limit) tlimit=${2:?--time-limit needs a value}; shift 2;;
        --gpus) gpus=${2:?--gpus needs a value}; shift 2;;
        --dim) dims+=(--dim "${2:?--dim needs NAME=V}"); shift 2;;
        -h|--help) usage; exit 0;;
        *) echo "rate_ab.sh: unknown option $1" >&2; exit 2;;
    esac
done
case $runs in ''|*[!0-9]*) echo "rate_ab.sh: --runs $runs: a multiple of 4" >&2; exit 2;; esac
[ $((runs % 4)) -eq 0 ] && [ "$runs" -gt 0 ] || { echo "rate_ab.sh: --runs $runs: a multiple of 4" >&2; exit 2; }
for b in "$a_bin" "$b_bin"; do
    [ -x "$b" ] || { echo "rate_ab.sh: $b is not an executable" >&2; exit 2; }
done
export EVO_SOURCE_ROOT=${EVO_SOURCE_ROOT:-$PWD}
mkdir -p "$out"
out=$(cd "$out" && pwd)
{
    echo "A: $a_bin ($("$a_bin" --version 2>&1 | head -1))"
    echo "B: $b_bin ($("$b_bin" --version 2>&1 | head -1))"
    echo "runs: $runs of $tlimit s, --gpus $gpus ${dims[*]}"
} > "$out/setup.txt"
cat "$out/setup.txt"
fails=0
for i in $(seq 1 "$runs"); do
    # A B B A: runs 1 and 4 of each four are A's
    case $((i % 4)) in 1|0) side=a bin=$a_bin;; *) side=b bin=$b_bin;; esac
    d=$out/r$i.$side
    mkdir -p "$d"
    export EVOENG_CACHE_DIR=$d/cache
    rm -rf "$EVOENG_CACHE_DIR" "$d/run.db"*
    EVOENG_STEADY_DEBUG=1 timeout $((tlimit + 120)) "$bin" run --generations 100000 --time-limit "$tlimit" \
        --gpus "$gpus" "${dims[@]}" --db "$d/run.db" --json > "$d/out.jsonl" 2> "$d/err.txt"
    rc=$?
    echo "run $i ($side): exit $rc"
    [ "$rc" -eq 0 ] || fails=$((fails + 1))
    rm -rf "$EVOENG_CACHE_DIR"
done
python3 "$EVO_SOURCE_ROOT/bench/rate_ab_report.py" "$out" | tee "$out/report.txt"
[ "${PIPESTATUS[0]}" -eq 0 ] || fails=$((fails + 1))
[ "$fails" -eq 0 ]

#!/usr/bin/env bash
# Issue 6's side-by-side comparison: for each (B, H, S, D) and causal flag,
# run evoeng on that shape (a short run: the task's dims are overridden with
# --dim), export its best kernel as JSON, then time all exports against
# PyTorch SDPA (FlashAttention-2 and cuDNN backends) in one process with
# bench/compare_sdpa.py. Run on the GPU machine from the repository root.
#
# Usage: bench/sdpa_shapes.sh OUTDIR [SECONDS_PER_SHAPE] [SHAPE ...]
#   SHAPE is B,H,S,D,CAUSAL[,HKV[,SQ]] (default: the seven shapes of issue
#   13's table, causal and not); HKV (K/V heads) and SQ (queries) make a
#   grouped-query or decoding row, e.g. 8,32,4096,128,0,8,1. A shape whose export already exists is reused: call
#   the script several times to spread the work over several calls.
#   SHARED_DB=path.db puts every run into that one store, so each run is
#   warm-started from the best of the earlier ones (issue 12's warm
#   starts); otherwise each shape gets OUTDIR/<tag>.db. POP (default 8) is
#   the population and the children per generation. GENERATIONS (default
#   100000) caps each run; with the default the time limit ends it (at
#   about 450 candidates a minute, 50 generations take under a minute).
#   TASK=spec.json searches another spec. COMPARE=0 only searches and
#   exports (a later call, with the exports carried back into OUTDIR,
#   times them all in one process).
#   Set EXTRA_DB=path.db (and EXTRA_SHAPE=B,H,S,D,C) to add the export of
#   a longer run (e.g. the 20-generation run on the seed shape).
#   DTYPE=1 searches and times every shape in bf16 (--dim DTYPE=1; the
#   exports are named <tag>bf16.json), DTYPE=0 (the default) in fp16.
#   PROFILE=NAME[,NAME] searches timed on those input profiles alone (run
#   --profile; the gate still runs every one; the exports are named
#   <tag>p<NAME>[+<NAME>].json), e.g. PROFILE=large for issue 33's
#   per-profile bests.
#   GPUS=N searches N shapes at once, shape k on GPU k mod N (--gpus K,),
#   each run compiling on its share of the cores (-j cores/N; JOBS=J sets
#   it); each lane's output goes to OUTDIR/lane<K>.log and is printed when
#   every lane is done. The comparison then runs on GPU 0 alone, as before.
#   With SHARED_DB the lanes still share one store (SQLite serialises
#   them), but a lane's warm start sees only what was committed before it.
# Exit status: 0 when every run, export and the comparison succeeded, 1
# otherwise (each failure named on stderr; the other shapes still run).
set -u
out=${1:?usage: sdpa_shapes.sh OUTDIR [SECONDS] [SHAPE ...]}
secs=${2:-60}
shift 2 2>/dev/null || shift $#
shapes=("$@")
[ ${#shapes[@]} -gt 0 ] || shapes=(4,8,512,64,0 4,8,512,64,1 2,8,512,64,0 2,8,512,64,1 1,1,128,64,0 1,1,128,64,1
                                  8,16,512,64,0 8,16,512,64,1 4,8,2048,64,0 4,8,2048,64,1
                                  4,8,2048,128,0 4,8,2048,128,1 8,16,512,128,0 8,16,512,128,1)
pop=${POP:-8}
gens=${GENERATIONS:-100000}
E=${EVOENG:-build/src/evoeng}
export EVOENG_CACHE_DIR=${EVOENG_CACHE_DIR:-/tmp/evoeng-cache}
mkdir -p "$out/exports"
fails=0
failed() { echo "sdpa_shapes.sh: $*" >&2; fails=$((fails + 1)); }
case ${DTYPE:-0} in 0) dt=();; 1) dt=(--dim DTYPE=1);; *) echo "sdpa_shapes.sh: DTYPE=$DTYPE: expected 0 (fp16) or 1 (bf16)" >&2; exit 2;; esac
lanes=${GPUS:-1}
case $lanes in ''|*[!0-9]*|0) echo "sdpa_shapes.sh: GPUS=$lanes: expected a number of GPUs, 1 or more" >&2; exit 2;; esac
lane_opts=()
if [ "$lanes" -gt 1 ]; then
    jobs=${JOBS:-$(( $(nproc) / lanes ))}
    [ "$jobs" -ge 1 ] || jobs=1
fi
# search LANE: the shapes whose index is LANE mod lanes, one after another
search() {
    local lane=$1 k=0 sh
    [ "$lanes" -gt 1 ] && lane_opts=(--gpus "$lane," -j "$jobs")
    for sh in "${shapes[@]}"; do
        k=$((k + 1))
        [ $(( (k - 1) % lanes )) -eq "$lane" ] || continue
        IFS=, read -r B H S D C HKV SQ <<<"$sh"
        tag="b${B}h${H}s${S}d${D}c${C}${HKV:+k$HKV}${SQ:+q$SQ}${dt[*]:+bf16}${PROFILE:+p${PROFILE//,/+}}"
        gq=(${HKV:+--dim HKV=$HKV} ${SQ:+--dim SQ=$SQ} "${dt[@]}" ${PROFILE:+--profile "$PROFILE"})
        db=${SHARED_DB:-$out/$tag.db}
        [ -f "$out/exports/$tag.json" ] && continue
        echo "=== $tag: evoeng run for ${secs}s${lane_opts[*]:+ (${lane_opts[*]})}"
        $E run ${TASK:+--task "$TASK"} --dim B="$B" --dim H="$H" --dim S="$S" --dim D="$D" --dim CAUSAL="$C" "${gq[@]}" --generations "$gens" \
            --population "$pop" --children "$pop" --time-limit "$secs" --db "$db" --quiet "${lane_opts[@]}" ||
            failed "$tag: evoeng run exited $?"
        $E top -n 3 --db "$db"
        $E export --best --format json --db "$db" -o "$out/exports/$tag.json" || failed "$tag: evoeng export exited $?"
    done
    return "$fails"
}
if [ "$lanes" -eq 1 ]; then
    search 0
else
    for ((g = 0; g < lanes; g++)); do
        search "$g" > "$out/lane$g.log" 2>&1 &
        pids[g]=$!
    done
    for ((g = 0; g < lanes; g++)); do
        wait "${pids[g]}"
        rc=$?
        cat "$out/lane$g.log"
        [ "$rc" -eq 0 ] || { grep -h "^sdpa_shapes.sh: " "$out/lane$g.log" >&2; fails=$((fails + rc)); }
    done
fi
if [ -n "${EXTRA_DB:-}" ]; then
    $E export --best --format json --db "$EXTRA_DB" -o "$out/exports/extra.json" || failed "extra: evoeng export exited $?"
fi
if [ "${COMPARE:-1}" != 0 ]; then
    python3 bench/compare_sdpa.py "$out"/exports/*.json --out "$out/sdpa_results.json" 2>&1 | tee "$out/sdpa_table.txt"
    rc=${PIPESTATUS[0]}
    [ "$rc" -eq 0 ] || failed "compare_sdpa.py exited $rc"
fi
[ "$fails" -eq 0 ]

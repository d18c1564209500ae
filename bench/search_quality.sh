#!/usr/bin/env bash
# Search quality (issue 12): strategies against the ground truth of one
# exhaustive run, measured once on the GPU and then replayed on the CPU.
#
#   bench/search_quality.sh OUTDIR truth    on a GPU machine: measure the ground truth
#   bench/search_quality.sh OUTDIR replay   anywhere (CPU): replay and report
#   bench/search_quality.sh OUTDIR all      truth, then replay once the truth is complete
#
# truth: two reduced spaces of the attention task (bench/small_space.py),
#   seed  B4 H8 S512 D64: BLOCK_M BLOCK_N WARPS STAGES SPLITS WGMMA MIN_BLOCKS
#         CLUSTER OVERLAP free (1,022 valid configurations on sm_90)
#   s2048 B4 H8 S2048 D64: BLOCK_M BLOCK_N WARPS STAGES SPLITS WGMMA CLUSTER
#         free (336 valid)
# each measured by `run --strategy exhaustive` into $DBDIR/<space>.db. One
# call works for at most BUDGET_S seconds (default 450) and stops there;
# the exhaustive runs resume where they stopped (nothing measured is
# measured again), so call it again until it prints "truth: complete".
# After each call OUTDIR/<space>.db.xz holds a copy of each store without
# the rendered sources (a few MB); put those files into $CARRYDIR (default
# population/search_quality_carry, git-ignored) and carry that folder to
# the next call: a fresh machine unpacks them into $DBDIR (default
# population/search_quality) and resumes. Resume is given the spec again
# (--task), so the checkout may live at another path. GPUS=all (or N)
# judges on several GPUs at once (--gpus).
#
# replay: bench/search_replay on each store (evolve, model and random, 5
#   seeds each, half the space as budget), the tables in
#   OUTDIR/<space>.md and the convergence plots in OUTDIR/<space>.svg.
set -u
out=${1:?usage: search_quality.sh OUTDIR truth|replay|all}
what=${2:?usage: search_quality.sh OUTDIR truth|replay|all}
mkdir -p "$out"
E=${EVOENG:-build/src/evoeng}
R=${SEARCH_REPLAY:-build/bench/search_replay}
DBDIR=${DBDIR:-population/search_quality}
CARRYDIR=${CARRYDIR:-population/search_quality_carry}
GPUS=${GPUS:-}
BUDGET_S=${BUDGET_S:-450}
SEEDS=${SEEDS:-5}
export EVOENG_CACHE_DIR=${EVOENG_CACHE_DIR:-/tmp/evoeng-cache}
mkdir -p "$DBDIR"

spaces="seed s2048"
knobs_seed="BLOCK_M BLOCK_N WARPS STAGES SPLITS WGMMA MIN_BLOCKS CLUSTER OVERLAP"
knobs_s2048="BLOCK_M BLOCK_N WARPS STAGES SPLITS WGMMA CLUSTER"
dims_seed=""
dims_s2048="--dim S=2048"

# status of the latest run in a store: completed, interrupted, ..., or none
run_status() {
    python3 - "$1" <<'EOF'
import sqlite3, sys, os
if not os.path.exists(sys.argv[1]):
    print("none"); sys.exit()
r = sqlite3.connect(sys.argv[1]).execute("SELECT id, status FROM runs ORDER BY id DESC LIMIT 1").fetchone()
print("%s %s" % (r[1], r[0]) if r else "none")
EOF
}

# A copy of a store without the rendered sources (the measurements, the
# runs and the compile rows stay; a resumed run does not need the texts),
# compressed: small enough to come back from the device and to be carried
# to the next call.
pack() {
    python3 - "$1" "$2" <<'EOF'
import lzma, os, shutil, sqlite3, sys, tempfile
src, dst = sys.argv[1], sys.argv[2]
tmp = tempfile.mktemp(suffix=".db")
db = sqlite3.connect(src)
db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
db.execute("VACUUM INTO ?", (tmp,))
db.close()
db = sqlite3.connect(tmp)
db.execute("UPDATE sources SET text = '', bytes = 0")
db.commit()
db.execute("VACUUM")
db.close()
with open(tmp, "rb") as f, lzma.open(dst, "wb", preset=6) as g:
    shutil.copyfileobj(f, g)
os.unlink(tmp)
print("  %s: %.1f MB" % (dst, os.path.getsize(dst) / 1e6))
EOF
}

# Unpack the carried copies (CARRYDIR/<space>.db.xz) of stores this machine
# does not have (a fresh machine).
unpack() {
    for sp in $spaces; do
        local db="$DBDIR/$sp.db" xz="$CARRYDIR/$sp.db.xz"
        if [ ! -f "$db" ] && [ -f "$xz" ]; then
            python3 -c 'import lzma, shutil, sys; shutil.copyfileobj(lzma.open(sys.argv[1]), open(sys.argv[2], "wb"))' "$xz" "$db"
            echo "  $db: unpacked from $xz"
        fi
    done
}

truth() {
    local t0=$SECONDS all=1
    unpack
    for sp in $spaces; do
        local knobs_var=knobs_$sp dims_var=dims_$sp db="$DBDIR/$sp.db" spec="$DBDIR/$sp.json"
        python3 bench/small_space.py templates/attention/task.json "$spec" ${!knobs_var}
        local st id left
        read -r st id <<<"$(run_status "$db")"
        if [ "$st" = completed ]; then
            echo "truth $sp: complete (run $id, $db)"
            continue
        fi
        left=$((BUDGET_S - (SECONDS - t0)))
        if [ "$left" -lt 60 ]; then
            all=0
            echo "truth $sp: not started, no time left in this call"
            continue
        fi
        $E check "$spec" ${!dims_var} --sample 0 | grep space
        if [ "$st" = none ]; then
            echo "== truth $sp: exhaustive run, at most ${left}s"
            $E run --task "$spec" ${!dims_var} --strategy exhaustive --children 16 --seed 1 --db "$db" \
                --time-limit "${left}s" --quiet ${GPUS:+--gpus "$GPUS"}
        else
            echo "== truth $sp: resuming run $id ($st), at most ${left}s"
            $E resume "$id" --task "$spec" --db "$db" --time-limit "${left}s" --quiet ${GPUS:+--gpus "$GPUS"}
        fi
        read -r st id <<<"$(run_status "$db")"
        python3 - "$db" <<'EOF'
import sqlite3, sys
db = sqlite3.connect(sys.argv[1])
rid = db.execute("SELECT max(id) FROM runs").fetchone()[0]
if rid is None:
    sys.exit("  no run recorded")
n, ok = db.execute("SELECT count(*), sum(status='ok') FROM candidates WHERE run_id=?", (rid,)).fetchone()
print("  run %d: %d configurations measured, %d ok" % (rid, n, ok or 0))
EOF
        if [ "$st" = completed ]; then echo "truth $sp: complete (run $id)"; else all=0; echo "truth $sp: $st"; fi
    done
    for sp in $spaces; do
        [ -f "$DBDIR/$sp.db" ] && pack "$DBDIR/$sp.db" "$out/$sp.db.xz"
    done
    if [ $all = 1 ]; then echo "truth: complete"; else echo "truth: incomplete, call again"; fi
    [ $all = 1 ]
}

replay() {
    unpack
    for sp in $spaces; do
        local db="$DBDIR/$sp.db"
        if [ ! -f "$db" ]; then echo "replay $sp: no truth ($db)"; continue; fi
        local spec="$DBDIR/$sp.json" knobs_var=knobs_$sp
        [ -f "$spec" ] || python3 bench/small_space.py templates/attention/task.json "$spec" ${!knobs_var}
        echo "== replay $sp"
        $R "$db" --task "$spec" --seeds "$SEEDS" --csv "$out/$sp.csv" | tee "$out/$sp.md"
        python3 bench/search_report.py "$out/$sp.csv" "$out/$sp.svg" "search quality: $sp space" >> "$out/$sp.md"
    done
}

case $what in
    truth) truth ;;
    replay) replay ;;
    all) if truth; then replay; fi ;;
    *) echo "usage: search_quality.sh OUTDIR truth|replay|all" >&2; exit 2 ;;
esac

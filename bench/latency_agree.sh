#!/usr/bin/env bash
# Does evoeng's latency agree with an outside CUDA-graph measurement of the
# same kernel? (issue 11). For the attention seed shape (B4 H8 S512 D64) and
# B4 H8 S2048: take a kernel (the best of a run, or the default params),
# export it as JSON, then in the same session
#   1. `evoeng bench --params <its params> --dim ... --json`  (latency_us)
#   2. bench/compare_sdpa.py on the export (evoeng contender: CuPy/NVRTC
#      build of the exported source, CUDA graph of --calls launches,
#      median replay / calls), as it runs by default: evoeng, FA2 and
#      cuDNN alternating ("rotation")
#   3. compare_sdpa.py --only evoeng --graph-only: the same kernel timed
#      alone and never launched outside a graph ("alone")
#   4. bench/bare_time.py: the same kernel from a bare ctypes process, on
#      evoeng's inputs, graphs lasting 0.5 ms ("bare"; shown, not judged)
#   5. `evoeng bench` again (drift between 1 and 5 shows in the table)
# and reports evoeng's figure (the mean of 1 and 5) against each of
# compare_sdpa's, as a difference in % of compare_sdpa's; a shape passes
# when both differences are within LIMIT_PCT (3%).
#
# Usage (repository root, GPU machine): bench/latency_agree.sh [OUTDIR]
# Env: EVOENG (default $PWD/build/src/evoeng), EVO_SOURCE_ROOT (default $PWD),
#      OUT (default OUTDIR, else ./latency-agree-out),
#      SEED_DB, S2048_DB: stores of runs at those shapes (e.g. seed.db and
#        s2048.db of bench/throughput.sh); their best is used. Unset or
#        missing: the default params (a generation-0 run of one candidate
#        makes the export).
#      SEED_EXPORT, S2048_EXPORT: JSON exports to use instead (e.g. those
#        of bench/sdpa_shapes.sh); they win over the stores.
#      LIMIT_PCT (default 3).
# Only kernels rendered from the task's template are supported (bench
# rebuilds them from their params).
# Exit status: 0 all shapes pass, 1 a shape fails or a step fails.
set -u
out=${1:-${OUT:-latency-agree-out}}
export EVO_SOURCE_ROOT=${EVO_SOURCE_ROOT:-$PWD}
E=${EVOENG:-$PWD/build/src/evoeng}
T=$EVO_SOURCE_ROOT/templates/attention/task.json
limit=${LIMIT_PCT:-3}
export EVOENG_CACHE_DIR=${EVOENG_CACHE_DIR:-/tmp/evoeng-cache}
mkdir -p "$out"
out=$(cd "$out" && pwd)
rows=()
for spec in "seed:${SEED_DB:-}:${SEED_EXPORT:-}:--dim B=4 --dim H=8 --dim S=512 --dim D=64" \
            "s2048:${S2048_DB:-}:${S2048_EXPORT:-}:--dim B=4 --dim H=8 --dim S=2048 --dim D=64"; do
    IFS=: read -r tag db given dims <<< "$spec"
    exp=$out/$tag.export.json
    echo "=== $tag ($dims)"
    if [ -n "$given" ]; then
        cp "$given" "$exp" || { rows+=("$tag error export"); continue; }
        what="export $given"
    elif [ -n "$db" ] && [ -f "$db" ]; then
        what="best of $db"
        "$E" export --best --format json --db "$db" -o "$exp" || { rows+=("$tag error export"); continue; }
    else
        [ -n "$db" ] && echo "warning: $db does not exist (a fresh machine?): using the default params"
        what="default params"
        gdb=$out/$tag-default.db
        rm -f "$gdb" "$gdb-wal" "$gdb-shm"
        # shellcheck disable=SC2086  # $dims is a list of words
        "$E" run --task "$T" $dims --generations 0 --population 1 --children 1 --db "$gdb" --quiet \
            || { rows+=("$tag error run"); continue; }
        id=$(python3 -c "import sqlite3,sys; print(sqlite3.connect(sys.argv[1]).execute('SELECT baseline_id FROM runs ORDER BY id DESC LIMIT 1').fetchone()[0])" "$gdb")
        "$E" export "$id" --format json --db "$gdb" -o "$exp" || { rows+=("$tag error export"); continue; }
    fi
    params=$(python3 -c "import json,sys; p=json.load(open(sys.argv[1]))['params']; print(','.join('%s=%s' % kv for kv in p.items()))" "$exp")
    echo "$what: $params"
    # shellcheck disable=SC2086
    "$E" bench "$T" $dims --params "$params" --json --db "$out/bench.db" > "$out/$tag.bench1.json" 2> "$out/$tag.bench1.err"
    python3 "$EVO_SOURCE_ROOT/bench/compare_sdpa.py" "$exp" --out "$out/$tag.sdpa.json" > "$out/$tag.sdpa.log" 2>&1
    python3 "$EVO_SOURCE_ROOT/bench/compare_sdpa.py" "$exp" --only evoeng --graph-only --out "$out/$tag.alone.json" \
        > "$out/$tag.alone.log" 2>&1
    python3 "$EVO_SOURCE_ROOT/bench/bare_time.py" "$exp" --json > "$out/$tag.bare.json" 2> "$out/$tag.bare.err"
    # shellcheck disable=SC2086
    "$E" bench "$T" $dims --params "$params" --json --db "$out/bench.db" > "$out/$tag.bench2.json" 2> "$out/$tag.bench2.err"
    tail -4 "$out/$tag.sdpa.log"
    rows+=("$tag ok $out/$tag.bench1.json $out/$tag.bench2.json $out/$tag.sdpa.json $out/$tag.alone.json $out/$tag.bare.json")
done
python3 - "$limit" "$out/latency_agree.json" "${rows[@]}" << 'PYEOF'
import json, sys
limit, dest, rows = float(sys.argv[1]), sys.argv[2], sys.argv[3:]
results, ok_all = [], True

def bench_us(path):
    try:
        j = json.load(open(path))
        return j["latency_us"] if j.get("status") == "ok" else None
    except (OSError, ValueError, KeyError):
        return None

def graph_us(path, name):
    try:
        return json.load(open(path))["results"][0]["contenders"][name].get("us")
    except (OSError, ValueError, KeyError, IndexError):
        return None

def bare_us(path):
    try:
        j = json.load(open(path))
        return min(j["per_call_us"].items(), key=lambda kv: int(kv[0]))[1]
    except (OSError, ValueError, KeyError, AttributeError):
        return None

fmt = lambda x: "%10.2f" % x if isinstance(x, (int, float)) else "%10s" % "n/a"
pct = lambda x: "%+.2f%%" % x if isinstance(x, (int, float)) else "n/a"
print("\n%-6s %10s %10s %10s %10s %10s %10s %9s %9s %9s  %s" % ("shape", "evoeng #1", "evoeng #2", "rotation",
      "alone", "bare", "FA2", "vs rot.", "vs alone", "vs bare", "verdict"))
for row in rows:
    f = row.split()
    r = {"shape": f[0]}
    if f[1] != "ok":
        r["verdict"] = "error: " + " ".join(f[2:])
    else:
        b1, b2 = bench_us(f[2]), bench_us(f[3])
        g, fa, alone = graph_us(f[4], "evoeng"), graph_us(f[4], "flash"), graph_us(f[5], "evoeng")
        ev = [x for x in (b1, b2) if x is not None]
        bare = bare_us(f[6])
        r.update(evoeng_us_1=b1, evoeng_us_2=b2, graph_us=g, alone_us=alone, bare_us=bare, fa2_us=fa)
        if ev and g and alone:
            e = sum(ev) / len(ev)
            r["evoeng_us"] = e
            r["diff_pct"] = (e - g) / g * 100
            r["diff_alone_pct"] = (e - alone) / alone * 100
            if bare:
                r["diff_bare_pct"] = (e - bare) / bare * 100
            ok = abs(r["diff_pct"]) <= limit and abs(r["diff_alone_pct"]) <= limit
            r["verdict"] = "pass" if ok else "FAIL"
        else:
            r["verdict"] = "error: a measurement is missing (see the .err and .log files)"
    ok_all = ok_all and r["verdict"] == "pass"
    results.append(r)
    print("%-6s %s %s %s %s %s %s %9s %9s %9s  %s" % (r["shape"], fmt(r.get("evoeng_us_1")), fmt(r.get("evoeng_us_2")),
          fmt(r.get("graph_us")), fmt(r.get("alone_us")), fmt(r.get("bare_us")), fmt(r.get("fa2_us")),
          pct(r.get("diff_pct")), pct(r.get("diff_alone_pct")), pct(r.get("diff_bare_pct")), r["verdict"]))
json.dump({"limit_pct": limit, "results": results, "pass": ok_all}, open(dest, "w"), indent=2)
print("limit %.1f%%: %s; wrote %s" % (limit, "pass" if ok_all else "FAIL", dest))
sys.exit(0 if ok_all else 1)
PYEOF

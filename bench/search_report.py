#!/usr/bin/env python3
"""Search-quality figures from two evoeng stores: an evolve run and an
exhaustive run of the same task. Prints evolve's best / exhaustive's best,
the rank of evolve's best configuration in the exhaustive ranking, the
evaluations each used, candidates per minute, and wall time split into
compile, gate, timing (incl. A/B) and the rest.

Usage: search_report.py EVOLVE.db EXHAUSTIVE.db
The last line is "BEST_PARAMS evolve=<K=V,...> exhaustive=<K=V,...>" for
a side-by-side `evoeng bench --params ... --against ...`.
"""
import datetime
import sqlite3
import sys


def run_figures(path):
    db = sqlite3.connect(path)
    run = db.execute("SELECT id, started_at, finished_at, strategy, generations_done FROM runs "
                     "ORDER BY id DESC LIMIT 1").fetchone()
    rid, start, end, strategy, gens = run
    t0 = datetime.datetime.fromisoformat(start.replace("Z", "+00:00"))
    t1 = datetime.datetime.fromisoformat(end.replace("Z", "+00:00")) if end else t0
    wall = max((t1 - t0).total_seconds(), 1e-9)
    n, comp, gate, tim = db.execute(
        "SELECT count(*), sum(coalesce(compile_ms,0)), sum(coalesce(gate_ms,0)), sum(coalesce(time_ms,0)) "
        "FROM candidates WHERE run_id = ?", (rid,)).fetchone()
    valid = db.execute("SELECT count(*) FROM candidates WHERE run_id=? AND status='ok'", (rid,)).fetchone()[0]
    best = db.execute("SELECT id, latency_us, params_key FROM survivors WHERE run_id=? "
                      "ORDER BY latency_us LIMIT 1", (rid,)).fetchone()
    ranking = [r[0] for r in db.execute(
        "SELECT params_key FROM candidates WHERE run_id=? AND status='ok' ORDER BY latency_us", (rid,))]
    lat = {r[0]: r[1] for r in db.execute(
        "SELECT params_key, latency_us FROM candidates WHERE run_id=? AND status='ok'", (rid,))}
    return dict(strategy=strategy, gens=gens, wall=wall, n=n, valid=valid, compile_s=comp / 1000,
                gate_s=gate / 1000, time_s=tim / 1000, best=best, ranking=ranking, lat=lat)


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    ev, ex = run_figures(sys.argv[1]), run_figures(sys.argv[2])
    print("%-11s %6s %6s %9s %9s %9s %9s %9s %10s" % ("strategy", "evals", "valid", "wall s", "cand/min",
                                                    "compile s", "gate s", "timing s", "best us"))
    for f in (ev, ex):
        rest = f["wall"] - f["gate_s"] - f["time_s"]
        print("%-11s %6d %6d %9.1f %9.1f %9.1f %9.1f %9.1f %10.3f" % (
            f["strategy"], f["n"], f["valid"], f["wall"], 60 * f["n"] / f["wall"], f["compile_s"], f["gate_s"],
            f["time_s"], f["best"][1]))
        print("%-11s compile is NVRTC time summed over parallel threads; wall minus gate and timing = %.1f s "
              "(compile wall, bookkeeping, worker start)" % ("", rest))
    ratio = ev["best"][1] / ex["best"][1]
    key = ev["best"][2]
    rank = ex["ranking"].index(key) + 1 if key in ex["ranking"] else None
    same = ex["lat"].get(key)
    print()
    print("evolve best / exhaustive best = %.4f (%.3f us / %.3f us, stored latencies of two runs)" % (
        ratio, ev["best"][1], ex["best"][1]))
    if rank:
        print("evolve's best configuration ranks %d of %d valid in the exhaustive run (%.3f us there)" % (
            rank, len(ex["ranking"]), same))
    print("evaluations: evolve %d, exhaustive %d (%.0f%% of the space)" % (
        ev["n"], ex["n"], 100.0 * ev["n"] / max(ex["n"], 1)))
    print("BEST_PARAMS evolve=%s exhaustive=%s" % (ev["best"][2], ex["best"][2]))


if __name__ == "__main__":
    main()

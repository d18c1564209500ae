#!/usr/bin/env python3
"""Throughput figures of an evoeng run (issue 11), from its population
store and, optionally, what bench/throughput.sh measured around it.

Usage:
  throughput_report.py [--db POPULATION.db] [--run ID] [--wall S] [--cpu S]
                       [--gpu-samples FILE] [--aa BENCH_REPEAT.json ...] [--json]

For the run (default: the latest run in the store) it prints:
  candidates         rows in `candidates` for the run
  wall_s             --wall if given, else finished_at - started_at of the
                     run, else the sum of generations.wall_ms
  per_minute         candidates / (wall_s / 60)
  compile_cpu_s      NVRTC time of the run's compilations (compiles.compile_ms
                     of every compile a candidate of the run points at, each
                     once): CPU seconds, spread over the compile threads
  compile_wait_s     sum of candidates.compile_ms (each candidate's wait for
                     its compilation, cache hits included)
  wait_s             the GPU threads' waits for compilation and loading: the
                     "stage N: waited X ms ..., gate Y ms" lines of the
                     candidates' logs (0 for a store without them)
  gate_s             the correctness gate itself: the Y of those lines, or
                     candidates.gate_ms where a log has none (older stores,
                     whose gate_ms holds no waits)
  time_s             sum of candidates.time_ms (timing and the A/B comparison)
  gpus               GPUs that judged children (metrics_json "gpu".index), 1
                     when none is named
  other_s            wall_s - (wait_s + gate_s + time_s) / gpus: what a GPU
                     thread spends on none of them (proposals, the store,
                     the loop, idle)
  evoeng_cpu_s       --cpu: user + sys seconds of the evoeng process tree
  gpu_busy_pct       mean of the --gpu-samples values (nvidia-smi
                     utilization.gpu, one number per line; other lines skipped)
and for each --aa file (the JSON of `evoeng bench --repeat N --json`): task,
comparisons, median ratio, p95 and max |ratio - 1|, false reverts, pass.
Python 3 standard library only. Exit status 0, 1 when a file cannot be read,
2 for a usage error.
"""
import argparse
import datetime
import json
import re
import sqlite3
import sys


def _iso(t):
    return datetime.datetime.fromisoformat(t.replace("Z", "+00:00")) if t else None


STAGE_LINE = re.compile(r"stage \d: waited ([0-9.]+) ms for compilation and loading, gate ([0-9.]+) ms")


def db_figures(path, run_id=None, wall=None):
    """The store's figures for one run as a dict (see the module doc)."""
    db = sqlite3.connect("file:%s?mode=ro" % path, uri=True)
    q = "SELECT id, started_at, finished_at FROM runs "
    row = db.execute(q + "WHERE id = ?", (run_id,)).fetchone() if run_id else \
        db.execute(q + "ORDER BY id DESC LIMIT 1").fetchone()
    if row is None:
        raise ValueError("%s: no run%s" % (path, " %d" % run_id if run_id else ""))
    rid, start, end = row
    n, wait, tim = db.execute(
        "SELECT count(*), total(compile_ms), total(time_ms) FROM candidates WHERE run_id = ?",
        (rid,)).fetchone()
    waited = gate = 0.0
    gpus = set()
    for gate_ms, log, metrics in db.execute(
            "SELECT gate_ms, log, metrics_json FROM candidates WHERE run_id = ?", (rid,)):
        stages = STAGE_LINE.findall(log or "")
        if stages:
            waited += sum(float(w) for w, _ in stages)
            gate += sum(float(g) for _, g in stages)
        else:
            gate += gate_ms or 0.0
        try:
            g = (json.loads(metrics) if metrics else {}).get("gpu")
        except (ValueError, AttributeError):
            g = None
        if isinstance(g, dict) and g.get("index") is not None:
            gpus.add(g["index"])
    comp = db.execute("SELECT total(compile_ms) FROM compiles WHERE id IN "
                      "(SELECT compile_id FROM candidates WHERE run_id = ?)", (rid,)).fetchone()[0]
    gens = db.execute("SELECT total(wall_ms) FROM generations WHERE run_id = ?", (rid,)).fetchone()[0]
    db.close()
    if wall is None:
        t0, t1 = _iso(start), _iso(end)
        wall = (t1 - t0).total_seconds() if t0 and t1 else gens / 1000.0
    f = {"db": path, "run_id": rid, "candidates": n, "wall_s": wall,
         "per_minute": n / (wall / 60.0) if wall > 0 else None,
         "compile_cpu_s": comp / 1000.0, "compile_wait_s": wait / 1000.0,
         "wait_s": waited / 1000.0, "gate_s": gate / 1000.0, "time_s": tim / 1000.0, "gpus": max(1, len(gpus))}
    f["other_s"] = wall - (f["wait_s"] + f["gate_s"] + f["time_s"]) / f["gpus"]
    return f


def gpu_busy(path):
    """Mean of the numeric lines of an nvidia-smi sample file, and their count."""
    vals = []
    with open(path) as fh:
        for line in fh:
            for field in line.replace(",", " ").split():
                try:
                    vals.append(float(field))
                except ValueError:
                    pass
    return (sum(vals) / len(vals) if vals else None), len(vals)


def aa_figures(path):
    with open(path) as fh:
        j = json.load(fh)
    keys = ("task", "a_params", "b_params", "aa", "done", "shared", "cold", "median", "p95_abs_dev",
            "max_abs_dev", "reverts", "false_reverts", "aa_pass", "device")
    out = {k: j.get(k) for k in keys}
    out["file"] = path
    return out


def _pct(x):
    return "n/a" if x is None else "%.2f%%" % (x * 100)


def print_text(f, aa):
    if f:
        w = f["wall_s"]

        def share(x):
            return "%6.1f%%" % (100.0 * x / w) if w > 0 else ""
        print("run %d of %s" % (f["run_id"], f["db"]))
        print("  candidates       %d in %.1f s wall: %s per minute" % (
            f["candidates"], w, "n/a" if f["per_minute"] is None else "%.1f" % f["per_minute"]))
        k = f["gpus"]
        print("  GPU thread%s (their split of the wall time):" % (" (mean of %d GPUs)" % k if k > 1 else ""))
        print("    compile waits  %9.1f s     %s" % (f["wait_s"] / k, share(f["wait_s"] / k)))
        print("    gate           %9.1f s     %s" % (f["gate_s"] / k, share(f["gate_s"] / k)))
        print("    timing + A/B   %9.1f s     %s" % (f["time_s"] / k, share(f["time_s"] / k)))
        print("    the rest       %9.1f s     %s (proposals, store, loop, idle)" % (f["other_s"], share(f["other_s"])))
        print("  compile (NVRTC)  %9.1f s CPU (the benchmark-shape units the store records)" % f["compile_cpu_s"])
        if f.get("evoeng_cpu_s") is not None:
            print("  evoeng CPU       %9.1f s user+sys (%.2f cores on average)" % (
                f["evoeng_cpu_s"], f["evoeng_cpu_s"] / w if w > 0 else 0))
        if f.get("gpu_busy_pct") is not None:
            print("  GPU busy         %9.1f %% (mean of %d samples)" % (f["gpu_busy_pct"], f["gpu_samples"]))
    for a in aa:
        print("A/%s %s: %s comparisons%s, median %s, p95 |r-1| %s, max |r-1| %s, reverts %s%s" % (
            "A" if a["aa"] else "B", a["task"], a["done"], "" if a["shared"] in (None, True) else " (shared 0)",
            "n/a" if a["median"] is None else "%.4f" % a["median"], _pct(a["p95_abs_dev"]),
            _pct(a["max_abs_dev"]), a["reverts"],
            "" if a["aa_pass"] is None else ": %s" % ("pass" if a["aa_pass"] else "FAIL")))


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--db", help="population store of the run")
    ap.add_argument("--run", type=int, help="run ID (default: the latest)")
    ap.add_argument("--wall", type=float, help="wall seconds measured outside (default: from the store)")
    ap.add_argument("--cpu", type=float, help="user + sys CPU seconds of evoeng")
    ap.add_argument("--gpu-samples", help="nvidia-smi utilization.gpu samples, one per line")
    ap.add_argument("--aa", action="append", default=[], help="JSON of `evoeng bench --repeat N --json`")
    ap.add_argument("--json", action="store_true", help="machine-readable output")
    a = ap.parse_args(argv)
    if not a.db and not a.aa:
        ap.error("give --db and/or --aa")
    try:
        f = db_figures(a.db, a.run, a.wall) if a.db else None
        if f is not None:
            f["evoeng_cpu_s"] = a.cpu
            f["gpu_busy_pct"], f["gpu_samples"] = gpu_busy(a.gpu_samples) if a.gpu_samples else (None, 0)
        aa = [aa_figures(p) for p in a.aa]
    except (OSError, ValueError, sqlite3.Error) as e:
        print("throughput_report.py: %s" % e, file=sys.stderr)
        return 1
    if a.json:
        print(json.dumps({"run": f, "aa": aa}, indent=2))
    else:
        print_text(f, aa)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

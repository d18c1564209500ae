#!/usr/bin/env python3
"""The tables of bench/scale.sh: one row a run (OUTDIR/<shape>-<mode>[-sync]/)
and the simulated rows (OUTDIR/sim-<slots>.json), as Markdown on stdout and
as OUTDIR/scale.json.

Per run: candidates a minute (the run's own summary: evaluated over its
wall time), each GPU's busy share (nvidia-smi utilisation, mean of the
samples), the cores busy (/proc/stat over the run, in cores of --cores),
the best latency, NVRTC units and evoeng CPU seconds a candidate, the
candidates a minute that the --cores cores could compile at that cost (the
cores' cap), what bounded the run (its summary's "bound": gpus, compile or
neither), and the ratio of candidates a minute against the one-GPU run of
the same shape.

usage: scale_report.py OUTDIR [--cores N] [--json]
"""
import argparse
import glob
import json
import os
import sys


def summary_of(path):
    """The last {"event": "summary"} object of a run's JSON lines, or None."""
    last = None
    try:
        with open(path) as f:
            for line in f:
                line = line.strip()
                if not line.startswith("{"):
                    continue
                try:
                    o = json.loads(line)
                except ValueError:
                    continue
                if o.get("event") == "summary":
                    last = o
    except OSError:
        return None
    return last


def error_exit(path):
    """The exit code of the error document that `run --json` prints when
    it fails (an object with "error" and "exit"), or None. mpirun in Open
    MPI 4's recovery mode exits 0 whatever rank 0 returns, so an MPI
    run's own exit code is only there."""
    try:
        with open(path) as f:
            text = f.read()
    except OSError:
        return None
    dec, code, at = json.JSONDecoder(), None, 0
    while True:
        at = text.find("{", at)
        if at < 0:
            return code
        if at == 0 or text[at - 1] == "\n":
            try:
                o, end = dec.raw_decode(text, at)
            except ValueError:
                o, end = None, at + 1
            if isinstance(o, dict) and "error" in o and isinstance(o.get("exit"), int):
                code = o["exit"]
            at = max(end, at + 1)
        else:
            at += 1


def gpu_busy(path):
    """Mean utilisation (0..1) per GPU index from nvidia-smi's CSV samples."""
    per = {}
    try:
        with open(path) as f:
            for line in f:
                parts = [p.strip() for p in line.split(",")]
                if len(parts) != 2 or not parts[0].isdigit():
                    continue
                try:
                    per.setdefault(int(parts[0]), []).append(float(parts[1]) / 100.0)
                except ValueError:
                    continue
    except OSError:
        pass
    return [sum(v) / len(v) for _, v in sorted(per.items())]


def times_of(path, cores):
    """(exit code, wall seconds, cores busy) from times.txt."""
    try:
        with open(path) as f:
            rc, t0, t1, cb0, ct0, cb1, ct1 = f.read().split()
    except (OSError, ValueError):
        return None, None, None
    total = float(ct1) - float(ct0)
    busy = (float(cb1) - float(cb0)) / total * cores if total > 0 else None
    return int(rc), float(t1) - float(t0), busy


def cores_median(path, cores):
    """The median over the run's seconds of the cores busy, from cpu.txt
    ("busy total" jiffies of /proc/stat, one line a second); None without
    two samples. The mean over the wall time counts the start (the
    reference's compile, the workers) and the end, when few cores work."""
    try:
        with open(path) as f:
            ticks = [tuple(float(x) for x in line.split()) for line in f if len(line.split()) == 2]
    except (OSError, ValueError):
        return None
    busy = [(b1 - b0) / (t1 - t0) * cores for (b0, t0), (b1, t1) in zip(ticks, ticks[1:]) if t1 > t0]
    if not busy:
        return None
    busy.sort()
    n = len(busy)
    return busy[n // 2] if n % 2 else (busy[n // 2 - 1] + busy[n // 2]) / 2


def cpu_per_candidate(s, mode, cores_busy, wall):
    """evoeng's CPU-s a candidate from the run's pipeline line; under MPI
    rank 0 only counts its own process, so take the machine's busy cores
    over the wall time instead (a dedicated machine: nothing else runs)."""
    if mode != "mpi":
        return s.get("cpu_s_per_candidate")
    n = s.get("evaluated")
    if not n or cores_busy is None or wall is None:
        return None
    return cores_busy * wall / n


def runs(outdir, cores):
    rows = []
    for d in sorted(glob.glob(os.path.join(outdir, "*-*"))):
        if not os.path.isdir(d) or not os.path.exists(os.path.join(d, "times.txt")):
            continue
        name = os.path.basename(d)
        parts = name.split("-")
        shape, mode, sync = parts[0], parts[1], len(parts) > 2 and parts[2] == "sync"
        rc, wall, cores_busy = times_of(os.path.join(d, "times.txt"), cores)
        if not rc:
            rc = error_exit(os.path.join(d, "out.jsonl")) or rc
        s = summary_of(os.path.join(d, "out.jsonl")) or {}
        rows.append({
            "name": name, "shape": shape, "mode": mode, "sync": sync, "exit": rc, "wall_s": wall,
            "evaluated": s.get("evaluated"), "candidates_per_min": s.get("candidates_per_min"),
            "best_latency_us": s.get("best_latency_us"), "slots": s.get("slots"),
            "gpu_busy": gpu_busy(os.path.join(d, "gpu.csv")), "cores_busy": cores_busy, "cores": cores,
            "cores_busy_median": cores_median(os.path.join(d, "cpu.txt"), cores),
            # under MPI the agents' units, which their replies carry to rank 0;
            # an older rank 0 counted only its own: 0, unknown rather than none
            "nvrtc_units_per_candidate": (s.get("nvrtc_units_per_candidate") or None) if mode == "mpi"
            else s.get("nvrtc_units_per_candidate"),
            "cpu_s_per_candidate": cpu_per_candidate(s, mode, cores_busy, wall), "compile_busy": s.get("compile_busy"),
            "in_flight": s.get("in_flight"),
            # the children left unjudged at the limit, and when the flights
            # began to taper off (None from a binary before the taper)
            "dropped": s.get("dropped"), "held_s": s.get("held_s"),
            # rank 0 compiles nothing under MPI: its summary cannot tell what bounded the run
            "bound": None if mode == "mpi" else s.get("bound"),
        })
    for r in rows:
        c = r["cpu_s_per_candidate"]
        r["core_cap_per_min"] = cores * 60.0 / c if c and cores else None
    base = {(r["shape"], r["sync"]): r for r in rows if r["mode"] == "1"}
    for r in rows:
        b = base.get((r["shape"], r["sync"]))
        ok = b and b.get("candidates_per_min") and r.get("candidates_per_min")
        r["ratio_vs_1gpu"] = r["candidates_per_min"] / b["candidates_per_min"] if ok else None
    return rows


def sims(outdir):
    rows = []
    for p in sorted(glob.glob(os.path.join(outdir, "sim-*.json")), key=lambda p: int(p.split("-")[-1][:-5])):
        try:
            with open(p) as f:
                rows.append(json.load(f))
        except (OSError, ValueError):
            continue
    one = next((r for r in rows if r.get("slots") == 1), None)
    for r in rows:
        r["ratio_vs_1"] = r["candidates_per_min"] / one["candidates_per_min"] if one and one.get("candidates_per_min") else None
    return rows


def fmt(v, f):
    return "-" if v is None else f.format(v)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("outdir", nargs="?")
    ap.add_argument("--cores", type=int, default=os.cpu_count())
    ap.add_argument("--json", action="store_true", help="print the JSON instead of the tables")
    ap.add_argument("--error-exit", metavar="FILE",
                    help="print the exit code of the error document in a run's --json output FILE"
                         " (nothing when there is none) and stop: scale.sh's rule for an MPI run")
    a = ap.parse_args()
    if a.error_exit:
        code = error_exit(a.error_exit)
        if code is not None:
            print(code)
        return 0
    if not a.outdir:
        ap.error("an OUTDIR is needed (or --error-exit FILE)")
    rows, sim = runs(a.outdir, a.cores), sims(a.outdir)
    doc = {"runs": rows, "simulated": sim}
    with open(os.path.join(a.outdir, "scale.json"), "w") as f:
        json.dump(doc, f, indent=1)
    if a.json:
        json.dump(doc, sys.stdout, indent=1)
        print()
        return 0
    print("| run | mode | GPUs | candidates / min | vs 1 GPU | GPU busy | cores busy | best us | NVRTC units / cand"
          " | CPU-s / cand | the cores' cap / min | bound | dropped at the limit | exit |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        busy = " ".join("{:.0%}".format(b) for b in r["gpu_busy"]) or "-"
        med = r["cores_busy_median"]
        cores = "-" if r["cores_busy"] is None else "{:.1f} of {}{}".format(
            r["cores_busy"], r["cores"], "" if med is None else " ({:.1f} in the median second)".format(med))
        print("| {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |".format(
            r["shape"], r["mode"] + (" sync" if r["sync"] else ""), fmt(r["slots"], "{}"),
            fmt(r["candidates_per_min"], "{:.1f}"), fmt(r["ratio_vs_1gpu"], "{:.2f}x"), busy, cores,
            fmt(r["best_latency_us"], "{:.2f}"), fmt(r["nvrtc_units_per_candidate"], "{:.2f}"),
            fmt(r["cpu_s_per_candidate"], "{:.2f}"), fmt(r["core_cap_per_min"], "{:.0f}"),
            fmt(r["bound"], "{}"), fmt(r["dropped"], "{}"), fmt(r["exit"], "{}")))
    if any(r["mode"] == "mpi" for r in rows):
        print("mpi rows: CPU-s / cand is the machine's busy cores over the wall time (rank 0 sees only itself);"
              " NVRTC units / cand are the agents', as their replies report them.")
    if sim:
        print()
        print("Simulated (bench/pipe_sim: sleeping compilations and GPU work, not measured on a GPU):")
        print()
        print("| slots | compile lanes | candidates / min | vs 1 slot | slots busy | compile busy |")
        print("|---|---|---|---|---|---|")
        for r in sim:
            print("| {} | {} | {:.1f} | {} | {} | {:.0%} |".format(
                r["slots"], r["lanes"], r["candidates_per_min"], fmt(r.get("ratio_vs_1"), "{:.2f}x"),
                " ".join("{:.0%}".format(b) for b in r["slot_busy"]), r["compile_busy"]))
    return 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""rate_ab_report.py: the table of bench/rate_ab.sh's runs.

Reads OUTDIR/r<i>.<a|b>/out.jsonl (the run's {"event": "summary"} line)
and err.txt (EVOENG_STEADY_DEBUG's "dbg slots: stage A n, x ms each;
stage B m, y ms each; idle z s") and prints, per run and per binary: the
candidates a minute, the GPU slots' busy share, the ms a slot spent on a
stage-A and on a stage-B candidate, and the stage-B share (the children
that reached stage B, a candidate: those that would be accepted). Then
B against A:
  - the ratio of the mean rates, as measured;
  - each binary's rate at the stage-B share pooled over every run,
    60000 * slots * busy / (A ms + share * B ms): the search's course
    moves the share from run to run (which children are accepted), the
    binaries move the stage costs and the busy share; the ratio of these
    is the change the binaries make to a GPU-bound run.
With --json, one JSON object instead. Exit: 0, 1 when a run has no
summary or no stage line, 2 usage.
"""
import json
import os
import re
import statistics
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from scale_report import summary_of  # noqa: E402  (the same summary line scale.sh reads)

STAGES = re.compile(r"dbg slots: stage A (\d+), ([0-9.]+) ms each; stage B (\d+), ([0-9.]+) ms each; idle ([0-9.]+) s")
RUN_DIR = re.compile(r"^r(\d+)\.([ab])$")


def read_run(d):
    summ = summary_of(os.path.join(d, "out.jsonl"))
    stages = None
    with open(os.path.join(d, "err.txt"), errors="replace") as f:
        for line in f:
            m = STAGES.search(line)
            if m:
                stages = m
    if not summ or not stages:
        return None
    busy = summ.get("slot_busy") or []
    na, nb = int(stages.group(1)), int(stages.group(3))
    return {
        "rate": float(summ["candidates_per_min"]),
        "evaluated": int(summ.get("evaluated", 0)),
        "slots": int(summ.get("slots", 1)),
        "busy": statistics.mean(busy) if busy else 0.0,
        "a_n": na, "a_ms": float(stages.group(2)),
        "b_n": nb, "b_ms": float(stages.group(4)),
        "share": nb / na if na else 0.0,
        "best_us": summ.get("best_latency_us"),
    }


def side_stats(rows):
    na = sum(r["a_n"] for r in rows)
    nb = sum(r["b_n"] for r in rows)
    return {
        "runs": len(rows),
        "rate": statistics.mean(r["rate"] for r in rows),
        "busy": statistics.mean(r["busy"] for r in rows),
        "slots": rows[0]["slots"],
        "a_ms": sum(r["a_n"] * r["a_ms"] for r in rows) / na if na else 0.0,
        "b_ms": sum(r["b_n"] * r["b_ms"] for r in rows) / nb if nb else 0.0,
        "a_n": na, "b_n": nb,
        "share": nb / na if na else 0.0,
    }


def at_share(s, share):
    per = s["a_ms"] + share * s["b_ms"]
    return 60000.0 * s["slots"] * s["busy"] / per if per > 0 else 0.0


def main(argv):
    args = [a for a in argv[1:] if a != "--json"]
    as_json = "--json" in argv[1:]
    if len(args) != 1 or args[0] in ("-h", "--help"):
        print(__doc__.strip(), file=sys.stderr if len(args) != 1 else sys.stdout)
        return 2 if len(args) != 1 else 0
    out = args[0]
    runs, bad = [], []
    for m in sorted(filter(None, map(RUN_DIR.match, os.listdir(out))), key=lambda m: int(m.group(1))):
        name = m.group(0)
        try:
            r = read_run(os.path.join(out, name))
        except OSError:
            r = None
        if r is None:
            bad.append(name)
            continue
        r["run"], r["side"] = int(m.group(1)), m.group(2)
        runs.append(r)
    sides = {s: [r for r in runs if r["side"] == s] for s in "ab"}
    if not sides["a"] or not sides["b"]:
        print("rate_ab_report.py: %s: no run of %s with a summary and a stage line%s" %
              (out, "A" if not sides["a"] else "B", " (unreadable: %s)" % ", ".join(bad) if bad else ""),
              file=sys.stderr)
        return 1
    st = {s: side_stats(sides[s]) for s in "ab"}
    pooled = (st["a"]["b_n"] + st["b"]["b_n"]) / max(1, st["a"]["a_n"] + st["b"]["a_n"])
    for s in "ab":
        st[s]["rate_at_pooled_share"] = at_share(st[s], pooled)
    res = {
        "runs": runs, "A": st["a"], "B": st["b"], "pooled_share": pooled,
        "rate_ratio": st["b"]["rate"] / st["a"]["rate"],
        "rate_ratio_at_pooled_share": (st["b"]["rate_at_pooled_share"] / st["a"]["rate_at_pooled_share"]
                                       if st["a"]["rate_at_pooled_share"] > 0 else None),
        "unreadable": bad,
    }
    if as_json:
        print(json.dumps(res, indent=1))
        return 1 if bad else 0
    print("| run | binary | / min | slots busy | stage A: n, ms each | stage B: n, ms each | stage B a candidate | best us |")
    print("|---|---|---|---|---|---|---|---|")
    for r in runs:
        print("| %d | %s | %.1f | %.2f | %d, %.1f | %d, %.1f | %.3f | %s |" % (
            r["run"], r["side"].upper(), r["rate"], r["busy"], r["a_n"], r["a_ms"], r["b_n"], r["b_ms"],
            r["share"], "%.2f" % r["best_us"] if isinstance(r["best_us"], (int, float)) else "-"))
    for s in "ab":
        x = st[s]
        print("%s: %d runs, mean %.1f a minute; slots %.2f busy; stage A %.1f ms, stage B %.1f ms; stage B "
              "share %.3f; at the pooled share (%.3f): %.1f a minute" % (
                  s.upper(), x["runs"], x["rate"], x["busy"], x["a_ms"], x["b_ms"], x["share"], pooled,
                  x["rate_at_pooled_share"]))
    print("B / A: %.3fx as measured; %s at the pooled stage-B share (the binaries' own effect on a GPU-bound run)" % (
        res["rate_ratio"], "%.3fx" % res["rate_ratio_at_pooled_share"] if res["rate_ratio_at_pooled_share"] else "n/a"))
    if bad:
        print("unreadable runs (no summary or stage line): %s" % ", ".join(bad))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))

#!/usr/bin/env python3
"""Convergence plot of the search-quality replay (bench/search_replay
--csv): for each strategy, the median over seeds of best / exhaustive best
against the number of evaluations, as a plain SVG (no plotting library
needed), plus the same figures as a markdown table on stdout.

Usage: search_report.py TRACE.csv OUT.svg [TITLE]
TRACE.csv has the columns strategy,seed,evaluations,ratio (one row per
evaluation of each replay).
"""
import csv
import math
import statistics
import sys

COLORS = ["#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b"]


def load(path):
    traces = {}
    with open(path) as f:
        for row in csv.DictReader(f):
            runs = traces.setdefault(row["strategy"], {})
            runs.setdefault(int(row["seed"]), []).append(float(row["ratio"]))
    return traces


def at(trace, n):
    if not trace:
        return math.inf
    return trace[min(n, len(trace)) - 1]


def medians(traces):
    """strategy -> list of the median ratio after 1..N evaluations"""
    out = {}
    for strategy, runs in traces.items():
        n = max(len(t) for t in runs.values())
        out[strategy] = [statistics.median(at(t, i) for t in runs.values()) for i in range(1, n + 1)]
    return out


def svg(meds, title, path, width=720, height=420):
    left, right, top, bottom = 70, 160, 40, 50
    n = max(len(m) for m in meds.values())
    finite = [v for m in meds.values() for v in m if math.isfinite(v)]
    ymax = min(max(finite), 2.0) if finite else 2.0
    ymin = 1.0

    def x(i):
        return left + (width - left - right) * (i - 1) / max(n - 1, 1)

    def y(v):
        v = min(max(v, ymin), ymax)
        return top + (height - top - bottom) * (1 - (v - ymin) / max(ymax - ymin, 1e-9))

    parts = ['<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" font-family="sans-serif" '
             'font-size="12">' % (width, height),
             '<rect width="100%" height="100%" fill="white"/>',
             '<text x="%d" y="22" font-size="14">%s</text>' % (left, title)]
    for k in range(6):   # y grid
        v = ymin + (ymax - ymin) * k / 5
        parts.append('<line x1="%d" x2="%d" y1="%.1f" y2="%.1f" stroke="#ddd"/>' % (left, width - right, y(v), y(v)))
        parts.append('<text x="%d" y="%.1f" text-anchor="end">%.2f</text>' % (left - 6, y(v) + 4, v))
    for k in range(6):   # x ticks
        i = 1 + round((n - 1) * k / 5)
        parts.append('<text x="%.1f" y="%d" text-anchor="middle">%d</text>' % (x(i), height - bottom + 18, i))
    parts.append('<line x1="%d" x2="%d" y1="%.1f" y2="%.1f" stroke="#888" stroke-dasharray="4 3"/>' % (
        left, width - right, y(1.02), y(1.02)))
    parts.append('<text x="%d" y="%.1f" fill="#888">2%%</text>' % (width - right + 4, y(1.02) + 4))
    parts.append('<text x="%d" y="%d" text-anchor="middle">evaluations</text>' % (
        (left + width - right) // 2, height - 12))
    parts.append('<text x="16" y="%d" transform="rotate(-90 16 %d)" text-anchor="middle">best / exhaustive '
                 'best (median over seeds)</text>' % ((top + height - bottom) // 2, (top + height - bottom) // 2))
    for k, (strategy, m) in enumerate(sorted(meds.items())):
        color = COLORS[k % len(COLORS)]
        pts = " ".join("%.1f,%.1f" % (x(i + 1), y(v)) for i, v in enumerate(m) if math.isfinite(v))
        parts.append('<polyline fill="none" stroke="%s" stroke-width="2" points="%s"/>' % (color, pts))
        ly = top + 20 * k + 10
        parts.append('<line x1="%d" x2="%d" y1="%d" y2="%d" stroke="%s" stroke-width="2"/>' % (
            width - right + 20, width - right + 44, ly, ly, color))
        parts.append('<text x="%d" y="%d">%s</text>' % (width - right + 50, ly + 4, strategy))
    parts.append("</svg>")
    with open(path, "w") as f:
        f.write("\n".join(parts) + "\n")


def main():
    if len(sys.argv) not in (3, 4):
        sys.exit(__doc__)
    traces = load(sys.argv[1])
    if not traces:
        sys.exit("%s: no traces" % sys.argv[1])
    meds = medians(traces)
    title = sys.argv[3] if len(sys.argv) == 4 else "search quality"
    svg(meds, title, sys.argv[2])
    names = sorted(meds)
    n = max(len(m) for m in meds.values())
    print("| evaluations | " + " | ".join(names) + " |")
    print("|---|" + "---|" * len(names))
    for i in sorted({1, 10, 25, 50, 100, 150, 200, 300, 400, 500, 750, 1000, n}):
        if i <= n:
            print("| %d | " % i + " | ".join("%.4f" % at(meds[s], i) for s in names) + " |")
    print("\nplot: %s" % sys.argv[2])


if __name__ == "__main__":
    main()

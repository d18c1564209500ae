#!/usr/bin/env python3
"""Summarise EVOENG_MPI_DEBUG lines (src/mpi/mpistat.h) found in files:
per rank, per request kind, each measure's count, mean and max.

Usage: bench/mpi_debug.py FILE...   (e.g. scale.sh's OUTDIR/seed-mpi/err.txt)
"""
import json
import sys


def rows(path):
    with open(path, errors="replace") as f:
        for line in f:
            if line.startswith('{"mpi_debug"'):
                try:
                    yield json.loads(line)
                except ValueError:
                    pass


def main(paths):
    if not paths:
        print(__doc__.strip(), file=sys.stderr)
        return 2
    found = 0
    for path in paths:
        for d in sorted(rows(path), key=lambda d: d.get("rank", 0)):
            found += 1
            print(f"== {path}: {d['mpi_debug']} (rank {d['rank']}) {json.dumps(d.get('extra', {}))}")
            for op, measures in sorted(d["ops"].items()):
                parts = [f"{k} n={v['n']} mean={v['mean']:.3f} max={v['max']:.3f}"
                         for k, v in measures.items() if k != "unanswered"]
                if "unanswered" in measures:
                    parts.append(f"unanswered n={measures['unanswered']['n']}")
                print(f"  {op:12s} " + "; ".join(parts))
    if not found:
        print("mpi_debug.py: no mpi_debug line (was EVOENG_MPI_DEBUG=1 set?)", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main(sys.argv[1:]))
    except BrokenPipeError:   # piped into head
        sys.exit(0)

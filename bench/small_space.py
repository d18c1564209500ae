#!/usr/bin/env python3
"""Write a copy of a task spec whose parameter space is cut down to the
params named on the command line (the others keep only their default), so
that `evoeng run --strategy exhaustive` can evaluate all of it as ground
truth for the search-quality benchmark.

Usage: small_space.py TASK.json OUT.json PARAM [PARAM ...]
The task's kernel files (*.cu, *.cuh, *.h beside it) are copied beside
OUT.json, so OUT.json can live anywhere: a spec reads only files of its
own directory (README.md, "Trust model").
"""
import glob
import json
import os
import shutil
import sys


def main():
    if len(sys.argv) < 4:
        sys.exit(__doc__)
    src, out, keep = sys.argv[1], sys.argv[2], set(sys.argv[3:])
    with open(src) as f:
        task = json.load(f)
    base = os.path.dirname(os.path.abspath(src))
    unknown = keep - set(task["params"])
    if unknown:
        sys.exit("unknown params: %s" % ", ".join(sorted(unknown)))
    for name, p in task["params"].items():
        if name not in keep:
            p["values"] = [p["default"]]
    dest = os.path.dirname(os.path.abspath(out))
    os.makedirs(dest, exist_ok=True)
    if dest != base:
        for f in sorted(glob.glob(os.path.join(base, "*.cu")) + glob.glob(os.path.join(base, "*.cuh")) +
                        glob.glob(os.path.join(base, "*.h"))):
            shutil.copy(f, dest)
    task["name"] = task["name"]
    task["description"] = task.get("description", "") + " (reduced space: %s)" % ", ".join(sorted(keep))
    with open(out, "w") as f:
        json.dump(task, f, indent=2)


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""Write a copy of a task spec whose parameter space is cut down to the
params named on the command line (the others keep only their default), so
that `evoeng run --strategy exhaustive` can evaluate all of it as ground
truth for the search-quality benchmark.

Usage: small_space.py TASK.json OUT.json PARAM [PARAM ...]
Template and reference paths are made absolute, so OUT.json can live
anywhere.
"""
import json
import os
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
    task["template"] = os.path.join(base, task["template"])
    task["reference"]["source"] = os.path.join(base, task["reference"]["source"])
    task["name"] = task["name"]
    task["description"] = task.get("description", "") + " (reduced space: %s)" % ", ".join(sorted(keep))
    with open(out, "w") as f:
        json.dump(task, f, indent=2)


if __name__ == "__main__":
    main()

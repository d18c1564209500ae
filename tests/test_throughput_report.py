#!/usr/bin/env python3
"""Unit test of bench/throughput_report.py: loads the H200 run of
tests/data/h200_wgmma_run.sql into a store with evoeng's own schema (made by
report_store.schema_store), runs the report with --json and checks each figure
against the same quantity computed here with plain SQL, and the text output
and an --aa file against the values they carry. Needs EVO_SOURCE_ROOT and
EVOENG (set by meson). Exit 0 when every check passes."""
import datetime
import json
import os
import sqlite3
import subprocess
import sys
import tempfile

import report_store
from report_store import check

root = os.environ.get("EVO_SOURCE_ROOT", ".")
evoeng = os.environ.get("EVOENG", os.path.join(root, "build/src/evoeng"))
script = os.path.join(root, "bench/throughput_report.py")
sql = os.path.join(root, "tests/data/h200_wgmma_run.sql")


def near(a, b, what, tol=1e-9):
    check(a is not None and abs(a - b) <= tol * max(1.0, abs(b)), "%s: %r == %r" % (what, a, b))


def report(*args):
    p = subprocess.run([sys.executable, script] + list(args), capture_output=True, text=True)
    if p.returncode != 0:
        print(p.stderr)
    return p.returncode, p.stdout


check(os.path.isfile(sql), "tests/data/h200_wgmma_run.sql exists")
with tempfile.TemporaryDirectory() as tmp:
    db = os.path.join(tmp, "h200.db")
    c = report_store.schema_store(root, db)
    cols = {t: {r[1] for r in c.execute("PRAGMA table_info(%s)" % t)} for t in ("candidates", "compiles", "runs")}
    check({"compile_ms", "gate_ms", "time_ms", "compile_id", "run_id"} <= cols["candidates"],
          "candidates has compile_ms, gate_ms, time_ms, compile_id, run_id")
    check("compile_ms" in cols["compiles"], "compiles has compile_ms")
    check({"started_at", "finished_at"} <= cols["runs"], "runs has started_at, finished_at")
    c.executescript(open(sql).read())
    c.commit()

    # Independent figures, one query per quantity.
    n = c.execute("SELECT count(*) FROM candidates").fetchone()[0]
    gate = sum(r[0] or 0 for r in c.execute("SELECT gate_ms FROM candidates")) / 1000
    tim = sum(r[0] or 0 for r in c.execute("SELECT time_ms FROM candidates")) / 1000
    wait = sum(r[0] or 0 for r in c.execute("SELECT compile_ms FROM candidates")) / 1000
    comp = sum(r[0] or 0 for r in c.execute(
        "SELECT k.compile_ms FROM compiles k WHERE k.id IN (SELECT DISTINCT compile_id FROM candidates)")) / 1000
    s, e = c.execute("SELECT started_at, finished_at FROM runs").fetchone()
    fmt = "%Y-%m-%dT%H:%M:%SZ"
    wall = (datetime.datetime.strptime(e, fmt) - datetime.datetime.strptime(s, fmt)).total_seconds()
    c.close()
    check(n > 0 and gate > 0 and tim > 0 and comp > 0 and wall > 0, "the stored run has candidates and timings")

    rc, out = report("--db", db, "--json")
    check(rc == 0, "report --json exits 0")
    f = json.loads(out)["run"]
    check(f["candidates"] == n, "candidates %d" % n)
    near(f["wall_s"], wall, "wall from started_at/finished_at")
    near(f["per_minute"], n / (wall / 60), "candidates per minute")
    near(f["gate_s"], gate, "gate seconds")
    near(f["time_s"], tim, "timing + A/B seconds")
    near(f["compile_cpu_s"], comp, "compile CPU seconds (compiles table)")
    near(f["compile_wait_s"], wait, "compile waits (candidates)")
    near(f["wait_s"], 0.0, "no stage lines in the logs: no waits")
    check(f["gpus"] == 1, "one GPU")
    near(f["other_s"], wall - gate - tim, "the rest = wall - gate - timing")
    check(f["gpu_busy_pct"] is None, "no GPU samples: no GPU figure")

    # A staged run's logs split the GPU thread's time, and two GPUs halve it.
    c = sqlite3.connect(db)
    ids = [r[0] for r in c.execute("SELECT id FROM candidates ORDER BY id LIMIT 2")]
    g0 = c.execute("SELECT gate_ms FROM candidates WHERE id = ?", (ids[0],)).fetchone()[0] or 0
    c.execute("UPDATE candidates SET log = 'x\nstage 1: waited 100.5 ms for compilation and loading, gate 5.5 ms\n"
              "stage 2: waited 50 ms for compilation and loading, gate 20 ms\n', metrics_json = ? WHERE id = ?",
              (json.dumps({"gpu": {"index": 0}}), ids[0]))
    c.execute("UPDATE candidates SET metrics_json = ? WHERE id = ?", (json.dumps({"gpu": {"index": 1}}), ids[1]))
    c.commit()
    c.close()
    rc, out = report("--db", db, "--json")
    f2 = json.loads(out)["run"]
    near(f2["wait_s"], 0.1505, "waits from the stage lines")
    near(f2["gate_s"], gate - g0 / 1000 + 0.0255, "gate from the stage lines where a log has them")
    check(f2["gpus"] == 2, "two GPUs named in metrics_json")
    near(f2["other_s"], wall - (f2["wait_s"] + f2["gate_s"] + tim) / 2, "the rest per GPU")
    rc, out = report("--db", db)
    check(rc == 0 and "mean of 2 GPUs" in out and "compile waits" in out, "text names the split per GPU")

    samples = os.path.join(tmp, "gpu.txt")
    with open(samples, "w") as fh:
        fh.write("0\n100\n50\nN/A\n30\n")
    aa = {"task": "triad", "a_params": "X", "b_params": "X", "aa": True, "repeat": 3, "done": 3, "shared": True,
          "cold": False, "ratios": [1.001, 0.998, 1.004], "median": 1.001, "min": 0.998, "max": 1.004,
          "p95_abs_dev": 0.0037, "max_abs_dev": 0.004, "failed": 0, "reverts": 0, "false_reverts": 0,
          "aa_pass": True}
    aafile = os.path.join(tmp, "aa.json")
    with open(aafile, "w") as fh:
        json.dump(aa, fh)
    rc, out = report("--db", db, "--wall", "120", "--cpu", "30", "--gpu-samples", samples, "--aa", aafile, "--json")
    j = json.loads(out)
    near(j["run"]["wall_s"], 120, "--wall overrides the store")
    near(j["run"]["per_minute"], n / 2.0, "per minute over --wall")
    near(j["run"]["gpu_busy_pct"], 45.0, "GPU busy = mean of the numeric samples")
    check(j["run"]["gpu_samples"] == 4, "4 numeric samples")
    check(j["run"]["evoeng_cpu_s"] == 30, "--cpu is carried")
    near(j["aa"][0]["p95_abs_dev"], 0.0037, "the A/A p95 is carried")
    check(j["aa"][0]["aa_pass"] is True and j["aa"][0]["false_reverts"] == 0, "the A/A verdict is carried")

    rc, out = report("--db", db, "--wall", "120", "--gpu-samples", samples, "--aa", aafile)
    check(rc == 0 and "%d in 120.0 s wall" % n in out, "text: candidates and wall")
    check("A/A triad: 3 comparisons, median 1.0010, p95 |r-1| 0.37%" in out and "pass" in out, "text: A/A line")
    rc, _ = report("--db", os.path.join(tmp, "missing.db"))
    check(rc == 1, "a missing store exits 1")
print("%d failed" % report_store.fails)
sys.exit(1 if report_store.fails else 0)

#!/usr/bin/env python3
"""Issue 14 end to end, without a GPU, on the H200 run of
tests/data/h200_wgmma_run.sql:
- --json of status, top, lineage, show, runs and check: stdout is exactly
  one JSON document (anything else there fails the parse), its fields
  match what plain SQL on the same store says, and diagnostics go to
  stderr;
- runs (text and JSON), --best / --run on lineage and show;
- a missing store is exit 4 for every read-only command and nothing is
  created; an older store (schema 4) is read unchanged (migrated in memory);
- the time_limit run status; text cut to $COLUMNS, whole with --wide;
- issue 34: under --json every command's error is {"error", "exit"} on
  stdout with the same exit code, and export --json / init --json say
  what they wrote.
Needs EVO_SOURCE_ROOT and EVOENG (set by meson). Exit 0 when all pass."""
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
sql = os.path.join(root, "tests/data/h200_wgmma_run.sql")


def run(*args, env=None, columns=None):
    e = dict(os.environ)
    e.pop("COLUMNS", None)
    e["EVOENG_LIBCUDA"] = "/nonexistent/libcuda.so.1"
    if columns is not None:
        e["COLUMNS"] = str(columns)
    e.update(env or {})
    p = subprocess.run([evoeng] + list(args), capture_output=True, text=True, env=e)
    return p.returncode, p.stdout, p.stderr


def run_json(*args, want_rc=0, **kw):
    """Run with --json; the whole of stdout must be one JSON document."""
    rc, out, err = run(*args, "--json", **kw)
    check(rc == want_rc, "%s --json exits %d (got %d)" % (" ".join(args[:2]), want_rc, rc))
    try:
        doc = json.loads(out)
    except ValueError as e:
        check(False, "%s --json: stdout is one JSON document (%s): %r" % (" ".join(args[:2]), e, out[:200]))
        return None, err
    return doc, err


def tree(d):
    return sorted((os.path.relpath(os.path.join(p, n), d)) for p, ds, fs in os.walk(d) for n in ds + fs)


def load(db):
    c = sqlite3.connect(db)
    c.executescript(open(sql).read())
    c.commit()
    c.close()


with tempfile.TemporaryDirectory() as tmp:
    db = os.path.join(tmp, "h200.db")
    open(db, "w").close()
    rc, out, err = run("status", "--db", db)
    check(rc == 4 and "an empty file" in err and os.path.getsize(db) == 0 and not os.path.exists(db + "-wal"),
          "an empty file is refused and left empty (%d: %s)" % (rc, err.strip()))
    os.unlink(db)
    report_store.schema_store(root, db).close()
    for cmd, empty in (("status", {"run": None}), ("top", {"run": None, "task": None, "candidates": []}),
                       ("runs", {"runs": []})):
        doc, _ = run_json(cmd, "--db", db)
        check(doc == empty, "%s --json on an empty store: %r" % (cmd, doc))
    load(db)

    # What SQL says, to compare with.
    c = sqlite3.connect(db)
    c.row_factory = sqlite3.Row
    run_row = c.execute("SELECT * FROM runs WHERE id = 1").fetchone()
    n_cand = c.execute("SELECT count(*) FROM candidates WHERE run_id = 1").fetchone()[0]
    n_ok = c.execute("SELECT count(*) FROM candidates WHERE run_id = 1 AND status = 'ok'").fetchone()[0]
    surv = [r[0] for r in c.execute("SELECT id FROM survivors WHERE run_id = 1 ORDER BY latency_us, id")]
    best = c.execute("SELECT * FROM candidates WHERE id = ?", (surv[0],)).fetchone()
    params = {r[0]: json.loads(r[1]) for r in c.execute("SELECT id, params_json FROM candidates")}
    parent = {r[0]: r[1] for r in c.execute("SELECT id, parent_id FROM candidates")}
    c.close()
    chain = [best["id"]]
    while parent[chain[0]]:
        chain.insert(0, parent[chain[0]])
    spec = json.loads(run_row["task_json"])
    shape = dict(spec["dims"])
    shape.update(json.loads(run_row["config_json"]).get("dims", {}))
    check(len(surv) >= 2 and len(chain) >= 3, "the stored run has survivors and a lineage (%r)" % chain)

    # status
    doc, err = run_json("status", "--db", db)
    if doc:
        r = doc["run"]
        check(r["id"] == 1 and r["task"] == run_row["task_name"] and r["status"] == run_row["status"],
              "status: run id, task, status")
        check(r["device"] == {"name": run_row["device_name"], "arch": run_row["device_arch"]}, "status: device")
        check(r["shape"] == shape, "status: the benchmark shape %r" % shape)
        check(r["started_at"] == run_row["started_at"] and r["finished_at"] == run_row["finished_at"],
              "status: dates")
        check(r["generations_done"] == run_row["generations_done"], "status: generations done")
        check(r["config"] == json.loads(run_row["config_json"]), "status: config as an object")
        k = doc["counts"]
        check(k["total"] == n_cand and k["valid"] == n_ok and k["failed"] == n_cand - n_ok,
              "status: counts %d/%d" % (n_cand, n_ok))
        check(doc["best"]["id"] == best["id"] and doc["best"]["gate_stage"] == "full", "status: best")
        check(abs(doc["best"]["latency_us"] - best["latency_us"]) < 1e-9, "status: best latency")
        check(doc["warm_start"] == {"seeded": 0, "from_runs": []} and doc["llm"] == [], "status: warm start, llm")
        check(err == "", "status --json: nothing on stderr")

    # top
    doc, _ = run_json("top", "--db", db)
    if doc:
        check([x["id"] for x in doc["candidates"]] == surv, "top: the survivors, fastest first")
        check(all(x["gate_stage"] == "full" for x in doc["candidates"]), "top: gated on every shape")
        check(doc["run"] == 1 and doc["task"] == "attention", "top: run and task")
    doc, _ = run_json("top", "-n", "1", "--db", db)
    check(doc and len(doc["candidates"]) == 1, "top -n 1 --json: one")

    # lineage
    doc, _ = run_json("lineage", str(best["id"]), "--db", db)
    if doc:
        check([x["id"] for x in doc["chain"]] == chain, "lineage: the chain from the baseline %r" % chain)
        check(doc["candidate"] == best["id"] and doc["run"] == 1, "lineage: candidate and run")
        check(doc["chain"][0]["change"] is None, "lineage: the baseline has no change")
        ok = True
        for a, b, step in zip(chain, chain[1:], doc["chain"][1:]):
            want = {k: {"from": params[a].get(k), "to": v} for k, v in params[b].items() if params[a].get(k) != v}
            ok &= step["change"] == want
        check(ok, "lineage: each change is the params that differ from the parent")
    best_doc, _ = run_json("lineage", "--best", "--db", db)
    check(best_doc == doc, "lineage --best is the lineage of the best")

    # show
    doc, _ = run_json("show", str(best["id"]), "--db", db)
    if doc:
        check(doc["id"] == best["id"] and doc["params"] == params[best["id"]], "show: id and params")
        check(doc["parent"] == parent[best["id"]] and doc["gate_stage"] == "full", "show: parent, gate stage")
        check(abs(doc["speedup"] - best["speedup"]) < 1e-9, "show: speedup")
    best_doc, _ = run_json("show", "--best", "--run", "1", "--db", db)
    check(best_doc == doc, "show --best --run 1 is the best of run 1")
    rc, out, err = run("show", "--best", "--run", "2", "--db", db)
    check(rc == 1 and out == "" and "no run 2" in err, "show --best --run 2: no such run (exit 1, stderr)")
    rc, out, err = run("show", "--best", "--db", db, "--wide")
    check(rc == 0 and out.startswith("candidate %d " % best["id"]), "show --best (text)")

    # the GPU that measured a candidate (metrics_json "gpu"): show and top
    c = sqlite3.connect(db)
    for cid, idx in ((surv[0], 1), (surv[1], 0)):
        m = json.loads(c.execute("SELECT metrics_json FROM candidates WHERE id = ?", (cid,)).fetchone()[0] or "{}")
        m["gpu"] = {"index": idx, "name": "NVIDIA H200", "uuid": "GPU-test-%d" % idx, "pci_bus_id": "0000:00:0%d.0" % idx,
                    "scale": 1.0 if idx == 0 else 0.9981}
        c.execute("UPDATE candidates SET metrics_json = ? WHERE id = ?", (json.dumps(m), cid))
    c.commit()
    c.close()
    doc, _ = run_json("show", str(surv[0]), "--db", db)
    check(doc and doc["gpu"] == {"index": 1, "name": "NVIDIA H200", "uuid": "GPU-test-1", "scale": 0.9981},
          "show --json: the GPU that measured it")
    rc, out, err = run("show", str(surv[0]), "--db", db, "--wide")
    check(rc == 0 and "measured on  GPU 1 (NVIDIA H200, GPU-test-1), latencies scaled x0.9981 to GPU 0's" in out,
          "show: the GPU line")
    doc, _ = run_json("top", "--db", db)
    check(doc and doc["candidates"][0]["gpu"]["index"] == 1 and doc["candidates"][1]["gpu"]["index"] == 0
          and "gpu" not in doc["candidates"][2], "top --json: each candidate's GPU where recorded")
    rc, out, err = run("top", "--db", db, "--wide")
    rows = out.splitlines()
    # header: id gen operator latency speedup CTAs occ regs gpu; a row's latency is two words ("8.97 us")
    check(rc == 0 and rows[1].split()[8] == "gpu" and rows[2].split()[9] == "1" and rows[3].split()[9] == "0"
          and rows[4].split()[9] == "-", "top: a gpu column on a run measured on several GPUs")

    # runs
    doc, _ = run_json("runs", "--db", db)
    if doc:
        check(len(doc["runs"]) == 1, "runs: one run")
        r = doc["runs"][0]
        check(r["id"] == 1 and r["status"] == run_row["status"] and r["task"] == "attention", "runs: id, status, task")
        check(r["device"]["name"] == "NVIDIA H200" and r["shape"] == shape, "runs: device and shape")
        check(r["candidates"] == n_cand and r["generations_done"] == run_row["generations_done"],
              "runs: candidates and generations")
        check(r["best"]["id"] == best["id"] and abs(r["best"]["latency_us"] - best["latency_us"]) < 1e-9,
              "runs: best latency")
        check(r["started_at"] == run_row["started_at"], "runs: started")
    rc, out, err = run("runs", "--db", db)
    lines = out.splitlines()
    check(rc == 0 and len(lines) == 2 and "started" in lines[0] and "status" in lines[0], "runs: header and a row")
    check(len(lines) == 2 and "NVIDIA H200" in lines[1] and "B=4 H=8 S=512 D=64 CAUSAL=0" in lines[1]
          and "%.2f us" % best["latency_us"] in lines[1], "runs: the row has device, shape and best")

    # time_limit is a status the schema takes (db/005), and runs shows it
    c = sqlite3.connect(db)
    c.execute("UPDATE runs SET status = 'time_limit' WHERE id = 1")
    c.commit()
    try:
        c.execute("UPDATE runs SET status = 'bogus' WHERE id = 1")
        check(False, "the schema refuses an unknown run status")
    except sqlite3.IntegrityError:
        check(True, "the schema refuses an unknown run status")
    c.close()
    doc, _ = run_json("runs", "--db", db)
    check(doc and doc["runs"][0]["status"] == "time_limit", "runs: status time_limit")

    # Terminal width: cut to $COLUMNS, whole with --wide or without a width.
    for args in (["status"], ["top"], ["lineage", "--best"], ["show", "--best"], ["runs"]):
        rc, out, _ = run(*args, "--db", db, columns=60)
        lines = [l for l in out.splitlines() if l and not l.startswith("---")]
        head = [l for l in lines if not args[0] == "show" or l.startswith(("candidate", "  "))]
        check(rc == 0 and all(len(l) <= 60 for l in head) and any(l.endswith("...") for l in head),
              "%s with COLUMNS=60: lines cut to 60, marked ..." % " ".join(args))
        rc, wide, _ = run(*args, "--db", db, "--wide", columns=60)
        check(rc == 0 and max(len(l) for l in wide.splitlines()) > 60 and "..." not in wide,
              "%s --wide: whole lines" % " ".join(args))
        rc, pipe, _ = run(*args, "--db", db)
        check(pipe == wide, "%s into a pipe without COLUMNS: not cut" % " ".join(args))

    # A missing store: exit 4, a message, nothing created, for every read-only command.
    gone = os.path.join(tmp, "typo", "dir", "x.db")
    before = tree(tmp)
    for args in (["status"], ["top"], ["lineage", "1"], ["lineage", "--best"], ["show", "1"], ["show", "--best"],
                 ["runs"], ["status", "--json"], ["runs", "--json"], ["export", "--best"], ["export", "1"],
                 ["report"]):
        rc, out, err = run(*args, "--db", gone)
        if "--json" in args:   # the error as JSON on stdout too (issue 34)
            check(rc == 4 and json.loads(out) == {"error": err.strip()[len("evoeng: "):], "exit": 4},
                  "%s with a mistyped --db: exit 4, {error, exit} on stdout" % " ".join(args))
        else:
            check(rc == 4 and out == "" and "no population store" in err and gone in err,
                  "%s with a mistyped --db: exit 4 (got %d), says so on stderr" % (" ".join(args), rc))
    check(tree(tmp) == before, "nothing was created")

    # A store written at schema 4 (before time_limit) is read by a
    # read-only command through a copy migrated in memory: every row
    # there, and the file itself byte for byte unchanged (issue 35).
    old = os.path.join(tmp, "v4.db")
    c = sqlite3.connect(old)
    for f in ("001_init.sql", "002_llm.sql", "003_kernels.sql", "004_gate_stage.sql"):
        c.executescript(open(os.path.join(root, "db", f)).read())
    c.executescript("PRAGMA application_id = %d; PRAGMA user_version = 4;" % 0x45564f45)
    c.commit()
    c.close()
    load(old)
    before_bytes = open(old, "rb").read()
    doc, _ = run_json("runs", "--db", old)
    check(open(old, "rb").read() == before_bytes and not os.path.exists(old + "-wal"),
          "reading the schema-4 store left it byte for byte unchanged")
    c = sqlite3.connect(old)
    check(c.execute("PRAGMA user_version").fetchone()[0] == 4, "the schema-4 store was not upgraded in place")
    c.close()
    check(doc and doc["runs"][0]["candidates"] == n_cand, "runs on the schema-4 store, migrated in memory")

    # check --json: the static check (no GPU needed) as one document.
    env = {"EVOENG_CACHE_DIR": os.path.join(tmp, "cache")}
    task = os.path.join(root, "tests/data/good_task.json")
    spec = json.load(open(task))
    doc, err = run_json("check", task, "--arch", "sm_80", "--sample", "2", env=env)
    if doc:
        check(doc["task"] == spec["name"] and doc["target"].startswith("profile sm_80"), "check: task and target")
        check([p["name"] for p in doc["params"]] == list(spec["params"]), "check: params in spec order")
        check([p["values"] for p in doc["params"]] == [v["values"] for v in spec["params"].values()],
              "check: param values")
        total = 1
        for v in spec["params"].values():
            total *= len(v["values"])
        check(doc["space"]["total"] == total and doc["space"]["valid"] == 16 and doc["space"]["exact"] is True,
              "check: space %d, 16 valid, exact" % total)
        check(len(doc["shapes"]) == 1 + len(spec.get("shapes", [])) and doc["shapes"][0]["benchmark"],
              "check: shapes")
        rows = doc["configurations"]
        check(len(rows) == 3 and rows[0]["role"] == "default" and all(r["role"] == "sample" for r in rows[1:]),
              "check: the default and 2 samples")
        check(all(r["status"] == "ok" and r["gate"] is None and r["registers"] > 0 for r in rows),
              "check: compiled, not gated")
        check(doc["compile"]["sources"] >= 3 and doc["gpu"] is None and doc["ok"] is True, "check: figures, ok")
    doc, err = run_json("check", os.path.join(root, "tests/data/space_large.json"), "--arch", "sm_90", "--sample",
                        "0", env=env)
    check(doc and doc["space"]["exact"] is False and doc["space"]["total"] == 4 ** 12,
          "check: a space too large to enumerate is sampled, exact false")
    doc, err = run_json("check", task, "--arch", "sm_80", "--sample", "0", "--params", "BLOCK=512,UNROLL=4",
                        want_rc=1, env=env)
    check(doc and doc["ok"] is False and doc["configurations"][0]["role"] == "params" and
          doc["configurations"][0]["status"] == "invalid", "check --params invalid: ok false, status invalid")
    check("breaks a constraint" in err and "fails" in err, "check --json: the warning and error on stderr")
    doc, err = run_json("check", task, "--arch", "sm_80", "--sample", "0", "--gpu", want_rc=5, env=env)
    check(doc and doc["gpu"] is None and doc["ok"] is False, "check --gpu --json without a GPU: gpu null, ok false")
    check("libcuda" in err or "GPU" in err, "check --gpu --json: the missing GPU is said on stderr")
    doc, err = run_json("check", os.path.join(root, "tests/data/bad_unknown_var.json"), want_rc=3, env=env)
    check(doc and set(doc) == {"error", "exit"} and doc["exit"] == 3 and "unknown variable" in doc["error"] and
          "unknown variable" in err, "check --json of a bad spec: exit 3, the error on stdout and stderr")

    # Issue 34: under --json every command's error is one JSON object on
    # stdout, {"error", "exit"} with the exit code; "messages" when several.
    fresh = os.path.join(tmp, "fresh")
    os.mkdir(fresh)
    cases = [
        (["status", "--frobnicate"], 2, "unknown option"),
        (["frobnicate"], 2, "unknown command"),
        (["show", "999", "--db", db], 1, "no candidate 999"),
        (["lineage", "999", "--db", db], 1, "999"),
        (["export", "999", "--db", db], 1, "no candidate 999"),
        (["report", "7", "--db", db, "-o", os.path.join(fresh, "r.html")], 1, "run 7"),
        (["run", "--generations", "1", "--db", os.path.join(fresh, "p", "p.db")], 5, "needs a CUDA GPU"),
        (["resume", "--db", os.path.join(fresh, "p", "p.db")], 4, "no population store"),
        (["bench", os.path.join(root, "templates/triad/task.json"), "--db", os.path.join(fresh, "b.db")], 5,
         "needs a CUDA GPU"),
        (["init", os.path.join(fresh, "none.cu")], 1, "none.cu"),
        (["run", "--task", os.path.join(fresh, "none.json"), "--db", os.path.join(fresh, "p.db")], 3, "none.json"),
    ]
    for args, code, what in cases:
        doc, err = run_json(*args, want_rc=code, env=env)
        check(doc and doc.get("exit") == code and what in doc.get("error", "") + " ".join(doc.get("messages", [])),
              "%s --json: {error, exit %d} naming %r (%r)" % (" ".join(args[:2]), code, what, doc))
    check(tree(fresh) == [], "the failed commands created nothing (no store, no folder, no cache)")
    doc, _ = run_json("run", "--generations", "1", "--db", os.path.join(fresh, "p.db"), want_rc=5, env=env)
    check(doc and len(doc.get("messages", [])) == 2 and doc["messages"][0] == doc["error"],
          "several messages: the first is the error, all are in messages")

    # export --json and init --json say what they wrote.
    out_cu = os.path.join(tmp, "best.cu")
    doc, _ = run_json("export", "--best", "--db", db, "-o", out_cu)
    check(doc and doc["path"] == out_cu and doc["id"] == surv[0] and doc["format"] == "cu" and
          doc["bytes"] == os.path.getsize(out_cu) and doc["target"] == "sm_90a", "export --json -o: what it wrote")
    doc, _ = run_json("export", "--best", "--db", db, "--format", "json")
    check(doc and doc["path"] is None and json.loads(doc["content"])["id"] == surv[0],
          "export --json to stdout: the export as content")
    kfile = os.path.join(root, "tests/data/kfile/fa_seed.cu")
    spec_path = os.path.join(tmp, "fa.json")
    doc, _ = run_json("init", kfile, "-o", spec_path)
    check(doc and doc["path"] == spec_path and doc["bytes"] == os.path.getsize(spec_path) and doc["kernels"] == 1
          and doc["entries"] == ["fa_fwd<512, 64>"] and doc["todos"] == 1 and doc["params"] == 9 and
          "spec" not in doc, "init --json -o: what it wrote (%r)" % doc)
    doc, _ = run_json("init", kfile)
    check(doc and doc["path"] is None and doc["spec"]["entries"] == ["fa_fwd<512, 64>"],
          "init --json to stdout: the spec under spec")

print("%s" % ("all passed" if report_store.fails == 0 else "%d failed" % report_store.fails))
sys.exit(1 if report_store.fails else 0)

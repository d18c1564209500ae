"""Stores for the tests (test_report.py, test_report_browser.py, test_json_cli.py,
test_throughput_report.py):
evoeng's schema applied from db/NNN_*.sql exactly as src/store/store.c
migrates a new file (same application_id and user_version), so no evoeng
command is needed to create one, then the recorded H200 run of
tests/data/h200_wgmma_run.sql, and synthetic runs for what that run lacks
(failures, LLM requests). Also the tests' check() and its failure count."""
import glob
import os
import sqlite3

APPLICATION_ID = 0x45564F45  # EVO_APPLICATION_ID, src/store/store.c
fails = 0


def check(cond, what):
    """Print "ok" or "FAIL" and the check; count the failures in fails.
    Returns cond."""
    global fails
    print("%s %s" % ("ok  " if cond else "FAIL", what))
    if not cond:
        fails += 1
    return cond


def schema_store(root, path):
    """A new store at path with the latest schema and no run."""
    files = sorted(glob.glob(os.path.join(root, "db", "[0-9][0-9][0-9]_*.sql")))
    assert files, "no migrations under db/"
    c = sqlite3.connect(path)
    for f in files:
        c.executescript(open(f).read())
    c.execute("PRAGMA application_id = %d" % APPLICATION_ID)
    c.execute("PRAGMA user_version = %d" % len(files))
    c.commit()
    return c


def h200_store(root, path):
    """The recorded H200 WGMMA run as run 1."""
    c = schema_store(root, path)
    c.executescript(open(os.path.join(root, "tests", "data", "h200_wgmma_run.sql")).read())
    c.commit()
    return c


def add_run(c, rid, config='{"revert_threshold":0.02}'):
    c.execute("INSERT INTO runs (id, task_name, task_path, task_json, config_json, device_name, evoeng_version,"
              " seed, strategy, status, started_at) VALUES (?, 'attention', 't.json', '{}', ?, 'Test GPU',"
              " '0.1.0', 1, 'evolve', 'completed', '2026-11-22T05:00:00Z')", (rid, config))


def add_cand(c, cid, rid, gen, status, decision, lat=None, stage=0, parent=None, params='{"BM":64}',
             error=None, llm=None):
    c.execute("INSERT INTO candidates (id, run_id, generation, parent_id, operator, params_json, params_key,"
              " status, decision, error, latency_us, speedup, gate_stage, llm_request_id, created_at, decided_at)"
              " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
              (cid, rid, gen, parent, "llm" if llm else ("baseline" if parent is None else "mutate"), params,
               "k%d" % cid, status, decision, error, lat, 10.0 / lat if lat else None, stage, llm,
               "2026-11-22T05:00:%02dZ" % (cid % 60), "2026-11-22T05:00:%02dZ" % (cid % 60)))


def add_failed_run(c, rid=2, first_id=1000):
    """A run where nothing passed: 2 compile_error, 1 incorrect, 1 timeout."""
    add_run(c, rid)
    add_cand(c, first_id, rid, 0, "compile_error", "baseline", error="ptxas: too many resources <&>")
    add_cand(c, first_id + 1, rid, 1, "compile_error", "failed", error="nvrtc: error")
    add_cand(c, first_id + 2, rid, 1, "incorrect", "failed", stage=1, error="max abs error 3.1")
    add_cand(c, first_id + 3, rid, 1, "timeout", "failed", stage=1, error="worker timed out")
    c.commit()
    return {"compile_error": 2, "incorrect": 1, "timeout": 1}


def add_llm_run(c, rid=3, first_id=2000):
    """A run with LLM requests in two modes: free 2 requests (1 valid,
    accepted), full 3 requests (1 valid, reverted; 1 failed; 1 no child)."""
    add_run(c, rid, '{"revert_threshold":0.02,"llm":{"provider":"openai","mode":"full","rate":0.25}}')
    req = "INSERT INTO llm_requests (id, run_id, generation, mode, provider, prompt, status, created_at)" \
          " VALUES (?, ?, 1, ?, 'openai', 'p', ?, '2026-11-22T05:00:00Z')"
    for i, (mode, st) in enumerate([("free", "ok"), ("free", "no_code"), ("full", "ok"), ("full", "ok"),
                                    ("full", "http_error")]):
        c.execute(req, (first_id + i, rid, mode, st))
    b = first_id + 10
    add_cand(c, b, rid, 0, "ok", "baseline", lat=10.0, stage=2)
    add_cand(c, b + 1, rid, 1, "ok", "accepted", lat=8.0, stage=2, parent=b, params='{"BM":128}', llm=first_id)
    add_cand(c, b + 2, rid, 1, "ok", "reverted", lat=12.0, stage=1, parent=b, params='{"BM":32}', llm=first_id + 2)
    add_cand(c, b + 3, rid, 1, "incorrect", "failed", stage=1, parent=b, params='{"BM":16}', llm=first_id + 3)
    for i, cid in [(0, b + 1), (2, b + 2), (3, b + 3)]:
        c.execute("UPDATE llm_requests SET candidate_id = ? WHERE id = ?", (cid, first_id + i))
    c.commit()

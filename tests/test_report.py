#!/usr/bin/env python3
"""`evoeng report` end to end (issue 14, item 2), without a GPU or a browser:
the recorded H200 store (tests/data/h200_wgmma_run.sql) renders to one page
that is well-formed XML and HTML, holds every section, has one mark per
candidate on each convergence plot, one node per step of the best's lineage,
one point per valid candidate on each knob plot, and no network reference
or script. Then a run where nothing passed, a run with LLM requests (rates
against the llm_mode_stats view), the output choices (default file, -o -,
--json) and the errors: a run that does not exist, a store that does not
exist (nothing created), an empty store, an unwritable output.
Needs EVO_SOURCE_ROOT and EVOENG (set by meson). Exit 0 when all pass."""
import html.parser
import json
import os
import re
import sqlite3
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET

root = os.environ.get("EVO_SOURCE_ROOT", ".")
evoeng = os.environ.get("EVOENG", os.path.join(root, "build/src/evoeng"))
sys.path.insert(0, os.path.join(root, "tests"))
import report_store  # noqa: E402
from report_store import check  # noqa: E402



def run(*args, cwd=None):
    p = subprocess.run([evoeng] + list(args), capture_output=True, text=True, cwd=cwd)
    return p.returncode, p.stdout, p.stderr


class Collect(html.parser.HTMLParser):
    """Tags, ids and attributes, with the svg each element sits in."""

    def __init__(self):
        super().__init__()
        self.ids, self.tags, self.refs, self.svg, self.marks, self.stack = set(), {}, [], None, {}, []
        self.table, self.rows = None, {}

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        self.tags[tag] = self.tags.get(tag, 0) + 1
        if "id" in a:
            self.ids.add(a["id"])
        for k in ("href", "src", "xlink:href", "action", "data"):
            if k in a:
                self.refs.append(a[k])
        if tag == "svg":
            self.svg = a.get("id")
        if tag == "table":
            self.table = a.get("id")
        if tag == "tr" and self.table:
            self.rows[self.table] = self.rows.get(self.table, 0) + 1
        if "data-series" in a:
            s = a["data-series"]
            self.marks[s] = self.marks.get(s, 0) + 1

    def handle_startendtag(self, tag, attrs):
        self.handle_starttag(tag, attrs)

    def handle_endtag(self, tag):
        if tag == "svg":
            self.svg = None
        if tag == "table":
            self.table = None


def parse(path):
    text = open(path, encoding="utf-8").read()
    try:
        ET.fromstring(re.sub(r"^<!DOCTYPE html>", "", text))
        wellformed = True
    except ET.ParseError as e:
        print("   XML parse error:", e)
        wellformed = False
    p = Collect()
    p.feed(text)
    p.close()
    return text, wellformed, p


with tempfile.TemporaryDirectory() as tmp:
    db = os.path.join(tmp, "h200.db")
    c = report_store.h200_store(root, db)
    ncand = c.execute("SELECT count(*) FROM candidates WHERE run_id = 1").fetchone()[0]
    nsurv = c.execute("SELECT count(*) FROM survivors WHERE run_id = 1").fetchone()[0]
    best = c.execute("SELECT candidate_id FROM best_per_run WHERE run_id = 1").fetchone()[0]
    chain = c.execute("SELECT count(*) FROM lineage WHERE candidate_id = ?", (best,)).fetchone()[0]
    valid = [json.loads(r[0]) for r in c.execute(
        "SELECT params_json FROM candidates WHERE run_id = 1 AND status = 'ok' AND gate_stage = 2"
        " AND latency_us IS NOT NULL")]
    varying = sorted(k for k in valid[0] if len({json.dumps(v[k]) for v in valid}) > 1)
    c.close()
    check(ncand == 4 and best == 32 and chain == 4, "the H200 store: 4 candidates, best #32, a lineage of 4")

    # -- the H200 run ------------------------------------------------------
    out = os.path.join(tmp, "r.html")
    rc, so, se = run("report", "--db", db, "-o", out)
    check(rc == 0, "report of the H200 run exits 0 (%d: %s)" % (rc, se.strip()))
    check("report: %s" % out in so and "run 1" in so, "it says where the report is")
    text, wf, p = parse(out)
    check(wf, "the page is well-formed XML")
    check(text.startswith("<!DOCTYPE html>") and p.tags.get("html") == 1 and p.tags.get("body") == 1,
          "one HTML document")
    for sec in ("run", "convergence", "lineage", "top", "knobs", "failures", "llm", "device", "config", "noise"):
        check(sec in p.ids, "section/table '%s' is there" % sec)
    for svg in ["conv-gen", "conv-time", "lineage-tree"] + ["knob-" + k for k in varying]:
        check(svg in p.ids, "plot '%s' is there" % svg)
    check(p.marks.get("conv-gen") == ncand, "conv-gen: one mark per candidate (%s == %d)" % (p.marks.get("conv-gen"), ncand))
    check(p.marks.get("conv-time") == ncand, "conv-time: one mark per candidate (%s == %d)" % (p.marks.get("conv-time"), ncand))
    check(p.marks.get("lineage") == chain, "lineage: one node per step (%s == %d)" % (p.marks.get("lineage"), chain))
    check(varying == ["O_STAGE", "WGMMA"], "the knobs that vary among valid candidates: %s" % varying)
    for k in varying:
        check(p.marks.get("knob-" + k) == len(valid), "knob-%s: one point per valid candidate" % k)
    check(p.rows.get("top-table") == nsurv + 1, "top: a header and one row per survivor (%s)" % p.rows.get("top-table"))
    check(p.rows.get("lineage-table") == chain + 1, "lineage table: one row per step")
    check(all(r.startswith("#") for r in p.refs), "only in-page links (%s)" % [r for r in p.refs if not r.startswith("#")])
    check("http://" not in text and "https://" not in text, "no http(s):// anywhere in the page")
    check(p.tags.get("script") is None and p.tags.get("link") is None and p.tags.get("img") is None,
          "no script, stylesheet link or image")
    check("Best: candidate #32, 8.97 us, 1.19x over the baseline (10.72 us)" in text, "the summary names the best")
    check("WGMMA 0 -&gt; 1" in text and "O_STAGE 1 -&gt; 0" in text, "the lineage shows each step's changes")
    check("x0.917" in text, "and the ratio to the parent")
    check("NVIDIA H200" in text and "<td>132</td>" in text, "the device and its SMs")
    check("B=4 CAUSAL=0 D=64 H=8 S=512" in text, "the configuration's dims")
    check("revert threshold" in text and "2.0%" in text and "A/B ratio spread" in text, "the noise figures")
    check("No candidate failed." in text and "used no LLM" in text, "no failures, no LLM: said so")

    rc, so, se = run("report", "1", "--db", db, "-n", "2", "-o", out)
    _, _, p2 = parse(out)
    check(rc == 0 and p2.rows.get("top-table") == 3, "-n 2 keeps the top 2 (%s rows)" % p2.rows.get("top-table"))

    # -- output choices ----------------------------------------------------
    cwd = os.path.join(tmp, "cwd")
    os.mkdir(cwd)
    rc, so, se = run("report", "--db", db, cwd=cwd)
    check(rc == 0 and os.path.isfile(os.path.join(cwd, "report-1.html")), "default output: report-1.html here")
    rc, so, se = run("report", "--db", db, "-o", "-", cwd=cwd)
    check(rc == 0 and so.startswith("<!DOCTYPE html>") and so.rstrip().endswith("</html>"), "-o - writes the page to stdout")
    check(sorted(os.listdir(cwd)) == ["report-1.html"], "and no file")
    jpath = os.path.join(tmp, "j.html")
    rc, so, se = run("report", "--db", db, "-o", jpath, "--json")
    try:
        j = json.loads(so)
    except ValueError:
        j = {}
    check(rc == 0 and j.get("path") == jpath and j.get("run_id") == 1 and j.get("bytes") == os.path.getsize(jpath),
          "--json: path, run_id, bytes (%s)" % so.strip())
    check(j.get("candidates") == ncand and j.get("best_id") == 32 and j.get("valid") == 4 and j.get("fully_gated") == 4,
          "--json: candidates, valid, fully_gated, best_id")
    rc, so, se = run("report", "--db", db, "-o", "-", "--json")
    check(rc == 2 and "--json" in se, "--json with -o - is a usage error")
    rc, so, se = run("report", "--help")
    check(rc == 0 and "report-RUN_ID.html" in so and "--json" in so, "--help documents the default output")

    # -- errors ------------------------------------------------------------
    rc, so, se = run("report", "7", "--db", db, cwd=cwd)
    check(rc == 1 and "no run 7" in se and "ids 1 to 1" in se, "a run that does not exist: exit 1 (%s)" % se.strip())
    check(not os.path.exists(os.path.join(cwd, "report-7.html")), "and no file")
    missing = os.path.join(tmp, "nodir", "x.db")
    rc, so, se = run("report", "--db", missing)
    check(rc == 4 and "no population store there" in se, "a store that does not exist: exit 4 (%s)" % se.strip())
    check(not os.path.exists(os.path.join(tmp, "nodir")), "and nothing is created")
    empty = os.path.join(tmp, "empty.db")
    report_store.schema_store(root, empty).close()
    rc, so, se = run("report", "--db", empty)
    check(rc == 1 and "no run yet" in se, "an empty store: exit 1, says it holds no run (%s)" % se.strip())
    rc, so, se = run("report", "--db", db, "-o", os.path.join(tmp, "nodir2", "r.html"))
    check(rc == 7 and "nodir2" in se, "an output that cannot be written: exit 7 (%s)" % se.strip())
    rc, so, se = run("report", "abc", "--db", db)
    check(rc == 2, "a malformed run id is a usage error")

    # -- a run where nothing passed ----------------------------------------
    c = sqlite3.connect(db)
    counts = report_store.add_failed_run(c, 2)
    report_store.add_llm_run(c, 3)
    llm = {r[0]: r[1:] for r in c.execute(
        "SELECT mode, requests, valid, accepted, validity_rate, acceptance_rate FROM llm_mode_stats WHERE run_id = 3")}
    c.close()
    rc, so, se = run("report", "2", "--db", db, "-o", out)
    text, wf, p = parse(out)
    check(rc == 0 and wf, "a run with no valid candidate renders (exit 0, well-formed)")
    check("no candidate that passed" in se, "with a warning on stderr (%s)" % se.strip())
    check("this run has no best" in text and "no lineage to show" in text and "no knob effects" in text,
          "the page says there is no best, lineage or knob effect")
    for st, n in counts.items():
        check("<title>%s: %d</title>" % (st, n) in text, "failure bar %s: %d" % (st, n))
    check(p.marks.get("conv-gen") == 4 and text.count('class="pt failed" data-series="conv-gen"') == 4,
          "every failure is a mark on the convergence plot")
    check("ptxas: too many resources &lt;&amp;&gt;" in text, "stored errors are escaped")

    # -- a run with an LLM --------------------------------------------------
    rc, so, se = run("report", "3", "--db", db, "-o", out)
    text, wf, p = parse(out)
    check(rc == 0 and wf and "llm-rates" in p.ids, "a run with LLM requests has the rates plot")
    check(p.rows.get("llm-table") == len(llm) + 1, "one LLM table row per mode (%s)" % sorted(llm))
    for mode, (req, val, acc, vr, ar) in llm.items():
        check("<td>%s</td><td class=\"num\">%d</td>" % (mode, req) in text, "%s: %d requests" % (mode, req))
        check("%s: validity %.3f" % (mode, vr) in text and "%s: acceptance %.3f" % (mode, ar) in text,
              "%s: validity %.3f, acceptance %.3f as the view says" % (mode, vr, ar))
    check(text.count('data-series="conv-gen"') == 4, "its convergence plot has its 4 candidates")

print("%d failed" % report_store.fails)
sys.exit(1 if report_store.fails else 0)

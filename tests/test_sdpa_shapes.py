#!/usr/bin/env python3
"""Unit test (no GPU, no torch) of bench/compare_sdpa.py's grouped-query
and decoding shapes (issue 37): plan shapes with HKV and SQ (defaults H and
S, refusals), the element counts, flops and bytes against the attention
task's own "flops" and "bytes" expressions, the table's GB/s, the
argument parsing, and a --dry-run of a synthetic B8 H32 HKV8 SQ1 export.
Needs EVO_SOURCE_ROOT (set by meson). Exit 0 when every check passes."""
import json
import os
import subprocess
import sys
import tempfile

import report_store
from report_store import check

root = os.environ.get("EVO_SOURCE_ROOT", ".")
sys.path.insert(0, os.path.join(root, "bench"))
import sdpa_export as se  # noqa: E402
import sdpa_table as st  # noqa: E402

script = os.path.join(root, "bench/compare_sdpa.py")


def refused(label, what):
    try:
        se.parse_shape(label)
    except se.ExportError as e:
        check(what in str(e), "%s refused: %s" % (label, e))
        return
    check(False, "%s is refused" % label)


# shapes: old labels get HKV = H and SQ = S; new ones keep theirs
d = se.parse_shape("B=4 H=8 S=512 D=64 CAUSAL=1 DTYPE=0")
check(d["HKV"] == 8 and d["SQ"] == 512, "HKV and SQ default to H and S: %r" % d)
d = se.parse_shape("B=8 H=32 S=4096 D=128 CAUSAL=0 DTYPE=0 HKV=8 SQ=1")
check(d["HKV"] == 8 and d["SQ"] == 1 and d["H"] == 32, "HKV and SQ parsed: %r" % d)
refused("B=1 H=8 S=64 D=64 HKV=3", "HKV (K/V heads) must divide H")
refused("B=1 H=8 S=64 D=64 HKV=0", "HKV (K/V heads) must divide H")
refused("B=1 H=8 S=64 D=64 SQ=65", "SQ (queries) must be 1 to S")

# counts, bytes and flops, against the task's expressions (plain arithmetic)
with open(os.path.join(root, "templates/attention/task.json"), encoding="utf-8") as f:
    task = json.load(f)
c = se.qkv_counts(d)
check(c == {"Q": 8 * 32 * 128, "K": 8 * 8 * 4096 * 128, "V": 8 * 8 * 4096 * 128, "O": 8 * 32 * 128},
      "Q, O [B,H,SQ,D], K, V [B,HKV,S,D]: %r" % c)
check(se.attn_bytes(d) == 2 * (2 * 8 * 32 * 128 + 2 * 8 * 8 * 4096 * 128), "bytes: K/V once per K/V head")
for label in ("B=8 H=32 S=4096 D=128 CAUSAL=0 HKV=8 SQ=1", "B=8 H=32 S=4096 D=128 CAUSAL=1 HKV=8 SQ=16",
              "B=4 H=8 S=512 D=64 CAUSAL=1", "B=2 H=6 S=133 D=64 CAUSAL=1 HKV=2 SQ=7"):
    x = se.parse_shape(label)
    check(se.attn_bytes(x) == eval(task["bytes"], {}, dict(x)), "%s: bytes as the task's" % label)
    check(se.attn_flops(x) == eval(task["flops"], {}, dict(x)), "%s: flops as the task's" % label)
x = se.parse_shape("B=4 H=8 S=512 D=64 CAUSAL=1")
check(se.attn_flops(x) == 4 * 4 * 8 * 512 * 512 * 64 / 2, "SQ = S causal: S^2 / 2, as before")
x = se.parse_shape("B=1 H=1 S=10 D=1 CAUSAL=1 SQ=4")
pairs = sum(i + 10 - 4 + 1 for i in range(4))   # query i sees keys 0 .. i + S - SQ
check(se.attn_flops(x) == 4 * (pairs - 4 / 2), "causal SQ < S: 4 D (SQ S - SQ^2 / 2): %d visible pairs less SQ / 2" % pairs)

# the table: labels, GB/s of evoeng and of the best other contender
check(st.shape_short(d) == "B8 H32 HKV8 SQ1 S4096 D128", st.shape_short(d))
check(st.shape_short(se.parse_shape("B=4 H=8 S=512 D=64")) == "B4 H8 S512 D64", "MHA label unchanged")
row = {"dims": d, "flops": se.attn_flops(d), "bytes": se.attn_bytes(d), "params": {"SPLITS": 8}, "profile": None,
       "gqa": "enable_gqa=True", "export_latency_us": None,
       "contenders": {"evoeng": {"status": "ok", "us": 40.0, "max_abs_err": 1e-3},
                      "flash": {"status": "ok", "us": 80.0, "max_abs_err": 1e-3},
                      "cudnn": {"status": "n/a", "us": None, "max_abs_err": None, "reason": "unsupported"},
                      "flashkv": {"status": "ok", "us": 50.0, "max_abs_err": 1e-3}}}
text = st.table([row])
gbs = se.attn_bytes(d) / 40e-6 / 1e9
check("evo GB/s" in text and ("%.0f" % gbs) in text, "evoeng's GB/s %.0f in the table:\n%s" % (gbs, text))
check(("%.0f" % (se.attn_bytes(d) / 50e-6 / 1e9)) in text, "the best other contender's GB/s (FAkv at 50 us)")
check("enable_gqa=True" in text and "FAkv us" in text, "the gqa column and the FAkv contender")
j = st.row_json(row)
check(abs(j["evoeng_gbps"] - gbs) < 1e-6 and abs(j["flashkv_over_evoeng"] - 1.25) < 1e-12, "--out row: %r" % j)

# argument parsing and a dry run of a synthetic decoding export
with tempfile.TemporaryDirectory() as tmp:
    shape = "B=8 H=32 S=4096 D=128 CAUSAL=0 DTYPE=0 HKV=8 SQ=1"
    bufs = [{"name": n, "dtype": "f16", "count": c[n], "role": "output" if n == "O" else "input"} for n in "QKVO"]
    launch = {"entry": "attn_fwd", "grid": [1, 256, 8], "block": [128, 1, 1], "smem": 0,
              "args": [{"buffer": n} for n in "QKVO"] + [{"i32": 4096}, {"f32": 128 ** -0.5}, {"i32": 1}, {"i32": 4}]}
    ex = {"source": "#define D 128\n#define CAUSAL 0\nextern \"C\" __global__ void attn_fwd() {}\n", "status": "ok",
          "id": 7, "plan": {"shape": shape, "buffers": bufs, "launches": [launch], "flops": se.attn_flops(d)}}
    good = os.path.join(tmp, "dec.json")
    with open(good, "w", encoding="utf-8") as f:
        json.dump(ex, f)
    ex["plan"]["buffers"][1]["count"] = 8 * 32 * 4096 * 128   # K sized for 32 heads: not this shape
    bad = os.path.join(tmp, "bad.json")
    with open(bad, "w", encoding="utf-8") as f:
        json.dump(ex, f)

    def run(*a):
        return subprocess.run([sys.executable, script] + list(a), capture_output=True, text=True)
    p = run(good, "--dry-run", "--only", "evoeng,flashkv")
    check(p.returncode == 0, "dry run of a decoding export: %s%s" % (p.stdout[-800:], p.stderr[-800:]))
    check("B8 H32 HKV8 SQ1 S4096 D128" in p.stdout and "bytes 1.343e+08" in p.stdout,
          "the dry run names the shape and its bytes:\n%s" % p.stdout[-1500:])
    p = run(bad, "--dry-run")
    check(p.returncode == 1 and "expected f16 or bf16 input x 33554432 (B*HKV*S*D), got f16 input x 134217728" in p.stderr,
          "K of the wrong size refused: %s" % p.stderr[-500:])
    p = run(good, "--dry-run", "--only", "bogus")
    check(p.returncode == 2 and "unknown contender bogus" in p.stderr, "--only bogus: usage error")
print("%d failed" % report_store.fails)
sys.exit(1 if report_store.fails else 0)

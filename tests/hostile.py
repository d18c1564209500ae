#!/usr/bin/env python3
"""Hostile inputs to the evoeng binary (issue 35): task specs, kernel files,
store files, LLM settings and output paths made to read, write or run what
they should not, to crash, hang or eat memory. Each case runs the binary
(without a GPU: EVOENG_LIBCUDA is forced absent) and asserts its exit code
and the class of its message (the first rule of CLASSES that matches
stderr), plus, where it matters, that nothing was created, changed or run.

  hostile.py                  run every case; exit 0 when all hold, and
                              when README.md's totals and
                              docs/hostile-inputs.md's table are this script's
  hostile.py --markdown       print the full table (docs/hostile-inputs.md)
  hostile.py --write-readme   rewrite README.md's totals and the docs table
  hostile.py --only N,M       run those cases only (no README check)

Needs EVOENG (the binary) and EVO_SOURCE_ROOT (set by meson)."""
import hashlib
import json
import os
import re
import shutil
import socket
import sqlite3
import subprocess
import sys
import tempfile
import time

root = os.environ.get("EVO_SOURCE_ROOT", os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
evoeng = os.environ.get("EVOENG", os.path.join(root, "build/src/evoeng"))
sys.path.insert(0, os.path.join(root, "tests"))
import report_store  # noqa: E402  (the schema and the recorded H200 run)

# Message classes: the first pattern found in stderr names the class.
CLASSES = [
    ("crash", r"AddressSanitizer|runtime error:|Segmentation fault|core dumped|out of memory"),
    ("path-refused", r"outside the task's directory|evoeng never reads there"),
    ("include-refused", r"computed #include|refused: |is not allowed in kernel code|include_alias|directive name is refused"),
    ("compile-error", r"the default configuration fails: compile_error|the reference does not compile"),
    ("option-refused", r"not an allowed NVRTC option|only -std=c\+\+17|evoeng sets the target|expected -DNAME|expected -UNAME|"
                       r"ptxas option is not allowed|expected a register count|expected true or false|expected diagnostic numbers"),
    ("write-refused", r"not replacing it"),
    ("write-failed", r"cannot create|write failed"),
    ("too-large", r"too large|a spec may hold at most"),
    ("not-regular", r"not a regular file"),
    ("store-empty", r"an empty file, not a population store"),
    ("store-missing", r"no population store there"),
    ("store-locked", r"locked by another process"),
    ("run-locked", r"is in use by another process"),
    ("store-column", r"where (text|an integer|a number) is expected|its own ancestor|is NULL"),
    ("store-config", r"runs\.config_json"),
    ("store-foreign", r"not an evoeng database|written by a newer evoeng|not a population store"),
    ("llm-untrusted", r"resume does not (run a command|send them)"),
    ("llm-url", r"--llm-url '.*': "),
    ("no-gpu", r"needs a CUDA GPU"),
    ("usage", r"unknown option|expected an integer|needs a value|--allow-path|does not apply|contradict"),
    ("spec", r"task\.json|\.json:"),
    ("other", r"."),
]


def classify(err):
    for name, pat in CLASSES:
        if re.search(pat, err):
            return name
    return "none"


# ---- fixtures ----------------------------------------------------------------

class Ctx:
    def __init__(self, tmp):
        self.tmp = tmp
        self.n = 0

    def path(self, name):
        return os.path.join(self.tmp, name)

    def fresh(self, name):
        self.n += 1
        d = os.path.join(self.tmp, "c%03d" % self.n)
        os.makedirs(d, exist_ok=True)
        return os.path.join(d, name)


def good_spec():
    return json.load(open(os.path.join(root, "tests/data/good_task.json")))


def write_spec(ctx, edit=None, template_text=None, extra=None):
    """A copy of tests/data/good_task.json in a fresh directory (with its
    kernel files), edited by edit(spec, dir). Returns the spec path."""
    p = ctx.fresh("task.json")
    d = os.path.dirname(p)
    for f in ("good.cu", "good_ref.cu"):
        shutil.copy(os.path.join(root, "tests/data", f), d)
    if template_text is not None:
        with open(os.path.join(d, "good.cu"), "w") as f:
            f.write(template_text + open(os.path.join(root, "tests/data/good.cu")).read())
    spec = good_spec()
    if edit:
        edit(spec, d)
    with open(p, "w") as f:
        json.dump(spec, f)
    if extra:
        extra(d)
    return p


def tmap_spec(ctx, field, value):
    p = ctx.fresh("task.json")
    d = os.path.dirname(p)
    for f in ("good.cu", "good_ref.cu"):
        shutil.copy(os.path.join(root, "tests/data", f), d)
    spec = json.load(open(os.path.join(root, "tests/data/bad_tmap_swizzle.json")))
    tm = spec["launch"][0]["args"][4]["tensor_map"]
    tm["swizzle"] = "128B"
    tm[field] = value
    json.dump(spec, open(p, "w"))
    return p


def h200(ctx):
    p = ctx.fresh("pop.db")
    report_store.h200_store(root, p).close()
    return p


def sql_db(p, *statements):
    """Run statements on the SQLite file p (made when absent). Returns p."""
    c = sqlite3.connect(p)
    for s in statements:
        c.execute(s)
    c.commit()
    c.close()
    return p


def crafted(ctx, *sql):
    """The H200 store with the schema's NOT NULLs and CHECKs out of the way
    (as a file from anywhere may have them), then sql run on it."""
    p = sql_db(h200(ctx), "PRAGMA writable_schema = ON",
               "UPDATE sqlite_master SET sql = replace(sql, 'NOT NULL', '') WHERE type = 'table'")
    return sql_db(p, "PRAGMA ignore_check_constraints = ON", *sql)


def llm_store(ctx, llm, **cfg):
    config = {"generations": 3, "population": 4, "children": 4, "seed": 1, "strategy": "evolve", "seeds": 3,
              "revert_threshold": 0.02, "time_limit_s": 0, "dims": {}, "jobs": 0}
    config.update(cfg)
    if llm is not None:
        config["llm"] = llm
    text = json.dumps(config) if not isinstance(llm, str) else llm
    return crafted(ctx, "UPDATE runs SET config_json = %s, status = 'interrupted', task_path = '%s'"
                   % (sqlite3_quote(text), os.path.join(root, "tests/data/good_task.json")))


def sqlite3_quote(s):
    return "'" + s.replace("'", "''") + "'"


def sha(path):
    return hashlib.sha256(open(path, "rb").read()).hexdigest()


def sidecars(path):
    return [s for s in ("-wal", "-shm", "-journal") if os.path.exists(path + s)]


# ---- what a case checks besides the exit code and the class ------------------

def unchanged(path, digest):
    def check():
        if not os.path.exists(path):
            return "%s is gone" % path
        if sha(path) != digest:
            return "%s was changed" % path
        if sidecars(path):
            return "%s got %s" % (path, sidecars(path))
        return None
    return check


def absent(path):
    return lambda: "%s was created" % path if os.path.lexists(path) else None


def still_fifo(path):
    import stat
    return lambda: None if stat.S_ISFIFO(os.lstat(path).st_mode) else "%s is no longer a FIFO" % path


def still_link(path, target, text):
    def check():
        if not os.path.islink(path):
            return "%s is no longer a symlink" % path
        if open(target).read() != text:
            return "%s (its target) was written" % target
        return None
    return check


# ---- the cases ---------------------------------------------------------------
# Each: (group, input, setup(ctx) -> (argv, check or None, run options), exit, class)

CASES = []


def case(group, what, want_rc, want_class):
    def deco(fn):
        CASES.append((group, what, fn, want_rc, want_class))
        return fn
    return deco


def spec_case(what, rc, cls, edit=None, template=None, extra=None, args=("--sample", "0")):
    case("spec", what, rc, cls)(lambda ctx: ([ "check", write_spec(ctx, edit, template, extra), "--arch", "sm_90"]
                                            + list(args), None, {}))


def set_(path, value):
    def edit(s, d):
        node = s
        for k in path[:-1]:
            node = node[k]
        node[path[-1]] = value
    return edit


# Task specs: JSON, fields, bounds.
def raw_spec(ctx, text):
    p = ctx.fresh("task.json")
    open(p, "w").write(text)
    return ["check", p, "--arch", "sm_90"], None, {}


case("spec", "JSON syntax error", 3, "spec")(lambda c: raw_spec(c, '{"name": "x",'))
case("spec", "an array at the top", 3, "spec")(lambda c: raw_spec(c, "[1, 2, 3]"))
case("spec", "JSON nested 100,000 deep", 3, "spec")(lambda c: raw_spec(c, "[" * 100000 + "]" * 100000))
case("spec", "a 20 MiB spec", 3, "too-large")(lambda c: raw_spec(c, '{"name": "' + "x" * (20 << 20) + '"}'))
case("spec", "a duplicate key", 3, "spec")(lambda c: raw_spec(c, '{"name": "a", "name": "b"}'))
case("spec", "NUL bytes in the JSON", 3, "spec")(lambda c: raw_spec(c, '{"name": "a\x00b"}'))
spec_case("an unknown field", 3, "spec", set_(["lauch"], []))
spec_case("a TODO left in the spec", 3, "spec", set_(["description"], "TODO: describe"))
spec_case("a duplicate param value", 3, "spec", set_(["params", "UNROLL", "values"], [1, 2, 2]))
spec_case("a param of 1,000,000 values", 0, "none",
          set_(["params", "BIG"], {"values": list(range(1000000)), "default": 0}))
spec_case("a param of 1,000,001 values", 3, "too-large",
          set_(["params", "BIG"], {"values": list(range(1000001)), "default": 0}))
spec_case("5,000 params", 3, "too-large",
          lambda s, d: s["params"].update({"P%d" % i: {"values": [1], "default": 1} for i in range(5000)}))
spec_case("2,000 shapes", 3, "too-large", set_(["shapes"], [{"M": 1}] * 2000))
spec_case("5,000 dims x 1,000 shapes", 3, "too-large",
          lambda s, d: (s["dims"].update({"D%d" % i: 1 for i in range(5000)}), s.update(shapes=[{}] * 1000)))
spec_case("a param that is also a dim", 3, "spec", set_(["dims", "BLOCK"], 7))
spec_case("a derived name that refers to itself", 3, "spec", set_(["derived", "SMEM"], "SMEM + 1"))
spec_case("an expression that overflows", 3, "spec", set_(["derived", "BIG"], "N * 10000 * 10000 * 10000 * 10000"))
spec_case("an expression nested 50,000 deep", 3, "spec", set_(["derived", "DEEP"], "(" * 50000 + "1" + ")" * 50000))
spec_case("a 1 MB expression of 100,000 terms", 3, "spec",
          set_(["constraints"], [" + ".join(["BLOCK"] * 100000) + " > 0"]))
spec_case("a division by zero", 3, "spec", lambda s, d: s["constraints"].append("N / (SPLITS - 1) > 0"))
spec_case("a negative buffer size", 1, "spec", set_(["buffers", 2, "shape", 0], "SPLITS - 2"))
spec_case("grid size 0", 1, "spec", set_(["dims", "M"], 0))
case("spec", "tensor map: oob_fill \"inf\"", 3, "spec")(
    lambda c: (["check", tmap_spec(c, "oob_fill", "inf"), "--arch", "sm_90"], None, {}))
case("spec", "tensor map: oob_fill 7", 3, "spec")(
    lambda c: (["check", tmap_spec(c, "oob_fill", 7), "--arch", "sm_90"], None, {}))
case("spec", "tensor map: swizzle \"16B\"", 3, "spec")(
    lambda c: (["check", tmap_spec(c, "swizzle", "16B"), "--arch", "sm_90"], None, {}))
case("spec", "tensor map: l2_promotion \"1KB\"", 3, "spec")(
    lambda c: (["check", tmap_spec(c, "l2_promotion", "1KB"), "--arch", "sm_90"], None, {}))

# Task specs: the files they name.
spec_case("template \"/etc/passwd\"", 3, "path-refused", set_(["template"], "/etc/passwd"))
spec_case("template \"/etc/shadow\"", 3, "path-refused", set_(["template"], "/etc/shadow"))
spec_case("template \"../../../../../../etc/passwd\"", 3, "path-refused",
          set_(["template"], "../../../../../../etc/passwd"))
spec_case("template \"/proc/self/environ\"", 3, "path-refused", set_(["template"], "/proc/self/environ"))
spec_case("template \"/proc/self/root/etc/passwd\"", 3, "path-refused", set_(["template"], "/proc/self/root/etc/passwd"))
spec_case("template \"/dev/zero\"", 3, "path-refused", set_(["template"], "/dev/zero"))
spec_case("template \"/dev/stdin\"", 3, "path-refused", set_(["template"], "/dev/stdin"))
spec_case("template a symlink to /etc/passwd", 3, "path-refused", set_(["template"], "link.cu"),
          extra=lambda d: os.symlink("/etc/passwd", os.path.join(d, "link.cu")))
spec_case("template a symlink out of the spec's directory", 3, "path-refused", set_(["template"], "link.cu"),
          extra=lambda d: os.symlink(os.path.join(root, "tests/data/good.cu"), os.path.join(d, "link.cu")))
spec_case("template a directory", 3, "not-regular", set_(["template"], "sub"),
          extra=lambda d: os.mkdir(os.path.join(d, "sub")))
spec_case("template a FIFO (no hang)", 3, "not-regular", set_(["template"], "fifo.cu"),
          extra=lambda d: os.mkfifo(os.path.join(d, "fifo.cu")))
spec_case("template of 17 MiB", 3, "too-large", set_(["template"], "big.cu"),
          extra=lambda d: open(os.path.join(d, "big.cu"), "w").write("//" + "x" * (17 << 20) + "\n"))
spec_case("reference \"/etc/passwd\"", 3, "path-refused", set_(["reference", "source"], "/etc/passwd"))
spec_case("reference \"../x.cu\"", 3, "path-refused", set_(["reference", "source"], "../x.cu"),
          extra=lambda d: open(os.path.join(os.path.dirname(d), "x.cu"), "w").write("// x\n"))
spec_case("a template part that is a symlink to /etc/passwd", 3, "path-refused",
          template='#include "part.cuh"\n',
          extra=lambda d: os.symlink("/etc/passwd", os.path.join(d, "part.cuh")))
spec_case("a template part that includes itself", 3, "spec", template='#include "good.cu"\n')
spec_case("a reference that does not compile", 3, "compile-error", set_(["reference", "source"], "broken_ref.cu"),
          extra=lambda d: open(os.path.join(d, "broken_ref.cu"), "w").write(
              "extern \"C\" __global__ void scale_ref(float *y) { y[0] = undefined_name; }\n"))

# Kernel code: includes, whatever their spelling.
for what, line in [
        ('#include "/etc/passwd"', '#include "/etc/passwd"'),
        ('#include </proc/self/environ>', '#include </proc/self/environ>'),
        ('#include "/dev/zero"', '#include "/dev/zero"'),
        ('#include "../../../../etc/passwd"', '#include "../../../../etc/passwd"'),
        ('#include <cuda/../../../../../etc/hostname>', '#include <cuda/../../../../../etc/hostname>'),
        ('a computed #include (a macro)', '#define F "/etc/passwd"\n#include F'),
        ('%:include (a digraph)', '%:include "/etc/passwd"'),
        ('#inc\\<newline>lude (a line splice)', '#inc\\\nlude "/etc/passwd"'),
        ('#inc\\<blank><newline>lude', '#inc\\ \nlude "/etc/passwd"'),
        ('# /* comment */ include', '# /* c */ include "/etc/passwd"'),
        ('an #include after a comment that spans lines', '/* a\n b */ #include "/etc/passwd"'),
        ('an #include after a lone carriage return', 'int q;\r#include "/etc/passwd"'),
        ('#include_next', '#include_next <stdio.h>'),
        ('#import', '#import "x.h"'),
        ('#embed', '#embed "/etc/passwd"'),
        ('#pragma include_alias', '#pragma include_alias("a.h", "/etc/passwd")'),
        ('#\\u0069nclude (an escaped name)', '#\\u0069nclude "/etc/passwd"')]:
    spec_case("template with " + what, 3, "include-refused", template=line + "\n")


def source_case(what, text, rc, cls):
    def setup(ctx):
        p = write_spec(ctx)
        src = os.path.join(os.path.dirname(p), "mine.cu")
        open(src, "w").write(text + open(os.path.join(root, "tests/data/good.cu")).read())
        return ["check", p, "--arch", "sm_90", "--sample", "0", "--source", src], None, {}
    case("kernel", what, rc, cls)(setup)


source_case("--source kernel with #include \"/proc/self/environ\"", '#include "/proc/self/environ"\n', 1,
            "include-refused")
source_case("--source kernel with a computed #include", '#define H </etc/passwd>\n#include H\n', 1,
            "include-refused")
source_case("--source kernel with #include of the spec's own task.json", '#include "task.json"\n', 1,
            "compile-error")


def cwd_include(ctx):
    """A kernel includes a file of the current directory by a relative name:
    NVRTC does not find it (its program lives nowhere), so no line of it
    reaches the log."""
    p = write_spec(ctx)
    d = os.path.dirname(p)
    open(os.path.join(d, "secret.h"), "w").write("evoeng_hostile_secret_1234 = 1;\n")
    src = os.path.join(d, "mine.cu")
    open(src, "w").write('#include "secret.h"\n' + open(os.path.join(root, "tests/data/good.cu")).read())
    return (["check", p, "--arch", "sm_90", "--sample", "0", "--source", src, "--verbose"],
            lambda out, err: "the secret reached the output" if "evoeng_hostile_secret" in out + err else None,
            {"cwd": d})


case("kernel", "--source kernel including a file of the current directory", 1, "compile-error")(cwd_include)

# compile.options
for opt, cls in [("--create-pch=/tmp/evoeng-hostile.pch", "option-refused"), ("--use-pch=/tmp/x.pch", "option-refused"),
                 ("--pch-dir=/tmp", "option-refused"), ("--time=/tmp/evoeng-hostile.csv", "option-refused"),
                 ("--fdevice-time-trace=/tmp/t.json", "option-refused"), ("-I/etc", "option-refused"),
                 ("--include-path=/", "option-refused"), ("--pre-include=/etc/passwd", "option-refused"),
                 ("-include", "option-refused"), ("-std=c++14", "option-refused"), ("-std=c++03", "option-refused"),
                 ("-arch=sm_80", "option-refused"), ("-DX=$(touch /tmp/evoeng-pwned)", "option-refused"),
                 ("-D X", "option-refused"), ("-DX=1\n#include \"/etc/passwd\"", "option-refused"),
                 ("--ptxas-options=--output-file=/tmp/x", "option-refused"), ("-maxrregcount=100000", "option-refused"),
                 ("--fmad=maybe", "option-refused")]:
    spec_case("compile.options [%s]" % json.dumps(opt)[1:-1].replace("|", "\\|"), 3, cls,
              set_(["compile", "options"], [opt]))
spec_case("compile.options [\"-DEVO_H=1\", \"--use_fast_math\", \"-maxrregcount=64\"] (allowed)", 0, "none",
          set_(["compile", "options"], ["-DEVO_H=1", "--use_fast_math", "-maxrregcount=64"]))


def check_file(ctx, make, args=()):
    return ["check", make(ctx)] + list(args), None, {}


def fifo(ctx, name="task.json"):
    p = ctx.fresh(name)
    os.mkfifo(p)
    return p


def big_file(ctx):
    p = ctx.fresh("task.json")
    with open(p, "wb") as f:
        f.truncate(40 << 20)
    return p


case("file", "check /dev/zero", 3, "not-regular")(lambda c: check_file(c, lambda _: "/dev/zero"))
case("file", "check /dev/urandom", 3, "not-regular")(lambda c: check_file(c, lambda _: "/dev/urandom"))
case("file", "check a FIFO (no hang)", 3, "not-regular")(lambda c: check_file(c, fifo))
case("file", "check a directory", 3, "not-regular")(lambda c: check_file(c, lambda x: x.tmp))
case("file", "check a sparse 40 MiB file", 3, "too-large")(lambda c: check_file(c, big_file))
case("file", "check a missing file", 3, "spec")(lambda c: check_file(c, lambda x: x.path("none/task.json")))
case("file", "check --source /dev/zero", 2, "not-regular")(
    lambda c: (["check", write_spec(c), "--arch", "sm_90", "--source", "/dev/zero"], None, {}))
case("file", "init /dev/zero", 1, "not-regular")(lambda c: (["init", "/dev/zero"], None, {}))
case("file", "--allow-path to a missing directory", 2, "usage")(
    lambda c: (["check", write_spec(c), "--allow-path", c.path("nowhere")], None, {}))


def allowed_outside(ctx):
    out = ctx.fresh("x")
    d = os.path.dirname(out)
    shutil.copy(os.path.join(root, "tests/data/good.cu"), d)
    p = write_spec(ctx, set_(["template"], os.path.join(d, "good.cu")))
    return ["check", p, "--arch", "sm_90", "--sample", "0", "--allow-path", d], None, {}


case("file", "a template outside, allowed with --allow-path", 0, "none")(allowed_outside)


# Stores for reading commands.
def store_case(what, rc, cls, make, cmd=("status",), keep=True):
    def setup(ctx):
        p = make(ctx)
        digest = sha(p) if keep and os.path.isfile(p) else None
        chk = unchanged(p, digest) if digest else None
        return list(cmd) + ["--db", p], (lambda o, e: chk()) if chk else None, {}
    case("store", what, rc, cls)(setup)


def make_file(content):
    def make(ctx):
        p = ctx.fresh("pop.db")
        open(p, "wb").write(content)
        return p
    return make


def foreign_db(ctx):
    return sql_db(ctx.fresh("pop.db"), "CREATE TABLE accounts (id INTEGER, name TEXT)")


def newer_db(ctx):
    return sql_db(h200(ctx), "PRAGMA user_version = 99")


def older_db(ctx):
    return sql_db(ctx.fresh("pop.db"), "PRAGMA application_id = %d" % report_store.APPLICATION_ID)


def truncated_db(ctx):
    p = h200(ctx)
    data = open(p, "rb").read()
    open(p, "wb").write(data[:len(data) // 3])
    return p


def missing(ctx):
    p = ctx.fresh("pop.db")
    return p


def missing_case(cmd):
    def setup(ctx):
        p = ctx.path("nowhere/pop.db")
        return list(cmd) + ["--db", p], lambda o, e: absent(os.path.dirname(p))(), {}
    case("store", "%s --db of a missing store" % cmd[0], 4, "store-missing")(setup)


for cmd in (("status",), ("top",), ("runs",), ("show", "1"), ("lineage", "1"), ("export", "--best"), ("report",)):
    missing_case(cmd)
store_case("status of an empty file", 4, "store-empty", make_file(b""))
store_case("top of an empty file", 4, "store-empty", make_file(b""), ("top",))
store_case("status of a text file", 4, "store-foreign", make_file(b"hello, no database\n" * 100))
store_case("status of 64 KiB of zeros", 4, "store-foreign", make_file(b"\0" * 65536))
store_case("status of a SQLite header and garbage", 4, "store-foreign",
           make_file(b"SQLite format 3\0" + bytes(range(256)) * 64))
store_case("status of another program's SQLite file", 4, "store-foreign", foreign_db)
store_case("status of a store of a newer schema", 4, "store-foreign", newer_db)
store_case("status of a truncated store", 4, "store-foreign", truncated_db)
store_case("status of an older store (schema 0): read unchanged", 0, "none", older_db)
store_case("status of /dev/null", 4, "not-regular", lambda c: "/dev/null", keep=False)
store_case("status of a directory", 4, "not-regular", lambda c: c.tmp, keep=False)
store_case("status of a FIFO (no hang)", 4, "not-regular", lambda c: fifo(c, "pop.db"), keep=False)
store_case("status with runs.status NULL", 4, "store-column", lambda c: crafted(c, "UPDATE runs SET status = NULL"))
store_case("status with runs.task_json NULL", 4, "store-column",
           lambda c: crafted(c, "UPDATE runs SET task_json = NULL"))
store_case("runs with runs.seed 'seven'", 4, "store-column", lambda c: crafted(c, "UPDATE runs SET seed = 'seven'"),
           ("runs",))
store_case("status with runs.config_json a blob", 4, "store-column",
           lambda c: crafted(c, "UPDATE runs SET config_json = x'00ff00'"))
store_case("top with candidates.latency_us 'fast'", 4, "store-column",
           lambda c: crafted(c, "UPDATE candidates SET latency_us = 'fast'"), ("top",))
store_case("show with candidates.params_json a blob", 4, "store-column",
           lambda c: crafted(c, "UPDATE candidates SET params_json = x'01'"), ("show", "32"))
store_case("show with candidates.status NULL", 4, "store-column",
           lambda c: crafted(c, "UPDATE candidates SET status = NULL"), ("show", "32"))
store_case("lineage of a candidate that is its own ancestor", 4, "store-column",
           lambda c: crafted(c, "UPDATE candidates SET parent_id = 32 WHERE id = 29"), ("lineage", "32"))
store_case("report of a lineage that loops", 4, "store-column",
           lambda c: crafted(c, "UPDATE candidates SET parent_id = 32 WHERE id = 17"), ("report", "-o", "-"))
store_case("export with the source text NULL", 1, "other",
           lambda c: crafted(c, "UPDATE sources SET text = NULL"), ("export", "--best"))
store_case("show with candidates.gate_json not JSON", 0, "none",
           lambda c: crafted(c, "UPDATE candidates SET gate_json = '{not json'"), ("show", "32"))
store_case("report with generations.evaluated 'many'", 4, "store-column",
           lambda c: crafted(c, "INSERT INTO generations (run_id, generation, evaluated, valid, accepted, reverted, "
                                "failed, finished_at) VALUES (1, 99, 'many', 0, 0, 0, 0, 'x')"), ("report", "-o", "-"))
store_case("status with a view that divides by zero", 4, "store-column",
           lambda c: crafted(c, "DROP VIEW run_counts",
                             "CREATE VIEW run_counts AS SELECT run_id, status, decision, 1/0 AS n FROM candidates"))


def hold(ctx, code, path):
    """Another process that runs code (a lock taken on sys.argv[1]) and
    keeps it until the case ends (ctx.kill)."""
    holder = subprocess.Popen([sys.executable, "-c", code + "print('held', flush=True)\ntime.sleep(60)\n", path],
                              stdout=subprocess.PIPE)
    holder.stdout.readline()
    ctx.kill = holder


def locked_store(ctx):
    p = h200(ctx)
    hold(ctx, "import sqlite3, sys, time\n"
              "c = sqlite3.connect(sys.argv[1], isolation_level=None)\n"
              "c.execute('PRAGMA locking_mode = EXCLUSIVE')\n"
              "c.execute('BEGIN EXCLUSIVE')\n", p)
    return ["status", "--db", p], None, {}


case("store", "status of a store another process holds locked", 4, "store-locked")(locked_store)


# resume: the store's settings are data.
def resume_case(what, rc, cls, llm=None, args=(), marker=False, **cfg):
    def setup(ctx):
        m = ctx.path("pwned-%d" % ctx.n)
        l = llm
        if isinstance(l, dict) and l.get("cmd") == "MARK":
            l = dict(l, cmd="touch %s; cat >/dev/null" % m)
        p = llm_store(ctx, l, **cfg)
        return (["resume", "--db", p] + list(args), (lambda o, e: absent(m)()) if marker else None,
                {"env": {"OPENAI_API_KEY": "sk-hostile-test"}})
    case("resume", what, rc, cls)(setup)


resume_case("a stored --llm-cmd (a shell command)", 2, "llm-untrusted", {"cmd": "MARK", "mode": "full"}, marker=True)
resume_case("a stored --llm-cmd, --trust-store given", 5, "no-gpu", {"cmd": "MARK", "mode": "full"},
            ("--trust-store",), marker=True)
resume_case("a stored --llm-cmd, --llm-cmd given again", 5, "no-gpu", {"cmd": "MARK", "mode": "full"},
            ("--llm-cmd", "cat"), marker=True)
resume_case("a stored --llm-url (where the key would go)", 2, "llm-untrusted",
            {"provider": "openai", "url": "https://collector.example/v1", "model": "m", "mode": "full"})
resume_case("a stored http:// --llm-url, --trust-store given", 2, "llm-url",
            {"provider": "openai", "url": "http://collector.example/v1", "model": "m", "mode": "full"},
            ("--trust-store",))
resume_case("a stored file:// --llm-url, --trust-store given", 2, "llm-url",
            {"provider": "openai", "url": "file:///etc/passwd", "model": "m", "mode": "full"}, ("--trust-store",))
resume_case("a stored population of 10^9", 4, "store-config", population=1000000000)
resume_case("a stored seed \"x\"", 4, "store-config", seed="x")
resume_case("a stored revert_threshold of -5", 4, "store-config", revert_threshold=-5)
resume_case("a stored llm.concurrency of 10^6", 4, "store-config",
            llm={"cmd": "cat", "mode": "full", "concurrency": 1000000}, args=("--llm-cmd", "cat"))
resume_case("a stored config_json that is not JSON", 4, "store-config", llm="{not json")
resume_case("a stored run --profile that is not a string", 4, "store-config", profiles=5)
resume_case("a stored run --profile naming a profile the task lacks", 2, "spec", profiles="default,large")
resume_case("a stored run --profile the task has", 5, "no-gpu", profiles="default")
case("resume", "a run whose runs.status is NULL", 4, "store-column")(
    lambda c: (["resume", "--db", crafted(c, "UPDATE runs SET status = NULL")], None, {}))


def run_locked(ctx):
    p = llm_store(ctx, None)
    hold(ctx, "import fcntl, sys, time\n"
              "f = open(sys.argv[1], 'w')\n"
              "fcntl.flock(f, fcntl.LOCK_EX)\n"
              "f.write('pid 4242 host hostile-test since 2026-11-26T10:00:00Z\\n'); f.flush()\n", p + ".run1.lock")
    return (["resume", "--db", p],
            lambda o, e: None if "pid 4242 host hostile-test since 2026-11-26T10:00:00Z" in e else "the holder is not named",
            {})


case("resume", "a run another process holds", 4, "run-locked")(run_locked)


# LLM URLs: the key never goes in clear.
def llm_run(url, *extra):
    def setup(ctx):
        return (["run", "--llm", "openai", "--llm-model", "m", "--llm-url", url, "--generations", "1",
                 "--db", ctx.fresh("pop.db")] + list(extra), None, {"env": {"OPENAI_API_KEY": "sk-hostile-test"}})
    return setup


for url, rc, cls in [("http://api.example.com/v1", 2, "llm-url"), ("http://127.0.0.1.nip.io/v1", 2, "llm-url"),
                     ("http://127.0.0.1@collector.example/v1", 2, "llm-url"), ("http://10.1.2.3:8000/v1", 2, "llm-url"),
                     ("file:///etc/passwd", 2, "llm-url"), ("ftp://127.0.0.1/v1", 2, "llm-url"),
                     ("gopher://127.0.0.1:70/x", 2, "llm-url"), ("http://127.0.0.1:9/v1", 5, "no-gpu"),
                     ("http://[::1]:9/v1", 5, "no-gpu"), ("http://localhost:9/v1", 5, "no-gpu"),
                     ("https://api.example.com/v1", 5, "no-gpu")]:
    case("llm", "--llm-url %s" % url, rc, cls)(llm_run(url))
case("llm", "--llm-url http://api.example.com/v1 --llm-insecure", 5, "no-gpu")(
    llm_run("http://api.example.com/v1", "--llm-insecure"))


# Output paths.
def out_case(what, rc, cls, make, cmd=("report",), ulimit=None, wal=False):
    def setup(ctx):
        db = h200(ctx) if not wal else sql_db(h200(ctx), "PRAGMA journal_mode = WAL")
        target, chk = make(ctx)
        opts = {}
        if ulimit:
            opts["ulimit_fsize"] = ulimit
        argv = list(cmd) + ["--db", db, "-o", target]
        return argv, (lambda o, e: chk()) if chk else None, opts
    case("output", what, rc, cls)(setup)


def o_missing_dir(ctx):
    t = ctx.path("nowhere/x.html")
    return t, lambda: absent(os.path.dirname(t))()


def o_fifo(ctx):
    t = ctx.fresh("out.html")
    os.mkfifo(t)
    return t, still_fifo(t)


def o_link(ctx):
    t = ctx.fresh("out.html")
    target = t + ".target"
    open(target, "w").write("OLD")
    os.symlink(target, t)
    return t, still_link(t, target, "OLD")


def o_link_force(ctx):
    t = ctx.fresh("out.html")
    target = t + ".target"
    open(target, "w").write("OLD")
    os.symlink(target, t)
    return t, lambda: (None if not os.path.islink(t) and open(target).read() == "OLD"
                       else "the link was not replaced, or its target was written")


def o_dir(ctx):
    t = ctx.fresh("outdir")
    os.mkdir(t)
    return t, None


def o_old(ctx):
    t = ctx.fresh("best.cu")
    open(t, "w").write("OLD")
    return t, lambda: None if open(t).read() == "OLD" else "the old file was not kept whole"


def o_tmp_link(ctx):
    """A symlink planted where the old temporary name was (PATH.tmp.PID)."""
    t = ctx.fresh("out.html")
    victim = t + ".victim"
    open(victim, "w").write("VICTIM")
    last = int(open("/proc/sys/kernel/ns_last_pid").read())   # the next process gets one of the next ids
    for pid in range(last + 1, last + 400):
        os.symlink(victim, "%s.tmp.%d" % (t, pid))
    return t, lambda: None if open(victim).read() == "VICTIM" else "a planted temporary-name symlink was followed"


out_case("report -o /nonexistent dir/x.html (names that path)", 7, "write-failed", o_missing_dir)
out_case("report -o a FIFO", 7, "write-refused", o_fifo)
out_case("report -o a symlink", 7, "write-refused", o_link)
out_case("report -o a symlink --force (the link replaced, its target untouched)", 0, "none", o_link_force,
         ("report", "--force"))
out_case("report -o a directory", 7, "write-refused", o_dir)
out_case("report -o with symlinks planted at PATH.tmp.PID", 0, "none", o_tmp_link)
out_case("report -o on a full disk (ulimit -f)", 7, "write-failed", o_old, ulimit=8)
# 36 KiB: room for SQLite's -shm (32 KiB), not for the 39,241-byte export
out_case("export -o on a full disk (ulimit -f)", 7, "write-failed", o_old, ("export", "--best"), ulimit=36, wal=True)
out_case("export -o a FIFO", 7, "write-refused", o_fifo, ("export", "--best"))
out_case("export --format harness -o a symlink", 7, "write-refused", o_link, ("export", "--best", "--format", "harness"))
# Never a system path itself: an evoeng that replaced what it names (as
# b3bea87 did, run as root) would replace the machine's /dev/null.
def o_device(ctx):
    """A device node in the test's own directory (a second /dev/null; a
    FIFO where this user may not make devices)."""
    import stat
    t = ctx.fresh("null")
    try:
        os.mknod(t, stat.S_IFCHR | 0o666, os.makedev(1, 3))
    except OSError:
        os.mkfifo(t)
    mode = os.lstat(t).st_mode
    return t, lambda: None if os.lstat(t).st_mode == mode else "the device node was replaced"


def o_stdout_link(ctx):
    """A symlink to /proc/self/fd/1, as /dev/stdout is, in the test's directory."""
    t = ctx.fresh("stdout")
    os.symlink("/proc/self/fd/1", t)
    return t, lambda: None if os.path.islink(t) else "the symlink was replaced"


out_case("report -o a device node (like /dev/null)", 7, "write-refused", o_device)
out_case("report -o a symlink to /proc/self/fd/1 (like /dev/stdout)", 7, "write-refused", o_stdout_link)


# ---- running -----------------------------------------------------------------

def run_case(ctx, i, group, what, setup, want_rc, want_class):
    ctx.kill = None
    argv, extra, opts = setup(ctx)
    env = dict(os.environ)
    env["EVOENG_LIBCUDA"] = "/nonexistent/libcuda.so.1"
    env["EVOENG_CACHE_DIR"] = ctx.path("cache")
    for k in ("EVOENG_API_KEY", "OPENAI_API_KEY", "ANTHROPIC_API_KEY", "http_proxy", "HTTP_PROXY", "https_proxy",
              "HTTPS_PROXY", "all_proxy", "ALL_PROXY"):
        env.pop(k, None)
    env.update(opts.get("env", {}))
    pre = None
    if opts.get("ulimit_fsize"):
        import resource
        import signal
        n = opts["ulimit_fsize"] * 1024

        def pre():
            signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
            resource.setrlimit(resource.RLIMIT_FSIZE, (n, n))
    t0 = time.time()
    try:
        p = subprocess.run([evoeng] + argv, capture_output=True, env=env, cwd=opts.get("cwd", ctx.tmp),
                           timeout=90, preexec_fn=pre)
        rc, out, err = p.returncode, p.stdout.decode(errors="replace"), p.stderr.decode(errors="replace")
    except subprocess.TimeoutExpired:
        rc, out, err = "timeout", "", "timeout"
    finally:
        if ctx.kill:
            ctx.kill.kill()
            ctx.kill.wait()
    secs = time.time() - t0
    cls = classify(err) if rc != 0 else "none" if not re.search(CLASSES[0][1], err) else "crash"
    problems = []
    if rc != want_rc:
        problems.append("exit %s, expected %d" % (rc, want_rc))
    if cls != want_class:
        problems.append("class %s, expected %s" % (cls, want_class))
    if extra:
        why = extra(out, err) if extra.__code__.co_argcount == 2 else extra()
        if why:
            problems.append(why)
    line = err.strip().splitlines()[-1][:160] if err.strip() else ""
    print("%s %3d %-7s %-58s exit %-3s %-15s %5.1fs  %s" % ("ok  " if not problems else "FAIL", i, group, what[:58],
                                                            rc, cls, secs, line))
    for pr in problems:
        print("       " + pr)
    return not problems


def totals():
    """'163 cases: spec 79, kernel 4, ...'"""
    counts = {}
    for group, *_ in CASES:
        counts[group] = counts.get(group, 0) + 1
    return "%d cases: %s." % (len(CASES), ", ".join("%s %d" % kv for kv in counts.items()))


def markdown():
    rows = ["| # | group | input | exit | message class |", "|---:|---|---|---:|---|"]
    for i, (group, what, _, rc, cls) in enumerate(CASES, 1):
        rows.append("| %d | %s | %s | %d | %s |" % (i, group, what.replace("|", "\\|"), rc, cls))
    rows += ["", totals()]
    return "\n".join(rows) + "\n"


def ranges(nums):
    """'1-3, 7, 9-10' from [1, 2, 3, 7, 9, 10]."""
    out, start = [], None
    for i, n in enumerate(nums):
        if start is None:
            start = n
        if i + 1 == len(nums) or nums[i + 1] != n + 1:
            out.append(str(start) if start == n else "%d-%d" % (start, n))
            start = None
    return ", ".join(out)


def summary():
    """README.md's table: every case, by number, under its group, exit code and message class."""
    rows_by = {}
    for i, (group, _, _, rc, cls) in enumerate(CASES, 1):
        rows_by.setdefault((group, rc, cls), []).append(i)
    rows = ["| group | exit | message class | cases (numbers of docs/hostile-inputs.md) |", "|---|---:|---|---|"]
    for (group, rc, cls), nums in rows_by.items():
        rows.append("| %s | %d | %s | %s |" % (group, rc, cls, ranges(nums)))
    rows += ["", totals()]
    return "\n".join(rows) + "\n"


BEGIN, END = "<!-- hostile-table: begin (tests/hostile.py --write-readme) -->", "<!-- hostile-table: end -->"
DOC_HEAD = ("# Hostile inputs\n\nEvery case of `tests/hostile.py` (the `hostile` unit test): the input, the exit code "
            "and the class of the message it must give (README.md, \"Security and trust\", has them by exit code and class, and the "
            "trust model). Written by `tests/hostile.py --write-readme`; the test fails when it differs.\n\n")


def readme_table():
    text = open(os.path.join(root, "README.md")).read()
    if BEGIN not in text or END not in text:
        return text, None
    a = text.index(BEGIN) + len(BEGIN)
    return text, text[a:text.index(END)].strip("\n") + "\n"


def doc_path():
    return os.path.join(root, "docs", "hostile-inputs.md")


def doc_table():
    try:
        return open(doc_path()).read()
    except OSError:
        return None


def main():
    args = sys.argv[1:]
    if "--markdown" in args:
        sys.stdout.write(markdown())
        return 0
    if "--write-readme" in args:
        text, old = readme_table()
        if old is None:
            print("README.md has no hostile-table markers", file=sys.stderr)
            return 1
        a, b = text.index(BEGIN) + len(BEGIN), text.index(END)
        open(os.path.join(root, "README.md"), "w").write(text[:a] + "\n" + summary() + text[b:])
        open(doc_path(), "w").write(DOC_HEAD + markdown())
        return 0
    only = None
    if "--only" in args:
        only = {int(x) for x in args[args.index("--only") + 1].split(",")}
    fails = 0
    with tempfile.TemporaryDirectory() as tmp:
        ctx = Ctx(tmp)
        for i, c in enumerate(CASES, 1):
            if only and i not in only:
                continue
            fails += not run_case(ctx, i, *c)
    if only is None:
        _, table = readme_table()
        if table != summary() or doc_table() != DOC_HEAD + markdown():
            print("FAIL README.md's hostile-input totals or docs/hostile-inputs.md are not this script's: run "
                  "tests/hostile.py --write-readme")
            fails += 1
        else:
            print("ok   README.md's totals and docs/hostile-inputs.md are this script's (%d cases)" % len(CASES))
    print("%d cases, %d failed" % (len(CASES), fails))
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main())

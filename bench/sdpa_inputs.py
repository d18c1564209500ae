#!/usr/bin/env python3
"""sdpa_inputs.py -- evoeng's input generator outside evoeng, for
bench/compare_sdpa.py and bench/bare_time.py: the inputs they time are the
ones evoeng gates and times (the same bytes), for any input profile of the
task (templates/README.md, "Input profiles").

evoeng fills an input with its own kernel evo_fill (src/gpu/devkern.c, the
generator's text in src/gpu/gensrc.h): element i depends only on (seed,
the buffer's salt, i) and the buffer's distribution. This module reads that
kernel text from the source tree, keys the streams as evoeng does
(gate_seed_key, task_seed_salt) and turns an export's profile
(`plan.profiles[].inputs`, written by `evoeng export --format json`) into
evo_fill's GenSpec argument. Nothing here needs torch or a GPU; launching
the kernel is the caller's (it has the driver)."""

import ctypes
import json
import os
import re

M64 = (1 << 64) - 1
ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
DTYPE_CODE = {"f16": 0, "bf16": 1, "f32": 2, "i32": 3}   # evo_fill's dt
KINDS = {"normal": 0, "uniform": 1, "zero": 2, "const": 3, "outlier": 4}   # InitKind
ROWS = {"lognormal": 1, "uniform": 2}                                      # RowScale


class ProfileError(Exception):
    """An export without the profile asked for."""


# keyed as src/gpu/gate.c gate_seed_key and src/task/task_access.c task_seed_salt (keep in step)
def mix64(z):
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & M64
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & M64
    return z ^ (z >> 31)


def seed_salt(name):
    h = 14695981039346656037
    for ch in name.encode():
        h = ((h ^ ch) * 1099511628211) & M64
    return h


def seed_key(seed, salt):
    st = (seed * 0xD1B54A32D192ED03) & M64
    return st ^ mix64((st + 0x9E3779B97F4A7C15) & M64) ^ ((salt * 0x9E3779B97F4A7C15 + 0x632BE59BD9B4E019) & M64)


def _literals(text):
    """The C string literals of text, joined and unescaped."""
    return "".join(bytes(x, "utf-8").decode("unicode_escape") for x in re.findall(r'"((?:[^"\\]|\\.)*)"', text))


def devkern_source(root=ROOT):
    """The worker's kernel text: the generator (the GEN_SOURCE literal of
    src/gpu/gensrc.h) and the kernels (kernel_src of src/gpu/devkern.c)."""
    gen = open(os.path.join(root, "src", "gpu", "gensrc.h"), encoding="utf-8").read()
    gen = gen[gen.index("#define GEN_SOURCE"):]
    gen = gen[:gen.index("\n\n")]
    src = open(os.path.join(root, "src", "gpu", "devkern.c"), encoding="utf-8").read()
    body = src[src.index("kernel_src[] ="):]
    body = body[:body.index(";\n")]
    return _literals(gen) + _literals(body)


class GenSpec(ctypes.Structure):
    """evo_fill's distribution argument (struct GenSpec of gensrc.h)."""
    _fields_ = [("kind", ctypes.c_int), ("rows", ctypes.c_int), ("a", ctypes.c_double), ("b", ctypes.c_double),
                ("p", ctypes.c_double), ("c", ctypes.c_double), ("ra", ctypes.c_double), ("rb", ctypes.c_double),
                ("row_len", ctypes.c_uint64)]


def gen_spec(init):
    """An export's init ({"dist", ...} as a task spec writes it, "row_scale"
    with its resolved "row_len") as a GenSpec."""
    dist = init.get("dist", "normal")
    if dist not in KINDS:
        raise ProfileError(f"unknown dist {dist!r} (known: {' '.join(KINDS)})")
    g = GenSpec(kind=KINDS[dist], row_len=1)
    if dist == "uniform":
        g.a, g.b = init.get("low", -1.0), init.get("high", 1.0)
    elif dist == "const":
        g.a = init.get("value", 0.0)
    elif dist != "zero":
        g.a, g.b = init.get("mean", 0.0), init.get("std", 1.0)
        g.p, g.c = init.get("p", 0.0), init.get("outlier_std", 0.0)
    rs = init.get("row_scale")
    if rs:
        if rs.get("dist") not in ROWS:
            raise ProfileError(f"unknown row_scale dist {rs.get('dist')!r} (known: {' '.join(ROWS)})")
        g.rows = ROWS[rs["dist"]]
        lo = rs["dist"] == "uniform"
        g.ra, g.rb = rs.get("low" if lo else "mean", 0.0), rs.get("high" if lo else "std", 1.0)
        g.row_len = max(1, int(rs.get("row_len", 1)))
    return g


def profile_names(exp):
    """The export's input profiles, in the task's order ([] for an export
    written before profiles)."""
    return [p.get("name") for p in exp.get("profiles") or []]


def profile_inputs(exp, name):
    """{buffer: init} of the export's profile `name`; ProfileError naming
    the profiles it has when it has none of that name."""
    for p in exp.get("profiles") or []:
        if p.get("name") == name:
            return p.get("inputs") or {}
    have = " ".join(profile_names(exp)) or "none: exported before input profiles"
    raise ProfileError(f"{exp.get('path', 'export')}: no input profile {name!r} (it has: {have})")


def task_profiles(path, exp):
    """The input profiles of the task spec at path as an export of exp's
    shape would write them (for an export made before profiles existed):
    every input's init, the profile's or else the buffer's own, a row
    scale's row_len resolved from the buffer's shape entries after its
    "dim" (dim names or integers). A spec without profiles has "default"."""
    try:
        spec = json.load(open(path, encoding="utf-8"))
    except (OSError, ValueError) as e:
        raise ProfileError(f"{path}: cannot read the task spec: {e}") from None
    dims = {k.upper(): v for k, v in exp["dims"].items()}
    bufs = {b["name"]: b for b in spec.get("buffers", []) if b.get("role") == "input"}

    def resolve(name, init):
        init = dict(init)
        rs = init.get("row_scale")
        if rs:
            shape, n = bufs[name]["shape"], 1
            for e in shape[shape.index(rs["dim"]) + 1:]:
                if isinstance(e, int) or str(e).isdigit():
                    n *= int(e)
                elif str(e).upper() in dims:
                    n *= dims[str(e).upper()]
                else:
                    raise ProfileError(f"{path}: {name}'s shape entry {e!r} is not a dim of the export's shape")
            init["row_scale"] = dict(rs, row_len=n)
        return init
    out = []
    for p in spec.get("profiles") or [{"name": "default"}]:
        ins = {n: resolve(n, (p.get("inputs") or {}).get(n, b.get("init", {"dist": "normal"})))
               for n, b in bufs.items()}
        out.append({"name": p["name"], "timing": p.get("timing", True), "inputs": ins})
    return out


def fill_args(ptr, count, dtype, init, seed, name):
    """evo_fill's arguments for one buffer (ctypes values; keep them alive
    until the launch is queued) and the pointer array cuLaunchKernel takes."""
    args = [ctypes.c_uint64(ptr), ctypes.c_uint64(count), ctypes.c_int(DTYPE_CODE[dtype]), gen_spec(init),
            ctypes.c_uint64(seed_key(seed, seed_salt(name)))]
    arr = (ctypes.c_void_p * len(args))(*[ctypes.addressof(x) for x in args])
    return args, arr

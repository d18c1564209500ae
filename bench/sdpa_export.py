#!/usr/bin/env python3
"""sdpa_export.py -- reading an `evoeng export --format json` file and
compiling its source with NVRTC, for bench/compare_sdpa.py and bench/bare_time.py.

load_export(path) checks the export and resolves its launch plan; nvrtc_cubin()
compiles its source for an arch-specific target through libnvrtc; the tables map
the export's dtype, swizzle and L2-promotion names to CUDA's values."""

import hashlib
import ctypes
import glob
import json
import math
import os
import re
import sys


TORCH_DTYPES = {"f16": "float16", "bf16": "bfloat16", "f32": "float32", "i32": "int32"}
DTYPE_BYTES = {"f16": 2, "bf16": 2, "f32": 4, "i32": 4}
ARG_KINDS = ("buffer", "i32", "i64", "f32", "f64", "tensor_map")
TMAP_SWIZZLE = {"none": 0, "32B": 1, "64B": 2, "128B": 3}
TMAP_L2 = {"none": 0, "64B": 1, "128B": 2, "256B": 3}
TMAP_DTYPE = {"f16": 6, "f32": 7, "bf16": 9, "i32": 3}   # CUtensorMapDataType
# evoeng's own NVRTC options (src/compile/nvrtc.c) less its include path and ptxas -v;
# CuPy adds the device's -arch=sm_XY itself (and -ftz=true).
NVRTC_OPTIONS = ("--std=c++17", "-default-device")


class ExportError(Exception):
    """An export file that cannot be used at all."""


# ---------------------------------------------------------------- exports

def parse_shape(label):
    """'B=4 H=8 S=512 D=64 CAUSAL=0' -> {'B': 4, ..., 'CAUSAL': 0} (keys upper-cased).
    HKV (K/V heads) and SQ (queries) default to H and S (an export made
    before they were dims); HKV must divide H and SQ be 1 to S."""
    dims = {}
    for tok in label.split():
        m = re.fullmatch(r"([A-Za-z_]\w*)=(-?\d+)", tok)
        if not m:
            raise ExportError(f"plan.shape {label!r}: token {tok!r} is not NAME=INT")
        dims[m.group(1).upper()] = int(m.group(2))
    for k in ("B", "H", "S", "D"):
        if k not in dims:
            raise ExportError(f"plan.shape {label!r}: no {k}=")
        if dims[k] <= 0:
            raise ExportError(f"plan.shape {label!r}: {k} must be positive")
    dims.setdefault("CAUSAL", 0)
    if dims["CAUSAL"] not in (0, 1):
        raise ExportError(f"plan.shape {label!r}: CAUSAL must be 0 or 1")
    dims.setdefault("HKV", dims["H"])
    dims.setdefault("SQ", dims["S"])
    if dims["HKV"] <= 0 or dims["H"] % dims["HKV"]:
        raise ExportError(f"plan.shape {label!r}: HKV (K/V heads) must divide H")
    if not 1 <= dims["SQ"] <= dims["S"]:
        raise ExportError(f"plan.shape {label!r}: SQ (queries) must be 1 to S")
    return dims


def qkv_counts(d):
    """Elements of Q, K, V and O: Q and O [B, H, SQ, D], K and V [B, HKV, S, D]."""
    q, kv = d["B"] * d["H"] * d["SQ"] * d["D"], d["B"] * d["HKV"] * d["S"] * d["D"]
    return {"Q": q, "K": kv, "V": kv, "O": q}


def attn_flops(d):
    """Q K^T and P V: 4 SQ S D a query head; causal (FlashAttention's
    alignment, query i sees keys j <= i + S - SQ): SQ S - SQ^2 / 2 pairs,
    S^2 / 2 at SQ = S (the task's "flops")."""
    return 2.0 * d["B"] * d["H"] * d["SQ"] * d["D"] * (2 * d["S"] - d["CAUSAL"] * d["SQ"])


def attn_bytes(d, elem=2):
    """The bytes a kernel must move at least: Q and O once, K and V once per
    K/V head (the task's "bytes"), 16-bit elements."""
    return float(elem * sum(qkv_counts(d).values()))


def load_export(path):
    """Read and validate one export; return a dict with what the run needs."""
    try:
        with open(path, encoding="utf-8") as f:
            ex = json.load(f)
    except (OSError, ValueError) as e:
        raise ExportError(f"{path}: cannot read JSON: {e}") from None
    if not isinstance(ex, dict):
        raise ExportError(f"{path}: top level is not a JSON object")
    for key in ("source", "plan"):
        if key not in ex:
            raise ExportError(f"{path}: no '{key}' (was it written by `evoeng export ID --format json`?)")
    plan = ex["plan"]
    if not isinstance(plan, dict):
        raise ExportError(f"{path}: 'plan' is not an object")
    if ex.get("status") not in (None, "ok"):
        print(f"warning: {path}: candidate status is {ex.get('status')!r}, not 'ok'", file=sys.stderr)
    try:
        dims = parse_shape(str(plan.get("shape", "")))
    except ExportError as e:
        raise ExportError(f"{path}: {e}") from None
    D = dims["D"]
    counts = qkv_counts(dims)

    bufs = plan.get("buffers")
    if not isinstance(bufs, list) or not bufs:
        raise ExportError(f"{path}: plan.buffers is missing or empty")
    names = {}
    for i, b in enumerate(bufs):
        where = f"{path}: plan.buffers[{i}]"
        if not isinstance(b, dict) or not isinstance(b.get("name"), str):
            raise ExportError(f"{where}: not an object with a 'name'")
        if b.get("dtype") not in TORCH_DTYPES:
            raise ExportError(f"{where} ({b['name']}): dtype {b.get('dtype')!r} not one of {sorted(TORCH_DTYPES)}")
        if not isinstance(b.get("count"), int) or b["count"] < 0:
            raise ExportError(f"{where} ({b['name']}): count {b.get('count')!r} is not a non-negative integer")
        if b.get("role") not in ("input", "output", "scratch"):
            raise ExportError(f"{where} ({b['name']}): role {b.get('role')!r}")
        if b["name"] in names:
            raise ExportError(f"{where}: duplicate buffer name {b['name']!r}")
        names[b["name"]] = b
    roles = {}
    for want, role in (("Q", "input"), ("K", "input"), ("V", "input"), ("O", "output")):
        hit = [n for n in names if n.upper() == want]
        if len(hit) != 1:
            raise ExportError(f"{path}: plan.buffers has no unique buffer named {want} (have {list(names)})")
        b = names[hit[0]]
        shape = "B*H*SQ*D" if want in ("Q", "O") else "B*HKV*S*D"
        if b["dtype"] not in ("f16", "bf16") or b["count"] != counts[want] or b["role"] != role:
            raise ExportError(f"{path}: buffer {b['name']}: expected f16 or bf16 {role} x {counts[want]} ({shape}), "
                              f"got {b['dtype']} {b['role']} x {b['count']}")
        roles[want] = b["name"]

    launches = plan.get("launches")
    if not isinstance(launches, list) or not launches:
        raise ExportError(f"{path}: plan.launches is missing or empty")
    for i, l in enumerate(launches):
        where = f"{path}: plan.launches[{i}]"
        if not isinstance(l, dict) or not isinstance(l.get("entry"), str):
            raise ExportError(f"{where}: not an object with an 'entry'")
        for key in ("grid", "block"):
            v = l.get(key)
            if not (isinstance(v, list) and len(v) == 3 and all(isinstance(x, int) and x > 0 for x in v)):
                raise ExportError(f"{where} ({l['entry']}): {key} {v!r} is not 3 positive integers")
        if not isinstance(l.get("smem", 0), int) or l.get("smem", 0) < 0:
            raise ExportError(f"{where} ({l['entry']}): smem {l.get('smem')!r}")
        args = l.get("args")
        if not isinstance(args, list):
            raise ExportError(f"{where} ({l['entry']}): args is not a list")
        for j, a in enumerate(args):
            if not (isinstance(a, dict) and len(a) == 1 and next(iter(a)) in ARG_KINDS):
                raise ExportError(f"{where} ({l['entry']}): args[{j}] {a!r} is not one of "
                                  f"{{{', '.join(ARG_KINDS)}: value}}")
            kind, val = next(iter(a.items()))
            if kind == "buffer" and val not in names:
                raise ExportError(f"{where} ({l['entry']}): args[{j}] names unknown buffer {val!r}")
            if kind == "tensor_map":
                if not (isinstance(val, dict) and val.get("buffer") in names
                        and all(isinstance(val.get(k), list) for k in ("dims", "strides", "box", "element_strides"))
                        and len(val["dims"]) == len(val["box"]) == len(val["element_strides"]) == len(val["strides"]) + 1
                        and val.get("swizzle") in TMAP_SWIZZLE and val.get("l2_promotion") in TMAP_L2
                        and val.get("oob_fill") in ("zero", "nan")):
                    raise ExportError(f"{where} ({l['entry']}): args[{j}] tensor_map {val!r} is not a resolved map "
                                      "(buffer, dims, strides, box, element_strides, swizzle, l2_promotion, oob_fill)")
            if kind in ("i32", "i64") and not isinstance(val, int):
                raise ExportError(f"{where} ({l['entry']}): args[{j}] {kind} value {val!r} is not an integer")
            if kind in ("f32", "f64") and not isinstance(val, (int, float)):
                raise ExportError(f"{where} ({l['entry']}): args[{j}] {kind} value {val!r} is not a number")

    src = ex["source"]
    if not isinstance(src, str) or "__global__" not in src:
        raise ExportError(f"{path}: 'source' is not CUDA source (no __global__)")
    warnings = []
    for macro in ("D", "CAUSAL"):
        m = re.search(r"^\s*#\s*define\s+%s\s+(\d+)\b" % macro, src, re.M)
        if m and int(m.group(1)) != dims[macro]:
            warnings.append(f"source has #define {macro} {m.group(1)} but plan.shape says {macro}={dims[macro]}")
    want_scale = 1.0 / math.sqrt(D)
    for l in launches:
        for a in l["args"]:
            if "f32" in a and abs(a["f32"] - want_scale) > 1e-6 * want_scale and abs(a["f32"] - want_scale) > 1e-7:
                warnings.append(f"{l['entry']}: f32 argument {a['f32']} is not 1/sqrt(D) = {want_scale:.9g} "
                                "(SDPA uses 1/sqrt(D))")

    flops = plan.get("flops")
    if not isinstance(flops, (int, float)) or flops <= 0:
        flops = attn_flops(dims)
        warnings.append("plan.flops missing: using 2*B*H*SQ*D*(2*S - CAUSAL*SQ)")
    profiles = plan.get("profiles", [])
    if not (isinstance(profiles, list) and all(isinstance(p, dict) and isinstance(p.get("name"), str)
                                               and isinstance(p.get("inputs", {}), dict) for p in profiles)):
        raise ExportError(f"{path}: plan.profiles is not a list of {{name, timing, inputs}}")
    params = ex.get("params") if isinstance(ex.get("params"), dict) else {}
    target = ex.get("target")
    if target is not None and not (isinstance(target, str) and re.fullmatch(r"sm_[0-9]+[af]?", target)):
        raise ExportError(f"{path}: target {target!r} is not an NVRTC target like 'sm_90' or 'sm_90a'")
    return {"path": path, "target": target, "id": ex.get("id"), "run": ex.get("run"), "task": ex.get("task"),
            "export_device": ex.get("device"), "export_arch": ex.get("arch"),
            "export_latency_us": ex.get("latency_us"), "params": params, "dims": dims,
            "flops": float(flops), "bytes": attn_bytes(dims), "source": src, "buffers": bufs, "roles": roles,
            "launches": launches, "profiles": profiles, "warnings": warnings}


def arch_specific(exp):
    """True when the export was compiled for an arch-specific target
    (sm_90a), which CuPy's own compile cannot select."""
    target = exp.get("target")
    return bool(target) and not target[-1].isdigit()


def nvrtc_cubin(source, target, outdir):
    """Compile source with libnvrtc for target (e.g. sm_90a); return the
    path of the cubin written under outdir. Raises RuntimeError with the
    NVRTC log when the compile fails."""
    names = ["libnvrtc.so.13", "libnvrtc.so.12", "libnvrtc.so"]
    names += sorted(glob.glob("/usr/local/cuda/lib64/libnvrtc.so*"), reverse=True)
    lib = None
    for n in names:
        try:
            lib = ctypes.CDLL(n)
            break
        except OSError:
            continue
    if lib is None:
        raise RuntimeError("libnvrtc not found (tried " + ", ".join(names) + ")")
    prog = ctypes.c_void_p()

    def check(rc, call):
        if rc != 0:
            lib.nvrtcGetErrorString.restype = ctypes.c_char_p
            raise RuntimeError(f"{call}: {lib.nvrtcGetErrorString(rc).decode()}")
    check(lib.nvrtcCreateProgram(ctypes.byref(prog), source.encode(), b"export.cu", 0, None, None),
          "nvrtcCreateProgram")
    try:
        opts = [f"--gpu-architecture={target}".encode()] + [o.encode() for o in NVRTC_OPTIONS]
        arr = (ctypes.c_char_p * len(opts))(*opts)
        rc = lib.nvrtcCompileProgram(prog, len(opts), arr)
        size = ctypes.c_size_t()
        lib.nvrtcGetProgramLogSize(prog, ctypes.byref(size))
        log = ctypes.create_string_buffer(size.value + 1)
        lib.nvrtcGetProgramLog(prog, log)
        if rc != 0:
            raise RuntimeError(f"nvrtcCompileProgram ({target}): {log.value.decode(errors='replace')}")
        check(lib.nvrtcGetCUBINSize(prog, ctypes.byref(size)), "nvrtcGetCUBINSize")
        cubin = ctypes.create_string_buffer(size.value)
        check(lib.nvrtcGetCUBIN(prog, cubin), "nvrtcGetCUBIN")
    finally:
        lib.nvrtcDestroyProgram(ctypes.byref(prog))
    digest = hashlib.sha256(source.encode() + target.encode()).hexdigest()[:16]
    path = os.path.join(outdir, f"export-{digest}-{target}.cubin")
    with open(path, "wb") as f:
        f.write(cubin.raw)
    return path

#!/usr/bin/env python3
"""bare_time.py: time an evoeng export from a bare process (libcuda and
libnvrtc through ctypes; no PyTorch, no CuPy), as a cross-check of the
latency evoeng reports.

What it does, mirroring evoeng's timing (src/gpu/bench.c):
  - compiles the export's source with libnvrtc for its target and loads the
    cubin (cuModuleLoadData);
  - fills the plan's input buffers on the GPU with evoeng's own generator
    (evo_fill, compiled from the kernel text in src/gpu/devkern.c and
    gensrc.h, seed 1) under the export's input profile --profile (default:
    its first), in one cuMemAlloc block with 64 KiB guards between buffers;
  - captures graphs of N back-to-back runs of the launch plan (driver API,
    thread-local capture) for every N of --calls (default: N lasting about
    --replay-ms, 0.5 ms like evoeng's samples, and 4N);
  - times each replay held (cuStreamWaitValue32 on a host-mapped word,
    released once the start event, the replay and the end event are
    queued), replays of all lengths shuffled in every round;
  - prints the median per-call time at each N and the slope between the
    shortest and longest graph (the per-call time without a replay's fixed
    cost). The kernel is never launched outside a graph.

Why: in a process that also runs PyTorch/CuPy work (bench/compare_sdpa.py),
the same cubin on the same data was measured 2-3% slower at the seed shape
once other launches had run (docs/results/2026-11-24-timing.md, "A bare
process, and the measuring process's history"); this script is the
reference without that history.

Usage: bare_time.py EXPORT.json [--calls N,M | --replay-ms 0.5] [--rounds 30] [--profile NAME] [--json]
Exit: 0 timed, 1 no driver or a CUDA/NVRTC failure, 2 usage or a bad export.
"""
import argparse
import ctypes
import json
import os
import random
import tempfile
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import sdpa_export as cs  # noqa: E402  (export loading, NVRTC, tensor-map tables)
from sdpa_inputs import (ProfileError, devkern_source, fill_args, profile_inputs,  # noqa: E402,F401
                         profile_names, seed_key, seed_salt)

GUARD = 64 * 1024


class Cuda:
    def __init__(self):
        self.cu = ctypes.CDLL("libcuda.so.1")

    def __call__(self, fn, *args):
        rc = getattr(self.cu, fn)(*args)
        if rc != 0:
            raise RuntimeError(f"{fn}: CUresult {rc}")


def encode_tensor_map(cu, spec, dtype, dptr):
    """A CUtensorMap over device address dptr as the export's tensor_map
    argument spec describes (cuTensorMapEncodeTiled through cu, a Cuda):
    (the buffer that owns it, the address of the 64-byte aligned map)."""
    raw = (ctypes.c_ubyte * 192)()
    tm = (ctypes.c_ubyte * 128).from_buffer(raw, (-ctypes.addressof(raw)) % 64)
    u64, u32 = ctypes.c_uint64 * 5, ctypes.c_uint32 * 5
    cu("cuTensorMapEncodeTiled", ctypes.byref(tm), cs.TMAP_DTYPE[dtype], len(spec["dims"]),
       ctypes.c_void_p(dptr), u64(*spec["dims"]), u64(*spec["strides"]), u32(*spec["box"]),
       u32(*spec["element_strides"]), 0, cs.TMAP_SWIZZLE[spec["swizzle"]], cs.TMAP_L2[spec["l2_promotion"]],
       1 if spec["oob_fill"] == "nan" else 0)
    return raw, ctypes.addressof(tm)


def launch_args(cu, exp, ptr, keep):
    """Per launch of the export's plan: (entry, grid, block, smem, the
    argument array for cuLaunchKernel) with buffers at the device addresses
    in ptr (name -> address); every object the arrays point to is appended
    to keep, which must outlive the launches and graph captures."""
    ctype = {"i32": ctypes.c_int32, "i64": ctypes.c_int64, "f32": ctypes.c_float, "f64": ctypes.c_double}
    out = []
    for l in exp["launches"]:
        ps = []
        for arg in l["args"]:
            kind, val = next(iter(arg.items()))
            if kind == "tensor_map":
                dtype = next(b["dtype"] for b in exp["buffers"] if b["name"] == val["buffer"])
                raw, addr = encode_tensor_map(cu, val, dtype, ptr[val["buffer"]])
                keep.append(raw)
                ps.append(addr)
            else:
                v = ctypes.c_uint64(ptr[val]) if kind == "buffer" else ctype[kind](val)
                keep.append(v)
                ps.append(ctypes.addressof(v))
        arr = (ctypes.c_void_p * max(len(ps), 1))(*ps)
        keep.append(arr)
        out.append((l["entry"], l["grid"], l["block"], l.get("smem", 0), arr))
    return out


def interleave(keys, sample, rounds, seed, warm=3):
    """sample(k) for every key: warm times each, then `rounds` rounds, each
    in a fresh shuffled order (random.Random(seed)); {key: [results]}."""
    for k in keys:
        for _ in range(warm):
            sample(k)
    out = {k: [] for k in keys}
    rng = random.Random(seed)
    for _ in range(rounds):
        order = list(keys)
        rng.shuffle(order)
        for k in order:
            out[k].append(sample(k))
    return out


def hold_word(cu):
    """evoeng's hold: a word of pinned, device-mapped host memory, zeroed:
    (its ctypes uint32, its device address)."""
    hp, hd = ctypes.c_void_p(), ctypes.c_uint64()
    cu("cuMemHostAlloc", ctypes.byref(hp), ctypes.c_size_t(64), 3)   # portable | device-mapped
    cu("cuMemHostGetDevicePointer_v2", ctypes.byref(hd), hp, 0)
    word = ctypes.c_uint32.from_address(hp.value)
    word.value = 0
    return word, hd


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("export")
    ap.add_argument("--calls", default="", help="graph lengths, comma-separated (default: as many calls as "
                    "last --replay-ms, and 4 times that)")
    ap.add_argument("--replay-ms", type=float, default=0.5, help="length of the shorter graph's replay when "
                    "--calls is not given (default 0.5: evoeng's sample length)")
    ap.add_argument("--rounds", type=int, default=30, help="timed replays of each graph (default 30)")
    ap.add_argument("--seed", type=int, default=1, help="input seed (evoeng bench's default: 1)")
    ap.add_argument("--profile", metavar="NAME", help="the input profile to fill the inputs with (default: the "
                    "export's first; an export from before profiles: normal(0, 1))")
    ap.add_argument("--json", action="store_true", help="print one JSON object instead of text")
    a = ap.parse_args(argv)
    try:
        ns = sorted({int(x) for x in a.calls.split(",")}) if a.calls else []
        if a.calls and (not ns or ns[0] < 1 or ns[-1] > 100000):
            raise ValueError
    except ValueError:
        ap.error("--calls: expected positive integers up to 100000, e.g. 32,256")
    if not 0.01 <= a.replay_ms <= 100:
        ap.error("--replay-ms must be between 0.01 and 100")
    if a.rounds < 3:
        ap.error("--rounds must be at least 3")
    try:
        exp = cs.load_export(a.export)
        names = profile_names(exp)
        prof = a.profile or (names[0] if names else None)
        inits = profile_inputs(exp, prof) if prof else {}
    except (cs.ExportError, ProfileError) as e:
        print(f"bare_time: {e}", file=sys.stderr)
        return 2
    V = ctypes.c_void_p
    try:
        cu = Cuda()
        cu("cuInit", 0)
        dev, ctx, s, cap = ctypes.c_int(), V(), V(), V()
        cu("cuDeviceGet", ctypes.byref(dev), 0)
        cu("cuDevicePrimaryCtxRetain", ctypes.byref(ctx), dev)
        cu("cuCtxSetCurrent", ctx)
        cu("cuStreamCreate", ctypes.byref(s), 0)
        cu("cuStreamCreate", ctypes.byref(cap), 0)

        def module(cubin_path, names):
            m = V()
            cu("cuModuleLoadData", ctypes.byref(m), open(cubin_path, "rb").read())
            out = {}
            for n in names:
                f = V()
                cu("cuModuleGetFunction", ctypes.byref(f), m, n.encode())
                out[n] = f
            return out
        outdir = tempfile.mkdtemp(prefix="bare_time-")
        fill = module(cs.nvrtc_cubin(devkern_source(), "sm_90", outdir), ["evo_fill"])["evo_fill"]
        fns = module(cs.nvrtc_cubin(exp["source"], exp.get("target") or "sm_90", outdir),
                     sorted({l["entry"] for l in exp["launches"]}))
        for l in exp["launches"]:
            if l.get("smem", 0) > 48 * 1024:   # CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES
                cu("cuFuncSetAttribute", fns[l["entry"]], 8, l["smem"])

        # buffers: one block, guards around each (evoeng's resident work set)
        off, offs = 0, {}
        for b in exp["buffers"]:
            off += GUARD
            offs[b["name"]] = off
            off += (max(b["count"], 1) * cs.DTYPE_BYTES[b["dtype"]] + 255) // 256 * 256 + GUARD
        blk = ctypes.c_uint64()
        cu("cuMemAlloc_v2", ctypes.byref(blk), ctypes.c_size_t(off))
        ptr = {n: blk.value + o for n, o in offs.items()}
        cu("cuMemsetD8_v2", ctypes.c_uint64(blk.value), 0, ctypes.c_size_t(off))
        keep = []
        for b in exp["buffers"]:
            if b["role"] != "input" or b["count"] == 0:
                continue
            args, arr = fill_args(ptr[b["name"]], b["count"], b["dtype"], inits.get(b["name"], {"dist": "normal"}),
                                  a.seed, b["name"])
            cu("cuLaunchKernel", fill, 256, 1, 1, 256, 1, 1, 0, s, arr, None)
            keep.append((args, arr))
        cu("cuStreamSynchronize", s)

        plan = [(fns[e], g, b, smem, arr) for e, g, b, smem, arr in launch_args(cu, exp, ptr, keep)]

        graphs = {}

        def build(n):
            if n not in graphs:
                cu("cuStreamBeginCapture_v2", cap, 1)   # CU_STREAM_CAPTURE_MODE_THREAD_LOCAL
                for _ in range(n):
                    for f, g, b, smem, arr in plan:
                        cu("cuLaunchKernel", f, g[0], g[1], g[2], b[0], b[1], b[2], smem, cap, arr, None)
                gr, ex = V(), V()
                cu("cuStreamEndCapture", cap, ctypes.byref(gr))
                cu("cuGraphInstantiateWithFlags", ctypes.byref(ex), gr, ctypes.c_ulonglong(0))
                cu("cuGraphDestroy", gr)
                graphs[n] = ex
            return graphs[n]

        word, hd = hold_word(cu)
        e0, e1 = V(), V()
        cu("cuEventCreate", ctypes.byref(e0), 0)
        cu("cuEventCreate", ctypes.byref(e1), 0)
        seq = [0]

        def replay(n):
            seq[0] += 1
            cu("cuStreamWaitValue32_v2", s, hd, ctypes.c_uint32(seq[0]), 0)   # CU_STREAM_WAIT_VALUE_GEQ
            try:
                cu("cuEventRecord", e0, s)
                cu("cuGraphLaunch", graphs[n], s)
                cu("cuEventRecord", e1, s)
            finally:
                word.value = seq[0]
            cu("cuEventSynchronize", e1)
            ms = ctypes.c_float()
            cu("cuEventElapsedTime", ctypes.byref(ms), e0, e1)
            return ms.value * 1000.0
        if not ns:   # as many calls as last --replay-ms (evoeng's sample length), and 4x that
            build(4)
            for _ in range(2):
                replay(4)
            t = min(replay(4) for _ in range(3)) / 4
            n1 = max(1, min(25000, int(-(-a.replay_ms * 1000.0 // t))))
            ns = [n1, 4 * n1]
        for n in ns:
            build(n)
        times = interleave(ns, replay, a.rounds, a.seed)
    except (RuntimeError, OSError) as e:
        print(f"bare_time: {e}", file=sys.stderr)
        return 1
    med = {n: sorted(v)[len(v) // 2] for n, v in times.items()}
    per_call = {n: med[n] / n for n in ns}
    slope = (med[ns[-1]] - med[ns[0]]) / (ns[-1] - ns[0]) if len(ns) > 1 else None
    if a.json:
        print(json.dumps({"export": a.export, "params": exp.get("params"), "per_call_us": per_call,
                          "replay_us": med, "slope_us": slope, "rounds": a.rounds, "seed": a.seed,
                          "profile": prof}))
    else:
        for n in ns:
            print(f"{n:6d} calls: {med[n]:10.2f} us a replay, {per_call[n]:8.3f} us a call")
        if slope is not None:
            print(f"slope {ns[0]}->{ns[-1]}: {slope:.3f} us a call "
                  f"(fixed cost of a replay {med[ns[0]] - ns[0] * slope:.2f} us)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

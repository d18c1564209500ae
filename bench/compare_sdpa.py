#!/usr/bin/env python3
"""compare_sdpa.py -- evoeng's exported attention kernel vs PyTorch SDPA.

Takes one or more `evoeng export ID --format json` files (one per shape:
the plan inside an export is resolved for that run's benchmark shape) and,
in one process on one GPU, runs three contenders on the same Q, K, V:

  evoeng  the exported CUDA source, compiled with CuPy's RawModule (NVRTC)
          and launched exactly as the export's plan says (grid, block,
          dynamic shared memory, arguments), on PyTorch's current stream
  flash   F.scaled_dot_product_attention under SDPBackend.FLASH_ATTENTION
  cudnn   F.scaled_dot_product_attention under SDPBackend.CUDNN_ATTENTION

Correctness: every contender's output is compared with an fp32 reference
(manual softmax(Q K^T / sqrt(D) [+ causal mask]) V on fp32 copies);
elementwise |out - ref| <= atol + rtol * |ref| must hold (NaN fails).
A failing contender is reported FAIL and not timed.

Timing (the method of /work/shared/baselines/sdpa_graph_bench.py, with two
changes): per contender, 3 warm-up calls on a side stream, then one CUDA
graph (torch.cuda.CUDAGraph) of back-to-back calls, 3 warm-up replays.
Each graph is checked once: its output is poisoned with NaN, the graph is
replayed, and the output must pass the correctness check again (this proves
the CuPy launches were captured). Then --replays rounds: in each round
every contender, in a freshly shuffled order, gets one replay timed with
CUDA events. Reported time = median over the replays / the graph's calls.
Change 1, the graph's length: by default each contender's graph holds as
many calls as last about --replay-ms (0.5 ms, the length of evoeng's
samples; from a 10-call probe graph); --calls N fixes the count (the
shared method: 50). A burst of several ms of a heavy kernel trips the
H200's power cap and runs up to 13% slower (bench/burst_study.sh), so
the two tools only agree when they time bursts of the same length.
Change 2, the hold: each timed replay waits on the stream for a word of
device-mapped host memory (cuStreamWaitValue32) that is set only once the
start event, the replay and the end event are queued, as evoeng times
(src/gpu/bench.h), so the host's launch latency (Python, cudaGraphLaunch:
about 9 us a replay on an H200) is not timed. --no-hold queues a GPU
sleep of about --preroll-us (default 100) instead; --no-hold --preroll-us 0
--calls 50 is the shared method unchanged.
--diff times graphs of N and 2N calls per contender and reports
(T(2N) - T(N)) / N: a fixed cost of a replay (4-12 us held on an H200)
cancels, which brings S2048 within 0.1-0.8% of evoeng, but in the rotation
at the seed shape it read 3.6-5.7% above evoeng (bench/README.md).
A contender's figure also depends on the others: in the rotation a kernel
reads 0-2% slower than alone (--only evoeng) on an H200 (bench/README.md).
It also depends on this process's history: at the seed shape on an H200,
evoeng's kernel timed in graphs reads 2-3% slower once it (or FA2 and
cuDNN) has been launched outside a graph, with the same cubin, data and
method (bench/README.md, "Latency agreement"). --graph-only never
launches evoeng's kernel outside a graph (its eager check becomes a
checked replay of a one-call graph); alone, that agrees with evoeng and
with bench/bare_time.py within 0.6%. The SDPA contenders still need eager
warm-up (cuDNN cannot be captured cold), so in the rotation it does not help.
--only NAME[,NAME] times only those contenders (evoeng, flash, cudnn);
the others are reported n/a, "not selected".

A contender that raises (backend unavailable for the shape, compile error,
...) is reported "n/a" with the reason and its traceback; the script goes
on with the rest.

--dry-run parses and validates the exports and prints what would run (no
torch, CuPy or numpy needed); it also exercises the table and --out JSON.

Usage: compare_sdpa.py EXPORT.json [EXPORT2.json ...] [--replays 15]
       [--calls N | --replay-ms 0.5] [--diff] [--out results.json] [--seed 0]
       [--atol 1e-2] [--rtol 1e-2] [--no-hold] [--preroll-us 100]
       [--only evoeng,flash,cudnn] [--warm-replays 0] [--gap-ms 0] [--dry-run]
Exit: 0 all exports processed (contenders may still be n/a or FAIL),
      1 an export could not be processed at all, 2 usage error.
"""
import argparse
import datetime
import hashlib
import ctypes
import json
import math
import os
import platform
import random
import sys
import tempfile
import time
import traceback

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from sdpa_export import (TORCH_DTYPES, TMAP_SWIZZLE, TMAP_L2, TMAP_DTYPE, NVRTC_OPTIONS,  # noqa: E402
                         ExportError, load_export, arch_specific, nvrtc_cubin)
from sdpa_table import CONTENDERS, LABELS, params_short, shape_short, describe, table, json_safe, row_json  # noqa: E402


class NotSelected(Exception):
    """A contender left out by --only."""


class Bench:
    """Holds torch / cupy / numpy modules and the per-process settings."""

    def __init__(self, args):
        import torch  # imported here, so that --dry-run needs none of these
        import torch.nn.functional as F
        from torch.nn.attention import sdpa_kernel, SDPBackend
        import numpy as np
        self.torch, self.F, self.np = torch, F, np
        self.sdpa_kernel, self.SDPBackend = sdpa_kernel, SDPBackend
        self.args = args
        self.cubin_dir = tempfile.mkdtemp(prefix="compare_sdpa-")
        self.cupy = None
        self.cupy_error = None
        try:
            import cupy
            self.cupy = cupy
        except Exception as e:  # evoeng becomes n/a, SDPA still runs
            self.cupy_error = f"import cupy failed: {type(e).__name__}: {e}"
        self.modules = {}

    # -- data
    def alloc(self, exp):
        """Torch tensors for every plan buffer; Q, K, V shaped [B,H,S,D]."""
        torch = self.torch
        d = exp["dims"]
        shape4 = (d["B"], d["H"], d["S"], d["D"])
        t = {}
        for b in exp["buffers"]:
            dt = getattr(torch, TORCH_DTYPES[b["dtype"]])
            n = max(b["count"], 1)
            if b["name"] in (exp["roles"]["Q"], exp["roles"]["K"], exp["roles"]["V"]):
                t[b["name"]] = torch.randn(shape4, device="cuda", dtype=dt)
            elif b["name"] == exp["roles"]["O"]:
                t[b["name"]] = torch.full(shape4, float("nan"), device="cuda", dtype=dt)
            elif b["role"] == "input":
                t[b["name"]] = (torch.randn(n, device="cuda", dtype=dt) if dt.is_floating_point
                                else torch.zeros(n, device="cuda", dtype=dt))
            else:
                t[b["name"]] = torch.zeros(n, device="cuda", dtype=dt)
            assert t[b["name"]].is_contiguous()
        return t

    def reference(self, q, k, v, causal):
        """fp32 softmax(Q K^T / sqrt(D) [+ mask]) V, one batch element at a time."""
        torch = self.torch
        B, H, S, D = q.shape
        out = torch.empty((B, H, S, D), device="cuda", dtype=torch.float32)
        scale = 1.0 / math.sqrt(D)
        mask = None
        if causal:
            mask = torch.ones((S, S), device="cuda", dtype=torch.bool).triu(1)  # j > i hidden
        for b in range(B):
            qf, kf, vf = q[b].float(), k[b].float(), v[b].float()
            s = torch.matmul(qf, kf.transpose(-1, -2)) * scale
            if mask is not None:
                s.masked_fill_(mask, float("-inf"))
            out[b] = torch.matmul(torch.softmax(s, dim=-1), vf)
            del s
        return out

    def check(self, out, ref):
        """(ok, max_abs_err, n_bad) for out vs the fp32 reference."""
        torch = self.torch
        o = out.float()
        diff = (o - ref).abs()
        tol = self.args.atol + self.args.rtol * ref.abs()
        bad = ~(diff <= tol)  # NaN counts as bad
        n_bad = int(bad.sum().item())
        n_nan = int(torch.isnan(o).sum().item())
        mx = float("nan") if n_nan else float(diff.max().item())
        return n_bad == 0, mx, n_bad

    # -- evoeng kernel
    def module(self, exp):
        """The CuPy module of the export's source (compiled once, cached by source)."""
        cupy = self.cupy
        key = hashlib.sha256(exp["source"].encode()).hexdigest()
        if key not in self.modules:
            if arch_specific(exp):
                # An arch-specific target (sm_90a: wgmma): CuPy picks sm_XY
                # itself, so compile here with the same NVRTC and load the cubin.
                mod = cupy.RawModule(path=nvrtc_cubin(exp["source"], exp["target"], self.cubin_dir))
            else:
                mod = cupy.RawModule(code=exp["source"], options=NVRTC_OPTIONS, backend="nvrtc")
                mod.compile()  # compile errors surface here, with the NVRTC log
            self.modules[key] = mod
        return self.modules[key]

    def compile(self, exp):
        """CuPy functions for the plan's entries (the module cached by source)."""
        mod = self.module(exp)
        fns = {}
        for l in exp["launches"]:
            if l["entry"] not in fns:
                fns[l["entry"]] = mod.get_function(l["entry"])
        need = {}
        for l in exp["launches"]:
            need[l["entry"]] = max(need.get(l["entry"], 0), l.get("smem", 0))
        for entry, smem in need.items():
            if smem > 48 * 1024:  # opt in above the 48 KiB default (cuFuncSetAttribute)
                fns[entry].max_dynamic_shared_size_bytes = smem
        return fns

    def driver(self):
        """libcuda through ctypes, for plans with tensor-map arguments (CuPy cannot
        pass a 128-byte struct by value): cuTensorMapEncodeTiled and cuLaunchKernel."""
        import ctypes
        if getattr(self, "_cu", None) is None:
            cu = ctypes.CDLL("libcuda.so.1")
            cu.cuTensorMapEncodeTiled.restype = ctypes.c_int
            cu.cuLaunchKernel.restype = ctypes.c_int
            self._cu = cu
        return self._cu

    def tensor_map(self, spec, tensors, exp):
        """A CUtensorMap (128 bytes, 64-byte aligned host copy) over a plan buffer."""
        import ctypes
        cu = self.driver()
        dtype = next(b["dtype"] for b in exp["buffers"] if b["name"] == spec["buffer"])
        rank = len(spec["dims"])
        raw = (ctypes.c_ubyte * 192)()
        off = (-ctypes.addressof(raw)) % 64
        tmap = (ctypes.c_ubyte * 128).from_buffer(raw, off)
        u64 = ctypes.c_uint64 * 5
        u32 = ctypes.c_uint32 * 5
        rc = cu.cuTensorMapEncodeTiled(
            ctypes.byref(tmap), ctypes.c_int(TMAP_DTYPE[dtype]), ctypes.c_uint32(rank),
            ctypes.c_void_p(tensors[spec["buffer"]].data_ptr()), u64(*spec["dims"]), u64(*spec["strides"]),
            u32(*spec["box"]), u32(*spec["element_strides"]), ctypes.c_int(0),
            ctypes.c_int(TMAP_SWIZZLE[spec["swizzle"]]), ctypes.c_int(TMAP_L2[spec["l2_promotion"]]),
            ctypes.c_int(1 if spec["oob_fill"] == "nan" else 0))
        if rc != 0:
            raise RuntimeError(f"cuTensorMapEncodeTiled({spec['buffer']}): CUresult {rc}")
        return raw, tmap

    def evo_fn(self, exp, fns, tensors):
        """A callable that issues the plan's launches on torch's current stream."""
        np, cupy, torch = self.np, self.cupy, self.torch
        conv = {"i32": np.int32, "i64": np.int64, "f32": np.float32, "f64": np.float64}
        if any("tensor_map" in a for l in exp["launches"] for a in l["args"]):
            return self.evo_fn_driver(exp, fns, tensors)
        prepared = []
        for l in exp["launches"]:
            args = []
            for a in l["args"]:
                kind, val = next(iter(a.items()))
                args.append(np.uint64(tensors[val].data_ptr()) if kind == "buffer" else conv[kind](val))
            prepared.append((fns[l["entry"]], tuple(l["grid"]), tuple(l["block"]), tuple(args), l.get("smem", 0)))
        out = tensors[exp["roles"]["O"]]
        streams = {}
        dev = torch.cuda.current_device()

        def run():
            # Read the stream at call time: inside torch.cuda.graph() it is the capture stream.
            ptr = torch.cuda.current_stream().cuda_stream
            stream = streams.get(ptr)
            if stream is None:
                try:
                    stream = cupy.cuda.ExternalStream(ptr, dev)
                except TypeError:  # a CuPy without the device_id argument
                    stream = cupy.cuda.ExternalStream(ptr)
                streams[ptr] = stream
            for f, grid, block, args, smem in prepared:
                f(grid, block, args, shared_mem=smem, stream=stream)
            return out
        return run

    def evo_fn_driver(self, exp, fns, tensors):
        """evo_fn for plans with tensor-map arguments: every launch goes through
        cuLaunchKernel (ctypes) on torch's current stream, with each argument's
        bytes kept alive here (graph capture copies them)."""
        import ctypes
        cu = self.driver()
        ctype = {"i32": ctypes.c_int32, "i64": ctypes.c_int64, "f32": ctypes.c_float, "f64": ctypes.c_double}
        keep, prepared = [], []
        for l in exp["launches"]:
            ptrs = []
            for a in l["args"]:
                kind, val = next(iter(a.items()))
                if kind == "tensor_map":
                    raw, tmap = self.tensor_map(val, tensors, exp)
                    keep.append(raw)
                    ptrs.append(ctypes.addressof(tmap))
                else:
                    v = (ctypes.c_uint64(tensors[val].data_ptr()) if kind == "buffer" else ctype[kind](val))
                    keep.append(v)
                    ptrs.append(ctypes.addressof(v))
            params = (ctypes.c_void_p * max(len(ptrs), 1))(*ptrs)
            keep.append(params)
            fn = fns[l["entry"]]   # a RawKernel: its CUfunction is .kernel.ptr (a Function: .ptr)
            fptr = getattr(getattr(fn, "kernel", None), "ptr", None) or getattr(fn, "ptr")
            prepared.append((fptr, l["grid"], l["block"], l.get("smem", 0), params))
        out = tensors[exp["roles"]["O"]]
        torch = self.torch

        def run():
            stream = ctypes.c_void_p(torch.cuda.current_stream().cuda_stream)
            for f, g, b, smem, params in prepared:
                rc = cu.cuLaunchKernel(ctypes.c_void_p(f), ctypes.c_uint(g[0]), ctypes.c_uint(g[1]),
                                       ctypes.c_uint(g[2]), ctypes.c_uint(b[0]), ctypes.c_uint(b[1]),
                                       ctypes.c_uint(b[2]), ctypes.c_uint(smem), stream, params, None)
                if rc != 0:
                    raise RuntimeError(f"cuLaunchKernel: CUresult {rc}")
            return out
        run._keep = keep
        return run

    def sdpa_fn(self, backend, q, k, v, causal):
        F, sdpa_kernel = self.F, self.sdpa_kernel

        def run():
            with sdpa_kernel(backend):
                return F.scaled_dot_product_attention(q, k, v, is_causal=bool(causal))
        return run

    # -- timing (method of /work/shared/baselines/sdpa_graph_bench.py)
    def calls_for(self, fn):
        """Calls per graph: --calls, or enough back-to-back calls that one replay
        lasts about --replay-ms (from the best of 3 replays of a 10-call probe graph:
        eager calls would time the host's launches, not the kernel)."""
        torch = self.torch
        if self.args.calls:
            return self.args.calls
        g, _ = self.build_graph(fn, 10, warm=not getattr(fn, "graph_only", False))
        e0 = torch.cuda.Event(enable_timing=True)
        e1 = torch.cuda.Event(enable_timing=True)
        best = math.inf
        for _ in range(3):
            e0.record()
            g.replay()
            e1.record()
            torch.cuda.synchronize()
            best = min(best, e0.elapsed_time(e1) * 1000.0 / 10)
        del g
        return max(1, min(1000, math.ceil(self.args.replay_ms * 1000.0 / best))) if 0 < best < math.inf else 1

    def build_graph(self, fn, calls, warm=True):
        """Warm up on a side stream (warm: eager calls), capture `calls` calls;
        return (graph, output of the last call)."""
        torch = self.torch
        s = torch.cuda.Stream()
        s.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(s):
            for _ in range(3 if warm else 0):
                fn()
        torch.cuda.current_stream().wait_stream(s)
        torch.cuda.synchronize()
        g = torch.cuda.CUDAGraph()
        out = None
        with torch.cuda.graph(g):
            for _ in range(calls):
                out = fn()
        for _ in range(3):
            g.replay()
        torch.cuda.synchronize()
        return g, out

    def hold_open(self):
        """The hold (evoeng's timing method, src/gpu/bench.c): a word of pinned,
        device-mapped host memory that the stream waits on (cuStreamWaitValue32)
        before each timed replay; the host sets it once the start event, the
        replay and the end event are all queued. None where the driver lacks
        stream memory operations (then the pre-roll sleep is used)."""
        if getattr(self, "_hold", False) is not False:
            return self._hold
        self._hold = None
        try:
            cu = self.driver()
            p = ctypes.c_void_p()
            dptr = ctypes.c_uint64()
            if cu.cuMemHostAlloc(ctypes.byref(p), ctypes.c_size_t(64), ctypes.c_uint(0x3)) != 0:
                raise RuntimeError("cuMemHostAlloc failed")
            if cu.cuMemHostGetDevicePointer_v2(ctypes.byref(dptr), p, ctypes.c_uint(0)) != 0:
                raise RuntimeError("cuMemHostGetDevicePointer failed")
            word = ctypes.c_uint32.from_address(p.value)
            word.value = 0
            self._hold = {"cu": cu, "dptr": dptr.value, "word": word, "seq": 0}
        except Exception as e:  # noqa: BLE001 -- any failure: time with the pre-roll instead
            print(f"warning: no timing hold ({type(e).__name__}: {e}); using the {self.args.preroll_us} us pre-roll",
                  flush=True)
        return self._hold

    def time_replay(self, g):
        """One held (or pre-rolled) replay of g timed with CUDA events: its us."""
        torch = self.torch
        e0 = torch.cuda.Event(enable_timing=True)
        e1 = torch.cuda.Event(enable_timing=True)
        for _ in range(self.args.warm_replays):
            g.replay()
        if self.args.gap_ms > 0:
            torch.cuda.synchronize()
            time.sleep(self.args.gap_ms / 1000.0)
        h = self.hold_open() if self.args.hold else None
        if h is not None:
            h["seq"] += 1
            stream = ctypes.c_void_p(torch.cuda.current_stream().cuda_stream)
            rc = h["cu"].cuStreamWaitValue32_v2(stream, ctypes.c_uint64(h["dptr"]), ctypes.c_uint32(h["seq"]),
                                                ctypes.c_uint(0))   # CU_STREAM_WAIT_VALUE_GEQ
            if rc != 0:
                raise RuntimeError(f"cuStreamWaitValue32: CUresult {rc}")
        elif self.args.preroll_us > 0:
            # ~2 GHz at most on the GPUs this runs on: at least preroll_us of GPU time
            torch.cuda._sleep(int(self.args.preroll_us * 2000))
        try:
            e0.record()
            g.replay()
            e1.record()
        finally:
            if h is not None:
                h["word"].value = h["seq"]   # release the stream, whatever happened
        torch.cuda.synchronize()
        return e0.elapsed_time(e1) * 1000.0

    # -- one export
    def run_export(self, exp, rng):
        torch = self.torch
        d = exp["dims"]
        causal = d["CAUSAL"]
        row = {k: exp[k] for k in ("path", "id", "run", "task", "params", "dims", "flops",
                                   "export_device", "export_arch", "export_latency_us", "warnings")}
        row["contenders"] = {}
        print(f"\n=== {exp['path']}: {shape_short(d)} causal={causal}  candidate {exp['id']}  "
              f"{params_short(exp['params'])}", flush=True)
        for w in exp["warnings"]:
            print(f"warning: {w}", flush=True)

        tensors = self.alloc(exp)
        q, k, v = (tensors[exp["roles"][n]] for n in ("Q", "K", "V"))
        ref = self.reference(q, k, v, causal)
        torch.cuda.synchronize()

        fns = {}
        # SDPA backends first: a kernel fault in the evoeng launch would poison the context.
        for name, be in (("flash", self.SDPBackend.FLASH_ATTENTION), ("cudnn", self.SDPBackend.CUDNN_ATTENTION)):
            c = row["contenders"][name] = {"status": "n/a", "us": None, "max_abs_err": None}
            if name not in self.args.only:
                c["reason"] = "not selected (--only)"
                continue
            try:
                fn = self.sdpa_fn(be, q, k, v, causal)
                out = fn()
                torch.cuda.synchronize()
                ok, mx, nbad = self.check(out, ref)
                c["max_abs_err"] = mx
                if not ok:
                    c.update(status="FAIL", reason=f"{nbad} elements out of tolerance, max abs err {mx:.3g}")
                else:
                    c["status"] = "ok"
                    fns[name] = fn
                print(f"{LABELS[name]}: eager check {c['status']}, max abs err {mx:.3e}", flush=True)
            except Exception as e:
                c["reason"] = f"{type(e).__name__}: {str(e).strip().splitlines()[0] if str(e).strip() else ''}"[:300]
                print(f"{LABELS[name]}: n/a: {c['reason']}", flush=True)
                traceback.print_exc()

        c = row["contenders"]["evoeng"] = {"status": "n/a", "us": None, "max_abs_err": None}
        try:
            if "evoeng" not in self.args.only:
                c["reason"] = "not selected (--only)"
                raise NotSelected()
            if self.cupy is None:
                raise RuntimeError(self.cupy_error)
            kfns = self.compile(exp)
            fn = self.evo_fn(exp, kfns, tensors)
            out = tensors[exp["roles"]["O"]]
            out.fill_(float("nan"))
            if self.args.graph_only:
                # never launched outside a graph: checked on a one-call graph's replay
                fn.graph_only = True
                g1, _ = self.build_graph(fn, 1, warm=False)
                g1.replay()
                del g1
            else:
                fn()
            torch.cuda.synchronize()
            ok, mx, nbad = self.check(out, ref)
            c["max_abs_err"] = mx
            if not ok:
                c.update(status="FAIL", reason=f"{nbad} elements out of tolerance, max abs err {mx:.3g}")
            else:
                c["status"] = "ok"
                fns["evoeng"] = fn
            print(f"evoeng: eager check {c['status']}, max abs err {mx:.3e}", flush=True)
        except NotSelected:
            pass
        except Exception as e:
            msg = str(e).strip()
            c["reason"] = f"{type(e).__name__}: {msg.splitlines()[0] if msg else ''}"[:300]
            print(f"evoeng: n/a: {type(e).__name__}: {msg}", flush=True)  # full NVRTC log, if any
            traceback.print_exc()
            if "illegal" in msg.lower() or "launch failure" in msg.lower():
                print("evoeng: a kernel fault leaves the CUDA context unusable: later exports will fail; "
                      "rerun them without this one", flush=True)

        # Graphs: capture, then prove each replay writes a correct output.
        graphs = {}
        for name in CONTENDERS:
            if name not in fns:
                continue
            c = row["contenders"][name]
            try:
                calls = self.calls_for(fns[name])
                lengths = (calls, 2 * calls) if self.args.diff else (calls,)
                built = []
                for n in lengths:
                    g, out = self.build_graph(fns[name], n, warm=not getattr(fns[name], "graph_only", False))
                    out.fill_(float("nan"))
                    torch.cuda.synchronize()
                    g.replay()
                    torch.cuda.synchronize()
                    ok, mx, nbad = self.check(out, ref)
                    if not ok:
                        break
                    built.append((g, n))
                if len(built) < len(lengths):
                    c.update(status="FAIL", reason=f"graph replay output wrong ({nbad} bad elements, max abs err "
                                                   f"{mx:.3g}): the launches were not captured?")
                    print(f"{LABELS[name]}: graph check FAIL: {c['reason']}", flush=True)
                    continue
                graphs[name] = built
                c["calls"] = calls
                print(f"{LABELS[name]}: graph{'s' if len(built) > 1 else ''} of "
                      f"{' and '.join(str(n) for n in lengths)} calls captured, replay check ok", flush=True)
            except Exception as e:
                msg = str(e).strip()
                c.update(status="n/a", reason=f"graph capture: {type(e).__name__}: "
                                              f"{msg.splitlines()[0] if msg else ''}"[:300])
                print(f"{LABELS[name]}: n/a: {c['reason']}", flush=True)
                traceback.print_exc()
                try:
                    torch.cuda.synchronize()
                except Exception:
                    pass

        # Alternating timed replays: T(N) / N; with --diff every round times
        # each contender's graphs of N and 2N calls back to back (in a random
        # order) and takes (T(2N) - T(N)) / N, so a fixed cost of a replay (its
        # launch: 4-12 us held on an H200) cancels.
        times = {name: [] for name in graphs}
        overhead = {name: [] for name in graphs}
        if graphs:
            try:
                stream = torch.cuda.Stream() if self.args.side_stream else torch.cuda.current_stream()
                stream.wait_stream(torch.cuda.current_stream())
                with torch.cuda.stream(stream):
                    for _ in range(self.args.replays):
                        order = list(graphs)
                        rng.shuffle(order)
                        for name in order:
                            built = list(graphs[name])
                            rng.shuffle(built)
                            t = {n: self.time_replay(g) for g, n in built}
                            n1 = min(t)
                            if len(t) > 1:
                                times[name].append((t[2 * n1] - t[n1]) / n1)
                                overhead[name].append(2 * t[n1] - t[2 * n1])
                            else:
                                times[name].append(t[n1] / n1)
                torch.cuda.current_stream().wait_stream(stream)
            except Exception as e:
                print(f"timing failed: {type(e).__name__}: {e}", flush=True)
                traceback.print_exc()
        for name, ts in times.items():
            c = row["contenders"][name]
            if len(ts) < self.args.replays:
                c.update(status="n/a", us=None, reason=f"timing stopped after {len(ts)} replays")
                continue
            s = sorted(ts)
            c.update(us=s[len(s) // 2], min_us=s[0], max_us=s[-1], times_us=ts)
            how = f"{c['calls']} calls"
            if overhead[name]:
                o = sorted(overhead[name])
                c["replay_overhead_us"] = o[len(o) // 2]
                how = f"2 x {c['calls']} minus {c['calls']} calls; a replay's fixed cost {o[len(o) // 2]:.1f} us"
            print(f"{LABELS[name]}: {c['us']:.2f} us/call (median of {len(ts)} rounds, {how}; "
                  f"min {s[0]:.2f}, max {s[-1]:.2f})", flush=True)
        del graphs, tensors, ref, fns
        torch.cuda.synchronize()
        torch.cuda.empty_cache()
        return row


# ---------------------------------------------------------------- main

def main(argv):
    ap = argparse.ArgumentParser(description="evoeng's exported attention kernel vs PyTorch SDPA "
                                             "(FA2 and cuDNN backends), same process, same timing method.")
    ap.add_argument("exports", nargs="+", metavar="EXPORT.json",
                    help="files from `evoeng export ID --format json`, one per shape")
    ap.add_argument("--replays", type=int, default=15, help="timed graph replays per contender (default 15)")
    ap.add_argument("--calls", type=int, default=None,
                    help="calls captured in one graph (default: as many as fill --replay-ms; "
                         "50 is the shared baseline method)")
    ap.add_argument("--replay-ms", type=float, default=0.5, metavar="MS",
                    help="without --calls: size each contender's graph so that one replay lasts about MS ms "
                         "(default 0.5, the length of evoeng's timing samples)")
    ap.add_argument("--diff", action="store_true",
                    help="time graphs of N and 2N calls per contender and report (T(2N) - T(N)) / N, which "
                         "cancels a replay's fixed cost (closer to evoeng at large shapes, noisier in the "
                         "rotation at small ones: bench/README.md)")
    ap.add_argument("--graph-only", action="store_true",
                    help="never launch evoeng's kernel outside a CUDA graph (no eager check or warm-up calls: "
                         "its output is checked on graph replays; the SDPA contenders need eager warm-up)")
    ap.add_argument("--side-stream", action="store_true",
                    help="replay the timed graphs on a stream of their own instead of PyTorch's default stream")
    ap.add_argument("--no-hold", dest="hold", action="store_false",
                    help="time behind the --preroll-us sleep instead of evoeng's hold (a stream wait on a "
                         "host-mapped word, released once the replay is queued)")
    ap.add_argument("--out", metavar="FILE", help="write all numbers as JSON here")
    ap.add_argument("--seed", type=int, default=0, help="seed for inputs and the replay order (default 0)")
    ap.add_argument("--atol", type=float, default=1e-2, help="absolute tolerance (default 1e-2)")
    ap.add_argument("--rtol", type=float, default=1e-2, help="relative tolerance (default 1e-2)")
    ap.add_argument("--preroll-us", type=float, default=100, metavar="US",
                    help="with --no-hold (or where the hold is not available): GPU sleep of about US us "
                         "queued before each timed replay, so the host's launch latency is not timed "
                         "(default 100; 0: the shared baseline method unchanged)")
    ap.add_argument("--warm-replays", type=int, default=0, metavar="N",
                    help="untimed replays of the same graph right before each timed one (default 0)")
    ap.add_argument("--gap-ms", type=float, default=0, metavar="MS",
                    help="idle pause before each timed replay (default 0)")
    ap.add_argument("--only", default=",".join(CONTENDERS), metavar="NAME[,NAME]",
                    help="contenders to run: evoeng, flash, cudnn (default all)")
    ap.add_argument("--dry-run", action="store_true",
                    help="parse and validate the exports, print the plan; no GPU, torch or CuPy needed")
    args = ap.parse_args(argv)
    if args.replays < 1 or (args.calls is not None and args.calls < 1):
        ap.error("--replays and --calls must be at least 1")
    if not 0.01 <= args.replay_ms <= 1000:
        ap.error("--replay-ms must be between 0.01 and 1000")
    if args.atol < 0 or args.rtol < 0:
        ap.error("--atol and --rtol must not be negative")
    if args.preroll_us < 0 or args.preroll_us > 1e5:
        ap.error("--preroll-us must be between 0 and 100000")
    args.only = [n.strip() for n in args.only.split(",") if n.strip()]
    bad = [n for n in args.only if n not in CONTENDERS]
    if bad or not args.only:
        ap.error("--only: unknown contender %s (expected some of %s)" % (", ".join(bad) or "(none)", ", ".join(CONTENDERS)))

    exports, failed = [], 0
    for p in args.exports:
        try:
            exports.append(load_export(p))
        except ExportError as e:
            print(f"error: {e}", file=sys.stderr)
            failed += 1

    meta = {"date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
            "host": platform.node(), "python": platform.python_version(),
            "replays": args.replays, "calls": args.calls, "replay_ms": args.replay_ms, "seed": args.seed,
            "hold": args.hold, "diff": args.diff, "side_stream": args.side_stream, "graph_only": args.graph_only, "preroll_us": args.preroll_us, "only": args.only,
            "atol": args.atol, "rtol": args.rtol,
            "method": "CUDA graph per contender of `calls` back-to-back calls (null: as many as last about "
                      "`replay_ms`; each contender's count is in its `calls`); each timed replay is held "
                      "(`hold`: a stream wait on a host-mapped word released once the replay is queued; "
                      "else a GPU sleep of `preroll_us`), so the host's launch latency is untimed; "
                      "contenders alternate in a shuffled order each round, one event-timed replay each; "
                      "median over `replays` / calls"}
    rows = []
    if args.dry_run:
        meta["dry_run"] = True
        for exp in exports:
            print(describe(exp))
            print()
            row = {k: exp[k] for k in ("path", "id", "run", "task", "params", "dims", "flops",
                                       "export_device", "export_arch", "export_latency_us", "warnings")}
            row["contenders"] = {n: {"status": "n/a", "us": None, "max_abs_err": None, "reason": "dry run"}
                                 for n in CONTENDERS}
            rows.append(row)
    else:
        try:
            bench = Bench(args)
        except Exception as e:
            print(f"error: cannot set up torch/numpy: {type(e).__name__}: {e}", file=sys.stderr)
            return 1
        torch = bench.torch
        if not torch.cuda.is_available():
            print("error: torch.cuda.is_available() is False: no GPU here (use --dry-run to check exports)",
                  file=sys.stderr)
            return 1
        cc = torch.cuda.get_device_capability()
        meta.update(gpu=torch.cuda.get_device_name(), sm=f"sm_{cc[0]}{cc[1]}", torch=torch.__version__,
                    cuda=torch.version.cuda, cudnn=torch.backends.cudnn.version(),
                    cupy=getattr(bench.cupy, "__version__", None), cupy_error=bench.cupy_error)
        print(f"{meta['gpu']} ({meta['sm']}), torch {meta['torch']} (CUDA {meta['cuda']}, cuDNN {meta['cudnn']}), "
              f"cupy {meta['cupy']}", flush=True)
        if bench.cupy_error:
            print(f"warning: {bench.cupy_error}: evoeng will be n/a", flush=True)
        torch.manual_seed(args.seed)
        rng = random.Random(args.seed)
        for exp in exports:
            if exp["export_arch"] and exp["export_arch"] != meta["sm"]:
                exp["warnings"].append(f"exported for {exp['export_arch']}, running on {meta['sm']}")
            try:
                rows.append(bench.run_export(exp, rng))
            except Exception as e:
                print(f"error: {exp['path']}: {type(e).__name__}: {e}", flush=True)
                traceback.print_exc()
                failed += 1

    print()
    if rows:
        print(table(rows))
    if args.out:
        try:
            with open(args.out, "w", encoding="utf-8") as f:
                json.dump({"meta": json_safe(meta), "results": [row_json(r) for r in rows]}, f, indent=2,
                          allow_nan=False)
                f.write("\n")
            print(f"wrote {args.out}")
        except OSError as e:
            print(f"error: {args.out}: {e}", file=sys.stderr)
            return 1
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

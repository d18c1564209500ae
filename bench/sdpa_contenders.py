#!/usr/bin/env python3
"""sdpa_contenders.py -- compare_sdpa.py's contenders and their data: the
inputs (torch.randn, or an input profile of the task made by evoeng's own
generator, bench/sdpa_inputs.py), the fp32 reference and the tolerance
check, evoeng's exported kernel (compiled with CuPy's NVRTC, or for an
arch-specific target with libnvrtc, and launched as the export's plan says,
through CuPy or the driver when it passes tensor maps) and PyTorch SDPA
under its FlashAttention-2 and cuDNN backends, and flash_attn's decoding
function (flash_attn_with_kvcache) where that package is installed.
Grouped-query shapes (HKV < H) run SDPA with enable_gqa=True where the
installed torch has it, else with K and V expanded to H heads beforehand
(untimed; `gqa_how` says which); SQ < S causal takes FlashAttention's
alignment (query i sees keys j <= i + S - SQ): SDPA through
causal_lower_right, flash_attn natively. Each contender is a callable
that issues its launches on torch's current stream (so CUDA graphs capture
it). Timing is in sdpa_timing.py, the table in sdpa_table.py."""

import ctypes
import hashlib
import math
import tempfile

from sdpa_export import TORCH_DTYPES, TMAP_SWIZZLE, TMAP_L2, TMAP_DTYPE, NVRTC_OPTIONS, arch_specific, nvrtc_cubin
from sdpa_inputs import devkern_source, fill_args, profile_inputs


class NotSelected(Exception):
    """A contender left out by --only."""


class Contenders:
    """Holds torch / cupy / numpy modules, the compiled modules and the
    per-process settings (args: --atol, --rtol)."""

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
        # SDPA's grouped-query heads: enable_gqa (torch >= 2.5), else K/V expanded
        self.gqa_native = "enable_gqa" in (F.scaled_dot_product_attention.__doc__ or "")
        self.flash_kv, self.flash_kv_error = None, None
        for mod in ("flash_attn_interface", "flash_attn"):   # FlashAttention-3 (hopper/), then 2
            try:
                m = __import__(mod)
                self.flash_kv, self.flash_kv_name = m.flash_attn_with_kvcache, mod
                break
            except Exception as e:
                self.flash_kv_error = f"import {mod} failed: {type(e).__name__}: {e}"

    # -- data
    def alloc(self, exp, profile=None, seed=1):
        """Torch tensors for every plan buffer; Q and O shaped [B,H,SQ,D], K
        and V [B,HKV,S,D]. The
        inputs are torch.randn, or with a profile the export's generators of
        that profile, made by evoeng's own kernel from `seed` (fill_profile)."""
        torch = self.torch
        d = exp["dims"]
        shape_q = (d["B"], d["H"], d["SQ"], d["D"])
        shape_kv = (d["B"], d["HKV"], d["S"], d["D"])
        t = {}
        for b in exp["buffers"]:
            dt = getattr(torch, TORCH_DTYPES[b["dtype"]])
            n = max(b["count"], 1)
            if b["name"] in (exp["roles"]["Q"], exp["roles"]["K"], exp["roles"]["V"]):
                shape4 = shape_q if b["name"] == exp["roles"]["Q"] else shape_kv
                t[b["name"]] = (torch.empty(shape4, device="cuda", dtype=dt) if profile
                                else torch.randn(shape4, device="cuda", dtype=dt))
            elif b["name"] == exp["roles"]["O"]:
                t[b["name"]] = torch.full(shape_q, float("nan"), device="cuda", dtype=dt)
            elif b["role"] == "input":
                t[b["name"]] = (torch.randn(n, device="cuda", dtype=dt) if dt.is_floating_point
                                else torch.zeros(n, device="cuda", dtype=dt))
            else:
                t[b["name"]] = torch.zeros(n, device="cuda", dtype=dt)
            assert t[b["name"]].is_contiguous()
        if profile:
            self.fill_profile(exp, t, profile, seed)
        return t

    def fill_profile(self, exp, tensors, profile, seed):
        """Fill every input of the export with evoeng's generator for
        (profile, seed): evo_fill compiled from the source tree (sdpa_inputs),
        launched through the driver on torch's stream, so the inputs are the
        bytes evoeng gates and times. Without CuPy (no NVRTC module loader
        here) the same distributions are drawn with torch instead."""
        inits = profile_inputs(exp, profile)
        inputs = [b for b in exp["buffers"] if b["role"] == "input" and b["count"] > 0]
        if self.cupy is None:
            self.inputs_how = "torch draws of the profile's distributions (no CuPy for evo_fill)"
            for b in inputs:
                self.draw_torch(tensors[b["name"]], inits.get(b["name"], {"dist": "normal"}))
            return
        self.inputs_how = f"evoeng's evo_fill, seed {seed}"
        if getattr(self, "_fill", None) is None:
            mod = self.cupy.RawModule(code=devkern_source(), options=NVRTC_OPTIONS, backend="nvrtc")
            fn = mod.get_function("evo_fill")
            self._fill = (mod, getattr(getattr(fn, "kernel", None), "ptr", None) or getattr(fn, "ptr"))
        cu = self.driver()
        stream = ctypes.c_void_p(self.torch.cuda.current_stream().cuda_stream)
        for b in inputs:
            args, arr = fill_args(tensors[b["name"]].data_ptr(), b["count"], b["dtype"],
                                  inits.get(b["name"], {"dist": "normal"}), seed, b["name"])
            rc = cu.cuLaunchKernel(ctypes.c_void_p(self._fill[1]), ctypes.c_uint(256), ctypes.c_uint(1),
                                   ctypes.c_uint(1), ctypes.c_uint(256), ctypes.c_uint(1), ctypes.c_uint(1),
                                   ctypes.c_uint(0), stream, arr, None)
            if rc != 0:
                raise RuntimeError(f"cuLaunchKernel(evo_fill, {b['name']}): CUresult {rc}")
            self.torch.cuda.synchronize()   # args live until the kernel has read them

    def draw_torch(self, t, init):
        """t filled with torch draws of an export's init (the distribution,
        not evoeng's bytes)."""
        torch, flat = self.torch, t.view(-1)
        dist = init.get("dist", "normal")
        if dist == "uniform":
            x = torch.rand(flat.shape, device="cuda") * (init["high"] - init["low"]) + init["low"]
        elif dist in ("zero", "const"):
            x = torch.full(flat.shape, float(init.get("value", 0.0)), device="cuda")
        else:
            x = torch.randn(flat.shape, device="cuda") * init.get("std", 1.0) + init.get("mean", 0.0)
            if dist == "outlier":
                hit = torch.rand(flat.shape, device="cuda") < init["p"]
                x += hit * torch.randn(flat.shape, device="cuda") * init["outlier_std"]
        rs = init.get("row_scale")
        if rs:
            rows = x.view(-1, int(rs["row_len"]))
            f = (torch.rand(rows.shape[0], device="cuda") * (rs["high"] - rs["low"]) + rs["low"]
                 if rs["dist"] == "uniform" else torch.exp(torch.randn(rows.shape[0], device="cuda") * rs["std"]
                                                           + rs["mean"]))
            rows *= f[:, None]
        flat.copy_(x)

    def reference(self, q, k, v, causal):
        """fp32 softmax(Q K^T / sqrt(D) [+ mask]) V, one batch element at a
        time; query head h reads K/V head h // (H // HKV); causal: query i
        (of SQ) sees keys j <= i + S - SQ."""
        torch = self.torch
        B, H, SQ, D = q.shape
        HKV, S = k.shape[1], k.shape[2]
        out = torch.empty((B, H, SQ, D), device="cuda", dtype=torch.float32)
        scale = 1.0 / math.sqrt(D)
        mask = None
        if causal:
            mask = torch.ones((SQ, S), device="cuda", dtype=torch.bool).triu(S - SQ + 1)  # j > i + S - SQ hidden
        for b in range(B):
            qf, kf, vf = q[b].float(), k[b].float(), v[b].float()
            if HKV != H:
                kf, vf = kf.repeat_interleave(H // HKV, dim=0), vf.repeat_interleave(H // HKV, dim=0)
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
        if getattr(self, "_cu", None) is None:
            cu = ctypes.CDLL("libcuda.so.1")
            cu.cuTensorMapEncodeTiled.restype = ctypes.c_int
            cu.cuLaunchKernel.restype = ctypes.c_int
            self._cu = cu
        return self._cu

    def tensor_map(self, spec, tensors, exp):
        """A CUtensorMap (128 bytes, 64-byte aligned host copy) over a plan buffer."""
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

    def gqa_how(self, q, k):
        """How SDPA gets grouped-query heads: '' (HKV = H), 'enable_gqa=True'
        or 'K/V expanded' (a torch without enable_gqa)."""
        if q.shape[1] == k.shape[1]:
            return ""
        return "enable_gqa=True" if self.gqa_native else "K/V expanded"

    def sdpa_fn(self, backend, q, k, v, causal):
        """SDPA under backend. Causal at SQ = S: is_causal (top-left and
        bottom-right agree); SQ = 1: no mask (the last query sees every
        key); else causal_lower_right(SQ, S), FlashAttention's alignment."""
        F, sdpa_kernel = self.F, self.sdpa_kernel
        SQ, S = q.shape[2], k.shape[2]
        kw = {}
        if causal and SQ == S:
            kw["is_causal"] = True
        elif causal and SQ > 1:
            from torch.nn.attention.bias import causal_lower_right
            kw["attn_mask"] = causal_lower_right(SQ, S)
        how = self.gqa_how(q, k)
        if how == "enable_gqa=True":
            kw["enable_gqa"] = True
        elif how:
            g = q.shape[1] // k.shape[1]
            k, v = k.repeat_interleave(g, dim=1), v.repeat_interleave(g, dim=1)

        def run():
            with sdpa_kernel(backend):
                return F.scaled_dot_product_attention(q, k, v, **kw)
        return run

    def flash_kv_fn(self, q, k, v, causal):
        """flash_attn_with_kvcache on [B, SQ, H, D] / [B, S, HKV, D] copies
        (made here, untimed), its output seen as [B, H, SQ, D]; grouped
        heads and the causal alignment at the end are its own."""
        if self.flash_kv is None:
            raise RuntimeError(self.flash_kv_error or "flash_attn not installed")
        qt, kt, vt = (x.transpose(1, 2).contiguous() for x in (q, k, v))
        fn = self.flash_kv

        def run():
            out = fn(qt, kt, vt, causal=bool(causal))
            out = out[0] if isinstance(out, tuple) else out
            return out.transpose(1, 2)
        return run

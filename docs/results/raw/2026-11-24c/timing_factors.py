#!/usr/bin/env python3
"""Which difference between evoeng's timing and compare_sdpa's moves the
figure? Times one export's launch plan with every combination of:
  alloc:  torch  (torch tensors, as compare_sdpa)   | block (one cuMemAlloc block,
          buffers 256-aligned after 64 KiB guards, as evoeng's resident work set)
  stream: legacy (torch's current stream, as compare_sdpa) | own (cuStreamCreate, as evoeng)
  graph:  torch  (torch.cuda.graph capture, g.replay()) | driver (cuStreamBeginCapture,
          cuGraphLaunch, as evoeng)
  module: cupy   (compare_sdpa's compile/load)           | nvrtc  (nvrtc_cubin + cuModuleLoadData)
Every sample is held like evoeng's (cuStreamWaitValue32 on a host-mapped word),
combinations interleaved in random order each round. Prints medians.
Usage: timing_factors.py EXPORT.json [--rounds 40] [--replay-ms 0.5]
"""
import argparse
import ctypes
import itertools
import math
import os
import random
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "bench"))
import compare_sdpa as cs  # noqa: E402

GUARD = 64 * 1024


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("export")
    ap.add_argument("--rounds", type=int, default=40)
    ap.add_argument("--replay-ms", type=float, default=0.5)
    ap.add_argument("--calls", type=int, default=0)
    a = ap.parse_args()
    import torch
    import cupy
    exp = cs.load_export(a.export)
    torch.zeros(1, device="cuda")
    torch.cuda.synchronize()
    cu = ctypes.CDLL("libcuda.so.1")
    V = ctypes.c_void_p

    def ck(rc, what):
        if rc != 0:
            raise RuntimeError(f"{what}: CUresult {rc}")

    # ---- data: torch tensors (compare_sdpa's alloc), then a copy in one block
    d = exp["dims"]
    shape4 = (d["B"], d["H"], d["S"], d["D"])
    tens = {}
    torch.manual_seed(0)
    for b in exp["buffers"]:
        dt = getattr(torch, cs.TORCH_DTYPES[b["dtype"]])
        n = max(b["count"], 1)
        if b["name"] in (exp["roles"]["Q"], exp["roles"]["K"], exp["roles"]["V"]):
            tens[b["name"]] = torch.randn(shape4, device="cuda", dtype=dt)
        else:
            tens[b["name"]] = torch.zeros(n, device="cuda", dtype=dt)
    # data levels, each in its own evoeng-like block
    import bare_time   # the generator keys, tensor maps and the hold word (bench/bare_time.py)
    from bare_time import seed_key, seed_salt as salt
    bcu = bare_time.Cuda()
    import re
    src = open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "src", "gpu", "devkern.c")).read()
    body = src[src.index("kernel_src[] ="):]
    body = body[:body.index(";\n")]
    lits = re.findall(r'"((?:[^"\\]|\\.)*)"', body)
    ksrc = "".join(bytes(x, "utf-8").decode("unicode_escape") for x in lits)
    fill = cupy.RawModule(code=ksrc, backend="nvrtc").get_function("evo_fill")
    qkv = (exp["roles"]["Q"], exp["roles"]["K"], exp["roles"]["V"])
    ptrs = {"torch": {n: t.data_ptr() for n, t in tens.items()}}
    for level in ("randn", "evoeng", "zeros", "unif"):
        off, offs = 0, {}
        for b in exp["buffers"]:
            off += GUARD
            offs[b["name"]] = off
            off += (tens[b["name"]].numel() * tens[b["name"]].element_size() + 255) // 256 * 256 + GUARD
        blk = ctypes.c_uint64()
        ck(cu.cuMemAlloc_v2(ctypes.byref(blk), ctypes.c_size_t(off)), "cuMemAlloc")
        pl = ptrs["block" if level == "randn" else "block_" + level] = {n: blk.value + o for n, o in offs.items()}
        for b in exp["buffers"]:
            n = b["name"]
            t = tens[n]
            nb = t.numel() * t.element_size()
            if level == "evoeng" and n in qkv:
                fill((256,), (256,), (cupy.uint64(pl[n]), cupy.uint64(t.numel()), cupy.int32(0), cupy.int32(0),
                                      cupy.float64(0.0), cupy.float64(1.0), cupy.uint64(seed_key(1, salt(n)))))
                continue
            if level == "zeros" or n not in qkv:
                src_t = torch.zeros_like(t)
            elif level == "unif":
                src_t = (torch.rand_like(t) * 2 - 1)
            else:
                src_t = t
            ck(cu.cuMemcpyDtoD_v2(ctypes.c_uint64(pl[n]), ctypes.c_uint64(src_t.data_ptr()), ctypes.c_size_t(nb)),
               "cuMemcpyDtoD")
            torch.cuda.synchronize()
    cupy.cuda.runtime.deviceSynchronize()
    torch.cuda.synchronize()
    # evoeng-filled Q: its moments
    qe = torch.empty_like(tens[qkv[0]])
    ck(cu.cuMemcpyDtoD_v2(ctypes.c_uint64(qe.data_ptr()), ctypes.c_uint64(ptrs["block_evoeng"][qkv[0]]),
                          ctypes.c_size_t(qe.numel() * 2)), "cuMemcpyDtoD")
    torch.cuda.synchronize()
    print(f"evoeng Q: mean {qe.float().mean().item():.4f} std {qe.float().std().item():.4f}; "
          f"torch Q: mean {tens[qkv[0]].float().mean().item():.4f} std {tens[qkv[0]].float().std().item():.4f}")

    # ---- modules
    target = exp.get("target") or "sm_90"
    cubin = cs.nvrtc_cubin(exp["source"], target, "/tmp")
    mods = {}
    if os.environ.get("EVO_CUBIN"):
        print("module nvrtc loaded from", os.environ["EVO_CUBIN"])
        cubin = os.environ["EVO_CUBIN"]
    print("cubin", cubin)
    data = open(cubin, "rb").read()
    m = V()
    ck(cu.cuModuleLoadData(ctypes.byref(m), data), "cuModuleLoadData")
    mods["nvrtc"] = m
    if cs.arch_specific(exp):
        cmod = cupy.RawModule(path=cubin)
    else:
        cmod = cupy.RawModule(code=exp["source"], options=cs.NVRTC_OPTIONS, backend="nvrtc")
        cmod.compile()
    funcs = {"nvrtc": {}, "cupy": {}}
    for l in exp["launches"]:
        e = l["entry"]
        f = V()
        ck(cu.cuModuleGetFunction(ctypes.byref(f), mods["nvrtc"], e.encode()), "cuModuleGetFunction")
        funcs["nvrtc"][e] = f.value
        fn = cmod.get_function(e)
        fp = getattr(getattr(fn, "kernel", None), "ptr", None) or getattr(fn, "ptr")
        funcs["cupy"][e] = fp
        smem = l.get("smem", 0)
        if smem > 48 * 1024:
            for k in funcs:
                ck(cu.cuFuncSetAttribute(V(funcs[k][e]), ctypes.c_int(8), ctypes.c_int(smem)), "cuFuncSetAttribute")
    if os.environ.get("CARVEOUT"):
        for k in funcs:
            for e, fp in funcs[k].items():
                ck(cu.cuFuncSetAttribute(V(fp), ctypes.c_int(9), ctypes.c_int(int(os.environ["CARVEOUT"]))), "carveout")
    for k in funcs:
        for e, fp in funcs[k].items():
            nreg = ctypes.c_int()
            cu.cuFuncGetAttribute(ctypes.byref(nreg), ctypes.c_int(4), V(fp))
            print(f"module {k}: {e} registers {nreg.value}")

    # ---- launch argument blocks per alloc
    keep = []

    def params_for(alloc):
        return bare_time.launch_args(bcu, exp, ptrs[alloc], keep)
    params = {al: params_for(al) for al in ptrs}

    def launch_all(module, alloc, stream):
        for e, g, b, smem, arr in params[alloc]:
            ck(cu.cuLaunchKernel(V(funcs[module][e]), g[0], g[1], g[2], b[0], b[1], b[2], ctypes.c_uint(smem),
                                 V(stream), arr, None), "cuLaunchKernel")


    def sweep(where):
        ns = [int(x) for x in os.environ["CALLS_LIST"].split(",")]
        st, cp = V(), V()
        ck(cu.cuStreamCreate(ctypes.byref(st), 0), "cuStreamCreate")
        ck(cu.cuStreamCreate(ctypes.byref(cp), 0), "cuStreamCreate")
        w_, hd_ = bare_time.hold_word(bcu)
        a0, a1 = V(), V()
        cu.cuEventCreate(ctypes.byref(a0), 0)
        cu.cuEventCreate(ctypes.byref(a1), 0)
        exn = {}
        for n in ns:
            gr = V()
            ck(cu.cuStreamBeginCapture_v2(cp, ctypes.c_int(1)), "cuStreamBeginCapture")
            for _ in range(n):
                launch_all(os.environ.get("SWEEP_MODULE", "nvrtc"), os.environ.get("SWEEP_ALLOC", "block"), cp.value)
            ck(cu.cuStreamEndCapture(cp, ctypes.byref(gr)), "cuStreamEndCapture")
            ex = V()
            ck(cu.cuGraphInstantiateWithFlags(ctypes.byref(ex), gr, ctypes.c_ulonglong(0)), "cuGraphInstantiate")
            exn[n] = ex
        sq = [0]

        def one(n):
            sq[0] += 1
            ck(cu.cuStreamWaitValue32_v2(st, ctypes.c_uint64(hd_.value), ctypes.c_uint32(sq[0]), ctypes.c_uint(0)), "w")
            cu.cuEventRecord(a0, st)
            ck(cu.cuGraphLaunch(exn[n], st), "cuGraphLaunch")
            cu.cuEventRecord(a1, st)
            w_.value = sq[0]
            ck(cu.cuEventSynchronize(a1), "sync")
            f = ctypes.c_float()
            cu.cuEventElapsedTime(ctypes.byref(f), a0, a1)
            return f.value * 1000
        tt = bare_time.interleave(ns, one, a.rounds, 1)
        med = {n: sorted(v)[len(v) // 2] for n, v in tt.items()}
        print(f"sweep at {where}: " + ", ".join(f"{n} calls {med[n] / n:.3f}" for n in ns) +
              f"; slope {(med[ns[-1]] - med[ns[0]]) / (ns[-1] - ns[0]):.3f} us/call", flush=True)
    if os.environ.get("CALLS_LIST"):
        sweep("early")
    own = V()
    ck(cu.cuStreamCreate(ctypes.byref(own), 0), "cuStreamCreate")
    cap = V()
    ck(cu.cuStreamCreate(ctypes.byref(cap), 0), "cuStreamCreate")
    streams = {"legacy": torch.cuda.current_stream().cuda_stream, "own": own.value}
    if os.environ.get("CALLS_LIST"):
        sweep("after streams")

    # calls per graph
    if a.calls:
        calls = a.calls
    else:
        e0, e1 = V(), V()
        cu.cuEventCreate(ctypes.byref(e0), 0)
        cu.cuEventCreate(ctypes.byref(e1), 0)
        best = math.inf
        for i in range(5):
            cu.cuEventRecord(e0, own)
            for _ in range(10):
                launch_all("nvrtc", "block", own.value)
            cu.cuEventRecord(e1, own)
            cu.cuEventSynchronize(e1)
            f = ctypes.c_float()
            cu.cuEventElapsedTime(ctypes.byref(f), e0, e1)
            if i:
                best = min(best, f.value * 1000 / 10)
            if os.environ.get("CALLS_LIST") and i == 0:
                sweep("after probe 0")
        calls = max(1, math.ceil(a.replay_ms * 1000 / best))
    print(f"calls per graph: {calls}")
    if os.environ.get("CALLS_LIST"):
        sweep("after probe")
    try:
        print("cupy", cupy.__version__, "nvrtc", cupy.cuda.nvrtc.getVersion(), "torch", torch.__version__,
              "cuda", torch.version.cuda)
    except Exception as e:  # noqa: BLE001
        print("versions:", e)

    graphs = {}
    keys = [(m_, al, k_) for m_, al, k_ in itertools.product(("cupy", "nvrtc"), ("torch", "block"), ("driver",))]
    keys += [("nvrtc", al, "driver") for al in ptrs if al.startswith("block_")]
    for module, alloc, kind in keys:
        if kind == "torch":
            g = torch.cuda.CUDAGraph()
            with torch.cuda.graph(g):
                s = torch.cuda.current_stream().cuda_stream
                for _ in range(calls):
                    launch_all(module, alloc, s)
            graphs[(module, alloc, kind)] = g
        else:
            gr = V()
            ck(cu.cuStreamBeginCapture_v2(cap, ctypes.c_int(1)), "cuStreamBeginCapture")  # thread-local
            for _ in range(calls):
                launch_all(module, alloc, cap.value)
            ck(cu.cuStreamEndCapture(cap, ctypes.byref(gr)), "cuStreamEndCapture")
            ex = V()
            ck(cu.cuGraphInstantiateWithFlags(ctypes.byref(ex), gr, ctypes.c_ulonglong(0)), "cuGraphInstantiate")
            graphs[(module, alloc, kind)] = ex
        if os.environ.get("CALLS_LIST"):
            sweep(f"after graph {module} {alloc}")
    torch.cuda.synchronize()

    if os.environ.get("CALLS_LIST"):
        sweep("after graphs")
    # hold
    word, hd = bare_time.hold_word(bcu)
    seq = [0]
    e0, e1 = V(), V()
    cu.cuEventCreate(ctypes.byref(e0), 0)
    cu.cuEventCreate(ctypes.byref(e1), 0)

    import time

    def sample(key, sname, mode="plain"):
        module, alloc, kind = key
        s = streams[sname]
        if mode == "gap1ms":
            time.sleep(0.001)
        seq[0] += 1
        ck(cu.cuStreamWaitValue32_v2(V(s), ctypes.c_uint64(hd.value), ctypes.c_uint32(seq[0]), ctypes.c_uint(0)),
           "cuStreamWaitValue32")
        if mode == "preroll":
            ck(cu.cuGraphLaunch(graphs[key], V(s)), "cuGraphLaunch")
        cu.cuEventRecord(e0, V(s))
        if kind == "torch":
            with torch.cuda.stream(torch.cuda.ExternalStream(s)):
                graphs[key].replay()
        else:
            ck(cu.cuGraphLaunch(graphs[key], V(s)), "cuGraphLaunch")
        cu.cuEventRecord(e1, V(s))
        word.value = seq[0]
        ck(cu.cuEventSynchronize(e1), "cuEventSynchronize")
        f = ctypes.c_float()
        cu.cuEventElapsedTime(ctypes.byref(f), e0, e1)
        return f.value * 1000 / calls

    if os.environ.get("CALLS_LIST"):
        sweep("late")
        return
    combos = [(k, s) for k in graphs for s in streams]
    if os.environ.get("MODES"):
        combos = [(k, s, m) for k, s in [((("nvrtc", "block", "driver"), "own")), (("cupy", "torch", "driver"), "legacy")]
                  for m in ("plain", "preroll", "gap1ms")]
    res = bare_time.interleave(combos, lambda c: sample(*c), a.rounds, 0)
    if os.environ.get("MODES"):
        for c in combos:
            v = sorted(res[c])
            print(f"{c[0][0]:6} {c[0][1]:6} {c[1]:7} {c[2]:8} median {v[a.rounds // 2]:9.3f} min {v[0]:9.3f} "
                  f"p90 {v[int(a.rounds * 0.9)]:9.3f}")
        return
    ref = sorted(res[(("nvrtc", "block", "driver"), "own")])[a.rounds // 2]
    print(f"\n{'module':7} {'alloc':6} {'graph':7} {'stream':7} {'median us':>10} {'min':>8} {'max':>8} {'vs evoeng-like':>15}")
    for c in sorted(combos, key=lambda c: sorted(res[c])[a.rounds // 2]):
        s = sorted(res[c])
        med = s[a.rounds // 2]
        (module, alloc, kind), sname = c
        print(f"{module:7} {alloc:6} {kind:7} {sname:7} {med:10.3f} {s[0]:8.3f} {s[-1]:8.3f} {100 * (med / ref - 1):+14.2f}%")
    # main effects
    print("\nmain effects (median of the medians with the factor at each level, % vs the first level):")
    meds = {c: sorted(res[c])[a.rounds // 2] for c in combos}
    for i, (name, lv) in enumerate((("module", ("cupy", "nvrtc")), ("alloc", ("torch", "block")),
                                    ("stream", ("legacy", "own")))):
        i = 3 if i == 2 else i
        def lvl(c):
            return c[0][i] if i < 3 else c[1]
        m = {x: sorted(meds[c] for c in combos if lvl(c) == x and not c[0][1].startswith("block_")) for x in lv}
        mm = {x: v[len(v) // 2] for x, v in m.items()}
        print(f"  {name:7} {lv[0]} {mm[lv[0]]:.3f}  {lv[1]} {mm[lv[1]]:.3f}  ({100 * (mm[lv[1]] / mm[lv[0]] - 1):+.2f}%)")


if __name__ == "__main__":
    main()

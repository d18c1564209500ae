#!/usr/bin/env python3
"""ws_trace.py: where a WS-path attention kernel's time goes, without ncu.

Takes an evoeng export (JSON) of the attention template's warp-specialised
path (WS=1), adds clock64 stamps to a copy of its source and runs that copy
once:

  consumer warpgroup (lane 0 of its first warp), in the loop without the
  intra-warpgroup overlap (OVERLAP=0, or dropped by the register estimate,
  as at 3 consumers, D=64, 128-key tiles), per KV tile:
    k0 before the wait on K's full barrier   k1 after it
    k2 after Q K^T's wgmma.wait              k3 after softmax, rescale, pack
    k4 after the wait on V's full barrier    k5 after P V's wait and release
  (EARLY = 1 moves the waits under the wgmmas: wait K and wait V then read
  about 0 and the waits fall inside Q K^T and P V; PVSPLIT = 1 or 2 leaves
  the mask and maxima in softmax and puts the chunked exponentials in P V)
  with the intra-warpgroup overlap (OVERLAP = 1), per KV tile but the first:
    k0 before the waits on K's and V's full barriers   k1 after them
    k6 after the ping-pong turn is taken   k2 after Q K^T's wgmma.wait<1>
    k3 after softmax                       k5 after P V's wait<0> and release
    k4 after rescale and pack
  producer (its one issuing thread), per KV tile:
    k0 before the wait on K's empty slot     k1 after it
    k2 before the wait on V's empty slot     k3 after it
  and once per warpgroup, the CTA's timeline: the kernel's entry, the
  first tile's Q in registers, the end of the first and of the last
  tile's epilogue (consumers), the last load issued (producer)

for the first --ctas CTAs (each runs on one SM; clock64 is that SM's
counter, so stamps of one CTA compare). It prints, per phase, the median
and mean cycles of a tile over the steady-state tiles of every consumer
warpgroup, and per CTA how much of the span had a GEMM in flight (some
warpgroup between k1 and k2 or between k4 and k5; with the overlap between
k6 and k5), a softmax running (between k2 and k3), both, or neither, and
its timeline: cycles from the kernel's entry to Q in registers, to the end
of the first tile, to the end, and from the last KV tile's P V to the end
(the epilogue). The CTAs are the first --ctas in launch order (without
PERSIST: the first query blocks of the first head, the last ones first
where causal). The
traced copy is timed against the untraced export in the same process (the
stamps' cost: 1.1-1.2x).

--power S also runs the untraced export and cuDNN (PyTorch SDPA) each for
S seconds (replays of a CUDA graph of 50 calls) while nvidia-smi samples
the SM clock, power and the clock-event reasons every 50 ms, and prints
each one's time a call, TFLOP/s, mean clock and power.

--patch-only writes the traced source to stdout and needs no GPU (CI).

Usage: ws_trace.py EXPORT.json [--ctas 4] [--tiles 96] [--power S] [--json OUT]
                               [--patch-only]
Exit: 0 done, 1 no GPU or a CUDA failure, 2 usage, or an export this
cannot trace (not WS, or a source the patch points miss: an export made
before the template's text they match).
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

KERNEL = 'extern "C" __global__ void __launch_bounds__(WS_THREADS, 1)'
# (text in the WS path's source, text it becomes, how often it occurs)
CONSUMER = [
    # the loop without the overlap (EARLY moves the waits under the wgmmas:
    # then wait K and wait V read ~0 and the waits sit in Q K^T and P V;
    # with PVSPLIT the softmax span is the mask and maxima, P V's span holds
    # the chunked exponentials)
    ("        const att_u32 ph = ((g0 + n) / STAGES) & 1;\n#if !EARLY\n"
     "        ws_wait_full(fullK(s), ph);\n#endif\n        qk_issue(sc, s);\n",
     "        const att_u32 ph = ((g0 + n) / STAGES) & 1;\n        WS_TR(g0 + n, 0);\n#if !EARLY\n"
     "        ws_wait_full(fullK(s), ph);\n#endif\n        WS_TR(g0 + n, 1);\n        qk_issue(sc, s);\n", 1),
    ("#endif\n        ws_wg_wait<0>();\n        att_keep<WS_BN / 2>(sc);\n        ws_arrive(emptyK(s));\n",
     "#endif\n        ws_wg_wait<0>();\n        WS_TR(g0 + n, 2);\n        att_keep<WS_BN / 2>(sc);\n"
     "        ws_arrive(emptyK(s));\n", 1),
    ("#if !EARLY\n        ws_wait_full(fullV(s), ph);\n#endif\n",
     "        WS_TR(g0 + n, 3);\n#if !EARLY\n        ws_wait_full(fullV(s), ph);\n#endif\n        WS_TR(g0 + n, 4);\n", 2),
    ("((g0 + n + 1) / STAGES) & 1);\n#endif\n        pv_release(s);\n",
     "((g0 + n + 1) / STAGES) & 1);\n#endif\n        pv_release(s);\n        WS_TR(g0 + n, 5);\n", 1),
    # the loop with the intra-warpgroup overlap (tile 0 is its prologue: unstamped)
    ("        ws_wait_full(fullK(s), ((g0 + n) / STAGES) & 1);\n"
     "        ws_wait_full(fullV(sp), ((g0 + n - 1) / STAGES) & 1);\n        pp_sync();\n",
     "        WS_TR(g0 + n, 0);\n        WS_TRV(g0 + n, 7, 1);\n"
     "        ws_wait_full(fullK(s), ((g0 + n) / STAGES) & 1);\n"
     "        ws_wait_full(fullV(sp), ((g0 + n - 1) / STAGES) & 1);\n        WS_TR(g0 + n, 1);\n"
     "        pp_sync();\n        WS_TR(g0 + n, 6);\n", 1),
    ("        ws_wg_wait<1>();                        /* Q K^T of tile n done */\n",
     "        ws_wg_wait<1>();                        /* Q K^T of tile n done */\n        WS_TR(g0 + n, 2);\n", 1),
    ("        mv = softmax(sc, n, alpha);\n        pv_release(sp);                         /* P V of tile n - 1 */\n",
     "        mv = softmax(sc, n, alpha);\n        WS_TR(g0 + n, 3);\n"
     "        pv_release(sp);                         /* P V of tile n - 1 */\n        WS_TR(g0 + n, 5);\n", 1),
    ("        pack(sc, pa);\n    }\n    if (ntc > 0) {\n",
     "        pack(sc, pa);\n        WS_TR(g0 + n, 4);\n    }\n    if (ntc > 0) {\n", 1),
    # the CTA's timeline (ws_trace_cta, per warpgroup): k0 the kernel's
    # entry (before the barriers' initialisation); consumers: k1 their
    # first tile's Q in registers, k2 the end of their first tile's
    # epilogue, k3 of their last; the producer: k1 its last load issued
    ("    if (tid == 0) {\n        ws_bar_init(barQ, WS_FULL);\n",
     "    WS_TRC(0);\n    if (tid == 0) {\n        ws_bar_init(barQ, WS_FULL);\n", 1),
    ("    ws_arrive(emptyQ);\n", "    ws_arrive(emptyQ);\n    if (j == 0)\n        WS_TRC(1);\n", 1),
    ("    g0 += nt;\n    }   /* tiles */\n",
     "    if (j == 0)\n        WS_TRC(2);\n    WS_TRC(3);\n    g0 += nt;\n    }   /* tiles */\n", 1),
    ("          }\n#if LOADS   /* exit with no copy", "          }\n          WS_TRC(1);\n#if LOADS   /* exit with no copy", 1),
    ("                ws_wait(emptyK(s), ph ^ 1);\n",
     "                WS_TR(kv, 0);\n                ws_wait(emptyK(s), ph ^ 1);\n                WS_TR(kv, 1);\n", 1),
    ("                ws_wait(emptyV(s), ph ^ 1);\n",
     "                WS_TR(kv, 2);\n                ws_wait(emptyV(s), ph ^ 1);\n                WS_TR(kv, 3);\n", 1),
]


class TraceError(Exception):
    pass


def patch(source, params, ctas, tiles):
    """The export's source with the stamps in; TraceError where it cannot be."""
    if int(params.get("WS", 0)) != 1:
        raise TraceError("not a WS=1 export: only the warp-specialised path is traced")
    if source.count(KERNEL) != 1:
        raise TraceError("the WS kernel's signature is not in the source once")
    head = (f"#define WS_TR_CTAS {ctas}\n#define WS_TR_TILES {tiles}\n"
            "__device__ unsigned long long ws_trace_buf[WS_TR_CTAS * 4 * WS_TR_TILES * 8];\n"
            "__device__ unsigned long long ws_trace_cta[WS_TR_CTAS * 4 * 4];\n"
            # the CTA's linear index: a grid of (query blocks, heads) without PERSIST
            "#define WS_TR_ID (blockIdx.x + gridDim.x * blockIdx.y)\n"
            "#define WS_TR_ON (WS_TR_ID < WS_TR_CTAS && (threadIdx.x & 127) == 0)\n"
            "#define WS_TR_CLK(c_) asm volatile(\"mov.u64 %0, %%clock64;\" : \"=l\"(c_) :: \"memory\")\n"
            "#define WS_TR(slot, k) do { if (WS_TR_ON && (slot) < WS_TR_TILES) { unsigned long long c_; "
            "WS_TR_CLK(c_); "
            "ws_trace_buf[((WS_TR_ID * 4 + (threadIdx.x >> 7)) * WS_TR_TILES + (slot)) * 8 + (k)] = c_; "
            "} } while (0)\n"
            "#define WS_TRV(slot, k, v) do { if (WS_TR_ON && (slot) < WS_TR_TILES) "
            "ws_trace_buf[((WS_TR_ID * 4 + (threadIdx.x >> 7)) * WS_TR_TILES + (slot)) * 8 + (k)] = (v); "
            "} while (0)\n"
            "#define WS_TRC(k) do { if (WS_TR_ON) { unsigned long long c_; WS_TR_CLK(c_); "
            "ws_trace_cta[(WS_TR_ID * 4 + (threadIdx.x >> 7)) * 4 + (k)] = c_; } } while (0)\n")
    out = source.replace(KERNEL, head + KERNEL)
    for old, new, times in CONSUMER:
        if out.count(old) != times:
            raise TraceError(f"a patch point occurs {out.count(old)} times, not {times}: {old.strip()[:60]!r}")
        out = out.replace(old, new)
    return out


def median(xs):
    return statistics.median(xs) if xs else float("nan")


# per loop: (phase, from stamp, to stamp), the stamp that ends a tile, the
# spans with a GEMM of the warpgroup's in flight, the softmax span
MODES = {
    "no overlap": ([("wait K", 0, 1), ("Q K^T (issue to wait)", 1, 2), ("softmax", 2, 3),
                    ("wait V", 3, 4), ("P V (issue to wait)", 4, 5)], 5, [(1, 2), (4, 5)], (2, 3)),
    "overlap": ([("wait K and V", 0, 1), ("wait for the ping-pong turn", 1, 6),
                 ("Q K^T of n with P V of n-1 (issue to Q K^T done)", 6, 2),
                 ("softmax (P V of n-1 in flight)", 2, 3), ("rest of P V", 3, 5),
                 ("rescale, pack", 5, 4)], 4, [(6, 5)], (2, 3)),
}


def timeline(cta, c, consumers, hi):
    """CTA c's timeline from ws_trace_cta (a flat list, 4 stamps a
    warpgroup), cycles from the kernel's entry; hi: the last KV-loop stamp
    (None if no tile was complete). Empty where the CTA left no entry."""
    st = [cta[(c * 4 + w) * 4:(c * 4 + w) * 4 + 4] for w in range(consumers + 1)]
    entries = [r[0] for r in st if r[0]]
    ends = [r[3] for r in st[1:] if r[3]]
    if not entries or not ends:
        return {}
    e0 = min(entries)
    q = [r[1] - e0 for r in st[1:] if r[1]]
    first = [r[2] - e0 for r in st[1:] if r[2]]
    out = {"entry to Q in registers": median(q), "entry to the first tile's end": max(first) if first else None,
           "entry to the end": max(ends) - e0,
           "producer: entry to its last load": st[0][1] - e0 if st[0][1] else None}
    if hi is not None:
        out["last KV tile to the end (epilogue)"] = max(ends) - hi
    return out


def analyse(buf, ctas, tiles, consumers, skip, cta=None):
    """Per-phase cycles and per-CTA overlap from the stamps (a flat list);
    cta: ws_trace_cta's stamps, for each CTA's timeline."""
    def rec(c, w, t):
        i = ((c * 4 + w) * tiles + t) * 8
        return buf[i:i + 8]
    mode = "overlap" if any(buf[i + 7] == 1 for i in range(0, len(buf), 8)) else "no overlap"
    phases, end, gemm, soft = MODES[mode]
    per = {p: [] for p, _, _ in phases}
    per["to the next tile"] = []
    prod = {"wait empty K": [], "wait empty V": []}
    ctarows = []
    for c in range(ctas):
        spans = []          # (start, end, kind)
        lo, hi = None, None
        for w in range(1, consumers + 1):
            # the tiles with every stamp of this loop (6, the turn, only with the overlap)
            need = range(7) if mode == "overlap" else range(6)
            done = [t for t in range(tiles) if all(rec(c, w, t)[k] for k in need)]
            for i, t in enumerate(done):
                r = rec(c, w, t)
                lo = r[0] if lo is None else min(lo, r[0])
                hi = r[end] if hi is None else max(hi, r[end])
                spans += [(r[a], r[b], "gemm") for a, b in gemm] + [(r[soft[0]], r[soft[1]], "softmax")]
                if i < skip:
                    continue
                for p, a, b in phases:
                    per[p].append(r[b] - r[a])
                if i + 1 < len(done) and done[i + 1] == t + 1:
                    per["to the next tile"].append(rec(c, w, t + 1)[0] - r[end])
        for t in range(tiles):
            r = rec(c, 0, t)
            if r[1] and r[0] and t >= skip:
                prod["wait empty K"].append(r[1] - r[0])
            if r[3] and r[2] and t >= skip:
                prod["wait empty V"].append(r[3] - r[2])
        tl = timeline(cta, c, consumers, hi) if cta else {}
        if lo is None:
            if tl:
                ctarows.append({"cta": c, "timeline": tl})
            continue
        ev = []
        for a, b, k in spans:
            if b > a:
                ev += [(a, 1, k), (b, -1, k)]
        ev.sort()
        cnt = {"gemm": 0, "softmax": 0}
        acc = {"gemm only": 0, "softmax only": 0, "both": 0, "neither": 0}
        prev = lo
        for x, d, k in ev:
            g, sm = cnt["gemm"] > 0, cnt["softmax"] > 0
            key = "both" if g and sm else "gemm only" if g else "softmax only" if sm else "neither"
            acc[key] += x - prev
            prev = x
            cnt[k] += d
        acc["neither"] += max(hi - prev, 0)
        span = hi - lo
        ctarows.append({"cta": c, "span_cycles": span, "timeline": tl,
                        **{k: v / span if span else 0.0 for k, v in acc.items()}})

    def stat(v):
        return {"median": median(v), "mean": (sum(v) / len(v) if v else float("nan")), "n": len(v)}
    return {"loop": mode, "consumer_phases": {p: stat(v) for p, v in per.items()},
            "producer_waits": {p: stat(v) for p, v in prod.items()}, "ctas": ctarows}


def time_fn(torch, fn, calls=200):
    fn()
    torch.cuda.synchronize()
    e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    best = None
    for _ in range(5):
        e0.record()
        for _ in range(calls):
            fn()
        e1.record()
        torch.cuda.synchronize()
        us = e0.elapsed_time(e1) * 1000.0 / calls
        best = us if best is None else min(best, us)
    return best


def power_run(bench, fns, flops, secs, calls=50):
    """Each fn as replays of a graph of `calls` calls for secs while
    nvidia-smi samples: time a call, mean clock, power (bench: a
    sdpa_timing.Timing)."""
    torch = bench.torch
    rows = {}
    for name, fn in fns.items():
        g, _ = bench.build_graph(fn, calls)
        smi = subprocess.Popen(["nvidia-smi", "--query-gpu=timestamp,clocks.sm,power.draw,temperature.gpu,"
                                "clocks_event_reasons.active", "--format=csv,noheader,nounits", "-lms", "50"],
                               stdout=subprocess.PIPE, text=True)
        time.sleep(0.3)
        t0 = time.time()
        n = 0
        while time.time() - t0 < secs:
            for _ in range(10):
                g.replay()
            n += 10 * calls
            torch.cuda.synchronize()
        wall = time.time() - t0
        smi.terminate()
        lines = smi.communicate()[0].strip().splitlines()
        samp = []
        for ln in lines[6:-2]:   # drop the ramp at either end
            f = [x.strip() for x in ln.split(",")]
            try:
                samp.append((float(f[1]), float(f[2]), f[4]))
            except (ValueError, IndexError):
                pass
        clk = sum(s[0] for s in samp) / len(samp) if samp else float("nan")
        pw = sum(s[1] for s in samp) / len(samp) if samp else float("nan")
        us = wall / n * 1e6
        rows[name] = {"us": us, "tflops": flops / us / 1e6, "mean_sm_mhz": clk, "mean_power_w": pw,
                      "reasons": sorted({s[2] for s in samp}), "samples": len(samp)}
    return rows


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("export")
    ap.add_argument("--ctas", type=int, default=4)
    ap.add_argument("--tiles", type=int, default=96, help="KV tiles stamped per warpgroup (default 96)")
    ap.add_argument("--skip", type=int, default=2, help="first tiles left out of the phase figures")
    ap.add_argument("--power", type=float, default=0.0, metavar="S")
    ap.add_argument("--json", metavar="OUT")
    ap.add_argument("--patch-only", action="store_true")
    a = ap.parse_args(argv)
    try:
        exp_raw = json.load(open(a.export))
        traced = patch(exp_raw["source"], exp_raw["params"], a.ctas, a.tiles)
    except (OSError, ValueError, KeyError, TraceError) as e:
        print(f"ws_trace.py: {a.export}: {e}", file=sys.stderr)
        return 2
    if a.patch_only:
        sys.stdout.write(traced)
        return 0
    from sdpa_contenders import Contenders
    from sdpa_timing import Timing
    from sdpa_export import load_export
    import types
    try:
        b = Contenders(types.SimpleNamespace(only=("evoeng", "cudnn"), atol=2e-2, rtol=2e-2))
        torch = b.torch
        exp = load_export(a.export)
        consumers = int(exp["params"]["CONSUMERS"])
        tensors = b.alloc(exp)
        plain = b.evo_fn(exp, b.compile(exp), tensors)
        texp = dict(exp, source=traced)
        tfns = b.compile(texp)
        traced_fn = b.evo_fn(texp, tfns, tensors)
        us_plain, us_traced = time_fn(torch, plain), time_fn(torch, traced_fn)
        mod = b.module(texp)
        arr = b.cupy.ndarray((a.ctas * 4 * a.tiles * 8,), dtype=b.cupy.uint64, memptr=mod.get_global("ws_trace_buf"))
        carr = b.cupy.ndarray((a.ctas * 4 * 4,), dtype=b.cupy.uint64, memptr=mod.get_global("ws_trace_cta"))
        arr.fill(0)
        carr.fill(0)
        traced_fn()
        torch.cuda.synchronize()
        buf = [int(x) for x in arr.get()]
        cta = [int(x) for x in carr.get()]
    except Exception as e:  # no GPU, a CUDA or NVRTC failure
        print(f"ws_trace.py: {type(e).__name__}: {e}", file=sys.stderr)
        return 1
    res = analyse(buf, a.ctas, a.tiles, consumers, a.skip, cta)
    res.update(export=a.export, params=exp["params"], dims=exp["dims"], us_plain=us_plain, us_traced=us_traced)
    print(f"{a.export}: {exp['dims']}  untraced {us_plain:.2f} us, traced {us_traced:.2f} us "
          f"({us_traced / us_plain:.3f})")
    print(f"consumer warpgroup ({res['loop']} loop), cycles a KV tile (median / mean over steady-state tiles):")
    for p, v in res["consumer_phases"].items():
        print(f"  {p:50s} {v['median']:8.0f} {v['mean']:8.0f}   (n={v['n']})")
    print("producer, cycles a KV tile:")
    for p, v in res["producer_waits"].items():
        print(f"  {p:24s} {v['median']:8.0f} {v['mean']:8.0f}   (n={v['n']})")
    print("per CTA, share of the traced span: GEMM in flight only / softmax only / both / neither")
    for r in res["ctas"]:
        if "span_cycles" in r:
            print(f"  CTA {r['cta']}: span {r['span_cycles']} cycles: {r['gemm only']:.3f} / "
                  f"{r['softmax only']:.3f} / {r['both']:.3f} / {r['neither']:.3f}")
    print("per CTA, cycles from the kernel's entry (its first clock64 on that SM):")
    for r in res["ctas"]:
        tl = r.get("timeline") or {}
        print(f"  CTA {r['cta']}: " + ", ".join(f"{k} {v:.0f}" for k, v in tl.items() if v is not None))
    if a.power > 0:
        q, k, v = (tensors[exp["roles"][x]] for x in ("Q", "K", "V"))
        cud = b.sdpa_fn(b.SDPBackend.CUDNN_ATTENTION, q, k, v, exp["dims"]["CAUSAL"])
        res["power"] = power_run(Timing(b, None), {"evoeng": plain, "cudnn": cud}, exp["flops"], a.power)
        for name, r in res["power"].items():
            print(f"power {name}: {r['us']:.2f} us a call, {r['tflops']:.0f} TFLOP/s, SM clock {r['mean_sm_mhz']:.0f} MHz, "
                  f"{r['mean_power_w']:.0f} W, reasons {','.join(r['reasons'])} ({r['samples']} samples)")
    if a.json:
        json.dump(res, open(a.json, "w"), indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

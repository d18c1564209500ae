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
  FAkv    flash_attn's decoding function flash_attn_with_kvcache (FA3's
          flash_attn_interface, else FA2's flash_attn), where installed

Shapes come from the exports: an export of a run with --dim HKV=8 --dim SQ=1
(its plan's shape "B=8 H=32 ... HKV=8 SQ=1") is a grouped-query decoding
row: Q [B,H,SQ,D], K and V [B,HKV,S,D], causal aligned at the end (query i
sees keys j <= i + S - SQ). SDPA gets the grouped heads with
enable_gqa=True where the installed torch has it, else K and V expanded to
H heads beforehand (the table's "gqa" column says which). Every row prints
the achieved bandwidth beside the latency: GB/s = (Q + O + K and V read
once per K/V head) bytes / time, the measure of a memory-bound decoding
kernel.

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

--profile NAME[,NAME] (or "all"): the inputs are the task's input profile
NAME (templates/README.md, "Input profiles"), recorded in the export's plan
(--task TASK.json: from that spec, for an export made before profiles),
made by evoeng's own generator (evo_fill of src/gpu/devkern.c, from
--input-seed, 1 like evoeng bench: the bytes evoeng gates and times; with
no CuPy, torch draws of the same distributions) and shared by the three
contenders; one row per export and profile. Without it: torch.randn.

The code: the contenders and their data in sdpa_contenders.py, the graphs
and timed replays in sdpa_timing.py, the table and --out rows in
sdpa_table.py, evoeng's generator in sdpa_inputs.py; this file runs an
export through them.

Usage: compare_sdpa.py EXPORT.json [EXPORT2.json ...] [--replays 15]
       [--calls N | --replay-ms 0.5] [--diff] [--out results.json] [--seed 0]
       [--atol 1e-2] [--rtol 1e-2] [--no-hold] [--preroll-us 100]
       [--only evoeng,flash,cudnn,flashkv] [--warm-replays 0] [--gap-ms 0]
       [--profile NAME[,NAME] | all] [--task TASK.json] [--input-seed 1] [--dry-run]
Exit: 0 all exports processed (contenders may still be n/a or FAIL),
      1 an export could not be processed at all, 2 usage error.
"""
import argparse
import datetime
import json
import platform
import random
import sys
import os
import traceback

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from sdpa_export import ExportError, load_export  # noqa: E402
# the names this script held before the split, for scripts that import them from it (bench/results/...)
from sdpa_export import TORCH_DTYPES, NVRTC_OPTIONS, arch_specific, nvrtc_cubin  # noqa: E402,F401
from sdpa_inputs import ProfileError, profile_inputs, profile_names, task_profiles  # noqa: E402
from sdpa_table import CONTENDERS, LABELS, params_short, shape_short, describe, table, json_safe, row_json  # noqa: E402
from sdpa_contenders import Contenders, NotSelected  # noqa: E402
from sdpa_timing import Timing  # noqa: E402


# ---------------------------------------------------------------- one export

def judge(ct, c, name, fn, out, ref, fns):
    """out (fn's output) against ref into contender entry c; fn into fns
    when it passes."""
    ok, mx, nbad = ct.check(out, ref)
    c["max_abs_err"] = mx
    if not ok:
        c.update(status="FAIL", reason=f"{nbad} elements out of tolerance, max abs err {mx:.3g}")
    else:
        c["status"] = "ok"
        fns[name] = fn
    print(f"{LABELS[name]}: eager check {c['status']}, max abs err {mx:.3e}", flush=True)


def sdpa_checks(ct, row, q, k, v, causal, ref, fns):
    """The SDPA backends' eager runs, checked against ref; the ones that
    pass go into fns. First: a kernel fault in the evoeng launch would
    poison the context."""
    torch, args = ct.torch, ct.args
    row["gqa"] = ct.gqa_how(q, k)
    for name, be in (("flash", ct.SDPBackend.FLASH_ATTENTION), ("cudnn", ct.SDPBackend.CUDNN_ATTENTION),
                     ("flashkv", None)):
        c = row["contenders"][name] = {"status": "n/a", "us": None, "max_abs_err": None}
        if name not in args.only:
            c["reason"] = "not selected (--only)"
            continue
        try:
            fn = ct.flash_kv_fn(q, k, v, causal) if be is None else ct.sdpa_fn(be, q, k, v, causal)
            out = fn()
            torch.cuda.synchronize()
            judge(ct, c, name, fn, out, ref, fns)
        except Exception as e:
            c["reason"] = f"{type(e).__name__}: {str(e).strip().splitlines()[0] if str(e).strip() else ''}"[:300]
            print(f"{LABELS[name]}: n/a: {c['reason']}", flush=True)
            traceback.print_exc()


def evoeng_check(ct, tm, row, exp, tensors, ref, fns):
    """evoeng's exported plan: compiled, run once (--graph-only: as a
    one-call graph) and checked against ref; into fns when it passes."""
    torch, args = ct.torch, ct.args
    c = row["contenders"]["evoeng"] = {"status": "n/a", "us": None, "max_abs_err": None}
    try:
        if "evoeng" not in args.only:
            c["reason"] = "not selected (--only)"
            raise NotSelected()
        if ct.cupy is None:
            raise RuntimeError(ct.cupy_error)
        kfns = ct.compile(exp)
        fn = ct.evo_fn(exp, kfns, tensors)
        out = tensors[exp["roles"]["O"]]
        out.fill_(float("nan"))
        if args.graph_only:
            # never launched outside a graph: checked on a one-call graph's replay
            fn.graph_only = True
            g1, _ = tm.build_graph(fn, 1, warm=False)
            g1.replay()
            del g1
        else:
            fn()
        torch.cuda.synchronize()
        judge(ct, c, "evoeng", fn, out, ref, fns)
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


def capture(ct, tm, row, fns, ref):
    """Each contender that passed its check captured in a graph (two with
    --diff), each graph's replay proven to write a correct output. Returns
    {name: [(graph, calls)]}."""
    torch, args = ct.torch, ct.args
    graphs = {}
    for name in CONTENDERS:
        if name not in fns:
            continue
        c = row["contenders"][name]
        try:
            calls = tm.calls_for(fns[name])
            lengths = (calls, 2 * calls) if args.diff else (calls,)
            built = []
            for n in lengths:
                g, out = tm.build_graph(fns[name], n, warm=not getattr(fns[name], "graph_only", False))
                out.fill_(float("nan"))
                torch.cuda.synchronize()
                g.replay()
                torch.cuda.synchronize()
                ok, mx, nbad = ct.check(out, ref)
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
    return graphs


def summarize(args, row, times, overhead):
    """Each timed contender's median over the rounds into its row entry."""
    for name, ts in times.items():
        c = row["contenders"][name]
        if len(ts) < args.replays:
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


def run_export(ct, tm, exp, rng, profile=None):
    """One export (on input profile `profile`, or torch.randn inputs):
    checks, graphs, timed rounds; its row for the table."""
    torch, args = ct.torch, ct.args
    d = exp["dims"]
    causal = d["CAUSAL"]
    row = {k: exp[k] for k in ("path", "id", "run", "task", "params", "dims", "flops", "bytes",
                               "export_device", "export_arch", "export_latency_us", "warnings")}
    row["contenders"] = {}
    row["profile"] = profile
    print(f"\n=== {exp['path']}: {shape_short(d)} causal={causal}  candidate {exp['id']}  "
          f"{params_short(exp['params'])}{'  profile ' + profile if profile else ''}", flush=True)
    for w in exp["warnings"]:
        print(f"warning: {w}", flush=True)

    tensors = ct.alloc(exp, profile, args.input_seed)
    row["inputs"] = ct.inputs_how if profile else "torch.randn"
    q, k, v = (tensors[exp["roles"][n]] for n in ("Q", "K", "V"))
    ref = ct.reference(q, k, v, causal)
    torch.cuda.synchronize()

    fns = {}
    sdpa_checks(ct, row, q, k, v, causal, ref, fns)
    evoeng_check(ct, tm, row, exp, tensors, ref, fns)
    graphs = capture(ct, tm, row, fns, ref)
    times, overhead = tm.time_rounds(graphs, rng)
    summarize(args, row, times, overhead)
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
                    help="contenders to run: evoeng, flash, cudnn, flashkv (flash_attn_with_kvcache); default all")
    ap.add_argument("--profile", metavar="NAME[,NAME]",
                    help="time on these input profiles of the task (from the export's plan; 'all': every one), "
                         "the inputs made by evoeng's own generator: one row per export and profile "
                         "(default: torch.randn inputs)")
    ap.add_argument("--task", metavar="TASK.json",
                    help="with --profile: take the profiles from this task spec for an export written before "
                         "input profiles (its plan has none)")
    ap.add_argument("--input-seed", type=int, default=1, metavar="N",
                    help="with --profile: the seed of evoeng's generator (default 1, evoeng bench's)")
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
            exp = load_export(p)
            if args.profile and args.task and not exp["profiles"]:
                exp["profiles"] = task_profiles(args.task, exp)
            want = (profile_names(exp) if args.profile == "all"
                    else [n.strip() for n in args.profile.split(",") if n.strip()] if args.profile else [None])
            for name in want:
                if name:
                    profile_inputs(exp, name)   # the export has it, or ProfileError
            exp["want_profiles"] = want or [None]
            exports.append(exp)
        except (ExportError, ProfileError) as e:
            print(f"error: {e}", file=sys.stderr)
            failed += 1

    meta = {"date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
            "host": platform.node(), "python": platform.python_version(),
            "replays": args.replays, "calls": args.calls, "replay_ms": args.replay_ms, "seed": args.seed,
            "hold": args.hold, "diff": args.diff, "side_stream": args.side_stream, "graph_only": args.graph_only, "preroll_us": args.preroll_us, "only": args.only,
            "atol": args.atol, "rtol": args.rtol, "profile": args.profile, "input_seed": args.input_seed,
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
            for prof in exp["want_profiles"]:
                row = {k: exp[k] for k in ("path", "id", "run", "task", "params", "dims", "flops", "bytes",
                                           "export_device", "export_arch", "export_latency_us", "warnings")}
                row["profile"] = prof
                row["contenders"] = {n: {"status": "n/a", "us": None, "max_abs_err": None, "reason": "dry run"}
                                     for n in CONTENDERS}
                rows.append(row)
    else:
        try:
            bench = Contenders(args)
            timing = Timing(bench, args)
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
        meta.update(gqa="enable_gqa=True" if bench.gqa_native else "K/V expanded",
                    flash_kv=getattr(bench, "flash_kv_name", None) if bench.flash_kv else bench.flash_kv_error)
        print(f"{meta['gpu']} ({meta['sm']}), torch {meta['torch']} (CUDA {meta['cuda']}, cuDNN {meta['cudnn']}), "
              f"cupy {meta['cupy']}; SDPA grouped heads: {meta['gqa']}; flash_attn_with_kvcache: "
              f"{meta['flash_kv']}", flush=True)
        if bench.cupy_error:
            print(f"warning: {bench.cupy_error}: evoeng will be n/a", flush=True)
        torch.manual_seed(args.seed)
        rng = random.Random(args.seed)
        for exp in exports:
            if exp["export_arch"] and exp["export_arch"] != meta["sm"]:
                exp["warnings"].append(f"exported for {exp['export_arch']}, running on {meta['sm']}")
            for prof in exp["want_profiles"]:
                try:
                    rows.append(run_export(bench, timing, exp, rng, prof))
                except Exception as e:
                    print(f"error: {exp['path']}{' profile ' + prof if prof else ''}: {type(e).__name__}: {e}",
                          flush=True)
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

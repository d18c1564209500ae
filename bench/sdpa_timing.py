#!/usr/bin/env python3
"""sdpa_timing.py -- compare_sdpa.py's timing: each contender captured in a
CUDA graph of back-to-back calls (sized to last about --replay-ms, or
--calls), and replays of every contender alternated in a shuffled order,
each one held (a stream wait on a host-mapped word released once the
replay is queued, as evoeng times: src/gpu/bench.c) or behind a GPU sleep,
and timed with CUDA events. The method of
/work/shared/baselines/sdpa_graph_bench.py with those two changes
(compare_sdpa.py's docstring says why)."""

import ctypes
import math
import time
import traceback


class Timing:
    """The timing half of a comparison; ct is the Contenders (torch, the
    driver), args the options (calls, replay_ms, hold, preroll_us,
    warm_replays, gap_ms, replays, side_stream)."""

    def __init__(self, ct, args):
        self.ct, self.torch, self.args = ct, ct.torch, args

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
            cu = self.ct.driver()
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

    def time_rounds(self, graphs, rng):
        """--replays rounds over graphs ({name: [(graph, calls)]}): in each
        round every contender, in a fresh shuffled order, gets one timed
        replay of each of its graphs (in a random order). Returns ({name:
        [us a call]}, {name: [a replay's fixed cost, us]} (only with two
        graph lengths))."""
        # T(N) / N; with --diff every round times each contender's graphs of
        # N and 2N calls back to back (in a random order) and takes
        # (T(2N) - T(N)) / N, so a fixed cost of a replay (its launch: 4-12 us
        # held on an H200) cancels.
        torch = self.torch
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
        return times, overhead

#!/usr/bin/env python3
"""tail_sched.py: the attention WS path's persistent schedule with TAIL, on
the CPU.

The same integer arithmetic as attn_fwd_ws in
templates/attention/attention_ws.cuh (tail_items() and coords(), non-causal,
PERSIST): tiles [0, tf) fill whole waves of the grid (min(tiles, SMs)
CTAs); with TAIL, the rest of head th from row tr and every later head
become items of (CONSUMERS - 1) * 64 rows when they fit in one wave. For
each case it checks that every (head, row) is computed by exactly one
warpgroup, and reports the most work any CTA gets, in tiles (an item of
R rows counts R / BLOCK_M), against the schedule without TAIL.
Keep it in step with the kernel.

Usage: tail_sched.py [--check] [B,H,S,CONSUMERS[,SMS] ...]
  --check: every row once over a grid of shapes (S 1..4096, 1..128 heads,
  114 and 132 SMs, 2 and 3 consumers); exit 1 on the first miss.
  Shapes: print tiles, waves and the makespan with and without TAIL.
"""
import sys


def schedule(S, BH, sms, consumers, tail=True):
    """[(cta, head, m0, rows)] and the makespan in tiles."""
    bm = 64 * consumers
    nmb = -(-S // bm)
    ntiles = nmb * BH
    grid = min(ntiles, sms)
    r = (consumers - 1) * 64

    # the kernel's tail_items(): head th from row tr on, tn0 items there and
    # tnr in each later head (the kernel recomputes them to save registers)
    tf = ntiles // grid * grid
    th, tr = tf // nmb, tf % nmb * bm
    tn0, tnr = -(-(S - tr) // r), -(-S // r)
    items = tn0 + (BH - th - 1) * tnr
    if tail and tf < ntiles and items <= grid:
        ntiles = tf + items
    else:
        tf = ntiles
    work, load = [], [0.0] * grid
    for cta in range(grid):
        for t in range(cta, ntiles, grid):
            if t >= tf:
                i = t - tf
                head = th if i < tn0 else th + 1 + (i - tn0) // tnr
                m0 = tr + i * r if i < tn0 else (i - tn0) % tnr * r
                rows = r
            else:
                head, m0, rows = t // nmb, t % nmb * bm, bm
            work.append((cta, head, m0, rows))
            load[cta] += rows / bm
    return work, max(load)


def covered_once(S, BH, consumers, work):
    seen = {}
    for _, head, m0, rows in work:
        for cw in range(consumers):
            if cw * 64 < rows:
                for row in range(m0 + cw * 64, min(S, m0 + cw * 64 + 64)):
                    seen[(head, row)] = seen.get((head, row), 0) + 1
    return len(seen) == S * BH and all(v == 1 for v in seen.values())


def main(argv):
    if not argv or argv[0] in ("-h", "--help"):
        print(__doc__)
        return 0 if argv else 2
    if argv[0] == "--check":
        n = used = 0
        for S in (1, 64, 77, 128, 200, 512, 900, 1000, 2048, 4096):
            for BH in (1, 2, 6, 7, 8, 9, 24, 32, 40, 64, 128):
                for sms in (114, 132):
                    for c in (2, 3):
                        work, mk = schedule(S, BH, sms, c)
                        if not covered_once(S, BH, c, work):
                            print(f"MISS S={S} BH={BH} SMs={sms} consumers={c}")
                            return 1
                        n += 1
                        used += mk < schedule(S, BH, sms, c, tail=False)[1]
        print(f"{n} cases: every row computed once; TAIL shortens the makespan in {used}")
        return 0
    for a in argv:
        try:
            f = [int(x) for x in a.split(",")]
            B, H, S, c = f[:4]
            sms = f[4] if len(f) > 4 else 132
        except (ValueError, IndexError):
            print(f"tail_sched.py: bad shape '{a}' (B,H,S,CONSUMERS[,SMS])", file=sys.stderr)
            return 2
        _, old = schedule(S, B * H, sms, c, tail=False)
        work, new = schedule(S, B * H, sms, c)
        tiles = -(-S // (64 * c)) * B * H
        print(f"B{B} H{H} S{S} {c} consumers, {sms} SMs: {tiles} tiles ({tiles / sms:.2f} waves); "
              f"makespan {old:.2f} tiles without TAIL, {new:.2f} with; rows once: {covered_once(S, B * H, c, work)}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

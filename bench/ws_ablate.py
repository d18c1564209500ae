#!/usr/bin/env python3
"""ws_ablate.py -- where the time of a warp-specialised attention kernel goes.

For each export of the attention template's WS path (`evoeng export --format
json`, WS=1), writes ablated copies of its source and times them side by side
in one bench/compare_sdpa.py process (CUDA-graph replays, contenders in a
shuffled order each round):

  full       the kernel as exported (the ablation switches all 0)
  nomax      no row maxima (nor their shuffles, vote and rescale): the
             exponentials subtract a fixed 16 (P stays far below fp16's limit)
  nomufu     the exponentials as one FMUL each (saturated, -x/16 in [0, 1])
             instead of MUFU.EX2; the FFMA before it, the sums and packing stay
  nosoftmax  no mask, row maxima, exponentials or rescale: P is the raw
             scores, and the row sums a constant
  noqk       no Q K^T wgmma: the scores are the last tile's P (0 at a tile's
             start), opaque to the compiler; the loads and waits stay
  nopv       no P V wgmma (nor LSUM's row-sum wgmma): P is still packed

The ablated kernels compute wrong outputs by design, so they are run with the
check's tolerance opened (--atol 1e30): a NaN or inf still fails, and each graph
is still proven to write its output (compare_sdpa.py's NaN fill). The time a
variant saves against `full` is what that part costs on the critical path;
the parts overlap, so the savings do not add up to the whole.

Usage:
  bench/ws_ablate.py EXPORT.json [...] --out DIR [--rounds 2] [--replays 15]
  bench/ws_ablate.py EXPORT.json [...] --out DIR --prepare-only   (no GPU)

--prepare-only writes DIR/<export>.<variant>.json and DIR/<export>.<variant>.cu
(the source, for `evoeng check --source`) and stops. Otherwise the script runs
compare_sdpa.py --rounds times (the variants in reverse order every other
time), writes DIR/round_K.json and DIR/ablation.json and prints a table.
Exit status: 0 done, 1 an export is not a WS-path attention export or a run
failed, 2 usage.
"""

import argparse
import json
import os
import subprocess
import sys

VARIANTS = ("full", "nomax", "nomufu", "nosoftmax", "noqk", "nopv")
# the switch each ablated variant turns on ("full": none)
VARIANT_FLAG = {"nomax": "EVO_ABL_NOMAX", "nomufu": "EVO_ABL_NOMUFU", "nosoftmax": "EVO_ABL_NOSOFT",
                "noqk": "EVO_ABL_NOQK", "nopv": "EVO_ABL_NOPV"}
FLAGS = tuple(VARIANT_FLAG.values())
WHAT = {
    "full": "the kernel as exported",
    "nomax": "no row maxima (exp2 against a fixed 16)",
    "nomufu": "exponentials as FMUL.SATs (no MUFU.EX2)",
    "nosoftmax": "no mask, maxima, exponentials, sums or rescale",
    "noqk": "no Q K^T wgmma",
    "nopv": "no P V wgmma",
}

# (anchor, replacement): each anchor must occur exactly once in the source.
# They name the WS path's lambdas in templates/attention/attention_ws.cuh.
PATCHES = (
    # the mask: nothing to mask without a softmax
    ("auto mask = [&](float *sc, int n) {\n",
     "auto mask = [&](float *sc, int n) {\n        if (EVO_ABL_NOSOFT) return;\n"),
    # row maxima: none; alpha 1, no move
    ("auto row_max = [&](const float *sc, int r, float *alpha, bool &move) -> float {\n",
     "auto row_max = [&](const float *sc, int r, float *alpha, bool &move) -> float {\n"
     "        if (EVO_ABL_NOSOFT || EVO_ABL_NOMAX) { move = false; alpha[r] = 1.f; return EVO_ABL_NOMAX ? 16.f : 0.f; }\n"),
    # exponentials: none (P = raw scores, a constant sum), or FMULs
    ("auto row_exp = [&](float *sc, int r, float m_use, int c0, int c1) -> float {\n",
     "auto row_exp = [&](float *sc, int r, float m_use, int c0, int c1) -> float {\n"
     "        if (EVO_ABL_NOSOFT) return 2.f * (float)(c1 - c0);\n"),
    ("const float p = att_exp(fmaf(sc[nt8 * 4 + 2 * r + e], sl, -m_use));",
     "const float p = EVO_ABL_EXP(fmaf(sc[nt8 * 4 + 2 * r + e], sl, -m_use));"),
    # Q K^T: none; the scores are what the registers hold
    ("AttWg<QN, 0>::mma(sc + c * QN / 2, qf[kk],",
     "if (!EVO_ABL_NOQK) AttWg<QN, 0>::mma(sc + c * QN / 2, qf[kk],"),
    ("float sc[WS_BN / 2];",
     "float sc[WS_BN / 2];\n"
     "    if (EVO_ABL_NOQK) {   /* scores are the last tile's P, starting from 0 */\n"
     "#pragma unroll\n"
     "        for (int i_ = 0; i_ < WS_BN / 2; ++i_)\n"
     "            sc[i_] = 0.f;\n"
     "    }"),
    # P V (and LSUM's P x ones)
    ("AttWg<64, 1>::mma(acc + c * 32, pa[kk],",
     "if (!EVO_ABL_NOPV) AttWg<64, 1>::mma(acc + c * 32, pa[kk],"),
    ("AttWg<8, 0>::mma(lsum, pa[kk], od, 1);",
     "if (!EVO_ABL_NOPV) AttWg<8, 0>::mma(lsum, pa[kk], od, 1);"),
)


class AblateError(Exception):
    pass


def header(variant):
    lines = ["// ws_ablate.py: variant '%s' (%s)" % (variant, WHAT[variant])]
    for f in FLAGS:
        lines.append("#define %s %d" % (f, 1 if VARIANT_FLAG.get(variant) == f else 0))
    if variant == "nomufu":
        lines.append("static __device__ __forceinline__ float evo_abl_exp(float x)")
        lines.append("{   /* one FMUL.SAT: -inf (a masked score) gives 1, never inf or NaN */")
        lines.append("    float y;")
        lines.append("    asm(\"mul.rn.sat.f32 %0, %1, 0fBD800000;\" : \"=f\"(y) : \"f\"(x));")
        lines.append("    return y;")
        lines.append("}")
        lines.append("#define EVO_ABL_EXP(x) evo_abl_exp(x)")
    else:
        lines.append("#define EVO_ABL_EXP(x) att_exp(x)")
    return "\n".join(lines) + "\n"


def patch_source(src, path):
    """The export's source with the ablation switches in (all variants)."""
    for anchor, repl in PATCHES:
        n = src.count(anchor)
        if n != 1:
            raise AblateError("%s: the WS path's %r occurs %d times in the source (want 1): "
                              "not a WS=1 attention export of this template version"
                              % (path, anchor.strip()[:60], n))
        src = src.replace(anchor, repl)
    return src


def prepare(paths, out):
    """Writes the variant exports; returns [(export path, variant, variant path)]."""
    made = []
    for path in paths:
        try:
            with open(path) as f:
                exp = json.load(f)
        except (OSError, ValueError) as e:
            raise AblateError("%s: %s" % (path, e))
        if not isinstance(exp, dict) or not isinstance(exp.get("source"), str):
            raise AblateError("%s: no 'source' string: not an `evoeng export --format json` file" % path)
        params = exp.get("params")
        if isinstance(params, dict) and params.get("WS") not in (1, "1"):
            raise AblateError("%s: WS=%s: the ablations are of the WS path (WS=1)" % (path, params.get("WS")))
        body = patch_source(exp["source"], path)
        stem = os.path.splitext(os.path.basename(path))[0]
        for v in VARIANTS:
            e = dict(exp)
            e["source"] = header(v) + body
            e["ablation"] = v
            vp = os.path.join(out, "%s.%s.json" % (stem, v))
            with open(vp, "w") as f:
                json.dump(e, f)
            with open(os.path.join(out, "%s.%s.cu" % (stem, v)), "w") as f:
                f.write(e["source"])
            made.append((path, v, vp))
    return made


def run_rounds(made, out, rounds, replays):
    here = os.path.dirname(os.path.abspath(__file__))
    files = [vp for _, _, vp in made]
    results = []
    for k in range(rounds):
        order = files if k % 2 == 0 else list(reversed(files))
        rj = os.path.join(out, "round_%d.json" % (k + 1))
        cmd = [sys.executable, os.path.join(here, "compare_sdpa.py"), *order, "--only", "evoeng",
               "--atol", "1e30", "--rtol", "0", "--replays", str(replays), "--out", rj]
        print("ws_ablate: round %d of %d: %d kernels" % (k + 1, rounds, len(order)), flush=True)
        with open(os.path.join(out, "round_%d.txt" % (k + 1)), "w") as log:
            rc = subprocess.call(cmd, stdout=log, stderr=subprocess.STDOUT)
        if rc != 0 or not os.path.exists(rj):
            raise AblateError("compare_sdpa.py exited %d in round %d (log: %s)"
                              % (rc, k + 1, os.path.join(out, "round_%d.txt" % (k + 1))))
        with open(rj) as f:
            results.append({r["path"]: r["contenders"]["evoeng"] for r in json.load(f)["results"]})
    return results


def summarise(made, results):
    rows = []
    for path, v, vp in made:
        us = [r.get(vp, {}).get("us") for r in results]
        status = [r.get(vp, {}).get("status", "n/a") for r in results]
        rows.append({"export": path, "variant": v, "what": WHAT[v], "us": us, "status": status})
    full = {r["export"]: r["us"] for r in rows if r["variant"] == "full"}
    for r in rows:
        f = full.get(r["export"], [])
        r["ratio"] = [(u / g) if (u and g) else None for u, g in zip(r["us"], f)]
    return rows


def print_table(rows):
    print("%-36s %-10s %-24s %-24s %s" % ("export", "variant", "us (each round)", "/ full (each round)", "what"))
    for r in rows:
        us = " ".join("%.2f" % u if u else "n/a" for u in r["us"])
        ra = " ".join("%.3f" % x if x else "n/a" for x in r["ratio"])
        print("%-36s %-10s %-24s %-24s %s" % (os.path.basename(r["export"])[:36], r["variant"], us, ra, r["what"]))


def main(argv):
    ap = argparse.ArgumentParser(description="Ablations of WS-path attention exports, timed side by side "
                                 "(see the header of this file).")
    ap.add_argument("exports", nargs="+", metavar="EXPORT.json")
    ap.add_argument("--out", required=True, metavar="DIR", help="directory for the variants and results")
    ap.add_argument("--prepare-only", action="store_true", help="write the variants and stop (no GPU)")
    ap.add_argument("--rounds", type=int, default=2, help="compare_sdpa.py runs, alternating order (default 2)")
    ap.add_argument("--replays", type=int, default=15, help="timed replays a kernel a round (default 15)")
    args = ap.parse_args(argv)
    if args.rounds < 1 or args.replays < 1:
        ap.error("--rounds and --replays must be at least 1")
    os.makedirs(args.out, exist_ok=True)
    try:
        made = prepare(args.exports, args.out)
        print("ws_ablate: %d variants of %d exports in %s" % (len(made), len(args.exports), args.out))
        if args.prepare_only:
            return 0
        rows = summarise(made, run_rounds(made, args.out, args.rounds, args.replays))
    except AblateError as e:
        print("ws_ablate: %s" % e, file=sys.stderr)
        return 1
    with open(os.path.join(args.out, "ablation.json"), "w") as f:
        json.dump({"rows": rows}, f, indent=1)
    print_table(rows)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

#!/usr/bin/env python3
"""Compare NVRTC CPU and cubins of the attention template, unit by unit,
between two trees (baseline, candidate), with evoeng's options.

  python3 nvrtc_mix.py BASE_ROOT [CAND_ROOT] [-n 3] [--only i,j] [--extra-base OPT ...]
                       [--extra-cand OPT ...] [--save DIR] [--trace DIR] [--phases]
                       [--mix default|FILE.json] [--units all|bench]

A copy of raw/2026-11-27i/nvrtc_cmp.py for the unit mix of a seed run
(2026-11-28): --mix names a JSON list of [name, {params}] (default: the
built-in MIX below); each configuration is compiled as the four units a
kept child costs (D=64 CAUSAL=0, the benchmark; D=64 CAUSAL=1, D=128,
D=128 CAUSAL=1: the gate's), in its own DTYPE.  --phases adds NVRTC's
--time phases (front end, NVVM optimizer, PTX translation = ptxas; wall ms)
of one untimed compile per unit and tree.  --units bench: only D=64 C=0.

Extends docs/results/raw/2026-11-27h/nvrtc_flags.py: a list of configs
(KEY=VALUE dicts; compile dims D, CAUSAL, DTYPE become #defines like evoeng's
template_render; B, H, S, HKV, SQ are runtime, so they do not enter the
source), CPU-s as the median of n compiles (runs interleaved base/cand), sha1
of the cubin.  Compiles run in this process one at a time."""
import argparse, ctypes, glob, hashlib, json, os, re, resource, statistics, sys

ap = argparse.ArgumentParser()
ap.add_argument("base")
ap.add_argument("cand", nargs="?")
ap.add_argument("-n", type=int, default=3)
ap.add_argument("--only", default="")
ap.add_argument("--extra-base", action="append", default=[])
ap.add_argument("--extra-cand", action="append", default=[])
ap.add_argument("--save", default="")
ap.add_argument("--trace", default="")
ap.add_argument("--ptx", action="store_true", help="also hash the PTX")
ap.add_argument("--phases", action="store_true", help="NVRTC --time phases of one untimed compile per unit")
ap.add_argument("--mix", default="default")
ap.add_argument("--units", default="all")
args = ap.parse_args()

lib = ctypes.CDLL(os.environ.get("NVRTC", "libnvrtc.so.13"))


def expand(tdir, f):
    out = []
    for line in open(os.path.join(tdir, f)):
        m = re.match(r'\s*#include "(.*)"', line)
        out.append(expand(tdir, m.group(1)) if m else line)
    return "".join(out)


def load_tree(root):
    src = expand(os.path.join(root, "templates/attention"), "attention.cu")
    k = open(os.path.join(root, "src/compile/kfile.c")).read()
    i = k.index("static const char prelude_text[] =")
    pre = "".join(re.findall(r'"((?:[^"\\]|\\.)*)"', k[i:k.index(";", i)])).encode().decode("unicode_escape")
    pre = pre.replace("#include <stdint.h>\n", "")
    return src, pre


BASE = ["--gpu-architecture=sm_90a", "-std=c++17", "--minimal", "--include-path=/usr/local/cuda/include",
        "--include-path=/usr/local/cuda/include/cccl", "--ptxas-options=-v", "-default-device",
        "--pre-include=evoeng_prelude.h"]
COMPILE_DIMS = ("D", "CAUSAL", "DTYPE")
RUNTIME_DIMS = ("B", "H", "S", "HKV", "SQ")


MIX = [
    ("seed", {}),
    ("mma_s2", {"STAGES": 2}),
    ("mma_ovl_s2", {"OVERLAP": 1, "STAGES": 2}),
    ("wgmma_s3", {"WGMMA": 1}),
    ("wgmma_s2_win", {"STAGES": 2, "WGMMA": 1, "DESCADD": 1, "PACKGQA": 1}),
    ("ws_c1_s2_win", {"STAGES": 2, "WS": 1, "CONSUMERS": 1, "REGSPLIT": 0, "DESCADD": 1, "PVSPLIT": 2, "EARLY": 1}),
    ("ws_s1_ovl_win", {"BLOCK_M": 128, "STAGES": 1, "OVERLAP": 1, "WS": 1, "REGSPLIT": 0, "STAGGER": 1}),
    ("ws_bn256_lazy_win", {"BLOCK_M": 128, "BLOCK_N": 256, "STAGES": 2, "O_STAGE": 0, "WS": 1, "PERSIST": 1,
                           "LAZY": 1, "STAGGER": 1, "PACKGQA": 1}),
    ("ws_s3_tail_win", {"BLOCK_M": 128, "WS": 1, "PERSIST": 1, "LAZY": 1, "TAIL": 1, "DESCADD": 1, "PVSPLIT": 2,
                        "EARLY": 1, "PACKGQA": 1}),
    ("ws_s3_plain", {"BLOCK_M": 128, "WS": 1}),
    ("ws_maxskip2_lazy", {"BLOCK_M": 128, "WS": 1, "MAXSKIP": 2, "LAZY": 1}),
    ("ws_maxskip1_bn256", {"BLOCK_M": 128, "BLOCK_N": 256, "STAGES": 2, "WS": 1, "PERSIST": 1, "LAZY": 1,
                           "MAXSKIP": 1}),
    ("ws_bf16_lazy", {"BLOCK_M": 128, "STAGES": 2, "WS": 1, "PERSIST": 1, "LAZY": 1, "DTYPE": 1}),
]
UNITS = [(64, 0), (64, 1), (128, 0), (128, 1)]


def configs(root):
    mix = MIX if args.mix == "default" else [tuple(x) for x in json.load(open(args.mix))]
    out = []
    for n, d in mix:
        for dd, cc in (UNITS if args.units == "all" else UNITS[:1]):
            out.append(("%s/d%dc%d" % (n, dd, cc), dict(d, D=dd, CAUSAL=cc)))
    return out


def render(src, cfg):
    """evoeng's template_render: #defines of compile dims and params, then the template."""
    head = "// evoeng: rendered from attention.cu\n"
    for k, v in cfg.items():
        if k in RUNTIME_DIMS:
            continue
        head += "#define %s %d\n" % (k, v) if v >= 0 else "#define %s (%d)\n" % (k, v)
    return head + '#line 1 "attention.cu"\n' + src


def compile_once(src, pre, extra):
    prog = ctypes.c_void_p()
    hs = (ctypes.c_char_p * 1)(pre.encode())
    hn = (ctypes.c_char_p * 1)(b"evoeng_prelude.h")
    assert lib.nvrtcCreateProgram(ctypes.byref(prog), src.encode(), b"attention.cu", 1, hs, hn) == 0
    o = [x.encode() for x in BASE + extra]
    r0 = resource.getrusage(resource.RUSAGE_SELF)
    rc = lib.nvrtcCompileProgram(prog, len(o), (ctypes.c_char_p * len(o))(*o))
    r1 = resource.getrusage(resource.RUSAGE_SELF)
    n = ctypes.c_size_t()
    lib.nvrtcGetProgramLogSize(prog, ctypes.byref(n))
    logb = ctypes.create_string_buffer(n.value)
    lib.nvrtcGetProgramLog(prog, logb)
    n = ctypes.c_size_t()
    lib.nvrtcGetCUBINSize(prog, ctypes.byref(n))
    cub = ctypes.create_string_buffer(n.value)
    lib.nvrtcGetCUBIN(prog, cub)
    ptx = b""
    if args.ptx:
        n = ctypes.c_size_t()
        lib.nvrtcGetPTXSize(prog, ctypes.byref(n))
        pb = ctypes.create_string_buffer(n.value)
        lib.nvrtcGetPTX(prog, pb)
        ptx = pb.raw
    lib.nvrtcDestroyProgram(ctypes.byref(prog))
    if rc != 0:
        sys.stderr.write(logb.value.decode(errors="replace")[-3000:])
        raise SystemExit("compile failed")
    cpu = r1.ru_utime - r0.ru_utime + r1.ru_stime - r0.ru_stime
    return cpu, cub.raw, logb.value.decode(errors="replace"), ptx


def code_hash(cub):
    """sha1 of the cubin without its .note.nv.tkinfo section (ptxas' option string)."""
    import struct
    shoff = struct.unpack_from("<Q", cub, 0x28)[0]
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", cub, 0x3A)
    sh = [struct.unpack_from("<IIQQQQIIQQ", cub, shoff + i * shentsize) for i in range(shnum)]
    stro = sh[shstrndx][4]
    h = hashlib.sha1()
    for s in sh:
        name = cub[stro + s[0]:cub.index(b"\0", stro + s[0])]
        if name == b".note.nv.tkinfo":
            continue
        h.update(name + b"\0" + struct.pack("<IQ", s[1], s[5]))
        if s[1] != 8:
            h.update(cub[s[4]:s[4] + s[5]])
    return h.hexdigest()[:10]


def regs(log):
    """registers of each entry; then '!' and the stack/spill bytes where any is not 0"""
    r = ";".join(re.findall(r"Used (\d+) registers", log))
    sp = sum(int(x) for t in re.findall(r"(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads", log)
             for x in t)
    return r + ("!spill%d" % sp if sp else "")


def sass_len(cub):
    """instructions of each .text.<entry> section (16 bytes each), as entry:count"""
    import struct
    shoff = struct.unpack_from("<Q", cub, 0x28)[0]
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", cub, 0x3A)
    sh = [struct.unpack_from("<IIQQQQIIQQ", cub, shoff + i * shentsize) for i in range(shnum)]
    stro = sh[shstrndx][4]
    out = []
    for s in sh:
        name = cub[stro + s[0]:cub.index(b"\0", stro + s[0])].decode()
        if name.startswith(".text.") and s[5] > 64 * 16:
            out.append("%s:%d" % (name[6:].replace("attn_", ""), s[5] // 16))
    return ",".join(out)


trees = [("base", args.base, args.extra_base)]
if args.cand:
    trees.append(("cand", args.cand, args.extra_cand))
loaded = {t: load_tree(r) for t, r, _ in trees}
cfgs = configs(args.base)
if args.only:
    keep = set(args.only.split(","))
    cfgs = [c for i, c in enumerate(cfgs) if str(i) in keep or c[0] in keep]

print("NVRTC", os.environ.get("NVRTC", "libnvrtc.so.13"), "n=%d" % args.n, "base", args.base, args.extra_base,
      "cand", args.cand, args.extra_cand, flush=True)
tot = {t: 0.0 for t, _, _ in trees}
allsame = True
allcode = True
for idx, (name, cfg) in enumerate(cfgs):
    res = {}
    phases = {}
    times = {t: [] for t, _, _ in trees}
    for rep in range(args.n + (1 if args.trace or args.phases else 0)):
        for t, root, extra in trees:
            src, pre = loaded[t]
            ex = list(extra)
            if args.trace and rep == 0:
                ex.append("-fdevice-time-trace=%s/%s_%s" % (args.trace, name.replace("/", "_"), t))
            if args.phases and rep == 0:
                ex.append("--time=/tmp/nvrtc_mix_phases.csv")
                if os.path.exists("/tmp/nvrtc_mix_phases.csv"):
                    os.unlink("/tmp/nvrtc_mix_phases.csv")
            cpu, cub, log, ptx = compile_once(render(src, cfg), pre, ex)
            if args.phases and rep == 0:
                ph = {}
                for ln in open("/tmp/nvrtc_mix_phases.csv").read().splitlines()[1:]:
                    f = [x.strip() for x in ln.split(",")]
                    ph[f[1]] = ph.get(f[1], 0) + float(f[2])
                phases[t] = "fe %d opt %d ptxas %d" % (ph.get("CUDA C++ Frontend", 0), ph.get("NVVM Optimizer", 0),
                                                    ph.get("PTX Translation", 0))
            if (args.trace or args.phases) and rep == 0:
                continue   # tracing costs time: not timed
            times[t].append(cpu)
            h = hashlib.sha1(cub).hexdigest()[:10]
            ph = hashlib.sha1(ptx).hexdigest()[:10] if args.ptx else ""
            if t in res and res[t][0] != h:
                print("  !! %s %s: cubin not deterministic" % (name, t))
            res[t] = (h, regs(log) + " " + sass_len(cub), ph, code_hash(cub))
            if args.save:
                open(os.path.join(args.save, "%s_%s.cubin" % (name.replace("/", "_"), t)), "wb").write(cub)
                if args.ptx:
                    open(os.path.join(args.save, "%s_%s.ptx" % (name.replace("/", "_"), t)), "wb").write(ptx)
    line = "%2d %-28s" % (idx, name)
    for t, _, _ in trees:
        ts = sorted(times[t])
        med = statistics.median(ts)
        tot[t] += med
        line += "  %s %.3f [%.3f-%.3f] %s/%s r%s" % (t, med, ts[0], ts[-1], res[t][0], res[t][3], res[t][1])
        if args.ptx:
            line += " ptx " + res[t][2]
        if args.phases:
            line += " (" + phases[t] + ")"
    if args.cand:
        same = res["base"][0] == res["cand"][0]
        csame = res["base"][3] == res["cand"][3]
        allsame &= same
        allcode &= csame
        line += "  %s %+.1f%%" % ("SAME" if same else ("CODE-SAME" if csame else "DIFF"), 100 * (statistics.median(times["cand"]) /
                                                                  statistics.median(times["base"]) - 1))
    print(line, flush=True)
print("TOTAL " + "  ".join("%s %.3f" % (t, v) for t, v in tot.items()) +
      ("  cand/base %.4f  all cubins identical: %s  all code (cubin less tkinfo) identical: %s" % (tot["cand"] / tot["base"], allsame, allcode) if args.cand else ""))

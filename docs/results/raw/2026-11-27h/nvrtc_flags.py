#!/usr/bin/env python3
"""The CPU of one NVRTC unit of the attention template's default
configuration (the seed shape's compile dims and the other three of its
gate), with evoeng's options (src/compile/nvrtc.c), and with variations.
Runs on a machine without a GPU: python3 nvrtc_flags.py REPO_ROOT.
NVRTC=libnvrtc.alt.so.13 picks the other library."""
import ctypes, hashlib, os, re, resource, sys

root = sys.argv[1] if len(sys.argv) > 1 else "."
lib = ctypes.CDLL(os.environ.get("NVRTC", "libnvrtc.so.13"))
tdir = os.path.join(root, "templates/attention/")


def expand(f):
    out = []
    for line in open(tdir + f):
        m = re.match(r'\s*#include "(.*)"', line)
        out.append(expand(m.group(1)) if m else line)
    return "".join(out)


SRC = expand("attention.cu")
# the prelude evoeng pre-includes, without its <stdint.h> (evoeng serves its own)
k = open(os.path.join(root, "src/compile/kfile.c")).read()
i = k.index("static const char prelude_text[] =")
PRELUDE = "".join(re.findall(r'"((?:[^"\\]|\\.)*)"', k[i:k.index(";", i)])).encode().decode("unicode_escape")
PRELUDE = PRELUDE.replace("#include <stdint.h>\n", "")
BASE = ["--gpu-architecture=sm_90a", "-std=c++17", "--minimal", "--include-path=/usr/local/cuda/include",
        "--include-path=/usr/local/cuda/include/cccl", "--ptxas-options=-v", "-default-device",
        "--pre-include=evoeng_prelude.h"]


def compile_once(dims, extra):
    src = "".join("#define %s %s\n" % kv for kv in dims.items()) + SRC
    prog = ctypes.c_void_p()
    hs = (ctypes.c_char_p * 1)(PRELUDE.encode())
    hn = (ctypes.c_char_p * 1)(b"evoeng_prelude.h")
    assert lib.nvrtcCreateProgram(ctypes.byref(prog), src.encode(), b"attention.cu", 1, hs, hn) == 0
    o = [x.encode() for x in BASE + extra]
    r0 = resource.getrusage(resource.RUSAGE_SELF)
    rc = lib.nvrtcCompileProgram(prog, len(o), (ctypes.c_char_p * len(o))(*o))
    r1 = resource.getrusage(resource.RUSAGE_SELF)
    n = ctypes.c_size_t()
    lib.nvrtcGetCUBINSize(prog, ctypes.byref(n))
    cub = ctypes.create_string_buffer(n.value)
    lib.nvrtcGetCUBIN(prog, cub)
    lib.nvrtcDestroyProgram(ctypes.byref(prog))
    assert rc == 0, "compile failed"
    return r1.ru_utime - r0.ru_utime + r1.ru_stime - r0.ru_stime, hashlib.sha1(cub.raw).hexdigest()[:8]


def row(label, dims, extra, n=3):
    ts, h = [], ""
    for _ in range(n):
        t, h = compile_once(dims, extra)
        ts.append(t)
    print("%-34s %s  CPU-s %s  cubin %s" % (label, " ".join("%s=%s" % kv for kv in dims.items()),
                                           " ".join("%.3f" % t for t in sorted(ts)), h), flush=True)


seed = {"D": 64, "CAUSAL": 0, "DTYPE": 0}
print("NVRTC library:", os.environ.get("NVRTC", "libnvrtc.so.13"),
      "MALLOC_ARENA_MAX=" + os.environ.get("MALLOC_ARENA_MAX", "(unset)"))
for d in (64, 128):
    for c in (0, 1):
        row("evoeng's options", {"D": d, "CAUSAL": c, "DTYPE": 0}, [])
row("+ --dopt=on", seed, ["--dopt=on"])
row("+ -Xptxas -O3", seed, ["-Xptxas", "-O3"])
row("+ --time (phases to nvrtc_phases.csv)", seed, ["--time=/tmp/nvrtc_phases.csv"], 1)
print(open("/tmp/nvrtc_phases.csv").read())

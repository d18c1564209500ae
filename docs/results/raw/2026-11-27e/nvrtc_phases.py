#!/usr/bin/env python3
# NVRTC's --time phases (front end, NVVM optimizer, ptxas) for exported attention kernels,
# compiled with evoeng's options for sm_90a. No GPU needed. From the repository root:
#   python3 docs/results/raw/2026-11-27e/nvrtc_phases.py docs/results/raw/2026-11-27d/exports/*.json
import ctypes, json, os, sys, tempfile
nv = ctypes.CDLL('libnvrtc.so.13')
tot = {'CUDA C++ Frontend': 0.0, 'NVVM Optimizer': 0.0, 'PTX Translation': 0.0}
for f in sys.argv[1:]:
    d = json.load(open(f))
    tf = os.path.join(tempfile.mkdtemp(), 'time.csv')
    opts = ['-std=c++17', '--include-path=/usr/local/cuda/include', '-default-device', '--minimal',
            '--gpu-architecture=sm_90a', '--ptxas-options=-v', '--time=' + tf]
    prog = ctypes.c_void_p()
    nv.nvrtcCreateProgram(ctypes.byref(prog), d['source'].encode(), b"attention.cu", 0, None, None)
    arr = (ctypes.c_char_p * len(opts))(*[o.encode() for o in opts])
    if nv.nvrtcCompileProgram(prog, len(opts), arr) != 0:
        print(f, 'compile failed'); continue
    ph = {}
    for line in open(tf).read().splitlines()[1:]:
        p = [x.strip() for x in line.split(',')]
        ph[p[1]] = float(p[2])
    for k in tot: tot[k] += ph.get(k, 0)
    print('%-16s WS=%d front %4.0f  nvvm %4.0f  ptxas %4.0f  total %4.0f ms' % (
        os.path.basename(f)[:-5], d['params']['WS'], ph.get('CUDA C++ Frontend', 0),
        ph.get('NVVM Optimizer', 0), ph.get('PTX Translation', 0), sum(ph.values())))
s = sum(tot.values()) or 1
print('share of the total: front %.0f%%, nvvm %.0f%%, ptxas %.0f%%' % tuple(100 * tot[k] / s for k in tot))

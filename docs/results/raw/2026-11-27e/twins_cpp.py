#!/usr/bin/env python3
# For each exported attention kernel: the one-knob changes whose source, after GCC's preprocessor
# standing in for NVRTC's (with __CUDA_ARCH__=900 and __CUDA_ARCH_FEAT_SM90_ALL, as for sm_90a),
# is the same text as the export's. The task's constraints are not applied. From the repository root:
#   python3 docs/results/raw/2026-11-27e/twins_cpp.py docs/results/raw/2026-11-27d/exports/*.json
import hashlib, json, os, re, subprocess, sys
task = json.load(open('templates/attention/task.json'))
CPP = ['cpp', '-P', '-x', 'c++', '-undef', '-D__CUDA_ARCH__=900', '-D__CUDA_ARCH_FEAT_SM90_ALL',
       '-D__CUDACC__', '-D__NVCC__', '-']
def pp(src):
    return hashlib.sha256(subprocess.run(CPP, input=src.encode(), capture_output=True).stdout).hexdigest()
for f in sys.argv[1:]:
    src = json.load(open(f))['source']
    base = pp(src)
    same, diff = [], 0
    for k, v in task['params'].items():
        cur = re.search(r'^#define %s (\S+)$' % k, src, re.M).group(1)
        for val in v['values']:
            if str(val) == cur:
                continue
            s2 = re.sub(r'^#define %s \S+$' % k, '#define %s %s' % (k, val), src, flags=re.M)
            if pp(s2) == base:
                same.append('%s=%s' % (k, val))
            else:
                diff += 1
    print(os.path.basename(f)[:-5], 'same', len(same), 'diff', diff, ' '.join(same))

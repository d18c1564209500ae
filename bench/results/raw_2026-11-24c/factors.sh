#!/usr/bin/env bash
# usage: diag/factors.sh OUTFILE EXPORT...
out=$1; shift
E=$PWD/build/src/evoeng; T=templates/attention/task.json
export EVOENG_CACHE_DIR=/tmp/evoeng-cache
for exp in "$@"; do
  params=$(python3 -c "import json,sys; p=json.load(open(sys.argv[1]))['params']; print(','.join('%s=%s' % kv for kv in p.items()))" "$exp")
  dims=$(python3 -c "import json,sys,re; s=json.load(open(sys.argv[1]))['plan']['shape']; print(' '.join('--dim %s' % t for t in re.findall(r'[A-Z]+=\d+', s)))" "$exp")
  echo "=== $exp: $dims; $params"
  $E bench $T $dims --params "$params" --json --db /tmp/fb.db 2>/dev/null | python3 -c "import json,sys; j=json.load(sys.stdin); print('evoeng bench #1', j.get('latency_us'))"
  timeout 300 python3 diag/timing_factors.py "$exp" --rounds ${ROUNDS:-40}
  python3 bench/compare_sdpa.py "$exp" --only evoeng 2>&1 | grep -E "us/call|graph"
  $E bench $T $dims --params "$params" --json --db /tmp/fb.db 2>/dev/null | python3 -c "import json,sys; j=json.load(sys.stdin); print('evoeng bench #2', j.get('latency_us'))"
done > "$out" 2>&1

#!/usr/bin/env bash
out=$1; shift
E=$PWD/build/src/evoeng; T=templates/attention/task.json
export EVOENG_CACHE_DIR=/tmp/evoeng-cache
for exp in "$@"; do
  params=$(python3 -c "import json,sys; p=json.load(open(sys.argv[1]))['params']; print(','.join('%s=%s' % kv for kv in p.items()))" "$exp")
  dims=$(python3 -c "import json,sys,re; s=json.load(open(sys.argv[1]))['plan']['shape']; print(' '.join('--dim %s' % t for t in re.findall(r'[A-Z]+=\d+', s)))" "$exp")
  echo "=== $exp"
  for i in 1 2; do
  $E bench $T $dims --params "$params" --json --db /tmp/fb.db 2>/dev/null | python3 -c "import json,sys; j=json.load(sys.stdin); print('evoeng bench', round(j.get('latency_us'),3))"
  for o in "" "--graph-only"; do
    echo "compare_sdpa $o: $(python3 bench/compare_sdpa.py "$exp" $o 2>&1 | grep -E "us/call" | sed 's/ (median.*//' | tr '\n' ' ')"
  done
  done
done > "$out" 2>&1

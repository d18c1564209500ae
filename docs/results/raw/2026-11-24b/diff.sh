#!/usr/bin/env bash
export EVOENG_CACHE_DIR=/tmp/evoeng-cache
O=$1; mkdir -p $O
for x in seed8 seedbest b4h8s2048d64c0 b4h8s2048d128c0; do
  X=diag/ex/$x.json
  P=$(python3 -c "import json;print(','.join('%s=%s'%kv for kv in json.load(open('$X'))['params'].items()))")
  D=$(python3 -c "import json,re;e=json.load(open('$X'));print(' '.join('--dim %s=%s'%kv for kv in re.findall(r'([A-Z]+)=?(\d+)', e['plan']['shape'])))")
  build/src/evoeng bench templates/attention/task.json $D --params $P --json --db /tmp/pv.db > $O/$x.ev1.json 2>/dev/null
  for v in "--only evoeng" "--only evoeng --no-diff" "" ; do
    python3 bench/compare_sdpa.py $X $v --out $O/cmp.json > $O/cmp.log 2>&1 || tail -5 $O/cmp.log
    python3 -c "
import json,sys
c=json.load(open(sys.argv[1]))['results'][0]['contenders']
e=c['evoeng']; cu=c['cudnn']
print(sys.argv[2], sys.argv[3] or 'rotation', '%.2f (min %.2f max %.2f) x%s overhead %s' % (e['us'], e['min_us'], e['max_us'], e.get('calls'), e.get('replay_overhead_us')), ('cuDNN %.2f' % cu['us']) if cu.get('us') else '')" $O/cmp.json $x "$v"
  done
  build/src/evoeng bench templates/attention/task.json $D --params $P --json --db /tmp/pv.db > $O/$x.ev2.json 2>/dev/null
  python3 -c "import json,sys;print(sys.argv[3], 'evoeng', json.load(open(sys.argv[1]))['latency_us'], json.load(open(sys.argv[2]))['latency_us'])" $O/$x.ev1.json $O/$x.ev2.json $x
done

#!/usr/bin/env bash
export EVOENG_CACHE_DIR=/tmp/evoeng-cache
O=$1; mkdir -p $O
for x in seed8 seedbest; do
  X=diag/ex/$x.json
  P=$(python3 -c "import json;print(','.join('%s=%s'%kv for kv in json.load(open('$X'))['params'].items()))")
  build/src/evoeng bench templates/attention/task.json --params $P --json --db /tmp/pv.db > $O/$x.ev1.json 2>/dev/null
  for v in "" "--side-stream" "--calls 200" "--side-stream --calls 200" "--no-hold --calls 50" "--side-stream --no-hold --calls 50"; do
    python3 bench/compare_sdpa.py $X --only evoeng $v --out $O/cmp.json > $O/cmp.log 2>&1
    python3 -c "import json,sys;c=json.load(open(sys.argv[1]))['results'][0]['contenders']['evoeng'];print(sys.argv[2], sys.argv[3] or 'default', '%.2f (min %.2f) x%s' % (c['us'], c['min_us'], c.get('calls')))" $O/cmp.json $x "$v"
  done
  build/src/evoeng bench templates/attention/task.json --params $P --json --db /tmp/pv.db > $O/$x.ev2.json 2>/dev/null
  python3 -c "import json,sys;print(sys.argv[3], 'evoeng', json.load(open(sys.argv[1]))['latency_us'], json.load(open(sys.argv[2]))['latency_us'])" $O/$x.ev1.json $O/$x.ev2.json $x
done

#!/usr/bin/env bash
# diag: process-to-process spread of compare_sdpa (alone) and evoeng bench on two seed-shape exports
export EVOENG_CACHE_DIR=/tmp/evoeng-cache
O=$1; mkdir -p $O
for x in seed8 seedbest; do
  X=diag/ex/$x.json
  P=$(python3 -c "import json;print(','.join('%s=%s'%kv for kv in json.load(open('$X'))['params'].items()))")
  for i in 1 2 3 4 5; do
    build/src/evoeng bench templates/attention/task.json --params $P --json --db /tmp/pv.db > $O/$x.ev$i.json 2>/dev/null
    python3 bench/compare_sdpa.py $X --only evoeng --out $O/$x.cmp$i.json > $O/$x.cmp$i.log 2>&1
  done
  python3 - $O $x <<'PY'
import json, sys
o, x = sys.argv[1], sys.argv[2]
ev = [json.load(open(f"{o}/{x}.ev{i}.json")).get("latency_us") for i in range(1, 6)]
cm = []
for i in range(1, 6):
    c = json.load(open(f"{o}/{x}.cmp{i}.json"))["results"][0]["contenders"]["evoeng"]
    cm.append((c.get("us"), c.get("min_us"), c.get("max_us")))
print(x, "evoeng:", " ".join("%.2f" % v for v in ev))
print(x, "compare median (min-max):", " ".join("%.2f (%.2f-%.2f)" % t for t in cm))
PY
done

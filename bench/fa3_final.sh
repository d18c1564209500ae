#!/usr/bin/env bash
# One device call for the WS (FlashAttention-3-style) path of the attention
# template: the gate of every valid WS configuration, the A/B timings, the
# side-by-side against cuDNN / FA2 of a WS configuration per large shape,
# then the attention correctness sweep. Writes at most 8 files to OUT.
# Usage: bench/fa3_final.sh OUT [BUDGET_S]
set -u
O=${1:?usage: fa3_final.sh OUT [BUDGET_S]}
budget=${2:-560}
t0=$(date +%s)
el() { echo $(( $(date +%s) - t0 )); }
E=build/src/evoeng
T=templates/attention/task.json
export EVO_SOURCE_ROOT=$PWD EVOENG_CACHE_DIR=/tmp/evc EVOENG=$PWD/$E PYTHONUNBUFFERED=1
log=$O/log.txt
$E --version 2>&1 | tee -a $log
echo "=== [$(el)s] gate of every valid WS configuration" | tee -a $log
WS_GATE=all WS_PAR=4 bash bench/ws_ab.sh $O gate 2>&1 | tail -3 | tee -a $log
if grep -q "^FAIL.*PINGPONG=1" $O/gate_raw.txt; then
    echo "PINGPONG configurations failed: the knob is cut to 0 for the rest of this call" | tee -a $log
    python3 - <<'PY'
import json, collections
p = "templates/attention/task.json"
t = json.load(open(p), object_pairs_hook=collections.OrderedDict)
t["params"]["PINGPONG"]["values"] = [0]
open(p, "w").write(json.dumps(t, indent=2) + "\n")
PY
fi
grep "^FAIL" -A20 $O/gate_raw.txt >> $log; rm -f $O/gate_raw.txt
echo "=== [$(el)s] A/B against the FA2-path best, and one-knob A/Bs" | tee -a $log
bash bench/ws_ab.sh $O ab > /dev/null 2>&1
bash bench/ws_ab.sh $O knobs > /dev/null 2>&1
echo "=== [$(el)s] side by side with cuDNN and FA2 (WS warm start, 10 s search per shape)" | tee -a $log
mkdir -p /tmp/ex
python3 - $O/ab.txt > /tmp/ex/pick.txt <<'PY'
import re, sys
best = {}
cur = None
for line in open(sys.argv[1]):
    m = re.match(r"--- (.*) (WS=1\S*)", line)
    if m:
        cur = (m.group(1).strip(), m.group(2)); continue
    m = re.search(r"latency\s+([\d.]+) us median", line)
    if m and cur:
        us = float(m.group(1))
        if cur[0] not in best or us < best[cur[0]][0]:
            best[cur[0]] = (us, cur[1])
for dims, (us, cfg) in best.items():
    print(f"{cfg}|{dims}")
PY
cat /tmp/ex/pick.txt | tee -a $log
i=0
while IFS='|' read -r cfg dims; do
    i=$((i + 1))
    python3 - "$cfg" <<'PY'
import json, collections, sys
p = "templates/attention/task.json"
t = json.load(open(p), object_pairs_hook=collections.OrderedDict)
for kv in sys.argv[1].split(","):
    k, v = kv.split("=")
    t["params"][k]["default"] = int(v)
open("templates/attention/task_ws.json", "w").write(json.dumps(t, indent=2) + "\n")
PY
    $E run --task templates/attention/task_ws.json $dims --time-limit 10s --population 4 --children 4 --db /tmp/ex/s$i.db > /tmp/ex/run$i.txt 2>&1
    $E export --best --format json --db /tmp/ex/s$i.db -o /tmp/ex/e$i.json >> /tmp/ex/run$i.txt 2>&1 || tail -5 /tmp/ex/run$i.txt | tee -a $log
done < /tmp/ex/pick.txt
rm -f templates/attention/task_ws.json
timeout 150 python3 bench/compare_sdpa.py /tmp/ex/e*.json --out $O/sdpa.json > $O/sdpa.txt 2>&1
tail -12 $O/sdpa.txt | tee -a $log
left=$(( budget - $(el) ))
n=200
[ $left -lt 300 ] && n=$(( (left - 40) * 200 / 260 ))
[ $n -lt 20 ] && n=20
echo "=== [$(el)s] attention correctness sweep, EVO_SWEEP_SAMPLE=$n ($left s left)" | tee -a $log
EVO_SWEEP_SAMPLE=$n timeout $(( left > 30 ? left - 5 : 25 )) sh tests/test_gpu_sweep.sh > $O/sweep.txt 2>&1
echo "sweep exit $?" | tee -a $log
grep -E "check exit|OK|FAIL" $O/sweep.txt | tail -3 | tee -a $log
echo "=== [$(el)s] done" | tee -a $log

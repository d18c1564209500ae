#!/usr/bin/env bash
# WS path against PyTorch SDPA (cuDNN, FA2), one device call: for each large
# shape a 10 s search warm-started from a WS configuration (the task's
# defaults set to it), a plain search of SEARCH_S seconds from the task's
# own defaults at B4 H8 S2048 D64, exports, then bench/compare_sdpa.py over
# all of them; plus A/Bs at D=128. Writes at most 8 files to OUT.
# Usage: [WS_EXTRA=,PERSIST=1] [AB128=0] bench/fa3_sdpa.sh OUT [SEARCH_S (0: none)]
set -u
O=${1:?usage: fa3_sdpa.sh OUT [SEARCH_S]}
search=${2:-120}
E=build/src/evoeng
T=templates/attention/task.json
export EVO_SOURCE_ROOT=$PWD EVOENG_CACHE_DIR=/tmp/evc PYTHONUNBUFFERED=1
t0=$(date +%s)
el() { echo $(( $(date +%s) - t0 )); }
log=$O/log.txt
mkdir -p /tmp/ex
C3="WS=1,CONSUMERS=3,BLOCK_M=192,BLOCK_N=128,STAGES=2${WS_EXTRA:-}"
C2PP="WS=1,CONSUMERS=2,BLOCK_M=128,BLOCK_N=128,STAGES=2,OVERLAP=1,PINGPONG=1${WS_EXTRA:-}"
i=0
warm() {   # warm CONFIG DIMS...
    local cfg=$1; shift
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
    $E run --task templates/attention/task_ws.json "$@" --time-limit 10s --population 4 --children 4 --db /tmp/ex/w$i.db > /tmp/ex/w$i.txt 2>&1
    $E export --best --format json --db /tmp/ex/w$i.db -o /tmp/ex/e$i.json >> /tmp/ex/w$i.txt 2>&1 || tail -5 /tmp/ex/w$i.txt | tee -a $log
    rm -f templates/attention/task_ws.json
    echo "[$(el)s] warm $cfg $*: $(grep -o '"params": {[^}]*}' /tmp/ex/e$i.json | head -1)" | tee -a $log
}
warm $C3 --dim B=4 --dim H=8 --dim S=2048
warm $C3 --dim B=4 --dim H=8 --dim S=2048 --dim CAUSAL=1
warm $C3 --dim B=8 --dim H=16 --dim S=512
warm $C2PP --dim B=8 --dim H=16 --dim S=512 --dim CAUSAL=1
warm $C2PP --dim B=4 --dim H=8 --dim S=2048 --dim D=128
warm $C2PP --dim B=4 --dim H=8 --dim S=2048 --dim D=128 --dim CAUSAL=1
if [ "$search" -gt 0 ]; then
echo "=== [$(el)s] plain search, $search s, B4 H8 S2048 D64, from the task defaults" | tee -a $log
$E run --task $T --dim B=4 --dim H=8 --dim S=2048 --time-limit ${search}s --population 6 --children 6 --db /tmp/ex/plain.db > $O/search.txt 2>&1
$E export --best --format json --db /tmp/ex/plain.db -o /tmp/ex/e9.json >> $O/search.txt 2>&1
tail -4 $O/search.txt | tee -a $log
fi
echo "=== [$(el)s] compare_sdpa" | tee -a $log
timeout 200 python3 bench/compare_sdpa.py /tmp/ex/e*.json --out $O/sdpa.json > $O/sdpa.txt 2>&1
tail -22 $O/sdpa.txt | tee -a $log
[ "${AB128:-1}" = 0 ] && exit 0
echo "=== [$(el)s] A/B at D=128: WS (A) against the template default (B)" | tee -a $log
for dims in "--dim B=4 --dim H=8 --dim S=2048 --dim D=128" "--dim B=4 --dim H=8 --dim S=2048 --dim D=128 --dim CAUSAL=1"; do
    for c in $C2PP "WS=1,CONSUMERS=2,BLOCK_M=128,BLOCK_N=128,STAGES=2" "WS=1,CONSUMERS=3,BLOCK_M=192,BLOCK_N=128,STAGES=2"; do
        echo "--- $dims $c" >> $O/ab128.txt
        timeout 60 $E bench $T $dims --params "$c" --against "BLOCK_M=64" 2>&1 | grep -E "verdict|latency|TFLOP|vs against|error|fail" >> $O/ab128.txt
    done
done
grep -E "^---|throughput|ratio" $O/ab128.txt | cut -c1-160 | tee -a $log
echo "=== [$(el)s] done" | tee -a $log

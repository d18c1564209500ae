#!/usr/bin/env bash
# One device call for the WS path's persistent scheduler (PERSIST): the gate
# of every valid WS configuration (PERSIST 0 and 1), A/Bs of PERSIST=1
# against PERSIST=0 and against the FA2-path best at the four large D=64
# shapes, the attention sweep, then the side by side with cuDNN / FA2 of
# WS configurations with PERSIST=1. At most 8 files to OUT.
# Usage: bench/fa3_persist.sh OUT
set -u
O=${1:?usage: fa3_persist.sh OUT}
E=build/src/evoeng
T=templates/attention/task.json
export EVO_SOURCE_ROOT=$PWD EVOENG_CACHE_DIR=/tmp/evc EVOENG=$PWD/$E PYTHONUNBUFFERED=1
t0=$(date +%s)
el() { echo $(( $(date +%s) - t0 )); }
log=$O/log.txt
echo "=== [$(el)s] gate of every valid WS configuration" | tee -a $log
WS_GATE=all WS_PAR=4 bash bench/ws_ab.sh $O gate 2>&1 | tail -2 | tee -a $log
if grep -q "^FAIL.*PERSIST=1" $O/gate_raw.txt; then
    echo "PERSIST configurations failed: the knob is cut to 0 for the rest of this call" | tee -a $log
    python3 - <<'PY'
import json, collections
p = "templates/attention/task.json"
t = json.load(open(p), object_pairs_hook=collections.OrderedDict)
t["params"]["PERSIST"]["values"] = [0]
open(p, "w").write(json.dumps(t, indent=2) + "\n")
PY
fi
grep "^FAIL" -A20 $O/gate_raw.txt | head -80 >> $log; rm -f $O/gate_raw.txt
echo "=== [$(el)s] A/B: PERSIST=1 against PERSIST=0, and against the FA2-path best" | tee -a $log
BEST="WGMMA=1,BLOCK_M=64,BLOCK_N=128,WARPS=4,STAGES=3"
for dims in "--dim B=4 --dim H=8 --dim S=2048" "--dim B=4 --dim H=8 --dim S=2048 --dim CAUSAL=1" \
            "--dim B=8 --dim H=16 --dim S=512" "--dim B=8 --dim H=16 --dim S=512 --dim CAUSAL=1"; do
    for c in "WS=1,CONSUMERS=3,BLOCK_M=192,BLOCK_N=128,STAGES=2" "WS=1,CONSUMERS=2,BLOCK_M=128,BLOCK_N=128,STAGES=2,OVERLAP=1,PINGPONG=1"; do
        for b in "$c" "$BEST"; do
            echo "--- $dims A=$c,PERSIST=1 B=$b" >> $O/persist_ab.txt
            timeout 60 $E bench $T $dims --params "$c,PERSIST=1" --against "$b" 2>&1 | grep -E "verdict|latency|TFLOP|vs against|error|fail" >> $O/persist_ab.txt
        done
    done
done
grep -E "^---|throughput|ratio" $O/persist_ab.txt | sed -E 's/vs against .*: ([0-9.]+ us); interleaved A\/B ratio \(this\/against\) ([0-9.]+).*: (.*)/B \1 A\/B \2 \3/' | cut -c1-170 | tee -a $log
echo "=== [$(el)s] attention correctness sweep" | tee -a $log
EVO_SWEEP_SAMPLE=200 timeout 200 sh tests/test_gpu_sweep.sh > $O/sweep.txt 2>&1
echo "sweep exit $?" | tee -a $log
grep -E "check exit|^OK|^FAIL" $O/sweep.txt | tail -3 | tee -a $log
echo "=== [$(el)s] side by side (PERSIST=1)" | tee -a $log
WS_EXTRA=,PERSIST=1 AB128=0 timeout 200 bash bench/fa3_sdpa.sh $O 0 > /dev/null 2>&1
tail -12 $O/sdpa.txt | tee -a $log
echo "=== [$(el)s] done" | tee -a $log

#!/usr/bin/env bash
# usage: diag/sass.sh EXPORT ENTRY
exp=$1; entry=$2
E=$PWD/build/src/evoeng; T=templates/attention/task.json
rm -rf /tmp/ecx /tmp/export-*.cubin; export EVOENG_CACHE_DIR=/tmp/ecx
params=$(python3 -c "import json,sys; p=json.load(open(sys.argv[1]))['params']; print(','.join('%s=%s' % kv for kv in p.items()))" "$exp")
dims=$(python3 -c "import json,sys,re; s=json.load(open(sys.argv[1]))['plan']['shape']; print(' '.join('--dim %s' % t for t in re.findall(r'[A-Z]+=\d+', s)))" "$exp")
$E bench $T $dims --params "$params" --json --db /tmp/fb.db 2>/dev/null | python3 -c "import json,sys; j=json.load(sys.stdin); print('evoeng bench', j.get('latency_us'))"
CALLS_LIST=32,256 python3 diag/timing_factors.py "$exp" --rounds 30 | grep -E "cubin|calls|slope"
py=$(ls /tmp/export-*.cubin | head -1)
cuobjdump -sass "$py" | sed -n "/Function : $entry\$/,/Function :/p" | grep -v "^\s*$" > /tmp/py.sass
echo "python cubin $py: $(wc -l < /tmp/py.sass) sass lines"
best=
for f in /tmp/ecx/*.cubin; do
  cuobjdump -sass "$f" | sed -n "/Function : $entry\$/,/Function :/p" | grep -v "^\s*$" > /tmp/e.sass
  [ -s /tmp/e.sass ] || continue
  n=$(diff /tmp/py.sass /tmp/e.sass | grep -c '^[<>]')
  echo "evoeng cubin $f: $(wc -l < /tmp/e.sass) sass lines, $n differing lines"
  if [ -z "$best" ] || [ "$n" -lt "$bn" ]; then best=$f; bn=$n; fi
done
echo "closest: $best ($bn)"
diff /tmp/py.sass <(cuobjdump -sass "$best" | sed -n "/Function : $entry\$/,/Function :/p" | grep -v "^\s*$") | head -40
EVO_CUBIN=$best CALLS_LIST=32,256 python3 diag/timing_factors.py "$exp" --rounds 30 | grep -E "cubin|calls|slope"

#!/bin/sh
# GPU demo of the LLM operator against the loopback stub (issue 7, part 6).
# Serves the four hand-written attention variants of scenario.json (see
# make_scenario.py) and runs a short search that asks the "LLM" for half
# of each generation's children, then prints `evoeng status`.
#
#   sh bench/llm_gpu_demo/run_demo.sh            (from the repository root)
#   EVOENG=build/src/evoeng DB=/tmp/llm_demo.db PORT=18080 EXTRA='--jobs 1' sh bench/llm_gpu_demo/run_demo.sh
#
# Expected: 4 requests (the budget), one child each: the BLOCK_N-default
# variant accepted (or reverted by noise: it is the same kernel), the
# doubled-scale one failed (incorrect), the misspelt one failed
# (compile_error), the STAGES 1 + expf one reverted (or accepted if it is
# not slower on this GPU). No API key is needed: the URL is loopback.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
EVOENG=${EVOENG:-$root/build/src/evoeng}
DB=${DB:-$root/population/llm_demo.db}
PORT=${PORT:-18080}
PY=${PYTHON3:-python3}

"$PY" "$here/make_scenario.py"
tmp=$(mktemp -d)
out=$tmp/stub.out
# The stub exits when its stdin reaches EOF: its stdin is a fifo that this
# script holds open on fd 3, so the stub goes away with the script.
mkfifo "$tmp/stdin"
"$PY" "$root/tests/llm_stub.py" --port "$PORT" --script "$here/scenario.json" \
    --scenario demo --max-seconds 7200 <"$tmp/stdin" >"$out" 2>&1 &
stub=$!
exec 3>"$tmp/stdin"
trap 'exec 3>&-; kill $stub 2>/dev/null || true; rm -rf "$tmp"' EXIT INT TERM
i=0
until grep -q '^PORT' "$out"; do
    i=$((i + 1))
    [ $i -lt 100 ] || { echo "run_demo.sh: the stub did not start" >&2; exit 1; }
    sleep 0.1
done

rm -f "$DB" "$DB-wal" "$DB-shm"
cd "$root"
"$EVOENG" run --task templates/attention/task.json --db "$DB" \
    --generations 2 --population 4 --children 4 --seed 1 \
    --llm openai --llm-url "http://127.0.0.1:$PORT/v1" --llm-model stub-demo \
    --llm-mode full --llm-rate 0.5 --llm-concurrency 4 --llm-max-requests 4 ${EXTRA:-}
"$EVOENG" status --db "$DB"
echo
echo "requests:"
q="SELECT r.id, r.generation, r.status, c.id, c.status, c.decision, printf('%.3f', c.ratio_to_parent)
   FROM llm_requests r LEFT JOIN candidates c ON c.id = r.candidate_id ORDER BY r.id"
# the sqlite3 shell where there is one, else Python's sqlite3 module
sqlite3 "$DB" "$q" 2>/dev/null || "$PY" -c 'import sqlite3, sys
for row in sqlite3.connect(sys.argv[1]).execute(sys.argv[2]): print("|".join(map(str, row)))' "$DB" "$q"

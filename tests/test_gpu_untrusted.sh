#!/bin/sh
# GPU test of untrusted input in a real run (issue 35):
#   1. LLM children that include a host file (#include "/proc/self/environ",
#      a computed #include) are refused before NVRTC runs: they are
#      recorded as compile_error "refused", and the secret the environment
#      holds reaches neither the store, nor the compile cache, nor a later
#      prompt; the run goes on and completes.
#   2. One process at a time per run: while a run is going, 'resume' of it
#      is refused (exit 4) naming the holder's pid; once the run stopped,
#      resume continues it.
#   3. resume does not run the --llm-cmd the store names, until it is
#      given again.
# Skips (77) without a GPU.
set -u
E=${EVOENG:?}
ROOT=${EVO_SOURCE_ROOT:?}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
if ! "$E" --version 2>&1 | grep -q "^GPU 0:"; then echo "SKIP: no GPU"; exit 77; fi
fails=0
ok() { echo "ok   $1"; }
bad() { echo "FAIL $1"; fails=$((fails + 1)); }
q() { python3 -c "import sqlite3,sys; print('\n'.join('|'.join(map(str,r)) for r in sqlite3.connect(sys.argv[1]).execute(sys.argv[2])))" "$1" "$2"; }

# The "LLM": every prompt is answered with the softmax kernel, the first
# reply including /proc/self/environ, the second a computed include of it,
# then the kernel unchanged; each prompt is kept (prompts/N.txt).
secret=evoeng-gpu-secret-$$
mkdir -p "$tmp/prompts"
kernel=$(cat "$ROOT/templates/softmax/softmax.cu")
printf '```cuda\n#include "/proc/self/environ"\n%s\n```\n' "$kernel" > "$tmp/reply1.md"
printf '```cuda\n#define EVIL "/proc/self/environ"\n#include EVIL\n%s\n```\n' "$kernel" > "$tmp/reply2.md"
printf 'A plain variant.\n```cuda\n%s\n```\n' "$kernel" > "$tmp/reply3.md"
cat > "$tmp/llm.sh" <<EOF
#!/bin/sh
n=\$(ls "$tmp/prompts" | wc -l)
cat > "$tmp/prompts/\$n.txt"
r=\$(( n % 3 + 1 ))
cat "$tmp/reply\$r.md"
EOF
chmod +x "$tmp/llm.sh"
db=$tmp/pop.db
export EVOENG_CACHE_DIR=$tmp/cache
args="--task $ROOT/templates/softmax/task.json --population 4 --children 4 --seed 3 --db $db"
EVOENG_GPU_SECRET=$secret "$E" run $args --generations 3 --llm-cmd "$tmp/llm.sh" --llm-rate 1 --quiet \
    > "$tmp/run.log" 2>&1
rc=$?
[ "$rc" -eq 0 ] && ok "the run with hostile LLM children completes" || { bad "the run exits $rc"; tail -20 "$tmp/run.log"; }
refused=$(q "$db" "SELECT count(*) FROM candidates WHERE operator = 'llm' AND status = 'compile_error' AND error LIKE '%refused%'")
[ "${refused:-0}" -ge 1 ] && ok "$refused LLM children refused before NVRTC (compile_error, refused)" ||
    bad "no LLM child was refused: $(q "$db" "SELECT status, error FROM candidates WHERE operator = 'llm'")"
if grep -rqa "$secret" "$db" "$db-wal" "$tmp/cache" "$tmp/prompts" 2>/dev/null; then
    bad "the secret reached the store, the cache or a prompt"
else
    ok "the secret is in neither the store, the cache nor any prompt"
fi

# 2. a run in progress is locked: resume of it is refused, naming the holder
"$E" run --task "$ROOT/templates/triad/task.json" --generations 200 --db "$tmp/lock.db" --quiet > "$tmp/long.log" 2>&1 &
pid=$!
i=0
while [ "$(q "$tmp/lock.db" "SELECT count(*) FROM candidates" 2>/dev/null || echo 0)" -lt 2 ] && [ $i -lt 600 ]; do
    sleep 0.5; i=$((i + 1))
done
"$E" resume 1 --db "$tmp/lock.db" --quiet > "$tmp/second.log" 2>&1
rc=$?
if [ "$rc" -eq 4 ] && grep -q "run 1 is in use by another process: pid $pid host" "$tmp/second.log"; then
    ok "a second process's resume of the running run is refused, naming pid $pid"
else
    bad "second resume: exit $rc: $(cat "$tmp/second.log")"
fi
kill -INT "$pid"
wait "$pid"
"$E" resume 1 --db "$tmp/lock.db" --generations 1 --quiet > "$tmp/third.log" 2>&1
rc=$?
[ "$rc" -eq 0 ] && ok "once the run stopped, resume continues it" || { bad "resume after the stop: exit $rc"; tail "$tmp/third.log"; }

# 3. the store's --llm-cmd is not run by resume without consent
"$E" resume --db "$db" --generations 4 --quiet > "$tmp/r1.log" 2>&1
rc=$?
if [ "$rc" -eq 2 ] && grep -q "resume does not run a command read from the store" "$tmp/r1.log"; then
    ok "resume refuses the stored --llm-cmd"
else
    bad "resume with a stored --llm-cmd: exit $rc: $(cat "$tmp/r1.log")"
fi
n0=$(ls "$tmp/prompts" | wc -l)
EVOENG_GPU_SECRET=$secret "$E" resume --db "$db" --generations 4 --llm-cmd "$tmp/llm.sh" --quiet > "$tmp/r2.log" 2>&1
rc=$?
n1=$(ls "$tmp/prompts" | wc -l)
[ "$rc" -eq 0 ] && [ "$n1" -gt "$n0" ] && ok "resume --llm-cmd (given again) continues with it ($((n1 - n0)) prompts)" ||
    bad "resume --llm-cmd: exit $rc, prompts $n0 -> $n1"
echo "$fails failed"
[ "$fails" -eq 0 ]

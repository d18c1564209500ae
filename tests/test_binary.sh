#!/bin/sh
# The evoeng binary end to end, without a GPU: it starts, answers --help
# and --version with no libcuda.so.1 (forced absent with EVOENG_LIBCUDA),
# serves an empty store, and uses its documented exit codes.
set -u
EVOENG=${EVOENG:?EVOENG must point to the binary}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fails=0
pass=0
expect() { # expect CODE DESCRIPTION -- command...
    want=$1; what=$2; shift 3
    "$@" >"$tmp/out" 2>"$tmp/err"; got=$?
    if [ "$got" -ne "$want" ]; then
        echo "FAIL $what: exit $got, expected $want"; sed 's/^/  out: /' "$tmp/out" | head -5; sed 's/^/  err: /' "$tmp/err" | head -5
        fails=$((fails + 1))
    else
        echo "ok   $what"; pass=$((pass + 1))
    fi
}
grep_out() { # grep_out FILE PATTERN DESCRIPTION
    if grep -q -- "$2" "$tmp/$1"; then echo "ok   $3"; pass=$((pass + 1));
    else echo "FAIL $3: '$2' not in $1:"; sed 's/^/  /' "$tmp/$1" | head -10; fails=$((fails + 1)); fi
}
export EVOENG_LIBCUDA=/nonexistent/libcuda.so.1

expect 0 "--help" -- "$EVOENG" --help
grep_out out "usage: evoeng <command>" "--help prints usage to stdout"
grep_out out "Exit codes" "--help documents exit codes"
for c in run resume status top lineage show export check bench runs; do
    expect 0 "$c --help" -- "$EVOENG" "$c" --help
    grep_out out "usage: evoeng $c" "$c --help prints its usage"
done
expect 0 "--version without libcuda.so.1" -- "$EVOENG" --version
grep_out out "^evoeng [0-9]" "--version prints the version"
grep_out out "NVRTC [0-9]" "--version prints the NVRTC version"
grep_out out "CUDA driver: not found" "--version says the driver is missing"
# Read-only commands never create a store (issue 14): a missing one exits 4.
expect 4 "status on a missing store" -- "$EVOENG" status --db "$tmp/x.db"
if [ -e "$tmp/x.db" ]; then echo "FAIL status created the store"; fails=$((fails + 1)); else echo "ok   status created no store"; pass=$((pass + 1)); fi
# An empty file is no store: refused, and left as it was (issue 35).
: >"$tmp/empty.db"
expect 4 "status on an empty file" -- "$EVOENG" status --db "$tmp/empty.db"
grep_out err "an empty file, not a population store" "status says the file is empty"
if [ -s "$tmp/empty.db" ] || [ -e "$tmp/empty.db-wal" ] || [ -e "$tmp/empty.db-shm" ]; then
    echo "FAIL status wrote to the empty file"; fails=$((fails + 1)); else echo "ok   the empty file is unchanged"; pass=$((pass + 1)); fi
# A store of schema version 0 (evoeng's application_id, no table): read
# through a copy migrated in memory, the file itself unchanged.
PY=${PYTHON3:-python3}
"$PY" -c 'import sqlite3, sys; c = sqlite3.connect(sys.argv[1]); c.execute("PRAGMA application_id = 1163284293"); c.commit()' "$tmp/x.db"
cp "$tmp/x.db" "$tmp/x.orig"
expect 0 "status on an empty store of an older schema" -- "$EVOENG" status --db "$tmp/x.db"
grep_out out "no runs yet" "status says there are no runs"
expect 0 "top on an empty store" -- "$EVOENG" top --db "$tmp/x.db"
if cmp -s "$tmp/x.db" "$tmp/x.orig" && [ ! -e "$tmp/x.db-wal" ]; then echo "ok   reading an older store leaves it unchanged"; pass=$((pass + 1));
else echo "FAIL reading an older store changed it"; fails=$((fails + 1)); fi
expect 1 "show of a missing candidate" -- "$EVOENG" show 3 --db "$tmp/x.db"
grep_out err "no candidate 3" "show names the missing candidate"
expect 2 "unknown option" -- "$EVOENG" status --frobnicate
grep_out err "^evoeng: unknown option '--frobnicate'" "usage errors go to stderr with the prefix"
# the timing variables of the environment are checked before anything else (no GPU needed)
expect 2 "a bad EVOENG_SAMPLE_MS is a usage error" -- env EVOENG_SAMPLE_MS=fast "$EVOENG" bench "$EVO_SOURCE_ROOT/templates/attention/task.json" --db "$tmp/env.db"
grep_out err "EVOENG_SAMPLE_MS='fast': expected the least length of a timing sample in ms, from 0.05 to 1000" "it names the variable, the value and the range"
expect 2 "an out-of-range EVOENG_SAMPLE_MS is a usage error" -- env EVOENG_SAMPLE_MS=0.001 "$EVOENG" run --generations 1 --db "$tmp/env.db"
expect 2 "a bad EVOENG_TIMING_HOLD is a usage error" -- env EVOENG_TIMING_HOLD=yes "$EVOENG" run --generations 1 --db "$tmp/env.db"
grep_out err "EVOENG_TIMING_HOLD='yes': expected 0" "it names the hold variable"
if [ -e "$tmp/env.db" ]; then echo "FAIL a rejected run created its store"; fails=$((fails + 1)); else echo "ok   a rejected run creates no store"; pass=$((pass + 1)); fi
expect 2 "unknown command" -- "$EVOENG" frobnicate
expect 2 "no command" -- "$EVOENG"
printf 'not a database at all, just text\n%.0s' 1 2 3 4 5 6 7 8 9 >"$tmp/junk.db"
cp "$tmp/junk.db" "$tmp/junk.orig"
expect 4 "a file that is not a database" -- "$EVOENG" status --db "$tmp/junk.db"
grep_out err "not an evoeng database" "the store error names the problem"
if cmp -s "$tmp/junk.db" "$tmp/junk.orig"; then echo "ok   the foreign file is unchanged"; pass=$((pass + 1));
else echo "FAIL the foreign file was changed"; fails=$((fails + 1)); fi
expect 5 "run without a GPU" -- "$EVOENG" run --generations 1 --db "$tmp/run.db"
grep_out err "GPU" "run says a GPU is needed"
expect 5 "bench without a GPU" -- "$EVOENG" bench "${EVO_SOURCE_ROOT}/templates/attention/task.json" --db "$tmp/run.db"
grep_out err "GPU" "bench says a GPU is needed"
expect 5 "bench --repeat (A/A) without a GPU" -- "$EVOENG" bench "${EVO_SOURCE_ROOT}/templates/triad/task.json" --repeat 3 --shared 0 --db "$tmp/run.db"
expect 2 "bench --repeat 0 is a usage error" -- "$EVOENG" bench --repeat 0
grep_out err "repeat: expected an integer from 1" "the bad --repeat value is named"
expect 2 "bench --shared 2 is a usage error" -- "$EVOENG" bench --shared 2
# check: the attention task without a GPU, then the compile cache.
export EVOENG_CACHE_DIR="$tmp/cache"
expect 0 "check the attention task for sm_90" -- "$EVOENG" check "$EVO_SOURCE_ROOT/templates/attention/task.json" --arch sm_90 --sample 1
grep_out out "valid after constraints" "check prints the space before and after constraints"
grep_out out "configurations, [0-9][0-9]* valid after constraints" "check counts the attention task's valid space exactly (enumerated, no 'about')"
grep_out out "(default)" "check prints the compile table with the default"
expect 0 "check the WGMMA path of the attention template (NVRTC target sm_90a)" -- "$EVOENG" check "$EVO_SOURCE_ROOT/templates/attention/task.json" --arch sm_90 --params WGMMA=1,BLOCK_N=64 --sample 0
grep_out out "WGMMA=1,WS=0,CONSUMERS=2,REGSPLIT=1,PINGPONG=0,PERSIST=0,LOADS=0,LAZY=0,TAIL=0,LSUM=0,DESCADD=0,PVSPLIT=0,EARLY=0,STAGGER=0,MAXSKIP=0  (--params)" "check compiles the --params configuration"
expect 0 "check the warp-specialised path (WS=1, TMA tensor maps, sm_90a)" -- "$EVOENG" check "$EVO_SOURCE_ROOT/templates/attention/task.json" --arch sm_90 --params WS=1,CONSUMERS=3,BLOCK_M=192,STAGES=2 --sample 0
grep_out out "WS=1,CONSUMERS=3,REGSPLIT=1,PINGPONG=0,PERSIST=0,LOADS=0,LAZY=0,TAIL=0,LSUM=0,DESCADD=0,PVSPLIT=0,EARLY=0,STAGGER=0,MAXSKIP=0  (--params)" "check compiles the WS configuration"
# LOADS=1: the WS producer loads with cp.async (all 128 producer threads) in
# place of TMA; check compiles every (D, CAUSAL) unit of the task's shapes
# and fails on any spill (the task allows 0), the producer's 24 or 32
# registers under REGSPLIT included: 1, 2 (persistent, ping-pong), 3 consumers.
for p in WS=1,CONSUMERS=1,BLOCK_M=64,REGSPLIT=0,STAGES=2,OVERLAP=1,LOADS=1 \
         WS=1,CONSUMERS=2,BLOCK_M=128,STAGES=2,OVERLAP=1,PINGPONG=1,PERSIST=1,LOADS=1 \
         WS=1,CONSUMERS=3,BLOCK_M=192,BLOCK_N=128,STAGES=1,OVERLAP=1,LOADS=1; do
    expect 0 "check the WS path with cp.async loads ($p)" -- "$EVOENG" check "$EVO_SOURCE_ROOT/templates/attention/task.json" --arch sm_90 --params "$p" --sample 0
    grep_out out "LOADS=1,LAZY=0,TAIL=0,LSUM=0,DESCADD=0,PVSPLIT=0,EARLY=0,STAGGER=0,MAXSKIP=0  (--params)" "check compiles the LOADS=1 configuration"
done
# O_STAGE on the WS path: 1 (the default) stores 16 bytes a lane after a
# quad transpose of the accumulator pairs, 0 the 4-byte fragment stores;
# both compile on every unit without a spill.
for p in WS=1,CONSUMERS=2,BLOCK_M=128,STAGES=2,OVERLAP=1,PINGPONG=1,PERSIST=1,O_STAGE=0 \
         WS=1,CONSUMERS=1,BLOCK_M=64,REGSPLIT=0,BLOCK_N=64,STAGES=1,O_STAGE=1; do
    expect 0 "check the WS path's epilogue ($p)" -- "$EVOENG" check "$EVO_SOURCE_ROOT/templates/attention/task.json" --arch sm_90 --params "$p" --sample 0
    grep_out out "O_STAGE=${p##*O_STAGE=},CLUSTER=0.*WS=1.*(--params)" "check compiles the WS configuration with O_STAGE=${p##*O_STAGE=}"
done
# LAZY on the WS path (stale row maxima up to 2^8, no rescale until one
# would grow past that): compiles on every unit without a spill, from 1 to 3
# consumers, and is a WS knob only.
for p in WS=1,CONSUMERS=2,BLOCK_M=128,STAGES=2,OVERLAP=1,PINGPONG=1,PERSIST=1,LAZY=1 \
         WS=1,CONSUMERS=3,BLOCK_M=192,BLOCK_N=128,STAGES=2,OVERLAP=1,LAZY=1 \
         WS=1,CONSUMERS=1,BLOCK_M=64,REGSPLIT=0,BLOCK_N=64,STAGES=1,LAZY=1; do
    expect 0 "check the WS path's lazy rescale ($p)" -- "$EVOENG" check "$EVO_SOURCE_ROOT/templates/attention/task.json" --arch sm_90 --params "$p" --sample 0
    grep_out out "LAZY=1,TAIL=0,LSUM=0,DESCADD=0,PVSPLIT=0,EARLY=0,STAGGER=0,MAXSKIP=0  (--params)" "check compiles the WS configuration with LAZY=1"
done
# TAIL (the persistent scheduler's last wave as items of all consumer
# warpgroups but one): in the search since its gate and A/Bs ran on an H100
# (bench/results raw 19); the task compiles it with 2 and 3 consumers, TMA
# and cp.async, ping-pong and not, and refuses it without PERSIST or with
# one consumer. Its gate shapes (B1 H40 S900, D=64 and 128: a last wave
# that TAIL cuts on 114- and 132-SM GPUs) are in the task.
TT="$EVO_SOURCE_ROOT/templates/attention/task.json"
expect 0 "check lists the task's shapes" -- "$EVOENG" check "$TT" --arch sm_90 --sample 0 --json
grep_out out 'B=1 H=40 S=900 D=128' "the task gates TAIL on B1 H40 S900 D=128"
for p in WS=1,CONSUMERS=3,BLOCK_M=192,BLOCK_N=128,STAGES=3,PERSIST=1,LAZY=1,TAIL=1 \
         WS=1,CONSUMERS=2,BLOCK_M=128,STAGES=3,OVERLAP=1,PINGPONG=1,PERSIST=1,TAIL=1 \
         WS=1,CONSUMERS=3,BLOCK_M=192,BLOCK_N=64,STAGES=2,OVERLAP=1,PINGPONG=1,PERSIST=1,LOADS=1,TAIL=1 \
         WS=1,CONSUMERS=2,BLOCK_M=128,REGSPLIT=0,STAGES=2,PERSIST=1,O_STAGE=0,TAIL=1; do
    expect 0 "check the WS path's tail items ($p)" -- "$EVOENG" check "$TT" --arch sm_90 --params "$p" --sample 0
    grep_out out "TAIL=1,LSUM=0,DESCADD=0,PVSPLIT=0,EARLY=0,STAGGER=0,MAXSKIP=0  (--params)" "check compiles the WS configuration with TAIL=1"
done
expect 1 "TAIL without PERSIST is refused by the constraints" -- "$EVOENG" check "$TT" --arch sm_90 --params WS=1,CONSUMERS=3,BLOCK_M=192,STAGES=2,TAIL=1 --sample 0
grep_out err "TAIL cuts the persistent scheduler" "the constraint that fails is named"
expect 1 "TAIL with one consumer is refused by the constraints" -- "$EVOENG" check "$TT" --arch sm_90 --params WS=1,CONSUMERS=1,BLOCK_M=64,REGSPLIT=0,STAGES=2,PERSIST=1,TAIL=1 --sample 0
# LSUM (the row sums of P on the tensor cores: a P x ones wgmma of n8 after
# each k16 step of P V, ones in 512 bytes of shared memory) and DESCADD
# (wgmma descriptors by adding offsets to one a tile): both compile on
# every unit without a spill, 1 to 3 consumers, TMA and cp.async, with
# LAZY and TAIL; LSUM is a WS knob only, DESCADD needs wgmma (WS or WGMMA).
for p in WS=1,CONSUMERS=3,BLOCK_M=192,BLOCK_N=128,STAGES=3,PERSIST=1,LAZY=1,TAIL=1,LSUM=1,DESCADD=1 \
         WS=1,CONSUMERS=2,BLOCK_M=128,STAGES=2,OVERLAP=1,PINGPONG=1,PERSIST=1,LOADS=1,LSUM=1,DESCADD=0 \
         WS=1,CONSUMERS=1,BLOCK_M=64,REGSPLIT=0,BLOCK_N=64,STAGES=1,O_STAGE=0,LSUM=1,DESCADD=1; do
    expect 0 "check the WS path's tensor-core row sums ($p)" -- "$EVOENG" check "$TT" --arch sm_90 --params "$p" --sample 0
    grep_out out "LSUM=1,DESCADD=${p##*DESCADD=},PVSPLIT=0,EARLY=0,STAGGER=0,MAXSKIP=0  (--params)" "check compiles the WS configuration with LSUM=1"
done
expect 0 "check the WGMMA path with DESCADD=1" -- "$EVOENG" check "$TT" --arch sm_90 --params WGMMA=1,DESCADD=1 --sample 0
grep_out out "LSUM=0,DESCADD=1,PVSPLIT=0,EARLY=0,STAGGER=0,MAXSKIP=0  (--params)" "check compiles the WGMMA configuration with DESCADD=1"
# PVSPLIT (P V in 2 or 4 chunks, each issued once its exponentials are
# packed) and EARLY (the full-barrier waits under the wgmma before them):
# the loop without the overlap, where registers are to spare; they compile
# on every unit without a spill (1 and 2 consumers, TMA and cp.async, LAZY,
# TAIL, LSUM), and the constraints refuse them at 3 consumers (160
# registers: they spill), with the overlap on, and off the WS path.
for p in WS=1,CONSUMERS=2,BLOCK_M=128,STAGES=3,PERSIST=1,LAZY=1,TAIL=1,PVSPLIT=2,EARLY=1 \
         WS=1,CONSUMERS=2,BLOCK_M=128,STAGES=2,PERSIST=1,LOADS=1,LSUM=1,PVSPLIT=1,EARLY=0 \
         WS=1,CONSUMERS=1,BLOCK_M=64,REGSPLIT=0,BLOCK_N=64,STAGES=1,O_STAGE=0,PVSPLIT=0,EARLY=1; do
    expect 0 "check the WS path's chunked P V and early waits ($p)" -- "$EVOENG" check "$TT" --arch sm_90 --params "$p" --sample 0
    grep_out out "PVSPLIT=$(echo "$p" | sed 's/.*PVSPLIT=\([0-9]\).*/\1/'),EARLY=${p##*EARLY=},STAGGER=0,MAXSKIP=0  (--params)" "check compiles the WS configuration with PVSPLIT / EARLY"
done
expect 1 "EARLY at 3 consumers is refused by the constraints" -- "$EVOENG" check "$TT" --arch sm_90 --params WS=1,CONSUMERS=3,BLOCK_M=192,STAGES=2,PERSIST=1,EARLY=1 --sample 0
grep_out err "at 160 (3 consumers) or 168 (2 without REGSPLIT) they spill" "the constraint that fails is named"
expect 1 "PVSPLIT with the overlap is refused by the constraints" -- "$EVOENG" check "$TT" --arch sm_90 --params WS=1,CONSUMERS=2,BLOCK_M=128,STAGES=2,OVERLAP=1,PVSPLIT=1 --sample 0
expect 1 "EARLY off the WS path is refused by the constraints" -- "$EVOENG" check "$TT" --arch sm_90 --params WGMMA=1,EARLY=1 --sample 0
# STAGGER (the second consumer warpgroup's first Q K^T after the first
# one's): 2 consumers without the overlap, with and without EARLY / PVSPLIT,
# TMA and cp.async, persistent and not, compile without a spill; the
# constraints refuse it at 3 consumers (it spills), with the overlap and at
# 1 consumer
for p in WS=1,CONSUMERS=2,BLOCK_M=128,STAGES=2,PERSIST=1,PVSPLIT=2,EARLY=1,STAGGER=1 \
         WS=1,CONSUMERS=2,BLOCK_M=128,STAGES=3,DESCADD=1,LOADS=1,LSUM=1,STAGGER=1; do
    expect 0 "check the WS path's staggered start ($p)" -- "$EVOENG" check "$TT" --arch sm_90 --params "$p" --sample 0
    grep_out out "STAGGER=1,MAXSKIP=0  (--params)" "check compiles the WS configuration with STAGGER=1"
done
expect 1 "STAGGER at 3 consumers is refused by the constraints" -- "$EVOENG" check "$TT" --arch sm_90 --params WS=1,CONSUMERS=3,BLOCK_M=192,STAGES=2,PERSIST=1,STAGGER=1 --sample 0
grep_out err "at 3 consumers (160 registers) it spills" "the constraint that fails is named"
expect 1 "STAGGER with the overlap is refused by the constraints" -- "$EVOENG" check "$TT" --arch sm_90 --params WS=1,CONSUMERS=2,BLOCK_M=128,STAGES=2,OVERLAP=1,STAGGER=1 --sample 0
expect 1 "STAGGER at 1 consumer is refused by the constraints" -- "$EVOENG" check "$TT" --arch sm_90 --params WS=1,CONSUMERS=1,BLOCK_M=64,REGSPLIT=0,STAGGER=1 --sample 0
# compile.max_stack_bytes: a kernel that keeps an array in local memory
# (tests/data/kernels/stack.cu, the scale task's entries) is refused by the
# static gate with its stack size and the limit named; the task's own
# template passes
expect 1 "a kernel with a stack frame over compile.max_stack_bytes is refused" -- "$EVOENG" check "$EVO_SOURCE_ROOT/tests/data/good_task.json" --arch sm_90 --source "$EVO_SOURCE_ROOT/tests/data/kernels/stack.cu" --sample 0
grep_out err "scale_main keeps 256 bytes in local memory" "the static gate names the kernel and its stack frame"
grep_out err "the task allows 0 (compile.max_stack_bytes)" "the static gate names the limit"
expect 0 "the scale task's own template has no stack frame" -- "$EVOENG" check "$EVO_SOURCE_ROOT/tests/data/good_task.json" --arch sm_90 --sample 0
# BLOCK_N=256 (256-key tiles, WS path): 2 consumers with REGSPLIT and 1
# consumer compile without a spill (every compile variant: at D=128 the
# tile falls back to 128 keys); the constraints refuse it off the WS path,
# at 3 consumers and at 2 without REGSPLIT (it would always fall back),
# and with EARLY (spills) or PVSPLIT (failed the gate)
for p in WS=1,CONSUMERS=2,BLOCK_M=128,BLOCK_N=256,STAGES=3,PERSIST=1,LAZY=1,STAGGER=1 \
         WS=1,CONSUMERS=2,BLOCK_M=128,BLOCK_N=256,STAGES=2,LOADS=1,LSUM=1,DESCADD=1 \
         WS=1,CONSUMERS=1,BLOCK_M=64,BLOCK_N=256,STAGES=1,REGSPLIT=0,OVERLAP=1,LSUM=1; do
    expect 0 "check the WS path's 256-key tiles ($p)" -- "$EVOENG" check "$TT" --arch sm_90 --params "$p" --sample 0 --json
    grep_out out '"params": "BLOCK_M=[0-9]*,BLOCK_N=256,' "check reports the BLOCK_N=256 configuration"
    grep_out out '"status": "ok",' "check compiles the WS configuration with BLOCK_N=256"
    grep_out out '"spills": 0,' "the BLOCK_N=256 configuration compiles without a spill"
done
expect 1 "BLOCK_N=256 off the WS path is refused by the constraints" -- "$EVOENG" check "$TT" --arch sm_90 --params WGMMA=1,BLOCK_M=64,BLOCK_N=256 --sample 0
grep_out err "256-key tiles belong to the WS path" "the constraint that fails is named"
expect 1 "BLOCK_N=256 at 3 consumers is refused by the constraints" -- "$EVOENG" check "$TT" --arch sm_90 --params WS=1,CONSUMERS=3,BLOCK_M=192,BLOCK_N=256,STAGES=2 --sample 0
expect 1 "BLOCK_N=256 at 2 consumers without REGSPLIT is refused by the constraints" -- "$EVOENG" check "$TT" --arch sm_90 --params WS=1,CONSUMERS=2,BLOCK_M=128,BLOCK_N=256,STAGES=2,REGSPLIT=0 --sample 0
expect 1 "BLOCK_N=256 with EARLY is refused by the constraints" -- "$EVOENG" check "$TT" --arch sm_90 --params WS=1,CONSUMERS=2,BLOCK_M=128,BLOCK_N=256,STAGES=2,EARLY=1 --sample 0
expect 1 "BLOCK_N=256 with PVSPLIT is refused by the constraints" -- "$EVOENG" check "$TT" --arch sm_90 --params WS=1,CONSUMERS=2,BLOCK_M=128,BLOCK_N=256,STAGES=2,PVSPLIT=1 --sample 0
grep_out err "with PVSPLIT the compiler does not unroll" "the constraint that fails is named"
expect 1 "LSUM without WS is refused by the constraints" -- "$EVOENG" check "$TT" --arch sm_90 --params LSUM=1 --sample 0
grep_out err "LSUM belong to the WS path" "the constraint that fails is named"
expect 1 "DESCADD on the mma.sync path is refused by the constraints" -- "$EVOENG" check "$TT" --arch sm_90 --params DESCADD=1 --sample 0
grep_out err "only the WS and WGMMA paths issue wgmma" "the constraint that fails is named"
expect 1 "LAZY without WS is refused by the constraints" -- "$EVOENG" check "$EVO_SOURCE_ROOT/templates/attention/task.json" --arch sm_90 --params LAZY=1 --sample 0
grep_out err "LAZY and LSUM belong to the WS path" "the constraint that fails is named"
expect 1 "LOADS=1 without WS is refused by the constraints" -- "$EVOENG" check "$EVO_SOURCE_ROOT/templates/attention/task.json" --arch sm_90 --params LOADS=1 --sample 0
grep_out err "LOADS, LAZY and LSUM belong to the WS path" "the constraint that fails is named"
expect 1 "WS on sm_80 is refused by the constraints" -- "$EVOENG" check "$EVO_SOURCE_ROOT/templates/attention/task.json" --arch sm_80 --params WS=1,CONSUMERS=3,BLOCK_M=192,STAGES=2 --sample 0
expect 1 "WGMMA on sm_80 is refused by the constraints" -- "$EVOENG" check "$EVO_SOURCE_ROOT/templates/attention/task.json" --arch sm_80 --params WGMMA=1 --sample 0
grep_out err "breaks a constraint.*wgmma runs on sm_90a" "the constraint that fails is named"
grep_out out "invalid  BLOCK_M=64" "the table marks the configuration invalid"
expect 0 "check the softmax task for sm_90 (its reference compiles)" -- "$EVOENG" check "$EVO_SOURCE_ROOT/templates/softmax/task.json" --arch sm_90 --sample 2
expect 0 "check the triad task for sm_90 (its template and reference compile)" -- "$EVOENG" check "$EVO_SOURCE_ROOT/templates/triad/task.json" --arch sm_90 --sample 4
expect 0 "check a small task" -- "$EVOENG" check "$EVO_SOURCE_ROOT/tests/data/good_task.json" --arch sm_80 --sample 4
grep_out out " 0 from the cache" "the first check compiles everything"
expect 0 "check it again" -- "$EVOENG" check "$EVO_SOURCE_ROOT/tests/data/good_task.json" --arch sm_80 --sample 4
grep_out out " 0 compiled by NVRTC" "the second check of the same configurations does zero compiles"
expect 0 "check --sample more than the valid space holds" -- "$EVOENG" check "$EVO_SOURCE_ROOT/tests/data/good_task.json" --arch sm_80 --sample 20
grep_out out "all 15 other valid configurations" "check takes every other valid configuration and says so"
grep_out out "^  16 configurations + the reference" "check compiles the default and the 15 others"
# a space too large to enumerate (4 million nodes): the count and the
# sample fall back to random draws, and a shortfall is a warning
expect 0 "check a space too large to enumerate" -- "$EVOENG" check "$EVO_SOURCE_ROOT/tests/data/space_large.json" --arch sm_90 --sample 2
grep_out out "about 0 valid after constraints" "check estimates the valid space by sampling"
grep_out err "found only 0 valid configurations in [0-9]* random draws (the space is too large to enumerate; about 0% of it is valid)" "check warns that rejection sampling found fewer than --sample asked"
expect 5 "check --gpu without a GPU" -- "$EVOENG" check "$EVO_SOURCE_ROOT/tests/data/good_task.json" --sample 1 --gpu
grep_out err "GPU\|driver" "check --gpu says what is missing"
expect 3 "check a malformed spec" -- "$EVOENG" check "$EVO_SOURCE_ROOT/tests/data/bad_unknown_var.json"
grep_out err "bad_unknown_var.json: .*unknown variable" "the error names the file, the JSON path and the variable"
expect 2 "check with an unknown architecture" -- "$EVOENG" check "$EVO_SOURCE_ROOT/tests/data/good_task.json" --arch sm_12

# export from a store recorded on an H200 (tests/data/h200_wgmma_run.sql: a
# 60 s run at the seed shape, trimmed to the lineage of its best, a WGMMA
# kernel compiled for sm_90a), then compare_sdpa.py's dry run of the JSON.
if "$PY" - "$EVO_SOURCE_ROOT" "$tmp/h200.db" <<'PYEOF'
import os, sys
sys.path.insert(0, os.path.join(sys.argv[1], "tests"))
import report_store
report_store.h200_store(sys.argv[1], sys.argv[2]).close()
PYEOF
then
    expect 0 "export the best of a stored WGMMA run" -- "$EVOENG" export --best --db "$tmp/h200.db"
    grep_out out "build:    nvcc -gencode=arch=compute_90a,code=sm_90a -std=c++17 -c FILE.cu" "the header's build line builds for the sm_90a target alone (nvcc 13's -arch=sm_90a also runs a compute_90 pass)"
    grep_out out "lineage:  #1 baseline (1.00x) -> #17 reset" "the header carries the lineage"
    grep_out out "^#define WGMMA 1" "the parameters are baked into the source"
    expect 0 "export it as a harness" -- "$EVOENG" export --best --format harness --db "$tmp/h200.db" -o "$tmp/best_harness.cu"
    grep_out err "wrote candidate 32 to .*best_harness.cu" "export --format harness says what it wrote"
    if grep -q "^// build:    nvcc -gencode=arch=compute_90a,code=sm_90a -std=c++17 -O3 -o best_harness best_harness.cu$" "$tmp/best_harness.cu" &&
        grep -q "^int main(int argc, char \*\*argv)" "$tmp/best_harness.cu"; then echo "ok   the harness has main() and its build line"; pass=$((pass + 1));
    else echo "FAIL the harness lacks main() or its build line"; fails=$((fails + 1)); fi
    expect 2 "an unknown export format is a usage error" -- "$EVOENG" export --best --format exe --db "$tmp/h200.db"
    expect 0 "export it as JSON" -- "$EVOENG" export 32 --format json --db "$tmp/h200.db" -o "$tmp/e32.json"
    grep_out err "wrote candidate 32" "export -o says what it wrote"
    expect 0 "compare_sdpa.py --dry-run reads the JSON export" -- "$PY" "$EVO_SOURCE_ROOT/bench/compare_sdpa.py" "$tmp/e32.json" --dry-run
    grep_out out "NVRTC --gpu-architecture=sm_90a" "compare_sdpa.py compiles an arch-specific export for its target"
    grep_out out "B4 H8 S512 D64" "compare_sdpa.py reads the shape from the plan"
    expect 2 "compare_sdpa.py refuses a replay length of 0 ms" -- "$PY" "$EVO_SOURCE_ROOT/bench/compare_sdpa.py" "$tmp/e32.json" --dry-run --replay-ms 0
    expect 2 "compare_sdpa.py refuses --calls 0" -- "$PY" "$EVO_SOURCE_ROOT/bench/compare_sdpa.py" "$tmp/e32.json" --dry-run --calls 0
    expect 0 "compare_sdpa.py --dry-run writes its method to --out" -- "$PY" "$EVO_SOURCE_ROOT/bench/compare_sdpa.py" "$tmp/e32.json" --dry-run --out "$tmp/dry.json"
    if "$PY" -c "import json,sys; m=json.load(open(sys.argv[1]))['meta']; sys.exit(0 if m['hold'] is True and m['diff'] is False and m['calls'] is None and m['replay_ms'] == 0.5 else 1)" "$tmp/dry.json"; then
        echo "ok   compare_sdpa.py's default: held replays, graphs of about 0.5 ms, not differenced"; pass=$((pass + 1))
    else echo "FAIL compare_sdpa.py's --out meta does not say hold / diff / replay_ms / calls"; fails=$((fails + 1)); fi
    expect 0 "show the exported candidate as JSON" -- "$EVOENG" show 32 --json --db "$tmp/h200.db"
    grep_out out '"gate_stage": "full"' "show --json gives the gate stage"

    # Issue 11: the same store with #32, the fastest, gated on the benchmark
    # shape only (stage A): it is no survivor, best or export.
    cp "$tmp/h200.db" "$tmp/stageA.db"
    "$PY" -c 'import sqlite3, sys; c = sqlite3.connect(sys.argv[1]); c.execute("UPDATE candidates SET gate_stage = 1 WHERE id = 32"); c.commit()' "$tmp/stageA.db"
    expect 1 "export refuses a candidate gated on the benchmark shape only" -- "$EVOENG" export 32 --db "$tmp/stageA.db"
    grep_out err "^evoeng: candidate 32 cannot be exported: it was gated on the benchmark shape only (stage A); never gated on the other shapes" "the refusal names the candidate and why"
    if [ -s "$tmp/out" ]; then echo "FAIL the refused export wrote output"; fails=$((fails + 1)); else echo "ok   the refused export wrote nothing"; pass=$((pass + 1)); fi
    expect 1 "export --format json refuses it too" -- "$EVOENG" export 32 --format json --db "$tmp/stageA.db" -o "$tmp/e32a.json"
    if [ -e "$tmp/e32a.json" ]; then echo "FAIL the refused export created its file"; fails=$((fails + 1)); else echo "ok   the refused export created no file"; pass=$((pass + 1)); fi
    expect 0 "export --best skips it" -- "$EVOENG" export --best --db "$tmp/stageA.db"
    grep_out out "candidate 29 of run 1" "export --best takes the fastest candidate gated on every shape"
    expect 0 "show a stage-A candidate" -- "$EVOENG" show 32 --db "$tmp/stageA.db"
    grep_out out "gate stage   bench: gated on the benchmark shape only (stage A); never gated on the other shapes" "show says how far its gate went"
    expect 0 "show it as JSON" -- "$EVOENG" show 32 --json --db "$tmp/stageA.db"
    grep_out out '"gate_stage": "bench"' "show --json gives the stage as a string"
    expect 0 "top as JSON" -- "$EVOENG" top --json --db "$tmp/stageA.db"
    grep_out out '"gate_stage": "full"' "top --json gives the gate stage"
    if grep -q '"id": 32,' "$tmp/out"; then echo "FAIL top lists the stage-A candidate"; fails=$((fails + 1)); else echo "ok   top leaves the stage-A candidate out"; pass=$((pass + 1)); fi
    expect 0 "status" -- "$EVOENG" status --db "$tmp/stageA.db"
    grep_out out "best         #29 " "status's best is gated on every shape"
else
    echo "FAIL could not load tests/data/h200_wgmma_run.sql with $PY"; fails=$((fails + 1))
fi

if [ -e /dev/full ]; then
    expect 7 "write error on stdout is reported" -- sh -c "\"$EVOENG\" --help >/dev/full"
fi

echo "$pass passed, $fails failed"
[ "$fails" -eq 0 ]

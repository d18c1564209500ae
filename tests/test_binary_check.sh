#!/bin/sh
# The evoeng binary's `check` without a GPU (split from test_binary.sh, whose
# whole ran 125 s alone on a slow 2-core machine, past its timeout beside the
# other tests): the attention template's paths compiled by NVRTC for sm_90
# and sm_90a, the constraints that refuse configurations, the static gate,
# the shipped softmax and triad tasks, the compile cache, sampling of spaces
# too large to enumerate, and check's errors.
set -u
ROOT=${EVO_SOURCE_ROOT:?EVO_SOURCE_ROOT must point to the source tree}
. "$ROOT/tests/lib_expect.sh"
export EVOENG_LIBCUDA=/nonexistent/libcuda.so.1

# check: the attention task without a GPU, then the compile cache.
export EVOENG_CACHE_DIR="$tmp/cache"
expect 0 "check the attention task for sm_90" -- "$EVOENG" check "$EVO_SOURCE_ROOT/templates/attention/task.json" --arch sm_90 --sample 1
grep_out out "valid after constraints" "check prints the space before and after constraints"
grep_out out "configurations, [0-9][0-9]* valid after constraints" "check counts the attention task's valid space exactly (enumerated, no 'about')"
grep_out out "(default)" "check prints the compile table with the default"
expect 0 "check the WGMMA path of the attention template (NVRTC target sm_90a)" -- "$EVOENG" check "$EVO_SOURCE_ROOT/templates/attention/task.json" --arch sm_90 --params WGMMA=1,BLOCK_N=64 --sample 0
grep_out out "WGMMA=1,WS=0,CONSUMERS=2,REGSPLIT=1,PINGPONG=0,PERSIST=0,LOADS=0,LAZY=0,TAIL=0,LSUM=0,DESCADD=0,PVSPLIT=0,EARLY=0,STAGGER=0,MAXSKIP=0,PACKGQA=0,OTMA=0  (--params)" "check compiles the --params configuration"
expect 0 "check the warp-specialised path (WS=1, TMA tensor maps, sm_90a)" -- "$EVOENG" check "$EVO_SOURCE_ROOT/templates/attention/task.json" --arch sm_90 --params WS=1,CONSUMERS=3,BLOCK_M=192,STAGES=2 --sample 0
grep_out out "WS=1,CONSUMERS=3,REGSPLIT=1,PINGPONG=0,PERSIST=0,LOADS=0,LAZY=0,TAIL=0,LSUM=0,DESCADD=0,PVSPLIT=0,EARLY=0,STAGGER=0,MAXSKIP=0,PACKGQA=0,OTMA=0  (--params)" "check compiles the WS configuration"
# LOADS=1: the WS producer loads with cp.async (all 128 producer threads) in
# place of TMA; check compiles every (D, CAUSAL) unit of the task's shapes
# and fails on any spill (the task allows 0), the producer's 24 or 32
# registers under REGSPLIT included: 1, 2 (persistent, ping-pong), 3 consumers.
for p in WS=1,CONSUMERS=1,BLOCK_M=64,REGSPLIT=0,STAGES=2,OVERLAP=1,LOADS=1 \
         WS=1,CONSUMERS=2,BLOCK_M=128,STAGES=2,OVERLAP=1,PINGPONG=1,PERSIST=1,LOADS=1 \
         WS=1,CONSUMERS=3,BLOCK_M=192,BLOCK_N=128,STAGES=1,OVERLAP=1,LOADS=1; do
    expect 0 "check the WS path with cp.async loads ($p)" -- "$EVOENG" check "$EVO_SOURCE_ROOT/templates/attention/task.json" --arch sm_90 --params "$p" --sample 0
    grep_out out "LOADS=1,LAZY=0,TAIL=0,LSUM=0,DESCADD=0,PVSPLIT=0,EARLY=0,STAGGER=0,MAXSKIP=0,PACKGQA=0,OTMA=0  (--params)" "check compiles the LOADS=1 configuration"
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
    grep_out out "LAZY=1,TAIL=0,LSUM=0,DESCADD=0,PVSPLIT=0,EARLY=0,STAGGER=0,MAXSKIP=0,PACKGQA=0,OTMA=0  (--params)" "check compiles the WS configuration with LAZY=1"
done
# TAIL (the persistent scheduler's last wave as items of all consumer
# warpgroups but one): in the search since its gate and A/Bs ran on an H100
# (docs/results/raw/2026-11-25/19_*); the task compiles it with 2 and 3 consumers, TMA
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
    grep_out out "TAIL=1,LSUM=0,DESCADD=0,PVSPLIT=0,EARLY=0,STAGGER=0,MAXSKIP=0,PACKGQA=0,OTMA=0  (--params)" "check compiles the WS configuration with TAIL=1"
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
    grep_out out "LSUM=1,DESCADD=${p##*DESCADD=},PVSPLIT=0,EARLY=0,STAGGER=0,MAXSKIP=0,PACKGQA=0,OTMA=0  (--params)" "check compiles the WS configuration with LSUM=1"
done
expect 0 "check the WGMMA path with DESCADD=1" -- "$EVOENG" check "$TT" --arch sm_90 --params WGMMA=1,DESCADD=1 --sample 0
grep_out out "LSUM=0,DESCADD=1,PVSPLIT=0,EARLY=0,STAGGER=0,MAXSKIP=0,PACKGQA=0,OTMA=0  (--params)" "check compiles the WGMMA configuration with DESCADD=1"
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
    grep_out out "PVSPLIT=$(echo "$p" | sed 's/.*PVSPLIT=\([0-9]\).*/\1/'),EARLY=${p##*EARLY=},STAGGER=0,MAXSKIP=0,PACKGQA=0,OTMA=0  (--params)" "check compiles the WS configuration with PVSPLIT / EARLY"
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
    grep_out out "STAGGER=1,MAXSKIP=0,PACKGQA=0,OTMA=0  (--params)" "check compiles the WS configuration with STAGGER=1"
done
expect 1 "STAGGER at 3 consumers is refused by the constraints" -- "$EVOENG" check "$TT" --arch sm_90 --params WS=1,CONSUMERS=3,BLOCK_M=192,STAGES=2,PERSIST=1,STAGGER=1 --sample 0
grep_out err "at 3 consumers (160 registers) it spills" "the constraint that fails is named"
expect 1 "STAGGER with the overlap is refused by the constraints" -- "$EVOENG" check "$TT" --arch sm_90 --params WS=1,CONSUMERS=2,BLOCK_M=128,STAGES=2,OVERLAP=1,STAGGER=1 --sample 0
expect 1 "STAGGER at 1 consumer is refused by the constraints" -- "$EVOENG" check "$TT" --arch sm_90 --params WS=1,CONSUMERS=1,BLOCK_M=64,REGSPLIT=0,STAGGER=1 --sample 0
# OTMA (each consumer warp's 16 rows of O by one TMA store a 64-column
# box, through the Q tile's shared memory): 1 and 2 consumers, D=64 and
# D=128 (two boxes), TMA and cp.async loads, compile without a spill and
# take the launch entry with the fourth tensor map; the constraints refuse
# it off the WS path, with PERSIST (the next tile's Q reuses that memory)
# and with O_STAGE=0
for p in WS=1,CONSUMERS=2,BLOCK_M=128,STAGES=1,REGSPLIT=0,STAGGER=1,OTMA=1 \
         WS=1,CONSUMERS=1,BLOCK_M=64,STAGES=2,REGSPLIT=0,LOADS=1,PVSPLIT=2,EARLY=1,OTMA=1; do
    expect 0 "check the WS path's TMA store of O ($p)" -- "$EVOENG" check "$TT" --arch sm_90 --params "$p" --sample 0
    grep_out out "PACKGQA=0,OTMA=1  (--params)" "check compiles the WS configuration with OTMA=1"
done
expect 1 "OTMA off the WS path is refused by the constraints" -- "$EVOENG" check "$TT" --arch sm_90 --params OTMA=1 --sample 0
grep_out err "OTMA's TMA store of O is the warp-specialised path's epilogue" "the constraint that fails is named"
expect 1 "OTMA with PERSIST is refused by the constraints" -- "$EVOENG" check "$TT" --arch sm_90 --params WS=1,CONSUMERS=2,BLOCK_M=128,STAGES=2,PERSIST=1,OTMA=1 --sample 0
expect 1 "OTMA with O_STAGE=0 is refused by the constraints" -- "$EVOENG" check "$TT" --arch sm_90 --params WS=1,CONSUMERS=2,BLOCK_M=128,STAGES=2,O_STAGE=0,OTMA=1 --sample 0
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
expect 1 "--dim HKV not dividing H is refused (issue 37)" -- "$EVOENG" check "$TT" --arch sm_90 --dim HKV=3 --sample 0
grep_out err "HKV (K/V heads) must divide H.*fails on shape 0 (B=4 H=8 S=512 D=64 CAUSAL=0 DTYPE=0 HKV=3 SQ=512)" "the constraint that fails is named"
expect 1 "--dim SQ past S is refused (issue 37)" -- "$EVOENG" check "$TT" --arch sm_90 --dim SQ=513 --sample 0
grep_out err "its SQ (queries) be 1 to S (keys).*HKV=8 SQ=513)" "the constraint that fails is named"
expect 1 "WS on sm_80 is refused by the constraints" -- "$EVOENG" check "$EVO_SOURCE_ROOT/templates/attention/task.json" --arch sm_80 --params WS=1,CONSUMERS=3,BLOCK_M=192,STAGES=2 --sample 0
expect 1 "WGMMA on sm_80 is refused by the constraints" -- "$EVOENG" check "$EVO_SOURCE_ROOT/templates/attention/task.json" --arch sm_80 --params WGMMA=1 --sample 0
grep_out err "breaks a constraint.*wgmma runs on sm_90a" "the constraint that fails is named"
grep_out out "invalid  BLOCK_M=64" "the table marks the configuration invalid"
expect 0 "check the softmax task for sm_90 (its reference compiles)" -- "$EVOENG" check "$EVO_SOURCE_ROOT/templates/softmax/task.json" --arch sm_90 --sample 2
expect 0 "check the triad task for sm_90 (its template and reference compile)" -- "$EVOENG" check "$EVO_SOURCE_ROOT/templates/triad/task.json" --arch sm_90 --sample 4
# -j 1: with two compile threads, twins in flight at once both compile,
# and the count changes from run to run
expect 0 "check a small task" -- "$EVOENG" check "$EVO_SOURCE_ROOT/tests/data/good_task.json" --arch sm_80 --sample 4 -j 1
# good.cu reads neither SPLITS nor the compile dim M (nor does good_ref.cu
# read M), so by the cache's canonical key (canon.h) each configuration's
# two shapes are one compile, and SPLITS=2 is the default's twin
grep_out out "5 compiled by NVRTC, 7 from the cache" "the first check compiles each distinct text once"
grep_out out "cached             ok  BLOCK=128,UNROLL=2,SPLITS=2" "the twin is the one served from the cache"
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

finish

#!/bin/sh
# A user's own kernel in at most three edits (issue 34): `evoeng init` on
# tests/data/kfile/fa_seed.cu, unchanged (FlashAttention-style fp16:
# template<int S, int D>, an extern "C" launcher with dim3 grid(B * H,
# (S + BLOCK_M - 1) / BLOCK_M), dim3 block(WARPS * 32) and <<<grid, block>>>,
# cp.async, WMMA, 9 #define knobs), then the edits a user makes (scripted
# below, each named), then `check --arch sm_90 --sample N`: it passes, the
# space holds at least 100 valid configurations, and none of those sampled
# fails to compile. The init -> check transcript is printed.
# With --gpu (suite gpu): the same spec through `check --gpu` (every sampled
# configuration gated on the GPU against the reference); exit 77 without one.
set -u
ROOT=${EVO_SOURCE_ROOT:?EVO_SOURCE_ROOT must point to the source tree}
. "$ROOT/tests/lib_expect.sh"
gpu=0
[ "${1:-}" = "--gpu" ] && gpu=1
if [ "$gpu" -eq 1 ]; then
    "$EVOENG" --version 2>&1 | grep -q "^GPU 0:" || { echo "SKIP: no GPU"; exit 77; }
else
    export EVOENG_LIBCUDA=/nonexistent/libcuda.so.1
fi
export EVOENG_CACHE_DIR="$tmp/cache"
SAMPLE=${SAMPLE:-6}
mkdir -p "$tmp/fa"
cp "$ROOT/tests/data/kfile/fa_seed.cu" "$tmp/fa/fa_seed.cu"
cd "$tmp/fa" || exit 1

echo "\$ evoeng init fa_seed.cu -o task.json"
expect 0 "init the seed-style kernel file" -- "$EVOENG" init fa_seed.cu -o task.json
cat "$tmp/err"
grep_out err "1 TODO left" "init leaves one TODO"
todos=$(python3 -c '
import json, sys
def n(v):
    if isinstance(v, str): return "TODO" in v
    if isinstance(v, list): return sum(n(x) for x in v)
    if isinstance(v, dict): return sum(n(x) + ("TODO" in k) for k, x in v.items() if not k.startswith("_"))
    return 0
print(n(json.load(open(sys.argv[1]))))' task.json)
[ "$todos" -eq 1 ] && ok "the spec holds exactly one TODO string" || fail "the spec holds $todos TODO strings, not 1"
grep_out fa/task.json '"source": "TODO: an obviously correct kernel' "the one TODO is the reference"
grep_out fa/task.json '"fa_fwd<512, 64>"' "the entry is the instantiation the launcher launches"
grep_out fa/task.json '"B \* H",' "grid.x from dim3 grid(B * H, ...)"
grep_out fa/task.json '"(S + BLOCK_M - 1) / BLOCK_M"' "grid.y from dim3 grid(..., (S + BLOCK_M - 1) / BLOCK_M)"
grep_out fa/task.json '"WARPS \* 32"' "the block from dim3 block(WARPS * 32)"
grep_out fa/task.json '"f32": "1.0 / sqrt(D)"' "the scale from const float scale = 1.0f / sqrtf((float)D)"
grep_out fa/task.json '"S": 512,' "S from the launch's guard (S == 512 && D == 64)"
grep_out fa/task.json '"BLOCK_M % (16 \* WARPS) == 0"' "a static_assert becomes a constraint"
grep_out fa/task.json '"SMEM_STATIC + [0-9]* <= SMEM_PER_BLOCK"' "the shared arrays become a shared-memory constraint"
grep_out fa/task.json '"WARPS \* 32 <= MAX_THREADS"' "threads per block against the device's limit"
echo "\$ evoeng check task.json --arch sm_90"
expect 3 "check names the TODO" -- "$EVOENG" check task.json --arch sm_90 --sample 0
cat "$tmp/err"
grep_out err "task.json: reference.source: unfinished: .*(1 TODO in all)" "check refuses the spec, naming the reference"

# The edits: 1. the reference (the attention task's naive kernel, [B, H, S,
# D] fp16 like this one; its last two arguments, the query length and the
# query heads one K/V head serves, are S and 1 here); 2 and 3. the
# benchmark shape's B and H, which the file does not say (init guessed 8). A task reads only its own folder, so
# the reference is copied next to it, as a user would.
cp "$ROOT/templates/attention/reference.cu" reference.cu || fail "copying the reference"
python3 - task.json reference.cu <<'PY' || fail "editing the spec"
import json, sys
path, ref = sys.argv[1], sys.argv[2]
t = json.load(open(path))
edits = []
t["reference"] = {"source": ref, "entries": ["attn_ref"],
                  "launch": [{"entry": "attn_ref", "grid": ["S", "B * H"], "block": [128], "smem": "S * 4",
                              "args": ["q", "k", "v", "o", "S", {"f32": "1.0 / sqrt(D)"}, "S", "1"]}]}
edits.append("reference = attn_ref of templates/attention/reference.cu, grid [S, B * H], block 128")
t["dims"]["B"] = 4
edits.append("dims.B = 4")
t["dims"]["H"] = 8
edits.append("dims.H = 8")
json.dump(t, open(path, "w"), indent=2)
print("edits (%d):" % len(edits))
for i, e in enumerate(edits, 1):
    print("  %d. %s" % (i, e))
assert len(edits) <= 3
PY
echo "\$ evoeng check task.json --arch sm_90 --sample $SAMPLE"
expect 0 "check passes after the edits" -- "$EVOENG" check task.json --arch sm_90 --sample "$SAMPLE"
cat "$tmp/out" "$tmp/err"
valid=$(sed -n 's/.* configurations, \([0-9]*\) valid after constraints.*/\1/p' "$tmp/out")
[ "${valid:-0}" -ge 100 ] && ok "the space holds $valid valid configurations (>= 100)" ||
    fail "the space holds ${valid:-?} valid configurations, fewer than 100"
rows=$(grep -c "^  [0-9][0-9]* .*BLOCK_M=" "$tmp/out")
bad=$(grep "^  [0-9][0-9]* .*BLOCK_M=" "$tmp/out" | grep -vc " ok  BLOCK_M=")
[ "$rows" -eq $((SAMPLE + 1)) ] && [ "$bad" -eq 0 ] && ok "$rows of $rows configurations compiled, 0 failed" ||
    fail "$bad of $rows sampled configurations failed to compile"
expect 0 "check --json agrees" -- "$EVOENG" check task.json --arch sm_90 --sample "$SAMPLE" --json
grep_out out '"ok": true' "check --json says ok"

if [ "$gpu" -eq 1 ]; then
    echo "\$ evoeng check task.json --gpu --sample $SAMPLE"
    "$EVOENG" check task.json --gpu --sample "$SAMPLE" >"$tmp/gpu" 2>&1; rc=$?
    cat "$tmp/gpu"
    [ "$rc" -eq 0 ] && ok "every sampled configuration passes the gate on the GPU" || fail "check --gpu: exit $rc"
fi
finish

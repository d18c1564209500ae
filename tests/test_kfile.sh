#!/bin/sh
# A real kernel file brought in unchanged, end to end through the binary
# (issue 14, item 4), no GPU: `evoeng init` on tests/data/kfile/attn_rows.cu
# (a template kernel, a namespaced kernel, an extern "C" host launcher with
# <<<...>>>, includes of cuda.h, cuda_runtime.h, mma.h, INFINITY), `check`
# refusing the fresh spec's TODOs, the spec completed here and checked with
# NVRTC for sm_90, and `check --source` on variants of the file.
set -u
ROOT=${EVO_SOURCE_ROOT:?EVO_SOURCE_ROOT must point to the source tree}
. "$ROOT/tests/lib_expect.sh"
export EVOENG_LIBCUDA=/nonexistent/libcuda.so.1
export EVOENG_CACHE_DIR="$tmp/cache"
mkdir -p "$tmp/k"
cp "$ROOT/tests/data/kfile/attn_rows.cu" "$tmp/k/attn_rows.cu"

expect 0 "init --help" -- "$EVOENG" init --help
grep_out out "usage: evoeng init KERNEL.cu" "init --help prints its usage"
expect 2 "init without a file" -- "$EVOENG" init
grep_out err "missing the kernel file" "init names what is missing"
expect 1 "init of a missing file" -- "$EVOENG" init "$tmp/nope.cu"
printf '__device__ float helper(float x) { return x; }\n' >"$tmp/nokernel.cu"
expect 1 "init of a file without kernels" -- "$EVOENG" init "$tmp/nokernel.cu"
grep_out err "no __global__ kernel" "init says there is no kernel"

expect 0 "init the kernel file" -- "$EVOENG" init "$tmp/k/attn_rows.cu" -o "$tmp/k/task.json"
cp "$tmp/k/task.json" "$tmp/gen.json"
grep_out gen.json '"attn_rows<128, 64>"' "the template kernel's entry is the instantiation its launcher launches"
grep_out gen.json '"util::fill"' "the namespaced kernel the launcher launches is an entry"
grep_out gen.json '"template": "attn_rows.cu"' "the template is named relative to the spec"
grep_out gen.json '"source": "TODO: an obviously correct kernel' "the reference is the TODO"
grep_out gen.json '"(S + 127) / 128"' "the grid comes from the launcher's dim3 grid"
grep_out gen.json '"f32": "1.0 / sqrt(D)"' "a launcher constant becomes an expression of the dims"
grep_out gen.json 'left out: attn_rows<256, 32> (another instantiation)' "the else branch's instantiation is noted"
expect 0 "init to stdout" -- "$EVOENG" init "$tmp/k/attn_rows.cu"
grep_out out '"name": "attn_rows"' "init writes the spec to stdout without -o"
expect 1 "init does not overwrite" -- "$EVOENG" init "$tmp/k/attn_rows.cu" -o "$tmp/k/task.json"
grep_out err "exists" "init says the file exists"

expect 3 "check refuses the fresh spec" -- "$EVOENG" check "$tmp/k/task.json" --arch sm_90 --sample 0
grep_out err "task.json: params.TODO_PARAM: unfinished: .*TODO left by .evoeng init" "check names the first TODO and its JSON path"

# Complete the generated spec as a user would: keep what init read (the
# buffers, the launches and their arguments), add a knob and the reference.
python3 - "$tmp/k/task.json" <<'PY' || { echo "FAIL completing the spec"; fails=$((fails + 1)); }
import json, sys
path = sys.argv[1]
t = json.load(open(path))
assert [b["name"] for b in t["buffers"]] == ["o", "q", "k", "v"], t["buffers"]
assert [b["role"] for b in t["buffers"]] == ["output", "input", "input", "input"], t["buffers"]
assert all(b["dtype"] == "f32" and b["shape"] == ["B", "S", "D"] for b in t["buffers"]), t["buffers"]
assert t["dims"] == {"B": 8, "S": 128, "D": 64}, t["dims"]
assert t["launch"][1]["args"][:5] == ["q", "k", "v", "o", "B"], t["launch"][1]["args"]
del t["params"]["TODO_PARAM"]
t["params"]["THREADS"] = {"values": [64, 128], "default": 128}
t["launch"][1]["grid"] = ["ceil_div(S, THREADS)", "B"]
t["launch"][1]["block"] = ["THREADS"]
t["reference"]["source"] = "attn_rows.cu"
json.dump(t, open(path, "w"), indent=1)
PY
expect 0 "check the completed spec with NVRTC for sm_90" -- "$EVOENG" check "$tmp/k/task.json" --arch sm_90 --sample 1
grep_out out "THREADS=128  (default)" "the default configuration compiled"
if grep -q "compile_error\|resource" "$tmp/out"; then echo "FAIL a configuration failed:"; cat "$tmp/out"; fails=$((fails + 1));
else echo "ok   every configuration passes the static gate"; pass=$((pass + 1)); fi

# The checked-in completed copy, and check --source against it.
expect 0 "check tests/data/kfile/task.json for sm_90" -- "$EVOENG" check "$ROOT/tests/data/kfile/task.json" --arch sm_90 --sample 0
expect 0 "check --source with the unchanged file" -- "$EVOENG" check "$ROOT/tests/data/kfile/task.json" --arch sm_90 --sample 0 --source "$tmp/k/attn_rows.cu"
grep_out out "source .*attn_rows.cu (in place of the template)" "check says which source it compiled"
sed 's/void __launch_bounds__(128) attn_rows(/void __launch_bounds__(128) attn_rows_v2(/' "$tmp/k/attn_rows.cu" >"$tmp/renamed.cu"
expect 1 "check --source with the entry renamed" -- "$EVOENG" check "$ROOT/tests/data/kfile/task.json" --arch sm_90 --sample 0 --source "$tmp/renamed.cu"
grep_out err "compile_error.*a task entry names no kernel of this source (identifier \"attn_rows\" is undefined)" "the missing entry is a compile error naming it"
{ printf '#include <torch/extension.h>\n'; cat "$tmp/k/attn_rows.cu"; } >"$tmp/torch.cu"
expect 1 "check --source with a host-only include" -- "$EVOENG" check "$ROOT/tests/data/kfile/task.json" --arch sm_90 --sample 0 --source "$tmp/torch.cu"
grep_out err "candidate.cu:1: host-only code NVRTC cannot compile" "the error names the line"
grep_out err "guard it with #ifndef __CUDACC_RTC__ ... #endif" "the error names the guard to add"
expect 2 "check --source of a missing file" -- "$EVOENG" check "$ROOT/tests/data/kfile/task.json" --source "$tmp/nope.cu"

finish

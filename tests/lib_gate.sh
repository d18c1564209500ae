# Sourced by the gpu tests that run `evoeng check --gpu`.
# gate_verdict LOG RC N LABEL: reads "gate: P passed, F failed, N not run"
# from LOG, prints the counts, and returns 0 only when check exited 0 and
# all N configurations compiled and passed the gate (else prints LOG).
gate_verdict() {
    gv_log=$1; gv_rc=$2; gv_n=$3; gv_label=$4
    gv_line=$(grep "gate: " "$gv_log")
    # "gate: P passed, F failed, N not run ..." -> P F N
    set -- $(echo "$gv_line" | sed -n 's/.*gate: \([0-9]*\) passed, \([0-9]*\) failed, \([0-9]*\) not run.*/\1 \2 \3/p')
    gv_passed=${1:-}; gv_failed=${2:-}; gv_notrun=${3:-}
    echo "check exit $gv_rc; $gv_label of $gv_n configurations: ${gv_passed:-?} correct, ${gv_failed:-?} incorrect, ${gv_notrun:-?} stopped by the static checks (constraints, compile)"
    if [ "$gv_rc" -ne 0 ] || [ "${gv_passed:-0}" -ne "$gv_n" ] || [ "${gv_failed:-1}" -ne 0 ] || [ "${gv_notrun:-1}" -ne 0 ]; then
        echo "FAIL: every sampled configuration must compile and pass the gate"
        cat "$gv_log"
        return 1
    fi
    echo "OK"
}

# gate_task_copy DIR [PARAM VALUES [K=V ...]]: copies the attention
# template and its task into DIR, the copy's PARAM taking only VALUES
# (comma-separated; the first is its default) and each K=V setting a
# parameter's default (so that the default configuration satisfies PARAM's
# constraints). GATE_SPILLS=1 lets the copy's kernels spill (a test of
# correctness alone). GATE_DROP=EXPR leaves out the constraint whose
# expression is EXPR, and fails when the task has none. Returns 1, having
# said so, when the copy fails.
gate_task_copy() {
    gt_dir=$1; shift
    cp "$EVO_SOURCE_ROOT"/templates/attention/*.cu "$EVO_SOURCE_ROOT"/templates/attention/*.cuh \
        "$EVO_SOURCE_ROOT"/templates/attention/task.json "$gt_dir"/ &&
        "${PYTHON:-python3}" - "$gt_dir/task.json" "$@" <<'PYEOF' && return 0
import json, os, sys
path = sys.argv[1]
t = json.load(open(path))
if len(sys.argv) > 2:
    param, values = sys.argv[2], [int(v) for v in sys.argv[3].split(",")]
    t["params"][param].update(values=values, default=values[0])
for kv in sys.argv[4:]:
    k, v = kv.split("=")
    t["params"][k]["default"] = int(v)
if os.environ.get("GATE_SPILLS") == "1":
    t["compile"].update(max_spill_bytes=4096, max_stack_bytes=4096)
drop = os.environ.get("GATE_DROP")
if drop:
    kept = [c for c in t["constraints"] if not (isinstance(c, dict) and c["expr"] == drop)]
    if len(kept) != len(t["constraints"]) - 1:
        sys.exit("the constraint '%s' is not in the task" % drop)
    t["constraints"] = kept
json.dump(t, open(path, "w"), indent=1)
PYEOF
    echo "FAIL: could not write the task copy in $gt_dir"
    return 1
}

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

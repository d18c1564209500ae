#!/usr/bin/env bash
# How long a burst of back-to-back runs lasts changes the latency a
# power-capped GPU shows (issue 11's latency agreement). For each export:
#   - `evoeng bench` with samples of at least SAMPLE_MS ms (EVOENG_SAMPLE_MS),
#     for each value in SAMPLE_LIST (default "0.5 4.5");
#   - bench/compare_sdpa.py with each option list of COMPARES (";" between
#     lists; default: alone (--only evoeng) as it runs by default (graphs of
#     about 0.5 ms, held), alone with graphs of 6, 50 and 200 calls behind
#     the pre-roll sleep (--no-hold), the rotation (evoeng, FA2, cuDNN
#     alternating) by default and with 50 calls and --no-hold);
#   - `evoeng bench` again at 0.5 ms (drift);
# while nvidia-smi logs the SM clock, power, temperature and the active
# clock-event (throttle) reasons every 20 ms. Prints one table per export:
# step, us/call, and the clock and power seen during that step.
#
# Usage (repository root, GPU machine): bench/burst_study.sh OUTDIR EXPORT.json ...
# Env: EVOENG (default build/src/evoeng), SAMPLE_LIST, COMPARES.
# Exit: 0 done (a failed step shows as n/a in its row), 2 usage.
set -u
[ $# -ge 2 ] || { echo "usage: burst_study.sh OUTDIR EXPORT.json ..." >&2; exit 2; }
out=$1
shift
E=${EVOENG:-$PWD/build/src/evoeng}
T=${EVO_SOURCE_ROOT:-$PWD}/templates/attention/task.json
export EVOENG_CACHE_DIR=${EVOENG_CACHE_DIR:-/tmp/evoeng-cache}
mkdir -p "$out"
out=$(cd "$out" && pwd)
steps=$out/steps.tsv
: > "$steps"
smi_pid=
if command -v nvidia-smi > /dev/null; then
    nvidia-smi --query-gpu=timestamp,clocks.sm,power.draw,temperature.gpu,clocks_event_reasons.active \
        --format=csv,noheader,nounits -lms 20 > "$out/smi.csv" 2> "$out/smi.err" &
    smi_pid=$!
fi
default_compares="--only evoeng;--only evoeng --calls 6 --no-hold;--only evoeng --calls 50 --no-hold;"
default_compares+="--only evoeng --calls 200 --no-hold;;--calls 50 --no-hold"
now() { date +%s.%N; }
step() {   # step TAG NAME FILE CMD...: run CMD with stdout to FILE, log its span
    local tag=$1 name=$2 file=$3 t0
    shift 3
    t0=$(now)
    "$@" > "$file" 2> "$file.err"
    printf '%s\t%s\t%s\t%s\t%s\n' "$tag" "$name" "$t0" "$(now)" "$file" >> "$steps"
}
for exp in "$@"; do
    tag=$(basename "$exp" .json)
    read -r dims params <<< "$(python3 - "$exp" << 'PYEOF'
import json, re, sys
e = json.load(open(sys.argv[1]))
shape = dict(re.findall(r"([A-Z]+)=?(\d+)", e["plan"]["shape"]))
dims = " ".join("--dim %s=%s" % kv for kv in shape.items())
print(dims.replace(" ", "~"), ",".join("%s=%s" % kv for kv in e["params"].items()))
PYEOF
)"
    dims=${dims//\~/ }
    echo "=== $tag: $dims; $params"
    for ms in ${SAMPLE_LIST:-0.5 4.5}; do
        # shellcheck disable=SC2086  # $dims is a list of words
        EVOENG_SAMPLE_MS=$ms step "$tag" "evoeng bench, samples >= $ms ms" "$out/$tag.bench-$ms.json" \
            "$E" bench "$T" $dims --params "$params" --json --db "$out/bench.db"
    done
    IFS=';' read -r -a runs <<< "${COMPARES:-$default_compares}"
    i=0
    for r in "${runs[@]}"; do
        i=$((i + 1))
        # shellcheck disable=SC2086  # $r is a list of options
        step "$tag" "compare_sdpa $r" "$out/$tag.cmp-$i.log" \
            python3 bench/compare_sdpa.py "$exp" $r --out "$out/$tag.cmp-$i.json"
    done
    # shellcheck disable=SC2086
    EVOENG_SAMPLE_MS=0.5 step "$tag" "evoeng bench again, samples >= 0.5 ms" "$out/$tag.bench-again.json" \
        "$E" bench "$T" $dims --params "$params" --json --db "$out/bench.db"
done
[ -n "$smi_pid" ] && kill "$smi_pid" 2> /dev/null
python3 - "$steps" "$out/smi.csv" << 'PYEOF' | tee "$out/burst_study.txt"
import datetime, json, re, sys
steps, smi_path = sys.argv[1], sys.argv[2]
smi = []
try:
    for line in open(smi_path):
        f = [x.strip() for x in line.split(",")]
        try:
            t = datetime.datetime.strptime(f[0], "%Y/%m/%d %H:%M:%S.%f").timestamp()
            smi.append((t, float(f[1]), float(f[2]), float(f[3]), f[4]))
        except (ValueError, IndexError):
            pass
except OSError:
    pass

def us_of(path):
    """evoeng's us/call (and cuDNN's where it ran) from a step's output."""
    try:
        if path.endswith(".log"):
            j = json.load(open(path[:-4] + ".json"))
            c = j["results"][0]["contenders"]
            ev, cu = c["evoeng"].get("us"), c["cudnn"].get("us")
            return ev, cu, c["evoeng"].get("calls")
        j = json.load(open(path))
        return (j.get("latency_us") if j.get("status") == "ok" else None), None, j.get("batch")
    except (OSError, ValueError, KeyError, IndexError, TypeError):
        return None, None, None

def busy(t0, t1):
    """SM clock and power over the samples of [t0, t1] with power above idle."""
    s = [x for x in smi if t0 <= x[0] <= t1 and x[2] > 150]
    if not s:
        return "n/a"
    clk = sorted(x[1] for x in s)
    pw = sorted(x[2] for x in s)
    reasons = sorted({x[4] for x in s})
    return (f"clock {clk[len(clk) // 2]:.0f} MHz (min {clk[0]:.0f}), power {pw[len(pw) // 2]:.0f} W "
            f"(max {pw[-1]:.0f}), {max(x[3] for x in s):.0f} C, reasons {'/'.join(reasons)}")

last = None
for line in open(steps):
    tag, name, t0, t1, path = line.rstrip("\n").split("\t")
    if tag != last:
        print(f"\n{tag}")
        last = tag
    us, cu, calls = us_of(path)
    cudnn = f" (cuDNN {cu:.2f})" if cu else ""
    runs = f" x{calls}" if calls else ""
    print(f"  {name:52s} {('%.2f us' % us) if us else 'n/a':>10s}{runs}{cudnn}   {busy(float(t0), float(t1))}")
PYEOF

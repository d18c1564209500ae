#!/bin/sh
# bench/fuzz.sh SECONDS [--smoke] [TARGET...]: run each libFuzzer target
# (default: fuzz_expr fuzz_task fuzz_extract fuzz_rows fuzz_canon, built by meson when
# clang is found; see tests/meson.build) for SECONDS, one after the other,
# and print per target its executions, its coverage (libFuzzer's cov and
# ft at the end) and its crashes (crash-, leak-, timeout-, oom- files and
# sanitizer reports). Exit 0 when no target crashed.
#
# The corpus of each target is kept in BUILD/fuzz-corpus/TARGET (so a
# later run goes on from it), seeded from tests/data (specs, LLM replies);
# what a crash leaves is in BUILD/fuzz-out. Run it from anywhere; BUILD is
# $EVO_BUILD_ROOT or the source tree's build/. --smoke: a scratch corpus
# and no build step (the 'fuzz_smoke' unit test).
#
#   nice -n 19 sh bench/fuzz.sh 600        # 10 minutes each
set -u
secs=${1:?usage: bench/fuzz.sh SECONDS [--smoke] [TARGET...]}
shift
smoke=0
if [ "${1:-}" = "--smoke" ]; then smoke=1; shift; fi
ROOT=${EVO_SOURCE_ROOT:-$(cd "$(dirname "$0")/.." && pwd)}
BUILD=${EVO_BUILD_ROOT:-$ROOT/build}
targets=${*:-fuzz_expr fuzz_task fuzz_extract fuzz_rows fuzz_canon}
if [ "$smoke" = 0 ]; then
    ninja -C "$BUILD" $(for t in $targets; do printf 'tests/%s ' "$t"; done) >/dev/null ||
        { echo "fuzz.sh: building the targets failed (is clang installed? meson setup -Dfuzz=enabled says why)" >&2; exit 2; }
fi
out=$BUILD/fuzz-out
mkdir -p "$out"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
crashed=0
for t in $targets; do
    exe=$BUILD/tests/$t
    if [ ! -x "$exe" ]; then echo "$t: not built ($exe)"; crashed=1; continue; fi
    if [ "$smoke" = 1 ]; then corpus=$tmp/$t; else corpus=$BUILD/fuzz-corpus/$t; fi
    mkdir -p "$corpus"
    case $t in
        fuzz_task)    seeds=$ROOT/tests/data ;;
        fuzz_extract) seeds=$ROOT/tests/data/llm ;;
        fuzz_canon)   seeds=$ROOT/tests/data/kernels ;;
        fuzz_expr)    seeds=$tmp/expr-seeds
                      mkdir -p "$seeds"
                      i=0
                      for e in 'ceil_div(N, BLOCK * UNROLL) * 2' 'min(M, 4) % 3 == 1 && N >= 64' '(1 << 30) / (Z + 1)' \
                               'H * 2.5 > 1 ? N : M' 'max(BIG, SMALL) - 1'; do
                          i=$((i + 1)); printf '%s' "$e" > "$seeds/e$i"
                      done ;;
        *)            seeds= ;;
    esac
    log=$tmp/$t.log
    before=$(ls "$out" | grep -c "^$t-" || true)
    # fuzz_task names its spec tests/data/fuzz.json: from the source root
    (cd "$ROOT" && ASAN_OPTIONS=${ASAN_OPTIONS:-detect_stack_use_after_return=1} \
        "$exe" -max_total_time="$secs" -print_final_stats=1 -rss_limit_mb=2048 -timeout=20 \
        -artifact_prefix="$out/$t-" "$corpus" $seeds) > "$log" 2>&1
    rc=$?
    after=$(ls "$out" | grep -c "^$t-" || true)
    execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
    cov=$(grep -o 'cov: [0-9]*' "$log" | tail -1 | cut -d' ' -f2)
    ft=$(grep -o 'ft: [0-9]*' "$log" | tail -1 | cut -d' ' -f2)
    corp=$(ls "$corpus" | wc -l)
    reports=$(grep -c 'ERROR: AddressSanitizer\|ERROR: LeakSanitizer\|runtime error:\|ERROR: libFuzzer' "$log")
    crashes=$((after - before))
    if [ "$rc" -ne 0 ] && [ "$crashes" -eq 0 ]; then crashes=1; fi
    echo "$t: ${execs:-0} executions in $secs s, cov ${cov:-0} ft ${ft:-0}, corpus $corp, $crashes crashes, $reports sanitizer reports"
    if [ "$crashes" -ne 0 ] || [ "$reports" -ne 0 ]; then
        crashed=1
        grep -m5 'ERROR:\|runtime error:\|SUMMARY' "$log" | sed 's/^/    /'
        echo "    artifacts: $out/$t-*"
    fi
done
exit $crashed

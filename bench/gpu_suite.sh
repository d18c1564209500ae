#!/usr/bin/env bash
# Run the gpu test suite on a machine where the build folder was carried
# from elsewhere (meson's absolute paths differ there, so run the test
# programs directly). Usage: bench/gpu_suite.sh [LOGDIR] [NAME ...]
# NAMEs (cuda, resume, multi, init_seed, ...: the tests' names without
# test_gpu_ / test_) run those tests only, in the suite's order, so that a
# suite longer than one device call (KILLS=20 on four GPUs: over 560 s)
# can be split over two. Exit status: 0 when none failed, 1 otherwise, 2
# for a NAME the suite does not have.
set -u
log=${1:-/tmp}
shift 2>/dev/null
want=" $* "
mkdir -p "$log"
export EVO_SOURCE_ROOT=$PWD EVOENG=$PWD/build/src/evoeng EVOENG_CACHE_DIR=${EVOENG_CACHE_DIR:-/tmp/evoeng-cache}
pass=0; fail=0; skip=0
# every gpu-suite test of tests/meson.build must be in the list below
for n in $(grep -o "^test('gpu_[a-z0-9_]*'" tests/meson.build | sed "s/test('gpu_//; s/'//"); do
    grep -q "test_gpu_$n\|test_$n" "$0" || { echo "gpu_suite.sh: gpu test $n is not in its list" >&2; exit 1; }
done
suite=(build/tests/test_gpu_cuda build/tests/test_gpu_planted build/tests/test_gpu_ref build/tests/test_gpu_aa
       "sh tests/test_gpu_resume.sh" "sh tests/test_gpu_sweep.sh" "sh tests/test_gpu_bf16.sh" "sh tests/test_gpu_gqa.sh"
       "sh tests/test_gpu_maxskip.sh" "sh tests/test_gpu_otma.sh" "sh tests/test_gpu_race.sh" "sh tests/test_gpu_profiles.sh" "sh tests/test_gpu_kfile.sh"
       "sh tests/test_gpu_multi.sh" "sh tests/test_gpu_hang.sh" "sh tests/test_gpu_untrusted.sh"
       "sh tests/test_init_seed.sh --gpu")
# a test's name (test_gpu_multi) and its short name (multi)
test_name() { echo "$1" | sed 's/.*\(test_[a-z0-9_]*\).*/\1/'; }
short_name() { local n; n=$(test_name "$1"); n=${n#test_}; echo "${n#gpu_}"; }
for w in $want; do
    found=0
    for t in "${suite[@]}"; do [ "$(short_name "$t")" = "$w" ] && found=1; done
    [ "$found" -eq 1 ] || { echo "gpu_suite.sh: no gpu test '$w' (names: cuda, planted, resume, multi, init_seed, ...)" >&2; exit 2; }
done
for t in "${suite[@]}"; do
    name=$(test_name "$t")
    [ -z "${want// /}" ] || case $want in *" $(short_name "$t") "*) ;; *) continue;; esac
    echo "=== $name"
    t0=$(date +%s)
    timeout 600 $t 2>&1 | tee "$log/$name.log"
    rc=${PIPESTATUS[0]}
    echo "--- $name: $(( $(date +%s) - t0 )) s"
    case $rc in 0) pass=$((pass+1)); echo "--- $name: OK";; 77) skip=$((skip+1)); echo "--- $name: SKIP";;
                *) fail=$((fail+1)); echo "--- $name: FAIL (exit $rc)";; esac
done
echo "$pass passed, $fail failed, $skip skipped"
[ "$fail" -eq 0 ]

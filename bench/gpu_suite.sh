#!/usr/bin/env bash
# Run the gpu test suite on a machine where the build folder was carried
# from elsewhere (meson's absolute paths differ there, so run the test
# programs directly). Usage: bench/gpu_suite.sh [LOGDIR]
set -u
log=${1:-/tmp}
mkdir -p "$log"
export EVO_SOURCE_ROOT=$PWD EVOENG=$PWD/build/src/evoeng EVOENG_CACHE_DIR=${EVOENG_CACHE_DIR:-/tmp/evoeng-cache}
pass=0; fail=0; skip=0
# every gpu-suite test of tests/meson.build must be in the list below
for n in $(grep -o "^test('gpu_[a-z0-9_]*'" tests/meson.build | sed "s/test('gpu_//; s/'//"); do
    grep -q "test_gpu_$n\|test_$n" "$0" || { echo "gpu_suite.sh: gpu test $n is not in its list" >&2; exit 1; }
done
for t in build/tests/test_gpu_cuda build/tests/test_gpu_planted build/tests/test_gpu_ref build/tests/test_gpu_aa "sh tests/test_gpu_resume.sh" "sh tests/test_gpu_sweep.sh" "sh tests/test_gpu_bf16.sh" "sh tests/test_gpu_gqa.sh" "sh tests/test_gpu_maxskip.sh" "sh tests/test_gpu_profiles.sh" "sh tests/test_gpu_kfile.sh" "sh tests/test_gpu_multi.sh" "sh tests/test_gpu_hang.sh" "sh tests/test_gpu_untrusted.sh" "sh tests/test_init_seed.sh --gpu"; do
    name=$(echo "$t" | sed 's/.*\(test_[a-z0-9_]*\).*/\1/')
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

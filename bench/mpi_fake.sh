#!/bin/sh
# The MPI path's overhead without a GPU (issue 32): the steady loop over
# the fake evaluator (tests/test_mpi.c) in one process with N slots, then
# under mpirun with rank 0 and N agents of one slot each (sharing a compile
# cache folder, as agents of one host do), GPU work and the
# loop thread's proposals mimicked with sleeps. Prints each run's "bench:"
# line (candidates a minute, slot time a candidate); with
# EVOENG_MPI_DEBUG=1 also the MPI runs' "mpi_debug" lines (mpistat.h).
# Usage (repository root): bench/mpi_fake.sh [N...]   (default: 2 3 4)
# Env: GATE_US (a stage-1 gate, 20000), WORK_US (a stage-2 gate, a
#      timing, an A/B: 10000), UNIT_US (a stage-1 unit's build after its
#      submit, also a parent's sent to an agent: 30000), PROPOSE_US (a
#      proposal, 3000), GENS (40), TEXT_BYTES (a child's source text,
#      96000: a rendered template's, as the 2026-11-27 replies carried),
#      LOG_BYTES (its compile row's log, 3000),
#      T (the test binary, build/tests/test_mpi).
set -u
T=${T:-build/tests/test_mpi}
export EVO_SOURCE_ROOT="${EVO_SOURCE_ROOT:-$PWD}" EVO_TEST_STEADY=1
export EVO_TEST_GATE_US="${GATE_US:-20000}" EVO_TEST_WORK_US="${WORK_US:-10000}"
export EVO_TEST_UNIT_US="${UNIT_US:-30000}" EVO_TEST_PROPOSE_US="${PROPOSE_US:-3000}" EVO_TEST_GENERATIONS="${GENS:-40}"
export EVO_TEST_TEXT_BYTES="${TEXT_BYTES:-96000}" EVO_TEST_LOG_BYTES="${LOG_BYTES:-3000}"
MPIRUN="mpirun --allow-run-as-root --oversubscribe --bind-to none --mca btl self,vader,tcp"
dir=$(mktemp -d /tmp/evo_mpi_fake_XXXXXX)
trap 'rm -rf "$dir"' EXIT
[ $# -gt 0 ] || set -- 2 3 4
for n in "$@"; do
    EVO_TEST_SLOTS=$n "$T" single "$dir/single$n.db" | sed -n "s/^bench:/single $n:/p"
    # shellcheck disable=SC2086  # MPIRUN is a command and its options
    EVO_TEST_CACHE=$dir/cache$n $MPIRUN -np $((n + 1)) -x EVO_TEST_CACHE -x EVO_SOURCE_ROOT -x EVO_TEST_STEADY -x EVO_TEST_GATE_US -x EVO_TEST_WORK_US -x EVO_TEST_UNIT_US \
        -x EVO_TEST_PROPOSE_US -x EVO_TEST_GENERATIONS -x EVO_TEST_TEXT_BYTES -x EVO_TEST_LOG_BYTES ${EVOENG_MPI_DEBUG:+-x EVOENG_MPI_DEBUG} \
        "$T" mpi "$dir/mpi$n.db" > "$dir/mpi$n.log" 2>&1
    sed -n "s/^bench:/mpi    $n:/p" "$dir/mpi$n.log"
    grep '^{"mpi_debug"' "$dir/mpi$n.log"
done

#!/bin/sh
# The MPI mode over the fake evaluator (tests/test_mpi.c): rank 0 the
# orchestrator, ranks 1.. agents of one slot each. Checks that
#   1. mpirun -np 3 commits the same run (keys, verdicts, latencies, in
#      commit order) as one process with 2 slots, and so does -np 2 with
#      one agent of 2 slots;
#   2. an agent killed (SIGKILL) mid-request ends the run 'interrupted'
#      (rank 0 exits 8; mpirun in Open MPI 4's recovery mode exits 0
#      whatever its ranks return, so the test reads rank 0's output), with
#      no candidate lost or committed twice;
#   3. resume on fewer ranks (-np 2) completes it, to the same candidates
#      as the single-process run;
#   4. EVOENG_MPI_DEBUG prints each rank's timing line, and the A/Bs ran
#      on the agents right after their stage-A gates;
#   5. the MPI run's NVRTC figures are the agents' (rank 0 compiles none);
#   6. rank 0 stores each candidate's source and compile log byte for byte
#      as one process does, whether it renders the sources itself or the
#      agents send them, and an agent that renders another text (a
#      planted mismatch) is caught: its texts are stored, with a warning.
# Skips (77) without mpirun, or when evoeng was built without MPI.
set -u
T=$1
command -v mpirun >/dev/null 2>&1 || { echo "SKIP: mpirun is not installed (apt-get install openmpi-bin libopenmpi-dev)"; exit 77; }
"$T" mpi /dev/null 2>/dev/null; [ $? -eq 77 ] && { echo "SKIP: evoeng was built without MPI (-Dmpi=disabled or no libopenmpi-dev)"; exit 77; }
# Under ASan (.ci/run's sanitizer pass): Open MPI's plugins keep memory to
# the end and are unloaded before LeakSanitizer reports it, so the leaks
# show as frames of an unknown module that no suppression can name, and
# turn an exit code 2 into 1. Leak detection is off for what mpirun
# starts; every other check of ASan and UBSan stays on.
ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0"
export ASAN_OPTIONS
dir=$(mktemp -d /tmp/evo_test_mpi_XXXXXX)
trap 'rm -rf "$dir"' EXIT
# Sources of 20 kB and compile logs of 2 kB, as a rendered template's and
# NVRTC's are: every run's dump shows each committed candidate's source
# text hash, whether it is the candidate's source_hash, and its compile
# log's hash, so the MPI runs must store them byte for byte as one process.
EVO_TEST_TEXT_BYTES=20000 EVO_TEST_LOG_BYTES=2000
export EVO_TEST_TEXT_BYTES EVO_TEST_LOG_BYTES
# --mca orte_enable_recovery 1: mpirun keeps rank 0 alive when an agent dies
MPIRUN="mpirun --allow-run-as-root --oversubscribe --mca orte_enable_recovery 1 --mca btl self,tcp,vader -x EVO_TEST_TEXT_BYTES -x EVO_TEST_LOG_BYTES"
fail=0
check() { if eval "$2"; then echo "ok: $1"; else echo "FAIL: $1"; fail=1; return 1; fi; }

"$T" single "$dir/single.db" > "$dir/single.log" || { echo "FAIL: the single-process run"; exit 1; }
"$T" dump "$dir/single.db" > "$dir/single.txt"
timeout 120 $MPIRUN -np 3 "$T" mpi "$dir/mpi.db" > "$dir/mpi.log" 2>&1
rc=$?
check "mpirun -np 3 exits 0 (got $rc)" '[ $rc -eq 0 ]' || cat "$dir/mpi.log"
"$T" dump "$dir/mpi.db" > "$dir/mpi.txt"
check "the MPI run commits what one process commits ($(grep -c . "$dir/single.txt") lines)" \
      'cmp -s "$dir/single.txt" "$dir/mpi.txt"' || diff "$dir/single.txt" "$dir/mpi.txt" | head -20
check "the reference run completed" 'grep -q "completed" "$dir/single.txt"'
check "every stored source matches its candidate's hash, with a compile log" \
      '! grep "^[0-9]" "$dir/single.txt" | grep -q -e "!= log" -e " log -$"'
# 5. the run's NVRTC figures count the agents' units (the fake evaluator
#    counts each unit it "builds"): rank 0 compiles nothing itself, so
#    without the agents' figures they would read 0. Every unit of the
#    single run is built by some agent; a parent adopted by another agent
#    may build more.
units() { sed -n 's/^nvrtc units \([0-9]*\),.*/\1/p' "$1" | head -1; }
u1=$(units "$dir/single.log"); u3=$(units "$dir/mpi.log")
check "the MPI run's NVRTC units are the agents' ($u3, one process: $u1)" \
      '[ -n "$u1" ] && [ -n "$u3" ] && [ "$u1" -gt 0 ] && [ "$u3" -ge "$u1" ]'
# ... with the agent sending its sources (rank 0 renders none)
EVO_TEST_NO_RENDER=1 EVO_TEST_AGENT_SLOTS=2 timeout 120 $MPIRUN -np 2 -x EVO_TEST_AGENT_SLOTS -x EVO_TEST_NO_RENDER \
    "$T" mpi "$dir/mpi2.db" > "$dir/mpi2.log" 2>&1
"$T" dump "$dir/mpi2.db" > "$dir/mpi2.txt"
check "mpirun -np 2, one agent of 2 slots sending its sources, commits the same" \
      'cmp -s "$dir/single.txt" "$dir/mpi2.txt"' || { cat "$dir/mpi2.log"; diff "$dir/single.txt" "$dir/mpi2.txt" | head -20; }

# 6. Agent 2 renders other sources than rank 0 (a planted mismatch: other
#    template files on its host). Rank 0 must not store its own render
#    under the agent's hash: it warns once, naming both hashes, and stores
#    the agent's texts (other hashes than one process's for the children
#    agent 2 judged, each its candidate's source_hash); all else the same.
EVO_TEST_PLANT=2 timeout 120 $MPIRUN -np 3 -x EVO_TEST_PLANT "$T" mpi "$dir/plant.db" > "$dir/plant.log" 2>&1
rc=$?
"$T" dump "$dir/plant.db" > "$dir/plant.txt"
# a dump line without the text's and the log's hashes
strip() { sed 's/ [0-9a-f]\{16\}[!=]* log [0-9a-f-]*$//' "$1"; }
nw=$(grep -c "MPI rank 2 compiled .* from a source of sha256 [0-9a-f]\{64\}, rank 0 renders sha256 [0-9a-f]\{64\}" "$dir/plant.log")
ndiff=$(grep '^[0-9]' "$dir/plant.txt" | cut -d' ' -f2,8 | sort | comm -13 "$(grep '^[0-9]' "$dir/single.txt" | cut -d' ' -f2,8 | sort > "$dir/s.keys"; echo "$dir/s.keys")" - | grep -c .)
check "a planted mismatch: exits 0, one warning naming both hashes ($nw), agent 2's texts stored ($ndiff), each its hash's" \
      '[ $rc -eq 0 ] && [ "$nw" -eq 1 ] && [ "$ndiff" -gt 0 ] && ! grep "^[0-9]" "$dir/plant.txt" | grep -q -e "!= log" -e " log -$"' \
    || { cat "$dir/plant.log"; head "$dir/plant.txt"; }
check "a planted mismatch: the same candidates and verdicts as one process" \
      '[ "$(strip "$dir/single.txt")" = "$(strip "$dir/plant.txt")" ]' \
    || diff "$dir/single.txt" "$dir/plant.txt" | head -20

# The steady mode (the default of run) over MPI: every generation full,
# nothing committed twice, with one agent a slot and with one agent of 2.
want=$(grep -c '^[0-9]' "$dir/single.txt")
# Each rank's stderr goes to a file of its own (EVO_RANK_ERR.RANK): Open
# MPI's output forwarding now and then drops the last line a rank writes
# before it exits (an agent's debug line, 3 runs in 10 of -np 2 on a
# 2-core machine), so the debug lines are read from those files.
for np in 3 2; do
    EVO_RANK_ERR="$dir/steady$np.err" EVOENG_MPI_DEBUG=1 EVO_TEST_STEADY=1 EVO_TEST_AGENT_SLOTS=$((4 - np)) \
        timeout 120 $MPIRUN -np $np -x EVO_TEST_STEADY -x EVO_TEST_AGENT_SLOTS -x EVOENG_MPI_DEBUG -x EVO_RANK_ERR \
        sh -c 'exec "$0" "$@" 2> "$EVO_RANK_ERR.$OMPI_COMM_WORLD_RANK"' "$T" mpi "$dir/steady$np.db" \
        > "$dir/steady$np.log" 2>&1
    rc=$?
    "$T" dump "$dir/steady$np.db" > "$dir/steady$np.txt"
    check "steady over mpirun -np $np: exits 0, completed, $want candidates, no duplicates" \
          '[ $rc -eq 0 ] && grep -q "^run 1 completed" "$dir/steady$np.txt" && grep -q "^duplicates 0" "$dir/steady$np.txt" && [ "$(grep -c "^[0-9]" "$dir/steady$np.txt")" -eq "$want" ]' \
        || { cat "$dir/steady$np.log"; tail -3 "$dir/steady$np.txt"; }
    # EVOENG_MPI_DEBUG: one timing line from rank 0 and from each agent;
    # A/Bs ran on the agents right after their stage-A gates ("fused")
    check "steady over mpirun -np $np: EVOENG_MPI_DEBUG lines, the A/Bs fused with the gates" \
          '[ "$(cat "$dir/steady$np.err".* | grep -c "^{\"mpi_debug\":\"agent\"")" -eq $((np - 1)) ] && grep "^{\"mpi_debug\":\"rank0\"" "$dir/steady$np.err.0" | grep -q "\"fused\":{\"n\":[1-9]"' \
        || cat "$dir/steady$np.log" "$dir/steady$np.err".*
done

# Agent 1 gates ten times slower than agent 2. Agents that share a compile
# cache (one host) take over each other's built children when their own
# GPU has nothing: agent 2 takes some of agent 1's; with no shared cache
# none is taken over. Either way every candidate once.
for cache in shared none; do
    [ "$cache" = shared ] && export EVO_TEST_CACHE="$dir/cache" || unset EVO_TEST_CACHE
    EVO_TEST_STEADY=1 EVO_TEST_SLOW=1:20000 timeout 120 $MPIRUN -np 3 -x EVO_TEST_STEADY -x EVO_TEST_SLOW \
        $([ "$cache" = shared ] && echo "-x EVO_TEST_CACHE") "$T" mpi "$dir/slow-$cache.db" > "$dir/slow-$cache.log" 2>&1
    rc=$?
    "$T" dump "$dir/slow-$cache.db" > "$dir/slow-$cache.txt"
    took=$(sed -n 's/.*taken over \([0-9]*\).*/\1/p' "$dir/slow-$cache.log" | head -1)
    if [ "$cache" = shared ]; then want_took='[ "${took:-0}" -gt 0 ]'; else want_took='[ "${took:-x}" = 0 ]'; fi
    check "steady, one slow agent, cache $cache: completed, $want candidates, no duplicates, taken over ${took:-?}" \
          '[ $rc -eq 0 ] && grep -q "^run 1 completed" "$dir/slow-$cache.txt" && grep -q "^duplicates 0" "$dir/slow-$cache.txt" && [ "$(grep -c "^[0-9]" "$dir/slow-$cache.txt")" -eq "$want" ] && eval "$want_took"' \
        || { cat "$dir/slow-$cache.log"; tail -3 "$dir/slow-$cache.txt"; }
done
unset EVO_TEST_CACHE

# Agent 2 dies in its 6th gate; rank 0 notices within EVOENG_MPI_TIMEOUT.
EVOENG_MPI_TIMEOUT=3 EVO_TEST_DIE=2:6 timeout 120 $MPIRUN -np 3 -x EVOENG_MPI_TIMEOUT -x EVO_TEST_DIE \
    "$T" mpi "$dir/die.db" > "$dir/die.log" 2>&1
rc=$?
check "rank 0 notices the lost agent and stops the run" \
      'grep -q "MPI rank 2 is lost" "$dir/die.log" && grep -q "interrupted 1, exit 8" "$dir/die.log"' || cat "$dir/die.log"
"$T" dump "$dir/die.db" > "$dir/die.txt"
check "the run is marked interrupted" 'grep -q "^run 1 interrupted" "$dir/die.txt"'
check "nothing committed twice" 'grep -q "^duplicates 0" "$dir/die.txt"'
n=$(grep -c '^[0-9]' "$dir/die.txt")
check "something was committed before the loss ($n), not everything" \
      '[ "$n" -gt 0 ] && [ "$n" -lt $(grep -c "^[0-9]" "$dir/single.txt") ]'
# every committed candidate is one the reference run committed, identically
check "what was committed is what one process commits" \
      '[ -z "$(grep "^[0-9]" "$dir/die.txt" | sort | comm -23 - "$(grep "^[0-9]" "$dir/single.txt" | sort > "$dir/s.sorted"; echo "$dir/s.sorted")")" ]'

timeout 120 $MPIRUN -np 2 "$T" mpi "$dir/die.db" 1 > "$dir/resume.log" 2>&1
rc=$?
check "resume on 2 ranks exits 0 (got $rc)" '[ $rc -eq 0 ]' || cat "$dir/resume.log"
"$T" dump "$dir/die.db" > "$dir/resumed.txt"
check "the resumed run completed" 'grep -q "^run 1 completed" "$dir/resumed.txt"'
check "no duplicates after resume" 'grep -q "^duplicates 0" "$dir/resumed.txt"'
grep '^[0-9]' "$dir/resumed.txt" | sort > "$dir/r.sorted"
check "the resumed run holds the same candidates as one process" 'cmp -s "$dir/r.sorted" "$dir/s.sorted"' \
    || diff "$dir/r.sorted" "$dir/s.sorted" | head

# The evoeng binary: mpirun -np 1 is a usage error (2); without a GPU an
# agent refuses and rank 0 exits 5, with no run recorded.
if [ -n "${EVOENG:-}" ]; then
    (cd "$dir" && timeout 60 mpirun --allow-run-as-root -np 1 "$EVOENG" run --db "$dir/bin.db" > "$dir/np1.log" 2>&1)
    rc=$?
    check "evoeng under mpirun -np 1 exits 2 (got $rc)" '[ $rc -eq 2 ] && grep -q "at least one agent rank" "$dir/np1.log"'
    if [ ! -e /dev/nvidia0 ]; then
        (cd "$EVO_SOURCE_ROOT" && timeout 60 $MPIRUN -np 2 "$EVOENG" run --db "$dir/bin.db" > "$dir/np2.log" 2>&1)
        check "evoeng under mpirun -np 2 without a GPU: rank 1 refuses, no run recorded" \
              'grep -q "MPI rank 1: no usable GPU" "$dir/np2.log" && [ -z "$("$T" dump "$dir/bin.db" 2>/dev/null)" ]' \
              || cat "$dir/np2.log"
    fi
fi
exit $fail

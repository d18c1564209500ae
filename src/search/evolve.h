/*
 * evolve: the generation loop. Generation 0 is the baseline (the task's
 * defaults, or a user kernel) plus distinct random valid configurations up
 * to the population size. Each later generation selects parents from the
 * population by tournament (size 3, on latency rank; the population is
 * the P fastest survivors, so the best is always kept: elitist), makes
 * children with the operators of ops.h, skips configurations this run has
 * already evaluated (refilling), and judges each child in two stages:
 *   stage A  its benchmark-shape unit is compiled, gated on the benchmark
 *            shape with every seed, and compared with its parent by an
 *            interleaved A/B (its latency is its side of the A/B);
 *   stage B  only a child that would be accepted (and the baseline,
 *            generation 0 and the children of the random and exhaustive
 *            strategies) compiles its other units and passes the gate on
 *            every other shape; only then is it accepted.
 * A child more than `revert_threshold` slower than its parent is
 * `reverted` (gated on the benchmark shape only: rec.gate_stage BENCH)
 * and never becomes a parent; otherwise it is `accepted` (gate_stage FULL)
 * and competes for a place by latency. Every candidate is committed in
 * its own transaction as soon as it is decided.
 *
 * The work is pipelined: every child's benchmark unit is queued for
 * compilation when the generation starts and the GPU takes each child as
 * soon as its unit is built, while the rest compile; stage-B units are
 * queued right after the child's A/B and its full gate runs after the
 * batch's stage A. Parents stay compiled and loaded in an LRU cache.
 * While stage B runs, the next generation is proposed as if every child
 * in stage B passes, and its units compile into the compile cache; the
 * real proposals are still made from the committed state.
 *
 * Proposals are a pure function of (seed, generation, the population at
 * the start of the generation), and the population only counts candidates
 * of earlier generations, so `resume` after kill -9 proposes the same
 * children and skips those already committed.
 *
 * Search (issue 12; propose.c, model.c, warm.c): a slot whose moves find
 * nothing new widens them up to a scan of the space, so generations are
 * full until the valid space is exhausted (summary->space_exhausted); the
 * population keeps niches of the structural knobs (a value no survivor
 * holds gets a founder child, compared with the baseline), mutations grow with
 * stagnation and immigrants come after 3 generations without improvement;
 * a move of one parent that the constraints refuse lets one other param
 * follow it (BLOCK_M with CONSUMERS or WARPS: coupled knobs never move
 * alone); strategy "model" ranks a pool of proposals with the surrogate fitted on
 * the run's earlier generations; generation 0 is warm-started from earlier
 * runs of the task on the device (runs with a smaller id only). All of it
 * reads only committed state, so resume stays exact.
 *
 * Kernels: a child renders the kernel of its primary parent: the task's
 * template, or a kernel that is not (a --source baseline, an LLM answer),
 * whose raw text the store keeps in `kernels` under the key in its
 * params_key ("...@<16 hex>"). So parameter mutations of an LLM child tune
 * the LLM's kernel with their own #defines. Generation-0 and random
 * children render the baseline's kernel.
 *
 * LLM children (cfg->llm set, generations > 0, not exhaustive): a fraction
 * llm_rate of each generation's children slots (rounded, at least 1 when
 * the rate is above 0, at most what the request budget leaves) goes to
 * the LLM operator (llmop.h). Their parents are tournament-selected from
 * the same population with an RNG stream of their own, so the parametric
 * proposals of a seed never depend on LLM replies or their timing. The
 * requests are queued at the start of the generation and travel while the
 * parametric children compile and run; then the loop waits for the
 * answers (each bounded by the client's timeouts and retries), records
 * every request in llm_requests (failed ones too, with their status), and
 * compiles, gates, times and compares each usable kernel against its
 * parent under the same revert rule, rendered with the parent's params.
 * An answer whose kernel was already evaluated in this run is recorded
 * with status "duplicate" and makes no child.
 *
 * LLM answers are not reproducible, so resume works per request: a
 * committed LLM child is never evaluated again; a recorded request counts
 * as done (whatever its status); an answer that was recorded but whose
 * child was never committed is marked "interrupted" and its slot is asked
 * again, as is a request that was still in flight when the run stopped.
 *
 * The GPU work goes through an Evaluator vtable (child.h), so the loop's
 * logic is tested without a GPU (tests/test_evolve.c uses a synthetic
 * evaluator). The run's configuration and summary are run_config.h; the
 * loop's parts are listed in loop.h.
 */
#ifndef EVO_EVOLVE_H
#define EVO_EVOLVE_H

#include <stdint.h>

#include "search/child.h"
#include "search/run_config.h"
#include "store/store.h"
#include "task/task.h"
#include "util.h"

/* Start a new run (resume_run_id == 0) or continue one, and run it to the
 * configured number of generations. Returns 0 (also when stopped early:
 * see summary->interrupted), or -1 with err (store failure, evaluator
 * failure, no valid baseline). */
int evolve_run(Store *st, Task *task, const DeviceInfo *dev, const EvaluatorOps *ev, void *ev_ctx,
               const EvolveConfig *cfg, int64_t resume_run_id, EvolveSummary *summary, EvoErr *err);

/* What bounded a finished run's rate of candidates, from its summary. */
typedef enum EvolveBound {
    EVOLVE_BOUND_UNKNOWN = 0,   /* no compile figures here (MPI's rank 0: the agents compile), slots not busy */
    EVOLVE_BOUND_NEITHER,       /* neither busy: a short run's warm-up, proposals, a sync run's barriers */
    EVOLVE_BOUND_GPUS,          /* the GPU slots: busy EVOLVE_BOUND_BUSY of the wall time or more, on average */
    EVOLVE_BOUND_COMPILE,       /* else the compile threads, busy that share or more */
} EvolveBound;
#define EVOLVE_BOUND_BUSY 0.9

/* How busy a run was (evolve_bound). */
typedef struct EvolveLoad {
    double slots_busy;     /* the GPU slots' mean busy share (the first 8 slots) */
    double compile_busy;   /* the compile threads' busy share (0 without them) */
    double cap_per_min;    /* the candidates a minute the cores could compile at the run's CPU-s a
                              candidate (cpu_s / evaluated); 0 when unknown or nothing compiles here */
} EvolveLoad;

/* The bound of a run with summary s (its wall_ms, slots, slot_busy_s,
 * pipe.lanes, pipe.compile_busy_s, evaluated and cpu_s) on `cores` cores,
 * and in *load (may be NULL) the shares it was judged on. Pure. */
EvolveBound evolve_bound(const EvolveSummary *s, int cores, EvolveLoad *load);
/* "unknown", "neither", "gpus" or "compile" (the --json summary's "bound"). */
const char *evolve_bound_name(EvolveBound b);

#endif

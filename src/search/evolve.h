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
 * The GPU work goes through an Evaluator vtable, so the loop's logic is
 * tested without a GPU (tests/test_evolve.c uses a synthetic evaluator).
 */
#ifndef EVO_EVOLVE_H
#define EVO_EVOLVE_H

#include <stdint.h>

#include "store/store.h"
#include "task/task.h"
#include "util.h"

typedef struct LlmOp LlmOp;   /* llmop.h */

/* One candidate on its way through compile, gate, timing and decision. */
typedef struct Child {
    int64_t        *vals;         /* params, task_nparams entries */
    char           *params_key;   /* ops_params_key() */
    const char     *op;           /* operator name (static) */
    int64_t         parent_id, parent2_id;
    const char     *custom_source;/* a kernel that is not the task's template (e.g. --source, LLM); borrowed */
    CandidateRecord rec;          /* what gets committed; the evaluator fills status, timings, metrics */
    CompileRecord   comp;         /* compile row of the benchmark-shape source */
    char           *source_text;  /* rendered benchmark-shape source (stored in `sources`) */
    void           *priv;         /* the evaluator's state (compiled modules) */
    int             gpu;          /* the evaluator slot (GPU) judging it, set by the loop; 0 with one */
    char           *own_source;   /* owned storage behind custom_source, or NULL */
    const struct Child *judge_parent; /* during its stage-A gate: the parent it is judged against
                                         (borrowed; the evaluator's watchdog reads its times), else NULL */
} Child;

/* Returned by gate, time and compare when the slot the child was on is
 * lost for good (its GPU was dropped from the run): the child was not
 * judged and goes to another slot. */
#define EVAL_RETRY (-2)

struct EvalPipeStats;

typedef struct EvaluatorOps {
    const char *name;
    /* Queue a child's work without waiting for it. Stage 1: check its
     * configuration against the constraints, render it for every shape
     * and queue the compilation of its benchmark-shape unit (priority
     * "next": after what a GPU waits for, in submission order); a child
     * that fails there gets rec.status "invalid" and rec.error. Stage 0:
     * the same (a speculative child). Stage 2: queue the compilation of
     * its other units, first in line (the child passed stage A). Stage 3:
     * queue them speculatively, at the lowest priority (the child is
     * likely to pass stage A; stage 2 later promotes them). A child with
     * rec.status set is left alone. Returns 0, or -1 only when evaluation
     * cannot go on at all. */
    int (*submit)(void *ctx, Child *kid, int stage, EvoErr *err);
    /* Wait for the stage's compilations, apply the static gate and run the
     * correctness gate with every seed: stage 1 on the benchmark shape,
     * stage 2 on every other shape. Fills source_text, rec.source_hash,
     * comp (the benchmark-shape unit), compile_ms, gate_json, log and
     * gate_ms; a failure sets rec.status ("compile_error", "resource",
     * "incorrect", "crashed", "timeout", "launch_error") and rec.error.
     * Once the stage's gate has run, rec.gate_stage is GATE_STAGE_BENCH
     * (stage 1) or GATE_STAGE_FULL (stage 2). */
    int (*gate)(void *ctx, Child *kid, int stage, EvoErr *err);
    /* Time a gated child with no parent to compare with (the baseline,
     * generation 0): rec.status "ok" with latency_us, p90_us, cv and the
     * launch metrics, or the failure while timed. */
    int (*time)(void *ctx, Child *kid, EvoErr *err);
    /* Interleaved A/B of a gated kid against its (fully gated) parent: the
     * median child/parent ratio and its spread. The child's latency_us,
     * p90_us and cv come from its side of the samples; its launch metrics
     * are filled too and rec.status becomes "ok". A failure of the child
     * while compared (a crash, a timeout, a corrupted resident state) sets
     * its rec.status and rec.error, with *ratio NaN. Returns -1 only when
     * the comparison cannot be made at all (then the run stops: a
     * comparison that cannot be made must not be guessed). */
    int (*compare)(void *ctx, Child *parent, Child *kid, double *ratio, double *spread, EvoErr *err);
    /* Drop what the evaluator keeps for a child (waiting for its
     * compilations still in flight). */
    void (*release)(void *ctx, Child *kid);
    /* How many children the evaluator can judge at once (one per GPU),
     * each on its own slot: gate, time and compare use slot kid->gpu and
     * are called concurrently for children on different slots (a parent
     * may be shared). NULL: 1. */
    int (*slots)(void *ctx);
    /* With several slots: time the (prepared) baseline on every slot and
     * normalise each slot's latencies to slot 0's, so candidates measured
     * on different GPUs rank fairly. NULL: nothing to do. 0 or -1. */
    int (*calibrate)(void *ctx, Child *baseline, EvoErr *err);
    /* The child is decided after stage 1 and will not see stage 2: stop
     * whatever of its stage 2 was queued ahead (compilations no thread has
     * started). May be called on a GPU thread. NULL: nothing to do. */
    void (*drop)(void *ctx, Child *kid);
    /* 1 when gate(kid, stage) would start without waiting for compilation
     * (every unit of the stage built), 0 otherwise; never blocks and is
     * cheap (the steady loop asks it often, under its lock). A GPU thread
     * with other work does that first. NULL: always ready. */
    int (*ready)(void *ctx, Child *kid, int stage);
    /* A GPU waits for the stage's units of kid: move them to the front of
     * the compile queue. Never blocks. NULL: nothing to do. */
    void (*urge)(void *ctx, Child *kid, int stage);
    /* How many compilations the evaluator runs at once (its compile
     * threads, over every host), to size the children kept in flight.
     * NULL: 2 per slot. */
    int (*lanes)(void *ctx);
    /* Call fn(arg), from any thread, whenever a compilation finishes, so a
     * waiting scheduler can ask ready() again; fn NULL stops it. NULL: the
     * scheduler polls. */
    void (*watch)(void *ctx, void (*fn)(void *), void *arg);
    /* 1 when slot can judge kid without compiling it again (MPI: the slot
     * is on the agent that compiled it). NULL: every slot can. */
    int (*home)(void *ctx, const Child *kid, int slot);
    /* Figures for the run's summary: compile threads' busy seconds and
     * units run per priority. NULL: none. */
    void (*pipe_stats)(void *ctx, struct EvalPipeStats *out);
    /* 1 while a compilation of kid is queued or running, so release()
     * would wait for it; never blocks. The steady loop releases such a
     * child later instead of waiting. NULL: never busy. */
    int (*busy)(void *ctx, Child *kid);
} EvaluatorOps;

/* What pipe_stats reports (zero where unknown). */
typedef struct EvalPipeStats {
    int    lanes;               /* compile threads */
    double compile_busy_s;      /* their busy seconds since the evaluator opened */
    long   units_now, units_next, units_spec, units_cancelled;
} EvalPipeStats;

typedef struct EvolveConfig {
    int         generations;      /* after generation 0 */
    int         population;
    int         children;
    uint64_t    seed;
    const char *strategy;         /* evolve | model | random | exhaustive */
    double      time_limit_s;     /* 0: none */
    double      revert_threshold; /* 0.02 */
    int         quiet, json;
    const char *config_json;      /* stored in runs.config_json */
    const char *task_path;
    const char *baseline_source;  /* user kernel for the baseline, or NULL */
    const char *device_name, *device_arch, *device_json, *nvrtc_version, *driver_version;
    volatile int *stop;           /* set asynchronously (SIGINT): finish the current candidate and stop */
    int         stop_after;       /* tests: stop (as if killed) after this many commits; 0: never */
    LlmOp      *llm;              /* the LLM operator (borrowed), or NULL: none */
    double      llm_rate;         /* fraction of each generation's children asked of the LLM */
    int         no_warm_start;    /* generation 0: no seeds from earlier runs of the task on the device */
    int         no_diversity;     /* tests, benchmarks: no niches, adaptive strength or immigrants */
    int         sync;             /* generation-synchronous, seed-deterministic mode (else steady) */
    int         in_flight;        /* steady: children kept in flight; 0: sized from the lanes and slots */
} EvolveConfig;

typedef struct EvolveSummary {
    int64_t run_id;
    int64_t best_id;
    double  best_latency_us, baseline_latency_us;
    int     evaluated, valid, reverted, failed, generations_done;
    int     interrupted;          /* stopped early by *stop or the time limit */
    int     time_limited;         /* of which by the time limit (run status time_limit) */
    int     llm_requests;         /* LLM requests recorded by this call */
    int     llm_children;         /* LLM children evaluated by this call */
    int     llm_accepted;         /* of which accepted */
    double  wall_ms, eval_ms;
    int     space_exhausted;      /* a generation found no unevaluated valid configuration left */
    int     ahead_judged;         /* speculative children judged through stage A ahead of their generation */
    int     ahead_used;           /* of which the generation proposed (their stage A was taken over) */
    int     warm_seeded;          /* generation 0 members seeded from earlier runs */
    char    warm_runs[128];       /* those runs' ids, "3, 5" */
    /* the pipeline (steady mode; the sync mode fills what applies) */
    int     in_flight;            /* the window: children kept in flight */
    int     slots;                /* GPU slots */
    double  slot_busy_s[8];       /* per slot (the first 8): seconds inside gate, time and compare */
    double  slot_idle_s;          /* summed over slots: waiting with nothing ready to judge */
    double  cpu_s;                /* CPU seconds of this process (NVRTC included) during the run */
    double  nvrtc_cpu_s;          /* of which in NVRTC */
    int     nvrtc_units;          /* NVRTC compilations during the run */
    int     cache_hits;           /* compile cache hits during the run */
    EvalPipeStats pipe;           /* the evaluator's figures (pipe_stats), deltas over the run */
} EvolveSummary;

/* Start a new run (resume_run_id == 0) or continue one, and run it to the
 * configured number of generations. Returns 0 (also when stopped early:
 * see summary->interrupted), or -1 with err (store failure, evaluator
 * failure, no valid baseline). */
int evolve_run(Store *st, Task *task, const DeviceInfo *dev, const EvaluatorOps *ev, void *ev_ctx,
               const EvolveConfig *cfg, int64_t resume_run_id, EvolveSummary *summary, EvoErr *err);

/* Evaluate one child completely on slot kid->gpu, with no parent: both
 * stages' gates and its timing (what `check` and `bench` do). Returns 0
 * (the outcome is in kid->rec), EVAL_RETRY (the slot was lost) or -1. */
int evolve_evaluate(const EvaluatorOps *ev, void *ev_ctx, Child *kid, EvoErr *err);

/* A zeroed Child with room for nparams values and "NULL" records, and its
 * release: the evaluator's state (through ev->release, when ev is given)
 * and every string the Child owns. */
void evolve_child_init(Child *c, int nparams);
void evolve_child_clear(Child *c, const EvaluatorOps *ev, void *ev_ctx);

/* The revert rule: 1 when a child whose A/B ratio (child/parent time) is
 * `ratio` must be reverted under `threshold` (e.g. 0.02: more than 2%
 * slower). */
int evolve_should_revert(double ratio, double threshold);

/* Tournament selection: index into a population of n sorted fastest
 * first, the best of k uniform draws. */
int evolve_tournament(Rng *rng, int n, int k);

#endif

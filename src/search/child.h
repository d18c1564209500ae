/*
 * child: one candidate on its way through compile, gate, timing and
 * decision (Child), the evaluator that judges it (EvaluatorOps: the GPU,
 * MPI agents, or a synthetic one in tests), its life cycle, the revert
 * rule and the tournament.
 */
#ifndef EVO_SEARCH_CHILD_H
#define EVO_SEARCH_CHILD_H

#include <stdint.h>

#include "compile/nvrtc.h"
#include "store/store.h"
#include "util.h"

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
    /* Whether slot can judge kid at `stage` (1: A, 2: B): 1 at no extra
     * cost (MPI: the slot is on the agent that compiled it), 2 at little
     * (another agent that shares that agent's compile cache, the units
     * built: a slot with nothing of its own takes it), 0 not. NULL: every
     * slot can (1). */
    int (*home)(void *ctx, const Child *kid, int slot, int stage);
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
    long   taken_over;          /* children judged by another agent than their home (MPI) */
    NvrtcStats agents;          /* the MPI agents' NVRTC figures, summed: in no figure of this process */
} EvalPipeStats;

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

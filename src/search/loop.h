/*
 * loop: the private state of one evolve_run(), which the loop's parts
 * share (types only: each part's functions are in its own header). Not
 * for use outside src/search/. The parts, lowest first:
 *   child.c       a Child's storage, the revert rule, the tournament;
 *   population.c  the population, its niches, stagnation;
 *   progress.c    status lines, events, the time limit, closing a
 *                 generation;
 *   judge.c       one child through stage A, stage B and its commit, and
 *                 the parents kept prepared for its A/B;
 *   moves.c       one proposal: operators, widening, repair, dedup;
 *   warm.c        generation 0 seeded from earlier runs;
 *   model.c       the model strategy's ranked proposals;
 *   propose.c     a generation's proposals, niche founders;
 *   stages.c      a synchronous generation through both stages, and the
 *                 speculation on the next;
 *   llmgen.c      the LLM's children;
 *   steady.c      the steady-state mode (the default);
 *   evolve.c      the run (evolve.h) and, in the synchronous mode, its
 *                 generations.
 */
#ifndef EVO_SEARCH_LOOP_H
#define EVO_SEARCH_LOOP_H

#include "search/child.h"
#include "search/run_config.h"
#include "store/store.h"
#include "task/task.h"
#include "task/task_space.h"

struct Job;
struct SpaceIndex;

#define PARENT_CACHE 16   /* at least this many parents kept compiled and loaded for their children's A/B */

/* The run's survivors, fastest first, and their params (population.h). */
typedef struct LoopSurvivors {
    CandidateRecord *rec;
    int64_t         *vals;      /* n x np */
    char            *ok;        /* parsed */
    int              n;
    int64_t          last_id;   /* the largest id read */
} LoopSurvivors;

typedef struct Loop {
    Store              *st;
    Task               *task;
    const DeviceInfo   *dev;
    const EvaluatorOps *ev;
    void               *ev_ctx;
    const EvolveConfig *cfg;
    RunRecord           run;
    int                 np;            /* task_nparams */
    Child               baseline;      /* prepared baseline (A/B reference for random children) */
    double              base_latency;
    EvolveSummary      *sum;
    double              t0;
    int                 commits;
    int                 tty;
    /* the exhaustive strategy's cursor over the space */
    int64_t             exh_index;
    /* the valid configurations, for random draws where few are valid:
     * space_state 0 not tried yet, 1 enumerated, -1 not enumerable */
    TaskSpace           space;
    int                 space_state;
    struct SpaceIndex  *sidx;          /* lookups over space (propose.c), once enumerated */
    struct SpaceJob    *space_job;     /* the enumeration started ahead (loop_space_ahead), or NULL */
    int                 checks;        /* constraint checks so far (propose.c) */
    char               *base_kernel;   /* the baseline's raw kernel when not the template, else NULL */
    /* parents kept prepared (compiled, loaded), least recently used out */
    struct ParentCache *pc;
    int                 parent_cap;    /* unreferenced parents kept: max(PARENT_CACHE, population + 1) */
    /* steady mode: stagnation counts commits, not generations */
    int                 steady;
    int                 resumed;       /* evolve_run continues a run */
    int64_t             best_commit;   /* L->commits when the best survivor last improved */
    double              best_latency;  /* that survivor's latency */
    /* the next generation's likely children, compiling ahead (speculate());
     * those whose parent is committed are also judged ahead (stage A) while
     * the GPU would wait for stage B's compilations: spec_jobs[i] */
    Child              *spec;
    int                 nspec;
    int64_t             spec_gen;      /* the generation they were proposed for */
    /* while speculate() proposes: the children still in stage B, as the
     * survivors (and evaluated keys) they will be once committed */
    const CandidateRecord *pending;
    int                 npending;      /* [0, npending_surv) will survive (accepted, or no parent) */
    int                 npending_surv;
    struct Job         *spec_jobs;
    LoopSurvivors       surv;          /* the survivors in memory (population.c, loop_survivors) */
    int64_t             nb_tried;      /* the best whose every neighbour was tried (propose.c), or 0 */
} Loop;

typedef struct ParentCache ParentCache;

#endif

/*
 * loop: the private state of one evolve_run() and the functions its parts
 * share. evolve.c runs generations and reports progress; stages.c takes a
 * batch of children through stage A and stage B (the pipeline), keeps
 * parents prepared and speculates on the next generation; propose.c makes
 * populations and proposals; llmgen.c adds the LLM's children. Not for use
 * outside src/search/.
 */
#ifndef EVO_SEARCH_LOOP_H
#define EVO_SEARCH_LOOP_H

#include "evolve.h"
#include "llmop.h"

#define PARENT_CACHE 16   /* at least this many parents kept compiled and loaded for their children's A/B */

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
    char               *base_kernel;   /* the baseline's raw kernel when not the template, else NULL */
    /* parents kept prepared (compiled, loaded), least recently used out */
    Child              *parents;       /* nparents entries: max(PARENT_CACHE, population + 1), so a */
    uint64_t           *parent_used;   /* batch's parents (population members) all fit */
    int                 nparents;
    uint64_t            parent_tick;
    /* the next generation's likely children, compiling ahead (speculate()) */
    Child              *spec;
    int                 nspec;
} Loop;

/* evolve.c */
void loop_child_init(Loop *L, Child *c);
void loop_child_free(Loop *L, Child *c);
/* A status line on a terminal (replaced by the next), nothing otherwise. */
void loop_live_line(Loop *L, const char *fmt, ...) EVO_PRINTF(2, 3);
void loop_live_clear(Loop *L);
/* 1 (and the summary marked interrupted) when the time limit or *stop is
 * reached. */
int loop_time_limit_hit(Loop *L);

/* stages.c */
/* Rebuild a Child from a committed candidate (a parent), its
 * benchmark-shape unit queued for compilation. 0 or -1 (err). */
int loop_child_from_record(Loop *L, const CandidateRecord *r, Child *c, EvoErr *err);
/* Evaluate and commit each child of kids[0..n) not marked done (done may
 * be NULL), linking it to req_ids[i] when given; ahead: speculate on the
 * next generation during stage B. 0 (also when stopped early) or -1. */
int loop_decide_all(Loop *L, Child *kids, const int *done, int n, GenerationRecord *g, int64_t *req_ids,
                    int ahead, EvoErr *err);
/* Drop the speculative children, waiting for their compilations. */
void loop_spec_free(Loop *L);

/* propose.c */
/* The P fastest survivors of generations before gen, fastest first. */
int loop_load_population(Loop *L, int64_t gen, CandidateRecord **pop, int *n, EvoErr *err);
/* 0 new, 1 committed in generation gen (resume), 2 in an earlier one; -1. */
int loop_key_state(Loop *L, const char *key, int64_t gen, EvoErr *err);
/* 1 when key is the params key of one of kids[0..n). */
int loop_in_batch(Child *kids, int n, const char *key);
/* Propose up to want children of generation gen into kids[] (done[i] = 1:
 * already committed). Returns the count or -1. */
int loop_propose(Loop *L, int64_t gen, CandidateRecord *pop, int npop, Child *kids, int want, int *done,
                 EvoErr *err);

/* llmgen.c */
/* LLM slots of generation gen, or -1. */
int loop_llm_slots(Loop *L, int64_t gen, int npop, EvoErr *err);
/* Queue the generation's LLM requests. 0 or -1. */
int loop_llm_submit_generation(Loop *L, int64_t gen, CandidateRecord *pop, int npop, int slots, EvoErr *err);
/* Wait for the generation's answers and evaluate their children. 0 or -1. */
int loop_llm_collect_generation(Loop *L, int64_t gen, GenerationRecord *g, EvoErr *err);

#endif

/*
 * loop: the private state of one evolve_run() and the functions its parts
 * share. evolve.c starts the run and, in the generation-synchronous mode,
 * runs its generations; steady.c is the steady-state mode (the default):
 * children flow through compilation and the GPUs with no barrier between
 * generations; child.c takes one child through its stages and commit and
 * keeps parents prepared; stages.c takes a synchronous generation's batch
 * through stage A and stage B and speculates on the next; propose.c makes
 * populations and proposals; llmgen.c adds the LLM's children. Not for
 * use outside src/search/.
 */
#ifndef EVO_SEARCH_LOOP_H
#define EVO_SEARCH_LOOP_H

#include "llm/llmop.h"
#include "search/evolve.h"
#include "task/task_space.h"

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
    /* the valid configurations, for random draws where few are valid:
     * space_state 0 not tried yet, 1 enumerated, -1 not enumerable */
    TaskSpace           space;
    int                 space_state;
    struct SpaceIndex  *sidx;          /* lookups over space (propose.c), once enumerated */
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
} Loop;

typedef struct ParentCache ParentCache;

/* child.c */
void loop_child_init(Loop *L, Child *c);
void loop_child_free(Loop *L, Child *c);
/* Rebuild a Child from a committed candidate (a parent), its
 * benchmark-shape unit queued for compilation. 0 or -1 (err). */
int loop_child_from_record(Loop *L, const CandidateRecord *r, Child *c, EvoErr *err);
/* The prepared Child that candidate parent_id is, as the A/B reference of
 * a child: NULL for no parent (0), the baseline itself, or a candidate of
 * the parent cache (prepared into it on a miss) with one more reference;
 * give it back with loop_parent_put. 0 or -1 (err). Loop thread only. */
int loop_parent_get(Loop *L, int64_t parent_id, Child **parent, EvoErr *err);
void loop_parent_put(Loop *L, Child *parent);
/* c was just committed as a survivor: the cache takes it over (its
 * compiled units stay loaded for its children's A/Bs) and *c is zeroed;
 * nothing happens when it is there already or was never prepared. */
void loop_parent_offer(Loop *L, Child *c);
void loop_parents_free(Loop *L);
/* Does the child go through the full gate whatever its A/B says? The
 * baseline, generation 0 and the children of the random and exhaustive
 * strategies (ground truth for comparing strategies) do; the random
 * immigrants of the other strategies do not (reverted, they are decided
 * at stage A like any child: never a parent, never a survivor). */
int loop_needs_full_gate(const Loop *L, const Child *c);
/* Stage A of a submitted child on slot c->gpu: the gate on the benchmark
 * shape, then the A/B against its parent. Sets *next = 1 when the child
 * goes on to stage B (its other units are then queued first), 0 when it
 * is decided (failed, or reverted and not needing the full gate). Returns
 * 0, EVAL_RETRY (its slot was lost: judge it again elsewhere) or -1. Runs
 * on a GPU thread: it touches nothing of the loop but the child. */
int loop_stage_a(Loop *L, Child *c, Child *parent, int *next, EvoErr *err);
/* Stage B of a child that passed stage A, on slot c->gpu: the gate on
 * every other shape, and the timing of a child with no parent. Sets its
 * decision. Returns 0, EVAL_RETRY (the child is as it was) or -1. Runs on
 * a GPU thread. */
int loop_stage_b(Loop *L, Child *c, EvoErr *err);
/* Decide and commit a child whose stages are over, counted in g, and link
 * it to its LLM request req_id (0: none). Loop thread only. 0 or -1. */
int loop_commit(Loop *L, Child *c, int64_t req_id, GenerationRecord *g, EvoErr *err);

/* evolve.c */
/* A status line on a terminal (replaced by the next), nothing otherwise. */
void loop_live_line(Loop *L, const char *fmt, ...) EVO_PRINTF(2, 3);
void loop_live_clear(Loop *L);
/* 1 (and the summary marked interrupted) when the time limit or *stop is
 * reached. */
int loop_time_limit_hit(Loop *L);
/* Close generation g (its wall_ms set): its best from the store, its row
 * (replaced if written before), the run's generations_done raised to done
 * (when higher), and its progress line unless total_gens < 0. 0 or -1. */
int loop_generation_close(Loop *L, GenerationRecord *g, int64_t done, int total_gens, EvoErr *err);
/* The events of a generation's proposals: the warm start (generation 0)
 * and the valid space running out (once a run). */
void loop_report_proposals(Loop *L, int64_t gen, int n, int want, int exhausted);
/* A line about the run (not a generation): text, or with --json the
 * object {"run", "event", "count", "runs"?}. Nothing with --quiet. */
void loop_report_event(Loop *L, const char *event, int count, const char *runs, const char *fmt, ...)
    EVO_PRINTF(5, 6);

/* stages.c */
/* Evaluate and commit each child of kids[0..n) not marked done (done may
 * be NULL), linking it to req_ids[i] when given; ahead: speculate on the
 * next generation during stage B. 0 (also when stopped early) or -1. */
int loop_decide_all(Loop *L, Child *kids, const int *done, int n, GenerationRecord *g, int64_t *req_ids,
                    int ahead, EvoErr *err);
/* Drop the speculative children, waiting for their compilations. */
void loop_spec_free(Loop *L);
/* Take over into kids[0..n) (not marked done) each speculative child that
 * is the same proposal (params, operator, parents) and was judged ahead
 * through stage A: kids[i] becomes it and pre[i] is set to 1 (2 when it
 * goes on to stage B); the other pre[i] are left as they are (the caller
 * zeroes them). Then drops the rest (loop_spec_free). Returns how many. */
int loop_spec_adopt(Loop *L, Child *kids, const int *done, int n, int *pre);

/* propose.c */
/* The population chosen from all[0..m) (survivors, fastest first; the
 * array and its records are taken over): the P fastest and the niches. */
int loop_population_pick(Loop *L, CandidateRecord *all, int m, CandidateRecord **pop, int *n);
/* The P fastest survivors of generations before gen, fastest first, with
 * the best survivor of each unrepresented value of a structural knob
 * (niches). */
int loop_load_population(Loop *L, int64_t gen, CandidateRecord **pop, int *n, EvoErr *err);
/* Generations since the population's best was found (steady mode: its
 * commits since then, in generations of L->cfg->children). */
int loop_stagnation(Loop *L, int64_t gen, const CandidateRecord *pop, int npop);

/* What the moves of one generation work from. */
typedef struct LoopMoves {
    const CandidateRecord *pop;
    int                    npop;
    int                    strength;    /* params a mutation moves (adaptive: grows with stagnation) */
    int                    stagnation;  /* loop_stagnation() */
    int                    immigrant;   /* this slot takes a random valid immigrant */
    int                    uniform;     /* this slot's parent is drawn uniformly, not by tournament */
    int64_t               *p1, *p2;     /* scratch: the parents' values */
} LoopMoves;
void loop_moves_init(Loop *L, int64_t gen, const CandidateRecord *pop, int npop, LoopMoves *mv);
void loop_moves_free(LoopMoves *mv);
/* One proposal into c (vals, op, parents) for attempt `attempt` of a slot:
 * the later the attempt, the wider the move. *kparent: the index in
 * mv->pop of the primary parent, or -1 (random: the baseline's kernel).
 * 0, 1 (the operator could not move: try again) or -1 (err). */
int loop_propose_one(Loop *L, int64_t gen, Rng *rng, const LoopMoves *mv, int attempt, Child *c, int *kparent,
                     EvoErr *err);
/* Give c its kernel and key and check it: 1 when valid, new to the run
 * (or committed in generation gen: *state 1) and not in kids[0..n); 0 when
 * not; -1 on an error. */
int loop_place(Loop *L, int64_t gen, Child *kids, int n, Child *c, const CandidateRecord *kparent, int *state,
               EvoErr *err);
/* An unevaluated valid configuration found by a scan of the space from a
 * random point (op random, parent the baseline): 1, 0 when the valid space
 * is exhausted, 2 when a huge space showed none in the part scanned, -1. */
int loop_fill_unseen(Loop *L, int64_t gen, Rng *rng, Child *kids, int n, Child *c, int *state, EvoErr *err);
/* 0 new, 1 committed in generation gen (resume), 2 in an earlier one; -1. */
int loop_key_state(Loop *L, const char *key, int64_t gen, EvoErr *err);
/* 1 when key is the params key of one of kids[0..n). */
int loop_in_batch(Child *kids, int n, const char *key);
/* Propose up to want children of generation gen into kids[] (done[i] = 1:
 * already committed); *exhausted (may be NULL) = 1 when fewer because the
 * valid space is exhausted. Returns the count or -1. */
int loop_propose(Loop *L, int64_t gen, CandidateRecord *pop, int npop, Child *kids, int want, int *done,
                 int *exhausted, EvoErr *err);

/* warm.c */
/* Generation 0's seeds from earlier runs of the task on the device, into
 * kids[0..) (at most half of want), with done[] as loop_propose; the
 * summary's warm_seeded and warm_runs say how many and from where. The
 * count or -1. */
int loop_warm_propose(Loop *L, Child *kids, int want, int *done, EvoErr *err);

/* model.c */
/* The model strategy's proposals (same contract as loop_propose, with
 * kids[0..nprior) already proposed): many candidate moves ranked by the
 * surrogate fitted on the run so far. */
int loop_model_propose(Loop *L, int64_t gen, CandidateRecord *pop, int npop, Child *kids, int nprior, int want,
                       int *done, int *exhausted, EvoErr *err);

/* steady.c */
/* The steady-state loop after the baseline: children proposed from the
 * population as it stands, kept in flight up to the window, judged on
 * whichever GPU is free, committed as they are decided; generation g is
 * the g-th wave of proposals. 0 (also when stopped) or -1. */
int loop_steady(Loop *L, EvoErr *err);

/* llmgen.c */
/* LLM slots of generation gen, or -1. */
int loop_llm_slots(Loop *L, int64_t gen, int npop, EvoErr *err);
/* Queue the generation's LLM requests. 0 or -1. */
int loop_llm_submit_generation(Loop *L, int64_t gen, CandidateRecord *pop, int npop, int slots, EvoErr *err);
/* Wait for the generation's answers and evaluate their children. 0 or -1. */
int loop_llm_collect_generation(Loop *L, int64_t gen, GenerationRecord *g, EvoErr *err);
/* Record answers ans[0..n) in llm_requests and turn the usable ones into
 * children (the LLM's kernel rendered with its parent's params) in
 * kids[], with their requests' ids in req_ids[] (room for n each); frees
 * the answers' results. Returns how many children, or -1. */
int loop_llm_children(Loop *L, int64_t gen, LlmOpAnswer *ans, int n, Child *kids, int64_t *req_ids, EvoErr *err);

#endif

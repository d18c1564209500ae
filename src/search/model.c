/*
 * model: the model-guided strategy (`--strategy model`, issue 12). Each
 * generation after generation 0:
 *   1. the surrogate (surrogate.h: a random forest on log latency and a
 *      failure classifier) is fitted on every candidate this run committed
 *      in earlier generations: the latency of the ok ones, and every
 *      failure as a failure;
 *   2. a pool of POOL_PER_CHILD x children distinct, valid, unevaluated
 *      configurations is drawn: the evolve strategy's moves from the
 *      population (the same widening attempts) and a quarter of random
 *      valid configurations;
 *   3. surrogate_rank picks the children: expected improvement times the
 *      chance of not failing, a quarter of them (EXPLORE) drawn at random
 *      from the rest of the pool instead (epsilon-greedy: on a synthetic
 *      attention landscape replayed with bench/search_replay this came
 *      within 2% of the best in a median 47 evaluations of 1,022, against
 *      80 when the exploration picks were the most uncertain ones).
 * Each child keeps a parent for its A/B: the population member its move
 * came from, or, for a random draw, the nearest member (fewest params
 * that differ; ties: the faster). Everything is drawn from an RNG seeded
 * by (seed, generation) and fitted with a seed of the same, from the
 * committed state only, so resume proposes the same children.
 */
#include "search/model.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "search/judge.h"
#include "search/moves.h"
#include "search/surrogate.h"

#define POOL_PER_CHILD 24
#define EXPLORE        0.25
#define MODEL_ATTEMPTS 8      /* widening attempts per pool draw */
#define RANDOM_DRAWS   64     /* random draws per random pool entry */

/* Fit a surrogate on the committed candidates of generations before gen.
 * Returns the model (NULL with *nrows 0 when nothing usable) or NULL with
 * err set and *nrows -1. */
static Surrogate *fit_run(Loop *L, int64_t gen, int *nrows, EvoErr *err)
{
    Surrogate *s = NULL;
    CandidateRecord *all = NULL;
    int na = 0;
    *nrows = -1;
    if (store_candidate_list(L->st, L->run.id, STORE_ALL_BY_ID, 0, &all, &na, err) ||
        surrogate_open_task(&s, L->task, NULL, err)) {
        store_candidates_free(all, na);
        return NULL;
    }
    int64_t *v = xcalloc((size_t)L->np + 1, sizeof(int64_t));
    int rows = 0;
    EvoErr e;
    for (int i = 0; i < na; i++) {
        if (all[i].generation >= gen || !all[i].status || task_params_parse(L->task, all[i].params_json, v, &e))
            continue;
        int st = surrogate_status_from_name(all[i].status);
        if (st < 0)
            st = SURR_CRASHED;
        if (st == SURR_OK && !(all[i].latency_us > 0))
            continue;
        if (surrogate_add(s, v, all[i].latency_us, (SurrogateStatus)st, &e) == 0)
            rows++;
    }
    free(v);
    store_candidates_free(all, na);
    if (rows == 0 || surrogate_fit(s, rng_mix(L->cfg->seed, 0x5eed0000u + (uint64_t)gen), err)) {
        surrogate_close(&s);
        *nrows = rows == 0 ? 0 : -1;
        return NULL;
    }
    *nrows = rows;
    return s;
}

/* The population member nearest to vals: fewest differing params, then
 * the faster (lower index). */
static int nearest(Loop *L, const CandidateRecord *pop, int npop, const int64_t *vals, int64_t *scratch)
{
    int best = 0, bestd = L->np + 1;
    EvoErr e;
    for (int i = 0; i < npop; i++) {
        if (task_params_parse(L->task, pop[i].params_json, scratch, &e))
            continue;
        int d = 0;
        for (int k = 0; k < L->np; k++)
            d += scratch[k] != vals[k];
        if (d < bestd) {
            bestd = d;
            best = i;
        }
    }
    return best;
}

int loop_model_propose(Loop *L, int64_t gen, CandidateRecord *pop, int npop, Child *kids, int nprior, int want,
                       int *done, int *exhausted, EvoErr *err)
{
    Rng rng;
    rng_seed(&rng, rng_mix(L->cfg->seed, (uint64_t)gen));
    int nrows = 0, rc = 0, npool = 0, n = nprior;
    want -= nprior;
    Surrogate *s = fit_run(L, gen, &nrows, err);
    if (!s && nrows < 0) {
        for (int i = 0; i < nprior; i++)
            loop_child_free(L, &kids[i]);
        return -1;
    }
    int cap = want * POOL_PER_CHILD;
    Child *pool = xcalloc((size_t)cap + 1, sizeof(Child));
    int *pstate = xcalloc((size_t)cap + 1, sizeof(int));
    int *picks = xcalloc((size_t)cap + 1, sizeof(int));
    int64_t *cand = NULL;
    LoopMoves mv;
    loop_moves_init(L, gen, pop, npop, &mv);
    /* the pool: moves from the population, a quarter random valid draws */
    for (int k = 0; k < cap && rc == 0; k++) {
        mv.immigrant = k % 4 == 3;
        mv.uniform = !L->cfg->no_diversity && k % 4 == 1;
        int placed = 0;
        /* random draws are cheap and most fail the constraints: many of them;
         * moves widen over MODEL_ATTEMPTS steps of the evolve strategy's attempts */
        int step = mv.immigrant ? 1 : 8, last = mv.immigrant ? RANDOM_DRAWS : MODEL_ATTEMPTS * 8;
        for (int attempt = 0; attempt < last && !placed && rc == 0; attempt += step) {
            Child c;
            loop_child_init(L, &c);
            int kp = -1, state = 0;
            int got = loop_propose_one(L, gen, &rng, &mv, attempt, &c, &kp, err);
            if (got == 0) {
                if (kp < 0)
                    kp = nearest(L, pop, npop, c.vals, mv.p2);
                c.parent_id = pop[kp].id;
                c.parent2_id = 0;
                got = loop_place(L, gen, pool, npool, &c, &pop[kp], &state, err);
                if (got > 0 && loop_in_batch(kids, nprior, c.params_key))
                    got = 0;
            } else if (got > 0) {
                got = 0;
            }
            if (got < 0)
                rc = -1;
            if (got > 0) {
                c.op = "model";
                pstate[npool] = state;
                pool[npool++] = c;
                placed = 1;
            } else {
                loop_child_free(L, &c);
            }
        }
        if (!placed && rc == 0 && npool >= want)
            break;   /* the neighbourhood is thin: rank what there is */
    }
    /* too few: fill from a scan of the space (or learn that it is exhausted) */
    while (rc == 0 && npool < want) {
        Child c;
        loop_child_init(L, &c);
        int state = 0, got = loop_fill_unseen(L, gen, &rng, pool, npool, &c, &state, err);
        if (got != 1) {
            loop_child_free(L, &c);
            if (got < 0)
                rc = -1;
            else if (got == 0 && exhausted)
                *exhausted = 1;
            break;
        }
        if (loop_in_batch(kids, nprior, c.params_key)) {   /* the only one left is the founder */
            loop_child_free(L, &c);
            break;
        }
        int kp = nearest(L, pop, npop, c.vals, mv.p2);
        c.parent_id = pop[kp].id;
        c.op = "model";
        pstate[npool] = state;
        pool[npool++] = c;
    }
    int npick = 0;
    if (rc == 0 && npool > 0) {
        cand = xcalloc((size_t)npool * (size_t)L->np + 1, sizeof(int64_t));
        for (int i = 0; i < npool; i++)
            memcpy(cand + (size_t)i * (size_t)L->np, pool[i].vals, (size_t)L->np * sizeof(int64_t));
        if (s) {
            SurrogatePick pk = {.xi = 0.01, .epsilon = EXPLORE, .explore = SURR_EXPLORE_RANDOM,
                                .seed = rng_mix(L->cfg->seed, (uint64_t)gen)};
            npick = surrogate_rank(s, cand, npool, surrogate_best_log(s), &pk, want, picks, err);
            if (npick < 0)
                rc = -1;
        } else {   /* nothing measured yet: the pool in its (random) order */
            for (npick = 0; npick < want && npick < npool; npick++)
                picks[npick] = npick;
        }
    }
    for (int k = 0; k < npick && rc == 0; k++) {
        int i = picks[k];
        done[n] = pstate[i] == 1;
        kids[n++] = pool[i];
        memset(&pool[i], 0, sizeof(pool[i]));
    }
    for (int i = 0; i < npool; i++)
        if (pool[i].vals)
            loop_child_free(L, &pool[i]);
    if (rc < 0) {
        for (int i = 0; i < n; i++)
            loop_child_free(L, &kids[i]);
        n = 0;
    }
    loop_moves_free(&mv);
    surrogate_close(&s);
    free(pool);
    free(pstate);
    free(picks);
    free(cand);
    return rc < 0 ? -1 : n;
}

/*
 * propose: populations, dedup against the store, kernel inheritance and
 * the proposals of each strategy. See loop.h and evolve.h.
 */
#include "loop.h"

#include <stdlib.h>
#include <string.h>

#include "ops.h"

#define MAX_ATTEMPTS 64   /* proposals tried per child slot before giving up */
#define RANDOM_DRAWS 20000 /* random draws per random proposal until one is valid */

/* ---- populations and proposals --------------------------------------- */

/* The population at the start of generation gen: the P fastest survivors
 * of earlier generations, fastest first. */
int loop_load_population(Loop *L, int64_t gen, CandidateRecord **pop, int *n, EvoErr *err)
{
    CandidateRecord *all = NULL;
    int na = 0;
    if (store_candidate_list(L->st, L->run.id, STORE_SURVIVORS_BY_LATENCY, 0, &all, &na, err))
        return -1;
    *pop = xcalloc((size_t)L->cfg->population + 1, sizeof(**pop));
    *n = 0;
    for (int i = 0; i < na; i++) {
        if (all[i].generation < gen && *n < L->cfg->population) {
            (*pop)[(*n)++] = all[i];
            memset(&all[i], 0, sizeof(all[i]));
        }
    }
    store_candidates_free(all, na);
    return 0;
}

/* Status of a params key in this run: 0 new, 1 done in this generation
 * (resume), 2 done in an earlier generation (duplicate). */
int loop_key_state(Loop *L, const char *key, int64_t gen, EvoErr *err)
{
    int64_t id = store_candidate_find(L->st, L->run.id, key, err);
    if (id <= 0)
        return id < 0 ? -1 : 0;
    CandidateRecord r;
    if (store_candidate_get(L->st, id, &r, err) != 1)
        return -1;
    int state = r.generation == gen ? 1 : 2;
    candidate_record_free(&r);
    return state;
}

int loop_in_batch(Child *kids, int n, const char *key)
{
    for (int i = 0; i < n; i++)
        if (strcmp(kids[i].params_key, key) == 0)
            return 1;
    return 0;
}

/* Is vals valid for the task on this device? 1 yes, 0 no, -1 error. */
static int valid_config(Loop *L, const int64_t *vals, char **why, EvoErr *err)
{
    return task_check(L->task, vals, L->dev, why, err);
}

/* Advance the exhaustive cursor to the next valid configuration. Returns 1
 * with vals filled, 0 when the space is exhausted. */
static int exhaustive_next(Loop *L, int64_t *vals, EvoErr *err)
{
    double total = task_space_size(L->task);
    while ((double)L->exh_index < total) {
        int64_t idx = L->exh_index++;
        for (int i = L->np - 1; i >= 0; i--) {
            int nv = task_param_nvalues(L->task, i);
            vals[i] = task_param_value(L->task, i, (int)(idx % nv));
            idx /= nv;
        }
        int v = valid_config(L, vals, NULL, err);
        if (v < 0)
            return -1;
        if (v)
            return 1;
    }
    return 0;
}

/* Give child c the kernel of its primary parent (NULL: the baseline's)
 * and its params key. Returns 0 or -1 (err: the parent's kernel is gone). */
static int inherit_kernel(Loop *L, Child *c, const CandidateRecord *parent, EvoErr *err)
{
    char *text = NULL;
    if (parent && strchr(parent->params_key, '@')) {
        text = store_kernel_get(L->st, parent->params_key, err);
        if (!text)
            return err_prefix(err, "candidate %lld", (long long)parent->id);
    } else if (!parent && L->base_kernel) {
        text = xstrdup(L->base_kernel);
    }
    free(c->own_source);
    c->own_source = text;
    c->custom_source = text;
    free(c->params_key);
    if (text) {
        char hex[65];
        sha256_hex(text, strlen(text), hex);
        c->params_key = ops_params_key(L->task, c->vals, hex);
    } else {
        c->params_key = ops_params_key(L->task, c->vals, NULL);
    }
    return 0;
}

/* Propose up to `want` children for generation gen into kids[]. Children
 * already committed in this generation (a resumed run) are returned with
 * done = 1 and not evaluated again. Returns the count, or -1. */
int loop_propose(Loop *L, int64_t gen, CandidateRecord *pop, int npop, Child *kids, int want, int *done,
                   EvoErr *err)
{
    Rng rng;
    rng_seed(&rng, rng_mix(L->cfg->seed, (uint64_t)gen));
    int n = 0;
    int64_t *p1 = xcalloc((size_t)L->np + 1, sizeof(int64_t));
    int64_t *p2 = xcalloc((size_t)L->np + 1, sizeof(int64_t));
    int rc = 0;
    const char *strategy = L->cfg->strategy;
    for (int slot = 0; slot < want && rc == 0; slot++) {
        int placed = 0;
        for (int attempt = 0; attempt < MAX_ATTEMPTS && !placed; attempt++) {
            Child c;
            loop_child_init(L, &c);
            const CandidateRecord *kparent = NULL;   /* whose kernel the child renders (NULL: baseline's) */
            if (strcmp(strategy, "exhaustive") == 0) {
                int got = exhaustive_next(L, c.vals, err);
                if (got <= 0) {
                    loop_child_free(L, &c);
                    rc = got;
                    goto out;
                }
                c.op = "exhaustive";
                c.parent_id = L->baseline.rec.id;
            } else if (strcmp(strategy, "random") == 0 || gen == 0 || npop == 0) {
                /* a valid draw first: where few configurations are valid,
                 * MAX_ATTEMPTS whole proposals would rarely place one */
                ops_random(L->task, &rng, c.vals);
                for (int r = 0; r < RANDOM_DRAWS && valid_config(L, c.vals, NULL, err) == 0; r++)
                    ops_random(L->task, &rng, c.vals);
                c.op = "random";
                c.parent_id = gen == 0 ? 0 : L->baseline.rec.id;
            } else {
                const Operator *op = ops_pick(&rng, npop > 1);
                int a = evolve_tournament(&rng, npop, 3), b = a;
                if (op->nparents == 2)
                    while (b == a)
                        b = evolve_tournament(&rng, npop, 3);
                if (task_params_parse(L->task, pop[a].params_json, p1, err) ||
                    task_params_parse(L->task, pop[b].params_json, p2, err)) {
                    loop_child_free(L, &c);
                    rc = -1;
                    goto out;
                }
                if (op->propose(L->task, &rng, p1, p2, c.vals)) {
                    loop_child_free(L, &c);
                    continue;
                }
                c.op = op->name;
                /* The primary parent is the faster one: the lineage goes on from it. */
                c.parent_id = pop[a < b ? a : b].id;
                c.parent2_id = op->nparents == 2 ? pop[a < b ? b : a].id : 0;
                kparent = &pop[a < b ? a : b];
            }
            if (inherit_kernel(L, &c, kparent, err)) {
                loop_child_free(L, &c);
                rc = -1;
                goto out;
            }
            int v = valid_config(L, c.vals, NULL, err);
            int state = v > 0 ? loop_key_state(L, c.params_key, gen, err) : 0;
            if (v < 0 || state < 0) {
                loop_child_free(L, &c);
                rc = -1;
                goto out;
            }
            if (!v || state == 2 || loop_in_batch(kids, n, c.params_key)) {
                loop_child_free(L, &c);   /* invalid or already evaluated: refill */
                continue;
            }
            done[n] = state == 1;
            kids[n++] = c;
            placed = 1;
        }
    }
out:
    free(p1);
    free(p2);
    return rc < 0 ? -1 : n;
}


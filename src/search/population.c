/*
 * population: the population a generation works from (the P fastest
 * survivors and the niches of the structural knobs) and its stagnation.
 * See population.h.
 */
#include "search/population.h"

#include <stdlib.h>
#include <string.h>

/* The structural knobs: the movable params with the fewest values (a task
 * names none, so they are found generically: on/off switches such as
 * WGMMA or CLUSTER). Fills knobs[] (room for np) and returns how many. */
int loop_niche_knobs(const Task *t, int *knobs)
{
    int np = task_nparams(t), fewest = 0, n = 0;
    for (int i = 0; i < np; i++) {
        int nv = task_param_nvalues(t, i);
        if (nv > 1 && (fewest == 0 || nv < fewest))
            fewest = nv;
    }
    for (int i = 0; i < np && fewest; i++)
        if (task_param_nvalues(t, i) == fewest)
            knobs[n++] = i;
    return n;
}

/* The params of recs[0..n), parsed once: n x L->np values, and (*ok)[j]
 * = 1 where recs[j]'s parsed (the caller frees both). */
int64_t *loop_parse_all(Loop *L, const CandidateRecord *recs, int n, char **ok)
{
    int64_t *v = xcalloc((size_t)n * (size_t)L->np + 1, sizeof(int64_t));
    *ok = xcalloc((size_t)n + 1, 1);
    EvoErr e;
    for (int j = 0; j < n; j++)
        (*ok)[j] = task_params_parse(L->task, recs[j].params_json, v + (size_t)j * (size_t)L->np, &e) == 0;
    return v;
}

/* Niches: a value of a structural knob that no member of the plain top-P
 * holds, but some survivor does, gets its best survivor into the
 * population in place of the slowest members (at most half of it; the
 * best niches first). The fastest survivor always stays: elitism holds.
 * v and ok (loop_parse_all) hold the params of the survivors fastest
 * first, na of them; take[] marks the chosen. */
static void add_niches(Loop *L, const int64_t *v, const char *ok, int na, char *take, int *n)
{
    int np = L->np, *knobs = xcalloc((size_t)np + 1, sizeof(int)), nk = loop_niche_knobs(L->task, knobs);
    int *rep = xcalloc((size_t)na + 1, sizeof(int)), nrep = 0;
    for (int k = 0; k < nk; k++) {
        int i = knobs[k];
        for (int vi = 0; vi < task_param_nvalues(L->task, i); vi++) {
            int64_t val = task_param_value(L->task, i, vi), held = 0, best = -1;
            for (int j = 0; j < na && !held; j++) {
                if (!ok[j] || v[(size_t)j * (size_t)np + (size_t)i] != val)
                    continue;
                if (take[j])
                    held = 1;
                else if (best < 0)
                    best = j;
            }
            if (!held && best >= 0) {
                int dup = 0;
                for (int r = 0; r < nrep; r++)
                    dup |= rep[r] == best;
                if (!dup)
                    rep[nrep++] = (int)best;
            }
        }
    }
    /* rep[] indexes all[], which is sorted fastest first: the best niches first */
    for (int a = 1; a < nrep; a++)
        for (int b = a; b > 0 && rep[b] < rep[b - 1]; b--) {
            int x = rep[b];
            rep[b] = rep[b - 1];
            rep[b - 1] = x;
        }
    int room = L->cfg->population / 2;
    for (int r = 0; r < nrep && r < room; r++) {
        if (*n >= L->cfg->population) {
            int worst = -1;
            for (int j = na - 1; j > 0 && worst < 0; j--)
                if (take[j] == 1)
                    worst = j;
            if (worst < 0)
                break;
            take[worst] = 0;
            (*n)--;
        }
        take[rep[r]] = 2;   /* a niche's member: never dropped for another niche */
        (*n)++;
    }
    free(knobs);
    free(rep);
}

/* Mark in take[] (m, zeroed) the population among m survivors, fastest
 * first, whose params are v and ok: the P fastest and the niches. *n: how
 * many. */
static void pick_take(Loop *L, const int64_t *v, const char *ok, int m, char *take, int *n)
{
    *n = 0;
    for (int i = 0; i < m && *n < L->cfg->population; i++, (*n)++)
        take[i] = 1;
    if (!L->cfg->no_diversity &&
        (strcmp(L->cfg->strategy, "evolve") == 0 || strcmp(L->cfg->strategy, "model") == 0))
        add_niches(L, v, ok, m, take, n);
}

int loop_population_pick(Loop *L, CandidateRecord *all, int m, CandidateRecord **pop, int *n)
{
    char *take = xcalloc((size_t)m + 1, 1), *ok = NULL;
    int64_t *v = loop_parse_all(L, all, m, &ok);
    pick_take(L, v, ok, m, take, n);
    free(v);
    free(ok);
    *pop = xcalloc((size_t)L->cfg->population + 1, sizeof(**pop));
    int k = 0;
    for (int i = 0; i < m; i++) {
        if (take[i])
            (*pop)[k++] = all[i];
        else
            candidate_record_free(&all[i]);
    }
    *n = k;
    free(take);
    free(all);
    return 0;
}

/* a sorts before b in the survivors' order: latency_us, then id */
static int surv_before(const CandidateRecord *a, const CandidateRecord *b)
{
    return a->latency_us != b->latency_us ? a->latency_us < b->latency_us : a->id < b->id;
}

int loop_survivors(Loop *L, const LoopSurvivors **out, EvoErr *err)
{
    LoopSurvivors *S = &L->surv;
    CandidateRecord *add = NULL;
    int na = 0, np = L->np;
    *out = S;
    if (store_candidate_list_after(L->st, L->run.id, STORE_SURVIVORS_BY_LATENCY, S->last_id, &add, &na, err))
        return -1;
    if (na == 0) {
        free(add);
        return 0;
    }
    char *aok = NULL;
    int64_t *av = loop_parse_all(L, add, na, &aok);
    int n = S->n + na, i = 0, j = 0;
    CandidateRecord *rec = xcalloc((size_t)n + 1, sizeof(*rec));
    int64_t *v = xcalloc((size_t)n * (size_t)np + 1, sizeof(int64_t));
    char *ok = xcalloc((size_t)n + 1, 1);
    for (int k = 0; k < n; k++) {   /* both are in the order; an old one first on a tie (smaller id) */
        int old = j >= na || (i < S->n && !surv_before(&add[j], &S->rec[i]));
        const CandidateRecord *r = old ? &S->rec[i] : &add[j];
        const int64_t *rv = old ? S->vals + (size_t)i * (size_t)np : av + (size_t)j * (size_t)np;
        rec[k] = *r;   /* the strings move along */
        memcpy(v + (size_t)k * (size_t)np, rv, (size_t)np * sizeof(int64_t));
        ok[k] = old ? S->ok[i++] : aok[j++];
        if (rec[k].id > S->last_id)
            S->last_id = rec[k].id;
    }
    free(S->rec);
    free(S->vals);
    free(S->ok);
    free(add);
    free(av);
    free(aok);
    S->rec = rec;
    S->vals = v;
    S->ok = ok;
    S->n = n;
    return 0;
}

void loop_survivors_free(Loop *L)
{
    LoopSurvivors *S = &L->surv;
    store_candidates_free(S->rec, S->n);
    free(S->vals);
    free(S->ok);
    memset(S, 0, sizeof(*S));
}

/* The population at the start of generation gen: the P fastest survivors
 * of earlier generations, fastest first, with the niches of add_niches()
 * (strategies evolve and model, unless cfg->no_diversity). */
int loop_load_population(Loop *L, int64_t gen, CandidateRecord **pop, int *n, EvoErr *err)
{
    const LoopSurvivors *S;
    if (loop_survivors(L, &S, err))
        return -1;
    int np = L->np, m = 0, *idx = xcalloc((size_t)S->n + 1, sizeof(int));
    for (int i = 0; i < S->n; i++)
        if (S->rec[i].generation < gen)
            idx[m++] = i;
    const int64_t *v = S->vals;
    const char *ok = S->ok;
    int64_t *fv = NULL;
    char *fok = NULL;
    if (m < S->n) {   /* a resumed generation: only those of the generations before it */
        fv = xcalloc((size_t)m * (size_t)np + 1, sizeof(int64_t));
        fok = xcalloc((size_t)m + 1, 1);
        for (int k = 0; k < m; k++) {
            memcpy(fv + (size_t)k * (size_t)np, S->vals + (size_t)idx[k] * (size_t)np, (size_t)np * sizeof(int64_t));
            fok[k] = S->ok[idx[k]];
        }
        v = fv;
        ok = fok;
    }
    char *take = xcalloc((size_t)m + 1, 1);
    pick_take(L, v, ok, m, take, n);
    *pop = xcalloc((size_t)L->cfg->population + 1, sizeof(**pop));
    int k = 0;
    for (int i = 0; i < m; i++)
        if (take[i])
            candidate_record_copy(&(*pop)[k++], &S->rec[idx[i]]);
    *n = k;
    free(take);
    free(idx);
    free(fv);
    free(fok);
    return 0;
}

/* Generations since the population's best was found (0 when it was found
 * in the generation before gen): the stagnation that widens the moves and
 * brings immigrants. A function of the committed population only. In the
 * steady mode, where generations overlap, the commits since the best
 * last improved, in generations of cfg->children. */
int loop_stagnation(Loop *L, int64_t gen, const CandidateRecord *pop, int npop)
{
    if (L->steady) {
        int64_t s = (L->commits - L->best_commit) / (L->cfg->children > 0 ? L->cfg->children : 1);
        return npop == 0 ? 0 : (int)s;
    }
    if (npop == 0 || gen <= 1)
        return 0;
    int64_t s = gen - 1 - pop[0].generation;
    return s < 0 ? 0 : (int)s;
}

/*
 * moves: one proposal of a slot: the operators, widened attempt by
 * attempt, repair of a move the constraints refuse, kernel inheritance,
 * and the dedup against the store and the batch. See moves.h.
 */
#include "search/moves.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "search/judge.h"
#include "search/ops.h"
#include "search/population.h"
#include "task/space_index.h"

/* A slot's attempts widen the move: plain operators first, then stronger
 * mutations, then random resets of several params, then random valid
 * immigrants (MAX_ATTEMPTS, moves.h). */
#define PLAIN_ATTEMPTS  16
#define WIDE_ATTEMPTS   32
#define RESET_ATTEMPTS  48
#define RANDOM_DRAWS    20000 /* draws per random proposal until one is valid */
#define QUICK_DRAWS     64    /* draws before the valid configurations are enumerated */
#define REPAIR_WIDE     3     /* params besides a move's own that a wide repair may change */

/* Status of a params key in this run: 0 new, 1 done in this generation
 * (resume), 2 done in an earlier generation (duplicate). The steady mode
 * has no 1: its resume refills a wave with only the children a kill cut
 * from it, so one committed in the same wave is a duplicate there (as a
 * 1 it would take a refill's place unjudged and leave the wave short). */
int loop_key_state(Loop *L, const char *key, int64_t gen, EvoErr *err)
{
    /* the baseline is generation 0 too, but never a child of it: a proposal
     * of its configuration is a duplicate, not one committed before a kill */
    if (L->baseline.params_key && strcmp(L->baseline.params_key, key) == 0)
        return 2;
    for (int j = 0; j < L->npending; j++)   /* speculation: as if committed in an earlier generation */
        if (strcmp(L->pending[j].params_key, key) == 0)
            return 2;
    int64_t id = store_candidate_find(L->st, L->run.id, key, err);
    if (id <= 0)
        return id < 0 ? -1 : 0;
    CandidateRecord r;
    if (store_candidate_get(L->st, id, &r, err) != 1)
        return -1;
    int state = r.generation == gen && !L->steady ? 1 : 2;
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

/* An enumeration running ahead: its thread fills space, rc and err (the
 * index, which points into the space, is built where the space lands). */
typedef struct SpaceJob {
    pthread_t          thr;
    const Task        *task;
    const DeviceInfo  *dev;
    TaskSpace          space;
    int                rc;      /* task_space_enumerate's */
    int                stop;    /* set (atomically) when the result is no longer wanted */
    EvoErr             err;
} SpaceJob;

static void *space_job_run(void *arg)
{
    SpaceJob *j = arg;
    j->rc = task_space_enumerate_stop(j->task, j->dev, 0, &j->stop, &j->space, &j->err);
    return NULL;
}

void loop_space_ahead(Loop *L)
{
    if (L->space_job || L->space_state != 0)
        return;
    SpaceJob *j = xcalloc(1, sizeof(*j));
    j->task = L->task;
    j->dev = L->dev;
    if (pthread_create(&j->thr, NULL, space_job_run, j) != 0) {
        free(j);
        return;
    }
    L->space_job = j;
}

/* Join the job. take: its configurations go to L->space and its
 * task_space_enumerate result is returned (with err when -1); else they
 * are dropped (it is stopped first) and 0 is returned. */
static int space_join(Loop *L, int take, EvoErr *err)
{
    SpaceJob *j = L->space_job;
    if (!take)   /* a run that ends before its first immigrant does not wait for them */
        __atomic_store_n(&j->stop, 1, __ATOMIC_RELAXED);
    pthread_join(j->thr, NULL);
    L->space_job = NULL;
    int rc = take ? j->rc : 0;
    if (rc >= 0 && take)
        L->space = j->space;
    else
        task_space_free(&j->space);
    if (rc < 0)
        err_set(err, "%s", j->err.msg);
    free(j);
    return rc;
}

void loop_space_cancel(Loop *L)
{
    if (L->space_job)
        space_join(L, 0, NULL);
}

/* The task's valid configurations, enumerated once a run (L->space, by
 * the job loop_space_ahead started, else here) and indexed (L->sidx). 1
 * when they are there, 0 when there are too many to enumerate, -1 on an
 * error. */
static int have_space(Loop *L, EvoErr *err)
{
    if (L->space_state == 0) {
        double t0 = time_now_ms();
        int e = L->space_job ? space_join(L, 1, err) : task_space_enumerate(L->task, L->dev, 0, &L->space, err);
        if (getenv("EVOENG_STEADY_DEBUG"))
            fprintf(stderr, "dbg space: waited %.0f ms at %.0f ms into the run\n", time_now_ms() - t0, t0 - L->t0);
        if (e < 0)
            return -1;
        L->space_state = e == 0 && L->space.count > 0 ? 1 : -1;
        if (L->space_state > 0 && space_index_build(&L->sidx, L->task, &L->space, 0, err))
            return -1;
    }
    return L->space_state > 0;
}

#define CHECKS_BEFORE_INDEX 256   /* constraint checks before the space is enumerated for lookups */

/* Is vals valid for the task on this device? 1 yes, 0 no, -1 error. Once
 * a run has checked many configurations, the valid ones are enumerated
 * and a check is a lookup (the same answer, without evaluating every
 * constraint); why (a reason for a refusal) always evaluates them. */
int loop_valid_config(Loop *L, const int64_t *vals, char **why, EvoErr *err)
{
    if (!why && !L->sidx && L->space_state == 0 && ++L->checks >= CHECKS_BEFORE_INDEX && have_space(L, err) < 0)
        return -1;
    if (!why && L->sidx)
        return space_index_find(L->sidx, vals) >= 0;
    return task_check(L->task, vals, L->dev, why, err);
}

/* A uniformly random valid configuration into vals. Up to QUICK_DRAWS
 * random draws first; where none is valid the task's valid configurations
 * are enumerated (task_space_enumerate, once a run) and every later draw
 * picks one of them, at the same cost however rare they are (the attention
 * task: about 1 in 800,000 raw configurations). Where they cannot be
 * enumerated (too many), random draws go on, RANDOM_DRAWS in all. 1 with
 * vals valid, 0 when no valid draw was found (vals holds the last draw),
 * -1 on an error. */
static int random_valid(Loop *L, Rng *rng, int64_t *vals, EvoErr *err)
{
    for (int r = 0; r < RANDOM_DRAWS; r++) {
        if (r == QUICK_DRAWS && have_space(L, err) < 0)
            return -1;
        if (r >= QUICK_DRAWS && L->space_state > 0) {
            size_t i = (size_t)rng_below(rng, (uint64_t)L->space.count);
            memcpy(vals, task_space_config(&L->space, i), (size_t)L->np * sizeof(int64_t));
            return 1;
        }
        ops_random(L->task, rng, vals);
        int v = loop_valid_config(L, vals, NULL, err);
        if (v)
            return v;
    }
    return 0;
}

/* Advance the exhaustive cursor to the next valid configuration. Returns 1
 * with vals filled, 0 when the space is exhausted. */
int loop_exhaustive_next(Loop *L, int64_t *vals, EvoErr *err)
{
    double total = task_space_size(L->task);
    while ((double)L->exh_index < total) {
        int64_t idx = L->exh_index++;
        for (int i = L->np - 1; i >= 0; i--) {
            int nv = task_param_nvalues(L->task, i);
            vals[i] = task_param_value(L->task, i, (int)(idx % nv));
            idx /= nv;
        }
        int v = loop_valid_config(L, vals, NULL, err);
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

#define SCAN_MAX (1u << 22)   /* configurations a scan looks at, at most */

/* Scan the space, from a random point, for a valid configuration that
 * this run has not evaluated and the batch does not hold. 1 with c->vals
 * and c->params_key set (*state: its loop_key_state), 0 when none is left
 * (the valid space is exhausted), 2 when a space too large to scan whole
 * showed none in SCAN_MAX configurations, -1 on an error. */
static int scan_unseen(Loop *L, int64_t gen, Rng *rng, Child *kids, int n, Child *c, int *state, EvoErr *err)
{
    double total = task_space_size(L->task);
    uint64_t size = total > 1e18 ? (uint64_t)1e18 : (uint64_t)total, start = rng_below(rng, size);
    uint64_t look = size > SCAN_MAX ? SCAN_MAX : size;
    for (uint64_t s = 0; s < look; s++) {
        uint64_t idx = (start + s) % size;
        for (int i = L->np - 1; i >= 0; i--) {
            int nv = task_param_nvalues(L->task, i);
            c->vals[i] = task_param_value(L->task, i, (int)(idx % (uint64_t)nv));
            idx /= (uint64_t)nv;
        }
        int v = loop_valid_config(L, c->vals, NULL, err);
        if (v < 0 || (v && inherit_kernel(L, c, NULL, err)))
            return -1;
        if (!v || loop_in_batch(kids, n, c->params_key))
            continue;
        *state = loop_key_state(L, c->params_key, gen, err);
        if (*state < 0)
            return -1;
        if (*state != 2)
            return 1;
    }
    return look < size ? 2 : 0;
}

/* A move the constraints refuse often wants a coupled knob to follow it:
 * on the WS path BLOCK_M is 64 * CONSUMERS, on the WGMMA path 16 * WARPS,
 * so neither moves alone. Try one more param that the move left alone, in
 * random order, at its other values nearest first, and keep the first
 * valid result. 1 repaired (vals changed), 0 none (vals unchanged), -1 on
 * an error. */
static int repair_move(Loop *L, Rng *rng, const int64_t *parent, int64_t *vals, EvoErr *err)
{
    int np = L->np, *order = xcalloc((size_t)np + 1, sizeof(int)), rc = 0;
    for (int i = 0; i < np; i++)
        order[i] = i;
    for (int i = np - 1; i > 0; i--) {
        int k = (int)rng_below(rng, (uint64_t)i + 1), t = order[i];
        order[i] = order[k];
        order[k] = t;
    }
    for (int o = 0; o < np && rc == 0; o++) {
        int j = order[o], nv = task_param_nvalues(L->task, j), cur = task_param_find(L->task, j, vals[j]);
        if (vals[j] != parent[j] || nv < 2)
            continue;
        for (int d = 1; d < nv && cur >= 0 && rc == 0; d++)
            for (int sgn = -1; sgn <= 1 && rc == 0; sgn += 2) {
                int k = cur + sgn * d;
                if (k < 0 || k >= nv)
                    continue;
                vals[j] = task_param_value(L->task, j, k);
                rc = loop_valid_config(L, vals, NULL, err);
            }
        if (rc <= 0)
            vals[j] = parent[j];
    }
    free(order);
    return rc;
}

/* Where no single param repairs a move (repair_move), the nearest valid
 * configuration that keeps every param the move set: the fewest other
 * params changed (at most REPAIR_WIDE), then the fewest value steps, one
 * of the nearest at random. On the attention WS path a move from 3
 * consumers with 128-key tiles to 256 keys needs CONSUMERS and BLOCK_M to
 * follow it, and a move to 256 keys from a kernel with EARLY and PVSPLIT
 * needs both off: two params, which one extra param cannot give. It reads
 * the enumerated valid configurations (have_space), so it repairs nothing
 * in a space too large to enumerate. 1 repaired (vals changed), 0 none
 * (vals unchanged), -1 on an error. */
static int repair_wide(Loop *L, Rng *rng, const int64_t *parent, int64_t *vals, EvoErr *err)
{
    int have = have_space(L, err);
    if (have <= 0)
        return have;
    int np = L->np, *moved = xcalloc((size_t)np + 1, sizeof(int)), *at = xcalloc((size_t)np + 1, sizeof(int));
    unsigned char *fix = xcalloc((size_t)np + 1, 1);
    int nm = 0, bestd = REPAIR_WIDE + 1;
    for (int i = 0; i < np; i++) {
        if (vals[i] != parent[i]) {
            moved[nm++] = i;
            fix[i] = 1;
        }
        at[i] = task_param_find(L->task, i, vals[i]);
    }
    SpaceNear q;
    space_index_near_init(L->sidx, at, fix, &q);
    long beststep = 0;
    size_t pick = 0, ties = 0, n = L->space.count;
    /* only the configurations holding one moved param's value (the
     * fewest), in space order: the same as scanning them all */
    const uint32_t *bucket = NULL;
    for (int m = 0; m < nm && !q.none; m++) {
        size_t nb;
        const uint32_t *bk = space_index_bucket(L->sidx, moved[m], at[moved[m]], &nb);
        if (!bucket || nb < n) {
            bucket = bk;
            n = nb;
        }
    }
    if (q.none)   /* a moved param holds none of its values: nothing keeps it */
        n = 0;
    for (size_t b = 0; b < n; b++) {
        size_t k = bucket ? bucket[b] : b;
        int d = space_index_near(L->sidx, &q, k, bestd);   /* the move's params kept, d others changed */
        if (d <= 0)
            continue;
        const uint16_t *vi = space_index_vidx(L->sidx, k);
        long step = 0;
        for (int i = 0; i < np; i++)
            if (!fix[i] && vi[i] != at[i])
                step += labs((long)vi[i] - at[i]);
        if (d < bestd || step < beststep) {
            bestd = d;
            beststep = step;
            pick = k;
            ties = 1;
        } else if (step == beststep && rng_below(rng, (uint64_t)++ties) == 0) {
            pick = k;
        }
    }
    free(moved);
    free(fix);
    free(at);
    if (bestd > REPAIR_WIDE)
        return 0;
    memcpy(vals, task_space_config(&L->space, pick), (size_t)np * sizeof(int64_t));
    return 1;
}

/* A move of one parent that the constraints refuse: one more param
 * follows it (repair_move), else two or three (repair_wide). 1 repaired,
 * 0 none, -1 on an error. */
int loop_repair(Loop *L, Rng *rng, const int64_t *parent, int64_t *vals, EvoErr *err)
{
    int r = repair_move(L, rng, parent, vals, err);
    return r == 0 ? repair_wide(L, rng, parent, vals, err) : r;
}

int loop_propose_one(Loop *L, int64_t gen, Rng *rng, const LoopMoves *mv, int attempt, Child *c,
                     int *kparent, EvoErr *err)
{
    *kparent = -1;
    const CandidateRecord *pop = mv->pop;
    int npop = mv->npop;
    if (strcmp(L->cfg->strategy, "random") == 0 || gen == 0 || npop == 0 || mv->immigrant ||
        attempt >= RESET_ATTEMPTS) {
        /* a valid draw first: where few configurations are valid (the WS
         * knobs), MAX_ATTEMPTS whole proposals would rarely place one */
        if (random_valid(L, rng, c->vals, err) < 0)
            return -1;
        c->op = "random";
        c->parent_id = gen == 0 ? 0 : L->baseline.rec.id;
        return 0;
    }
    /* a uniform draw gives the niches' (slower) members children too */
    int a = mv->uniform ? (int)rng_below(rng, (uint64_t)npop) : evolve_tournament(rng, npop, 3), b = a;
    if (task_params_parse(L->task, pop[a].params_json, mv->p1, err))
        return -1;
    const Operator *op = attempt < PLAIN_ATTEMPTS ? ops_pick(rng, npop > 1) : NULL;
    int strength = mv->strength + (attempt >= PLAIN_ATTEMPTS ? 1 + (attempt - PLAIN_ATTEMPTS) / 8 : 0);
    if (op && op->nparents == 2) {
        while (b == a)
            b = evolve_tournament(rng, npop, 3);
        if (task_params_parse(L->task, pop[b].params_json, mv->p2, err))
            return -1;
    }
    int rc;
    if (op && (op->nparents == 2 || strength <= 1))
        rc = op->propose(L->task, rng, mv->p1, mv->p2, c->vals);
    else   /* adaptive strength: more params at once, then random resets of several */
        rc = ops_perturb(L->task, rng, mv->p1, strength + (int)rng_below(rng, 2), attempt >= WIDE_ATTEMPTS,
                         c->vals);
    if (rc)
        return 1;
    if (!op || op->nparents == 1) {   /* a move of one parent: let a coupled knob follow */
        int v = loop_valid_config(L, c->vals, NULL, err);
        if (v < 0 || (v == 0 && loop_repair(L, rng, mv->p1, c->vals, err) < 0))
            return -1;
    }
    c->op = op ? op->name : "mutate";
    /* The primary parent is the faster one: the lineage goes on from it. */
    *kparent = a < b ? a : b;
    c->parent_id = pop[*kparent].id;
    c->parent2_id = op && op->nparents == 2 ? pop[a < b ? b : a].id : 0;
    return 0;
}

int loop_place(Loop *L, int64_t gen, Child *kids, int n, Child *c, const CandidateRecord *kparent, int *state,
               EvoErr *err)
{
    if (inherit_kernel(L, c, kparent, err))
        return -1;
    int v = loop_valid_config(L, c->vals, NULL, err);
    *state = v > 0 ? loop_key_state(L, c->params_key, gen, err) : 0;
    if (v < 0 || *state < 0)
        return -1;
    return v && *state != 2 && !loop_in_batch(kids, n, c->params_key);
}

int loop_fill_unseen(Loop *L, int64_t gen, Rng *rng, Child *kids, int n, Child *c, int *state, EvoErr *err)
{
    int got = scan_unseen(L, gen, rng, kids, n, c, state, err);
    if (got == 1) {
        c->op = "random";
        c->parent_id = gen == 0 ? 0 : L->baseline.rec.id;
        c->parent2_id = 0;
    }
    return got;
}

void loop_moves_init(Loop *L, int64_t gen, const CandidateRecord *pop, int npop, LoopMoves *mv)
{
    memset(mv, 0, sizeof(*mv));
    mv->pop = pop;
    mv->npop = npop;
    mv->p1 = xcalloc((size_t)L->np + 1, sizeof(int64_t));
    mv->p2 = xcalloc((size_t)L->np + 1, sizeof(int64_t));
    int stag = L->cfg->no_diversity ? 0 : loop_stagnation(L, gen, pop, npop);
    mv->strength = 1 + stag / 2;
    mv->stagnation = stag;
}

void loop_moves_free(LoopMoves *mv)
{
    free(mv->p1);
    free(mv->p2);
    memset(mv, 0, sizeof(*mv));
}

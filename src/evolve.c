/*
 * evolve: the generation loop, selection, dedup, the revert rule, kernel
 * inheritance, the LLM children and resume. See evolve.h.
 */
#include "evolve.h"

#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "llmop.h"
#include "msg.h"
#include "nvrtc.h"
#include "ops.h"

#define MAX_ATTEMPTS 64   /* proposals tried per child slot before giving up */
#define LLM_STREAM 0x6c6c6d2d70617265ULL  /* "llm-pare": the LLM parents' RNG stream */
#define LLM_BATCH 8       /* answers taken (and compiled together) at a time */
#define PARENT_CACHE 16   /* parents kept compiled and loaded for their children's A/B */

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
    Child               parents[PARENT_CACHE];
    uint64_t            parent_used[PARENT_CACHE];
    uint64_t            parent_tick;
    /* the next generation's likely children, compiling ahead (speculate()) */
    Child              *spec;
    int                 nspec;
} Loop;

int evolve_should_revert(double ratio, double threshold)
{
    return !(ratio <= 1.0 + threshold);   /* NaN reverts too */
}

int evolve_tournament(Rng *rng, int n, int k)
{
    int best = n;
    for (int i = 0; i < k; i++) {
        int x = (int)rng_below(rng, (uint64_t)n);
        if (x < best)
            best = x;
    }
    return best;
}

/* ---- children -------------------------------------------------------- */

int evolve_evaluate(const EvaluatorOps *ev, void *ctx, Child *kid, EvoErr *err)
{
    if (ev->submit(ctx, kid, 1, err) || ev->gate(ctx, kid, 1, err) || ev->submit(ctx, kid, 2, err) ||
        ev->gate(ctx, kid, 2, err) || ev->time(ctx, kid, err))
        return -1;
    return 0;
}

void evolve_child_init(Child *c, int nparams)
{
    memset(c, 0, sizeof(*c));
    c->vals = xcalloc((size_t)nparams + 1, sizeof(int64_t));
    candidate_record_init(&c->rec);
    compile_record_init(&c->comp);
}

void evolve_child_clear(Child *c, const EvaluatorOps *ev, void *ev_ctx)
{
    if (c->priv && ev && ev->release)
        ev->release(ev_ctx, c);
    free(c->vals);
    free(c->params_key);
    free(c->source_text);
    free(c->own_source);
    candidate_record_free(&c->rec);
    compile_record_free(&c->comp);
    memset(c, 0, sizeof(*c));
}

static void child_init(Loop *L, Child *c)
{
    evolve_child_init(c, L->np);
}

static void child_free(Loop *L, Child *c)
{
    evolve_child_clear(c, L->ev, L->ev_ctx);
}

/* Rebuild a prepared Child from a committed candidate (a parent). */
static int child_from_record(Loop *L, const CandidateRecord *r, Child *c, EvoErr *err)
{
    child_init(L, c);
    if (task_params_parse(L->task, r->params_json, c->vals, err))
        return err_prefix(err, "candidate %lld: params", (long long)r->id);
    c->params_key = xstrdup(r->params_key);
    c->op = "parent";
    c->rec.id = r->id;
    c->rec.latency_us = r->latency_us;
    if (strchr(r->params_key, '@')) {
        /* Not the template: the evaluator needs the raw kernel (or, in a
         * store from before the kernels table, the rendered source: its
         * #defines repeat the same values, which the preprocessor allows). */
        EvoErr e2;
        c->own_source = store_kernel_get(L->st, r->params_key, &e2);
        if (!c->own_source)
            c->own_source = store_source_get(L->st, r->source_hash, err);
        c->custom_source = c->own_source;
    }
    /* A parent passed the full gate when it was committed: it only needs its
     * benchmark-shape unit, for the A/B. */
    if (L->ev->submit(L->ev_ctx, c, 1, err))
        return -1;
    if (c->rec.status)
        return err_set(err, "candidate %lld no longer prepares: %s: %s", (long long)r->id, c->rec.status,
                       c->rec.error ? c->rec.error : "");
    return 0;
}

/* ---- progress -------------------------------------------------------- */

static void live_line(Loop *L, const char *fmt, ...) EVO_PRINTF(2, 3);
static void live_line(Loop *L, const char *fmt, ...)
{
    if (!L->tty || L->cfg->quiet || L->cfg->json)
        return;
    char buf[160];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof(buf), fmt, ap);
    va_end(ap);
    fprintf(stderr, "\r\033[K%s", buf);
    fflush(stderr);
}

static void live_clear(Loop *L)
{
    if (L->tty && !L->cfg->quiet && !L->cfg->json) {
        fputs("\r\033[K", stderr);
        fflush(stderr);
    }
}

static void fmt_dur(char *buf, size_t n, double s)
{
    if (s < 0 || !isfinite(s))
        snprintf(buf, n, "-");
    else if (s < 60)
        snprintf(buf, n, "%.0fs", s);
    else if (s < 3600)
        snprintf(buf, n, "%dm%02ds", (int)s / 60, (int)s % 60);
    else
        snprintf(buf, n, "%dh%02dm", (int)s / 3600, ((int)s % 3600) / 60);
}

static void report_generation(Loop *L, const GenerationRecord *g, int total_gens)
{
    double el = (time_now_ms() - L->t0) / 1000.0;
    double speed = L->base_latency > 0 && g->best_latency_us > 0 ? L->base_latency / g->best_latency_us : NAN;
    int left = total_gens - (int)g->generation;
    double eta = g->generation > 0 ? el / (double)(g->generation + 1) * left : NAN;
    live_clear(L);
    if (L->cfg->json) {
        json_t *o = json_pack("{s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:f, s:f, s:f}", "run", (json_int_t)L->run.id,
                              "generation", (json_int_t)g->generation, "evaluated", (json_int_t)g->evaluated,
                              "valid", (json_int_t)g->valid, "accepted", (json_int_t)g->accepted,
                              "reverted", (json_int_t)g->reverted, "best_id", (json_int_t)g->best_id,
                              "best_latency_us", g->best_latency_us, "speedup", isnan(speed) ? 0.0 : speed,
                              "elapsed_s", el);
        char *s = json_dumps(o, JSON_COMPACT);
        printf("%s\n", s);
        free(s);
        json_decref(o);
        fflush(stdout);
        return;
    }
    if (L->cfg->quiet)
        return;
    char e1[16], e2[16];
    fmt_dur(e1, sizeof(e1), el);
    fmt_dur(e2, sizeof(e2), eta);
    printf("gen %3lld/%-3d  evaluated %3lld  valid %3lld  accepted %3lld  reverted %3lld  best %8.2f us  "
           "%5.2fx  elapsed %s  eta %s\n",
           (long long)g->generation, total_gens, (long long)g->evaluated, (long long)g->valid,
           (long long)g->accepted, (long long)g->reverted, g->best_latency_us, isnan(speed) ? 0.0 : speed, e1, e2);
    fflush(stdout);
}

/* ---- evaluating and committing one child ----------------------------- */

static int commit_child(Loop *L, Child *c, GenerationRecord *g, EvoErr *err)
{
    CandidateRecord *r = &c->rec;
    r->run_id = L->run.id;
    r->generation = g->generation;
    if (!r->params_json)
        r->params_json = task_params_json(L->task, c->vals);
    if (!r->params_key)
        r->params_key = xstrdup(c->params_key);
    if (!r->operator)
        r->operator = xstrdup(c->op);
    r->parent_id = c->parent_id;
    r->parent2_id = c->parent2_id;
    if (!r->status)
        r->status = xstrdup("invalid");
    if (!r->decision)
        r->decision = xstrdup("failed");
    if (strcmp(r->decision, "baseline") == 0 && r->latency_us > 0)
        r->speedup = 1.0;
    else if (L->base_latency > 0 && r->latency_us > 0)
        r->speedup = L->base_latency / r->latency_us;
    if (store_candidate_insert(L->st, r, c->source_text, c->comp.cache_key ? &c->comp : NULL, err))
        return -1;
    L->commits++;
    g->evaluated++;
    L->sum->evaluated++;
    if (strcmp(r->status, "ok") == 0) {
        g->valid++;
        L->sum->valid++;
    } else {
        g->failed++;
        L->sum->failed++;
    }
    if (strcmp(r->decision, "accepted") == 0)
        g->accepted++;
    if (strcmp(r->decision, "reverted") == 0) {
        g->reverted++;
        L->sum->reverted++;
    }
    if (strcmp(r->status, "ok") == 0 && strcmp(r->decision, "reverted") != 0 &&
        (g->best_id == 0 || r->latency_us < g->best_latency_us)) {
        g->best_id = r->id;
        g->best_latency_us = r->latency_us;
    }
    if (L->cfg->stop_after && L->commits >= L->cfg->stop_after && L->cfg->stop)
        *L->cfg->stop = 1;
    return 0;
}

/* Does the child go through the full gate whatever its A/B says? The
 * baseline, generation 0 and the children of the random and exhaustive
 * strategies (ground truth for comparing strategies) do. */
static int needs_full_gate(const Child *c, const Child *parent)
{
    return !parent || strcmp(c->op, "baseline") == 0 || strcmp(c->op, "random") == 0 ||
           strcmp(c->op, "exhaustive") == 0;
}

/* Stage A of a submitted child: the gate on the benchmark shape, then the
 * A/B against its parent. Returns 0 with *next = 1 when the child goes on
 * to stage B (its other units are then queued), 0 with *next = 0 when it
 * is decided (failed, or reverted and not needing the full gate), -1 on
 * an error. */
static int stage_a(Loop *L, Child *c, Child *parent, GenerationRecord *g, int *next, EvoErr *err)
{
    *next = 0;
    live_line(L, "gen %lld: gating %s child (%s)", (long long)g->generation, c->op, c->params_key);
    if (L->ev->gate(L->ev_ctx, c, 1, err))
        return -1;
    if (!c->rec.status && parent) {
        double ratio = NAN, spread = NAN;
        live_line(L, "gen %lld: A/B %s child vs parent %lld", (long long)g->generation, c->op,
                  (long long)parent->rec.id);
        if (L->ev->compare(L->ev_ctx, parent, c, &ratio, &spread, err))
            return -1;
        if (!c->rec.status)
            c->rec.status = xstrdup("crashed");   /* an evaluator that judged nothing */
        if (strcmp(c->rec.status, "ok") == 0) {
            c->rec.ratio_to_parent = ratio;
            c->rec.ratio_spread = spread;
            c->rec.decision =
                xstrdup(evolve_should_revert(ratio, L->cfg->revert_threshold) ? "reverted" : "accepted");
            if (strcmp(c->rec.decision, "reverted") == 0 && !needs_full_gate(c, parent))
                return 0;
        }
    }
    if (c->rec.status && strcmp(c->rec.status, "ok") != 0)
        return 0;
    *next = 1;
    return L->ev->submit(L->ev_ctx, c, 2, err);
}

/* Stage B of a child that passed stage A: the gate on every other shape,
 * and the timing of a child with no parent. Sets its decision. */
static int stage_b(Loop *L, Child *c, GenerationRecord *g, EvoErr *err)
{
    live_line(L, "gen %lld: full gate of %s child (%s)", (long long)g->generation, c->op, c->params_key);
    char *ab_status = c->rec.status;   /* "ok" after an A/B, NULL without one */
    c->rec.status = NULL;
    if (L->ev->gate(L->ev_ctx, c, 2, err)) {
        free(ab_status);
        return -1;
    }
    if (!c->rec.status && ab_status) {
        c->rec.status = ab_status;
        ab_status = NULL;
    }
    free(ab_status);
    if (!c->rec.status && L->ev->time(L->ev_ctx, c, err))
        return -1;
    if (!c->rec.status)
        c->rec.status = xstrdup("crashed");
    if (strcmp(c->rec.status, "ok") != 0) {
        free(c->rec.decision);
        c->rec.decision = NULL;
    } else if (!c->rec.decision) {
        /* no parent: the baseline, or a member of the initial population */
        c->rec.decision = xstrdup(c->parent_id == 0 && strcmp(c->op, "baseline") == 0 ? "baseline" : "accepted");
    }
    return 0;
}

/* Decide and commit a child whose stages are over. */
static int finish_child(Loop *L, Child *c, GenerationRecord *g, EvoErr *err)
{
    if (!c->rec.status)
        c->rec.status = xstrdup("crashed");
    if (strcmp(c->rec.status, "ok") != 0) {
        free(c->rec.decision);
        c->rec.decision = xstrdup("failed");
    }
    return commit_child(L, c, g, err);
}

/* ---- populations and proposals --------------------------------------- */

/* The population at the start of generation gen: the P fastest survivors
 * of earlier generations, fastest first. */
static int load_population(Loop *L, int64_t gen, CandidateRecord **pop, int *n, EvoErr *err)
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
static int key_state(Loop *L, const char *key, int64_t gen, EvoErr *err)
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

static int in_batch(Child *kids, int n, const char *key)
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
static int propose(Loop *L, int64_t gen, CandidateRecord *pop, int npop, Child *kids, int want, int *done,
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
            child_init(L, &c);
            const CandidateRecord *kparent = NULL;   /* whose kernel the child renders (NULL: baseline's) */
            if (strcmp(strategy, "exhaustive") == 0) {
                int got = exhaustive_next(L, c.vals, err);
                if (got <= 0) {
                    child_free(L, &c);
                    rc = got;
                    goto out;
                }
                c.op = "exhaustive";
                c.parent_id = L->baseline.rec.id;
            } else if (strcmp(strategy, "random") == 0 || gen == 0 || npop == 0) {
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
                    child_free(L, &c);
                    rc = -1;
                    goto out;
                }
                if (op->propose(L->task, &rng, p1, p2, c.vals)) {
                    child_free(L, &c);
                    continue;
                }
                c.op = op->name;
                /* The primary parent is the faster one: the lineage goes on from it. */
                c.parent_id = pop[a < b ? a : b].id;
                c.parent2_id = op->nparents == 2 ? pop[a < b ? b : a].id : 0;
                kparent = &pop[a < b ? a : b];
            }
            if (inherit_kernel(L, &c, kparent, err)) {
                child_free(L, &c);
                rc = -1;
                goto out;
            }
            int v = valid_config(L, c.vals, NULL, err);
            int state = v > 0 ? key_state(L, c.params_key, gen, err) : 0;
            if (v < 0 || state < 0) {
                child_free(L, &c);
                rc = -1;
                goto out;
            }
            if (!v || state == 2 || in_batch(kids, n, c.params_key)) {
                child_free(L, &c);   /* invalid or already evaluated: refill */
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

/* ---- limits ---------------------------------------------------------- */

static int time_limit_hit(Loop *L)
{
    if (L->cfg->time_limit_s > 0 && (time_now_ms() - L->t0) / 1000.0 >= L->cfg->time_limit_s) {
        L->sum->interrupted = 1;
        return 1;
    }
    if (L->cfg->stop && *L->cfg->stop) {
        L->sum->interrupted = 1;
        return 1;
    }
    return 0;
}

/* The prepared Child that candidate parent_id is, as the A/B reference of
 * a child: the baseline itself, or a candidate kept in the parent cache
 * (prepared into it on a miss, evicting the least recently used). *parent
 * is NULL for no parent. */
static int load_parent(Loop *L, int64_t parent_id, Child **parent, EvoErr *err)
{
    *parent = NULL;
    if (parent_id == 0)
        return 0;
    if (parent_id == L->baseline.rec.id) {
        *parent = &L->baseline;
        return 0;
    }
    int slot = -1;
    for (int i = 0; i < PARENT_CACHE; i++) {
        if (L->parents[i].vals && L->parents[i].rec.id == parent_id) {
            L->parent_used[i] = ++L->parent_tick;
            *parent = &L->parents[i];
            return 0;
        }
    }
    for (int i = 0; i < PARENT_CACHE && slot < 0; i++)
        if (!L->parents[i].vals)
            slot = i;
    if (slot < 0) {
        slot = 0;
        for (int i = 1; i < PARENT_CACHE; i++)
            if (L->parent_used[i] < L->parent_used[slot])
                slot = i;
    }
    Child *c = &L->parents[slot];
    if (c->vals)
        child_free(L, c);
    CandidateRecord pr;
    int got = store_candidate_get(L->st, parent_id, &pr, err);
    if (got != 1)
        return got == 0 ? err_set(err, "parent candidate %lld is missing", (long long)parent_id) : -1;
    int prc = child_from_record(L, &pr, c, err);
    candidate_record_free(&pr);
    if (prc) {
        child_free(L, c);
        return -1;
    }
    L->parent_used[slot] = ++L->parent_tick;
    *parent = c;
    return 0;
}

/* Commit child i of a batch and link it to its LLM request, if any. */
static int commit_one(Loop *L, Child *c, int64_t req_id, GenerationRecord *g, EvoErr *err)
{
    if (finish_child(L, c, g, err))
        return -1;
    if (req_id) {
        if (store_llm_request_link(L->st, req_id, c->rec.id, err))
            return -1;
        L->sum->llm_children++;
        if (strcmp(c->rec.decision, "accepted") == 0)
            L->sum->llm_accepted++;
    }
    return 0;
}

/* ---- speculation ------------------------------------------------------ */

static void spec_free(Loop *L)
{
    for (int i = 0; i < L->nspec; i++)
        child_free(L, &L->spec[i]);
    free(L->spec);
    L->spec = NULL;
    L->nspec = 0;
}

static int by_latency(const void *a, const void *b)
{
    const CandidateRecord *x = a, *y = b;
    return x->latency_us < y->latency_us ? -1 : x->latency_us > y->latency_us;
}

/* While generation gen's stage B runs (the GPU waiting for the other
 * units of its would-be-accepted children), propose generation gen + 1 as
 * if every one of those children passes, and queue the compilation of the
 * proposals' benchmark-shape units. Nothing else is kept: generation
 * gen + 1 waits for these compilations (spec_free), is proposed again
 * from the committed state, and its children find their units in the
 * compile cache. A wrong guess costs CPU, never a different proposal.
 * Best effort: errors only mean no speculation. */
static void speculate(Loop *L, int64_t gen, Child *kids, const int *later, int nlater)
{
    const EvolveConfig *cfg = L->cfg;
    spec_free(L);
    /* Without a stage B to wait for, the next generation starts at once;
     * without the compile cache, nothing would be kept. */
    if (nlater == 0 || !nvrtc_cache_enabled() || strcmp(cfg->strategy, "evolve") != 0 ||
        gen + 1 > cfg->generations || cfg->children <= 0 || (cfg->stop && *cfg->stop) || time_limit_hit(L))
        return;
    EvoErr e;
    CandidateRecord *pop = NULL;
    int npop = 0;
    if (load_population(L, gen + 1, &pop, &npop, &e))
        return;
    CandidateRecord *all = xcalloc((size_t)(npop + nlater) + 1, sizeof(*all));
    int m = 0;
    for (int i = 0; i < npop; i++)
        all[m++] = pop[i];
    for (int k = 0; k < nlater; k++) {
        const Child *c = &kids[later[k]];
        CandidateRecord *r = &all[m++];
        candidate_record_init(r);
        r->id = -1 - k;
        r->generation = gen;
        r->params_json = task_params_json(L->task, c->vals);
        r->params_key = xstrdup(c->params_key);
        r->latency_us = c->rec.latency_us;
    }
    qsort(all, (size_t)m, sizeof(*all), by_latency);
    int keep = m < cfg->population ? m : cfg->population;
    L->spec = xcalloc((size_t)cfg->children + 1, sizeof(Child));
    int *done = xcalloc((size_t)cfg->children + 1, sizeof(int));
    int n = propose(L, gen + 1, all, keep, L->spec, cfg->children, done, &e);
    L->nspec = n > 0 ? n : 0;
    for (int i = 0; i < L->nspec; i++)
        if (!done[i] && L->ev->submit(L->ev_ctx, &L->spec[i], 1, &e))
            break;
    free(done);
    for (int i = 0; i < m; i++)
        candidate_record_free(&all[i]);
    free(all);
    free(pop);
}

/* Evaluate and commit each child of kids[0..n) not marked done, as a
 * pipeline: every child's benchmark-shape unit is queued for compilation
 * at once; the GPU gates and compares each child as soon as its unit is
 * built while the rest compile; a child that goes on to stage B has its
 * other units queued then, and its full gate runs after the batch's stage
 * A. Stops early (0) on *stop (what is not committed is evaluated again
 * on resume) or the time limit (children already in stage B are
 * finished); -1 on an error. */
static int decide_all(Loop *L, Child *kids, const int *done, int n, GenerationRecord *g, int64_t *req_ids,
                      int ahead, EvoErr *err)
{
    int *later = xcalloc((size_t)n + 1, sizeof(int));
    int nlater = 0, rc = -1;
    for (int i = 0; i < n; i++)
        if (!(done && done[i]) && L->ev->submit(L->ev_ctx, &kids[i], 1, err))
            goto out;
    for (int i = 0; i < n; i++) {
        if (done && done[i])
            continue;
        if (L->cfg->stop && *L->cfg->stop) {
            L->sum->interrupted = 1;
            rc = 0;
            goto out;
        }
        Child *parent = NULL;
        int next = 0;
        if (load_parent(L, kids[i].parent_id, &parent, err) || stage_a(L, &kids[i], parent, g, &next, err))
            goto out;
        if (next)
            later[nlater++] = i;
        else if (commit_one(L, &kids[i], req_ids ? req_ids[i] : 0, g, err))
            goto out;
        if (time_limit_hit(L))
            break;
    }
    if (ahead)
        speculate(L, g->generation, kids, later, nlater);
    for (int k = 0; k < nlater; k++) {
        if (L->cfg->stop && *L->cfg->stop) {
            L->sum->interrupted = 1;
            break;
        }
        int i = later[k];
        if (stage_b(L, &kids[i], g, err) || commit_one(L, &kids[i], req_ids ? req_ids[i] : 0, g, err))
            goto out;
    }
    rc = 0;
out:
    free(later);
    return rc;
}

/* ---- LLM children ---------------------------------------------------- */

/* How many of generation gen's children slots go to the LLM: llm_rate of
 * them (rounded, at least 1 when the rate is above 0), at most what the
 * request budget leaves after the earlier generations. -1 on error. */
static int llm_slots(Loop *L, int64_t gen, int npop, EvoErr *err)
{
    const EvolveConfig *cfg = L->cfg;
    if (!cfg->llm || gen == 0 || npop == 0 || cfg->llm_rate <= 0 || cfg->children <= 0 ||
        strcmp(cfg->strategy, "exhaustive") == 0)
        return 0;
    int n = (int)floor(cfg->children * cfg->llm_rate + 0.5);
    if (n < 1)
        n = 1;
    if (n > cfg->children)
        n = cfg->children;
    int max = llmop_max_requests(cfg->llm);
    if (max > 0) {
        int used = store_llm_request_count(L->st, L->run.id, 0, gen - 1, err);
        if (used < 0)
            return -1;
        if (n > max - used)
            n = max - used > 0 ? max - used : 0;
    }
    return n;
}

/* Queue the generation's LLM requests. The parents come from their own
 * RNG stream; slots already recorded for this generation (a resumed run)
 * are not asked again. */
static int llm_submit_generation(Loop *L, int64_t gen, CandidateRecord *pop, int npop, int slots, EvoErr *err)
{
    int done = store_llm_request_count(L->st, L->run.id, gen, gen, err);
    if (done < 0)
        return -1;
    Rng rng;
    rng_seed(&rng, rng_mix(L->cfg->seed ^ LLM_STREAM, (uint64_t)gen));
    LlmOpContext ctx = {.st = L->st, .task = L->task, .dev = L->dev, .run_id = L->run.id, .generation = gen};
    for (int i = 0; i < slots; i++) {
        int a = evolve_tournament(&rng, npop, 3);
        if (i < done)
            continue;
        if (llmop_submit(L->cfg->llm, &ctx, &pop[a], err))
            return err_prefix(err, "LLM request for candidate %lld", (long long)pop[a].id);
    }
    return 0;
}

/* Record answers ans[0..n) in llm_requests and turn the usable ones into
 * children: the LLM's kernel rendered with its parent's params. Then
 * compile them together and decide each against its parent. Frees the
 * answers' results. */
static int llm_answers(Loop *L, int64_t gen, GenerationRecord *g, LlmOpAnswer *ans, int n, EvoErr *err)
{
    Child *kids = xcalloc((size_t)n + 1, sizeof(Child));
    int64_t *req_ids = xcalloc((size_t)n + 1, sizeof(int64_t));
    int nk = 0, rc = -1;
    for (int i = 0; i < n; i++) {
        const LlmResult *res = ans[i].res;
        LlmRequestRecord rr;
        llmop_request_record(&ans[i], L->run.id, &rr);
        Child c;
        int have = 0;
        child_init(L, &c);
        if (res->status == LLM_OK) {
            CandidateRecord pr;
            int got = store_candidate_get(L->st, ans[i].parent_id, &pr, err);
            if (got == 1 && task_params_parse(L->task, pr.params_json, c.vals, err))
                got = -1;
            candidate_record_free(&pr);
            if (got != 1) {
                if (got == 0)
                    err_set(err, "LLM answer: parent candidate %lld is missing", (long long)ans[i].parent_id);
                child_free(L, &c);
                llm_request_record_free(&rr);
                goto out;
            }
            char hex[65];
            c.own_source = xstrdup(res->code);
            c.custom_source = c.own_source;
            sha256_hex(c.own_source, strlen(c.own_source), hex);
            c.params_key = ops_params_key(L->task, c.vals, hex);
            int state = key_state(L, c.params_key, gen, err);
            if (state < 0) {
                child_free(L, &c);
                llm_request_record_free(&rr);
                goto out;
            }
            if (state != 0 || in_batch(kids, nk, c.params_key)) {
                free(rr.status);
                rr.status = xstrdup("duplicate");
                free(rr.error);
                rr.error = xasprintf("the proposed kernel with the parent's params (%s) was already evaluated "
                                     "in this run", c.params_key);
            } else {
                have = 1;
                c.op = "llm";
                c.parent_id = ans[i].parent_id;
                c.rec.rationale = xstrdup(res->rationale);
            }
        }
        if (!have) {
            live_clear(L);
            warnf("LLM request (generation %lld, parent #%lld) made no child: %s%s%s", (long long)gen,
                  (long long)ans[i].parent_id, rr.status, rr.error ? ": " : "", rr.error ? rr.error : "");
        }
        int src = store_llm_request_insert(L->st, &rr, err);
        if (!src && have)
            src = store_kernel_put(L->st, c.own_source, "llm", rr.id, err);
        if (!src)
            L->sum->llm_requests++;
        if (!src && have) {
            c.rec.llm_request_id = rr.id;
            req_ids[nk] = rr.id;
            kids[nk++] = c;
        } else {
            child_free(L, &c);
        }
        llm_request_record_free(&rr);
        if (src)
            goto out;
    }
    live_line(L, "gen %lld: evaluating %d LLM children", (long long)gen, nk);
    rc = decide_all(L, kids, NULL, nk, g, req_ids, 0, err);
out:
    for (int i = 0; i < n; i++)
        llm_result_free(&ans[i].res);
    for (int i = 0; i < nk; i++)
        child_free(L, &kids[i]);
    free(kids);
    free(req_ids);
    return rc;
}

/* Wait for the generation's LLM answers and evaluate them as they come.
 * On *stop or the time limit, what is still in flight is dropped. */
static int llm_collect_generation(Loop *L, int64_t gen, GenerationRecord *g, EvoErr *err)
{
    LlmOp *op = L->cfg->llm;
    while (llmop_pending(op) > 0) {
        if (L->sum->interrupted || time_limit_hit(L))
            break;
        live_line(L, "gen %lld: waiting for %d LLM answers", (long long)gen, llmop_pending(op));
        LlmOpAnswer ans[LLM_BATCH];
        int n = llmop_collect(op, 200, ans, LLM_BATCH);
        if (n > 0 && llm_answers(L, gen, g, ans, n, err))
            return -1;
    }
    if (llmop_pending(op) > 0)
        llmop_discard(op);
    return 0;
}

/* ---- generations ----------------------------------------------------- */

static int run_generation(Loop *L, int64_t gen, int total_gens, EvoErr *err)
{
    double t0 = time_now_ms();
    spec_free(L);   /* the speculative compilations land in the cache first */
    GenerationRecord g = {.run_id = L->run.id, .generation = gen, .best_latency_us = NAN};
    CandidateRecord *pop = NULL;
    int npop = 0;
    if (gen > 0 && load_population(L, gen, &pop, &npop, err))
        return -1;
    int nllm = llm_slots(L, gen, npop, err);
    if (nllm < 0) {
        store_candidates_free(pop, npop);
        return -1;
    }
    int want = gen == 0 ? L->cfg->population - 1 : L->cfg->children - nllm;
    Child *kids = xcalloc((size_t)want + 1, sizeof(Child));
    int *done = xcalloc((size_t)want + 1, sizeof(int));
    int rc = -1, n = 0;
    /* The LLM requests go out first, to travel while the others compile and run. */
    if (nllm > 0 && llm_submit_generation(L, gen, pop, npop, nllm, err))
        goto out;
    n = want > 0 ? propose(L, gen, pop, npop, kids, want, done, err) : 0;
    if (n < 0) {
        n = 0;
        goto out;
    }
    if (decide_all(L, kids, done, n, &g, NULL, 1, err))
        goto out;
    if (nllm > 0 && !L->sum->interrupted && llm_collect_generation(L, gen, &g, err))
        goto out;
    rc = 0;
out:
    if (rc && L->cfg->llm)
        llmop_discard(L->cfg->llm);
    if (L->cfg->llm && L->sum->interrupted)
        llmop_discard(L->cfg->llm);
    for (int i = 0; i < n; i++)
        child_free(L, &kids[i]);
    free(kids);
    free(done);
    store_candidates_free(pop, npop);
    if (rc == 0 && !L->sum->interrupted) {
        /* The generation's best counts everything committed in it (a resumed
         * generation too), so read it back from the store. */
        g.wall_ms = time_now_ms() - t0;
        CandidateRecord *best = NULL;
        int nb = 0;
        if (store_candidate_list(L->st, L->run.id, STORE_SURVIVORS_BY_LATENCY, 1, &best, &nb, err) == 0 && nb) {
            g.best_id = best[0].id;
            g.best_latency_us = best[0].latency_us;
        }
        store_candidates_free(best, nb);
        if (store_generation_put(L->st, &g, err))
            return -1;
        L->run.generations_done = gen + 1;
        if (store_run_update(L->st, &L->run, err))
            return -1;
        L->sum->generations_done = (int)gen + 1;
        report_generation(L, &g, total_gens);
    }
    return rc;
}

/* ---- the run --------------------------------------------------------- */

/* Evaluate and commit the baseline, or reload it on resume. */
static int setup_baseline(Loop *L, EvoErr *err)
{
    if (L->run.baseline_id) {
        CandidateRecord r;
        if (store_candidate_get(L->st, L->run.baseline_id, &r, err) != 1)
            return err_set(err, "run %lld: its baseline %lld is missing", (long long)L->run.id,
                           (long long)L->run.baseline_id);
        int rc = child_from_record(L, &r, &L->baseline, err);
        L->base_latency = r.latency_us;
        candidate_record_free(&r);
        if (rc == 0 && L->baseline.own_source)
            L->base_kernel = xstrdup(L->baseline.own_source);
        return rc;
    }
    Child *b = &L->baseline;
    child_init(L, b);
    task_defaults(L->task, b->vals);
    b->op = "baseline";
    if (L->cfg->baseline_source) {
        char hex[65];
        sha256_hex(L->cfg->baseline_source, strlen(L->cfg->baseline_source), hex);
        b->custom_source = L->cfg->baseline_source;
        b->params_key = ops_params_key(L->task, b->vals, hex);
        L->base_kernel = xstrdup(L->cfg->baseline_source);
        if (store_kernel_put(L->st, L->cfg->baseline_source, "source", 0, err))
            return -1;
    } else {
        b->params_key = ops_params_key(L->task, b->vals, NULL);
    }
    GenerationRecord g = {.run_id = L->run.id, .generation = 0};
    live_line(L, "baseline: compiling");
    if (decide_all(L, b, NULL, 1, &g, NULL, 0, err))
        return -1;
    if (!b->rec.id)
        return err_set(err, "the baseline was not evaluated (stopped)");
    if (strcmp(b->rec.status, "ok") != 0)
        return err_set(err, "the baseline (%s) failed: %s%s%s; see 'evoeng show %lld'", b->params_key,
                       b->rec.status, b->rec.error ? ": " : "", b->rec.error ? b->rec.error : "",
                       (long long)b->rec.id);
    L->base_latency = b->rec.latency_us;
    L->run.baseline_id = b->rec.id;
    L->sum->baseline_latency_us = L->base_latency;
    return store_run_update(L->st, &L->run, err);
}

static char *dupnull(const char *s)
{
    return s ? xstrdup(s) : NULL;
}

int evolve_run(Store *st, Task *task, const DeviceInfo *dev, const EvaluatorOps *ev, void *ev_ctx,
               const EvolveConfig *cfg, int64_t resume_run_id, EvolveSummary *summary, EvoErr *err)
{
    Loop L = {.st = st, .task = task, .dev = dev, .ev = ev, .ev_ctx = ev_ctx, .cfg = cfg, .sum = summary};
    memset(summary, 0, sizeof(*summary));
    summary->best_latency_us = NAN;
    L.np = task_nparams(task);
    L.t0 = time_now_ms();
    L.tty = isatty(STDERR_FILENO);
    int rc = -1;

    if (resume_run_id) {
        int got = store_run_get(st, resume_run_id, &L.run, err);
        if (got <= 0)
            return got == 0 ? err_set(err, "%s: no run %lld to resume", store_path(st), (long long)resume_run_id) : -1;
        if (strcmp(L.run.task_name, task_name(task)) != 0) {
            err_set(err, "run %lld optimizes task '%s', not '%s'", (long long)L.run.id, L.run.task_name,
                     task_name(task));
            goto out;
        }
        free(L.run.status);
        L.run.status = xstrdup("running");
        free(L.run.finished_at);
        L.run.finished_at = NULL;
        if (store_run_update(st, &L.run, err))
            goto out;
    } else {
        L.run.task_name = xstrdup(task_name(task));
        L.run.task_path = xstrdup(cfg->task_path ? cfg->task_path : task_path(task));
        L.run.task_json = xstrdup(task_json(task));
        L.run.config_json = xstrdup(cfg->config_json ? cfg->config_json : "{}");
        L.run.device_name = dupnull(cfg->device_name);
        L.run.device_arch = dupnull(cfg->device_arch);
        L.run.device_json = dupnull(cfg->device_json);
        L.run.nvrtc_version = dupnull(cfg->nvrtc_version);
        L.run.driver_version = dupnull(cfg->driver_version);
        L.run.seed = (int64_t)cfg->seed;
        L.run.strategy = xstrdup(cfg->strategy);
        L.run.generations_done = 0;
        if (store_run_insert(st, &L.run, err))
            goto out;
    }
    summary->run_id = L.run.id;
    if (cfg->llm) {
        /* Answers of an earlier call are not this run's to use; answers
         * recorded without a committed child are asked again. */
        llmop_discard(cfg->llm);
        if (resume_run_id && store_llm_requests_interrupt(st, L.run.id, err) < 0)
            goto fail_run;
    }

    if (setup_baseline(&L, err))
        goto fail_run;
    summary->baseline_latency_us = L.base_latency;

    int exhaustive = strcmp(cfg->strategy, "exhaustive") == 0;
    int total = exhaustive ? 1 << 30 : cfg->generations;
    /* The exhaustive cursor restarts at 0 on resume: what was evaluated is
     * skipped as a duplicate, so nothing is done twice. */
    for (int64_t gen = L.run.generations_done; gen <= total; gen++) {
        if (time_limit_hit(&L))
            break;
        int64_t before = summary->evaluated;
        if (run_generation(&L, gen, exhaustive ? 0 : total, err))
            goto fail_run;
        if (summary->interrupted)
            break;
        if (exhaustive && gen > 0 && summary->evaluated == before && L.exh_index >= (int64_t)task_space_size(task))
            break;
    }

    CandidateRecord *best = NULL;
    int nb = 0;
    if (store_candidate_list(st, L.run.id, STORE_SURVIVORS_BY_LATENCY, 1, &best, &nb, err) == 0 && nb) {
        summary->best_id = best[0].id;
        summary->best_latency_us = best[0].latency_us;
    }
    store_candidates_free(best, nb);
    free(L.run.status);
    L.run.status = xstrdup(summary->interrupted ? "interrupted" : "completed");
    L.run.finished_at = time_iso8601();
    if (store_run_update(st, &L.run, err))
        goto out;
    rc = 0;
    goto out;

fail_run:
    {
        EvoErr e2;
        free(L.run.status);
        L.run.status = xstrdup(cfg->stop && *cfg->stop ? "interrupted" : "failed");
        free(L.run.finished_at);
        L.run.finished_at = time_iso8601();
        store_run_update(st, &L.run, &e2);
    }
out:
    live_clear(&L);
    summary->wall_ms = time_now_ms() - L.t0;
    if (L.baseline.vals)
        child_free(&L, &L.baseline);
    for (int i = 0; i < PARENT_CACHE; i++)
        if (L.parents[i].vals)
            child_free(&L, &L.parents[i]);
    spec_free(&L);
    free(L.base_kernel);
    run_record_free(&L.run);
    return rc;
}

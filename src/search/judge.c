/*
 * judge: one candidate's life in the loop: a Child's storage for the
 * run, its two stages, its commit, and the cache of prepared parents its
 * A/B runs against. Both loops (stages.c, the generation-synchronous
 * one; steady.c, the steady-state one) take their children through here.
 * See judge.h.
 */
#include "search/judge.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void loop_child_init(Loop *L, Child *c)
{
    evolve_child_init(c, L->np);
}

void loop_child_free(Loop *L, Child *c)
{
    evolve_child_clear(c, L->ev, L->ev_ctx);
}

int loop_child_from_record(Loop *L, const CandidateRecord *r, Child *c, EvoErr *err)
{
    loop_child_init(L, c);
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


/* ---- the parent cache ------------------------------------------------ */

/* Parents kept prepared (compiled, loaded) for their children's A/B, with
 * a count of the children in flight that use each: the least recently
 * used unreferenced ones go once more than L->parent_cap are kept. The
 * loop's thread alone touches the cache; a GPU thread only uses a Child
 * it was handed, which stays put while referenced (each is allocated on
 * its own). */
typedef struct ParentEntry {
    Child   *c;
    int      refs;
    uint64_t used;
} ParentEntry;

struct ParentCache {
    ParentEntry *e;
    int          n, cap;
    uint64_t     tick;
};

static ParentEntry *parent_find(Loop *L, int64_t id)
{
    ParentCache *pc = L->pc;
    for (int i = 0; pc && i < pc->n; i++)
        if (pc->e[i].c->rec.id == id)
            return &pc->e[i];
    return NULL;
}

/* Drop least recently used unreferenced parents until at most keep stay. */
static void parent_trim(Loop *L, int keep)
{
    ParentCache *pc = L->pc;
    while (pc->n > keep) {
        int worst = -1;
        for (int i = 0; i < pc->n; i++)
            if (pc->e[i].refs == 0 && (worst < 0 || pc->e[i].used < pc->e[worst].used))
                worst = i;
        if (worst < 0)
            return;   /* every one is in use: the cache grows for now */
        loop_child_free(L, pc->e[worst].c);
        free(pc->e[worst].c);
        pc->e[worst] = pc->e[--pc->n];
    }
}

/* Add a prepared Child (taken over) to the cache, referenced refs times. */
static Child *parent_add(Loop *L, Child *c, int refs)
{
    ParentCache *pc = L->pc;
    if (!pc)
        pc = L->pc = xcalloc(1, sizeof(*pc));
    parent_trim(L, L->parent_cap > 0 ? L->parent_cap - 1 : 0);
    if (pc->n == pc->cap) {
        pc->cap = pc->cap ? pc->cap * 2 : 16;
        pc->e = xrealloc(pc->e, (size_t)pc->cap * sizeof(*pc->e));
    }
    pc->e[pc->n++] = (ParentEntry){.c = c, .refs = refs, .used = ++pc->tick};
    return c;
}

int loop_parent_get(Loop *L, int64_t parent_id, Child **parent, EvoErr *err)
{
    *parent = NULL;
    if (parent_id == 0)
        return 0;
    if (parent_id == L->baseline.rec.id) {
        *parent = &L->baseline;
        return 0;
    }
    ParentEntry *e = parent_find(L, parent_id);
    if (e) {
        e->refs++;
        e->used = ++L->pc->tick;
        *parent = e->c;
        return 0;
    }
    CandidateRecord pr;
    int got = store_candidate_get(L->st, parent_id, &pr, err);
    if (got != 1)
        return got == 0 ? err_set(err, "parent candidate %lld is missing", (long long)parent_id) : -1;
    Child *c = xcalloc(1, sizeof(*c));
    int prc = loop_child_from_record(L, &pr, c, err);
    candidate_record_free(&pr);
    if (prc) {
        loop_child_free(L, c);
        free(c);
        return -1;
    }
    *parent = parent_add(L, c, 1);
    return 0;
}

void loop_parent_put(Loop *L, Child *parent)
{
    ParentCache *pc = L->pc;
    for (int i = 0; parent && pc && i < pc->n; i++)
        if (pc->e[i].c == parent) {
            if (pc->e[i].refs > 0)
                pc->e[i].refs--;
            return;
        }
}

void loop_parent_offer(Loop *L, Child *c)
{
    if (!c->rec.id || c->rec.id == L->baseline.rec.id || parent_find(L, c->rec.id) || !c->priv)
        return;
    Child *k = xmalloc(sizeof(*k));
    *k = *c;
    k->op = "parent";
    memset(c, 0, sizeof(*c));
    parent_add(L, k, 0);
}

void loop_parents_free(Loop *L)
{
    ParentCache *pc = L->pc;
    if (!pc)
        return;
    for (int i = 0; i < pc->n; i++) {
        loop_child_free(L, pc->e[i].c);
        free(pc->e[i].c);
    }
    free(pc->e);
    free(pc);
    L->pc = NULL;
}

/* ---- stages and commits ---------------------------------------------- */

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

int loop_needs_full_gate(const Loop *L, const Child *c)
{
    /* an evolve run's random immigrants are compared with the baseline
     * like any child with its parent: reverted, they stop at stage A */
    return c->parent_id == 0 || strcmp(c->op, "baseline") == 0 || strcmp(c->op, "exhaustive") == 0 ||
           (strcmp(c->op, "random") == 0 && strcmp(L->cfg->strategy, "random") == 0);
}

int loop_stage_a(Loop *L, Child *c, Child *parent, int *next, EvoErr *err)
{
    int rc;
    *next = 0;
    c->judge_parent = parent;   /* the evaluator's watchdog scales with the parent's times */
    rc = L->ev->gate(L->ev_ctx, c, 1, err);
    c->judge_parent = NULL;
    if (rc != 0)
        return rc;
    if (!c->rec.status && parent) {
        double ratio = NAN, spread = NAN;
        if ((rc = L->ev->compare(L->ev_ctx, parent, c, &ratio, &spread, err)) != 0)
            return rc;
        if (!c->rec.status)
            c->rec.status = xstrdup("crashed");   /* an evaluator that judged nothing */
        if (strcmp(c->rec.status, "ok") == 0) {
            c->rec.ratio_to_parent = ratio;
            c->rec.ratio_spread = spread;
            c->rec.decision =
                xstrdup(evolve_should_revert(ratio, L->cfg->revert_threshold) ? "reverted" : "accepted");
            if (strcmp(c->rec.decision, "reverted") == 0 && !loop_needs_full_gate(L, c))
                goto decided;
        }
    }
    if (c->rec.status && strcmp(c->rec.status, "ok") != 0)
        goto decided;
    *next = 1;
    return L->ev->submit(L->ev_ctx, c, 2, err);
decided:
    if (L->ev->drop)
        L->ev->drop(L->ev_ctx, c);
    return 0;
}

/* Stage B of a child that passed stage A, on slot c->gpu: the gate on
 * every other shape, and the timing of a child with no parent. Sets its
 * decision. Returns 0, EVAL_RETRY (the child is as it was) or -1. Runs on
 * a GPU thread. */
int loop_stage_b(Loop *L, Child *c, EvoErr *err)
{
    char *ab_status = c->rec.status;   /* "ok" after an A/B, NULL without one */
    c->rec.status = NULL;
    int rc = L->ev->gate(L->ev_ctx, c, 2, err);
    if (rc == 0 && !c->rec.status && ab_status) {
        c->rec.status = ab_status;
        ab_status = NULL;
    }
    if (rc) {
        c->rec.status = ab_status;
        return rc;
    }
    free(ab_status);
    if (!c->rec.status && (rc = L->ev->time(L->ev_ctx, c, err)) != 0)
        return rc;
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

int loop_commit(Loop *L, Child *c, int64_t req_id, GenerationRecord *g, EvoErr *err)
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


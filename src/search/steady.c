/*
 * steady: the steady-state loop, the default mode of `run` (the
 * generation-synchronous one is evolve.c + stages.c, behind --sync).
 *
 * There is no barrier between generations. The loop thread keeps up to
 * `window` children in flight: whenever fewer are, it proposes the next
 * wave of children (a "generation": cfg->children of them, the first wave
 * the population's random members) from the population as it stands,
 * submits each (its benchmark-shape unit to the compile farm at priority
 * "next", its other units speculatively at the lowest), and commits
 * every child as soon as it is decided, in the order they finish. One
 * thread per GPU slot takes, whenever it is free, the oldest child whose
 * units are built: a child that passed stage A (its stage B) first, then
 * a child waiting for stage A. When nothing is ready it asks the farm to
 * build first what it would take next, and waits for a compilation to
 * finish (steady_slots.c). A child is judged exactly as in the
 * synchronous mode (loop_stage_a and loop_stage_b of judge.c: the staged
 * gate, the A/B
 * against its parent on the same GPU, the 2% rule); only the order of
 * work differs.
 *
 * Generations stay the store's unit: a child belongs to the wave that
 * proposed it, a wave's row in `generations` is written once its last
 * child is committed (in any order; at a stop, with what it has), and
 * generations_done counts the waves before the first incomplete one.
 * Stagnation counts commits since the best last improved (population.h).
 *
 * What it guarantees (README, "The loop"): no candidate is judged twice
 * (a proposal is checked against every committed key and every child in
 * flight); each candidate is committed in its own transaction when it is
 * decided, so kill -9 loses only the children in flight, never a commit;
 * `resume` goes on with new waves after the last one committed. It does
 * not promise the same proposals for the same seed: they depend on which
 * children were committed first. --sync does.
 */
#include "search/steady.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "msg.h"
#include "search/judge.h"
#include "search/llmgen.h"
#include "search/population.h"
#include "search/progress.h"
#include "search/propose.h"
#include "search/steady_slots.h"
#include "search/steady_state.h"

#define LLM_BATCH  8

static double now_ms(void)
{
    return time_now_ms();
}

/* A compilation finished somewhere (the evaluator's watch hook). */
static void on_compiled(void *arg)
{
    Steady *S = arg;
    pthread_mutex_lock(&S->lock);
    pthread_cond_broadcast(&S->work);
    pthread_mutex_unlock(&S->lock);
}

/* ---- waves -------------------------------------------------------------- */

static Wave *wave_of(Steady *S, int64_t gen)
{
    int64_t i = gen - S->first_wave;
    return i >= 0 && i < S->nwaves ? &S->waves[i] : NULL;
}

static Wave *wave_new(Steady *S, int64_t gen)
{
    S->waves = xrealloc(S->waves, (size_t)(S->nwaves + 1) * sizeof(Wave));
    Wave *w = &S->waves[S->nwaves++];
    memset(w, 0, sizeof(*w));
    w->gen = gen;
    w->t0 = now_ms();
    w->g = (GenerationRecord){.run_id = S->L->run.id, .generation = gen, .best_latency_us = NAN};
    return w;
}

/* The waves before the first one still open. */
static int64_t waves_done(const Steady *S)
{
    int64_t done = S->first_wave;
    for (int i = 0; i < S->nwaves && S->waves[i].closed; i++)
        done = S->waves[i].gen + 1;
    return done;
}

/* Write the row of every wave that has nothing left in flight (final:
 * also those cut short, with what they have). */
static int waves_close(Steady *S, int final, EvoErr *err)
{
    Loop *L = S->L;
    int total = strcmp(L->cfg->strategy, "exhaustive") == 0 ? 0 : L->cfg->generations;
    for (int i = 0; i < S->nwaves; i++) {
        Wave *w = &S->waves[i];
        if (w->closed || (!final && (w->open > 0 || w->llm > 0 || w->refill > 0)))
            continue;
        if (final && w->commits == 0)
            continue;   /* nothing of it reached the store */
        w->closed = 1;
        w->g.wall_ms = now_ms() - w->t0;
        if (loop_generation_close(L, &w->g, waves_done(S), L->cfg->quiet ? -1 : total, err))
            return -1;
    }
    /* resume goes on after the last wave with a commit, complete or not */
    for (int i = S->nwaves - 1; final && i >= 0; i--) {
        if (!S->waves[i].commits)
            continue;
        int64_t after = S->waves[i].gen + 1;
        if (after <= L->run.generations_done)
            break;
        L->run.generations_done = after;
        L->sum->generations_done = (int)after;
        return store_run_update(L->st, &L->run, err);
    }
    return 0;
}

/* ---- flights ------------------------------------------------------------ */

/* Let kid go: what of it is queued for compilation is cancelled, and
 * while one of its compilations still runs it waits among the graves
 * (release would block the loop thread until it ends). */
static void bury(Steady *S, Child *kid)
{
    Loop *L = S->L;
    int busy = kid->priv && L->ev->busy && L->ev->busy(L->ev_ctx, kid);
    if (busy && L->ev->drop) {   /* cancel what no thread has started */
        L->ev->drop(L->ev_ctx, kid);
        busy = L->ev->busy(L->ev_ctx, kid);
    }
    if (busy) {
        Child *g = xmalloc(sizeof(*g));
        *g = *kid;
        memset(kid, 0, sizeof(*kid));
        S->graves = xrealloc(S->graves, (size_t)(S->ngraves + 1) * sizeof(*S->graves));
        S->graves[S->ngraves++] = g;
        return;
    }
    loop_child_free(L, kid);
}

/* Release the graves whose compilations have ended (all of them, waiting,
 * with wait). */
static void graves_sweep(Steady *S, int wait)
{
    Loop *L = S->L;
    int k = 0;
    for (int i = 0; i < S->ngraves; i++) {
        Child *g = S->graves[i];
        if (!wait && L->ev->busy(L->ev_ctx, g)) {
            S->graves[k++] = g;
            continue;
        }
        loop_child_free(L, g);
        free(g);
    }
    S->ngraves = k;
}

static int inflight(const Steady *S)
{
    return S->nf;
}

/* Under no lock (the loop thread): add kid (taken over) to the flights,
 * submitted, its parent prepared. */
static int flight_add(Steady *S, Child *kid, int64_t gen, int64_t req_id, EvoErr *err)
{
    Loop *L = S->L;
    Flight *x = xcalloc(1, sizeof(*x));
    x->kid = *kid;
    memset(kid, 0, sizeof(*kid));
    x->wave = gen;
    x->req_id = req_id;
    x->stage = 1;
    if (L->ev->submit(L->ev_ctx, &x->kid, 1, err) ||
        (!x->kid.rec.status && loop_parent_get(L, x->kid.parent_id, &x->parent, err))) {
        loop_child_free(L, &x->kid);
        free(x);
        return -1;
    }
    /* a child that goes through the full gate whatever its A/B says has
     * its other units queued speculatively: built while the farm has
     * nothing more urgent, promoted if it passes stage A, cancelled if it
     * does not (for the others, four in five are reverted on an H200:
     * their units would mostly be wasted CPU) */
    if (!x->kid.rec.status && loop_needs_full_gate(L, &x->kid) && L->ev->submit(L->ev_ctx, &x->kid, 3, err)) {
        loop_parent_put(L, x->parent);
        loop_child_free(L, &x->kid);
        free(x);
        return -1;
    }
    pthread_mutex_lock(&S->lock);
    x->state = x->kid.rec.status ? F_DONE : F_QUEUED_A;   /* invalid: decided at once */
    if (S->nf == S->capf) {
        S->capf = S->capf ? S->capf * 2 : 64;
        S->f = xrealloc(S->f, (size_t)S->capf * sizeof(*S->f));
    }
    S->f[S->nf++] = x;
    pthread_cond_broadcast(&S->work);
    pthread_mutex_unlock(&S->lock);
    Wave *w = wave_of(S, gen);
    if (w)
        w->open++;
    return 0;
}

/* The children in flight as committed records (their keys taken), for
 * the proposals' duplicate check: L->pending. */
static CandidateRecord *pending_keys(Steady *S, int *n)
{
    pthread_mutex_lock(&S->lock);
    CandidateRecord *p = xcalloc((size_t)S->nf + 1, sizeof(*p));
    for (int i = 0; i < S->nf; i++) {
        candidate_record_init(&p[i]);
        p[i].params_key = xstrdup(S->f[i]->kid.params_key);
        p[i].params_json = task_params_json(S->L->task, S->f[i]->kid.vals);
    }
    *n = S->nf;
    pthread_mutex_unlock(&S->lock);
    return p;
}

/* Is c, just committed, a survivor: a parent, a population member? */
static int survivor(const Child *c)
{
    return c->rec.status && strcmp(c->rec.status, "ok") == 0 && c->rec.decision &&
           (strcmp(c->rec.decision, "accepted") == 0 || strcmp(c->rec.decision, "baseline") == 0) &&
           c->rec.gate_stage == GATE_STAGE_FULL;
}

/* Commit flight x (decided) and let it go. */
static int flight_commit(Steady *S, Flight *x, EvoErr *err)
{
    Loop *L = S->L;
    Wave *w = wave_of(S, x->wave);
    GenerationRecord scratch = {.run_id = L->run.id, .generation = x->wave, .best_latency_us = NAN};
    int rc = x->rc ? -1 : loop_commit(L, &x->kid, x->req_id, w ? &w->g : &scratch, err);
    if (x->rc)
        *err = x->err;
    if (rc == 0) {
        if (w) {
            w->open--;
            w->commits++;
        }
        loop_live_line(L, "gen %lld: %d in flight, %d committed (%s)", (long long)x->wave, inflight(S),
                       L->commits, x->kid.params_key);
        if (survivor(&x->kid)) {
            if (!(L->best_latency > 0) || x->kid.rec.latency_us < L->best_latency) {
                L->best_latency = x->kid.rec.latency_us;
                L->best_commit = L->commits;
            }
            loop_parent_offer(L, &x->kid);   /* its modules stay loaded for its children */
        }
    }
    loop_parent_put(L, x->parent);
    bury(S, &x->kid);
    free(x);
    return rc;
}

/* Take the decided flights out (under the lock), then commit them. With
 * drop, the queued ones go too, uncommitted (a stop): their proposals
 * were never judged. Returns 0 or -1. */
static int harvest(Steady *S, int drop, EvoErr *err)
{
    pthread_mutex_lock(&S->lock);
    Flight **out = xcalloc((size_t)S->nf + 1, sizeof(*out));
    int n = 0, k = 0;
    for (int i = 0; i < S->nf; i++) {
        Flight *x = S->f[i];
        if (x->state == F_DONE || (drop && (x->state == F_QUEUED_A || x->state == F_QUEUED_B)))
            out[n++] = x;
        else
            S->f[k++] = x;
    }
    S->nf = k;
    pthread_mutex_unlock(&S->lock);
    int rc = 0;
    for (int i = 0; i < n; i++) {
        Flight *x = out[i];
        if (x->state == F_DONE) {
            if (rc == 0)
                rc = flight_commit(S, x, err);
            else {
                loop_parent_put(S->L, x->parent);
                bury(S, &x->kid);
                free(x);
            }
            continue;
        }
        Wave *w = wave_of(S, x->wave);
        if (w)
            w->open--;
        S->dropped++;
        loop_parent_put(S->L, x->parent);
        bury(S, &x->kid);   /* its queued compilations are cancelled */
        free(x);
    }
    free(out);
    return rc;
}

/* ---- proposals ---------------------------------------------------------- */

/* The children a generation is proposed with: the population's random
 * members (generation 0), else cfg->children. */
static int wave_size(const Loop *L, int64_t gen)
{
    return gen == 0 ? L->cfg->population - 1 : L->cfg->children;
}

/* Propose the next wave from the population as it stands and put its
 * children in flight; with refill, the children a kill cut from that
 * (resumed) wave instead. Sets S->proposing = 0 when no more will come
 * (the generations are done, the valid space is exhausted). 0 or -1. */
static int propose_wave(Steady *S, Wave *refill, EvoErr *err)
{
    Loop *L = S->L;
    const EvolveConfig *cfg = L->cfg;
    int exhaustive = strcmp(cfg->strategy, "exhaustive") == 0;
    int64_t gen = refill ? refill->gen : S->next_wave;
    if (!refill && !exhaustive && gen > cfg->generations) {
        S->proposing = 0;
        return 0;
    }
    CandidateRecord *pop = NULL;
    int npop = 0;
    if (gen > 0 && loop_load_population(L, gen, &pop, &npop, err))
        return -1;
    int nllm = refill ? 0 : loop_llm_slots(L, gen, npop, err);
    if (nllm < 0) {
        store_candidates_free(pop, npop);
        return -1;
    }
    int want = refill ? refill->refill : wave_size(L, gen) - nllm;
    Child *kids = xcalloc((size_t)want + 1, sizeof(Child));
    int *done = xcalloc((size_t)want + 1, sizeof(int));
    int n = 0, rc = -1, exhausted = 0, npend = 0;
    Wave *w = refill;
    if (w) {
        w->refill = 0;
    } else {
        w = wave_new(S, gen);
        S->next_wave++;
    }
    if (nllm > 0) {
        if (loop_llm_submit_generation(L, gen, pop, npop, nllm, err))
            goto out;
        w->llm = nllm;
    }
    CandidateRecord *pend = pending_keys(S, &npend);
    L->pending = pend;
    L->npending = npend;
    L->npending_surv = 0;
    n = want > 0 ? loop_propose(L, gen, pop, npop, kids, want, done, &exhausted, err) : 0;
    L->pending = NULL;
    L->npending = 0;
    store_candidates_free(pend, npend);
    if (n < 0) {
        n = 0;
        goto out;
    }
    loop_report_proposals(L, gen, n, want, exhausted);
    if (exhausted || (exhaustive && n == 0 && L->exh_index >= (int64_t)task_space_size(L->task)))
        S->proposing = 0;
    for (int i = 0; i < n; i++)
        if (!done[i] && flight_add(S, &kids[i], gen, 0, err))
            goto out;
    rc = 0;
out:
    for (int i = 0; i < n; i++)
        loop_child_free(L, &kids[i]);
    free(kids);
    free(done);
    store_candidates_free(pop, npop);
    return rc;
}

/* LLM answers that came in: their children join the flights (in their
 * request's wave). wait_ms > 0: wait that long for one. 0 or -1. */
static int take_llm(Steady *S, int wait, EvoErr *err)
{
    Loop *L = S->L;
    LlmOp *op = L->cfg->llm;
    if (!op || llmop_pending(op) == 0)
        return 0;
    LlmOpAnswer ans[LLM_BATCH];
    int n = llmop_collect(op, wait, ans, LLM_BATCH);
    for (int i = 0; i < n; i++) {
        Wave *w = wave_of(S, ans[i].generation);
        if (w && w->llm > 0)
            w->llm--;
    }
    if (n <= 0)
        return 0;
    Child kids[LLM_BATCH];
    int64_t req_ids[LLM_BATCH];
    int64_t gens[LLM_BATCH];
    for (int i = 0; i < n; i++)
        gens[i] = ans[i].generation;
    int npend = 0;
    CandidateRecord *pend = pending_keys(S, &npend);
    L->pending = pend;
    L->npending = npend;
    L->npending_surv = 0;
    memset(kids, 0, sizeof(kids));
    int rc = 0;
    /* one answer at a time: each child keeps its own request's wave */
    for (int i = 0; i < n && rc == 0; i++) {
        int nk = loop_llm_children(L, gens[i], &ans[i], 1, kids, req_ids, err);
        if (nk < 0)
            rc = -1;
        for (int k = 0; k < nk; k++)
            if (rc == 0 && flight_add(S, &kids[k], gens[i], req_ids[k], err))
                rc = -1;
        for (int k = 0; k < (nk > 0 ? nk : 0); k++)
            loop_child_free(L, &kids[k]);
    }
    for (int i = 0; i < n && rc; i++)   /* results of answers not reached were not freed */
        if (ans[i].res)
            llm_result_free(&ans[i].res);
    L->pending = NULL;
    L->npending = 0;
    store_candidates_free(pend, npend);
    return rc;
}

/* ---- the loop ----------------------------------------------------------- */

/* Where a resumed run goes on. The waves a kill cut short (fewer children
 * committed than a wave holds) are refilled first: their missing children
 * are proposed again, in the same generation, from the population as it
 * stands, so a resumed run evaluates as many children as one never
 * stopped; then new waves follow the last one with a commit. Stagnation
 * goes on from the commits since the best. */
static int resume_point(Steady *S, EvoErr *err)
{
    Loop *L = S->L;
    CandidateRecord *all = NULL;
    int n = 0;
    if (store_candidate_list(L->st, L->run.id, STORE_ALL_BY_ID, 0, &all, &n, err))
        return -1;
    int64_t last = -1, best_id = 0;
    double best = INFINITY;
    for (int i = 0; i < n; i++) {
        if (all[i].id != L->baseline.rec.id && all[i].generation > last)
            last = all[i].generation;
        int surv = strcmp(all[i].status, "ok") == 0 && all[i].gate_stage == GATE_STAGE_FULL &&
                   (strcmp(all[i].decision, "accepted") == 0 || strcmp(all[i].decision, "baseline") == 0);
        if (surv && all[i].latency_us < best) {
            best = all[i].latency_us;
            best_id = all[i].id;
        }
    }
    int after = 0;
    for (int i = 0; i < n; i++)
        after += all[i].id > best_id;
    L->best_commit = -after;
    L->best_latency = isfinite(best) ? best : 0;
    /* each generation's commits so far (the baseline apart) */
    GenerationRecord *g = xcalloc((size_t)last + 2, sizeof(*g));
    for (int64_t gen = 0; gen <= last; gen++)
        g[gen] = (GenerationRecord){.run_id = L->run.id, .generation = gen, .best_latency_us = NAN};
    for (int i = 0; i < n; i++) {
        if (all[i].id == L->baseline.rec.id || all[i].generation < 0 || all[i].generation > last)
            continue;
        GenerationRecord *x = &g[all[i].generation];
        int ok = strcmp(all[i].status, "ok") == 0;
        x->evaluated++;
        x->valid += ok;
        x->failed += !ok;
        x->accepted += strcmp(all[i].decision, "accepted") == 0;
        x->reverted += strcmp(all[i].decision, "reverted") == 0;
    }
    store_candidates_free(all, n);
    int64_t first = last + 1;
    for (int64_t gen = 0; gen <= last && first > last; gen++)
        if (g[gen].evaluated < wave_size(L, gen))
            first = gen;
    S->first_wave = first;
    S->next_wave = last + 1;
    GenerationRecord *rows = NULL;
    int nrows = 0, rc = first <= last ? store_generation_list(L->st, L->run.id, &rows, &nrows, err) : 0;
    for (int64_t gen = first; gen <= last && rc == 0; gen++) {
        Wave *w = wave_new(S, gen);
        w->g = g[gen];
        w->commits = (int)g[gen].evaluated;
        w->refill = wave_size(L, gen) - w->commits;
        if (w->refill > 0)
            continue;
        /* complete before the kill: its row, unless the kill came first */
        w->refill = 0;
        w->closed = 1;
        int have = 0;
        for (int r = 0; r < nrows; r++)
            have |= rows[r].generation == gen;
        if (!have)
            rc = loop_generation_close(L, &w->g, 0, -1, err);
    }
    for (int r = 0; r < nrows; r++)
        free(rows[r].finished_at);
    free(rows);
    free(g);
    return rc;
}

/* The window: enough children in flight that every compile thread has a
 * unit to build and every GPU a child ready, in proposal waves. */
static int window_of(const Loop *L, int nslots)
{
    if (L->cfg->in_flight > 0)
        return L->cfg->in_flight;
    int lanes = L->ev->lanes ? L->ev->lanes(L->ev_ctx) : 2 * nslots;
    int w = 2 * lanes + 4 * nslots;
    int floor = L->cfg->children + nslots;
    return w > floor ? w : floor;
}

/* Hold the next wave back for the time limit? (taper.h) */
static int deadline_near(Steady *S)
{
    const Loop *L = S->L;
    if (!(L->cfg->time_limit_s > 0))
        return 0;
    return taper_hold(&S->taper, L->cfg->time_limit_s * 1000.0 - (now_ms() - L->t0), inflight(S));
}

/* Fill the window: first the children a kill cut from resumed waves,
 * then new waves. deadline_near is asked before each wave: a run that may
 * propose again near its limit tops the flights up to what it can still
 * judge, not to the window. 0 or -1. */
static int propose_more(Steady *S, EvoErr *err)
{
    const Loop *L = S->L;
    taper_sample(&S->taper, now_ms(), L->commits);
    for (int i = 0; i < S->nwaves && !S->draining && inflight(S) < S->window && !deadline_near(S); i++)
        if (S->waves[i].refill > 0 && propose_wave(S, &S->waves[i], err))
            return -1;
    while (!S->draining && S->proposing && inflight(S) < S->window && !deadline_near(S)) {
        if (propose_wave(S, NULL, err))
            return -1;
        if (L->cfg->stop && *L->cfg->stop)
            break;
    }
    return 0;
}

/* Anything on a GPU or waiting for one that the drain lets finish? */
static int busy(Steady *S)
{
    pthread_mutex_lock(&S->lock);
    int b = 0;
    for (int i = 0; i < S->nf && !b; i++)
        b = S->f[i]->state == F_RUNNING || S->f[i]->state == F_DONE ||
            (S->f[i]->state == F_QUEUED_B && S->draining < 2) || (S->f[i]->state == F_QUEUED_A && !S->draining);
    pthread_mutex_unlock(&S->lock);
    return b;
}

/* EVOENG_STEADY_DEBUG: at most once a second, the children in flight by
 * state and the loop thread's time in harvest, close and propose. */
static void debug_line(Steady *S, double t_h, double t_c, double t_p)
{
    Loop *L = S->L;
    static double last;
    if (now_ms() - last > 1000) {
        last = now_ms();
        int h[8] = {0};
        pthread_mutex_lock(&S->lock);
        for (int i = 0; i < S->nf; i++) {
            Flight *x = S->f[i];
            int r = x->state == F_QUEUED_A || x->state == F_QUEUED_B ? L->ev->ready(L->ev_ctx, &x->kid, x->stage) : 0;
            h[x->state * 2 + r]++;
        }
        pthread_mutex_unlock(&S->lock);
        fprintf(stderr, "dbg nf %d: A wait %d ready %d | run %d | B wait %d ready %d | done %d; harvest %.0f close %.0f propose %.0f ms\n", S->nf, h[0], h[1], h[2], h[4], h[5], h[6], t_h, t_c, t_p);
    }
}

/* The slots' busy and idle seconds into the summary; with
 * EVOENG_STEADY_DEBUG, the stages' count and mean time over the slots. */
static void slots_summary(const Steady *S, EvolveSummary *sum)
{
    for (int i = 0; i < S->nslots && i < 8; i++)
        sum->slot_busy_s[i] = S->busy_s[i];
    sum->slot_idle_s = S->idle_s;
    if (!getenv("EVOENG_STEADY_DEBUG"))
        return;
    fprintf(stderr, "dbg slots: stage A %d, %.1f ms each; stage B %d, %.1f ms each; idle %.1f s\n", S->stage_n[0],
            S->stage_n[0] ? 1000 * S->stage_s[0] / S->stage_n[0] : 0.0, S->stage_n[1],
            S->stage_n[1] ? 1000 * S->stage_s[1] / S->stage_n[1] : 0.0, S->idle_s);
}

int loop_steady(Loop *L, EvoErr *err)
{
    Steady S = {.L = L, .proposing = 1};
    pthread_mutex_init(&S.lock, NULL);
    pthread_cond_init(&S.work, NULL);
    pthread_cond_init(&S.done, NULL);
    S.nslots = L->ev->slots ? L->ev->slots(L->ev_ctx) : 1;
    S.busy_s = xcalloc((size_t)S.nslots + 1, sizeof(double));
    S.window = window_of(L, S.nslots);
    L->sum->in_flight = S.window;
    taper_init(&S.taper, L->commits, S.window);
    L->sum->slots = S.nslots;
    int rc = -1;
    if (L->resumed) {
        if (resume_point(&S, err))
            goto out;
    } else {
        L->best_latency = L->base_latency;   /* the baseline is the best so far */
        L->best_commit = L->commits;
    }
    if (L->ev->watch)
        L->ev->watch(L->ev_ctx, on_compiled, &S);
    if (steady_slots_start(&S, err))
        goto out_threads;
    double t_h = 0, t_p = 0, t_w = 0, t_c = 0;
    for (;;) {
        double q0 = now_ms();
        if (harvest(&S, S.draining == 2, err))
            goto out_threads;
        graves_sweep(&S, 0);
        double q1 = now_ms();
        t_h += q1 - q0;
        if (waves_close(&S, 0, err))
            goto out_threads;
        t_c += now_ms() - q1;
        if (!S.draining && loop_time_limit_hit(L)) {
            pthread_mutex_lock(&S.lock);   /* the GPU threads read it */
            S.draining = L->cfg->stop && *L->cfg->stop ? 2 : 1;
            pthread_cond_broadcast(&S.work);
            pthread_mutex_unlock(&S.lock);
        }
        double q2 = now_ms();
        if (propose_more(&S, err))
            goto out_threads;
        t_p += now_ms() - q2;
        if (!S.draining && take_llm(&S, 0, err))
            goto out_threads;
        int llm_left = L->cfg->llm && !S.draining && llmop_pending(L->cfg->llm) > 0;
        pthread_mutex_lock(&S.lock);
        int alive = S.running;
        pthread_mutex_unlock(&S.lock);
        if (alive == 0) {
            if (S.lost && !(L->cfg->stop && *L->cfg->stop))
                err_set(err, "every GPU of the run was lost");
            else
                rc = 0;
            break;
        }
        if (!busy(&S) && !llm_left && (S.draining || !S.proposing) && (S.draining == 1 || inflight(&S) == 0)) {
            rc = 0;
            break;
        }
        if (getenv("EVOENG_STEADY_DEBUG"))
            debug_line(&S, t_h, t_c, t_p);
        pthread_mutex_lock(&S.lock);
        int any_done = 0;
        for (int i = 0; i < S.nf && !any_done; i++)
            any_done = S.f[i]->state == F_DONE;
        if (!any_done) {
            double q3 = now_ms();
            steady_wait_ms(&S.done, &S.lock, llm_left ? 20 : POLL_MS);
            t_w += now_ms() - q3;
        }
        pthread_mutex_unlock(&S.lock);
    }
    if (rc == 0 || S.lost) {
        steady_slots_stop(&S);
        EvoErr e2;
        int h = harvest(&S, 1, rc == 0 ? err : &e2);   /* the decided ones are committed; the rest go */
        if (rc == 0 && h)
            rc = -1;
        goto closing;
    }
out_threads:
    steady_slots_stop(&S);
    {
        EvoErr e2;
        harvest(&S, 1, &e2);
    }
closing:
    if (L->ev->watch)
        L->ev->watch(L->ev_ctx, NULL, NULL);
    if (L->cfg->llm && llmop_pending(L->cfg->llm) > 0)
        llmop_discard(L->cfg->llm);
    {
        EvoErr e3;
        if (waves_close(&S, 1, rc == 0 ? err : &e3) && rc == 0)
            rc = -1;
    }
    if (S.draining)
        L->sum->interrupted = 1;
    L->sum->dropped = S.dropped;
    L->sum->held_s = S.taper.held_ms / 1000.0;
    slots_summary(&S, L->sum);
out:
    graves_sweep(&S, 1);
    free(S.graves);
    free(S.busy_s);
    free(S.waves);
    free(S.f);
    pthread_cond_destroy(&S.done);
    pthread_cond_destroy(&S.work);
    pthread_mutex_destroy(&S.lock);
    return rc;
}

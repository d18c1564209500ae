/*
 * stages: the generation-synchronous mode's batch of children through the
 * pipeline (stage A for all, then stage B for those that go on), their
 * commits in proposal order, and the speculation on the next generation.
 * See stages.h and evolve.h.
 */
#include "search/stages.h"

#include <pthread.h>

#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "compile/nvrtc.h"
#include "search/judge.h"
#include "search/population.h"
#include "search/progress.h"
#include "search/propose.h"

/* One stage of a batch, spread over the evaluator's slots: a thread per
 * slot takes the next queued child, runs the stage on it and marks it
 * done; the main thread waits for the children in order and commits
 * them, so commits (and the store) stay on one thread and in a fixed
 * order. A slot whose GPU is lost (EVAL_RETRY) puts its child back and
 * its thread ends; the others take it. */
typedef struct Job {
    Child *kid, *parent;   /* parent: from the parent cache (put back when the job goes), or a batch child */
    Child *pend[2];      /* speculative: parent, second parent still in stage B (NULL: committed) */
    int    cached;       /* parent came from loop_parent_get */
    int    state;        /* JOB_* */
    int    next;         /* stage A: goes on to stage B */
    int    rc;
    EvoErr err;
} Job;

#define JOB_QUEUED  0
#define JOB_RUNNING 1
#define JOB_DONE    2
#define JOB_DROPPED 3   /* queued when the stage ended */
#define JOB_SKIP    4   /* a speculative child not judged ahead */
#define JOB_WAIT    5   /* a speculative child waiting for its parents' stage B */

/* ---- speculation ------------------------------------------------------ */

void loop_spec_free(Loop *L)
{
    for (int i = 0; i < L->nspec; i++)
        loop_child_free(L, &L->spec[i]);
    for (int i = 0; L->spec_jobs && i < L->nspec; i++)
        if (L->spec_jobs[i].cached)
            loop_parent_put(L, L->spec_jobs[i].parent);
    free(L->spec);
    free(L->spec_jobs);
    L->spec = NULL;
    L->spec_jobs = NULL;
    L->nspec = 0;
}

/* The same proposal: what the generation would judge is what was judged. */
static int same_proposal(const Child *a, const Child *b)
{
    return a->vals && b->vals && strcmp(a->params_key, b->params_key) == 0 && strcmp(a->op, b->op) == 0 &&
           a->parent_id == b->parent_id && a->parent2_id == b->parent2_id &&
           (a->custom_source == b->custom_source ||
            (a->custom_source && b->custom_source && strcmp(a->custom_source, b->custom_source) == 0));
}

int loop_spec_adopt(Loop *L, Child *kids, const int *done, int n, int *pre)
{
    int used = 0;
    for (int i = 0; i < n && L->spec_jobs; i++) {
        if (done && done[i])
            continue;
        for (int k = 0; k < L->nspec && !pre[i]; k++) {
            Job *j = &L->spec_jobs[k];
            if (j->state != JOB_DONE || j->rc != 0 || !same_proposal(&L->spec[k], &kids[i]))
                continue;
            loop_child_free(L, &kids[i]);
            kids[i] = L->spec[k];
            memset(&L->spec[k], 0, sizeof(Child));
            pre[i] = j->next ? 2 : 1;
            used++;
        }
    }
    loop_spec_free(L);
    L->sum->ahead_used += used;
    return used;
}

static int by_latency(const void *a, const void *b)
{
    const CandidateRecord *x = a, *y = b;
    return x->latency_us < y->latency_us ? -1 : x->latency_us > y->latency_us;
}

/* Will a child in stage B survive if it passes? An accepted one, or one
 * with no parent (timed in stage B); not a reverted one that needs the
 * full gate anyway. */
static int will_survive(const Child *c)
{
    return !c->rec.decision || strcmp(c->rec.decision, "accepted") == 0;
}

/* While generation gen's stage B runs (the GPU waiting for the other
 * units of its would-be-accepted children), propose generation gen + 1 as
 * if every one of those children passes, queue the compilation of the
 * proposals' benchmark-shape units, and queue as L->spec_jobs the stage A
 * of those whose parents are (or, once committed, will be) survivors:
 * run_stage() judges them while the GPU would wait. Generation gen + 1 is
 * proposed again from the committed state and takes over the children it
 * proposes that were judged ahead (loop_spec_adopt); the others' units are
 * in the compile cache. A wrong guess costs CPU and GPU time, never a
 * different proposal. Best effort: errors only mean no speculation. */
static void speculate(Loop *L, int64_t gen, Child *kids, const int *later, int nlater)
{
    const EvolveConfig *cfg = L->cfg;
    loop_spec_free(L);
    /* Without a stage B to wait for, the next generation starts at once;
     * without the compile cache, nothing would be kept. */
    if (nlater == 0 || !nvrtc_cache_enabled() || strcmp(cfg->strategy, "evolve") != 0 ||
        gen + 1 > cfg->generations || cfg->children <= 0 || (cfg->stop && *cfg->stop) || loop_time_limit_hit(L))
        return;
    EvoErr e;
    CandidateRecord *surv = NULL;
    int ns = 0;
    if (store_candidate_list(L->st, L->run.id, STORE_SURVIVORS_BY_LATENCY, 0, &surv, &ns, &e))
        return;
    /* the survivors as they will be once every child in stage B passes */
    CandidateRecord *all = xcalloc((size_t)(ns + nlater) + 1, sizeof(*all));
    int m = 0;
    for (int i = 0; i < ns; i++)
        all[m++] = surv[i];
    free(surv);
    for (int k = 0; k < nlater; k++) {
        const Child *c = &kids[later[k]];
        if (!will_survive(c))
            continue;
        CandidateRecord *r = &all[m++];
        candidate_record_init(r);
        r->id = -1 - k;
        r->generation = gen;
        r->operator = xstrdup(c->op);
        r->status = xstrdup("ok");
        r->decision = xstrdup("accepted");
        r->params_json = task_params_json(L->task, c->vals);
        r->params_key = xstrdup(c->params_key);
        /* a child with no parent is timed only in stage B: last, for now */
        r->latency_us = c->rec.decision && c->rec.latency_us > 0 ? c->rec.latency_us : 1e30;
    }
    /* every child still in stage B, as a committed one (its key is taken);
     * those that will survive first, for the niches' held values */
    CandidateRecord *pend = xcalloc((size_t)nlater + 1, sizeof(*pend));
    int np = 0, nsurv = 0;
    for (int pass = 0; pass < 2; pass++)
        for (int k = 0; k < nlater; k++) {
            const Child *c = &kids[later[k]];
            if (will_survive(c) != (pass == 0))
                continue;
            candidate_record_init(&pend[np]);
            pend[np].params_key = xstrdup(c->params_key);
            pend[np++].params_json = task_params_json(L->task, c->vals);
            nsurv += pass == 0;
        }
    qsort(all, (size_t)m, sizeof(*all), by_latency);
    CandidateRecord *pop = NULL;
    int keep = 0;
    loop_population_pick(L, all, m, &pop, &keep);
    L->spec = xcalloc((size_t)cfg->children + 1, sizeof(Child));
    int *done = xcalloc((size_t)cfg->children + 1, sizeof(int));
    L->pending = pend;
    L->npending = nlater;
    L->npending_surv = nsurv;
    int n = loop_propose(L, gen + 1, pop, keep, L->spec, cfg->children, done, NULL, &e);
    L->pending = NULL;
    L->npending = L->npending_surv = 0;
    L->nspec = n > 0 ? n : 0;
    L->spec_gen = gen + 1;
    for (int i = 0; i < L->nspec; i++)
        if (!done[i] && L->ev->submit(L->ev_ctx, &L->spec[i], 0, &e))
            break;
    /* Those whose parent is committed (not one of this generation's
     * children still in stage B) are judged ahead through stage A while
     * the GPU would otherwise wait: the gate and the A/B are the ones the
     * generation would run, on the same parent. */
    L->spec_jobs = xcalloc((size_t)L->nspec + 1, sizeof(Job));
    for (int i = 0; i < L->nspec; i++) {
        Job *j = &L->spec_jobs[i];
        Child *c = &L->spec[i];
        j->kid = c;
        j->state = JOB_SKIP;
        if (done[i] || c->rec.status || c->parent_id == 0)
            continue;
        /* a parent still in stage B (a record id -1 - k above): judged
         * once it is committed (spec_release) */
        if (c->parent_id < 0 && -1 - c->parent_id < nlater)
            j->pend[0] = &kids[later[-1 - c->parent_id]];
        if (c->parent2_id < 0 && -1 - c->parent2_id < nlater)
            j->pend[1] = &kids[later[-1 - c->parent2_id]];
        if ((c->parent_id < 0 && !j->pend[0]) || (c->parent2_id < 0 && !j->pend[1]))
            continue;
        if (!j->pend[0] && loop_parent_get(L, c->parent_id, &j->parent, &e))
            continue;
        j->cached = !j->pend[0];
        j->state = j->pend[0] || j->pend[1] ? JOB_WAIT : JOB_QUEUED;
    }
    free(done);
    store_candidates_free(pop, keep);
    store_candidates_free(pend, nlater);
}

/* ---- GPU threads ------------------------------------------------------ */

typedef struct Dispatch {
    Loop           *L;
    Job            *jobs;
    int             n, stage;
    Job            *spec;         /* stage 2: speculative children to judge through stage A meanwhile */
    int             nspec;
    int             running;      /* threads still taking jobs */
    int             time_limit;   /* stop taking jobs at the time limit too */
    pthread_mutex_t lock;
    pthread_cond_t  cv;
} Dispatch;

typedef struct GpuThread {
    Dispatch *d;
    int       slot;
    pthread_t tid;
} GpuThread;

/* Past the time limit: no more work ahead. */
static int time_up(const Dispatch *d)
{
    const EvolveConfig *cfg = d->L->cfg;
    return cfg->time_limit_s > 0 && (time_now_ms() - d->L->t0) / 1000.0 >= cfg->time_limit_s;
}

/* Should the threads stop taking new children? */
static int stop_now(const Dispatch *d)
{
    const EvolveConfig *cfg = d->L->cfg;
    return (cfg->stop && *cfg->stop) || (d->time_limit && time_up(d));
}

/* The next job for a free GPU thread (under d->lock): a queued child whose
 * stage can start without waiting for compilation; else, while the
 * batch's children wait for theirs, a speculative child's stage A; else
 * the first queued child (the thread waits for its compilation). *spec is
 * 1 for a speculative job. NULL when nothing is queued. */
static Job *next_job(Dispatch *d, int *busy, int *spec)
{
    const EvaluatorOps *ev = d->L->ev;
    Job *first = NULL;
    *busy = *spec = 0;
    for (int i = 0; i < d->n; i++) {
        Job *x = &d->jobs[i];
        *busy |= x->state == JOB_RUNNING;
        if (x->state != JOB_QUEUED)
            continue;
        if (!first)
            first = x;
        if (d->stage != 2 || !ev->ready || ev->ready(d->L->ev_ctx, x->kid, 2))
            return x;
    }
    if ((first || *busy) && !time_up(d))
        for (int i = 0; i < d->nspec; i++)
            if (d->spec[i].state == JOB_QUEUED) {
                *spec = 1;
                return &d->spec[i];
            }
    return first;
}

static void *gpu_thread(void *arg)
{
    GpuThread *t = arg;
    Dispatch *d = t->d;
    pthread_mutex_lock(&d->lock);
    for (;;) {
        int busy = 0, spec = 0;
        Job *j = next_job(d, &busy, &spec);
        if (stop_now(d) || (!j && !busy))
            break;
        if (!j) {                       /* a job may come back from a lost slot */
            pthread_cond_wait(&d->cv, &d->lock);
            continue;
        }
        j->state = JOB_RUNNING;
        pthread_mutex_unlock(&d->lock);
        j->kid->gpu = t->slot;
        int rc = d->stage == 1 || spec ? loop_stage_a(d->L, j->kid, j->parent, &j->next, &j->err)
                                       : loop_stage_b(d->L, j->kid, &j->err);
        pthread_mutex_lock(&d->lock);
        if (rc == EVAL_RETRY) {
            j->state = spec ? JOB_SKIP : JOB_QUEUED;   /* this slot is gone: another takes it */
            pthread_cond_broadcast(&d->cv);
            break;
        }
        j->rc = rc;
        j->state = JOB_DONE;
        d->L->sum->ahead_judged += spec;
        pthread_cond_broadcast(&d->cv);
    }
    d->running--;
    pthread_cond_broadcast(&d->cv);
    pthread_mutex_unlock(&d->lock);
    return NULL;
}

/* Start the threads of one stage over jobs[0..n). */
static int dispatch_start(Dispatch *d, GpuThread **threads, int *nthreads, EvoErr *err)
{
    int slots = d->L->ev->slots ? d->L->ev->slots(d->L->ev_ctx) : 1;
    int nt = slots < d->n + d->nspec ? slots : d->n + d->nspec;
    *threads = xcalloc((size_t)nt + 1, sizeof(GpuThread));
    *nthreads = 0;
    pthread_mutex_init(&d->lock, NULL);
    pthread_cond_init(&d->cv, NULL);
    for (int i = 0; i < nt; i++) {
        GpuThread *t = &(*threads)[i];
        t->d = d;
        t->slot = i;
        pthread_mutex_lock(&d->lock);
        d->running++;
        pthread_mutex_unlock(&d->lock);
        int e = pthread_create(&t->tid, NULL, gpu_thread, t);
        if (e) {
            pthread_mutex_lock(&d->lock);
            d->running--;
            pthread_mutex_unlock(&d->lock);
            err_set(err, "pthread_create: %s", strerror(e));
            break;
        }
        ++*nthreads;
    }
    return *nthreads == nt ? 0 : -1;
}

/* Wait until job i is done; 0 when it was not (every thread stopped). */
static int dispatch_wait(Dispatch *d, int i)
{
    pthread_mutex_lock(&d->lock);
    while (d->jobs[i].state != JOB_DONE && d->running > 0)
        pthread_cond_wait(&d->cv, &d->lock);
    int done = d->jobs[i].state == JOB_DONE;
    pthread_mutex_unlock(&d->lock);
    return done;
}

/* Stop taking jobs, join the threads (each finishes its child). */
static void dispatch_end(Dispatch *d, GpuThread *threads, int nthreads)
{
    pthread_mutex_lock(&d->lock);
    for (int i = 0; i < d->n; i++)
        if (d->jobs[i].state == JOB_QUEUED)
            d->jobs[i].state = JOB_DROPPED;
    pthread_cond_broadcast(&d->cv);
    pthread_mutex_unlock(&d->lock);
    for (int i = 0; i < nthreads; i++)
        pthread_join(threads[i].tid, NULL);
    pthread_cond_destroy(&d->cv);
    pthread_mutex_destroy(&d->lock);
    free(threads);
}

/* Child kid of the batch was committed in stage B: the speculative
 * children waiting for it as a parent get its id and it as the A/B
 * reference (then they are queued), or, if it failed, are not judged
 * ahead. Under d->lock. */
static void spec_release(Dispatch *d, Child *kid)
{
    int ok = kid->rec.status && strcmp(kid->rec.status, "ok") == 0 && kid->rec.decision &&
             strcmp(kid->rec.decision, "accepted") == 0;
    for (int i = 0; i < d->nspec; i++) {
        Job *j = &d->spec[i];
        if (j->state != JOB_WAIT)
            continue;
        for (int p = 0; p < 2; p++) {
            if (j->pend[p] != kid)
                continue;
            j->pend[p] = NULL;
            if (!ok) {
                j->state = JOB_SKIP;
            } else if (p == 0) {
                j->kid->parent_id = kid->rec.id;
                j->parent = kid;
            } else {
                j->kid->parent2_id = kid->rec.id;
            }
        }
        if (j->state == JOB_WAIT && !j->pend[0] && !j->pend[1])
            j->state = JOB_QUEUED;
    }
    pthread_cond_broadcast(&d->cv);
}

/* Run one stage over jobs[0..n) and hand each finished job, in order, to
 * take(); with spec, the speculative jobs fill the waits (spec_release
 * queues those whose parents it commits). Returns 0 (also when stopped early: L->sum->interrupted), or -1
 * (an evaluator or take() error, every GPU lost). */
static int run_stage(Loop *L, int stage, Job *jobs, int n, Job *spec, int nspec, int time_limit,
                     int (*take)(Loop *L, Job *j, int i, void *arg), void *arg, EvoErr *err)
{
    if (n == 0)
        return 0;
    Dispatch d = {.L = L, .jobs = jobs, .n = n, .stage = stage, .spec = spec, .nspec = nspec,
                  .time_limit = time_limit};
    GpuThread *threads = NULL;
    int nthreads = 0, rc = dispatch_start(&d, &threads, &nthreads, err);
    for (int i = 0; i < n && rc == 0; i++) {
        if (!dispatch_wait(&d, i)) {
            if (stop_now(&d))
                L->sum->interrupted = 1;
            else
                rc = err_set(err, "every GPU of the run was lost");
            break;
        }
        rc = jobs[i].rc ? -1 : take(L, &jobs[i], i, arg);
        if (rc)
            *err = jobs[i].err;
        else if (nspec) {
            pthread_mutex_lock(&d.lock);
            spec_release(&d, jobs[i].kid);
            pthread_mutex_unlock(&d.lock);
        }
    }
    dispatch_end(&d, threads, nthreads);
    for (int i = 0; i < nspec; i++)   /* what was not judged ahead now never is */
        if (spec[i].state == JOB_QUEUED || spec[i].state == JOB_WAIT)
            spec[i].state = JOB_SKIP;
    return rc;
}

/* ---- a batch --------------------------------------------------------- */

typedef struct Batch {
    Child         *kids;
    int            n, ndone, nlater;
    int           *later;       /* indices of the children in stage B */
    int           *idx;         /* job -> child index */
    int64_t       *req_ids;
    GenerationRecord *g;
} Batch;

static int take_a(Loop *L, Job *j, int i, void *arg)
{
    Batch *b = arg;
    int k = b->idx[i];
    b->ndone++;
    loop_live_line(L, "gen %lld: %d/%d judged (%s)", (long long)b->g->generation, b->ndone, b->n,
                   b->kids[k].params_key);
    if (j->next) {
        b->later[b->nlater++] = k;
        return 0;
    }
    return loop_commit(L, &b->kids[k], b->req_ids ? b->req_ids[k] : 0, b->g, &j->err);
}

static int take_b(Loop *L, Job *j, int i, void *arg)
{
    Batch *b = arg;
    int k = b->idx[i];
    loop_live_line(L, "gen %lld: full gate %d/%d", (long long)b->g->generation, i + 1, b->nlater);
    return loop_commit(L, &b->kids[k], b->req_ids ? b->req_ids[k] : 0, b->g, &j->err);
}

int loop_decide_all(Loop *L, Child *kids, const int *done, int n, GenerationRecord *g, int64_t *req_ids,
                    int ahead, EvoErr *err)
{
    Batch b = {.kids = kids, .req_ids = req_ids, .g = g};
    Job *jobs = xcalloc((size_t)n + 1, sizeof(Job));
    b.later = xcalloc((size_t)n + 1, sizeof(int));
    b.idx = xcalloc((size_t)n + 1, sizeof(int));
    int *pre = xcalloc((size_t)n + 1, sizeof(int));
    Child **parents = xcalloc((size_t)n + 1, sizeof(Child *));   /* taken from the cache: put back at the end */
    int nj = 0, rc = -1, nparents = 0;
    /* The children judged ahead (speculate()) keep their stage A; the
     * other speculative children are dropped, their compilations in the
     * cache. */
    if (L->spec && L->spec_gen == g->generation)
        loop_spec_adopt(L, kids, done, n, pre);
    else if (L->spec && L->spec_gen < g->generation)
        loop_spec_free(L);   /* a generation that never came */
    /* Every other child's benchmark unit is queued at once; its parent is
     * made ready here, on this thread (the cache holds a whole population). */
    for (int i = 0; i < n; i++) {
        if (done && done[i])
            continue;
        jobs[nj].kid = &kids[i];
        b.idx[nj] = i;
        if (pre[i]) {
            jobs[nj].state = JOB_DONE;
            jobs[nj++].next = pre[i] == 2;
            continue;
        }
        if (L->ev->submit(L->ev_ctx, &kids[i], 1, err) || loop_parent_get(L, kids[i].parent_id, &jobs[nj].parent, err))
            goto out;
        parents[nparents++] = jobs[nj].parent;
        nj++;
    }
    b.n = nj;
    if (run_stage(L, 1, jobs, nj, NULL, 0, 1, take_a, &b, err))
        goto out;
    if (L->sum->interrupted && L->cfg->stop && *L->cfg->stop) {
        rc = 0;
        goto out;
    }
    if (ahead)
        speculate(L, g->generation, kids, b.later, b.nlater);
    /* Stage B, for those that went on (also at the time limit: they are
     * nearly done; not after a stop). */
    memset(jobs, 0, (size_t)(n + 1) * sizeof(Job));
    for (int k = 0; k < b.nlater; k++) {
        jobs[k].kid = &kids[b.later[k]];
        b.idx[k] = b.later[k];
    }
    rc = run_stage(L, 2, jobs, b.nlater, ahead ? L->spec_jobs : NULL, ahead && L->spec_jobs ? L->nspec : 0, 0,
                   take_b, &b, err);
out:
    for (int i = 0; i < nparents; i++)
        loop_parent_put(L, parents[i]);
    free(parents);
    free(pre);
    free(jobs);
    free(b.later);
    free(b.idx);
    return rc;
}


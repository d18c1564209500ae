/*
 * gpueval: prep + worker = the Evaluator the run uses. See gpueval.h.
 */
#include "gpu/gpueval.h"

#include <jansson.h>
#include <pthread.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "compile/prep.h"
#include "gpu/watchdog.h"
#include "msg.h"

/* One GPU: its worker process and what it keeps loaded. */
typedef struct Slot {
    Worker    *worker;     /* one request at a time: only the slot's GPU thread talks to it */
    DeviceInfo dev;
    int       *ref_ids;    /* worker module id per reference unit */
    double     scale;      /* latency normalisation to slot 0 (gpueval_calibrate) */
    int        dead;       /* dropped from the run: its worker could not go on */
    int       *unload;     /* modules released by other threads, unloaded by the slot's (under lock) */
    int        nunload, capunload;
    int       *warm;       /* per shape: the worker spawn whose resident state holds it, 0: none */
} Slot;

struct GpuEval {
    Task          *task;
    GpuEvalOptions opt;
    Slot          *slots;
    int            nslots, alive;
    pthread_mutex_t lock;      /* slots' dead/alive, parents' module loads */
    Pool          *pool;       /* compile threads: children's units compile here while the GPU works */
    PrepRef        ref;
};

typedef struct Priv {
    Prepared  prep;
    int      *ids;             /* worker module id per (slot, unit): [slot * nunits + unit], -1 until loaded */
    int       nslots;
    double   *gate_ms;         /* per shape: its gate request's time, 0 until gated (watchdog.h) */
    double   *parent_gate_ms;  /* per shape: the parent's, copied at stage A; NULL: no parent measured */
    double    time_ms;         /* its time or compare request's, 0 until timed */
} Priv;

/* Load the reference's units into slot w. */
static int load_reference(GpuEval *g, Slot *sl, EvoErr *err)
{
    int nent = task_nref_entries(g->task);
    const char **ents = xcalloc((size_t)nent + 1, sizeof(char *));
    sl->ref_ids = xcalloc((size_t)g->ref.nunits, sizeof(int));
    int rc = 0;
    for (int u = 0; u < g->ref.nunits && rc == 0; u++) {
        EvalStatus st;
        char msg[512];
        const CompileResult *r = &g->ref.units[u].res;
        for (int i = 0; i < nent; i++)   /* as the module names them (lowered) */
            ents[i] = prep_unit_entry(&g->ref.units[u], task_ref_entry(g->task, i));
        rc = worker_load(sl->worker, r->cubin, r->cubin_len, ents, nent, &sl->ref_ids[u], NULL, &st, msg,
                         sizeof(msg), err);
        if (rc == 0 && st != EVAL_OK)
            rc = err_set(err, "%s: the reference does not load on GPU %d: %s: %s", task_reference_path(g->task),
                         sl->dev.ordinal, gate_status_name(st), msg);
    }
    free(ents);
    return rc;
}

int gpueval_open(GpuEval **out, Task *task, const GpuEvalOptions *opt, int *nogpu, EvoErr *err)
{
    static const int first = 0;
    *out = NULL;
    *nogpu = 0;
    GpuEval *g = xcalloc(1, sizeof(*g));
    g->task = task;
    g->opt = *opt;
    pthread_mutex_init(&g->lock, NULL);
    const int *devs = opt->ndevices > 0 ? opt->devices : &first;
    int *counted = NULL;
    g->nslots = opt->ndevices > 0 ? opt->ndevices : 1;
    if (opt->ndevices <= 0 && opt->count != 0) {
        /* all, or the first N: the first worker says how many there are */
        g->nslots = 1;
        g->slots = xcalloc(1, sizeof(Slot));
        WorkerOptions wo = {.device = 0};
        if (worker_open(&g->slots[0].worker, &wo, err)) {
            *nogpu = 1;
            goto fail;
        }
        int have = worker_device(g->slots[0].worker)->device_count;
        int want = opt->count < 0 ? have : opt->count;
        if (want > have) {
            err_set(err, "--gpus %d: this machine has %d GPU%s", want, have, have == 1 ? "" : "s");
            goto fail;
        }
        counted = xcalloc((size_t)want, sizeof(int));
        for (int i = 0; i < want; i++)
            counted[i] = i;
        devs = counted;
        Slot first_slot = g->slots[0];
        free(g->slots);
        g->nslots = want;
        g->slots = xcalloc((size_t)want, sizeof(Slot));
        g->slots[0] = first_slot;
    } else {
        g->slots = xcalloc((size_t)g->nslots, sizeof(Slot));
    }
    for (int w = 0; w < g->nslots; w++) {
        Slot *sl = &g->slots[w];
        WorkerOptions wo = {.device = devs[w]};
        sl->scale = 1.0;
        if (!sl->worker && worker_open(&sl->worker, &wo, err)) {
            *nogpu = w == 0;
            if (w > 0)
                err_prefix(err, "GPU %d", devs[w]);
            goto fail;
        }
        sl->dev = *worker_device(sl->worker);
        sl->warm = xcalloc((size_t)task_nshapes(task) + 1, sizeof(int));
        if (w > 0 && strcmp(sl->dev.arch, g->slots[0].dev.arch) != 0) {
            err_set(err, "GPU %d is %s (%s) but GPU %d is %s (%s): one run judges on one architecture", devs[w],
                    sl->dev.name, sl->dev.arch, devs[0], g->slots[0].dev.name, g->slots[0].dev.arch);
            goto fail;
        }
    }
    free(counted);
    counted = NULL;
    g->alive = g->nslots;
    if (pool_open(&g->pool, opt->jobs, err))
        goto fail;
    /* compilations yield to the threads that keep the GPUs fed: the loop,
     * the GPU threads and the workers (whose waits spin on a core);
     * EVOENG_COMPILE_NICE=N sets another nice value (0: none) */
    const char *nice = getenv("EVOENG_COMPILE_NICE");
    pool_set_nice(g->pool, nice && *nice ? atoi(nice) : 10);
    if (prep_reference(task, &g->slots[0].dev, &g->ref, opt->jobs, err))
        goto fail;
    for (int w = 0; w < g->nslots; w++)
        if (load_reference(g, &g->slots[w], err))
            goto fail;
    *out = g;
    return 0;
fail:
    free(counted);
    gpueval_close(&g);
    return -1;
}

void gpueval_close(GpuEval **pg)
{
    GpuEval *g = *pg;
    if (!g)
        return;
    for (int w = 0; w < g->nslots; w++) {
        worker_close(&g->slots[w].worker);
        free(g->slots[w].ref_ids);
        free(g->slots[w].unload);
        free(g->slots[w].warm);
    }
    free(g->slots);
    pool_close(&g->pool);
    prep_ref_free(&g->ref);
    pthread_mutex_destroy(&g->lock);
    free(g);
    *pg = NULL;
}

const DeviceInfo *gpueval_device(const GpuEval *g)
{
    return &g->slots[0].dev;
}

const GpuEvalOptions *gpueval_options(const GpuEval *g)
{
    return &g->opt;
}

Worker *gpueval_worker(GpuEval *g)
{
    return g->slots[0].worker;
}

int gpueval_slots(const GpuEval *g)
{
    return g->nslots;
}

const DeviceInfo *gpueval_slot_device(const GpuEval *g, int slot)
{
    return slot >= 0 && slot < g->nslots ? &g->slots[slot].dev : NULL;
}

/* Unload what other threads released on slot sl: called on the thread
 * that is about to send sl's worker a request, so a worker never sees two
 * threads at once (release runs on the loop's thread while the slot's
 * GPU thread gates or times). */
static void slot_flush(GpuEval *g, Slot *sl)
{
    pthread_mutex_lock(&g->lock);
    int n = sl->nunload, *ids = sl->unload;
    sl->unload = NULL;
    sl->capunload = 0;
    __atomic_store_n(&sl->nunload, 0, __ATOMIC_RELAXED);
    int dead = sl->dead;
    pthread_mutex_unlock(&g->lock);
    EvoErr err;
    for (int i = 0; i < n && !dead; i++)
        worker_unload(sl->worker, ids[i], &err);
    free(ids);
}

/* The slot a child is judged on, its pending unloads done. */
static Slot *slot_of(GpuEval *g, const Child *c)
{
    int w = c->gpu >= 0 && c->gpu < g->nslots ? c->gpu : 0;
    if (__atomic_load_n(&g->slots[w].nunload, __ATOMIC_RELAXED))
        slot_flush(g, &g->slots[w]);
    return &g->slots[w];
}

/* A worker request on slot sl failed at the orchestrator (its worker
 * cannot go on). With other GPUs alive the slot is dropped and the child
 * goes elsewhere (EVAL_RETRY); the last one fails the run (-1). */
static int slot_failed(GpuEval *g, Slot *sl, EvoErr *err)
{
    pthread_mutex_lock(&g->lock);
    int retry = 0;
    if (!sl->dead && g->alive > 1) {
        sl->dead = 1;
        g->alive--;
        retry = 1;
    }
    pthread_mutex_unlock(&g->lock);
    if (!retry)
        return -1;
    warnf("GPU %d (%s) is dropped from the run: %s", sl->dev.ordinal, sl->dev.name, err->msg);
    return EVAL_RETRY;
}

/* ---- submit: rendering and queued compilations ----------------------- */

static void set_str(char **dst, const char *s)
{
    free(*dst);
    *dst = s ? xstrdup(s) : NULL;
}

/* Take a failure of the static steps into the child's record. */
static void take_prep_status(Child *c, const Prepared *p)
{
    set_str(&c->rec.status, p->status);
    set_str(&c->rec.error, p->error ? p->error : p->status);
    /* The benchmark shape's compile log is the candidate's compile row;
     * another shape's that failed goes whole into its evaluation log. */
    const char *flog = prep_failure_log(p);
    if (flog && p->nunits > 0 && p->units[p->shape_unit[0]].res.ok) {
        char *s = xasprintf("%scompile log of the source that failed:\n%s\n", c->rec.log ? c->rec.log : "", flog);
        free(c->rec.log);
        c->rec.log = s;
    }
}

static int ge_submit(void *ctx, Child *c, int stage, EvoErr *err)
{
    GpuEval *g = ctx;
    Priv *pv = c->priv;
    if (c->rec.status && strcmp(c->rec.status, "ok") != 0)
        return 0;   /* failed already ("ok": passed stage A and its A/B) */
    if (stage <= 1 && !pv) {
        PrepInput in = {.vals = c->vals, .custom_source = c->custom_source};
        Prepared p;
        if (prep_render(g->task, &g->slots[0].dev, &in, &p, err))
            return -1;
        if (p.status[0]) {
            take_prep_status(c, &p);
            prep_free(&p);
            return 0;
        }
        pv = xcalloc(1, sizeof(*pv));
        pv->prep = p;
        pv->nslots = g->nslots;
        pv->ids = xcalloc((size_t)p.nunits * (size_t)g->nslots, sizeof(int));
        for (int u = 0; u < p.nunits * g->nslots; u++)
            pv->ids[u] = -1;
        pv->gate_ms = xcalloc((size_t)p.nplans + 1, sizeof(double));
        c->priv = pv;
    }
    if (!pv)
        return err_set(err, "submit: stage %d of a child that was never rendered", stage);
    Prepared *p = &pv->prep;
    if (stage <= 1)
        return prep_unit_submit(g->pool, g->task, &g->slots[0].dev, p, p->shape_unit[0], POOL_NEXT, err);
    /* stage 2: the child passed stage A, its other units come first; 3:
     * look-ahead, when nothing else waits (stage 2 promotes them later) */
    for (int u = 0; u < p->nunits; u++)
        if (prep_unit_submit(g->pool, g->task, &g->slots[0].dev, p, u, stage == 2 ? POOL_NOW : POOL_SPEC, err))
            return -1;
    return 0;
}

/* The shapes a stage gates: [*s0, *s1): the benchmark shape (stage 1),
 * every other shape (stage 2). */
static void stage_shapes(const Prepared *p, int stage, int *s0, int *s1)
{
    *s0 = stage == 1 ? 0 : 1;
    *s1 = stage == 1 ? 1 : p->nplans;
}

static int ge_ready(void *ctx, Child *c, int stage)
{
    (void)ctx;
    Priv *pv = c->priv;
    if (!pv || (c->rec.status && strcmp(c->rec.status, "ok") != 0))
        return 1;   /* nothing to wait for: the gate returns at once */
    Prepared *p = &pv->prep;
    int s0, s1;
    stage_shapes(p, stage, &s0, &s1);
    for (int s = s0; s < s1; s++)
        if (!prep_unit_ready(p, p->shape_unit[s]))
            return 0;
    return 1;
}

static void ge_urge(void *ctx, Child *c, int stage)
{
    GpuEval *g = ctx;
    Priv *pv = c->priv;
    if (!pv || pv->prep.status[0])
        return;
    Prepared *p = &pv->prep;
    int s0, s1;
    stage_shapes(p, stage, &s0, &s1);
    EvoErr err;
    for (int s = s0; s < s1; s++)
        if (p->units[p->shape_unit[s]].state == PREP_UNIT_QUEUED)
            prep_unit_submit(g->pool, g->task, &g->slots[0].dev, p, p->shape_unit[s], POOL_NOW, &err);
}

static int ge_busy(void *ctx, Child *c)
{
    (void)ctx;
    Priv *pv = c->priv;
    return pv && prep_busy(&pv->prep);
}

static int ge_lanes(void *ctx)
{
    GpuEval *g = ctx;
    return pool_threads(g->pool);
}

static void ge_watch(void *ctx, void (*fn)(void *), void *arg)
{
    GpuEval *g = ctx;
    pool_set_hook(g->pool, fn, arg);
}

static void ge_pipe_stats(void *ctx, EvalPipeStats *out)
{
    GpuEval *g = ctx;
    PoolStats ps;
    pool_stats(g->pool, &ps);
    out->lanes = ps.threads;
    out->compile_busy_s = ps.busy_s;
    out->units_now = ps.ran[POOL_NOW];
    out->units_next = ps.ran[POOL_NEXT];
    out->units_spec = ps.ran[POOL_SPEC];
    out->units_cancelled = ps.cancelled;
}

static void ge_drop(void *ctx, Child *c)
{
    (void)ctx;
    Priv *pv = c->priv;
    if (pv)
        for (int u = 0; u < pv->prep.nunits; u++)
            prep_unit_cancel(&pv->prep, u);
}

static void ge_release(void *ctx, Child *c)
{
    GpuEval *g = ctx;
    Priv *pv = c->priv;
    if (!pv)
        return;
    ge_drop(ctx, c);   /* what no thread has started is not built */
    /* the modules are unloaded by each slot's own thread, before its next
     * request (slot_flush): this may run on another thread */
    pthread_mutex_lock(&g->lock);
    for (int w = 0; w < pv->nslots; w++) {
        Slot *sl = &g->slots[w];
        for (int u = 0; u < pv->prep.nunits && !sl->dead; u++) {
            int id = pv->ids[w * pv->prep.nunits + u];
            if (id < 0)
                continue;
            if (sl->nunload == sl->capunload) {
                sl->capunload = sl->capunload ? sl->capunload * 2 : 32;
                sl->unload = xrealloc(sl->unload, (size_t)sl->capunload * sizeof(int));
            }
            sl->unload[sl->nunload] = id;
            __atomic_store_n(&sl->nunload, sl->nunload + 1, __ATOMIC_RELAXED);
        }
    }
    pthread_mutex_unlock(&g->lock);
    prep_free(&pv->prep);
    free(pv->ids);
    free(pv->gate_ms);
    free(pv->parent_gate_ms);
    free(pv);
    c->priv = NULL;
}

/* The module id of shape s's unit on slot sl (-1: not loaded). */
static int *mod_id(GpuEval *g, Priv *pv, const Slot *sl, int s)
{
    return &pv->ids[(int)(sl - g->slots) * pv->prep.nunits + pv->prep.shape_unit[s]];
}

/* Wait for the unit of shape s and load it into slot sl's worker (once).
 * A parent may be used by several GPU threads at once: the wait and the
 * load happen under the evaluator's lock for a parent (shared = 1).
 * Returns 0 with *st (EVAL_OK, or the load's failure; a failed compile
 * leaves pv->prep.status set and *st EVAL_OK), -1 on an orchestrator
 * failure. */
static int unit_ready(GpuEval *g, Slot *sl, Priv *pv, int s, int shared, EvalStatus *st, char *msg, size_t cap,
                      EvoErr *err)
{
    int u = pv->prep.shape_unit[s], rc = 0;
    *st = EVAL_OK;
    if (shared)
        pthread_mutex_lock(&g->lock);
    if (prep_unit_wait(g->pool, &pv->prep, u, err))
        rc = -1;
    int *id = mod_id(g, pv, sl, s);
    if (rc == 0 && !pv->prep.status[0] && *id < 0) {
        int nent = task_nentries(g->task);
        const char **ents = xcalloc((size_t)nent + 1, sizeof(char *));
        for (int i = 0; i < nent; i++)
            ents[i] = prep_unit_entry(&pv->prep.units[u], task_entry(g->task, i));
        const CompileResult *r = &pv->prep.units[u].res;
        rc = worker_load(sl->worker, r->cubin, r->cubin_len, ents, nent, id, NULL, st, msg, cap, err);
        free(ents);
    }
    if (shared)
        pthread_mutex_unlock(&g->lock);
    return rc;
}

/* ---- gate ------------------------------------------------------------ */

/* The record's fields that describe the benchmark-shape unit. */
static void take_bench_unit(Child *c, const Prepared *p)
{
    const PrepUnit *u = &p->units[p->shape_unit[0]];
    set_str(&c->source_text, u->source);
    set_str(&c->rec.source_hash, u->hash);
    compile_record_free(&c->comp);
    prep_compile_record(u, &c->comp);
}

/* Gate shape s of a child whose unit is loaded. Returns 0 (a failure is in
 * the record), -1 on an orchestrator failure. */
static int gate_shape(GpuEval *g, Child *c, Priv *pv, int s, json_t *gj, StrBuf *log, EvoErr *err)
{
    CandidateRecord *r = &c->rec;
    GateReport rep;
    Slot *sl = slot_of(g, c);
    prep_ref_lower(&g->ref, &pv->prep.plans[s], s);
    const Plan *plan = &pv->prep.plans[s];
    int cand = *mod_id(g, pv, sl, s);
    int ref = sl->ref_ids[g->ref.shape_unit[s]];
    /* a worker that must (re)build this shape's inputs and reference
     * outputs first gets the ceiling: the parent's time did not include it */
    int warm = worker_pid(sl->worker) > 0 && sl->warm[s] == worker_spawns(sl->worker);
    worker_set_watchdog(sl->worker, watchdog_ms(warm && pv->parent_gate_ms ? pv->parent_gate_ms[s] : NAN));
    if (worker_gate(sl->worker, plan, cand, ref, &g->opt.gate, &rep, err))
        return slot_failed(g, sl, err);
    pv->gate_ms[s] = worker_last_ms(sl->worker);
    if (worker_pid(sl->worker) > 0)
        sl->warm[s] = worker_spawns(sl->worker);
    json_array_append_new(gj, gate_report_to_json(&rep));
    char line[1200];
    gate_report_format(&rep, line, sizeof(line));
    sb_printf(log, "gate %s: %s\n", plan->shape_label, line);
    if (rep.status != EVAL_OK) {
        set_str(&r->status, gate_status_name(rep.status));
        char *e = xasprintf("%s%s%s (shape %s, seed %llu)", rep.check, rep.check[0] ? ": " : "", rep.error,
                            plan->shape_label, (unsigned long long)rep.seed);
        set_str(&r->error, e);
        free(e);
    }
    return 0;
}

/* Append the text of `log` to the record's log. */
static void log_append(CandidateRecord *r, StrBuf *log)
{
    if (!log->len)
        return;
    char *s = xasprintf("%s%s", r->log ? r->log : "", log->s);
    free(r->log);
    r->log = s;
    sb_free(log);
}

/* The gate results so far (a JSON array) grow by the shapes of this stage. */
static json_t *gate_json_load(const CandidateRecord *r)
{
    json_t *j = r->gate_json ? json_loads(r->gate_json, 0, NULL) : NULL;
    if (!json_is_array(j)) {
        json_decref(j);
        j = json_array();
    }
    return j;
}

static int ge_gate(void *ctx, Child *c, int stage, EvoErr *err)
{
    GpuEval *g = ctx;
    Priv *pv = c->priv;
    CandidateRecord *r = &c->rec;
    if (r->status)
        return 0;
    if (!pv)
        return err_set(err, "gate: stage %d of a child that was never submitted", stage);
    Prepared *p = &pv->prep;
    int s0, s1;
    stage_shapes(p, stage, &s0, &s1);
    const Priv *pp = c->judge_parent ? c->judge_parent->priv : NULL;
    if (stage == 1 && pp && pp->prep.nplans == p->nplans && !pv->parent_gate_ms) {
        pv->parent_gate_ms = xcalloc((size_t)p->nplans + 1, sizeof(double));
        memcpy(pv->parent_gate_ms, pp->gate_ms, (size_t)p->nplans * sizeof(double));
    }
    double t0 = time_now_ms();
    /* Compile waits, the static gate and loading, shape by shape; what
     * this GPU now waits for is compiled first. */
    for (int s = s0; s < s1 && !p->status[0]; s++) {
        EvalStatus st;
        char msg[768] = "";
        if (prep_unit_submit(g->pool, g->task, &g->slots[0].dev, p, p->shape_unit[s], POOL_NOW, err))
            return -1;
        if (unit_ready(g, slot_of(g, c), pv, s, 0, &st, msg, sizeof(msg), err))
            return slot_failed(g, slot_of(g, c), err);
        if (stage == 1 && s == 0)
            take_bench_unit(c, p);
        if (!p->status[0])
            prep_static_gate(g->task, &g->slots[0].dev, p, s);
        if (!p->status[0] && st != EVAL_OK) {
            set_str(&r->status, gate_status_name(st));
            set_str(&r->error, msg);
            break;
        }
    }
    r->compile_ms = p->compile_ms;
    r->registers = p->maxres.registers;
    if (p->status[0])
        take_prep_status(c, p);
    if (r->status)
        return 0;
    /* The correctness gate, every seed. */
    double t1 = time_now_ms();
    json_t *gj = gate_json_load(r);
    StrBuf log = {0};
    int rc = 0;
    for (int s = s0; s < s1 && !r->status && rc == 0; s++)
        rc = gate_shape(g, c, pv, s, gj, &log, err);
    if (rc == EVAL_RETRY) {
        /* judged again on another GPU: nothing of this attempt is kept */
        json_decref(gj);
        sb_free(&log);
        return rc;
    }
    sb_printf(&log, "stage %d: waited %.1f ms for compilation and loading, gate %.1f ms\n", stage, t1 - t0,
              time_now_ms() - t1);
    char *gs = json_dumps(gj, JSON_COMPACT);
    set_str(&r->gate_json, gs);
    free(gs);
    json_decref(gj);
    log_append(r, &log);
    r->gate_ms = (isnan(r->gate_ms) ? 0 : r->gate_ms) + time_now_ms() - t0;
    if (rc == 0)
        r->gate_stage = stage == 1 ? GATE_STAGE_BENCH : GATE_STAGE_FULL;
    return rc;
}

/* ---- time ------------------------------------------------------------ */

static void fill_metrics(CandidateRecord *r, const BenchResult *b)
{
    r->latency_us = b->ms.median * 1000.0;
    r->p90_us = b->ms.p90 * 1000.0;
    r->cv = b->ms.cv;
    int big = 0;
    for (int l = 1; l < b->nlaunches; l++)
        if (b->launches[l].ctas > b->launches[big].ctas)
            big = l;
    if (b->nlaunches > 0) {
        const LaunchMetrics *m = &b->launches[big];
        r->ctas = (int64_t)m->ctas;
        r->threads = m->threads;
        r->registers = m->registers;
        r->smem_static = m->static_smem;
        r->smem_dynamic = m->dynamic_smem;
        r->occupancy = m->occupancy;
        r->waves = m->waves;
    }
    r->ctas_total = (int64_t)b->total_ctas;
    r->tflops = b->tflops;
    r->gbps = b->gbps;
    r->pct_peak_flops = b->pct_peak_flops;
    r->pct_peak_bw = b->pct_peak_bw;
    json_t *j = bench_result_to_json(b);
    char *s = json_dumps(j, JSON_COMPACT);
    set_str(&r->metrics_json, s);
    free(s);
    json_decref(j);
}

/* A failure of the child while timed (a crash, a timeout, a corrupted
 * resident state) goes into its record. */
static void timing_failure(Child *c, EvalStatus st, const char *what, const char *msg)
{
    set_str(&c->rec.status, gate_status_name(st));
    char *e = xasprintf("%s: %s", what, msg && msg[0] ? msg : gate_status_name(st));
    set_str(&c->rec.error, e);
    free(e);
}

static void add_ms(double *acc, double t0)
{
    *acc = (isnan(*acc) ? 0 : *acc) + time_now_ms() - t0;
}

/* Latencies measured on slot sl, normalised to slot 0 (gpueval_calibrate);
 * throughput figures follow the normalised median. */
static void stats_scale(BenchStats *m, double f)
{
    m->median *= f;
    m->mean *= f;
    m->min *= f;
    m->max *= f;
    m->p10 *= f;
    m->p90 *= f;
    m->mad *= f;
}

static void slot_scale(GpuEval *g, const Slot *sl, BenchResult *b, const Plan *plan)
{
    double f = sl->scale > 0 ? sl->scale : 1.0;
    stats_scale(&b->ms, f);
    for (int k = 0; k < b->nprof; k++) {
        stats_scale(&b->prof[k].ms, f);
        stats_scale(&b->prof[k].a_ms, f);
    }
    bench_fill_throughput(b, plan, &g->slots[0].dev);
}

/* One line a profile for the log: "  profile NAME: ...". */
static void log_profiles(StrBuf *log, const BenchResult *b)
{
    for (int k = 0; b->nprof > 1 && k < b->nprof; k++) {
        const ProfileStat *ps = &b->prof[k];
        sb_printf(log, "  profile %s: median %.3f us, p90 %.3f us", ps->name, ps->ms.median * 1000, ps->ms.p90 * 1000);
        if (ps->ratio.n > 0)
            sb_printf(log, ", ratio %.4f (p10 %.4f, p90 %.4f)%s", ps->ratio.median, ps->ratio.p10, ps->ratio.p90,
                      ps->noisy ? ", noisy" : "");
        sb_putc(log, '\n');
    }
}

/* metrics_json names the GPU that measured the candidate. */
static void metrics_gpu(CandidateRecord *r, const Slot *sl)
{
    json_t *j = r->metrics_json ? json_loads(r->metrics_json, 0, NULL) : NULL;
    if (!json_is_object(j)) {
        json_decref(j);
        j = json_object();
    }
    json_object_set_new(j, "gpu", json_pack("{s:i, s:s, s:s, s:s, s:f}", "index", sl->dev.ordinal, "name",
                                            sl->dev.name, "uuid", sl->dev.uuid, "pci_bus_id", sl->dev.pci_bus_id,
                                            "scale", sl->scale));
    char *s = json_dumps(j, JSON_COMPACT);
    set_str(&r->metrics_json, s);
    free(s);
    json_decref(j);
}

/* ---- calibrate ------------------------------------------------------- */

static int ge_calibrate(void *ctx, Child *base, EvoErr *err)
{
    GpuEval *g = ctx;
    Priv *pv = base->priv;
    if (g->nslots < 2 || g->opt.gate_only)
        return 0;
    if (!pv)
        return err_set(err, "calibrate: the baseline is not prepared");
    double t0 = 0;
    for (int w = 0; w < g->nslots; w++) {
        Slot *sl = &g->slots[w];
        EvalStatus st;
        char msg[768] = "";
        BenchResult b;
        memset(&b, 0, sizeof(b));
        if (sl->dead)
            continue;
        if (unit_ready(g, sl, pv, 0, 1, &st, msg, sizeof(msg), err) ||
            worker_time(sl->worker, &pv->prep.plans[0], *mod_id(g, pv, sl, 0), 0, &g->opt.bench, &b, err))
            return err_prefix(err, "calibrating GPU %d on the baseline", sl->dev.ordinal);
        if (st != EVAL_OK || b.status != EVAL_OK || !(b.ms.median > 0))
            return err_set(err, "calibrating GPU %d on the baseline: %s", sl->dev.ordinal,
                           st != EVAL_OK ? msg : b.error);
        if (w == 0)
            t0 = b.ms.median;
        sl->scale = t0 > 0 ? t0 / b.ms.median : 1.0;
        if (w > 0)
            warnf("GPU %d (%s): the baseline runs in %.3f us, GPU 0 in %.3f us: its latencies are scaled by %.4f",
                  sl->dev.ordinal, sl->dev.name, b.ms.median * 1000, t0 * 1000, sl->scale);
    }
    return 0;
}

static int ge_slots(void *ctx)
{
    GpuEval *g = ctx;
    return g->nslots;
}

static int ge_time(void *ctx, Child *c, EvoErr *err)
{
    GpuEval *g = ctx;
    Priv *pv = c->priv;
    CandidateRecord *r = &c->rec;
    if (r->status)
        return 0;
    if (!pv || r->gate_stage < GATE_STAGE_BENCH)
        return err_set(err, "time: a child that was not gated");
    if (g->opt.gate_only) {
        set_str(&r->status, "ok");
        return 0;
    }
    double t0 = time_now_ms();
    BenchResult b;
    memset(&b, 0, sizeof(b));
    Slot *sl = slot_of(g, c);
    const Plan *plan = &pv->prep.plans[0];
    EvalStatus st;
    char msg[768] = "";
    worker_set_watchdog(sl->worker, watchdog_ms(NAN));   /* no parent: the ceiling */
    if (unit_ready(g, sl, pv, 0, 0, &st, msg, sizeof(msg), err) ||
        worker_time(sl->worker, plan, *mod_id(g, pv, sl, 0), 0, &g->opt.bench, &b, err))
        return slot_failed(g, sl, err);
    pv->time_ms = worker_last_ms(sl->worker);
    add_ms(&r->time_ms, t0);
    if (st != EVAL_OK || b.status != EVAL_OK) {
        timing_failure(c, st != EVAL_OK ? st : b.status, "timing", st != EVAL_OK ? msg : b.error);
        return 0;
    }
    set_str(&r->status, "ok");
    slot_scale(g, sl, &b, plan);
    fill_metrics(r, &b);
    metrics_gpu(r, sl);
    StrBuf log = {0};
    sb_printf(&log, "time %s: median %.3f us, p90 %.3f us, CV %.2f%%, %d samples of %d runs%s\n", plan->shape_label,
              b.ms.median * 1000, b.ms.p90 * 1000, b.ms.cv * 100, b.ms.n, b.batch,
              b.nprof > 1 ? " (geometric mean of the timing profiles)" : "");
    log_profiles(&log, &b);
    log_append(r, &log);
    return 0;
}

/* ---- compare --------------------------------------------------------- */

static int ge_compare(void *ctx, Child *parent, Child *kid, double *ratio, double *spread, EvoErr *err)
{
    GpuEval *g = ctx;
    Priv *pa = parent->priv, *pb = kid->priv;
    CandidateRecord *r = &kid->rec;
    EvalStatus st;
    char msg[768] = "";
    *ratio = *spread = NAN;
    if (r->status && strcmp(r->status, "ok") != 0)
        return 0;
    if (!pa || !pb || r->gate_stage < GATE_STAGE_BENCH)
        return err_set(err, "compare: a candidate is not prepared and gated");
    Slot *sl = slot_of(g, kid);
    if (unit_ready(g, sl, pa, 0, 1, &st, msg, sizeof(msg), err))
        return slot_failed(g, sl, err);
    if (pa->prep.status[0] || st != EVAL_OK)
        return err_set(err, "compare: the parent %lld no longer loads: %s", (long long)parent->rec.id,
                       pa->prep.status[0] ? pa->prep.error : msg);
    CompareResult cr;
    memset(&cr, 0, sizeof(cr));
    double t0 = time_now_ms();
    const Plan *plan = &pb->prep.plans[0];
    if (unit_ready(g, sl, pb, 0, 0, &st, msg, sizeof(msg), err))
        return slot_failed(g, sl, err);
    if (pb->prep.status[0] || st != EVAL_OK) {
        timing_failure(kid, st != EVAL_OK ? st : EVAL_LAUNCH_ERROR, "load", pb->prep.status[0] ? pb->prep.error : msg);
        return 0;
    }
    int mod = *mod_id(g, pb, sl, 0);
    worker_set_watchdog(sl->worker, watchdog_ms(pa->time_ms));
    int crc = worker_compare(sl->worker, &pa->prep.plans[0], *mod_id(g, pa, sl, 0), plan, mod, &g->opt.bench, &cr,
                             err);
    pb->time_ms = worker_last_ms(sl->worker);
    add_ms(&r->time_ms, t0);
    if (crc)
        return slot_failed(g, sl, err);
    if (cr.status != EVAL_OK) {
        /* The parent passed the full gate and its own A/B: the child is to blame. */
        timing_failure(kid, cr.status, "A/B with its parent", cr.error);
        return 0;
    }
    *ratio = cr.ratio.median;
    *spread = cr.ratio.p90 - cr.ratio.p10;
    if (cr.noisy)
        warnf("A/B of candidate vs parent %lld stayed noisy after %d attempts (spread %.2f%%)",
              (long long)parent->rec.id, cr.attempts, *spread * 100);
    /* The child's latency is its side of the A/B; the launch metrics come
     * from a metrics request, which runs nothing timed. */
    BenchResult b;
    memset(&b, 0, sizeof(b));
    t0 = time_now_ms();
    if (worker_metrics(sl->worker, plan, mod, 0, &b, err))
        return slot_failed(g, sl, err);
    add_ms(&r->time_ms, t0);
    if (b.status != EVAL_OK) {
        timing_failure(kid, b.status, "launch metrics", b.error);
        return 0;
    }
    b.ms = cr.b_ms;
    b.batch = cr.batch_b;
    b.nprof = cr.nprof;   /* every profile's latency and ratio go into metrics_json */
    memcpy(b.prof, cr.prof, sizeof(b.prof));
    set_str(&r->status, "ok");
    slot_scale(g, sl, &b, plan);
    fill_metrics(r, &b);
    metrics_gpu(r, sl);
    StrBuf log = {0};
    sb_printf(&log, "A/B %s vs parent %lld: ratio %.4f (p10 %.4f, p90 %.4f)%s%s, %d pairs, attempt %d; child median "
              "%.3f us\n", plan->shape_label, (long long)parent->rec.id, cr.ratio.median, cr.ratio.p10, cr.ratio.p90,
              cr.nprof > 1 ? ", the worst of the timing profiles: " : "", cr.nprof > 1 ? cr.prof[cr.worst].name : "",
              cr.pairs, cr.attempts, cr.b_ms.median * 1000);
    log_profiles(&log, &b);
    log_append(r, &log);
    return 0;
}

const EvaluatorOps gpueval_ops = {
    .name = "gpu", .submit = ge_submit, .gate = ge_gate, .time = ge_time, .compare = ge_compare,
    .release = ge_release, .slots = ge_slots, .calibrate = ge_calibrate, .drop = ge_drop, .ready = ge_ready,
    .urge = ge_urge, .lanes = ge_lanes, .watch = ge_watch, .pipe_stats = ge_pipe_stats, .busy = ge_busy,
};

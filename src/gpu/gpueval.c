/*
 * gpueval: prep + worker = the Evaluator the run uses. See gpueval.h.
 */
#include "gpu/gpueval.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "compile/prep.h"
#include "gpu/gpueval_judge.h"
#include "gpu/gpueval_state.h"
#include "msg.h"

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

/* One slot's part of gpueval_open, on a thread of its own: each GPU's
 * worker starts its CUDA context (most of a second) and loads the
 * reference while the others do the same. */
typedef struct SlotJob {
    GpuEval  *g;
    Slot     *sl;
    int       device;
    int       rc;
    int       started;   /* 1: th runs it (else it ran inline) */
    pthread_t th;
    EvoErr    err;
} SlotJob;

static void *slot_open_main(void *p)
{
    SlotJob *j = p;
    WorkerOptions wo = {.device = j->device};
    j->rc = j->sl->worker ? 0 : worker_open(&j->sl->worker, &wo, &j->err);
    return NULL;
}

static void *slot_load_main(void *p)
{
    SlotJob *j = p;
    j->rc = load_reference(j->g, j->sl, &j->err);
    return NULL;
}

/* Start fn for every slot, one thread each (inline where no thread starts). */
static void slots_start(GpuEval *g, SlotJob *jobs, const int *devs, void *(*fn)(void *))
{
    for (int w = 0; w < g->nslots; w++) {
        jobs[w] = (SlotJob){.g = g, .sl = &g->slots[w], .device = devs[w]};
        jobs[w].started = g->nslots > 1 && pthread_create(&jobs[w].th, NULL, fn, &jobs[w]) == 0;
        if (!jobs[w].started)
            fn(&jobs[w]);
    }
}

/* Wait for slots [from, to) and return the first failure (-1 with err, its
 * GPU named), or 0. */
static int slots_join(GpuEval *g, SlotJob *jobs, int from, int to, EvoErr *err)
{
    int rc = 0;
    for (int w = from; w < to; w++) {
        if (jobs[w].started)
            pthread_join(jobs[w].th, NULL);
        jobs[w].started = 0;
        if (jobs[w].rc && rc == 0) {
            *err = jobs[w].err;
            if (w > 0)
                err_prefix(err, "GPU %d", jobs[w].device);
            rc = -1;
        }
    }
    return rc;
}

/* The slots' table for --gpus all or the first N: the first worker says
 * how many GPUs there are, and stays slot 0. Sets g->nslots and g->slots;
 * returns the ordinals (owned) or NULL with err (*nogpu: no first worker). */
static int *count_slots(GpuEval *g, int count, int *nogpu, EvoErr *err)
{
    Slot first = {0};
    WorkerOptions wo = {.device = 0};
    g->nslots = 0;   /* none to close until the table exists */
    if (worker_open(&first.worker, &wo, err)) {
        *nogpu = 1;
        return NULL;
    }
    int have = worker_device(first.worker)->device_count;
    int want = count < 0 ? have : count;
    if (want > have) {
        worker_close(&first.worker);
        err_set(err, "--gpus %d: this machine has %d GPU%s", want, have, have == 1 ? "" : "s");
        return NULL;
    }
    int *devs = xcalloc((size_t)want, sizeof(int));
    for (int i = 0; i < want; i++)
        devs[i] = i;
    g->nslots = want;
    g->slots = xcalloc((size_t)want, sizeof(Slot));
    g->slots[0] = first;
    return devs;
}

/* Each slot's device, checked against slot 0's architecture. */
static int slots_check(GpuEval *g, const int *devs, EvoErr *err)
{
    for (int w = 0; w < g->nslots; w++) {
        Slot *sl = &g->slots[w];
        sl->scale = 1.0;
        sl->dev = *worker_device(sl->worker);
        sl->warm = xcalloc((size_t)task_nshapes(g->task) + 1, sizeof(int));
        if (w > 0 && strcmp(sl->dev.arch, g->slots[0].dev.arch) != 0)
            return err_set(err, "GPU %d is %s (%s) but GPU %d is %s (%s): one run judges on one architecture",
                           devs[w], sl->dev.name, sl->dev.arch, devs[0],
                           g->slots[0].dev.name, g->slots[0].dev.arch);
    }
    return 0;
}

int gpueval_open(GpuEval **out, Task *task, const GpuEvalOptions *opt, int *nogpu, EvoErr *err)
{
    static const int first = 0;
    *out = NULL;
    *nogpu = 0;
    double t_open = time_now_ms(), t_first = 0, t_ref = 0, t_workers = 0;
    GpuEval *g = xcalloc(1, sizeof(*g));
    g->task = task;
    g->opt = *opt;
    pthread_mutex_init(&g->lock, NULL);
    const int *devs = opt->ndevices > 0 ? opt->devices : &first;
    int *counted = NULL;
    SlotJob *jobs = NULL;
    g->nslots = opt->ndevices > 0 ? opt->ndevices : 1;
    if (opt->ndevices <= 0 && opt->count != 0) {
        if (!(counted = count_slots(g, opt->count, nogpu, err)))
            goto fail;
        devs = counted;
    } else {
        g->slots = xcalloc((size_t)g->nslots, sizeof(Slot));
    }
    /* the workers start in parallel; the reference builds (NVRTC, for
     * slot 0's architecture) while the others still start */
    jobs = xcalloc((size_t)g->nslots, sizeof(SlotJob));
    slots_start(g, jobs, devs, slot_open_main);
    if (slots_join(g, jobs, 0, 1, err)) {
        *nogpu = 1;
        goto fail;
    }
    t_first = time_now_ms();
    if (pool_open(&g->pool, opt->jobs, err))
        goto fail;
    /* compilations yield to the threads that keep the GPUs fed: the loop,
     * the GPU threads and the workers; the compile threads run at nice 10
     * and their helpers SCHED_IDLE (cserver.c). EVOENG_COMPILE_NICE=N sets
     * another nice value for both instead (0: none) */
    const char *nice = getenv("EVOENG_COMPILE_NICE");
    pool_set_nice(g->pool, nice && *nice ? atoi(nice) : 10);
    int ref_rc = prep_reference(task, worker_device(g->slots[0].worker), &g->ref, opt->jobs, err);
    t_ref = time_now_ms();
    if (slots_join(g, jobs, 1, g->nslots, ref_rc ? &(EvoErr){{0}} : err) || ref_rc)
        goto fail;
    t_workers = time_now_ms();
    if (slots_check(g, devs, err))
        goto fail;
    g->alive = g->nslots;
    slots_start(g, jobs, devs, slot_load_main);
    if (slots_join(g, jobs, 0, g->nslots, err))
        goto fail;
    if (getenv("EVOENG_STEADY_DEBUG"))   /* where a run's first seconds go */
        fprintf(stderr,
                "dbg open: first worker %.0f ms, reference built %.0f ms more, %d worker%s %.0f ms, "
                "reference loaded %.0f ms more\n",
                t_first - t_open, t_ref - t_first, g->nslots, g->nslots == 1 ? "" : "s", t_workers - t_open,
                time_now_ms() - t_workers);
    free(counted);
    free(jobs);
    *out = g;
    return 0;
fail:
    if (jobs)   /* the threads still running (slots_join skips those already joined) */
        slots_join(g, jobs, 0, g->nslots, &(EvoErr){{0}});
    free(jobs);
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

/* ---- submit: rendering and queued compilations ----------------------- */

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
            ge_take_prep_status(c, &p);
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

static int ge_ready(void *ctx, Child *c, int stage)
{
    (void)ctx;
    Priv *pv = c->priv;
    if (!pv || (c->rec.status && strcmp(c->rec.status, "ok") != 0))
        return 1;   /* nothing to wait for: the gate returns at once */
    Prepared *p = &pv->prep;
    int s0, s1;
    ge_stage_shapes(p, stage, &s0, &s1);
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
    ge_stage_shapes(p, stage, &s0, &s1);
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
     * request (ge_slot_flush): this may run on another thread */
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

static int ge_slots(void *ctx)
{
    GpuEval *g = ctx;
    return g->nslots;
}

const EvaluatorOps gpueval_ops = {
    .name = "gpu", .submit = ge_submit, .gate = ge_gate, .time = ge_time, .compare = ge_compare,
    .release = ge_release, .slots = ge_slots, .calibrate = ge_calibrate, .drop = ge_drop, .ready = ge_ready,
    .urge = ge_urge, .lanes = ge_lanes, .watch = ge_watch, .pipe_stats = ge_pipe_stats, .busy = ge_busy,
};

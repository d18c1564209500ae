/*
 * prep: constraint check, rendering, parallel compilation and the static
 * gate of candidates. See prep.h.
 */
#include "compile/prep.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "compile/clog.h"
#include "compile/cserver.h"
#include "device.h"
#include "task/template.h"

/* Render `text` for one shape: params (when vals) then compile dims. */
static int render(const Task *t, const char *text, const char *file, const int64_t *vals, int shape,
                  char **src, EvoErr *err)
{
    int np = vals ? task_nparams(t) : 0, nc = task_ncompile_dims(t);
    const char **names = xcalloc((size_t)(np + nc) + 1, sizeof(*names));
    int64_t *values = xcalloc((size_t)(np + nc) + 1, sizeof(*values));
    for (int i = 0; i < np; i++) {
        names[i] = task_param_name(t, i);
        values[i] = vals[i];
    }
    for (int i = 0; i < nc; i++) {
        names[np + i] = task_compile_dim(t, i);
        values[np + i] = task_dim_value(t, shape, task_compile_dim_index(t, i));
    }
    int rc = template_render(text, file, names, values, np + nc, src, err);
    free(names);
    free(values);
    return rc;
}

/* Add src to units unless an identical source is there; returns its index.
 * The source's sha256 is left to the compile lane (compile_task): on the
 * loop thread it was most of a child's submit. */
static int add_unit(PrepUnit **units, int *n, char *src)
{
    for (int i = 0; i < *n; i++) {
        if (strcmp((*units)[i].source, src) == 0) {
            free(src);
            return i;
        }
    }
    *units = xrealloc(*units, (size_t)(*n + 1) * sizeof(**units));
    PrepUnit *u = &(*units)[*n];
    memset(u, 0, sizeof(*u));
    u->source = src;
    return (*n)++;
}

/* The sha256 of u's source into hex: taken on the compile lane once u
 * was waited for (unit_join), else computed here. */
static void unit_hash(const PrepUnit *u, char hex[65])
{
    if (u->hash[0])
        memcpy(hex, u->hash, 65);
    else
        template_hash(u->source, hex);
}

/* A request for unit u; the task's entries (reference: the reference's)
 * go in as NVRTC name expressions, so template instantiations and
 * namespaced kernels get their lowered names (prep_unit_entry). */
static void fill_request(const Task *t, const DeviceInfo *dev, PrepUnit *u, const char *name, int reference,
                         CompileRequest *r)
{
    memset(r, 0, sizeof(*r));
    r->name_exprs = task_entry_list(t, reference, &r->nname_exprs);
    r->source = u->source;
    r->name = name;
    snprintf(u->target, sizeof(u->target), "%s", device_nvrtc_target(dev, task_arch_specific(t)));
    r->arch = u->target;   /* the units array no longer moves once rendered */
    r->options = task_compile_options(t, &r->noptions);
    r->fast_math = task_fast_math(t);
    r->lineinfo = task_lineinfo(t);
}

int prep_unit_key(const Task *t, const DeviceInfo *dev, Prepared *p, int u, char key[65], EvoErr *err)
{
    CompileRequest r;
    char *opts = NULL;
    fill_request(t, dev, &p->units[u], p->file, 0, &r);
    int rc = nvrtc_request_key(&r, &opts, key, err);
    free(opts);
    return rc;
}

static void set_status(Prepared *p, const char *status, const char *fmt, ...) EVO_PRINTF(3, 4);
static void set_status(Prepared *p, const char *status, const char *fmt, ...)
{
    if (p->status[0])
        return;   /* the first failure wins */
    snprintf(p->status, sizeof(p->status), "%s", status);
    va_list ap;
    va_start(ap, fmt);
    free(p->error);
    p->error = xvasprintf(fmt, ap);
    va_end(ap);
}

/* The first error line of a failed compile's log (its error lines, or
 * what ptxas refused silently: nvrtc.c adds that), for status lines. */
static char *first_error_line(const char *log)
{
    char *line = clog_errors(log, 1);
    return line ? line : xstrdup("see the compile log");
}

static void res_max(KernelResources *a, const KernelResources *b)
{
    if (b->registers > a->registers) a->registers = b->registers;
    if (b->spill_stores > a->spill_stores) a->spill_stores = b->spill_stores;
    if (b->spill_loads > a->spill_loads) a->spill_loads = b->spill_loads;
    if (b->stack > a->stack) a->stack = b->stack;
    if (b->smem > a->smem) a->smem = b->smem;
}

void prep_static_gate(const Task *t, const DeviceInfo *dev, Prepared *p, int s)
{
    const PrepUnit *u = &p->units[p->shape_unit[s]];
    const Plan *plan = &p->plans[s];
    int max_spill = task_max_spill_bytes(t), max_stack = task_max_stack_bytes(t);
    for (int k = 0; k < u->res.nkernels; k++) {
        const KernelResources *kr = &u->res.kernels[k];
        int spills = kr->spill_stores + kr->spill_loads;
        if (max_spill >= 0 && spills > max_spill)
            set_status(p, "resource", "%s spills %d bytes (stores %d, loads %d); the task allows %d", kr->name,
                       spills, kr->spill_stores, kr->spill_loads, max_spill);
        else if (max_stack >= 0 && kr->stack > max_stack)
            set_status(p, "resource",
                       "%s keeps %d bytes in local memory (its stack frame: arrays the compiler could not "
                       "keep in registers); the task allows %d (compile.max_stack_bytes)",
                       kr->name, kr->stack, max_stack);
    }
    if (u->res.nkernels == 0)
        return;   /* no ptxas report: the worker's load checks the entries and limits */
    for (int l = 0; l < plan->nlaunches; l++) {
        const PlanLaunch *pl = &plan->launches[l];
        const KernelResources *kr = nvrtc_find_kernel(&u->res, pl->entry);
        if (!kr) {
            StrBuf names = {0};
            for (int k = 0; k < u->res.nkernels; k++)
                sb_printf(&names, "%s%s", k ? ", " : "", u->res.kernels[k].name);
            set_status(p, "compile_error",
                       "entry point '%s' is not in the compiled module (its kernels: %s; %s, log of %zu bytes)",
                       pl->entry, names.len ? names.s : "none", u->res.cache_hit ? "from the cache" : "compiled",
                       strlen(u->res.log ? u->res.log : ""));
            sb_free(&names);
            continue;
        }
        long long threads = (long long)pl->block[0] * pl->block[1] * pl->block[2];
        long long smem = (long long)kr->smem + pl->smem;
        if (threads > dev->max_threads)
            set_status(p, "resource", "%s: %lld threads per CTA, the device allows %d", pl->entry, threads,
                       dev->max_threads);
        if (smem > dev->smem_per_block_optin)
            set_status(p, "resource", "%s: %lld bytes of shared memory (%d static + %u dynamic), the device allows %d",
                       pl->entry, smem, kr->smem, pl->smem, dev->smem_per_block_optin);
        long long warps = (threads + 31) / 32;
        if ((long long)kr->registers * warps * 32 > dev->regs_per_block)
            set_status(p, "resource", "%s: %d registers x %lld threads exceed the %d registers of a CTA", pl->entry,
                       kr->registers, threads, dev->regs_per_block);
    }
}

/* The first shape before s whose compile dims all equal shape s's, or -1.
 * render() is a function of the params and the compile dims alone, so
 * such a shape's source is s's: the 10 shapes of the attention task make
 * 4 sources, and rendering and hashing the other 6 (86 kB each) took the
 * loop thread about 5 ms a child. */
static int same_compile_dims(const Task *t, int s)
{
    int nc = task_ncompile_dims(t);
    for (int r = 0; r < s; r++) {
        int i = 0;
        while (i < nc && task_dim_value(t, r, task_compile_dim_index(t, i)) ==
                             task_dim_value(t, s, task_compile_dim_index(t, i)))
            i++;
        if (i == nc)
            return r;
    }
    return -1;
}

/* The NVRTC program name of a kernel that is not the task's template. */
#define CUSTOM_FILE "candidate.cu"

int prep_render_source(const Task *t, const PrepInput *in, int shape, char **src, EvoErr *err)
{
    *src = NULL;
    if (in->custom_source)
        return render(t, in->custom_source, CUSTOM_FILE, in->vals, shape, src, err);
    return render(t, task_template_text(t), task_template_path(t), in->vals, shape, src, err);
}

int prep_render(const Task *t, const DeviceInfo *dev, const PrepInput *in, Prepared *p, EvoErr *err)
{
    int nshapes = task_nshapes(t);
    memset(p, 0, sizeof(*p));
    char *why = NULL;
    int v = task_check(t, in->vals, dev, &why, err);
    if (v < 0)
        return -1;
    if (v == 0) {
        set_status(p, "invalid", "%s", why ? why : "a constraint fails");
        free(why);
        return 0;
    }
    free(why);
    p->shape_unit = xcalloc((size_t)nshapes, sizeof(int));
    p->plans = xcalloc((size_t)nshapes, sizeof(Plan));
    p->nplans = nshapes;
    p->file = in->custom_source ? CUSTOM_FILE : task_template_path(t);
    for (int s = 0; s < nshapes; s++) {
        EvoErr e2;
        char *src = NULL;
        if (task_resolve(t, in->vals, s, dev, &p->plans[s], &e2)) {
            set_status(p, "invalid", "%s", e2.msg);
            break;
        }
        int same = same_compile_dims(t, s);
        if (same >= 0) {   /* the same source as shape `same`: not rendered again */
            p->shape_unit[s] = p->shape_unit[same];
            continue;
        }
        if (prep_render_source(t, in, s, &src, &e2)) {
            set_status(p, "invalid", "%s", e2.msg);
            break;
        }
        p->shape_unit[s] = add_unit(&p->units, &p->nunits, src);
    }
    return 0;
}

/* ---- staged compilation ---------------------------------------------- */

struct PrepCompile {
    Pool          *pool;
    PoolJob        job;
    CompileRequest req;
    CompileResult  res;
    EvoErr         err;
    int            rc;
    char           hash[65];   /* the source's sha256, taken on the lane */
    int            waiters;    /* threads in unit_join on it (under g_units) */
};

/* A unit's state and job change under this lock: a unit is submitted,
 * promoted, polled or cancelled by one thread (the loop's, or an MPI
 * agent's main thread) while another waits for it (a GPU slot's), and
 * two slots can wait for one parent's unit. Never held across a wait;
 * taken before the pool's own lock. */
static pthread_mutex_t g_units = PTHREAD_MUTEX_INITIALIZER;

static void compile_task(void *arg)
{
    PrepCompile *c = arg;
    template_hash(c->req.source, c->hash);
    c->rc = cserver_compile(&c->req, &c->res, &c->err);   /* in a helper process where enabled */
}

int prep_unit_submit(Pool *pool, const Task *t, const DeviceInfo *dev, Prepared *p, int u, int level,
                     EvoErr *err)
{
    PrepUnit *pu = &p->units[u];
    int rc = 0;
    pthread_mutex_lock(&g_units);
    if (pu->state == PREP_UNIT_QUEUED)
        pool_job_promote(pu->job->pool, &pu->job->job, level);
    if (pu->state == PREP_UNIT_RENDERED) {
        PrepCompile *c = xcalloc(1, sizeof(*c));
        c->pool = pool;
        fill_request(t, dev, pu, p->file, 0, &c->req);
        if (pool_submit_pri(pool, &c->job, compile_task, c, level)) {
            free(c);
            rc = err_set(err, "prep: the compile pool is closing");
        } else {
            pu->job = c;
            pu->state = PREP_UNIT_QUEUED;
        }
    }
    pthread_mutex_unlock(&g_units);
    return rc;
}

int prep_unit_ready(Prepared *p, int u)
{
    PrepUnit *pu = &p->units[u];
    pthread_mutex_lock(&g_units);
    int ready = pu->state == PREP_UNIT_DONE ||
                (pu->state == PREP_UNIT_QUEUED && pool_job_is_done(pu->job->pool, &pu->job->job));
    pthread_mutex_unlock(&g_units);
    return ready;
}

void prep_unit_cancel(Prepared *p, int u)
{
    PrepUnit *pu = &p->units[u];
    pthread_mutex_lock(&g_units);
    if (pu->state == PREP_UNIT_QUEUED && pu->job->waiters == 0 && pool_job_cancel(pu->job->pool, &pu->job->job)) {
        free(pu->job);
        pu->job = NULL;
        pu->state = PREP_UNIT_RENDERED;
    }
    pthread_mutex_unlock(&g_units);
}

static void unit_take(Prepared *p, const PrepUnit *pu);
static void lower_launches(PlanLaunch *l, int n, const PrepUnit *u);

/* Wait for queued unit u of p and move its result in, once: the first
 * waiter to wake takes it and, with take, folds it into p and lowers the
 * plans' launches, under g_units, so that a second waiter returns to a
 * finished p. Returns the compile's rc, 0 for a unit already done, and -1
 * (err) for one never submitted (or cancelled). */
static int unit_join(Prepared *p, int u, int take, EvoErr *err)
{
    PrepUnit *pu = &p->units[u];
    pthread_mutex_lock(&g_units);
    if (pu->state != PREP_UNIT_QUEUED) {
        int never = pu->state == PREP_UNIT_RENDERED;
        pthread_mutex_unlock(&g_units);
        return never ? err_set(err, "prep: unit %d was never submitted", u) : 0;
    }
    PrepCompile *c = pu->job;
    c->waiters++;
    pthread_mutex_unlock(&g_units);
    pool_job_wait(c->pool, &c->job);
    pthread_mutex_lock(&g_units);
    if (pu->job == c) {   /* the first to wake */
        pu->res = c->res;
        if (!pu->hash[0] && c->hash[0])
            memcpy(pu->hash, c->hash, sizeof(pu->hash));
        pu->job = NULL;
        pu->state = PREP_UNIT_DONE;
        if (c->rc == 0 && take) {
            unit_take(p, pu);
            for (int s = 0; pu->res.ok && s < p->nplans; s++)
                if (p->shape_unit[s] == u)
                    lower_launches(p->plans[s].launches, p->plans[s].nlaunches, pu);
        }
    }
    int rc = c->rc;
    if (rc)
        *err = c->err;
    if (--c->waiters == 0)
        free(c);
    pthread_mutex_unlock(&g_units);
    return rc;
}

/* Fold a finished unit into p: compile time, resources, compile errors. */
static void unit_take(Prepared *p, const PrepUnit *pu)
{
    const CompileResult *r = &pu->res;
    p->compile_ms += r->compile_ms;
    if (!r->ok) {
        char *line = first_error_line(r->log ? r->log : "");
        set_status(p, "compile_error", "%s: %s", r->error[0] ? r->error : "NVRTC failed", line);
        free(line);
        return;
    }
    KernelResources m;
    nvrtc_max_resources(r, &m);
    res_max(&p->maxres, &m);
}

const char *prep_failure_log(const Prepared *p)
{
    for (int u = 0; u < p->nunits; u++)
        if (p->units[u].state == PREP_UNIT_DONE && !p->units[u].res.ok)
            return p->units[u].res.log;
    return NULL;
}

const char *prep_unit_entry(const PrepUnit *u, const char *entry)
{
    const char *low = nvrtc_lowered_name(&u->res, entry);
    return low ? low : entry;
}

/* Launch entries as the module names them (the lowered names of u). */
static void lower_launches(PlanLaunch *l, int n, const PrepUnit *u)
{
    for (int i = 0; i < n; i++) {
        const char *low = nvrtc_lowered_name(&u->res, l[i].entry);
        if (low && strcmp(low, l[i].entry) != 0) {
            free(l[i].entry);
            l[i].entry = xstrdup(low);
        }
    }
}

void prep_ref_lower(const PrepRef *ref, Plan *plan, int shape)
{
    if (shape >= 0 && shape < ref->nshapes)
        lower_launches(plan->ref_launches, plan->nref_launches, &ref->units[ref->shape_unit[shape]]);
}

int prep_unit_wait(Pool *pool, Prepared *p, int u, EvoErr *err)
{
    (void)pool;
    return unit_join(p, u, 1, err) ? -1 : 0;
}

int prep_many(const Task *t, const DeviceInfo *dev, const PrepInput *in, Prepared *out, int n, int jobs,
              EvoErr *err)
{
    int nshapes = task_nshapes(t);
    /* 1. constraints, rendering and plans, serially (cheap). */
    for (int i = 0; i < n; i++)
        if (prep_render(t, dev, &in[i], &out[i], err))
            return -1;
    /* 2. compile every unit of every candidate on one pool. */
    Pool *pool = NULL;
    int total = 0;
    for (int i = 0; i < n; i++)
        if (!out[i].status[0])
            total += out[i].nunits;
    if (total == 0)
        return 0;
    long threads = jobs > 0 ? jobs : device_cores();
    if (threads < 1 || threads > total)
        threads = total;
    if (pool_open(&pool, (int)threads, err))
        return -1;
    int rc = 0;
    for (int i = 0; i < n && rc == 0; i++)
        if (!out[i].status[0])
            for (int u = 0; u < out[i].nunits && rc == 0; u++)
                rc = prep_unit_submit(pool, t, dev, &out[i], u, POOL_NOW, err);
    for (int i = 0; i < n; i++) {
        Prepared *p = &out[i];
        if (p->status[0])
            continue;
        for (int u = 0; u < p->nunits; u++) {
            if (p->units[u].state == PREP_UNIT_QUEUED) {
                EvoErr e2;
                if (prep_unit_wait(pool, p, u, &e2) && rc == 0) {
                    *err = e2;
                    rc = -1;
                }
            }
        }
        if (p->status[0] || rc)
            continue;
        for (int s = 0; s < nshapes; s++)
            prep_static_gate(t, dev, p, s);
    }
    pool_close(&pool);
    return rc;
}

int prep_busy(Prepared *p)
{
    int busy = 0;
    pthread_mutex_lock(&g_units);
    for (int u = 0; u < p->nunits && !busy; u++)
        busy = p->units[u].state == PREP_UNIT_QUEUED &&
               !pool_job_is_done(p->units[u].job->pool, &p->units[u].job->job);
    pthread_mutex_unlock(&g_units);
    return busy;
}

void prep_free(Prepared *p)
{
    for (int u = 0; u < p->nunits; u++) {
        if (p->units[u].job) {
            EvoErr e2;
            unit_join(p, u, 0, &e2);
        }
        free(p->units[u].source);
        nvrtc_result_free(&p->units[u].res);
    }
    free(p->units);
    for (int s = 0; s < p->nplans; s++)
        plan_free(&p->plans[s]);
    free(p->plans);
    free(p->shape_unit);
    free(p->error);
    memset(p, 0, sizeof(*p));
}

int prep_reference(const Task *t, const DeviceInfo *dev, PrepRef *out, int jobs, EvoErr *err)
{
    memset(out, 0, sizeof(*out));
    out->nshapes = task_nshapes(t);
    out->shape_unit = xcalloc((size_t)out->nshapes, sizeof(int));
    for (int s = 0; s < out->nshapes; s++) {
        char *src = NULL;
        if (render(t, task_reference_text(t), task_reference_path(t), NULL, s, &src, err))
            return -1;
        out->shape_unit[s] = add_unit(&out->units, &out->nunits, src);
    }
    CompileRequest *reqs = xcalloc((size_t)out->nunits, sizeof(*reqs));
    CompileResult *res = xcalloc((size_t)out->nunits, sizeof(*res));
    for (int u = 0; u < out->nunits; u++)
        fill_request(t, dev, &out->units[u], task_reference_path(t), 1, &reqs[u]);
    int rc = nvrtc_compile_many(reqs, res, out->nunits, jobs, err);
    for (int u = 0; u < out->nunits; u++) {
        out->units[u].res = res[u];
        if (rc == 0 && !res[u].ok) {
            char *line = first_error_line(res[u].log ? res[u].log : "");
            rc = err_set(err, "%s: the reference does not compile: %s", task_reference_path(t), line);
            free(line);
        }
    }
    free(reqs);
    free(res);
    return rc;
}

void prep_ref_free(PrepRef *r)
{
    for (int u = 0; u < r->nunits; u++) {
        free(r->units[u].source);
        nvrtc_result_free(&r->units[u].res);
    }
    free(r->units);
    free(r->shape_unit);
    memset(r, 0, sizeof(*r));
}

void prep_compile_record(const PrepUnit *u, CompileRecord *c)
{
    compile_record_init(c);
    c->cache_key = xstrdup(u->res.key);
    char hex[65];
    unit_hash(u, hex);
    c->source_hash = xstrdup(hex);
    c->arch = xstrdup(u->target);
    c->options = xstrdup(u->res.options ? u->res.options : "");
    int v = nvrtc_version();
    c->nvrtc_version = xasprintf("%d.%d", v / 1000, (v % 1000) / 10);
    c->ok = u->res.ok;
    c->log = xstrdup(u->res.log ? u->res.log : "");
    KernelResources m;
    nvrtc_max_resources(&u->res, &m);
    StrBuf sb = {0};
    sb_append(&sb, "[");
    for (int k = 0; k < u->res.nkernels; k++) {
        const KernelResources *r = &u->res.kernels[k];
        sb_printf(&sb, "%s{\"name\":\"%s\",\"registers\":%d,\"smem\":%d,\"spill_stores\":%d,\"spill_loads\":%d,"
                       "\"stack\":%d", k ? "," : "", r->name, r->registers, r->smem, r->spill_stores,
                  r->spill_loads, r->stack);
        /* the entry a lowered name stands for ("k<128, 64>"): names hold no quote or backslash */
        for (int e = 0; u->res.lowered && e < u->res.nnames; e++)
            if (u->res.lowered[e] && strcmp(u->res.lowered[e], r->name) == 0 &&
                strcmp(u->res.name_exprs[e], r->name) != 0)
                sb_printf(&sb, ",\"entry\":\"%s\"", u->res.name_exprs[e]);
        sb_append(&sb, "}");
    }
    sb_append(&sb, "]");
    c->resources_json = sb_take(&sb);
    c->registers = m.registers;
    c->smem = m.smem;
    c->spill_stores = m.spill_stores;
    c->spill_loads = m.spill_loads;
    c->stack = m.stack;
    c->compile_ms = u->res.compile_ms;
}

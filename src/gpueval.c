/*
 * gpueval: prep + worker = the Evaluator the run uses. See gpueval.h.
 */
#include "gpueval.h"

#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "msg.h"
#include "prep.h"

struct GpuEval {
    Task          *task;
    Worker        *worker;
    GpuEvalOptions opt;
    DeviceInfo     dev;
    Pool          *pool;       /* compile threads: children's units compile here while the GPU works */
    PrepRef        ref;
    int           *ref_ids;    /* worker module id per reference unit */
};

typedef struct Priv {
    Prepared  prep;
    int      *ids;             /* worker module id per unit, -1 until loaded */
} Priv;

int gpueval_open(GpuEval **out, Task *task, const GpuEvalOptions *opt, int *nogpu, EvoErr *err)
{
    *out = NULL;
    *nogpu = 0;
    GpuEval *g = xcalloc(1, sizeof(*g));
    g->task = task;
    g->opt = *opt;
    WorkerOptions wo = {0};
    if (worker_open(&g->worker, &wo, err)) {
        *nogpu = 1;
        free(g);
        return -1;
    }
    g->dev = *worker_device(g->worker);
    if (pool_open(&g->pool, opt->jobs, err))
        goto fail;
    if (prep_reference(task, &g->dev, &g->ref, opt->jobs, err))
        goto fail;
    g->ref_ids = xcalloc((size_t)g->ref.nunits, sizeof(int));
    int nent = task_nref_entries(task);
    const char **ents = xcalloc((size_t)nent + 1, sizeof(char *));
    for (int i = 0; i < nent; i++)
        ents[i] = task_ref_entry(task, i);
    for (int u = 0; u < g->ref.nunits; u++) {
        EvalStatus st;
        char msg[512];
        const CompileResult *r = &g->ref.units[u].res;
        if (worker_load(g->worker, r->cubin, r->cubin_len, ents, nent, &g->ref_ids[u], NULL, &st, msg, sizeof(msg),
                        err) ||
            st != EVAL_OK) {
            if (st != EVAL_OK)
                err_set(err, "%s: the reference does not load: %s: %s", task_reference_path(task),
                        gate_status_name(st), msg);
            free(ents);
            goto fail;
        }
    }
    free(ents);
    *out = g;
    return 0;
fail:
    gpueval_close(&g);
    return -1;
}

void gpueval_close(GpuEval **pg)
{
    GpuEval *g = *pg;
    if (!g)
        return;
    worker_close(&g->worker);
    pool_close(&g->pool);
    prep_ref_free(&g->ref);
    free(g->ref_ids);
    free(g);
    *pg = NULL;
}

const DeviceInfo *gpueval_device(const GpuEval *g)
{
    return &g->dev;
}

const GpuEvalOptions *gpueval_options(const GpuEval *g)
{
    return &g->opt;
}

Worker *gpueval_worker(GpuEval *g)
{
    return g->worker;
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
}

static int ge_submit(void *ctx, Child *c, int stage, EvoErr *err)
{
    GpuEval *g = ctx;
    Priv *pv = c->priv;
    if (c->rec.status && strcmp(c->rec.status, "ok") != 0)
        return 0;   /* failed already ("ok": passed stage A and its A/B) */
    if (stage == 1 && !pv) {
        PrepInput in = {.vals = c->vals, .custom_source = c->custom_source};
        Prepared p;
        if (prep_render(g->task, &g->dev, &in, &p, err))
            return -1;
        if (p.status[0]) {
            take_prep_status(c, &p);
            prep_free(&p);
            return 0;
        }
        pv = xcalloc(1, sizeof(*pv));
        pv->prep = p;
        pv->ids = xcalloc((size_t)p.nunits, sizeof(int));
        for (int u = 0; u < p.nunits; u++)
            pv->ids[u] = -1;
        c->priv = pv;
    }
    if (!pv)
        return err_set(err, "submit: stage %d of a child that was never rendered", stage);
    Prepared *p = &pv->prep;
    if (stage == 1)
        return prep_unit_submit(g->pool, g->task, &g->dev, p, p->shape_unit[0], err);
    for (int u = 0; u < p->nunits; u++)
        if (prep_unit_submit(g->pool, g->task, &g->dev, p, u, err))
            return -1;
    return 0;
}

static void ge_release(void *ctx, Child *c)
{
    GpuEval *g = ctx;
    Priv *pv = c->priv;
    if (!pv)
        return;
    EvoErr err;
    for (int u = 0; u < pv->prep.nunits; u++)
        if (pv->ids[u] >= 0)
            worker_unload(g->worker, pv->ids[u], &err);
    prep_free(&pv->prep);
    free(pv->ids);
    free(pv);
    c->priv = NULL;
}

/* Wait for the unit of shape s and load it into the worker (once).
 * Returns 0 with *st (EVAL_OK, or the load's failure; a failed compile
 * leaves pv->prep.status set and *st EVAL_OK), -1 on an orchestrator
 * failure. */
static int unit_ready(GpuEval *g, Priv *pv, int s, EvalStatus *st, char *msg, size_t cap, EvoErr *err)
{
    int u = pv->prep.shape_unit[s];
    *st = EVAL_OK;
    if (prep_unit_wait(g->pool, &pv->prep, u, err))
        return -1;
    if (pv->prep.status[0] || pv->ids[u] >= 0)
        return 0;
    int nent = task_nentries(g->task);
    const char **ents = xcalloc((size_t)nent + 1, sizeof(char *));
    for (int i = 0; i < nent; i++)
        ents[i] = task_entry(g->task, i);
    const CompileResult *r = &pv->prep.units[u].res;
    int rc = worker_load(g->worker, r->cubin, r->cubin_len, ents, nent, &pv->ids[u], NULL, st, msg, cap, err);
    free(ents);
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
    const Plan *plan = &pv->prep.plans[s];
    int cand = pv->ids[pv->prep.shape_unit[s]];
    int ref = g->ref_ids[g->ref.shape_unit[s]];
    if (worker_gate(g->worker, plan, cand, ref, &g->opt.gate, &rep, err))
        return -1;
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
    int s0 = stage == 1 ? 0 : 1, s1 = stage == 1 ? 1 : p->nplans;
    double t0 = time_now_ms();
    /* Compile waits, the static gate and loading, shape by shape. */
    for (int s = s0; s < s1 && !p->status[0]; s++) {
        EvalStatus st;
        char msg[768] = "";
        if (stage == 2 && prep_unit_submit(g->pool, g->task, &g->dev, p, p->shape_unit[s], err))
            return -1;
        if (unit_ready(g, pv, s, &st, msg, sizeof(msg), err))
            return -1;
        if (stage == 1 && s == 0)
            take_bench_unit(c, p);
        if (!p->status[0])
            prep_static_gate(g->task, &g->dev, p, s);
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
    const Plan *plan = &pv->prep.plans[0];
    if (worker_time(g->worker, plan, pv->ids[pv->prep.shape_unit[0]], 0, &g->opt.bench, &b, err))
        return -1;
    add_ms(&r->time_ms, t0);
    if (b.status != EVAL_OK) {
        timing_failure(c, b.status, "timing", b.error);
        return 0;
    }
    set_str(&r->status, "ok");
    fill_metrics(r, &b);
    StrBuf log = {0};
    sb_printf(&log, "time %s: median %.3f us, p90 %.3f us, CV %.2f%%, %d samples of %d runs\n", plan->shape_label,
              b.ms.median * 1000, b.ms.p90 * 1000, b.ms.cv * 100, b.ms.n, b.batch);
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
    if (unit_ready(g, pa, 0, &st, msg, sizeof(msg), err))
        return -1;
    if (pa->prep.status[0] || st != EVAL_OK)
        return err_set(err, "compare: the parent %lld no longer loads: %s", (long long)parent->rec.id,
                       pa->prep.status[0] ? pa->prep.error : msg);
    CompareResult cr;
    memset(&cr, 0, sizeof(cr));
    double t0 = time_now_ms();
    const Plan *plan = &pb->prep.plans[0];
    int mod = pb->ids[pb->prep.shape_unit[0]];
    int crc = worker_compare(g->worker, &pa->prep.plans[0], pa->ids[pa->prep.shape_unit[0]], plan, mod,
                             &g->opt.bench, &cr, err);
    add_ms(&r->time_ms, t0);
    if (crc)
        return -1;
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
    if (worker_metrics(g->worker, plan, mod, 0, &b, err))
        return -1;
    add_ms(&r->time_ms, t0);
    if (b.status != EVAL_OK) {
        timing_failure(kid, b.status, "launch metrics", b.error);
        return 0;
    }
    b.ms = cr.b_ms;
    b.batch = cr.batch_b;
    bench_fill_throughput(&b, plan, &g->dev);
    set_str(&r->status, "ok");
    fill_metrics(r, &b);
    StrBuf log = {0};
    sb_printf(&log, "A/B %s vs parent %lld: ratio %.4f (p10 %.4f, p90 %.4f), %d pairs, attempt %d; child median %.3f us\n",
              plan->shape_label, (long long)parent->rec.id, cr.ratio.median, cr.ratio.p10, cr.ratio.p90, cr.pairs,
              cr.attempts, cr.b_ms.median * 1000);
    log_append(r, &log);
    return 0;
}

const EvaluatorOps gpueval_ops = {"gpu", ge_submit, ge_gate, ge_time, ge_compare, ge_release};

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
    prep_ref_free(&g->ref);
    free(g->ref_ids);
    free(g);
    *pg = NULL;
}

const DeviceInfo *gpueval_device(const GpuEval *g)
{
    return &g->dev;
}

Worker *gpueval_worker(GpuEval *g)
{
    return g->worker;
}

/* ---- prepare --------------------------------------------------------- */

static int ge_prepare(void *ctx, Child **kids, int n, EvoErr *err)
{
    GpuEval *g = ctx;
    PrepInput *in = xcalloc((size_t)n, sizeof(*in));
    Prepared *out = xcalloc((size_t)n, sizeof(*out));
    for (int i = 0; i < n; i++) {
        in[i].vals = kids[i]->vals;
        in[i].custom_source = kids[i]->custom_source;
    }
    int rc = prep_many(g->task, &g->dev, in, out, n, g->opt.jobs, err);
    for (int i = 0; i < n; i++) {
        Child *c = kids[i];
        Prepared *p = &out[i];
        if (rc == 0 && p->nunits > 0) {
            const PrepUnit *u = &p->units[p->shape_unit[0]];
            free(c->source_text);
            c->source_text = xstrdup(u->source);
            free(c->rec.source_hash);
            c->rec.source_hash = xstrdup(u->hash);
            compile_record_free(&c->comp);
            prep_compile_record(u, &c->comp);
            c->rec.compile_ms = p->compile_ms;
            c->rec.registers = p->maxres.registers;
        }
        if (rc == 0 && p->status[0]) {
            c->rec.status = xstrdup(p->status);
            c->rec.error = xstrdup(p->error ? p->error : p->status);
            prep_free(p);
            continue;
        }
        if (rc == 0) {
            Priv *pv = xcalloc(1, sizeof(*pv));
            pv->prep = *p;
            pv->ids = xcalloc((size_t)p->nunits, sizeof(int));
            for (int u = 0; u < p->nunits; u++)
                pv->ids[u] = -1;
            c->priv = pv;
        } else {
            prep_free(p);
        }
    }
    free(in);
    free(out);
    return rc;
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

/* Load a child's modules into the worker. Returns 0 with *st (EVAL_OK or
 * the failure), -1 on an orchestrator failure. */
static int load_units(GpuEval *g, Priv *pv, EvalStatus *st, char *msg, size_t cap, EvoErr *err)
{
    int nent = task_nentries(g->task);
    const char **ents = xcalloc((size_t)nent + 1, sizeof(char *));
    for (int i = 0; i < nent; i++)
        ents[i] = task_entry(g->task, i);
    *st = EVAL_OK;
    int rc = 0;
    for (int u = 0; u < pv->prep.nunits && *st == EVAL_OK && rc == 0; u++) {
        if (pv->ids[u] >= 0)
            continue;
        const CompileResult *r = &pv->prep.units[u].res;
        rc = worker_load(g->worker, r->cubin, r->cubin_len, ents, nent, &pv->ids[u], NULL, st, msg, cap, err);
    }
    free(ents);
    return rc;
}

static void set_str(char **dst, const char *s)
{
    free(*dst);
    *dst = s ? xstrdup(s) : NULL;
}

/* ---- evaluate -------------------------------------------------------- */

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

static int ge_evaluate(void *ctx, Child *c, EvoErr *err)
{
    GpuEval *g = ctx;
    Priv *pv = c->priv;
    CandidateRecord *r = &c->rec;
    if (!pv) {
        set_str(&r->status, "invalid");
        set_str(&r->error, "not prepared");
        return 0;
    }
    StrBuf log = {0};
    EvalStatus st;
    char msg[768] = "";
    double t0 = time_now_ms();
    if (load_units(g, pv, &st, msg, sizeof(msg), err)) {
        sb_free(&log);
        return -1;
    }
    if (st != EVAL_OK) {
        set_str(&r->status, gate_status_name(st));
        set_str(&r->error, msg);
        r->log = sb_take(&log);
        return 0;
    }
    /* The gate: every shape, several seeds. */
    int nshapes = pv->prep.nplans;
    json_t *gj = json_array();
    for (int s = 0; s < nshapes; s++) {
        GateReport rep;
        const Plan *plan = &pv->prep.plans[s];
        int cand = pv->ids[pv->prep.shape_unit[s]];
        int ref = g->ref_ids[g->ref.shape_unit[s]];
        if (worker_gate(g->worker, plan, cand, ref, &g->opt.gate, &rep, err)) {
            json_decref(gj);
            sb_free(&log);
            return -1;
        }
        json_array_append_new(gj, gate_report_to_json(&rep));
        char line[1200];
        gate_report_format(&rep, line, sizeof(line));
        sb_printf(&log, "gate %s: %s\n", plan->shape_label, line);
        if (rep.status != EVAL_OK) {
            set_str(&r->status, gate_status_name(rep.status));
            char *e = xasprintf("%s%s%s (shape %s, seed %llu)", rep.check, rep.check[0] ? ": " : "", rep.error,
                                plan->shape_label, (unsigned long long)rep.seed);
            set_str(&r->error, e);
            free(e);
            break;
        }
    }
    char *gs = json_dumps(gj, JSON_COMPACT);
    set_str(&r->gate_json, gs);
    free(gs);
    json_decref(gj);
    r->gate_ms = time_now_ms() - t0;
    if (!r->status && g->opt.gate_only)
        set_str(&r->status, "ok");
    if (r->status) {
        r->log = sb_take(&log);
        return 0;
    }
    /* Timing of the benchmark shape, with launch metrics. */
    t0 = time_now_ms();
    BenchResult b;
    memset(&b, 0, sizeof(b));
    if (worker_time(g->worker, &pv->prep.plans[0], pv->ids[pv->prep.shape_unit[0]], 0, &g->opt.bench, &b, err)) {
        sb_free(&log);
        return -1;
    }
    r->time_ms = time_now_ms() - t0;
    if (b.status != EVAL_OK) {
        set_str(&r->status, gate_status_name(b.status));
        set_str(&r->error, b.error);
    } else {
        set_str(&r->status, "ok");
        fill_metrics(r, &b);
        sb_printf(&log, "time %s: median %.3f us, p90 %.3f us, CV %.2f%%, %d samples of %d runs\n",
                  pv->prep.plans[0].shape_label, b.ms.median * 1000, b.ms.p90 * 1000, b.ms.cv * 100, b.ms.n,
                  b.batch);
    }
    r->log = sb_take(&log);
    return 0;
}

/* ---- compare --------------------------------------------------------- */

static int ge_compare(void *ctx, Child *parent, Child *kid, double *ratio, double *spread, EvoErr *err)
{
    GpuEval *g = ctx;
    Priv *pa = parent->priv, *pb = kid->priv;
    EvalStatus st;
    char msg[768];
    if (!pa || !pb)
        return err_set(err, "compare: a candidate is not prepared");
    if (load_units(g, pa, &st, msg, sizeof(msg), err))
        return -1;
    if (st != EVAL_OK)
        return err_set(err, "compare: the parent %lld no longer loads: %s", (long long)parent->rec.id, msg);
    if (load_units(g, pb, &st, msg, sizeof(msg), err))
        return -1;
    CompareResult cr;
    memset(&cr, 0, sizeof(cr));
    double t0 = time_now_ms();
    int crc = worker_compare(g->worker, &pa->prep.plans[0], pa->ids[pa->prep.shape_unit[0]], &pb->prep.plans[0],
                       pb->ids[pb->prep.shape_unit[0]], &g->opt.bench, &cr, err);
    /* The A/B is part of the child's timing cost. */
    kid->rec.time_ms = (isnan(kid->rec.time_ms) ? 0 : kid->rec.time_ms) + time_now_ms() - t0;
    if (crc)
        return -1;
    if (cr.status != EVAL_OK)
        return err_set(err, "compare with parent %lld: %s: %s", (long long)parent->rec.id,
                       gate_status_name(cr.status), cr.error);
    *ratio = cr.ratio.median;
    *spread = cr.ratio.p90 - cr.ratio.p10;
    if (cr.noisy)
        warnf("A/B of candidate vs parent %lld stayed noisy after %d attempts (spread %.2f%%)",
              (long long)parent->rec.id, cr.attempts, *spread * 100);
    return 0;
}

const EvaluatorOps gpueval_ops = {"gpu", ge_prepare, ge_evaluate, ge_compare, ge_release};

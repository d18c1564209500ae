/*
 * gpueval_judge: gpueval's judging steps on a GPU (gpueval_judge.h): the
 * correctness gate shape by shape, the timing of the benchmark shape, the
 * calibration of several GPUs and the A/B against the parent.
 */
#include "gpu/gpueval_judge.h"

#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpu/watchdog.h"
#include "msg.h"

/* ---- gate ------------------------------------------------------------ */

/* The record's fields that describe the benchmark-shape unit. */
static void take_bench_unit(Child *c, const Prepared *p)
{
    const PrepUnit *u = &p->units[p->shape_unit[0]];
    ge_set_str(&c->source_text, u->source);
    compile_record_free(&c->comp);
    prep_compile_record(u, &c->comp);
    ge_set_str(&c->rec.source_hash, c->comp.source_hash);
}

/* Gate shape s of a child whose unit is loaded. Returns 0 (a failure is in
 * the record), -1 on an orchestrator failure. */
static int gate_shape(GpuEval *g, Child *c, Priv *pv, int s, json_t *gj, StrBuf *log, EvoErr *err)
{
    CandidateRecord *r = &c->rec;
    GateReport rep;
    Slot *sl = ge_slot_of(g, c);
    prep_ref_lower(&g->ref, &pv->prep.plans[s], s);
    const Plan *plan = &pv->prep.plans[s];
    int cand = *ge_mod_id(g, pv, sl, s);
    int ref = sl->ref_ids[g->ref.shape_unit[s]];
    /* a worker that must (re)build this shape's inputs and reference
     * outputs first gets the ceiling: the parent's time did not include it */
    int warm = worker_pid(sl->worker) > 0 && sl->warm[s] == worker_spawns(sl->worker);
    worker_set_watchdog(sl->worker, watchdog_ms(warm && pv->parent_gate_ms ? pv->parent_gate_ms[s] : NAN));
    if (worker_gate(sl->worker, plan, cand, ref, &g->opt.gate, &rep, err))
        return ge_slot_failed(g, sl, err);
    pv->gate_ms[s] = worker_last_ms(sl->worker);
    if (worker_pid(sl->worker) > 0)
        sl->warm[s] = worker_spawns(sl->worker);
    json_array_append_new(gj, gate_report_to_json(&rep));
    char line[1200];
    gate_report_format(&rep, line, sizeof(line));
    sb_printf(log, "gate %s: %s\n", plan->shape_label, line);
    if (rep.status != EVAL_OK) {
        ge_set_str(&r->status, gate_status_name(rep.status));
        char *e = xasprintf("%s%s%s (shape %s, seed %llu)", rep.check, rep.check[0] ? ": " : "", rep.error,
                            plan->shape_label, (unsigned long long)rep.seed);
        ge_set_str(&r->error, e);
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

int ge_gate(void *ctx, Child *c, int stage, EvoErr *err)
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
    ge_stage_shapes(p, stage, &s0, &s1);
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
        if (ge_unit_ready(g, ge_slot_of(g, c), pv, s, 0, &st, msg, sizeof(msg), err))
            return ge_slot_failed(g, ge_slot_of(g, c), err);
        if (stage == 1 && s == 0)
            take_bench_unit(c, p);
        if (!p->status[0])
            prep_static_gate(g->task, &g->slots[0].dev, p, s);
        if (!p->status[0] && st != EVAL_OK) {
            ge_set_str(&r->status, gate_status_name(st));
            ge_set_str(&r->error, msg);
            break;
        }
    }
    r->compile_ms = p->compile_ms;
    r->registers = p->maxres.registers;
    if (p->status[0])
        ge_take_prep_status(c, p);
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
    ge_set_str(&r->gate_json, gs);
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
    ge_set_str(&r->metrics_json, s);
    free(s);
    json_decref(j);
}

/* A failure of the child while timed (a crash, a timeout, a corrupted
 * resident state) goes into its record. */
static void timing_failure(Child *c, EvalStatus st, const char *what, const char *msg)
{
    ge_set_str(&c->rec.status, gate_status_name(st));
    char *e = xasprintf("%s: %s", what, msg && msg[0] ? msg : gate_status_name(st));
    ge_set_str(&c->rec.error, e);
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
    ge_set_str(&r->metrics_json, s);
    free(s);
    json_decref(j);
}

/* ---- calibrate ------------------------------------------------------- */

int ge_calibrate(void *ctx, Child *base, EvoErr *err)
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
        if (ge_unit_ready(g, sl, pv, 0, 1, &st, msg, sizeof(msg), err) ||
            worker_time(sl->worker, &pv->prep.plans[0], *ge_mod_id(g, pv, sl, 0), 0, &g->opt.bench, &b, err))
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

int ge_time(void *ctx, Child *c, EvoErr *err)
{
    GpuEval *g = ctx;
    Priv *pv = c->priv;
    CandidateRecord *r = &c->rec;
    if (r->status)
        return 0;
    if (!pv || r->gate_stage < GATE_STAGE_BENCH)
        return err_set(err, "time: a child that was not gated");
    if (g->opt.gate_only) {
        ge_set_str(&r->status, "ok");
        return 0;
    }
    double t0 = time_now_ms();
    BenchResult b;
    memset(&b, 0, sizeof(b));
    Slot *sl = ge_slot_of(g, c);
    const Plan *plan = &pv->prep.plans[0];
    EvalStatus st;
    char msg[768] = "";
    worker_set_watchdog(sl->worker, watchdog_ms(NAN));   /* no parent: the ceiling */
    if (ge_unit_ready(g, sl, pv, 0, 0, &st, msg, sizeof(msg), err) ||
        worker_time(sl->worker, plan, *ge_mod_id(g, pv, sl, 0), 0, &g->opt.bench, &b, err))
        return ge_slot_failed(g, sl, err);
    pv->time_ms = worker_last_ms(sl->worker);
    add_ms(&r->time_ms, t0);
    if (st != EVAL_OK || b.status != EVAL_OK) {
        timing_failure(c, st != EVAL_OK ? st : b.status, "timing", st != EVAL_OK ? msg : b.error);
        return 0;
    }
    ge_set_str(&r->status, "ok");
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

int ge_compare(void *ctx, Child *parent, Child *kid, double *ratio, double *spread, EvoErr *err)
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
    Slot *sl = ge_slot_of(g, kid);
    if (ge_unit_ready(g, sl, pa, 0, 1, &st, msg, sizeof(msg), err))
        return ge_slot_failed(g, sl, err);
    if (pa->prep.status[0] || st != EVAL_OK)
        return err_set(err, "compare: the parent %lld no longer loads: %s", (long long)parent->rec.id,
                       pa->prep.status[0] ? pa->prep.error : msg);
    CompareResult cr;
    memset(&cr, 0, sizeof(cr));
    double t0 = time_now_ms();
    const Plan *plan = &pb->prep.plans[0];
    if (ge_unit_ready(g, sl, pb, 0, 0, &st, msg, sizeof(msg), err))
        return ge_slot_failed(g, sl, err);
    if (pb->prep.status[0] || st != EVAL_OK) {
        timing_failure(kid, st != EVAL_OK ? st : EVAL_LAUNCH_ERROR, "load", pb->prep.status[0] ? pb->prep.error : msg);
        return 0;
    }
    int mod = *ge_mod_id(g, pb, sl, 0);
    worker_set_watchdog(sl->worker, watchdog_ms(pa->time_ms));
    int crc = worker_compare(sl->worker, &pa->prep.plans[0], *ge_mod_id(g, pa, sl, 0), plan, mod, &g->opt.bench, &cr,
                             err);
    pb->time_ms = worker_last_ms(sl->worker);
    add_ms(&r->time_ms, t0);
    if (crc)
        return ge_slot_failed(g, sl, err);
    if (cr.status != EVAL_OK) {
        /* The parent passed the full gate and its own A/B: the child is to blame. */
        timing_failure(kid, cr.status, "A/B with its parent", cr.error);
        return 0;
    }
    *ratio = cr.ratio.median;
    *spread = cr.ratio.p90 - cr.ratio.p10;
    if (cr.noisy) {
        int w = 0;   /* the profile whose median ratio is known least well */
        for (int k = 1; k < cr.nprof; k++)
            if (bench_ratio_halfwidth(&cr.prof[k].ratio) > bench_ratio_halfwidth(&cr.prof[w].ratio))
                w = k;
        warnf("A/B of candidate vs parent %lld stayed noisy after %d rounds: profile %s's median ratio %.4f "
              "known to +-%.2f%% (95%%), above %.2f%%",
              (long long)parent->rec.id, cr.attempts, cr.prof[w].name, cr.prof[w].ratio.median,
              bench_ratio_halfwidth(&cr.prof[w].ratio) * 100, g->opt.bench.noise_threshold * 100);
    }
    /* The child's latency is its side of the A/B; the launch metrics come
     * from a metrics request, which runs nothing timed. */
    BenchResult b;
    memset(&b, 0, sizeof(b));
    t0 = time_now_ms();
    if (worker_metrics(sl->worker, plan, mod, 0, &b, err))
        return ge_slot_failed(g, sl, err);
    add_ms(&r->time_ms, t0);
    if (b.status != EVAL_OK) {
        timing_failure(kid, b.status, "launch metrics", b.error);
        return 0;
    }
    b.ms = cr.b_ms;
    b.batch = cr.batch_b;
    b.nprof = cr.nprof;   /* every profile's latency and ratio go into metrics_json */
    memcpy(b.prof, cr.prof, sizeof(b.prof));
    ge_set_str(&r->status, "ok");
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

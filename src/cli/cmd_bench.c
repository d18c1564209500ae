/*
 * cmd_bench: `evoeng bench TASK [--params K=V,...] [--source FILE.cu]
 * [--against K=V,...] [--repeat N] [--profile NAME] [--cold] [--json]`: one configuration
 * (or an outside kernel with the task's entry points) through the same
 * evaluator a run uses: static gate, correctness gate on every shape,
 * timing, launch metrics; then optionally the run's interleaved A/B
 * comparison against other params (or, --repeat without --against, N of
 * them against itself: an A/A test of the timing).
 */
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/abrepeat.h"
#include "cli/commands.h"
#include "cli/inspect.h"
#include "cli/runctx.h"
#include "gpu/gpueval.h"
#include "msg.h"
#include "search/ops.h"

/* Each input profile's latency (and ratio, after an A/B) of c, one line
 * each, when it was timed on more than the one implicit profile. */
static void print_profiles(const Child *c, int ab)
{
    ProfileStat ps[PLAN_MAX_PROFILES];
    int n = inspect_profiles(&c->rec, ps);
    if (n == 0 || (n == 1 && strcmp(ps[0].name, "default") == 0))
        return;
    for (int k = 0; k < n; k++) {
        printf("    profile %-10s %9.3f us, %.1f TFLOP/s", ps[k].name, ps[k].ms.median * 1000, ps[k].tflops);
        if (ab && ps[k].ratio.n > 0)
            printf("; A/B ratio %.4f (p10 %.4f, p90 %.4f, against %.3f us)%s", ps[k].ratio.median, ps[k].ratio.p10,
                   ps[k].ratio.p90, ps[k].a_ms.median * 1000, ps[k].noisy ? ", noisy" : "");
        printf("\n");
    }
}

static void print_text(const Task *t, const Child *c, const DeviceInfo *dev)
{
    const CandidateRecord *r = &c->rec;
    printf("task %s on %s (%s, %d SMs)\n", task_name(t), dev->name, dev->arch, dev->sm_count);
    printf("  params       %s%s\n", c->params_key, c->custom_source ? "  (outside kernel)" : "");
    printf("  verdict      %s%s%s\n", r->status, r->error ? ": " : "", r->error ? r->error : "");
    if (r->log && *r->log) {
        printf("  log\n");
        const char *p = r->log;
        while (*p) {
            const char *e = strchr(p, '\n');
            int n = e ? (int)(e - p) : (int)strlen(p);
            printf("    %.*s\n", n, p);
            p += n + (e ? 1 : 0);
        }
    }
    if (strcmp(r->status, "ok") != 0)
        return;
    ProfileStat ps[PLAN_MAX_PROFILES];
    printf("  latency      %.3f us median, %.3f us p90, CV %.2f%%%s\n", r->latency_us, r->p90_us, r->cv * 100,
           inspect_profiles(r, ps) > 1 ? " (geometric mean of the profiles)" : "");
    print_profiles(c, 0);
    printf("  launch       %lld CTAs (largest launch; %lld in all) x %lld threads, %lld registers, "
           "smem %lld + %lld B\n", (long long)r->ctas, (long long)r->ctas_total, (long long)r->threads,
           (long long)r->registers, (long long)r->smem_static, (long long)r->smem_dynamic);
    printf("  occupancy    %lld CTAs/SM, %.2f waves on %d SMs\n", (long long)r->occupancy, r->waves, dev->sm_count);
    printf("  throughput   %.1f TFLOP/s (%.1f%% of %.0f), %.0f GB/s (%.1f%% of %.0f)\n", r->tflops,
           r->pct_peak_flops, dev->peak_tflops_fp16, r->gbps, r->pct_peak_bw, dev->peak_gbps);
}

static void print_json(const Task *t, const Child *c, const DeviceInfo *dev)
{
    const CandidateRecord *r = &c->rec;
    json_t *o = json_pack("{s:s, s:s, s:s, s:s, s:s?}", "task", task_name(t), "device", dev->name, "params",
                          c->params_key, "status", r->status, "error", r->error);
    if (r->gate_json)
        json_object_set_new(o, "gate", json_loads(r->gate_json, 0, NULL));
    if (r->metrics_json)
        json_object_set_new(o, "timing", json_loads(r->metrics_json, 0, NULL));
    json_t *profs = inspect_profiles_json(r);
    if (profs)
        json_object_set_new(o, "profiles", profs);
    if (strcmp(r->status, "ok") == 0) {
        json_object_set_new(o, "latency_us", json_real(r->latency_us));
        json_object_set_new(o, "p90_us", json_real(r->p90_us));
        json_object_set_new(o, "cv", json_real(r->cv));
        json_object_set_new(o, "ctas", json_integer(r->ctas));
        json_object_set_new(o, "occupancy", json_integer(r->occupancy));
        json_object_set_new(o, "waves", json_real(r->waves));
        json_object_set_new(o, "tflops", json_real(r->tflops));
        json_object_set_new(o, "gbps", json_real(r->gbps));
    }
    out_json_doc(o);
}

/* Evaluate one child completely. 0, or -1 with err. */
static int bench_one(GpuEval *ge, Child *c, EvoErr *err)
{
    return evolve_evaluate(&gpueval_ops, ge, c, err);
}

/* The ratios of --repeat: the run's (the worst timing profile's, which
 * the revert rule reads) and each profile's own. */
typedef struct Repeats {
    int     n, done;
    double *ratio, *spread;               /* [n] */
    int     nprof;
    char    name[PLAN_MAX_PROFILES][32];
    double *pr[PLAN_MAX_PROFILES];        /* [n] each profile's median ratio */
} Repeats;

/* rp->n comparisons of a (A) and c (B) with the run's compare call and
 * options into *rp. Returns EVO_EXIT_OK, or EVO_EXIT_FAIL after a failed
 * comparison (rp->done counts those made before it). */
static EvoExit repeat_collect(GpuEval *ge, Child *a, Child *c, Repeats *rp)
{
    EvoErr err;
    int every = rp->n >= 20 ? rp->n / 10 : 0;
    for (; rp->done < rp->n; rp->done++) {
        int i = rp->done;
        if (gpueval_ops.compare(ge, a, c, &rp->ratio[i], &rp->spread[i], &err)) {
            errorf("A/B comparison %d of %d: %s", i + 1, rp->n, err.msg);
            return EVO_EXIT_FAIL;
        }
        if (strcmp(c->rec.status, "ok") != 0) {   /* the A/B itself failed: the child is marked */
            errorf("A/B comparison %d of %d: %s: %s", i + 1, rp->n, c->rec.status, c->rec.error ? c->rec.error : "");
            return EVO_EXIT_FAIL;
        }
        ProfileStat ps[PLAN_MAX_PROFILES];
        int np = inspect_profiles(&c->rec, ps);
        if (i == 0) {
            rp->nprof = np;
            for (int k = 0; k < np; k++) {
                snprintf(rp->name[k], sizeof(rp->name[k]), "%s", ps[k].name);
                rp->pr[k] = xcalloc((size_t)rp->n, sizeof(double));
            }
        }
        for (int k = 0; k < rp->nprof; k++)
            rp->pr[k][i] = k < np && ps[k].ratio.n > 0 ? ps[k].ratio.median : NAN;
        if (every && (i + 1) % every == 0)
            progressf("bench: %d/%d A/B comparisons, last ratio %.4f", i + 1, rp->n, rp->ratio[i]);
    }
    return EVO_EXIT_OK;
}

/* The figures of one summary as JSON members of o. */
static void repeat_json_stats(json_t *o, const double *ratio, int done, const AbRepeatStats *st, int aa)
{
    json_t *jr = json_array();
    for (int i = 0; i < done; i++)
        json_array_append_new(jr, isfinite(ratio[i]) ? json_real(ratio[i]) : json_null());
    json_object_set_new(o, "ratios", jr);
    const double figs[] = {st->median, st->min, st->max, st->p95_dev, st->max_dev};
    const char *names[] = {"median", "min", "max", "p95_abs_dev", "max_abs_dev"};
    for (size_t i = 0; i < EVO_ARRAY_LEN(figs); i++)
        json_object_set_new(o, names[i], isfinite(figs[i]) ? json_real(figs[i]) : json_null());
    json_object_set_new(o, "failed", json_integer(st->failed));
    json_object_set_new(o, "reverts", json_integer(st->reverts));
    json_object_set_new(o, "false_reverts", aa ? json_integer(st->reverts) : json_null());
    json_object_set_new(o, "aa_pass", aa ? json_boolean(abrepeat_aa_pass(st, 0.005)) : json_null());
}

/* --repeat: the comparisons, then their summary (abrepeat.h), for the
 * run's ratio and, with several timing profiles, for each profile. */
static EvoExit bench_repeat(const Settings *s, const Task *t, GpuEval *ge, Child *a, Child *c, int aa)
{
    Repeats rp = {.n = s->repeat};
    rp.ratio = xcalloc((size_t)rp.n, sizeof(double));
    rp.spread = xcalloc((size_t)rp.n, sizeof(double));
    /* compare() sets B's latency to its side of each A/B: keep the timed ones. */
    double a_lat = a->rec.latency_us, b_lat = c->rec.latency_us;
    EvoExit rc = repeat_collect(ge, a, c, &rp);
    int done = rp.done, many = rp.nprof > 1;
    AbRepeatStats st, ps[PLAN_MAX_PROFILES];
    abrepeat_stats(rp.ratio, done, s->revert_threshold, &st);
    for (int k = 0; k < rp.nprof; k++)
        abrepeat_stats(rp.pr[k], done, s->revert_threshold, &ps[k]);
    const BenchOptions *bo = &gpueval_options(ge)->bench;
    if (s->json) {
        json_t *o = json_pack("{s:s, s:s, s:s, s:b, s:i, s:i, s:b, s:b, s:f}", "task", task_name(t), "a_params",
                              a->params_key, "b_params", c->params_key, "aa", aa, "repeat", rp.n, "done", done,
                              "shared", bo->shared, "cold", bo->cold, "threshold", s->revert_threshold);
        json_object_set_new(o, "a_latency_us", isfinite(a_lat) ? json_real(a_lat) : json_null());
        json_object_set_new(o, "b_latency_us", isfinite(b_lat) ? json_real(b_lat) : json_null());
        json_t *js = json_array();
        for (int i = 0; i < done; i++)
            json_array_append_new(js, isfinite(rp.spread[i]) ? json_real(rp.spread[i]) : json_null());
        json_object_set_new(o, "spreads", js);
        json_object_set_new(o, "device", json_string(gpueval_device(ge)->name));
        repeat_json_stats(o, rp.ratio, done, &st, aa);
        json_t *jp = json_array();
        for (int k = 0; k < rp.nprof; k++) {
            json_t *p = json_pack("{s:s}", "name", rp.name[k]);
            repeat_json_stats(p, rp.pr[k], done, &ps[k], aa);
            json_array_append_new(jp, p);
        }
        json_object_set_new(o, "profiles", jp);
        out_json_doc(o);
    } else {
        printf("  repeat       %d of %d A/B comparisons of this (B) against %s (A)%s, shared buffers %s%s\n", done,
               rp.n, aa ? "itself" : a->params_key, aa ? ": A/A" : "", bo->shared ? "yes" : "no",
               bo->cold ? ", cold" : "");
        for (int i = 0; i < done; i++)   /* ten a line */
            printf("%s%.4f", i == 0 ? "  ratios       " : i % 10 == 0 ? "\n               " : " ", rp.ratio[i]);
        if (done)
            printf("%s\n", many ? "  (each the worst profile's)" : "");
        printf("  median       %.4f  (range %.4f .. %.4f)\n", st.median, st.min, st.max);
        printf("  |ratio - 1|  p95 %.2f%%, max %.2f%%\n", st.p95_dev * 100, st.max_dev * 100);
        printf("  reverts      %d of %d at threshold %.1f%%%s\n", st.reverts, done, s->revert_threshold * 100,
               aa ? " (false reverts: both sides are the same kernel)" : "");
        for (int k = 0; many && k < rp.nprof; k++)
            printf("    profile %-10s median %.4f (range %.4f .. %.4f), |ratio - 1| p95 %.2f%%, max %.2f%%, "
                   "%d revert%s%s%s\n", rp.name[k], ps[k].median, ps[k].min, ps[k].max, ps[k].p95_dev * 100,
                   ps[k].max_dev * 100, ps[k].reverts, ps[k].reverts == 1 ? "" : "s", aa ? "; A/A " : "",
                   aa ? (abrepeat_aa_pass(&ps[k], 0.005) ? "pass" : "FAIL") : "");
        if (aa)
            printf("  A/A          %s (bar: p95 |ratio - 1| <= 0.5%% and no false revert%s)\n",
                   abrepeat_aa_pass(&st, 0.005) ? "pass" : "FAIL", many ? ", on the worst profile's ratios" : "");
    }
    free(rp.ratio);
    free(rp.spread);
    for (int k = 0; k < rp.nprof; k++)
        free(rp.pr[k]);
    return rc;
}

/* --against / --repeat: the reference configuration (the same one for an
 * A/A test), then one or s->repeat interleaved A/B comparisons. */
static EvoExit bench_against(const Settings *s, const Task *t, GpuEval *ge, Child *c)
{
    EvoErr err;
    Child a;
    evolve_child_init(&a, task_nparams(t));
    a.op = "bench";
    int aa = !s->against;
    const char *apar = aa ? (s->params ? s->params : "") : s->against;
    EvoExit rc = EVO_EXIT_OK;
    if (task_params_parse(t, apar, a.vals, &err)) {
        errorf("--against: %s", err.msg);
        rc = EVO_EXIT_USAGE;
        goto out;
    }
    if (aa)
        a.custom_source = c->custom_source;
    a.params_key = ops_params_key(t, a.vals, NULL);
    if (bench_one(ge, &a, &err)) {
        errorf("%s", err.msg);
        rc = EVO_EXIT_FAIL;
        goto out;
    }
    if (strcmp(a.rec.status, "ok") != 0) {
        errorf("--against %s: %s: %s", a.params_key, a.rec.status, a.rec.error ? a.rec.error : "");
        rc = EVO_EXIT_FAIL;
        goto out;
    }
    if (s->repeat) {
        rc = bench_repeat(s, t, ge, &a, c, aa);
        goto out;
    }
    double ratio, spread;
    if (gpueval_ops.compare(ge, &a, c, &ratio, &spread, &err)) {
        errorf("%s", err.msg);
        rc = EVO_EXIT_FAIL;
        goto out;
    }
    if (s->json) {
        json_t *o = json_pack("{s:s, s:f, s:f, s:f}", "against", a.params_key, "against_latency_us", a.rec.latency_us,
                              "ratio", ratio, "ratio_spread", spread);
        json_t *profs = inspect_profiles_json(&c->rec);
        if (profs)
            json_object_set_new(o, "profiles", profs);
        char *txt = json_dumps(o, JSON_COMPACT);
        printf("%s\n", txt);
        free(txt);
        json_decref(o);
    } else {
        ProfileStat ps[PLAN_MAX_PROFILES];
        int np = inspect_profiles(&c->rec, ps);
        printf("  vs against   %s: %.3f us; interleaved A/B ratio (this/against) %.4f%s, p10-p90 spread %.4f: %s\n",
               a.params_key, a.rec.latency_us, ratio, np > 1 ? " (the worst profile's)" : "", spread,
               ratio < 0.98 ? "faster" : ratio > 1.02 ? "slower" : "within 2%");
        print_profiles(c, 1);
    }
out:
    evolve_child_clear(&a, &gpueval_ops, ge);
    return rc;
}

/* --gpus with more than one: the same configuration judged and timed on
 * each other GPU too (its own worker, gate and timing), side by side with
 * the first. */
static EvoExit bench_other_gpus(const Settings *s, const Task *t, GpuEval *ge, const Child *first)
{
    EvoExit rc = EVO_EXIT_OK;
    json_t *arr = s->json ? json_array() : NULL;
    const DeviceInfo *d0 = gpueval_device(ge);
    if (arr)
        json_array_append_new(arr, json_pack("{s:i, s:s, s:s, s:f}", "index", d0->ordinal, "name", d0->name, "uuid",
                                             d0->uuid, "latency_us", first->rec.latency_us));
    else
        printf("  GPU %d  %s: %.3f us\n", d0->ordinal, d0->name, first->rec.latency_us);
    for (int w = 1; w < gpueval_slots(ge) && rc == EVO_EXIT_OK; w++) {
        EvoErr err;
        Child c;
        evolve_child_init(&c, task_nparams(t));
        memcpy(c.vals, first->vals, (size_t)task_nparams(t) * sizeof(int64_t));
        c.op = "bench";
        c.params_key = xstrdup(first->params_key);
        c.custom_source = first->custom_source;
        c.gpu = w;
        const DeviceInfo *d = gpueval_slot_device(ge, w);
        if (evolve_evaluate(&gpueval_ops, ge, &c, &err)) {
            errorf("GPU %d: %s", d->ordinal, err.msg);
            rc = EVO_EXIT_FAIL;
        } else if (strcmp(c.rec.status, "ok") != 0) {
            errorf("GPU %d: %s: %s", d->ordinal, c.rec.status, c.rec.error ? c.rec.error : "");
            rc = EVO_EXIT_FAIL;
        } else if (arr) {
            json_array_append_new(arr, json_pack("{s:i, s:s, s:s, s:f}", "index", d->ordinal, "name", d->name,
                                                 "uuid", d->uuid, "latency_us", c.rec.latency_us));
        } else {
            printf("  GPU %d  %s: %.3f us (%+.2f%% against GPU %d)\n", d->ordinal, d->name, c.rec.latency_us,
                   (c.rec.latency_us / first->rec.latency_us - 1) * 100, d0->ordinal);
        }
        evolve_child_clear(&c, &gpueval_ops, ge);
    }
    if (arr) {
        json_t *o = json_pack("{s:o}", "gpus", arr);
        char *js = json_dumps(o, JSON_COMPACT);
        printf("%s\n", js);
        free(js);
        json_decref(o);
    }
    return rc;
}

EvoExit cmd_bench(const Settings *s)
{
    EvoErr err;
    Task *t = NULL;
    GpuEval *ge = NULL;
    char *src = NULL;
    if (bench_env_check(&err)) {
        errorf("%s", err.msg);
        return EVO_EXIT_USAGE;
    }
    EvoExit rc = runctx_load_task(s, &t);
    if (rc != EVO_EXIT_OK)
        return rc;
    Child c;
    evolve_child_init(&c, task_nparams(t));
    c.op = "bench";
    if (task_params_parse(t, s->params ? s->params : "", c.vals, &err)) {
        errorf("--params: %s", err.msg);
        rc = EVO_EXIT_USAGE;
        goto out;
    }
    if (s->source) {
        if (file_read(s->source, &src, NULL, &err)) {
            errorf("--source: %s", err.msg);
            rc = EVO_EXIT_USAGE;
            goto out;
        }
        c.custom_source = src;
    }
    c.params_key = ops_params_key(t, c.vals, NULL);
    runctx_set_cache(s);
    GpuEvalOptions go = {.jobs = s->jobs, .verbose = s->verbose, .devices = s->gpus, .ndevices = s->ngpus,
                         .count = s->gpus_count};
    gate_options_default(&go.gate);
    go.gate.nseeds = s->seeds;
    bench_options_default(&go.bench);
    go.bench.cold = s->cold;
    go.bench.seed = s->seed;
    if (s->shared >= 0)
        go.bench.shared = s->shared;
    int nogpu = 0;
    if (gpueval_open(&ge, t, &go, &nogpu, &err)) {
        if (nogpu) {
            errorf("'bench' needs a CUDA GPU and none is usable: %s", err.msg);
            rc = EVO_EXIT_NO_GPU;
        } else {
            errorf("%s", err.msg);
            rc = EVO_EXIT_TASK;
        }
        goto out;
    }
    if (bench_one(ge, &c, &err)) {
        errorf("%s", err.msg);
        rc = EVO_EXIT_FAIL;
        goto out;
    }
    int ok = strcmp(c.rec.status, "ok") == 0;
    if (s->json && !(ok && s->repeat))   /* --repeat --json: its one object only */
        print_json(t, &c, gpueval_device(ge));
    else if (!s->json)
        print_text(t, &c, gpueval_device(ge));
    rc = ok ? EVO_EXIT_OK : EVO_EXIT_FAIL;
    if (rc == EVO_EXIT_OK && gpueval_slots(ge) > 1)
        rc = bench_other_gpus(s, t, ge, &c);
    if (rc == EVO_EXIT_OK && (s->against || s->repeat))
        rc = bench_against(s, t, ge, &c);
out:
    evolve_child_clear(&c, &gpueval_ops, ge);
    gpueval_close(&ge);
    free(src);
    task_free(&t);
    return rc;
}

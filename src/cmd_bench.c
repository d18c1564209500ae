/*
 * cmd_bench: `evoeng bench TASK [--params K=V,...] [--source FILE.cu]
 * [--cold] [--json]`: one configuration (or an outside kernel with the
 * task's entry points) through the same evaluator a run uses: static
 * gate, correctness gate on every shape, timing, launch metrics.
 */
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "commands.h"
#include "gpueval.h"
#include "ops.h"
#include "runctx.h"

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
    printf("  latency      %.3f us median, %.3f us p90, CV %.2f%%\n", r->latency_us, r->p90_us, r->cv * 100);
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
    char *s = json_dumps(o, JSON_INDENT(2));
    printf("%s\n", s);
    free(s);
    json_decref(o);
}

/* Evaluate one child completely. 0, or -1 with err. */
static int bench_one(GpuEval *ge, Child *c, EvoErr *err)
{
    return evolve_evaluate(&gpueval_ops, ge, c, err);
}

/* --against: the reference configuration, then an interleaved A/B. */
static EvoExit bench_against(const Settings *s, const Task *t, GpuEval *ge, Child *c)
{
    EvoErr err;
    Child a;
    evolve_child_init(&a, task_nparams(t));
    a.op = "bench";
    EvoExit rc = EVO_EXIT_OK;
    if (task_params_parse(t, s->against, a.vals, &err)) {
        errorf("--against: %s", err.msg);
        rc = EVO_EXIT_USAGE;
        goto out;
    }
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
    double ratio, spread;
    if (gpueval_ops.compare(ge, &a, c, &ratio, &spread, &err)) {
        errorf("%s", err.msg);
        rc = EVO_EXIT_FAIL;
        goto out;
    }
    if (s->json)
        printf("{\"against\": \"%s\", \"against_latency_us\": %.4f, \"ratio\": %.5f, \"ratio_spread\": %.5f}\n",
               a.params_key, a.rec.latency_us, ratio, spread);
    else
        printf("  vs against   %s: %.3f us; interleaved A/B ratio (this/against) %.4f, p10-p90 spread %.4f: %s\n",
               a.params_key, a.rec.latency_us, ratio, spread,
               ratio < 0.98 ? "faster" : ratio > 1.02 ? "slower" : "within 2%");
out:
    evolve_child_clear(&a, &gpueval_ops, ge);
    return rc;
}

EvoExit cmd_bench(const Settings *s)
{
    EvoErr err;
    Task *t = NULL;
    GpuEval *ge = NULL;
    char *src = NULL;
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
    GpuEvalOptions go = {.jobs = s->jobs, .verbose = s->verbose};
    gate_options_default(&go.gate);
    go.gate.nseeds = s->seeds;
    bench_options_default(&go.bench);
    go.bench.cold = s->cold;
    go.bench.seed = s->seed;
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
    if (s->json)
        print_json(t, &c, gpueval_device(ge));
    else
        print_text(t, &c, gpueval_device(ge));
    rc = strcmp(c.rec.status, "ok") == 0 ? EVO_EXIT_OK : EVO_EXIT_FAIL;
    if (rc == EVO_EXIT_OK && s->against)
        rc = bench_against(s, t, ge, &c);
out:
    evolve_child_clear(&c, &gpueval_ops, ge);
    gpueval_close(&ge);
    free(src);
    task_free(&t);
    return rc;
}

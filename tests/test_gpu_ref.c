/* GPU test: the shipped reference kernels against the CPU implementations
 * of cpuref.h, on every shape of each task small enough for the CPU and
 * every input profile of the task (large logits, outliers, scaled rows:
 * the inputs the gate uses, from gate_fill_host, which the gpu suite
 * checks against the device's generator), attention in fp16 and in bf16
 * (DTYPE=1). The gate trusts the reference;
 * this is what makes that trust earned.
 * Skips (77) without a GPU. */
#include "testhelp.h"
#include "cpuref.h"
#include "gpu/cuda_api.h"
#include "gpu/gate.h"
#include "compile/prep.h"
#include "task/task.h"

#include <stdlib.h>

static CudaApi *api;
static CudaCtx ctx;

static int buf_index(const Plan *p, const char *name)
{
    for (int i = 0; i < p->nbuffers; i++)
        if (strcmp(p->buffers[i].name, name) == 0)
            return i;
    return -1;
}

static int64_t dim(const Task *t, int shape, const char *name)
{
    for (int d = 0; d < task_ndims(t); d++)
        if (strcmp(task_dim_name(t, d), name) == 0)
            return task_dim_value(t, shape, d);
    return -1;
}

/* Run the reference of `shape` on seeded inputs of input profile prof;
 * return the inputs and the output as doubles (caller frees). */
static int run_reference(const Task *t, const PrepRef *ref, int shape, int prof, Plan *p, double **in, int nin,
                         const char *const *in_names, const char *out_name, double **out)
{
    EvoErr err;
    CUresult cu = CUDA_SUCCESS;
    CUmodule mod = NULL;
    CudaPlan cp = {0};
    CudaLaunches cl = {0};
    int rc = -1;
    int64_t *vals = xcalloc((size_t)task_nparams(t) + 1, sizeof(int64_t));
    task_defaults(t, vals);
    if (task_resolve(t, vals, shape, &ctx.info, p, &err)) {
        fprintf(stderr, "resolve: %s\n", err.msg);
        goto done;
    }
    const CompileResult *r = &ref->units[ref->shape_unit[shape]].res;
    if (api->cuModuleLoadData(&mod, r->cubin) != CUDA_SUCCESS || cuda_plan_alloc(&ctx, p, &cp, &err))
        goto done;
    for (int k = 0; k < nin; k++) {
        int b = buf_index(p, in_names[k]);
        PlanBuffer gen = p->buffers[b];   /* the buffer under profile prof */
        const PlanBuffer *pb = &gen;
        gen.init = *plan_init(p, prof, b);
        void *host = xmalloc(cp.bytes[b]);
        gate_fill_host(pb, 7, host);
        api->cuMemcpyHtoD(cp.dptr[b], host, cp.bytes[b]);
        in[k] = xmalloc(pb->count * sizeof(double));
        for (uint64_t i = 0; i < pb->count; i++)
            in[k][i] = gate_load(pb->dtype, host, i);
        free(host);
    }
    int ob = buf_index(p, out_name);
    api->cuMemsetD8(cp.dptr[ob], 0xff, cp.bytes[ob]);   /* NaN sentinel */
    if (cuda_launches_prepare(&ctx, &cp, mod, p->ref_launches, p->nref_launches, &cl, &cu, &err) ||
        cuda_launches_run(&ctx, &cl, &cu, &err) || api->cuStreamSynchronize(ctx.stream) != CUDA_SUCCESS) {
        fprintf(stderr, "reference launch: %s\n", err.msg);
        goto done;
    }
    void *host = xmalloc(cp.bytes[ob]);
    api->cuMemcpyDtoH(host, cp.dptr[ob], cp.bytes[ob]);
    *out = xmalloc(p->buffers[ob].count * sizeof(double));
    for (uint64_t i = 0; i < p->buffers[ob].count; i++)
        (*out)[i] = gate_load(p->buffers[ob].dtype, host, i);
    free(host);
    rc = 0;
done:
    cuda_launches_free(&cl);
    cuda_plan_free(&ctx, &cp);
    if (mod)
        api->cuModuleUnload(mod);
    free(vals);
    return rc;
}

/* |gpu - cpu| <= 2e-3 + rtol |cpu| everywhere: the output's rounding
 * (rtol 2e-3 for fp16, whose half ulp is at most 2^-11 of |x|; 5e-3 for
 * bf16, 2^-8 = 3.9e-3) and fp32 arithmetic. */
static void compare(const char *what, const double *gpu, const double *cpu, uint64_t n, double rtol)
{
    double worst = 0, max_abs = 0;
    uint64_t bad = 0;
    for (uint64_t i = 0; i < n; i++) {
        double e = fabs(gpu[i] - cpu[i]);
        if (!(e <= 2e-3 + rtol * fabs(cpu[i])))
            bad++;
        if (e > max_abs || e != e)
            max_abs = e;
        double rel = e / (2e-3 + rtol * fabs(cpu[i]));
        if (rel > worst)
            worst = rel;
    }
    printf("  %-52s %9llu elements, max abs err %.2e, worst err/tol %.3f, bad %llu\n", what, (unsigned long long)n,
           max_abs, worst, (unsigned long long)bad);
    CHECK_MSG(bad == 0, "%s: %llu elements differ from the CPU", what, (unsigned long long)bad);
}

/* The reference of shape s on profile prof against the CPU (kind: 0
 * softmax, 1 attention, 2 triad). 1 when it was compared. */
static int check_shape(const Task *t, const PrepRef *ref, int s, int prof, int kind, const char *label)
{
    Plan plan = {0};
    double *in[3] = {0}, *out = NULL;
    int checked = 0;
    if (kind == 2) {
        const char *names[2] = {"B", "C"};
        CHECK(run_reference(t, ref, s, prof, &plan, in, 2, names, "A", &out) == 0);
        if (out) {
            long n = (long)dim(t, s, "N");
            double *want = xmalloc((size_t)n * sizeof(double));
            cpu_triad(in[0], in[1], want, 3.0, n);
            compare(label, out, want, (uint64_t)n, 2e-3);
            free(want);
            checked++;
        }
    } else if (kind == 1) {
        const char *names[3] = {"Q", "K", "V"};
        CHECK(run_reference(t, ref, s, prof, &plan, in, 3, names, "O", &out) == 0);
        if (out) {
            int B = (int)dim(t, s, "B"), H = (int)dim(t, s, "H"), S = (int)dim(t, s, "S"), D = (int)dim(t, s, "D");
            int HKV = (int)dim(t, s, "HKV"), SQ = (int)dim(t, s, "SQ");
            double *want = xmalloc((size_t)B * H * SQ * D * sizeof(double));
            cpu_attention_gqa(in[0], in[1], in[2], want, B, H, HKV, SQ, S, D, (int)dim(t, s, "CAUSAL") > 0);
            int bf16 = plan.buffers[buf_index(&plan, "O")].dtype == DT_BF16;
            compare(label, out, want, (uint64_t)B * H * SQ * D, bf16 ? 5e-3 : 2e-3);
            free(want);
            checked++;
        }
    } else {
        const char *names[1] = {"X"};
        CHECK(run_reference(t, ref, s, prof, &plan, in, 1, names, "Y", &out) == 0);
        if (out) {
            int R = (int)dim(t, s, "ROWS"), C = (int)dim(t, s, "COLS");
            double *want = xmalloc((size_t)R * C * sizeof(double));
            cpu_softmax(in[0], want, R, C);
            compare(label, out, want, (uint64_t)R * C, 2e-3);
            free(want);
            checked++;
        }
    }
    for (int k = 0; k < 3; k++)
        free(in[k]);
    free(out);
    plan_free(&plan);
    return checked;
}

/* Every shape the CPU can do, on every input profile of the task (kind
 * as check_shape), with dim `name` set to v when name is not NULL. */
static void check_task(const char *rel, int kind, const char *name, int64_t v)
{
    EvoErr err;
    Task *t = NULL;
    char *p = xasprintf("%s/%s", getenv("EVO_SOURCE_ROOT"), rel);
    CHECK_MSG(task_load(p, &t, &err) == 0, "%s", err.msg);
    free(p);
    if (t && name && task_set_dim(t, name, v, &err) < 0) {
        CHECK_MSG(0, "%s", err.msg);
        task_free(&t);
    }
    if (!t)
        return;
    PrepRef ref;
    CHECK_MSG(prep_reference(t, &ctx.info, &ref, 0, &err) == 0, "%s", err.msg);
    int checked = 0;
    for (int s = 0; s < task_nshapes(t); s++)
        for (int prof = 0; prof < task_nprofiles(t); prof++) {
            char *shape = task_shape_label(t, s);
            char *label = task_nprofiles(t) > 1 ? xasprintf("%s [%s]", shape, task_profile_name(t, prof))
                                                : xstrdup(shape);
            free(shape);
            double cost = kind == 1 ? (double)dim(t, s, "B") * dim(t, s, "H") * dim(t, s, "S") * dim(t, s, "S") *
                                          dim(t, s, "D")
                          : kind == 2 ? (double)dim(t, s, "N")
                                      : (double)dim(t, s, "ROWS") * dim(t, s, "COLS");
            /* every profile on the shapes the CPU does quickly, the first on the larger ones too */
            if (cost > (prof == 0 ? 3e9 : 6e8)) {
                printf("  %-52s skipped (too large for the CPU)\n", label);
                free(label);
                continue;
            }
            checked += check_shape(t, &ref, s, prof, kind, label);
            free(label);
        }
    CHECK(checked >= 2);
    prep_ref_free(&ref);
    task_free(&t);
}

static void test_attention_reference(void)
{
    check_task("templates/attention/task.json", 1, NULL, 0);
}

/* bf16 Q, K, V and O (DTYPE = 1): the inputs as the gate makes them */
static void test_attention_bf16_reference(void)
{
    check_task("templates/attention/task.json", 1, "DTYPE", 1);
}

static void test_softmax_reference(void)
{
    check_task("templates/softmax/task.json", 0, NULL, 0);
}

static void test_triad_reference(void)
{
    check_task("templates/triad/task.json", 2, NULL, 0);
}

int main(void)
{
    EvoErr err;
    if (cuda_load(&api, &err) || cuda_context_open(api, 0, &ctx, &err)) {
        printf("SKIP: %s\n", err.msg);
        return 77;
    }
    printf("device: %s\n", ctx.info.name);
    RUN(test_attention_reference);
    RUN(test_attention_bf16_reference);
    RUN(test_softmax_reference);
    RUN(test_triad_reference);
    cuda_context_close(&ctx);
    cuda_close(&api);
    return test_report();
}

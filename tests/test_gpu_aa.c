/* GPU test: the noise of the 2% rule on the real workload. The default
 * attention configuration is compared with itself (two separately loaded
 * modules of the same source) 30 times by the interleaved A/B the run
 * uses; every ratio must stay well inside the 2% threshold, so no correct
 * child is ever reverted by noise. The attention task has several timing
 * input profiles: the ratio the run decides on is the worst profile's,
 * and each profile's own ratios must pass the A/A bar too (p95 |r - 1|
 * <= 0.5%, no revert; issue 33). The same for the bandwidth-bound triad
 * task (132 MB per launch, more than the L2). Then a clearly slower
 * attention configuration must be judged slower. Last, the A/A of the
 * B8 H16 S512 causal winner of the table (issue 33), where the first
 * sample after another profile's pair used to start with that profile's
 * buffers in the L2 and the ratios leaned (p95 |r - 1| 0.50-0.80%; the
 * pair's untimed first run in bench.c fixes that). Prints the figures.
 * Skips (77) without a GPU. */
#include "testhelp.h"
#include "cli/abrepeat.h"
#include "gpu/bench.h"
#include "gpu/gpueval.h"
#include "search/ops.h"
#include "gpu/worker.h"

#include <math.h>
#include <stdlib.h>

static Task *task;
static GpuEval *ge;
static const char *aa_params = "";   /* the configuration test_aa compares with itself */

static void child_make(Child *c, const char *params)
{
    EvoErr err;
    evolve_child_init(c, task_nparams(task));
    c->op = "test";
    if (task_params_parse(task, params, c->vals, &err))
        fprintf(stderr, "params: %s\n", err.msg);
    c->params_key = ops_params_key(task, c->vals, NULL);
}

static void child_drop(Child *c)
{
    evolve_child_clear(c, &gpueval_ops, ge);
}

static int eval(Child *c)
{
    EvoErr err;
    if (evolve_evaluate(&gpueval_ops, ge, c, &err)) {
        fprintf(stderr, "evaluate: %s\n", err.msg);
        return -1;
    }
    printf("  %-60.60s %s %.3f us (CV %.2f%%)\n", c->params_key, c->rec.status, c->rec.latency_us, c->rec.cv * 100);
    return strcmp(c->rec.status, "ok") == 0 ? 0 : -1;
}

static void test_aa(void)
{
    Child a, b;
    child_make(&a, aa_params);
    child_make(&b, aa_params);
    CHECK(eval(&a) == 0);
    CHECK(eval(&b) == 0);
    double r[30], pr[PLAN_MAX_PROFILES][30];
    char names[PLAN_MAX_PROFILES][32];
    int n = 0, np = 0;
    EvoErr err;
    for (int i = 0; i < 30; i++) {
        double ratio, spread;
        ProfileStat ps[PLAN_MAX_PROFILES];
        if (gpueval_ops.compare(ge, &a, &b, &ratio, &spread, &err)) {
            fprintf(stderr, "compare: %s\n", err.msg);
            break;
        }
        np = bench_metrics_profiles(b.rec.metrics_json, ps);
        for (int k = 0; k < np; k++) {
            pr[k][n] = ps[k].ratio.median;
            snprintf(names[k], sizeof(names[k]), "%s", ps[k].name);
        }
        r[n++] = ratio;
    }
    CHECK(n == 30);
    BenchStats st;
    bench_stats(r, n, &st);
    AbRepeatStats ab;
    abrepeat_stats(r, n, 0.02, &ab);
    double worst = ab.max_dev;
    printf("A/A on %s %s x%d: median ratio %.4f, p10 %.4f, p90 %.4f, min %.4f, max %.4f, "
           "worst |r-1| %.2f%%, p95 |r-1| %.2f%%, false reverts %d, CV %.3f%%\n", task_name(task),
           *aa_params ? aa_params : "default", n, st.median,
           st.p10, st.p90, st.min, st.max, worst * 100, ab.p95_dev * 100, ab.reverts, st.cv * 100);
    CHECK_MSG(worst < 0.015, "an A/A ratio strayed %.2f%% from 1: the 2%% rule would misjudge", worst * 100);
    CHECK(ab.reverts == 0);
    CHECK(fabs(st.median - 1) < 0.005);
    for (int k = 0; np > 1 && k < np; k++) {
        AbRepeatStats pk;
        abrepeat_stats(pr[k], n, 0.02, &pk);
        printf("  profile %-10s median %.4f, p95 |r-1| %.2f%%, max |r-1| %.2f%%, reverts %d: %s\n", names[k],
               pk.median, pk.p95_dev * 100, pk.max_dev * 100, pk.reverts,
               abrepeat_aa_pass(&pk, 0.005) ? "pass" : "FAIL");
        CHECK_MSG(abrepeat_aa_pass(&pk, 0.005), "A/A on profile %s: p95 |r-1| %.2f%% (bar 0.5%%), %d reverts",
                  names[k], pk.p95_dev * 100, pk.reverts);
    }
    child_drop(&a);
    child_drop(&b);
}

static void test_sensitivity(void)
{
    /* Half the warps on the same tile: clearly slower, must be seen so. */
    Child a, b;
    child_make(&a, "");
    child_make(&b, "BLOCK_M=16,WARPS=1,BLOCK_N=32,STAGES=1");
    CHECK(eval(&a) == 0);
    if (eval(&b) != 0) {
        printf("  (the slow configuration is not valid in this task version: %s)\n", b.rec.error ? b.rec.error : "");
    } else {
        double ratio, spread;
        EvoErr err;
        CHECK(gpueval_ops.compare(ge, &a, &b, &ratio, &spread, &err) == 0);
        printf("slow vs default: ratio %.4f (spread %.4f); latencies %.3f vs %.3f us\n", ratio, spread,
               b.rec.latency_us, a.rec.latency_us);
        CHECK(ratio > 1.05);
        CHECK(fabs(ratio - b.rec.latency_us / a.rec.latency_us) < 0.25 * ratio);
    }
    child_drop(&a);
    child_drop(&b);
}

/* A dim of the benchmark shape to set (task_set_dim). */
typedef struct Dim {
    const char *name;
    int64_t     value;
} Dim;

/* Open the task at rel with the ndims dims of dims set and a GpuEval on
 * it. 0, 77 (no GPU) or 1. */
static int open_task(const char *rel, const Dim *dims, int ndims)
{
    const char *root = getenv("EVO_SOURCE_ROOT");
    EvoErr err;
    char *p = xasprintf("%s/%s", root ? root : ".", rel);
    int rc = task_load(p, &task, &err);
    free(p);
    for (int i = 0; rc == 0 && i < ndims; i++)
        if ((rc = task_set_dim(task, dims[i].name, dims[i].value, &err)) != 0)
            task_free(&task);
    if (rc) {
        fprintf(stderr, "%s\n", err.msg);
        return 1;
    }
    GpuEvalOptions go = {0};
    gate_options_default(&go.gate);
    bench_options_default(&go.bench);
    int nogpu = 0;
    if (gpueval_open(&ge, task, &go, &nogpu, &err)) {
        printf("SKIP: %s\n", err.msg);
        task_free(&task);
        return nogpu ? 77 : 1;
    }
    printf("device: %s, task %s\n", gpueval_device(ge)->name, task_name(task));
    return 0;
}

static void close_task(void)
{
    gpueval_close(&ge);
    task_free(&task);
}

int main(int argc, char **argv)
{
    int code;
    if (worker_dispatch(argc, argv, &code))
        return code;
    if ((code = open_task("templates/attention/task.json", NULL, 0)) != 0)
        return code;
    RUN(test_aa);
    RUN(test_sensitivity);
    close_task();
    if ((code = open_task("templates/triad/task.json", NULL, 0)) != 0)
        return code;
    RUN(test_aa);
    close_task();
    /* the table's B8 H16 S512 D64 causal winner (docs/results/2026-11-27d-input-profiles-table.md) */
    static const Dim b8h16[] = {{"B", 8}, {"H", 16}, {"CAUSAL", 1}};
    if ((code = open_task("templates/attention/task.json", b8h16, (int)(sizeof(b8h16) / sizeof(b8h16[0])))) != 0)
        return code;
    aa_params = "BLOCK_M=128,BLOCK_N=64,STAGES=2,WS=1,PERSIST=1,TAIL=1,DESCADD=1,PVSPLIT=2,EARLY=1";
    RUN(test_aa);
    close_task();
    return test_report();
}

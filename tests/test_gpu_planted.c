/*
 * test_gpu_planted: the worker, the gate and the bench on a real GPU
 * (suite gpu). Planted bad kernels (tests/data/planted/planted.cu) must get
 * the right status, and after each one the worker must recover and pass a
 * good kernel. Then timing (warm, cold, metrics) and an A/A comparison
 * whose spread is printed for the record.
 *
 * This binary is its own worker: run as "__worker IN OUT" it calls
 * worker_main(). Exits 77 (skip) when no driver or device is found.
 */
#include "gpu/bench.h"
#include "gpu/gate.h"
#include "compile/nvrtc.h"
#include "testhelp.h"
#include "gpu/worker.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static Worker *w;
static int mod = -1;  /* the planted module: reference and candidates */

enum { BUF_A, BUF_B, BUF_OUT };

/* out = a + 2b over n f32; entry is the candidate; extra f32 arg when
 * magic_arg. */
static void make_plan(Plan *p, const char *entry, unsigned n, int with_magic, float magic, unsigned block,
                      unsigned smem)
{
    memset(p, 0, sizeof(*p));
    char label[128];
    snprintf(label, sizeof(label), "n=%u entry=%s", n, entry);
    p->shape_label = xstrdup(label);
    p->nbuffers = 3;
    p->buffers = xcalloc(3, sizeof(PlanBuffer));
    p->buffers[BUF_A] = (PlanBuffer){xstrdup("a"), DT_F32, n, ROLE_INPUT, {.kind = INIT_NORMAL, .a = 0, .b = 1}, 11, 0, 0, 1, 1};
    p->buffers[BUF_B] = (PlanBuffer){xstrdup("b"), DT_F32, n, ROLE_INPUT, {.kind = INIT_UNIFORM, .a = -1, .b = 1}, 12, 0, 0, 1, 1};
    p->buffers[BUF_OUT] = (PlanBuffer){xstrdup("out"), DT_F32, n, ROLE_OUTPUT, {.kind = INIT_ZERO, .a = 0, .b = 0}, 13, 1e-5, 1e-5, 1, 1};
    for (int k = 0; k < 2; k++) {
        PlanLaunch *l = xcalloc(1, sizeof(PlanLaunch));
        int extra = k == 0 && with_magic;
        l->entry = xstrdup(k == 0 ? entry : "vadd_ref");
        l->grid[0] = k == 0 ? (n + block - 1) / block : 132 * 4;
        l->grid[1] = l->grid[2] = 1;
        l->block[0] = k == 0 ? block : 256;
        l->block[1] = l->block[2] = 1;
        l->smem = k == 0 ? smem : 0;
        l->nargs = 4 + extra;
        l->args = xcalloc((size_t)l->nargs, sizeof(PlanArg));
        l->args[0] = (PlanArg){.kind = ARG_BUFFER, .buffer = BUF_A};
        l->args[1] = (PlanArg){.kind = ARG_BUFFER, .buffer = BUF_B};
        l->args[2] = (PlanArg){.kind = ARG_BUFFER, .buffer = BUF_OUT};
        l->args[3] = (PlanArg){.kind = ARG_I32, .i = n};
        if (extra)
            l->args[4] = (PlanArg){.kind = ARG_F32, .f = magic};
        if (k == 0) {
            p->launches = l;
            p->nlaunches = 1;
        } else {
            p->ref_launches = l;
            p->nref_launches = 1;
        }
    }
    p->flops = n;
    p->bytes = 12.0 * n;
}

static void gate_expect(const char *entry, EvalStatus want, const char *want_check, const char *want_cuda,
                        int with_magic, float magic, unsigned block, unsigned smem)
{
    Plan p;
    GateReport rep;
    EvoErr err = {{0}};
    char line[2048];
    double t0 = time_now_ms();
    make_plan(&p, entry, 100000, with_magic, magic, block, smem);
    int rc = worker_gate(w, &p, mod, mod, NULL, &rep, &err);
    CHECK_MSG(rc == 0, "worker_gate(%s): %s", entry, err.msg);
    gate_report_format(&rep, line, sizeof(line));
    printf("  %-16s -> %-13s check=%-16s cuda=%-30s spawns=%d %.0f ms\n     %s\n", entry,
           gate_status_name(rep.status), rep.check[0] ? rep.check : "-", rep.cuda_error[0] ? rep.cuda_error : "-",
           worker_spawns(w), time_now_ms() - t0, line);
    CHECK_MSG(rep.status == want, "%s: status %s, expected %s", entry, gate_status_name(rep.status),
              gate_status_name(want));
    if (want_check)
        CHECK_MSG(strcmp(rep.check, want_check) == 0, "%s: check '%s', expected '%s'", entry, rep.check, want_check);
    if (want_cuda)
        CHECK_MSG(strstr(rep.cuda_error, want_cuda) || strstr(rep.error, want_cuda), "%s: cuda error '%s' / '%s', expected %s",
                  entry, rep.cuda_error, rep.error, want_cuda);
    plan_free(&p);

    /* recovery: the good kernel passes right after */
    make_plan(&p, "vadd", 100000, 0, 0, 256, 0);
    rc = worker_gate(w, &p, mod, mod, NULL, &rep, &err);
    gate_report_format(&rep, line, sizeof(line));
    CHECK_MSG(rc == 0 && rep.status == EVAL_OK, "good kernel after %s: %s", entry, line);
    plan_free(&p);
}

static void test_good_shapes(void)
{
    unsigned ns[] = {1, 1000, 4099, 1u << 22};
    for (size_t i = 0; i < EVO_ARRAY_LEN(ns); i++) {
        Plan p;
        GateReport rep;
        EvoErr err = {{0}};
        char line[2048];
        make_plan(&p, "vadd", ns[i], 0, 0, 256, 0);
        CHECK(worker_gate(w, &p, mod, mod, NULL, &rep, &err) == 0);
        gate_report_format(&rep, line, sizeof(line));
        printf("  vadd n=%u: %s\n", ns[i], line);
        CHECK_MSG(rep.status == EVAL_OK, "%s", line);
        CHECK(rep.seeds_run == 3);
        plan_free(&p);
    }
}

static void test_planted(void)
{
    PlanBuffer a = {0};
    float first;
    /* the value seed 1 puts in a[0] (same generator as the worker) */
    a.dtype = DT_F32;
    a.count = 1;
    a.init.kind = INIT_NORMAL;
    a.init.b = 1;
    a.seed_salt = 11;
    gate_fill_host(&a, 1, &first);

    gate_expect("p_illegal", EVAL_CRASHED, NULL, "CUDA_ERROR_ILLEGAL_ADDRESS", 0, 0, 256, 0);
    gate_expect("p_misaligned", EVAL_CRASHED, NULL, "CUDA_ERROR_MISALIGNED_ADDRESS", 0, 0, 256, 0);
    gate_expect("p_loop", EVAL_TIMEOUT, NULL, NULL, 0, 0, 256, 0);
    gate_expect("p_nowrite", EVAL_INCORRECT, "unwritten", NULL, 0, 0, 256, 0);
    gate_expect("p_zeros", EVAL_INCORRECT, "zero_output", NULL, 0, 0, 256, 0);
    gate_expect("p_writes_input", EVAL_INCORRECT, "inputs_modified", NULL, 0, 0, 256, 0);
    gate_expect("p_rows", EVAL_INCORRECT, "mismatch", NULL, 0, 0, 256, 0);
    gate_expect("p_magic", EVAL_INCORRECT, "mismatch", NULL, 1, first, 256, 0);
    gate_expect("p_stale", EVAL_INCORRECT, NULL, NULL, 0, 0, 256, 0);
    gate_expect("p_oob", EVAL_INCORRECT, "out_of_bounds", NULL, 0, 0, 256, 0);
    gate_expect("p_corrupt", EVAL_INCORRECT, "resident_modified", NULL, 0, 0, 256, 0);
    /* right only at the benchmark shape (n = 100000): passes there, fails
     * every other shape: why nothing is accepted before the full gate */
    {
        unsigned ns[] = {100000, 4099, 1000};
        for (size_t i = 0; i < EVO_ARRAY_LEN(ns); i++) {
            Plan p;
            GateReport rep;
            EvoErr err = {{0}};
            char line[2048];
            make_plan(&p, "p_benchonly", ns[i], 0, 0, 256, 0);
            CHECK(worker_gate(w, &p, mod, mod, NULL, &rep, &err) == 0);
            gate_report_format(&rep, line, sizeof(line));
            printf("  p_benchonly n=%-6u -> %s\n", ns[i], line);
            CHECK_MSG(i == 0 ? rep.status == EVAL_OK : rep.status == EVAL_INCORRECT && strcmp(rep.check, "mismatch") == 0,
                      "p_benchonly n=%u: %s", ns[i], line);
            plan_free(&p);
        }
    }
    gate_expect("no_such_entry", EVAL_INVALID, NULL, NULL, 0, 0, 256, 0);
    gate_expect("vadd", EVAL_RESOURCE, NULL, NULL, 0, 0, 256, 16u << 20);   /* smem over the opt-in limit */
    gate_expect("vadd", EVAL_LAUNCH_ERROR, NULL, NULL, 0, 0, 2048, 0);     /* 2048 threads per block */
    /* min_ctas */
    {
        Plan p;
        GateReport rep;
        EvoErr err = {{0}};
        make_plan(&p, "vadd", 1000, 0, 0, 256, 0);
        p.min_ctas = 100;
        CHECK(worker_gate(w, &p, mod, mod, NULL, &rep, &err) == 0);
        printf("  min_ctas=100 with 4 CTAs -> %s %s: %s\n", gate_status_name(rep.status), rep.check, rep.error);
        CHECK(rep.status == EVAL_INVALID);
        CHECK_STR(rep.check, "min_ctas");
        plan_free(&p);
    }
}

/* A launch argument that is a tensor map (ARG_TMAP): the worker encodes a
 * CUtensorMap over buffer a and the kernel loads its tiles with TMA. */
static void test_tma(void)
{
    Plan p;
    GateReport rep;
    EvoErr err = {{0}};
    char line[2048];
    PlanLaunch *l;
    if (worker_device(w)->cc_major < 9) {
        printf("  (tensor maps need sm_90: not tested on %s)\n", worker_device(w)->arch);
        return;
    }
    make_plan(&p, "tma_vadd", 100000, 0, 0, 256, 0);
    l = &p.launches[0];
    l->args[0] = (PlanArg){.kind = ARG_TMAP, .buffer = BUF_A};
    l->args[0].tmap.rank = 1;
    l->args[0].tmap.dims[0] = 100000;
    l->args[0].tmap.box[0] = 256;
    l->args[0].tmap.elem_strides[0] = 1;
    l->args[1] = (PlanArg){.kind = ARG_BUFFER, .buffer = BUF_B};
    l->args[2] = (PlanArg){.kind = ARG_BUFFER, .buffer = BUF_OUT};
    l->args[3] = (PlanArg){.kind = ARG_I32, .i = 100000};
    CHECK(worker_gate(w, &p, mod, mod, NULL, &rep, &err) == 0);
    gate_report_format(&rep, line, sizeof(line));
    printf("  tma_vadd (tensor map over a) -> %s\n", line);
    CHECK_MSG(rep.status == EVAL_OK, "%s", line);
    /* a map that does not fit the driver's rules is refused, not launched */
    l->args[0].tmap.box[0] = 300;
    CHECK(worker_gate(w, &p, mod, mod, NULL, &rep, &err) == 0);
    gate_report_format(&rep, line, sizeof(line));
    printf("  tma_vadd with box 300 -> %s\n", line);
    CHECK(rep.status != EVAL_OK && strstr(rep.error, "cuTensorMapEncodeTiled") != NULL);
    plan_free(&p);
}

/* A kernel clean in the gate that writes outside its buffers later,
 * while it is timed: the timing request comes back incorrect. */
static void test_late_corruption(void)
{
    Plan p;
    GateReport rep;
    BenchResult r;
    EvoErr err = {{0}};
    char line[2048];
    make_plan(&p, "p_late", 100000, 0, 0, 256, 0);
    CHECK(worker_gate(w, &p, mod, mod, NULL, &rep, &err) == 0);
    gate_report_format(&rep, line, sizeof(line));
    printf("  p_late gate -> %s\n", line);
    CHECK_MSG(rep.status == EVAL_OK, "%s", line);
    CHECK(worker_time(w, &p, mod, 0, NULL, &r, &err) == 0);
    printf("  p_late timing -> %s: %s\n", gate_status_name(r.status), r.error);
    CHECK(r.status == EVAL_INCORRECT && strstr(r.error, "outside its buffers") != NULL);
    plan_free(&p);
    make_plan(&p, "vadd", 100000, 0, 0, 256, 0);
    CHECK(worker_gate(w, &p, mod, mod, NULL, &rep, &err) == 0);
    CHECK_MSG(rep.status == EVAL_OK, "vadd after p_late: %s", rep.error);
    plan_free(&p);
}

static void test_time(void)
{
    Plan p;
    BenchOptions o;
    BenchResult r;
    EvoErr err = {{0}};
    make_plan(&p, "vadd", 1u << 24, 0, 0, 256, 0);
    bench_options_default(&o);
    for (int cold = 0; cold < 2; cold++) {
        o.cold = cold;
        CHECK(worker_time(w, &p, mod, 0, &o, &r, &err) == 0);
        printf("  time %s: %s median %.4f ms p10 %.4f p90 %.4f cv %.4f (n=%d, batch %d) %.1f GB/s (%.0f%% of peak) "
               "%s%s\n", cold ? "cold" : "warm", gate_status_name(r.status), r.ms.median, r.ms.p10, r.ms.p90, r.ms.cv,
               r.ms.n, r.batch, r.gbps, r.pct_peak_bw, r.error, r.cuda_error);
        CHECK(r.status == EVAL_OK);
        CHECK(r.ms.median > 0 && r.ms.n == o.samples);
        CHECK(r.nlaunches == 1);
        printf("    launch %s: %llu CTAs x %u threads, %d regs, smem %d+%u, local %d, occupancy %d CTAs/SM, %.2f waves\n",
               r.launches[0].entry, (unsigned long long)r.launches[0].ctas, r.launches[0].threads,
               r.launches[0].registers, r.launches[0].static_smem, r.launches[0].dynamic_smem,
               r.launches[0].local_bytes, r.launches[0].occupancy, r.launches[0].waves);
        CHECK(r.launches[0].registers > 0 && r.launches[0].occupancy > 0 && r.launches[0].ctas == 65536);
        CHECK(r.gbps > 0);
    }
    plan_free(&p);
}

static void test_aa(void)
{
    Plan p;
    BenchOptions o;
    CompareResult r;
    EvoErr err = {{0}};
    make_plan(&p, "vadd", 1u << 24, 0, 0, 256, 0);
    bench_options_default(&o);
    o.pairs = 30;
    CHECK(worker_compare(w, &p, mod, &p, mod, &o, &r, &err) == 0);
    printf("  A/A x%d: %s ratio median %.4f p10 %.4f p90 %.4f (spread +-%.2f%%) cv %.4f mad %.4f attempts %d noisy %d; "
           "A %.4f ms B %.4f ms %s%s\n", r.pairs, gate_status_name(r.status), r.ratio.median, r.ratio.p10,
           r.ratio.p90, 100 * (r.ratio.p90 - r.ratio.p10) / 2, r.ratio.cv, r.ratio.mad, r.attempts, r.noisy,
           r.a_ms.median, r.b_ms.median, r.error, r.cuda_error);
    CHECK(r.status == EVAL_OK);
    CHECK(r.ratio.n == 30);
    CHECK_MSG(fabs(r.ratio.median - 1) <= 0.01, "A/A median ratio %.4f is off by more than 1%%", r.ratio.median);
    CHECK_MSG(r.ratio.p10 >= 0.98 && r.ratio.p90 <= 1.02, "A/A p10..p90 %.4f..%.4f exceeds +-2%%", r.ratio.p10,
              r.ratio.p90);
    /* a cold A/A too, just printed */
    o.cold = 1;
    o.pairs = 15;
    CHECK(worker_compare(w, &p, mod, &p, mod, &o, &r, &err) == 0);
    printf("  A/A cold x%d: ratio median %.4f p10 %.4f p90 %.4f cv %.4f noisy %d; A %.4f ms\n", r.pairs,
           r.ratio.median, r.ratio.p10, r.ratio.p90, r.ratio.cv, r.noisy, r.a_ms.median);
    CHECK(r.status == EVAL_OK);
    plan_free(&p);
}

int main(int argc, char **argv)
{
    int code;
    WorkerOptions o = {0};
    EvoErr err = {{0}};
    char *path, *src = NULL;
    CompileRequest req = {0};
    CompileResult res = {0};
    EvalStatus st;
    char msg[1024];
    const char *ents[] = {"vadd_ref", "vadd"};
    WorkerFunc funcs[2];

    if (worker_dispatch(argc, argv, &code))
        return code;
    o.timeout_floor_ms = 3000; /* p_loop must time out quickly */
    if (worker_open(&w, &o, &err) != 0) {
        printf("skip: no usable GPU: %s\n", err.msg);
        return 77;
    }
    printf("device: %s (%s), driver %d, %d SMs\n", worker_device(w)->name, worker_device(w)->arch,
           worker_device(w)->driver_version, worker_device(w)->sm_count);
    path = path_join(getenv("EVO_SOURCE_ROOT") ? getenv("EVO_SOURCE_ROOT") : ".", "tests/data/planted/planted.cu");
    if (file_read(path, &src, NULL, &err) != 0) {
        fprintf(stderr, "%s\n", err.msg);
        return 1;
    }
    req.source = src;
    req.name = "planted.cu";
    req.arch = worker_device(w)->arch;
    if (nvrtc_compile(&req, &res, &err) != 0 || !res.ok) {
        fprintf(stderr, "compile of %s for %s failed: %s %s\n%s\n", path, req.arch, err.msg, res.error,
                res.log ? res.log : "");
        return 1;
    }
    if (worker_load(w, res.cubin, res.cubin_len, ents, 2, &mod, funcs, &st, msg, sizeof(msg), &err) != 0 ||
        st != EVAL_OK) {
        fprintf(stderr, "worker_load: %s %s %s\n", gate_status_name(st), msg, err.msg);
        return 1;
    }
    printf("module %d: vadd_ref %d regs, vadd %d regs (max threads %d)\n", mod, funcs[0].registers,
           funcs[1].registers, funcs[1].max_threads);
    RUN(test_good_shapes);
    RUN(test_planted);
    RUN(test_tma);
    RUN(test_late_corruption);
    RUN(test_time);
    RUN(test_aa);
    nvrtc_result_free(&res);
    free(src);
    free(path);
    worker_close(&w);
    return test_report();
}

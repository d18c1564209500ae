/*
 * test_export: `evoeng export` in its three formats (cu, json, harness)
 * compiles as written, for the target it records.
 *
 *   test_export          NVRTC (no GPU, runs in CI): every format exported
 *                        from the recorded H200 store
 *                        (tests/data/h200_wgmma_run.sql: a WGMMA kernel
 *                        compiled for sm_90a) and harnesses of other shipped
 *                        configurations (tensor maps, a plain sm_90 task)
 *                        compile with NVRTC for that target; the nvcc flags,
 *                        the #undef lines and the harness's refusals.
 *   test_export --nvcc   the same exports built with nvcc and the exact
 *                        build line each one prints (cu: -c, harness: a
 *                        linked program, json: its source with its
 *                        nvcc_flags), and the harness's input generator
 *                        built into a host program gives the gate's values
 *                        bit for bit; exit 77 when there is no nvcc ($NVCC,
 *                        /usr/local/cuda/bin/nvcc or nvcc on PATH).
 *   --keep DIR           work in DIR and keep what was written and built
 *                        there (bench/harness_gpu.sh runs the harnesses).
 */
#include <jansson.h>
#include <sqlite3.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/cli.h"
#include "cli/commands.h"
#include "config.h"
#include "gpu/gate.h"
#include "compile/nvrtc.h"
#include "export/export.h"
#include "export/harness.h"
#include "export/harness_text.h"
#include "store/store.h"
#include "task/task.h"
#include "testhelp.h"

static char g_dir[4096];
static const char *g_nvcc; /* set in --nvcc mode */

/* The source tree: $EVO_SOURCE_ROOT (meson test sets it; the tree may sit
 * elsewhere than where it was built), else the one built from. */
static const char *source_root(void)
{
    const char *r = getenv("EVO_SOURCE_ROOT");
    return r && *r ? r : EVO_SOURCE_ROOT;
}

static char *tmp_path(const char *name)
{
    return xasprintf("%s/%s", g_dir, name);
}

static char *slurp(const char *path)
{
    char *s = NULL;
    EvoErr err;
    return file_read(path, &s, NULL, &err) == 0 ? s : NULL;
}

/* A store made with evoeng's schema, then the recorded H200 run's rows. */
static char *make_store(const char *name)
{
    char *db = tmp_path(name), *sql_path = path_join(source_root(), "tests/data/h200_wgmma_run.sql"), *sql;
    Store *st = NULL;
    EvoErr err;
    sqlite3 *h = NULL;
    CHECK(store_open(&st, db, &err) == 0);
    store_close(&st);
    sql = slurp(sql_path);
    CHECK(sql != NULL);
    CHECK(sqlite3_open(db, &h) == SQLITE_OK);
    CHECK_MSG(sqlite3_exec(h, sql ? sql : "", NULL, NULL, NULL) == SQLITE_OK, "%s", sqlite3_errmsg(h));
    sqlite3_close(h);
    free(sql);
    free(sql_path);
    return db;
}

static EvoExit run_export(const char *db, int64_t id, const char *format, const char *out)
{
    Settings s;
    cli_defaults(&s);
    s.cmd = CMD_EXPORT;
    s.db = db;
    s.id = id;
    s.format = format;
    s.output = out;
    s.quiet = 1;
    return cmd_export(&s);
}

/* Compile src with NVRTC for arch as evoeng compiles a candidate; the log
 * goes to stderr on failure unless quiet. */
static int nvrtc_compiles(const char *src, const char *name, const char *arch, int quiet)
{
    const char *opts[] = {"-std=c++17"};
    CompileRequest req = {.source = src, .name = name, .arch = arch, .options = opts, .noptions = 1};
    CompileResult res;
    EvoErr err = {{0}};
    int ok = nvrtc_compile(&req, &res, &err) == 0 && res.ok;
    if (!ok && !quiet)
        fprintf(stderr, "NVRTC %s for %s: %s %s\n%.3000s\n", name, arch, res.error, err.msg, res.log ? res.log : "");
    nvrtc_result_free(&res);
    return ok;
}

static int nvrtc_ok(const char *src, const char *name, const char *arch)
{
    return nvrtc_compiles(src, name, arch, 0);
}

/* The text after "// build:    " up to the end of that line (fresh). */
static char *build_line(const char *text)
{
    const char *p = text ? strstr(text, "// build:    ") : NULL;
    if (!p)
        return NULL;
    p += strlen("// build:    ");
    return xstrndup(p, strcspn(p, "\n"));
}

/* Run a build line ("nvcc ...") with the nvcc found, in the test's
 * directory. Returns the exit status. */
static int run_nvcc(const char *line)
{
    if (strncmp(line, "nvcc ", 5) != 0)
        return -1;
    char *cmd = xasprintf("cd '%s' && '%s' %s", g_dir, g_nvcc, line + 5);
    printf("  $ %s\n", line);
    fflush(stdout);
    int rc = system(cmd);
    free(cmd);
    return rc;
}

/* ---- nvcc flags and macros ---------------------------------------------- */

static void test_nvcc_flags(void)
{
    char *f;
    /* the recorded options of the H200 run's WGMMA compile */
    f = export_nvcc_flags("sm_90a", "--gpu-architecture=sm_90a -std=c++17 --include-path=" EVO_CUDA_INCLUDE
                                    " --ptxas-options=-v -default-device");
    CHECK_STR(f, "-gencode=arch=compute_90a,code=sm_90a -std=c++17");
    free(f);
    f = export_nvcc_flags("sm_90", NULL);
    CHECK_STR(f, "-arch=sm_90 -std=c++17");
    free(f);
    f = export_nvcc_flags("sm_100f", "--gpu-architecture=sm_100f -std=c++20 --use_fast_math -lineinfo -DX=1 -D Y "
                                     "-I /opt/inc --include-path " EVO_CUDA_INCLUDE " --maxrregcount=128 "
                                     "--ptxas-options=-v -default-device --fmad=false");
    CHECK_STR(f, "-gencode=arch=compute_100f,code=sm_100f -std=c++20 --use_fast_math -lineinfo -DX=1 -D Y "
                 "-I /opt/inc --maxrregcount=128 --fmad=false");
    free(f);
    const char *bad[] = {"sm90", "sm_", "sm_90b", "sm_9a0", "sm_90aa", "compute_90", ""};
    for (size_t i = 0; i < EVO_ARRAY_LEN(bad); i++)
        CHECK_MSG(export_nvcc_flags(bad[i], NULL) == NULL, "%s", bad[i]);
    CHECK(export_nvcc_flags(NULL, NULL) == NULL);
}

static void test_undef_lines(void)
{
    char *u = export_undef_lines("#define A 1\n  #  define B(x) x\n#define A 2\n#include <x.h>\n#define 9x\n"
                                 "int defineC;\n#\tdefine\tC_2 3\n#undef A\n#defined D\n");
    CHECK_STR(u, "#undef A\n#undef B\n#undef C_2\n");
    free(u);
    u = export_undef_lines("");
    CHECK_STR(u, "");
    free(u);
}

/* ---- exports from the recorded store ------------------------------------ */

/* Export candidate id in every format; check the texts and compile each
 * with NVRTC (or nvcc in --nvcc mode). */
static void export_all(const char *db, int64_t id)
{
    char name[64];
    snprintf(name, sizeof(name), "c%lld.cu", (long long)id);
    char *cu = tmp_path(name);
    snprintf(name, sizeof(name), "c%lld.json", (long long)id);
    char *js = tmp_path(name);
    snprintf(name, sizeof(name), "c%lld_harness.cu", (long long)id);
    char *hs = tmp_path(name);
    CHECK(run_export(db, id, "cu", cu) == EVO_EXIT_OK);
    CHECK(run_export(db, id, "json", js) == EVO_EXIT_OK);
    CHECK(run_export(db, id, "harness", hs) == EVO_EXIT_OK);
    char *cu_text = slurp(cu), *js_text = slurp(js), *hs_text = slurp(hs);
    char *cu_build = build_line(cu_text), *hs_build = build_line(hs_text);
    json_t *o = json_loads(js_text ? js_text : "", 0, NULL);
    const char *src = json_string_value(json_object_get(o, "source"));
    const char *target = json_string_value(json_object_get(o, "target"));
    const char *flags = json_string_value(json_object_get(o, "nvcc_flags"));
    CHECK_STR(target, "sm_90a");
    CHECK_STR(flags, "-gencode=arch=compute_90a,code=sm_90a -std=c++17");
    snprintf(name, sizeof(name), "nvcc -gencode=arch=compute_90a,code=sm_90a -std=c++17 -c c%lld.cu", (long long)id);
    CHECK_STR(cu_build, name);
    snprintf(name, sizeof(name), "c%lld_harness", (long long)id);
    char *want = xasprintf("nvcc -gencode=arch=compute_90a,code=sm_90a -std=c++17 -O3 -o %s %s.cu", name, name);
    CHECK_STR(hs_build, want); /* no tensor maps: no -lcuda */
    free(want);
    CHECK_CONTAINS(hs_text, "int main(int argc, char **argv)");
    CHECK_CONTAINS(hs_text, "cudaLaunchKernel((const void *)::attn_fwd,");
    CHECK_CONTAINS(hs_text, "cudaLaunchKernel((const void *)::evo_ref::attn_ref,");
    CHECK_CONTAINS(hs_text, "// shape:    B=4 H=8 S=512 D=64 CAUSAL=0 DTYPE=0 HKV=8 SQ=512\n");
    CHECK_CONTAINS(hs_text, "pass = inputs_unchanged((u64)seed) && pass;"); /* as the gate, a kernel may not write its inputs */
    char salt[160]; /* the gate's generator and per-buffer salt, so the inputs are the gate's */
    snprintf(salt, sizeof(salt), "{\"Q\", F16, 1048576, INPUT, {GEN_NORMAL, GEN_ROWS_NONE, 0.0, 1.0, 0.0, 0.0, 0.0, "
             "0.0, 1ull}, 0x%016llxull, 0.01, 0.01,",
             (unsigned long long)task_seed_salt("Q"));
    CHECK_CONTAINS(hs_text, salt);
    if (!g_nvcc) { /* each for the target the store records */
        CHECK(cu_text && target && nvrtc_ok(cu_text, "export.cu", target));
        CHECK(src && target && nvrtc_ok(src, "export.json:source", target));
        CHECK(hs_text && target && nvrtc_ok(hs_text, "harness.cu", target));
        /* the WGMMA kernel builds for sm_90a alone: the generic sm_90 pass
         * that nvcc -arch=sm_90a adds stops at its #error (issue 14) */
        if (src && strstr(src, "#define WGMMA 1"))
            CHECK(!nvrtc_compiles(src, "export.json:source", "sm_90", 1));
    } else {
        CHECK(cu_build && run_nvcc(cu_build) == 0);
        snprintf(name, sizeof(name), "%s/c%lld.o", g_dir, (long long)id);
        CHECK_MSG(access(name, F_OK) == 0, "%s", name);
        snprintf(name, sizeof(name), "c%lld_json.cu", (long long)id);
        char *p = tmp_path(name), *line = xasprintf("nvcc %s -c %s", flags ? flags : "", name);
        EvoErr err;
        CHECK(src && file_write(p, src, strlen(src), &err) == 0);
        CHECK(run_nvcc(line) == 0);
        free(p);
        free(line);
        CHECK(hs_build && run_nvcc(hs_build) == 0);
        snprintf(name, sizeof(name), "%s/c%lld_harness", g_dir, (long long)id);
        CHECK_MSG(access(name, X_OK) == 0, "%s", name);
    }
    json_decref(o);
    free(cu_build);
    free(hs_build);
    free(cu_text);
    free(js_text);
    free(hs_text);
    free(cu);
    free(js);
    free(hs);
}

static void test_store_exports(void)
{
    char *db = make_store("h200.db");
    export_all(db, 32); /* the best: WGMMA, sm_90a */
    export_all(db, 1);  /* the baseline, same run and target */
    free(db);
}

/* A harness needs the task: with the run's task file gone, the harness is
 * refused (exit 3, no file written) while the .cu still comes out. */
static void test_harness_without_task(void)
{
    char *db = make_store("moved.db"), *out = tmp_path("moved_harness.cu"), *cu = tmp_path("moved.cu");
    sqlite3 *h = NULL;
    CHECK(sqlite3_open(db, &h) == SQLITE_OK);
    CHECK(sqlite3_exec(h, "UPDATE runs SET task_path = '/nonexistent/task.json'", NULL, NULL, NULL) == SQLITE_OK);
    sqlite3_close(h);
    CHECK(run_export(db, 32, "harness", out) == EVO_EXIT_TASK);
    CHECK(access(out, F_OK) != 0);
    CHECK(run_export(db, 32, "cu", cu) == EVO_EXIT_OK);
    char *text = slurp(cu);
    CHECK_CONTAINS(text, "//   (not resolved: ");
    CHECK_CONTAINS(text, "// build:    nvcc -gencode=arch=compute_90a,code=sm_90a -std=c++17 -c moved.cu\n");
    free(text);
    free(db);
    free(out);
    free(cu);
}

/* ---- harnesses of shipped configurations --------------------------------- */

/* The harness of task_file with params on its benchmark shape (dims
 * overridden by "K=V" pairs), for arch's NVRTC target (copied into
 * target[32]: the device profile it comes from lives on this frame);
 * NULL on failure. */
static char *harness_of(const char *task_file, const char *params, const char *const *dims, int ndims,
                        const char *arch, const char *file, char *target, EvoErr *err)
{
    Task *t = NULL;
    Plan p;
    DeviceInfo dev;
    char *path = path_join(source_root(), task_file), *src = NULL, *ref = NULL, *out = NULL, *flags = NULL;
    memset(&p, 0, sizeof(p));
    if (task_load(path, &t, err) || device_profile(arch, &dev, err))
        goto done;
    for (int i = 0; i < ndims; i++) {
        char name[32];
        long long v;
        if (sscanf(dims[i], "%31[^=]=%lld", name, &v) != 2 || task_set_dim(t, name, v, err))
            goto done;
    }
    int64_t *vals = xcalloc((size_t)task_nparams(t) + 1, sizeof(*vals));
    if (task_params_parse(t, params, vals, err) == 0 && task_resolve(t, vals, 0, &dev, &p, err) == 0 &&
        task_render(t, vals, 0, 0, &src, err) == 0 && task_render(t, NULL, 0, 1, &ref, err) == 0) {
        snprintf(target, 32, "%s", device_nvrtc_target(&dev, task_arch_specific(t)));
        flags = export_nvcc_flags(target, NULL);
        HarnessSpec h = {.header = "// test harness\n", .source = src, .ref_source = ref, .plan = &p,
                         .nvcc_flags = flags, .file = file, .recorded_us = NAN};
        harness_render(&h, &out, err);
    }
    free(vals);
done:
    plan_free(&p);
    task_free(&t);
    free(path);
    free(src);
    free(ref);
    free(flags);
    return out;
}

static void check_harness(const char *text, const char *file, const char *target, int want_tmaps)
{
    char *line = build_line(text);
    CHECK_CONTAINS(line, file);
    CHECK(want_tmaps == (line && strstr(line, " -lcuda") != NULL));
    CHECK(want_tmaps == (strstr(text, "cuTensorMapEncodeTiled(map,") != NULL));
    if (!g_nvcc) {
        CHECK(nvrtc_ok(text, file, target));
    } else {
        char *p = tmp_path(file);
        EvoErr err;
        CHECK(file_write(p, text, strlen(text), &err) == 0);
        CHECK(line && run_nvcc(line) == 0);
        free(p);
    }
    free(line);
}

static void test_shipped_harnesses(void)
{
    EvoErr err = {{0}};
    char target[32] = "";
    /* the warp-specialised path: TMA tensor maps, sm_90a */
    const char *ws_dims[] = {"B=4", "H=8", "S=512", "D=64", "CAUSAL=0"};
    char *h = harness_of("templates/attention/task.json", "WS=1,CONSUMERS=3,BLOCK_M=192,STAGES=2", ws_dims, 5,
                         "sm_90", "ws_harness.cu", target, &err);
    CHECK_MSG(h != NULL, "%s", err.msg);
    if (h) {
        CHECK_STR(target, "sm_90a");
        CHECK_CONTAINS(h, "static CUtensorMap tmap[");
        CHECK_CONTAINS(h, "#include <cuda.h>");
        check_harness(h, "ws_harness.cu", target, 1);
    }
    free(h);
    /* the same path in bf16 (DTYPE=1): bf16 buffers, bf16 tensor maps */
    const char *bf_dims[] = {"S=300", "CAUSAL=1", "DTYPE=1"};
    h = harness_of("templates/attention/task.json", "WS=1,BLOCK_M=128", bf_dims, 3, "sm_90", "bf16_harness.cu", target,
                   &err);
    CHECK_MSG(h != NULL, "%s", err.msg);
    if (h) {
        CHECK_CONTAINS(h, "#define DTYPE 1\n");
        CHECK_CONTAINS(h, "{\"Q\", BF16, ");
        CHECK_CONTAINS(h, "{\"O\", BF16, ");
        CHECK_CONTAINS(h, ", 0.02, 0.02,");   /* bf16's tolerance */
        CHECK_CONTAINS(h, "CU_TENSOR_MAP_DATA_TYPE_BFLOAT16");
        CHECK(strstr(h, "CU_TENSOR_MAP_DATA_TYPE_FLOAT16") == NULL);
        check_harness(h, "bf16_harness.cu", target, 1);
    }
    free(h);
    /* a task without arch-specific code: plain -arch=sm_90 */
    h = harness_of("templates/triad/task.json", "", NULL, 0, "sm_90", "triad_harness.cu", target, &err);
    CHECK_MSG(h != NULL, "%s", err.msg);
    if (h) {
        CHECK_STR(target, "sm_90");
        CHECK_CONTAINS(h, "// build:    nvcc -arch=sm_90 -std=c++17 -O3 -o triad_harness triad_harness.cu\n");
        CHECK(strstr(h, "#include <cuda.h>") == NULL);
        check_harness(h, "triad_harness.cu", target, 0);
    }
    free(h);
    h = harness_of("templates/softmax/task.json", "", NULL, 0, "sm_90", "softmax_harness.cu", target, &err);
    CHECK_MSG(h != NULL, "%s", err.msg);
    if (h)
        check_harness(h, "softmax_harness.cu", target, 0);
    free(h);
}

/* ---- refusals ----------------------------------------------------------- */

static void test_harness_refusals(void)
{
    PlanBuffer bufs[1] = {{.name = "x", .dtype = DT_F32, .count = 4, .role = ROLE_OUTPUT}};
    PlanArg arg = {.kind = ARG_BUFFER, .buffer = 0};
    PlanArg cargs[5] = {{.kind = ARG_BUFFER, .buffer = 0}, {.kind = ARG_F32, .f = INFINITY},
                        {.kind = ARG_F64, .f = 0.5}, {.kind = ARG_I64, .i = -3}, {.kind = ARG_I32, .i = 7}};
    PlanLaunch cand = {.entry = "k", .grid = {1, 1, 1}, .block = {32, 1, 1}, .args = cargs, .nargs = 5};
    PlanLaunch ref = {.entry = "k_ref", .grid = {1, 1, 1}, .block = {32, 1, 1}, .args = &arg, .nargs = 1};
    Plan p = {.shape_label = "N=4", .buffers = bufs, .nbuffers = 1, .launches = &cand, .nlaunches = 1,
              .ref_launches = &ref, .nref_launches = 1};
    const char *src = "extern \"C\" __global__ void k(float *x, float f, double d, long long n, int i)\n"
                      "{ x[threadIdx.x & 3] = f > 0 ? (float)(d + n + i) : 0.f; }\n";
    const char *rsrc = "extern \"C\" __global__ void k_ref(float *x) { x[threadIdx.x & 3] = 1.f; }\n";
    HarnessSpec h = {.source = src, .ref_source = rsrc, .plan = &p, .nvcc_flags = "-arch=sm_90 -std=c++17",
                     .file = "t.cu", .recorded_us = NAN};
    EvoErr err = {{0}};
    char *out = NULL;
    CHECK(harness_render(&h, &out, &err) == 0);
    CHECK_CONTAINS(out, "float arg2 = __builtin_inf();\n        double arg3 = 0.5;\n"
                        "        long long arg4 = -3LL;\n        int arg5 = 7;\n");
    if (out)
        check_harness(out, "t.cu", "sm_90", 0);
    free(out);
    if (g_nvcc)
        return;

    h.plan = NULL;
    CHECK(harness_render(&h, &out, &err) == -1 && out == NULL);
    CHECK_CONTAINS(err.msg, "launch plan is not resolved");
    h.plan = &p;
    h.ref_source = NULL;
    CHECK(harness_render(&h, &out, &err) == -1);
    CHECK_CONTAINS(err.msg, "the reference source is missing");
    h.ref_source = rsrc;
    ref.entry = "k";
    CHECK(harness_render(&h, &out, &err) == -1);
    CHECK_CONTAINS(err.msg, "both have an entry 'k'");
    ref.entry = "k_ref";
    cargs[0].buffer = 3;
    CHECK(harness_render(&h, &out, &err) == -1);
    CHECK_CONTAINS(err.msg, "candidate launch 1 (k) argument 1: buffer index 3 out of range");
    cargs[0].buffer = 0;
    h.file = "a\"b.cu";
    CHECK(harness_render(&h, &out, &err) == -1);
    CHECK_CONTAINS(err.msg, "holds a quote");
    h.file = "t.cu";
    p.nlaunches = 0;
    CHECK(harness_render(&h, &out, &err) == -1);
    CHECK_CONTAINS(err.msg, "no candidate launch");
}

/* ---- the harness's input generator is the gate's ------------------------ */

static const struct {
    uint64_t seed, salt;
    InitSpec s;
} gen_cases[] = {
    {1, 0xaf640c4c86023e1cull, {.kind = INIT_NORMAL, .b = 1.0}},
    {3, 12345, {.kind = INIT_NORMAL, .a = -2.5, .b = 0.25}},
    {2, 0x178da7e60a7aaff7ull, {.kind = INIT_UNIFORM, .a = -1.0, .b = 3.0}},
    {7, 99, {.kind = INIT_CONST, .a = 0.75}},
    {1, 1, {.kind = INIT_ZERO}},
    {4, 5, {.kind = INIT_OUTLIER, .b = 1.0, .p = 0.05, .c = 10.0}},
    {5, 6, {.kind = INIT_NORMAL, .b = 1.0, .rows = ROWS_LOGNORMAL, .rb = 1.0, .row_len = 16}},
    {6, 7, {.kind = INIT_OUTLIER, .b = 2.0, .p = 0.1, .c = 5.0, .rows = ROWS_UNIFORM, .ra = 0.5, .rb = 2.0,
            .row_len = 5}},
};

/* Build the harness's generator (its device section, host-callable) into a
 * host program with nvcc, run it, and compare every value, its f16 and
 * bf16 roundings and the stream keys with the gate's own functions
 * (gate_seed_key, gate_gen_value, gate_f32_to_f16, gate_f32_to_bf16). */
static void test_generator_matches_gate(void)
{
    StrBuf sb = {0};
    sb_append(&sb, text_device);
    sb_append(&sb, "#include <cstdio>\nint main()\n{\n    using namespace evo_harness;\n"
                   "    static const struct { u64 seed, salt; GenSpec g; } c[] = {\n");
    for (size_t k = 0; k < EVO_ARRAY_LEN(gen_cases); k++) {
        const InitSpec *g = &gen_cases[k].s;
        sb_printf(&sb, "        {%lluull, %lluull, {%d, %d, %a, %a, %a, %a, %a, %a, %lluull}},\n",
                  (unsigned long long)gen_cases[k].seed, (unsigned long long)gen_cases[k].salt, (int)g->kind,
                  (int)g->rows, g->a, g->b, g->p, g->c, g->ra, g->rb, (unsigned long long)(g->row_len ? g->row_len : 1));
    }
    sb_append(&sb, "    };\n    for (unsigned k = 0; k < sizeof(c) / sizeof(c[0]); k++) {\n"
                   "        u64 key = seed_key(c[k].seed, c[k].salt);\n"
                   "        for (u64 i = 0; i < 257; i++) {\n"
                   "            double v = gen_value(c[k].g, key, i);\n"
                   "            printf(\"%u %llu %llu %a %u %u\\n\", k, i, key, v, f32_to_f16((float)v), "
                   "f32_to_bf16((float)v));\n"
                   "        }\n    }\n    return 0;\n}\n");
    char *src = tmp_path("gen.cu"), *exe = tmp_path("gen");
    EvoErr err;
    CHECK(file_write(src, sb.s, sb.len, &err) == 0);
    sb_free(&sb);
    CHECK(run_nvcc("nvcc -std=c++17 -o gen gen.cu") == 0);
    FILE *p = popen(exe, "r");
    CHECK(p != NULL);
    unsigned k, h16, b16;
    unsigned long long i, key;
    double v;
    int n = 0, bad = 0;
    while (p && fscanf(p, "%u %llu %llu %la %u %u", &k, &i, &key, &v, &h16, &b16) == 6) {
        if (k >= EVO_ARRAY_LEN(gen_cases))
            break;
        InitSpec g = gen_cases[k].s;
        g.row_len = g.row_len ? g.row_len : 1;
        uint64_t want_key = gate_seed_key(gen_cases[k].seed, gen_cases[k].salt);
        double want = gate_gen_value(&g, want_key, i);
        if (key != want_key || memcmp(&v, &want, sizeof(v)) != 0 || h16 != gate_f32_to_f16((float)want) ||
            b16 != gate_f32_to_bf16((float)want)) {
            if (bad++ < 5)
                fprintf(stderr, "case %u element %llu: harness %a (f16 %04x, bf16 %04x, key %llx), gate %a\n", k, i,
                        v, h16, b16, key, want);
        }
        n++;
    }
    CHECK(p && pclose(p) == 0);
    CHECK_MSG(n == (int)EVO_ARRAY_LEN(gen_cases) * 257, "%d values read", n);
    CHECK(bad == 0);
    free(src);
    free(exe);
}

static const char *find_nvcc(void)
{
    static char found[4096];
    const char *env = getenv("NVCC");
    if (env && *env)
        return access(env, X_OK) == 0 ? env : NULL;
    if (access(EVO_CUDA_ROOT "/bin/nvcc", X_OK) == 0)
        return EVO_CUDA_ROOT "/bin/nvcc";
    const char *path = getenv("PATH");
    char *dirs = xstrdup(path ? path : ""), *save = NULL;
    const char *ret = NULL;
    for (char *d = strtok_r(dirs, ":", &save); d && !ret; d = strtok_r(NULL, ":", &save)) {
        snprintf(found, sizeof(found), "%s/nvcc", d);
        if (access(found, X_OK) == 0)
            ret = found;
    }
    free(dirs);
    return ret;
}

int main(int argc, char **argv)
{
    const char *keep = NULL; /* --keep DIR: write there and keep (bench/harness_gpu.sh runs the harnesses) */
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--nvcc") == 0) {
            g_nvcc = find_nvcc();
            if (!g_nvcc) {
                printf("no nvcc ($NVCC, " EVO_CUDA_ROOT "/bin/nvcc or on PATH): skipped\n");
                return 77;
            }
            printf("nvcc: %s\n", g_nvcc);
        } else if (strcmp(argv[i], "--keep") == 0 && i + 1 < argc && strlen(argv[i + 1]) < 1024) {
            keep = argv[++i];
        } else {
            fprintf(stderr, "usage: test_export [--nvcc] [--keep DIR]\n");
            return 2;
        }
    }
    EvoErr kerr;
    snprintf(g_dir, sizeof(g_dir), "%s", keep ? keep : "/tmp/evoeng-test-export-XXXXXX");
    if (keep ? file_mkdirs(g_dir, &kerr) != 0 : !mkdtemp(g_dir)) {
        fprintf(stderr, "%s: %s\n", g_dir, keep ? kerr.msg : "mkdtemp failed");
        return 1;
    }
    setenv("EVOENG_CACHE_DIR", g_dir, 1);
    if (!g_nvcc) {
        RUN(test_nvcc_flags);
        RUN(test_undef_lines);
        RUN(test_harness_without_task);
    }
    RUN(test_harness_refusals);
    RUN(test_store_exports);
    RUN(test_shipped_harnesses);
    if (g_nvcc)
        RUN(test_generator_matches_gate);
    int rc = test_report();
    if (keep)
        return rc;
    char *cmd = xasprintf("rm -rf '%s'", g_dir);
    if (system(cmd) != 0)
        fprintf(stderr, "could not remove %s\n", g_dir);
    free(cmd);
    return rc;
}

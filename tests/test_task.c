/* Unit tests for task: every tests/data/bad_*.json fails with the message
 * in its bad_*.expect (at load, check or resolve time), and the good spec
 * tests/data/good_task.json loads, checks, resolves and renders as
 * expected. The data directory comes from EVO_SOURCE_ROOT. */
#include "testhelp.h"
#include "task/task.h"

#include <dirent.h>
#include <jansson.h>
#include <stdlib.h>

#define CHECK_PREFIX(s, prefix) CHECK_MSG((s) && strncmp((s), (prefix), strlen(prefix)) == 0, "got: %s", (s))

static char *data_path(const char *name)
{
    const char *root = getenv("EVO_SOURCE_ROOT");
    return xasprintf("%s/tests/data/%s", root ? root : ".", name);
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* Load, check with the defaults on the sm_90 profile, resolve and render
 * every shape: the first error's message, or "(no error)". Fresh string. */
static char *first_error(const char *path)
{
    Task *t = NULL;
    EvoErr err = {{0}};
    DeviceInfo dev;
    char *why = NULL, *msg = NULL;
    int64_t *vals = NULL;
    if (device_profile("sm_90", &dev, &err) < 0)
        return xstrdup(err.msg);
    if (task_load(path, &t, &err) < 0)
        return xstrdup(err.msg);
    vals = xcalloc((size_t)task_nparams(t) + 1, sizeof(int64_t));
    task_defaults(t, vals);
    int rc = task_check(t, vals, &dev, &why, &err);
    if (rc < 0)
        msg = xstrdup(err.msg);
    else if (rc == 0)
        msg = xasprintf("check: %s", why);
    for (int s = 0; !msg && s < task_nshapes(t); s++) {
        Plan p = {0};
        char *src = NULL;
        if (task_resolve(t, vals, s, &dev, &p, &err) < 0 || task_render(t, vals, s, 0, &src, &err) < 0)
            msg = xstrdup(err.msg);
        plan_free(&p);
        free(src);
    }
    free(why);
    free(vals);
    task_free(&t);
    return msg ? msg : xstrdup("(no error)");
}

static void test_bad_specs(void)
{
    char *dir = data_path("");
    DIR *d = opendir(dir);
    CHECK_MSG(d != NULL, "cannot open %s (set EVO_SOURCE_ROOT)", dir);
    if (!d) {
        free(dir);
        return;
    }
    char **names = NULL;
    int n = 0;
    struct dirent *de;
    while ((de = readdir(d))) {
        size_t len = strlen(de->d_name);
        if (strncmp(de->d_name, "bad_", 4) == 0 && len > 5 && strcmp(de->d_name + len - 5, ".json") == 0) {
            names = xrealloc(names, (size_t)(n + 1) * sizeof(*names));
            names[n++] = xstrdup(de->d_name);
        }
    }
    closedir(d);
    qsort(names, (size_t)n, sizeof(*names), cmp_str);
    printf("     %d malformed specs\n", n);
    CHECK(n >= 30);
    for (int i = 0; i < n; i++) {
        char *path = data_path(names[i]);
        char *expect_path = xasprintf("%.*s.expect", (int)(strlen(path) - 5), path);
        char *expect = NULL;
        EvoErr err;
        CHECK_MSG(file_read(expect_path, &expect, NULL, &err) == 0, "%s", err.msg);
        if (expect) {
            size_t el = strlen(expect);
            while (el && (expect[el - 1] == '\n' || expect[el - 1] == '\r'))
                expect[--el] = 0;
            CHECK_MSG(el > 0, "%s is empty", expect_path);
            char *msg = first_error(path);
            CHECK_MSG(strstr(msg, expect) != NULL, "%s\n  got:      %s\n  expected: %s", names[i], msg, expect);
            /* the message always names the spec file */
            CHECK_MSG(strstr(msg, names[i]) != NULL, "%s: message does not name the file: %s", names[i], msg);
            free(msg);
        }
        free(expect);
        free(expect_path);
        free(path);
        free(names[i]);
    }
    free(names);
    free(dir);
}

static Task *load_good(void)
{
    Task *t = NULL;
    EvoErr err;
    char *path = data_path("good_task.json");
    int rc = task_load(path, &t, &err);
    CHECK_MSG(rc == 0, "%s", err.msg);
    free(path);
    return t;
}

static void test_good_load(void)
{
    Task *t = load_good();
    if (!t)
        return;
    CHECK_STR(task_name(t), "scale");
    CHECK_CONTAINS(task_description(t), "alpha * X");
    CHECK_CONTAINS(task_json(t), "\"name\": \"scale\"");
    CHECK_CONTAINS(task_template_path(t), "tests/data/good.cu");
    CHECK_CONTAINS(task_template_text(t), "scale_main");
    CHECK_CONTAINS(task_reference_text(t), "scale_ref");
    CHECK(task_nentries(t) == 2);
    CHECK_STR(task_entry(t, 1), "scale_combine");
    CHECK(task_entry(t, 2) == NULL);
    CHECK(task_nref_entries(t) == 1);
    CHECK_STR(task_ref_entry(t, 0), "scale_ref");
    CHECK(task_nparams(t) == 3);
    CHECK_STR(task_param_name(t, 0), "BLOCK");
    CHECK_STR(task_param_name(t, 2), "SPLITS");
    CHECK(task_param_index(t, "UNROLL") == 1);
    CHECK(task_param_index(t, "NOPE") == -1);
    CHECK(task_param_nvalues(t, 0) == 4);
    CHECK(task_param_value(t, 0, 3) == 512);
    CHECK(task_param_default(t, 0) == 1);
    CHECK(task_param_find(t, 0, 256) == 2);
    CHECK(task_param_find(t, 0, 96) == -1);
    CHECK_NEAR(task_space_size(t), 24.0, 0);
    CHECK(task_nshapes(t) == 3);
    CHECK(task_ndims(t) == 2);
    CHECK_STR(task_dim_name(t, 1), "N");
    CHECK(task_ncompile_dims(t) == 1);
    CHECK_STR(task_compile_dim(t, 0), "M");
    int n = -1;
    const char *const *opts = task_compile_options(t, &n);
    CHECK(n == 1);
    CHECK_STR(opts[0], "-std=c++17");
    CHECK(task_fast_math(t) == 0);
    CHECK(task_lineinfo(t) == 1);
    CHECK(task_max_spill_bytes(t) == 0);
    CHECK(task_max_stack_bytes(t) == 0);
    task_free(&t);
    CHECK(t == NULL);
    task_free(&t);
}

static void test_params_roundtrip(void)
{
    Task *t = load_good();
    if (!t)
        return;
    int64_t vals[3], back[3];
    EvoErr err;
    task_defaults(t, vals);
    CHECK(vals[0] == 128 && vals[1] == 2 && vals[2] == 1);
    char *js = task_params_json(t, vals);
    CHECK_STR(js, "{\"BLOCK\":128,\"UNROLL\":2,\"SPLITS\":1}");
    memset(back, 0, sizeof(back));
    CHECK(task_params_parse(t, js, back, &err) == 0);
    CHECK(memcmp(vals, back, sizeof(vals)) == 0);
    free(js);
    /* every configuration of the space round-trips through both syntaxes */
    int trips = 0;
    for (int a = 0; a < 4; a++)
        for (int b = 0; b < 3; b++)
            for (int c = 0; c < 2; c++) {
                int64_t v[3] = {task_param_value(t, 0, a), task_param_value(t, 1, b), task_param_value(t, 2, c)};
                char *j = task_params_json(t, v);
                char *kv = xasprintf(" SPLITS = %lld , BLOCK=%lld,UNROLL=%lld ", (long long)v[2], (long long)v[0],
                                     (long long)v[1]);
                int64_t w[3] = {0}, x[3] = {0};
                trips += task_params_parse(t, j, w, &err) == 0 && memcmp(v, w, sizeof(v)) == 0 &&
                         task_params_parse(t, kv, x, &err) == 0 && memcmp(v, x, sizeof(v)) == 0;
                free(j);
                free(kv);
            }
    CHECK(trips == 24);
    CHECK(task_params_parse(t, "BLOCK=256", back, &err) == 0);
    CHECK(back[0] == 256 && back[1] == 2 && back[2] == 1);
    CHECK(task_params_parse(t, "", back, &err) == 0);
    CHECK(back[0] == 128);
    CHECK(task_params_parse(t, "{\"UNROLL\": 4}", back, &err) == 0);
    CHECK(back[0] == 128 && back[1] == 4);
    CHECK(task_params_parse(t, "BLOK=64", back, &err) < 0);
    CHECK_STR(err.msg, "unknown param 'BLOK' (did you mean 'BLOCK'?)");
    CHECK(task_params_parse(t, "BLOCK=96", back, &err) < 0);
    CHECK_STR(err.msg, "param 'BLOCK': 96 is not one of its values (64, 128, 256, 512)");
    CHECK(task_params_parse(t, "BLOCK=64,BLOCK=64", back, &err) < 0);
    CHECK_CONTAINS(err.msg, "given twice");
    CHECK(task_params_parse(t, "BLOCK", back, &err) < 0);
    CHECK_CONTAINS(err.msg, "expected NAME=VALUE");
    CHECK(task_params_parse(t, "BLOCK=6x4", back, &err) < 0);
    CHECK_CONTAINS(err.msg, "'6x4' is not an integer");
    CHECK(task_params_parse(t, "{\"BLOCK\": \"64\"}", back, &err) < 0);
    CHECK_CONTAINS(err.msg, "expected an integer");
    CHECK(task_params_parse(t, "{\"BLOCK\": 64", back, &err) < 0);
    task_free(&t);
}

static void test_check(void)
{
    Task *t = load_good();
    DeviceInfo dev;
    EvoErr err;
    char *why = NULL;
    if (!t)
        return;
    CHECK(device_profile("sm_90", &dev, &err) == 0);
    int64_t v[3] = {128, 2, 1};
    CHECK(task_check(t, v, &dev, &why, &err) == 1);
    CHECK(why == NULL);
    int64_t big[3] = {512, 4, 1};
    CHECK(task_check(t, big, &dev, &why, &err) == 0);
    CHECK_STR(why, "constraints[1] 'SMEM <= 4096' (tile too big) fails on shape 0 (M=3 N=1024): 8192 <= 4096");
    free(why);
    int64_t odd[3] = {64, 4, 1};
    CHECK(task_check(t, odd, &dev, &why, &err) == 0);
    CHECK_STR(why, "constraints[2] 'N % UNROLL == 0' fails on shape 1 (M=3 N=102): 2 == 0");
    free(why);
    int64_t notin[3] = {100, 2, 1};
    CHECK(task_check(t, notin, &dev, &why, &err) == 0);
    CHECK_CONTAINS(why, "BLOCK = 100 is not one of its values");
    free(why);
    CHECK(task_check(t, big, &dev, NULL, &err) == 0);
    /* the whole space: 11 (BLOCK, UNROLL) pairs fit the tile, UNROLL=4 fails N=102 */
    int valid = 0;
    for (int a = 0; a < 4; a++)
        for (int b = 0; b < 3; b++)
            for (int c = 0; c < 2; c++) {
                int64_t x[3] = {task_param_value(t, 0, a), task_param_value(t, 1, b), task_param_value(t, 2, c)};
                valid += task_check(t, x, &dev, NULL, &err) == 1;
            }
    CHECK(valid == 16);
    /* a smaller device: MAX_THREADS bites */
    dev.max_threads = 256;
    int64_t wide[3] = {512, 1, 1};
    CHECK(task_check(t, wide, &dev, &why, &err) == 0);
    CHECK_CONTAINS(why, "constraints[0] 'THREADS <= MAX_THREADS' fails on shape 0 (M=3 N=1024): 512 <= 256");
    free(why);
    /* without a device, device variables are unknown: an evaluation error */
    CHECK(task_check(t, v, NULL, &why, &err) < 0);
    CHECK_CONTAINS(err.msg, "good_task.json: constraints[0]: column 12: unknown variable 'MAX_THREADS'");
    task_free(&t);
}

static void test_resolve(void)
{
    Task *t = load_good();
    DeviceInfo dev;
    EvoErr err;
    Plan p = {0};
    if (!t)
        return;
    CHECK(device_profile("sm_90", &dev, &err) == 0);
    int64_t v[3] = {128, 2, 1};
    int rc = task_resolve(t, v, 0, &dev, &p, &err);
    CHECK_MSG(rc == 0, "%s", err.msg);
    if (rc == 0) {
        CHECK_STR(p.shape_label, "M=3 N=1024");
        CHECK(p.is_bench == 1);
        CHECK(p.nbuffers == 3);
        CHECK_STR(p.buffers[0].name, "X");
        CHECK(p.buffers[0].count == 3072);
        CHECK(p.buffers[0].dtype == DT_F32);
        CHECK(p.buffers[0].role == ROLE_INPUT);
        CHECK(p.buffers[0].init.kind == INIT_UNIFORM && p.buffers[0].init.rows == ROWS_NONE);
        CHECK(p.buffers[0].init.a == -1 && p.buffers[0].init.b == 1);
        CHECK(p.nprofiles == 1 && strcmp(p.profiles[0].name, "default") == 0 && p.profiles[0].timing == 1);
        CHECK(p.profiles[0].init[0].kind == INIT_UNIFORM && p.profiles[0].init[0].a == -1);
        CHECK(p.buffers[0].for_ref == 1 && p.buffers[0].for_cand == 1);
        CHECK(p.buffers[1].role == ROLE_OUTPUT);
        CHECK_NEAR(p.buffers[1].atol, 1e-5, 0);
        CHECK_NEAR(p.buffers[1].rtol, 1e-3, 0);
        CHECK(p.buffers[2].count == 0); /* SPLITS=1: no scratch */
        CHECK(p.buffers[2].role == ROLE_SCRATCH);
        CHECK(p.buffers[2].for_cand == 1 && p.buffers[2].for_ref == 0);
        CHECK(p.buffers[0].seed_salt == task_seed_salt("X"));
        CHECK(p.buffers[0].seed_salt != p.buffers[1].seed_salt);
        CHECK(task_seed_salt("X") == 0xaf64154c86024d67ULL); /* FNV-1a 64: stable across runs and builds */
        CHECK(p.nlaunches == 1);            /* combine: when SPLITS > 1 */
        CHECK_STR(p.launches[0].entry, "scale_main");
        CHECK(p.launches[0].grid[0] == 4 && p.launches[0].grid[1] == 3 && p.launches[0].grid[2] == 1);
        CHECK(p.launches[0].block[0] == 128 && p.launches[0].block[1] == 1 && p.launches[0].block[2] == 1);
        CHECK(p.launches[0].smem == 1024);
        CHECK(p.launches[0].nargs == 5);
        CHECK(p.launches[0].args[0].kind == ARG_BUFFER && p.launches[0].args[0].buffer == 0);
        CHECK(p.launches[0].args[2].kind == ARG_BUFFER && p.launches[0].args[2].buffer == 2);
        CHECK(p.launches[0].args[3].kind == ARG_I32 && p.launches[0].args[3].i == 1024);
        CHECK(p.launches[0].args[4].kind == ARG_F32);
        CHECK_NEAR(p.launches[0].args[4].f, 1.5, 0);
        CHECK(p.nref_launches == 1);
        CHECK_STR(p.ref_launches[0].entry, "scale_ref");
        CHECK(p.ref_launches[0].grid[0] == 3 && p.ref_launches[0].block[0] == 128);
        CHECK(p.ref_launches[0].smem == 0);
        CHECK_NEAR(p.ref_launches[0].args[3].f, 1.5, 0);
        CHECK_NEAR(p.flops, 3072, 0);
        CHECK_NEAR(p.bytes, 24576, 0);
        CHECK(p.min_ctas == 4);
    }
    plan_free(&p);

    int64_t s2[3] = {256, 4, 2};
    rc = task_resolve(t, s2, 2, &dev, &p, &err);
    CHECK_MSG(rc == 0, "%s", err.msg);
    if (rc == 0) {
        CHECK_STR(p.shape_label, "M=1 N=4096");
        CHECK(p.is_bench == 0);
        CHECK(p.buffers[2].count == 4096);
        CHECK(p.nlaunches == 2);
        CHECK(p.launches[0].grid[0] == 4 && p.launches[0].grid[2] == 2);
        CHECK_STR(p.launches[1].entry, "scale_combine");
        CHECK(p.launches[1].grid[0] == 16 && p.launches[1].block[0] == 256);
        CHECK(p.launches[1].args[2].kind == ARG_I64 && p.launches[1].args[2].i == 4096);
    }
    plan_free(&p);
    CHECK(task_resolve(t, v, 3, &dev, &p, &err) < 0);
    CHECK_CONTAINS(err.msg, "shape 3 does not exist");
    task_free(&t);
}

static void test_set_dim(void)
{
    Task *t = load_good();
    EvoErr err;
    if (!t)
        return;
    CHECK(task_set_dim(t, "N", 2048, &err) == 0);
    CHECK(task_set_dim(t, "M", 5, &err) == 0);
    char *l0 = task_shape_label(t, 0), *l1 = task_shape_label(t, 1), *l2 = task_shape_label(t, 2);
    CHECK_STR(l0, "M=5 N=2048");
    CHECK_STR(l1, "M=5 N=102");   /* shape 1 sets N itself */
    CHECK_STR(l2, "M=1 N=4096");  /* shape 2 sets both */
    free(l0);
    free(l1);
    free(l2);
    CHECK(task_dim_value(t, 0, 1) == 2048);
    CHECK(task_set_dim(t, "n", 1, &err) < 0);
    CHECK_STR(err.msg, "unknown dim 'n' (did you mean 'N'?)");
    task_free(&t);
}

/* The attention task's HKV and SQ take H's and S's values until a shape
 * or --dim sets them; a shape whose HKV does not divide H, or whose SQ
 * passes S, fails the task's constraint on every configuration (so
 * check and run refuse it, naming the constraint). */
static void test_follow_dims(void)
{
    const char *root = getenv("EVO_SOURCE_ROOT");
    char *path = xasprintf("%s/templates/attention/task.json", root ? root : ".");
    Task *t = NULL;
    EvoErr err;
    DeviceInfo dev;
    char *why = NULL;
    CHECK(device_profile("sm_90", &dev, &err) == 0);
    CHECK_MSG(task_load(path, &t, &err) == 0, "%s", err.msg);
    free(path);
    if (!t)
        return;
    int64_t *vals = xcalloc((size_t)task_nparams(t), sizeof(int64_t));
    task_defaults(t, vals);
    char *l0 = task_shape_label(t, 0), *l2 = task_shape_label(t, 2);
    CHECK_STR(l0, "B=4 H=8 S=512 D=64 CAUSAL=0 DTYPE=0 HKV=8 SQ=512");
    CHECK_STR(l2, "B=1 H=1 S=77 D=64 CAUSAL=0 DTYPE=0 HKV=1 SQ=77");
    free(l0);
    free(l2);
    CHECK(task_set_dim(t, "H", 32, &err) == 0 && task_set_dim(t, "S", 4096, &err) == 0);
    l0 = task_shape_label(t, 0);
    CHECK_STR(l0, "B=4 H=32 S=4096 D=64 CAUSAL=0 DTYPE=0 HKV=32 SQ=4096");   /* they follow */
    free(l0);
    CHECK(task_set_dim(t, "HKV", 8, &err) == 0 && task_set_dim(t, "SQ", 1, &err) == 0);
    l0 = task_shape_label(t, 0);
    CHECK_STR(l0, "B=4 H=32 S=4096 D=64 CAUSAL=0 DTYPE=0 HKV=8 SQ=1");
    free(l0);
    CHECK(task_check(t, vals, &dev, &why, &err) == 1);   /* every other shape pins or divides */
    free(why);
    why = NULL;
    CHECK(task_set_dim(t, "HKV", 3, &err) == 0);
    CHECK(task_check(t, vals, &dev, &why, &err) == 0);
    CHECK_CONTAINS(why, "'HKV >= 1 && H % HKV == 0 && SQ >= 1 && SQ <= S' (a shape's HKV (K/V heads) must divide H");
    CHECK_CONTAINS(why, "fails on shape 0 (B=4 H=32 S=4096");
    free(why);
    why = NULL;
    CHECK(task_set_dim(t, "HKV", 8, &err) == 0 && task_set_dim(t, "SQ", 4097, &err) == 0);
    CHECK(task_check(t, vals, &dev, &why, &err) == 0);
    CHECK_CONTAINS(why, "SQ=4097");
    free(why);
    free(vals);
    task_free(&t);
}

/* A dtype and tolerances picked by a compile dim: shapes that do not set
 * the dim follow the benchmark's (and --dim), one that sets it keeps it;
 * a value that picks nothing is refused and leaves the dim as it was. */
static void test_pick(void)
{
    Task *t = NULL;
    EvoErr err = {{0}};
    DeviceInfo dev;
    char *path = data_path("good_pick_task.json");
    CHECK_MSG(task_load(path, &t, &err) == 0, "%s", err.msg);
    free(path);
    CHECK(device_profile("sm_90", &dev, &err) == 0);
    if (!t)
        return;
    int64_t *vals = xcalloc((size_t)task_nparams(t) + 1, sizeof(int64_t));
    task_defaults(t, vals);
    /* T of the benchmark shape, of shape 1 (inherits) and of shape 3 (sets T = 1) */
    static const struct { int64_t t; int shape; DType x; double atol, rtol; } want[] = {
        {0, 0, DT_F32, 0.001, 0.002}, {0, 1, DT_F32, 0.001, 0.002}, {0, 3, DT_BF16, 0.02, 0.01},
        {1, 0, DT_BF16, 0.02, 0.01},  {1, 1, DT_BF16, 0.02, 0.01},  {1, 3, DT_BF16, 0.02, 0.01},
    };
    for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
        Plan p = {0};
        if (want[i].t && task_set_dim(t, "T", 1, &err) < 0)
            CHECK_MSG(0, "%s", err.msg);
        int rc = task_resolve(t, vals, want[i].shape, &dev, &p, &err);
        CHECK_MSG(rc == 0, "%s", err.msg);
        if (rc == 0) {
            CHECK_MSG(p.buffers[0].dtype == want[i].x, "case %zu: X is %s", i, dtype_name(p.buffers[0].dtype));
            CHECK(p.buffers[2].dtype == DT_F32);   /* a dtype given as one value */
            CHECK_NEAR(p.buffers[1].atol, want[i].atol, 1e-12);
            CHECK_NEAR(p.buffers[1].rtol, want[i].rtol, 1e-12);
        }
        plan_free(&p);
    }
    char *src = NULL;
    CHECK(task_render(t, vals, 1, 0, &src, &err) == 0);
    CHECK_CONTAINS(src, "#define T 1\n");
    free(src);
    CHECK(task_set_dim(t, "T", 2, &err) < 0);
    CHECK_CONTAINS(err.msg, "good_pick_task.json: buffers[0].dtype: T = 2 (shape M=3 N=1024 T=2) picks none of its 2 "
                            "values (T = 0 .. 1)");
    CHECK(task_dim_value(t, 0, task_ndims(t) - 1) == 1);   /* left as it was */
    free(vals);
    task_free(&t);
}

static void test_render(void)
{
    Task *t = load_good();
    EvoErr err;
    char *src = NULL;
    if (!t)
        return;
    int64_t v[3] = {256, 1, 2};
    CHECK(task_render(t, v, 0, 0, &src, &err) == 0);
    CHECK_PREFIX(src, "// evoeng: rendered from good.cu\n#define BLOCK 256\n#define UNROLL 1\n"
                      "#define SPLITS 2\n#define M 3\n#line 1 \"good.cu\"\n");
    CHECK_CONTAINS(src, "extern \"C\" __global__ void scale_main");
    free(src);
    CHECK(task_render(t, v, 2, 0, &src, &err) == 0);
    CHECK_CONTAINS(src, "#define M 1\n");
    free(src);
    CHECK(task_render(t, NULL, 0, 1, &src, &err) == 0);
    CHECK_PREFIX(src, "// evoeng: rendered from good_ref.cu\n#define M 3\n#line 1 \"good_ref.cu\"\n");
    CHECK(strstr(src, "#define BLOCK") == NULL);
    free(src);
    CHECK(task_render(t, v, 9, 0, &src, &err) < 0);
    task_free(&t);
}

/* A tensor_map launch argument resolves to a PlanTmap (innermost dims
 * first, packed strides by default) and is refused where it would reach
 * past its buffer. */
/* Load tests/data/<name> and resolve params ("K=V,...", the rest their
 * defaults; "" all defaults) at shape 0 on sm_90. Returns task_resolve's
 * result (-2 when the spec does not load or params do not parse); *err
 * says why. */
static int resolve_params(const char *name, const char *params, Plan *p, EvoErr *err)
{
    Task *t = NULL;
    DeviceInfo dev;
    char *path = data_path(name);
    int rc = -2;
    CHECK_MSG(task_load(path, &t, err) == 0, "%s", err->msg);
    CHECK(device_profile("sm_90", &dev, err) == 0);
    free(path);
    if (t) {
        int64_t *vals = xcalloc((size_t)task_nparams(t) + 1, sizeof(int64_t));
        if (task_params_parse(t, params, vals, err) == 0)
            rc = task_resolve(t, vals, 0, &dev, p, err);
        free(vals);
        task_free(&t);
    }
    return rc;
}

static int resolve_defaults(const char *name, Plan *p, EvoErr *err)
{
    return resolve_params(name, "", p, err);
}

/* A tensor_map launch argument resolves to a PlanTmap (innermost dims
 * first, packed strides by default) and is refused where it would reach
 * past its buffer. */
static void test_tmap(void)
{
    EvoErr err = {{0}};
    Plan p;
    int rc = resolve_defaults("good_tmap_task.json", &p, &err);
    CHECK_MSG(rc == 0, "%s", err.msg);
    if (rc == 0) {
        const PlanArg *a = &p.launches[0].args[4];
        CHECK(a->kind == ARG_TMAP && strcmp(p.buffers[a->buffer].name, "X") == 0);
        CHECK(a->tmap.rank == 2 && a->tmap.dims[0] == 1024 && a->tmap.dims[1] == 3);
        CHECK(a->tmap.strides[0] == 1024 * 4 && a->tmap.box[0] == 32 && a->tmap.box[1] == 1);
        CHECK(a->tmap.swizzle == 3 && a->tmap.l2_promotion == 3 && a->tmap.oob_nan == 1);
        CHECK(a->tmap.elem_strides[0] == 1 && a->tmap.elem_strides[1] == 1);
        CHECK(p.buffers[a->buffer].for_cand);
        plan_free(&p);
    }
    rc = resolve_defaults("good_tmap_oob.json", &p, &err);
    CHECK(rc == -1);
    printf("     %s\n", err.msg);
    CHECK_CONTAINS(err.msg, "launch[0].args[4].tensor_map: tensor_map reaches byte 16384 of buffer 'X', which holds 12288 bytes");
}

/* An argument with a "when" of its own is passed only where it holds
 * (good_when_args.json: the tensor map where UNROLL > 1, an i32 where
 * SPLITS == 2), and the arguments after it move up. */
static void test_when_args(void)
{
    EvoErr err;
    /* UNROLL, SPLITS: the defaults (2, 1); then (1, 2); then (4, 2) */
    const char *const set[3] = {"", "UNROLL=1,SPLITS=2", "UNROLL=4,SPLITS=2"};
    const int tm[3] = {1, 0, 1}, i32[3] = {0, 1, 1};
    for (int c = 0; c < 3; c++) {
        Plan p;
        int rc = resolve_params("good_when_args.json", set[c], &p, &err);
        CHECK_MSG(rc == 0, "%s", err.msg);
        if (rc)
            continue;
        const PlanLaunch *l = &p.launches[0];
        CHECK_MSG(l->nargs == 4 + tm[c] + i32[c], "case %d: %d arguments", c, l->nargs);
        CHECK(l->args[3].kind == ARG_I32 && l->args[3].i == 1024);   /* N, before the conditional ones */
        CHECK(tm[c] == (l->nargs > 4 && l->args[4].kind == ARG_TMAP));
        if (i32[c])
            CHECK(l->args[l->nargs - 1].kind == ARG_I32 && l->args[l->nargs - 1].i == 7 * 3);
        plan_free(&p);
    }
}

static void test_load_text(void)
{
    char *path = data_path("good_task.json"), *text = NULL;
    size_t len = 0;
    EvoErr err;
    Task *t = NULL;
    CHECK(file_read(path, &text, &len, &err) == 0);
    CHECK(task_load_text(text, len, path, &t, &err) == 0);
    if (t) {
        CHECK_STR(task_json(t), text);
        CHECK_STR(task_path(t), path);
        CHECK_CONTAINS(task_template_text(t), "scale_main");
        task_free(&t);
    }
    /* messages name the given path; a cut-off text is a JSON error */
    CHECK(task_load_text(text, len / 2, "stored:run7", &t, &err) < 0);
    CHECK(t == NULL);
    CHECK(strncmp(err.msg, "stored:run7:", 12) == 0);
    free(text);
    free(path);
}

/* good_task.json with one more param BIG of n values (0, 1, ..., with
 * value dup_at repeated at the end when dup_at >= 0). Fresh string. */
static char *big_param_spec(const char *text, int n, int dup_at)
{
    const char *p = strstr(text, "\"params\"");
    const char *brace = p ? strchr(p, '{') : NULL;
    if (!brace)
        return xstrdup(text);
    StrBuf sb = {0};
    sb_appendn(&sb, text, (size_t)(brace - text) + 1);
    sb_append(&sb, "\"BIG\": {\"default\": 0, \"values\": [0");
    for (int i = 1; i < n; i++)
        sb_printf(&sb, ",%d", i);
    if (dup_at >= 0)
        sb_printf(&sb, ",%d", dup_at);
    sb_append(&sb, "]},");
    sb_append(&sb, brace + 1);
    return sb_take(&sb);
}

/* A param of a million values (issue 35): its duplicate check sorts, so
 * the spec loads in about a second where a quadratic check never ended;
 * a repeat is still found and named at its place. */
static void test_many_values(void)
{
    char *path = data_path("good_task.json"), *text = NULL;
    EvoErr err;
    Task *t = NULL;
    CHECK(file_read(path, &text, NULL, &err) == 0);
    char *big = big_param_spec(text, 999999, -1);
    double t0 = time_now_ms();
    CHECK_MSG(task_load_text(big, strlen(big), path, &t, &err) == 0, "%s", err.msg);
    double ms = time_now_ms() - t0;
    printf("     1e6 values loaded in %.0f ms\n", ms);
    CHECK_MSG(ms < 20000, "%.0f ms", ms);
    CHECK(t && task_param_nvalues(t, task_param_index(t, "BIG")) == 999999);
    task_free(&t);
    free(big);
    big = big_param_spec(text, 999999, 123456);
    CHECK(task_load_text(big, strlen(big), path, &t, &err) < 0);
    CHECK_CONTAINS(err.msg, "params.BIG.values[999999]: duplicate value 123456");
    free(big);
    big = big_param_spec(text, 1000001, -1);     /* past the bound */
    CHECK(task_load_text(big, strlen(big), path, &t, &err) < 0);
    CHECK_CONTAINS(err.msg, "params.BIG.values: 1000001 entries; a spec may hold at most 1000000 here");
    free(big);
    free(text);
    free(path);
}

static void test_missing_file(void)
{
    Task *t = NULL;
    EvoErr err;
    CHECK(task_load("/nonexistent/task.json", &t, &err) < 0);
    CHECK(t == NULL);
    CHECK_CONTAINS(err.msg, "/nonexistent/task.json");
}

static void test_targets(void)
{
    /* The NVRTC target: the device's arch, or its arch-specific variant
     * when the task asks for one and one exists. */
    DeviceInfo dev;
    EvoErr err;
    CHECK(device_profile("sm_90", &dev, &err) == 0);
    CHECK_STR(device_nvrtc_target(&dev, 0), "sm_90");
    CHECK_STR(device_nvrtc_target(&dev, 1), "sm_90a");
    CHECK(device_profile("sm_80", &dev, &err) == 0);
    CHECK_STR(device_nvrtc_target(&dev, 1), "sm_80");
    snprintf(dev.arch, sizeof(dev.arch), "sm_100");
    CHECK_STR(device_nvrtc_target(&dev, 1), "sm_100a");
    snprintf(dev.arch, sizeof(dev.arch), "sm_10");
    CHECK_STR(device_nvrtc_target(&dev, 1), "sm_10");
}

static void test_shipped_tasks(void)
{
    /* The task specs under templates/ load and their defaults pass on sm_90. */
    const char *specs[] = {"templates/softmax/task.json", "templates/attention/task.json",
                           "templates/triad/task.json"};
    const char *root = getenv("EVO_SOURCE_ROOT");
    DeviceInfo dev;
    EvoErr err;
    CHECK(device_profile("sm_90", &dev, &err) == 0);
    for (size_t i = 0; i < EVO_ARRAY_LEN(specs); i++) {
        char *path = xasprintf("%s/%s", root ? root : ".", specs[i]);
        FILE *f = fopen(path, "r");
        if (!f) {
            printf("     (%s not present yet)\n", specs[i]);
            free(path);
            continue;
        }
        fclose(f);
        char *msg = first_error(path);
        CHECK_STR(msg, "(no error)");
        free(msg);
        free(path);
    }
    /* The attention template comes in three files; the task's template
     * text is the one source they make, with #line directives naming each. */
    char *path = xasprintf("%s/templates/attention/task.json", root ? root : ".");
    Task *t = NULL;
    if (task_load(path, &t, &err) == 0) {
        const char *text = task_template_text(t);
        CHECK(strstr(text, "#include \"attention_") == NULL);
        CHECK(strstr(text, "#line 1 \"attention_fa2.cuh\"\n") && strstr(text, "#line 1 \"attention_ws.cuh\"\n"));
        CHECK(strstr(text, "attn_fwd(") && strstr(text, "attn_fwd_ws(") && strstr(text, "attn_combine("));
        task_free(&t);
    } else {
        CHECK_MSG(0, "%s", err.msg);
    }
    free(path);
}

/* Input profiles: good_task.json with three of them, one that changes X's
 * distribution and scales its rows (one factor per index of M: rows of
 * N elements), one gate-only; their names, flags, lookups and resolved
 * generators. A spec without profiles has the one "default". */
static void test_profiles(void)
{
    EvoErr err = {{0}};
    DeviceInfo dev;
    char *path = data_path("good_task.json"), *text = NULL;
    Task *t = NULL;
    CHECK(device_profile("sm_90", &dev, &err) == 0);
    CHECK_MSG(file_read(path, &text, NULL, &err) == 0, "%s", err.msg);
    if (!text) {
        free(path);
        return;
    }
    json_t *root = json_loads(text, 0, NULL);
    json_t *profs = json_loads("[{\"name\": \"plain\"},"
                               " {\"name\": \"wide-rows\", \"description\": \"peaky rows\", \"inputs\": {\"X\":"
                               "  {\"dist\": \"outlier\", \"std\": 2, \"p\": 0.25, \"outlier_std\": 8,"
                               "   \"row_scale\": {\"dist\": \"lognormal\", \"std\": 1.5, \"dim\": \"M\"}}}},"
                               " {\"name\": \"gate_only\", \"timing\": false}]", 0, NULL);
    CHECK(root && profs);
    json_object_set_new(root, "profiles", profs);
    char *spec = json_dumps(root, JSON_COMPACT);
    CHECK_MSG(task_load_text(spec, strlen(spec), path, &t, &err) == 0, "%s", err.msg);
    if (t) {
        CHECK(task_nprofiles(t) == 3);
        CHECK_STR(task_profile_name(t, 1), "wide-rows");
        CHECK_STR(task_profile_description(t, 1), "peaky rows");
        CHECK_STR(task_profile_description(t, 0), "");
        CHECK(task_profile_timing(t, 0) && task_profile_timing(t, 1) && !task_profile_timing(t, 2));
        CHECK(task_profile_find(t, "gate_only", &err) == 2);
        CHECK(task_profile_find(t, "wide_rows", &err) == -1);
        CHECK_CONTAINS(err.msg, "unknown profile 'wide_rows' (did you mean 'wide-rows'?) (the task's profiles: plain "
                                "wide-rows gate_only)");
        int64_t v[3] = {128, 2, 1};
        Plan p = {0};
        CHECK_MSG(task_resolve(t, v, 0, &dev, &p, &err) == 0, "%s", err.msg);
        CHECK(p.nprofiles == 3 && plan_nprofiles(&p) == 3 && plan_timing_mask(&p) == 3u);
        CHECK_STR(plan_profile_name(&p, 2), "gate_only");
        const InitSpec *x0 = plan_init(&p, 0, 0), *x1 = plan_init(&p, 1, 0);
        CHECK(x0->kind == INIT_UNIFORM && x0->rows == ROWS_NONE && x0->a == -1);   /* the buffer's own */
        CHECK(x1->kind == INIT_OUTLIER && x1->b == 2 && x1->p == 0.25 && x1->c == 8 && x1->a == 0);
        CHECK(x1->rows == ROWS_LOGNORMAL && x1->ra == 0 && x1->rb == 1.5);
        CHECK(x1->row_len == 1024);   /* X is [M, N]: one factor per index of M, rows of N */
        CHECK(plan_init(&p, 2, 0)->kind == INIT_UNIFORM);
        plan_free(&p);
        /* a correctness shape resolves its own row length */
        CHECK_MSG(task_resolve(t, v, 1, &dev, &p, &err) == 0, "%s", err.msg);
        CHECK(plan_init(&p, 1, 0)->row_len == 102);
        plan_free(&p);
        /* run and bench --profile: these timed, any of the task's; a bad
         * list leaves the task as it was */
        CHECK_MSG(task_time_profiles(t, "gate_only,plain", &err) == 0, "%s", err.msg);
        CHECK(task_profile_timing(t, 0) && !task_profile_timing(t, 1) && task_profile_timing(t, 2));
        CHECK(task_time_profiles(t, "plain,nope", &err) == -1);
        CHECK_CONTAINS(err.msg, "unknown profile 'nope'");
        CHECK(task_time_profiles(t, "wide-rows,wide-rows", &err) == -1);
        CHECK_CONTAINS(err.msg, "profile 'wide-rows' is named twice");
        CHECK(task_time_profiles(t, ",", &err) == -1);
        CHECK_CONTAINS(err.msg, "no profile named");
        CHECK(task_profile_timing(t, 0) && !task_profile_timing(t, 1) && task_profile_timing(t, 2));
        CHECK_MSG(task_resolve(t, v, 0, &dev, &p, &err) == 0, "%s", err.msg);
        CHECK(plan_timing_mask(&p) == 5u);
        plan_free(&p);
        task_free(&t);
    }
    free(spec);
    json_decref(root);
    /* without "profiles": one implicit profile, timed, of the buffers' inits */
    CHECK(task_load(path, &t, &err) == 0);
    if (t) {
        CHECK(task_nprofiles(t) == 1 && task_profile_timing(t, 0));
        CHECK_STR(task_profile_name(t, 0), "default");
        CHECK(task_profile_find(t, "default", &err) == 0);
        CHECK(task_time_profiles(t, "default", &err) == 0 && task_profile_timing(t, 0));
        task_free(&t);
    }
    /* a plan made by hand has the one implicit profile too */
    Plan hand = {0};
    PlanBuffer b = {.init = {.kind = INIT_CONST, .a = 2}};
    hand.buffers = &b;
    hand.nbuffers = 1;
    CHECK(plan_nprofiles(&hand) == 1 && plan_timing_mask(&hand) == 1u && plan_init(&hand, 0, 0) == &b.init);
    CHECK_STR(plan_profile_name(&hand, 0), "default");
    free(text);
    free(path);
}

int main(void)
{
    RUN(test_bad_specs);
    RUN(test_profiles);
    RUN(test_good_load);
    RUN(test_params_roundtrip);
    RUN(test_check);
    RUN(test_resolve);
    RUN(test_set_dim);
    RUN(test_follow_dims);
    RUN(test_pick);
    RUN(test_render);
    RUN(test_load_text);
    RUN(test_tmap);
    RUN(test_when_args);
    RUN(test_missing_file);
    RUN(test_many_values);
    RUN(test_targets);
    RUN(test_shipped_tasks);
    return test_report();
}

/*
 * test_kfile: real kernel files under NVRTC (issue 14, item 4), no GPU
 * needed. tests/data/kfile/attn_rows.cu is a kernel file as written for
 * nvcc: a template kernel, a namespaced kernel, an extern "C" host launcher
 * with <<<...>>>, a host helper, includes of cuda.h, cuda_runtime.h, mma.h,
 * math.h, stdio.h, and INFINITY. Checked here: the device view (host code
 * out, lines kept), the kernel signatures `init` reads, the compile for
 * sm_90 with name expressions and their lowered names (live and from the
 * cache), the prelude, the hint on host code that cannot be left out,
 * entry names in task specs (accepted forms, garbage, TODO markers), and
 * prep rewriting plans (candidate and reference) to the lowered names.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "compile/kfile.h"
#include "config.h"
#include "compile/nvrtc.h"
#include "compile/prep.h"
#include "task/task.h"
#include "testdata.h"
#include "testhelp.h"

static char *data_path(const char *name)
{
    return test_data_path("kfile", name);
}

static char *load(const char *name)
{
    return test_data_load("kfile", name);
}

static int count_char(const char *s, char c)
{
    int n = 0;
    for (; *s; s++)
        n += *s == c;
    return n;
}

/* ---- device view ------------------------------------------------------- */

static void test_device_view_file(void)
{
    char *src = load("attn_rows.cu");
    int removed = -1;
    char *dev = kfile_device_source(src, &removed);
    CHECK(strlen(dev) == strlen(src));
    CHECK(count_char(dev, '\n') == count_char(src, '\n'));
    CHECK(removed == 2);                               /* check() and attn_rows_launch() */
    CHECK(!strstr(dev, "attn_rows_launch"));
    CHECK(!strstr(dev, "<<<grid"));
    CHECK(!strstr(dev, "fprintf"));
    CHECK_CONTAINS(dev, "__global__ void __launch_bounds__(128) attn_rows(");
    CHECK_CONTAINS(dev, "x[i] = value;");              /* util::fill stays */
    CHECK_CONTAINS(dev, "#include <cuda_runtime.h>");  /* includes are the stubs' job */
    CHECK_CONTAINS(dev, "host launcher with <<<...>>>,\n// host-only includes");  /* comments untouched */
    /* a line after the removed launcher keeps its number */
    const char *a = strstr(src, "namespace util"), *b = strstr(dev, "namespace util");
    CHECK(a && b && a - src == b - dev);
    free(dev);
    free(src);
}

static void test_device_view_cases(void)
{
    static const struct {
        const char *src;
        int         removed;
        const char *kept;      /* must remain ("" for none) */
        const char *gone;      /* must be blanked ("" for none) */
    } cases[] = {
        {"__host__ __device__ float f(float x) { return x; }\n", 0, "return x;", ""},
        {"int cdiv(int a, int b) { return (a + b - 1) / b; }\n", 0, "return (a + b - 1) / b;", ""},
        {"constexpr int two() { return 2; }\n", 0, "return 2;", ""},
        {"void h(float **p) { cudaMalloc(p, 4); }\n", 1, "", "cudaMalloc"},
        {"int main(int argc, char **argv) { return 0; }\n", 1, "", "argc"},
        {"__host__ void only_host() { }\n", 1, "", "only_host"},
        {"static void launch_it(float *x)\n{\n    k<<<1, 1>>>(x);\n}\n__global__ void k(float *x) { *x = 1; }\n", 1,
         "__global__ void k(float *x) { *x = 1; }", "launch_it"},
        {"namespace a { namespace b {\nextern \"C\" void l() { go(); }\n} }\n", 1, "namespace a { namespace b {",
         "go();"},
        {"extern \"C\" {\nvoid l2() { x(); }\n__global__ void k2() { }\n}\n", 1, "__global__ void k2() { }", "x();"},
        {"// extern \"C\" void c() { bad<<<1,1>>>(); }\nconst char *s = \"{ <<< }\";\n", 0, "bad<<<1,1>>>", ""},
        {"struct S { void host() { std::puts(\"x\"); } };\n", 0, "std::puts", ""},
        {"int v[] = {1, 2};\n__device__ int d() { return 1'000; }\n", 0, "return 1'000;", ""},
        {"void f() { const char *r = R\"x( } )x\"; fprintf(stderr, r); }\n__global__ void g() { }\n", 1,
         "__global__ void g() { }", "fprintf"},
        {"#define OPEN {\nvoid f() { exit(1); }\n", 1, "#define OPEN {", "exit"},
    };
    for (size_t i = 0; i < EVO_ARRAY_LEN(cases); i++) {
        int removed = -1;
        char *dev = kfile_device_source(cases[i].src, &removed);
        CHECK_MSG(removed == cases[i].removed, "case %zu: removed %d, expected %d:\n%s", i, removed,
                  cases[i].removed, dev);
        CHECK_MSG(strlen(dev) == strlen(cases[i].src) && count_char(dev, '\n') == count_char(cases[i].src, '\n'),
                  "case %zu: length or lines changed", i);
        if (cases[i].kept[0])
            CHECK_MSG(strstr(dev, cases[i].kept) != NULL, "case %zu: lost \"%s\":\n%s", i, cases[i].kept, dev);
        if (cases[i].gone[0])
            CHECK_MSG(strstr(dev, cases[i].gone) == NULL, "case %zu: kept \"%s\":\n%s", i, cases[i].gone, dev);
        free(dev);
    }
}

/* ---- signatures ---------------------------------------------------------- */

static void test_kernels(void)
{
    char *src = load("attn_rows.cu");
    KfileKernel *k = NULL;
    int n = kfile_kernels(src, &k);
    CHECK(n == 2);
    if (n == 2) {
        CHECK_STR(k[0].name, "attn_rows");
        CHECK(k[0].is_template && k[0].ntparams == 2);
        if (k[0].ntparams == 2) {
            CHECK_STR(k[0].tnames[0], "S");
            CHECK_STR(k[0].tnames[1], "D");
        }
        CHECK(k[0].nparams == 6);
        if (k[0].nparams == 6) {
            CHECK_STR(k[0].params[0].name, "q");
            CHECK_STR(k[0].params[0].type, "const float *__restrict__");
            CHECK_STR(k[0].params[3].type, "float *__restrict__");
            CHECK_STR(k[0].params[4].name, "B");
            CHECK_STR(k[0].params[4].type, "int");
            CHECK_STR(k[0].params[5].name, "scale");
        }
        CHECK(k[0].line == 19);
        CHECK_STR(k[1].name, "util::fill");
        CHECK(!k[1].is_template && !k[1].extern_c && k[1].nparams == 3);
    }
    kfile_kernels_free(k, n);
    const char *more = "extern \"C\" __global__ void e(int, float *y) {}\n"
                       "template <typename T, int N = 4> __global__ void t(T *x, unsigned n) {}\n"
                       "__global__ void decl_only(float *x);\n";
    n = kfile_kernels(more, &k);
    CHECK(n == 2);
    if (n == 2) {
        CHECK(k[0].extern_c && k[0].nparams == 2);
        CHECK(k[0].nparams == 2 && strcmp(k[0].params[0].name, "arg0") == 0 && strcmp(k[0].params[0].type, "int") == 0);
        CHECK(k[1].ntparams == 2 && strcmp(k[1].tnames[1], "N") == 0);
    }
    kfile_kernels_free(k, n);
    free(src);
}

/* ---- compiling with NVRTC ------------------------------------------------ */

static const char *const exprs[] = {"attn_rows<128, 64>", "attn_rows<SEQ, HEAD_DIM>", "util::fill"};

static void check_lowered(const CompileResult *res)
{
    const char *a = nvrtc_lowered_name(res, "attn_rows<128, 64>");
    const char *b = nvrtc_lowered_name(res, "attn_rows<SEQ, HEAD_DIM>");
    const char *f = nvrtc_lowered_name(res, "util::fill");
    CHECK(a && strncmp(a, "_Z9attn_rowsILi128ELi64EE", 25) == 0);
    CHECK(b && strncmp(b, "_Z9attn_rowsILi256ELi32EE", 25) == 0);     /* macros expand in name expressions */
    CHECK(f && strcmp(f, "_ZN4util4fillEPffi") == 0);
    CHECK(nvrtc_lowered_name(res, "nope") == NULL);
    CHECK(a && nvrtc_find_kernel(res, a) != NULL);                       /* ptxas reports the lowered names */
    CHECK(f && nvrtc_find_kernel(res, f) != NULL);
}

static void test_compile_file(void)
{
    char *src = load("attn_rows.cu");
    char *full = xasprintf("#define SEQ 256\n#define HEAD_DIM 32\n%s", src);
    char tmpl[] = "/tmp/evo_kfile_XXXXXX";
    char *dir = mkdtemp(tmpl);
    CHECK(dir != NULL);
    nvrtc_set_cache_dir(dir);
    CompileRequest req = {.source = full, .name = "attn_rows.cu", .arch = "sm_90", .name_exprs = exprs,
                          .nname_exprs = 3};
    CompileResult res;
    EvoErr err;
    CHECK(nvrtc_compile(&req, &res, &err) == 0);
    CHECK_MSG(res.ok, "%s\n%s", res.error, res.log);
    CHECK(!res.cache_hit);
    CHECK_CONTAINS(res.options, "--pre-include=" KFILE_PRELUDE);
    if (res.ok)
        check_lowered(&res);
    /* the second compile comes from the cache, lowered names included */
    CompileResult again;
    CHECK(nvrtc_compile(&req, &again, &err) == 0);
    CHECK(again.ok && again.cache_hit);
    if (again.ok)
        check_lowered(&again);
    CHECK(strcmp(res.key, again.key) == 0);
    /* the name expressions are part of the key */
    CompileRequest fewer = req;
    fewer.nname_exprs = 1;
    char *o1 = NULL;
    char k1[65];
    CHECK(nvrtc_request_key(&fewer, &o1, k1, &err) == 0);
    CHECK(strcmp(k1, res.key) != 0);
    free(o1);
    nvrtc_result_free(&res);
    nvrtc_result_free(&again);
    nvrtc_set_cache_dir(NULL);
    CHECK(test_rmtree(dir) == 0);
    /* an entry that is not in the file is a compile error naming it */
    const char *bad[] = {"attn_rows_v2<128, 64>"};
    req.name_exprs = bad;
    req.nname_exprs = 1;
    CHECK(nvrtc_compile(&req, &res, &err) == 0);
    CHECK(!res.ok);
    CHECK_CONTAINS(res.log, "attn_rows_v2");
    CHECK_CONTAINS(res.error, "a task entry names no kernel of this source (identifier \"attn_rows_v2\" is undefined)");
    nvrtc_result_free(&res);
    free(full);
    free(src);
}

static void test_prelude(void)
{
    const char *src =
        "#include <cmath>\n#include <cstdint>\n#include <cfloat>\n#include <climits>\n#include <cassert>\n"
        "#include <cuda.h>\n#include <cuda_runtime.h>\n#include <mma.h>\n#include <cuda_fp16.h>\n"
        "#include <iostream>\n#include <vector>\n"
        "constexpr float kInf = INFINITY;\n"
        "extern \"C\" __global__ void k(float *x, int64_t n, uint32_t m) {\n"
        "    assert(n > 0);\n"
        "    x[0] = -INFINITY + NAN + FLT_MAX + HUGE_VALF + (float)M_PI + INT_MAX + kInf + (float)UINT32_MAX;\n"
        "    x[1] = (float)(sizeof(int64_t) == 8 && sizeof(uint64_t) == 8 && sizeof(int8_t) == 1);\n"
        "}\n";
    CompileRequest req = {.source = src, .name = "prelude.cu", .arch = "sm_90"};
    CompileResult res;
    EvoErr err;
    CHECK(nvrtc_compile(&req, &res, &err) == 0);
    CHECK_MSG(res.ok, "%s\n%s", res.error, res.log);
    nvrtc_result_free(&res);
    /* a file's own definition under #ifndef still compiles */
    const char *own = "#ifndef INFINITY\n#define INFINITY __int_as_float(0x7f800000)\n#endif\n"
                      "extern \"C\" __global__ void k(float *x) { x[0] = -INFINITY; }\n";
    req.source = own;
    CHECK(nvrtc_compile(&req, &res, &err) == 0);
    CHECK_MSG(res.ok, "%s\n%s", res.error, res.log);
    nvrtc_result_free(&res);
}

static void test_host_hint(void)
{
    static const struct {
        const char *src, *where, *what;
    } cases[] = {
        {"// a PyTorch extension\n#include <torch/extension.h>\n__global__ void k() { }\n", "host.cu:2",
         "cannot open source file"},
        {"__global__ void k(float *x) { }\n__device__ void d(float *p) {\n  cudaMemcpyAsync(p, p, 4, "
         "cudaMemcpyDeviceToDevice, 0);\n}\n", "host.cu:3", "cudaMemcpyAsync"},
    };
    for (size_t i = 0; i < EVO_ARRAY_LEN(cases); i++) {
        CompileRequest req = {.source = cases[i].src, .name = "host.cu", .arch = "sm_90"};
        CompileResult res;
        EvoErr err;
        CHECK(nvrtc_compile(&req, &res, &err) == 0);
        CHECK(!res.ok);
        CHECK_CONTAINS(res.error, cases[i].where);
        CHECK_CONTAINS(res.error, cases[i].what);
        CHECK_CONTAINS(res.error, "guard it with #ifndef __CUDACC_RTC__ ... #endif");
        CHECK_CONTAINS(res.log, "evoeng: host.cu");
        nvrtc_result_free(&res);
    }
    /* a plain device-code error gets no such hint */
    CompileRequest req = {.source = "__global__ void k() { int x = ; }\n", .name = "dev.cu", .arch = "sm_90"};
    CompileResult res;
    EvoErr err;
    CHECK(nvrtc_compile(&req, &res, &err) == 0);
    CHECK(!res.ok);
    CHECK(!strstr(res.error, "__CUDACC_RTC__"));
    nvrtc_result_free(&res);
    char *h = kfile_hint(NULL);
    CHECK(h == NULL);
}

/* ---- entry names in task specs ------------------------------------------- */

static void test_entry_canon(void)
{
    static const char *const good[][2] = {
        {"k", "k"},
        {"ns::k", "ns::k"},
        {"::k", "::k"},
        {"a::b::k", "a::b::k"},
        {"k<128,64>", "k<128, 64>"},
        {" k < 128 ,  64 > ", "k<128, 64>"},
        {"ns::k<float, 4>", "ns::k<float, 4>"},
        {"k<-1, vec<2>>", "k<-1, vec<2>>"},
        {"k<unsigned   int>", "k<unsigned int>"},
        {"k<const float*>", "k<const float*>"},
        {"k<float const *>", "k<float const*>"},
        {"k<BLOCK_M, 0x80, 4u>", "k<BLOCK_M, 0x80, 4u>"},
        {"k<>", "k<>"},
        {"k<std::int64_t>", "k<std::int64_t>"},
    };
    for (size_t i = 0; i < EVO_ARRAY_LEN(good); i++) {
        char why[512] = "";
        char *c = task_entry_canon(good[i][0], why, sizeof(why));
        CHECK_MSG(c && strcmp(c, good[i][1]) == 0, "'%s' -> '%s' (%s), expected '%s'", good[i][0],
                  c ? c : "(null)", why, good[i][1]);
        free(c);
    }
    static const char *const bad[][2] = {
        {"", "column 1: expected an identifier"},
        {"1k", "column 1"},
        {"k<", "unclosed '<'"},
        {"k<128", "unclosed '<'"},
        {"k<>x", "unexpected characters"},
        {"k()", "unexpected characters"},
        {"k<128;>", "expected ',' or '>'"},
        {"a b", "column 3: unexpected characters"},
        {"k<<1>>", "column 3"},
        {"k\"", "unexpected characters"},
        {"ns::", "expected an identifier"},
        {"k<-x>", "expected a number after '-'"},
        {"k<1,>", "expected an identifier"},
    };
    for (size_t i = 0; i < EVO_ARRAY_LEN(bad); i++) {
        char why[512] = "";
        char *c = task_entry_canon(bad[i][0], why, sizeof(why));
        CHECK_MSG(c == NULL, "'%s' accepted as '%s'", bad[i][0], c ? c : "");
        CHECK_CONTAINS(why, bad[i][1]);
        CHECK_CONTAINS(why, "is not a kernel name");
        free(c);
    }
}

static void test_task_entries(void)
{
    char *path = data_path("task.json");
    Task *t = NULL;
    EvoErr err;
    CHECK_MSG(task_load(path, &t, &err) == 0, "%s", err.msg);
    if (t) {
        CHECK(task_nentries(t) == 2);
        CHECK_STR(task_entry(t, 0), "attn_rows<SEQ, HEAD_DIM>");   /* "attn_rows<SEQ,HEAD_DIM>" in the file */
        CHECK_STR(task_entry(t, 1), "util::fill");
        CHECK_STR(task_ref_entry(t, 0), "attn_rows<SEQ, HEAD_DIM>");
        int64_t vals[4];
        task_defaults(t, vals);
        Plan p = {0};
        DeviceInfo dev;
        CHECK(device_profile("sm_90", &dev, &err) == 0);
        CHECK_MSG(task_resolve(t, vals, 0, &dev, &p, &err) == 0, "%s", err.msg);
        CHECK(p.nlaunches == 1 && strcmp(p.launches[0].entry, "attn_rows<SEQ, HEAD_DIM>") == 0);
        plan_free(&p);
        task_free(&t);
    }
    /* garbage names the file, the JSON path and the column */
    char *text = NULL;
    CHECK(file_read(path, &text, NULL, &err) == 0);
    static const char *const subst[][3] = {
        {"\"attn_rows<SEQ,HEAD_DIM>\", \"util::fill\"", "\"attn_rows<SEQ,HEAD_DIM\", \"util::fill\"",
         "bad.json: entries[0]: 'attn_rows<SEQ,HEAD_DIM' is not a kernel name (column 23: unclosed '<')"},
        {"\"util::fill\"]", "\"util::fill()\"]", "bad.json: entries[1]: 'util::fill()' is not a kernel name"},
        {"\"attn_rows< SEQ, HEAD_DIM >\"", "\"attn_rows<SEQ; HEAD_DIM>\"", "bad.json: launch[0].entry: 'attn_rows<SEQ; HEAD_DIM>'"},
        {"\"attn_rows< SEQ, HEAD_DIM >\"", "\"attn_rows<HEAD_DIM, SEQ>\"",
         "bad.json: launch[0].entry: 'attn_rows<HEAD_DIM, SEQ>' is not declared in entries"},
        {"\"entries\": [\"attn_rows<SEQ, HEAD_DIM>\"]", "\"entries\": [\"attn_rows<SEQ, HEAD_DIM>\", \"attn_rows<SEQ,HEAD_DIM>\"]",
         "bad.json: reference.entries[1]: duplicate entry 'attn_rows<SEQ, HEAD_DIM>'"},
        {"\"B\": 4", "\"B\": \"TODO: the benchmark shape's value\"",
         "bad.json: dims.B: unfinished: \"TODO: the benchmark shape's value\" is a TODO left by `evoeng init` (1 TODO in all)"},
    };
    for (size_t i = 0; text && i < EVO_ARRAY_LEN(subst); i++) {
        const char *at = strstr(text, subst[i][0]);
        CHECK_MSG(at != NULL, "case %zu: pattern not in task.json", i);
        if (!at)
            continue;
        char *mod = xasprintf("%.*s%s%s", (int)(at - text), text, subst[i][1], at + strlen(subst[i][0]));
        char *dir = path_dirname(path);
        char *bad = path_join(dir, "bad.json");
        Task *b = NULL;
        err.msg[0] = '\0';
        CHECK(task_load_text(mod, strlen(mod), bad, &b, &err) == -1);
        CHECK(b == NULL);
        CHECK_CONTAINS(err.msg, subst[i][2]);
        free(bad);
        free(dir);
        free(mod);
    }
    free(text);
    free(path);
}

/* prep: the plans launch, and the compile record names, the lowered names. */
static void test_prep_lowers(void)
{
    DeviceInfo dev;
    Task *t = test_task_sm90("kfile", "task.json", &dev);
    CHECK(t != NULL);
    if (!t)
        return;
    EvoErr err;
    int64_t vals[4];
    task_defaults(t, vals);
    PrepInput in = {.vals = vals};
    Prepared p;
    CHECK_MSG(prep_many(t, &dev, &in, &p, 1, 0, &err) == 0, "%s", err.msg);
    CHECK_MSG(p.status[0] == 0, "%s: %s", p.status, p.error ? p.error : "");
    if (p.status[0] == 0 && p.nplans == 2) {
        /* shape 0: SEQ=128 HEAD_DIM=64; shape 1: SEQ=256 HEAD_DIM=32, each its own instantiation */
        CHECK(strncmp(p.plans[0].launches[0].entry, "_Z9attn_rowsILi128ELi64EE", 25) == 0);
        CHECK(strncmp(p.plans[1].launches[0].entry, "_Z9attn_rowsILi256ELi32EE", 25) == 0);
        CHECK(strcmp(prep_unit_entry(&p.units[p.shape_unit[0]], "util::fill"), "_ZN4util4fillEPffi") == 0);
        CHECK(strcmp(prep_unit_entry(&p.units[p.shape_unit[0]], "not_an_entry"), "not_an_entry") == 0);
        CompileRecord rec;
        prep_compile_record(&p.units[p.shape_unit[0]], &rec);
        CHECK_CONTAINS(rec.resources_json, "\"entry\":\"attn_rows<SEQ, HEAD_DIM>\"");
        CHECK_CONTAINS(rec.resources_json, "\"entry\":\"util::fill\"");
        compile_record_free(&rec);
        /* the reference's launches, lowered by the reference's units */
        PrepRef ref;
        CHECK_MSG(prep_reference(t, &dev, &ref, 0, &err) == 0, "%s", err.msg);
        CHECK(strcmp(p.plans[1].ref_launches[0].entry, "attn_rows<SEQ, HEAD_DIM>") == 0);
        prep_ref_lower(&ref, &p.plans[1], 1);
        CHECK(strncmp(p.plans[1].ref_launches[0].entry, "_Z9attn_rowsILi256ELi32EE", 25) == 0);
        prep_ref_lower(&ref, &p.plans[1], 1);            /* idempotent */
        CHECK(strncmp(p.plans[1].ref_launches[0].entry, "_Z9attn_rowsILi256ELi32EE", 25) == 0);
        prep_ref_free(&ref);
    }
    prep_free(&p);
    task_free(&t);
}

int main(void)
{
    RUN(test_device_view_file);
    RUN(test_device_view_cases);
    RUN(test_kernels);
    RUN(test_entry_canon);
    RUN(test_task_entries);
    RUN(test_prelude);
    RUN(test_host_hint);
    RUN(test_compile_file);
    RUN(test_prep_lowers);
    return test_report();
}

/*
 * test_nvrtc: NVRTC compilation for sm_90 (no GPU needed), the ptxas
 * resource parser on captured logs and on live compiles, option strings
 * and cache keys, the on-disk cache (hits do no compile, corrupt entries
 * are ignored) and parallel compilation matching serial byte for byte.
 * Kernels and logs live in tests/data/kernels/ (see its README.md).
 */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "compile/clog.h"
#include "config.h"
#include "compile/nvrtc.h"
#include "testdata.h"
#include "testhelp.h"

static char *load(const char *name)
{
    return test_data_load("kernels", name);
}

static CompileRequest request(const char *source, const char *name)
{
    CompileRequest r = {0};
    r.source = source;
    r.name = name;
    r.arch = "sm_90";
    return r;
}

static int same_cubin(const CompileResult *a, const CompileResult *b)
{
    return a->cubin && b->cubin && a->cubin_len == b->cubin_len &&
           memcmp(a->cubin, b->cubin, a->cubin_len) == 0;
}

/* ---- parser on captured logs ------------------------------------------ */

static void test_parse_spill_log(void)
{
    char *log = load("spill.ptxas.log");
    KernelResources *k = NULL;
    int n = ptxas_parse_resources(log, &k);
    CHECK(n == 1);
    if (n == 1) {
        CHECK_STR(k[0].name, "spill_kernel");
        CHECK(k[0].registers == 32);
        CHECK(k[0].stack == 1312);
        CHECK(k[0].spill_stores == 2152);
        CHECK(k[0].spill_loads == 2196);
        CHECK(k[0].smem == 0);
        CHECK(k[0].cmem == -1);
    }
    free(k);
    free(log);
}

static void test_parse_smem_log(void)
{
    char *log = load("smem.ptxas.log");
    KernelResources *k = NULL;
    int n = ptxas_parse_resources(log, &k);
    CHECK(n == 1);
    if (n == 1) {
        CHECK_STR(k[0].name, "reduce_smem");
        CHECK(k[0].registers == 16);
        CHECK(k[0].smem == 1152);
        CHECK(k[0].spill_stores == 0 && k[0].spill_loads == 0 && k[0].stack == 0);
    }
    free(k);
    free(log);
}

static void test_parse_multi_log(void)
{
    char *log = load("multi.ptxas.log");
    KernelResources *k = NULL;
    int n = ptxas_parse_resources(log, &k);
    CHECK(n == 4);
    if (n == 4) {
        /* Log order; the device function _Z6helperf is not an entry. */
        CHECK_STR(k[0].name, "k_call");
        CHECK(k[0].registers == 16 && k[0].stack == 32);
        CHECK_STR(k[1].name, "k_mul");
        CHECK(k[1].registers == 10 && k[1].stack == 0);
        CHECK_STR(k[2].name, "k_add");
        CHECK(k[2].registers == 12);
        CHECK_STR(k[3].name, "_Z7scale_tILi4EEvPf");
        CHECK(k[3].registers == 10);
    }
    free(k);
    free(log);
}

static void test_parse_legacy_log(void)
{
    char *log = load("legacy_cmem.ptxas.log");
    KernelResources *k = NULL;
    int n = ptxas_parse_resources(log, &k);
    CHECK(n == 2);
    if (n == 2) {
        CHECK_STR(k[0].name, "_Z6kernelPfS_i");
        CHECK(k[0].registers == 40);
        CHECK(k[0].smem == 4096);
        CHECK(k[0].cmem == 372);
        CHECK(k[0].stack == 8);
        CHECK(k[0].spill_stores == 4 && k[0].spill_loads == 12);
        CHECK_STR(k[1].name, "simple");
        CHECK(k[1].registers == 8 && k[1].cmem == 352 && k[1].stack == 0);
    }
    free(k);
    free(log);
}

static void test_parse_degenerate(void)
{
    KernelResources *k = (KernelResources *)1;
    CHECK(ptxas_parse_resources(NULL, &k) == 0 && k == NULL);
    CHECK(ptxas_parse_resources("", &k) == 0 && k == NULL);
    CHECK(ptxas_parse_resources("k.cu(4): error: expected a \";\"\n", &k) == 0 && k == NULL);
    /* A "Used" line before any entry, and a truncated last line. */
    CHECK(ptxas_parse_resources("ptxas info    : Used 9 registers\n"
                                "ptxas info    : Compiling entry function 'x' for 'sm_90'\n"
                                "ptxas info    : Used 7 registers, 64 bytes smem", &k) == 1);
    CHECK(k && k[0].registers == 7 && k[0].smem == 64 && strcmp(k[0].name, "x") == 0);
    free(k);
}

/* ---- live compiles ---------------------------------------------------- */

static void test_version(void)
{
    int v = nvrtc_version();
    CHECK_MSG(v >= 11000 && v < 100000, "nvrtc_version() = %d", v);
}

static void test_compile_good(void)
{
    char *src = load("saxpy.cu");
    CompileRequest req = request(src, "saxpy.cu");
    CompileResult res;
    EvoErr err = {{0}};
    int before = nvrtc_compile_count();
    CHECK(nvrtc_compile(&req, &res, &err) == 0);
    CHECK(nvrtc_compile_count() == before + 1);
    CHECK(res.ok == 1);
    CHECK(res.cache_hit == 0);
    CHECK(res.error[0] == '\0');
    CHECK(res.cubin && res.cubin_len > 64);
    CHECK(res.cubin && memcmp(res.cubin, "\177ELF", 4) == 0);
    CHECK(res.compile_ms > 0);
    CHECK(strlen(res.key) == 64);
    CHECK_CONTAINS(res.log, "Used ");
    CHECK_CONTAINS(res.log, " registers");
    CHECK_CONTAINS(res.options, "--gpu-architecture=sm_90");
    CHECK_CONTAINS(res.options, "-std=c++17");
    CHECK_CONTAINS(res.options, "--ptxas-options=-v");
    CHECK_CONTAINS(res.options, "--include-path=" EVO_CUDA_INCLUDE);
    CHECK(strstr(res.options, "--use_fast_math") == NULL);
    CHECK(strstr(res.options, "-lineinfo") == NULL);
    CHECK(res.nkernels == 1);
    const KernelResources *k = nvrtc_find_kernel(&res, "saxpy");
    CHECK(k != NULL);
    CHECK(k && k->registers > 0 && k->spill_stores == 0 && k->smem == 0);
    CHECK(nvrtc_find_kernel(&res, "nope") == NULL);
    CHECK(nvrtc_find_kernel(&res, NULL) == NULL);
    nvrtc_result_free(&res);
    CHECK(res.cubin == NULL && res.log == NULL);
    free(src);
}

/* Arch-specific targets: "sm_90a" is a valid target keyed apart from
 * "sm_90", and NVRTC really compiles for it (the source sees
 * __CUDA_ARCH_FEAT_SM90_ALL there and not for sm_90); malformed names are
 * refused before NVRTC. */
static void test_arch_specific(void)
{
    const char *src = "#ifndef __CUDA_ARCH_FEAT_SM90_ALL\n#error not compiled for sm_90a\n#endif\n"
                      "extern \"C\" __global__ void k(float *x) { x[threadIdx.x] = 1.f; }\n";
    EvoErr err = {{0}};
    CompileRequest req = request(src, "feat.cu");
    CompileResult res;
    req.arch = "sm_90a";
    CHECK(nvrtc_compile(&req, &res, &err) == 0);
    CHECK(res.ok == 1);
    CHECK_CONTAINS(res.options, "--gpu-architecture=sm_90a");
    char key_a[65];
    memcpy(key_a, res.key, sizeof(key_a));
    nvrtc_result_free(&res);
    req.arch = "sm_90";
    CHECK(nvrtc_compile(&req, &res, &err) == 0);
    CHECK(res.ok == 0);
    CHECK_CONTAINS(res.log, "not compiled for sm_90a");
    CHECK(strcmp(res.key, key_a) != 0);
    nvrtc_result_free(&res);
    const char *bad[] = {"sm_90x", "sm_a", "sm_90aa", "sm_", "sm_9a0"};
    for (size_t i = 0; i < EVO_ARRAY_LEN(bad); i++) {
        char *o = NULL;
        char k[65];
        req.arch = bad[i];
        CHECK(nvrtc_request_key(&req, &o, k, &err) == -1);
        CHECK_CONTAINS(err.msg, bad[i]);
        CHECK(o == NULL);
    }
}

static void test_compile_syntax_error(void)
{
    char *src = load("syntax_error.cu");
    CompileRequest req = request(src, "syntax_error.cu");
    CompileResult res;
    EvoErr err = {{0}};
    CHECK(nvrtc_compile(&req, &res, &err) == 0);   /* NVRTC ran: not a failure of the call */
    CHECK(res.ok == 0);
    CHECK(res.cubin == NULL && res.cubin_len == 0);
    CHECK_CONTAINS(res.error, "nvrtcCompileProgram: NVRTC_ERROR_COMPILATION");
    CHECK_CONTAINS(res.log, "syntax_error.cu(4): error");
    CHECK(res.nkernels == 0);
    nvrtc_result_free(&res);
    free(src);
}

/* Static shared memory over 48 KB: ptxas refuses it without a line of its
 * own under NVRTC; evoeng names it in the log (compile/clog.h). */
static void test_compile_smem_over(void)
{
    char *src = load("smem_over.cu");
    CompileRequest req = request(src, "smem_over.cu");
    CompileResult res;
    CHECK(nvrtc_compile(&req, &res, NULL) == 0);
    CHECK(res.ok == 0);
    CHECK_CONTAINS(res.error, "NVRTC_ERROR_COMPILATION");
    CHECK_CONTAINS(res.log, "evoeng: ptxas: entry function 'smem_over' uses too much shared data (57344 bytes, "
                            "0xe000; 49152, 0xc000, max)");
    char *first = clog_errors(res.log, 1);
    CHECK(first && strncmp(first, "evoeng: ptxas: entry function 'smem_over'", 41) == 0);
    free(first);
    nvrtc_result_free(&res);
    /* the error lines of a compiler's log, without its closing count */
    char *lines = clog_errors("a.cu(3): error: x\nnote\nptxas fatal   : y\n2 errors detected in the compilation of "
                              "\"a.cu\".\n", 0);
    CHECK_STR(lines, "a.cu(3): error: x\nptxas fatal   : y");
    free(lines);
    CHECK(clog_errors("ptxas info    : Used 8 registers\n", 0) == NULL);
    free(src);
}

static void test_compile_smem(void)
{
    char *src = load("smem.cu");
    CompileRequest req = request(src, "smem.cu");
    CompileResult res;
    CHECK(nvrtc_compile(&req, &res, NULL) == 0 && res.ok);
    const KernelResources *k = nvrtc_find_kernel(&res, "reduce_smem");
    CHECK(k && k->smem == 1152);
    CHECK(k && k->registers > 0);
    nvrtc_result_free(&res);
    free(src);
}

static void test_compile_spill(void)
{
    char *src = load("spill.cu");
    CompileRequest req = request(src, "spill.cu");
    CompileResult res;
    CHECK(nvrtc_compile(&req, &res, NULL) == 0 && res.ok);
    const KernelResources *k = nvrtc_find_kernel(&res, "spill_kernel");
    CHECK(k != NULL);
    CHECK_MSG(k && k->spill_stores > 0 && k->spill_loads > 0 && k->stack > 0,
              "stores %d loads %d stack %d", k ? k->spill_stores : -1, k ? k->spill_loads : -1,
              k ? k->stack : -1);
    CHECK(k && k->registers > 0 && k->registers <= 32);   /* __launch_bounds__(1024, 2) */
    KernelResources mx;
    nvrtc_max_resources(&res, &mx);
    CHECK(k && mx.spill_stores == k->spill_stores && mx.registers == k->registers);
    CHECK(mx.cmem == -1);
    nvrtc_result_free(&res);
    free(src);
}

static void test_compile_multi(void)
{
    char *src = load("multi.cu");
    CompileRequest req = request(src, "multi.cu");
    CompileResult res;
    CHECK(nvrtc_compile(&req, &res, NULL) == 0 && res.ok);
    CHECK(res.nkernels == 4);
    CHECK(nvrtc_find_kernel(&res, "k_add") != NULL);
    CHECK(nvrtc_find_kernel(&res, "k_mul") != NULL);
    CHECK(nvrtc_find_kernel(&res, "_Z7scale_tILi4EEvPf") != NULL);
    const KernelResources *call = nvrtc_find_kernel(&res, "k_call");
    CHECK(call && call->stack > 0);                 /* the noinline callee's frame */
    CHECK(nvrtc_find_kernel(&res, "_Z6helperf") == NULL);
    KernelResources mx;
    nvrtc_max_resources(&res, &mx);
    int maxreg = 0;
    for (int i = 0; i < res.nkernels; i++)
        if (res.kernels[i].registers > maxreg)
            maxreg = res.kernels[i].registers;
    CHECK(mx.registers == maxreg && maxreg > 0);
    nvrtc_result_free(&res);
    free(src);
}

/* ---- options and keys ------------------------------------------------- */

static void test_options_and_keys(void)
{
    char *src = load("saxpy.cu");
    CompileRequest req = request(src, "saxpy.cu");
    char *o_plain, *o_fast, *o_line, *o_both, *o_std, *o_arch, *o_src;
    char k_plain[65], k_fast[65], k_line[65], k_both[65], k_std[65], k_arch[65], k_src[65], k_again[65];
    char *o_again;
    EvoErr err = {{0}};

    CHECK(nvrtc_request_key(&req, &o_plain, k_plain, &err) == 0);
    CHECK(nvrtc_request_key(&req, &o_again, k_again, &err) == 0);
    CHECK_STR(o_again, o_plain);
    CHECK_STR(k_again, k_plain);                    /* deterministic */
    req.fast_math = 1;
    CHECK(nvrtc_request_key(&req, &o_fast, k_fast, &err) == 0);
    req.fast_math = 0;
    req.lineinfo = 1;
    CHECK(nvrtc_request_key(&req, &o_line, k_line, &err) == 0);
    req.fast_math = 1;
    CHECK(nvrtc_request_key(&req, &o_both, k_both, &err) == 0);

    CHECK(strstr(o_plain, "--use_fast_math") == NULL && strstr(o_plain, "-lineinfo") == NULL);
    CHECK_CONTAINS(o_fast, "--use_fast_math");
    CHECK(strstr(o_fast, "-lineinfo") == NULL);
    CHECK_CONTAINS(o_line, "-lineinfo");
    CHECK(strstr(o_line, "--use_fast_math") == NULL);
    CHECK_CONTAINS(o_both, "--use_fast_math -lineinfo");
    const char *keys[] = {k_plain, k_fast, k_line, k_both};
    for (int i = 0; i < 4; i++)
        for (int j = i + 1; j < 4; j++)
            CHECK_MSG(strcmp(keys[i], keys[j]) != 0, "keys %d and %d equal", i, j);

    /* A caller's -std replaces the default; extra options are kept in order. */
    const char *extra[] = {"-std=c++20", "-DFOO=1"};
    CompileRequest r2 = request(src, "saxpy.cu");
    r2.options = extra;
    r2.noptions = 2;
    CHECK(nvrtc_request_key(&r2, &o_std, k_std, &err) == 0);
    CHECK(strstr(o_std, "-std=c++17") == NULL);
    CHECK_CONTAINS(o_std, "-std=c++20 -DFOO=1");
    CHECK(strcmp(k_std, k_plain) != 0);

    CompileRequest r3 = request(src, "saxpy.cu");
    r3.arch = "sm_80";
    CHECK(nvrtc_request_key(&r3, &o_arch, k_arch, &err) == 0);
    CHECK(strcmp(k_arch, k_plain) != 0);
    char *src2 = xasprintf("%s\n", src);
    CompileRequest r4 = request(src2, "saxpy.cu");
    CHECK(nvrtc_request_key(&r4, &o_src, k_src, &err) == 0);
    CHECK_STR(o_src, o_plain);
    CHECK(strcmp(k_src, k_plain) != 0);            /* one byte of source changes the key */

    /* Invalid requests are refused before NVRTC. */
    char *o_bad = NULL;
    char k_bad[65];
    CompileRequest r5 = request(src, "saxpy.cu");
    r5.arch = "compute_90";
    CHECK(nvrtc_request_key(&r5, &o_bad, k_bad, &err) == -1);
    CHECK_CONTAINS(err.msg, "compute_90");
    CHECK(o_bad == NULL);
    CompileResult res;
    int before = nvrtc_compile_count();
    CHECK(nvrtc_compile(&r5, &res, &err) == -1);
    CHECK(nvrtc_compile_count() == before);
    CHECK(res.ok == 0 && res.log != NULL);
    CHECK_CONTAINS(res.error, "arch");
    nvrtc_result_free(&res);

    /* A live compile with both flags uses exactly that option string and key. */
    CHECK(nvrtc_compile(&req, &res, &err) == 0 && res.ok);
    CHECK_STR(res.options, o_both);
    CHECK_STR(res.key, k_both);
    nvrtc_result_free(&res);

    free(o_plain); free(o_again); free(o_fast); free(o_line); free(o_both);
    free(o_std); free(o_arch); free(o_src); free(src2); free(src);
}

/* ---- cache ------------------------------------------------------------ */

static int count_files(const char *dir, const char *suffix)
{
    DIR *d = opendir(dir);
    int n = 0;
    struct dirent *e;
    while (d && (e = readdir(d)) != NULL) {
        size_t l = strlen(e->d_name), s = strlen(suffix);
        if (l >= s && strcmp(e->d_name + l - s, suffix) == 0)
            n++;
    }
    if (d)
        closedir(d);
    return n;
}

static void remove_tree(const char *dir)
{
    DIR *d = opendir(dir);
    struct dirent *e;
    while (d && (e = readdir(d)) != NULL) {
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
            continue;
        char *p = xasprintf("%s/%s", dir, e->d_name);
        unlink(p);
        free(p);
    }
    if (d)
        closedir(d);
    rmdir(dir);
}

static void test_cache(void)
{
    char tmpl[] = "/tmp/evo_nvrtc_cache_XXXXXX";
    char *base = mkdtemp(tmpl);
    CHECK(base != NULL);
    if (!base)
        return;
    char *dir = xasprintf("%s/sub/cache", base);   /* created on demand */
    nvrtc_set_cache_dir(dir);

    char *src = load("saxpy.cu");
    CompileRequest req = request(src, "saxpy.cu");
    CompileResult a, b, c;
    EvoErr err = {{0}};

    int n0 = nvrtc_compile_count();
    CHECK(nvrtc_compile(&req, &a, &err) == 0 && a.ok && !a.cache_hit);
    CHECK(nvrtc_compile_count() == n0 + 1);
    char *jpath = xasprintf("%s/%s.json", dir, a.key);
    char *cpath = xasprintf("%s/%s.cubin", dir, a.key);
    CHECK(access(jpath, R_OK) == 0 && access(cpath, R_OK) == 0);

    /* A hit: no NVRTC call, identical bytes, log and resources. */
    CHECK(nvrtc_compile(&req, &b, &err) == 0 && b.ok && b.cache_hit);
    CHECK(nvrtc_compile_count() == n0 + 1);
    CHECK(same_cubin(&a, &b));
    CHECK_STR(b.log, a.log);
    CHECK_STR(b.options, a.options);
    CHECK(b.compile_ms == 0);
    CHECK(b.nkernels == 1 && a.nkernels == 1 &&
          memcmp(&a.kernels[0], &b.kernels[0], sizeof(KernelResources)) == 0);
    nvrtc_result_free(&b);

    /* A corrupted cubin (right length, wrong bytes) is ignored and rewritten. */
    unsigned char *junk = xmalloc(a.cubin_len);
    memset(junk, 0xAB, a.cubin_len);
    CHECK(file_write(cpath, junk, a.cubin_len, &err) == 0);
    free(junk);
    CHECK(nvrtc_compile(&req, &b, &err) == 0 && b.ok && !b.cache_hit);
    CHECK(nvrtc_compile_count() == n0 + 2);
    CHECK(same_cubin(&a, &b));
    nvrtc_result_free(&b);
    CHECK(nvrtc_compile(&req, &b, &err) == 0 && b.ok && b.cache_hit);   /* repaired */
    CHECK(nvrtc_compile_count() == n0 + 2);
    nvrtc_result_free(&b);

    /* A truncated json is ignored too. */
    char *text = NULL;
    size_t len = 0;
    CHECK(file_read(jpath, &text, &len, &err) == 0);
    CHECK(text && file_write(jpath, text, len / 2, &err) == 0);
    free(text);
    CHECK(nvrtc_compile(&req, &b, &err) == 0 && b.ok && !b.cache_hit);
    CHECK(nvrtc_compile_count() == n0 + 3);
    CHECK(same_cubin(&a, &b));
    nvrtc_result_free(&b);

    /* A missing cubin with an intact json is a miss. */
    CHECK(unlink(cpath) == 0);
    CHECK(nvrtc_compile(&req, &b, &err) == 0 && b.ok && !b.cache_hit);
    CHECK(nvrtc_compile_count() == n0 + 4);
    nvrtc_result_free(&b);

    /* A different option string is a different entry. */
    req.lineinfo = 1;
    CHECK(nvrtc_compile(&req, &b, &err) == 0 && b.ok && !b.cache_hit);
    CHECK(strcmp(b.key, a.key) != 0);
    CHECK(nvrtc_compile_count() == n0 + 5);
    nvrtc_result_free(&b);
    req.lineinfo = 0;

    /* Compile errors are cached: the second check does zero compiles. */
    char *bad = load("syntax_error.cu");
    CompileRequest breq = request(bad, "syntax_error.cu");
    CHECK(nvrtc_compile(&breq, &b, &err) == 0 && !b.ok && !b.cache_hit);
    CHECK(nvrtc_compile_count() == n0 + 6);
    CHECK(nvrtc_compile(&breq, &c, &err) == 0 && !c.ok && c.cache_hit);
    CHECK(nvrtc_compile_count() == n0 + 6);
    CHECK_STR(c.error, b.error);
    CHECK_CONTAINS(c.error, "NVRTC_ERROR_COMPILATION");
    CHECK_STR(c.log, b.log);
    CHECK(c.cubin == NULL);
    nvrtc_result_free(&b);
    nvrtc_result_free(&c);

    /* Cache off again: compiles run. */
    nvrtc_set_cache_dir(NULL);
    CHECK(nvrtc_compile(&req, &b, &err) == 0 && b.ok && !b.cache_hit);
    CHECK(nvrtc_compile_count() == n0 + 7);
    nvrtc_result_free(&b);

    CHECK(count_files(dir, ".tmp") == 0);
    nvrtc_result_free(&a);
    remove_tree(dir);
    char *sub = xasprintf("%s/sub", base);
    rmdir(sub);
    rmdir(base);
    free(sub); free(bad); free(src); free(jpath); free(cpath); free(dir);
}

/* ---- parallel --------------------------------------------------------- */

#define NPAR 8

static void make_sources(char *srcs[NPAR], char *names[NPAR])
{
    for (int i = 0; i < NPAR; i++) {
        srcs[i] = xasprintf(
            "extern \"C\" __global__ void k%d(float *y, const float *x, int n)\n"
            "{\n"
            "    int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
            "    float acc = 0.0f;\n"
            "    for (int j = 0; j < %d; j++) acc += x[(i + j) %% n] * %d.0f;\n"
            "    if (i < n) y[i] = acc;\n"
            "}\n", i, i + 1, i + 2);
        names[i] = xasprintf("k%d.cu", i);
    }
}

static void test_parallel_matches_serial(void)
{
    char *srcs[NPAR], *names[NPAR];
    CompileRequest reqs[NPAR];
    CompileResult ser[NPAR], par[NPAR];
    EvoErr err = {{0}};
    make_sources(srcs, names);
    for (int i = 0; i < NPAR; i++)
        reqs[i] = request(srcs[i], names[i]);

    for (int i = 0; i < NPAR; i++)
        CHECK(nvrtc_compile(&reqs[i], &ser[i], &err) == 0 && ser[i].ok);
    int before = nvrtc_compile_count();
    CHECK(nvrtc_compile_many(reqs, par, NPAR, 4, &err) == 0);
    CHECK(nvrtc_compile_count() == before + NPAR);
    for (int i = 0; i < NPAR; i++) {
        char kname[16];
        snprintf(kname, sizeof(kname), "k%d", i);
        CHECK_MSG(par[i].ok && same_cubin(&ser[i], &par[i]), "request %d", i);
        CHECK(nvrtc_find_kernel(&par[i], kname) != NULL);   /* in order */
        CHECK_STR(par[i].key, ser[i].key);
        if (i > 0)
            CHECK(!same_cubin(&par[i - 1], &par[i]));
    }
    for (int i = 0; i < NPAR; i++) {
        nvrtc_result_free(&ser[i]);
        nvrtc_result_free(&par[i]);
    }

    /* One request that cannot run: -1 naming it, the others still compiled. */
    reqs[3].arch = "bogus";
    CHECK(nvrtc_compile_many(reqs, par, 4, 2, &err) == -1);
    CHECK_CONTAINS(err.msg, "request 3 (k3.cu)");
    CHECK(par[0].ok && par[1].ok && par[2].ok && !par[3].ok);
    for (int i = 0; i < 4; i++)
        nvrtc_result_free(&par[i]);
    CHECK(nvrtc_compile_many(reqs, par, 0, 4, &err) == 0);   /* nothing to do */

    for (int i = 0; i < NPAR; i++) {
        free(srcs[i]);
        free(names[i]);
    }
}

/* The same key compiled by several threads at once: every result is good,
 * the cache ends with one whole entry and no temp files, and then hits. */
static void test_parallel_same_key_cache(void)
{
    char tmpl[] = "/tmp/evo_nvrtc_race_XXXXXX";
    char *dir = mkdtemp(tmpl);
    CHECK(dir != NULL);
    if (!dir)
        return;
    nvrtc_set_cache_dir(dir);
    char *src = xasprintf("extern \"C\" __global__ void race(int *p) { p[threadIdx.x] += %d; }\n",
                          (int)getpid());
    CompileRequest reqs[6];
    CompileResult res[6];
    EvoErr err = {{0}};
    for (int i = 0; i < 6; i++)
        reqs[i] = request(src, "race.cu");
    CHECK(nvrtc_compile_many(reqs, res, 6, 4, &err) == 0);
    for (int i = 0; i < 6; i++) {
        CHECK(res[i].ok);
        CHECK(same_cubin(&res[0], &res[i]));
    }
    CHECK(count_files(dir, ".json") == 1);
    CHECK(count_files(dir, ".cubin") == 1);
    int tmpfiles = 0;
    DIR *d = opendir(dir);
    struct dirent *e;
    while (d && (e = readdir(d)) != NULL)
        if (strstr(e->d_name, ".tmp"))
            tmpfiles++;
    if (d)
        closedir(d);
    CHECK(tmpfiles == 0);

    CompileResult again;
    int before = nvrtc_compile_count();
    CHECK(nvrtc_compile(&reqs[0], &again, &err) == 0 && again.ok && again.cache_hit);
    CHECK(nvrtc_compile_count() == before);
    CHECK(same_cubin(&res[0], &again));
    nvrtc_result_free(&again);
    for (int i = 0; i < 6; i++)
        nvrtc_result_free(&res[i]);
    nvrtc_set_cache_dir(NULL);
    remove_tree(dir);
    free(src);
}

int main(void)
{
    RUN(test_parse_spill_log);
    RUN(test_parse_smem_log);
    RUN(test_parse_multi_log);
    RUN(test_parse_legacy_log);
    RUN(test_parse_degenerate);
    RUN(test_version);
    RUN(test_compile_good);
    RUN(test_arch_specific);
    RUN(test_compile_syntax_error);
    RUN(test_compile_smem);
    RUN(test_compile_smem_over);
    RUN(test_compile_spill);
    RUN(test_compile_multi);
    RUN(test_options_and_keys);
    RUN(test_cache);
    RUN(test_parallel_matches_serial);
    RUN(test_parallel_same_key_cache);
    return test_report();
}

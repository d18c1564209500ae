/*
 * test_canon: the canonical text of a source (src/compile/canon.h). Knobs
 * that only steer #if lines whose outcome they do not change leave it as
 * it is; every knob the surviving text reads, directly or through a macro,
 * changes it; conditions are evaluated as the preprocessor does (macros,
 * function-like ones, `defined`, the predefined names asked of the
 * caller, C's operators); line numbers do not move; and whatever is not
 * handled exactly gives no text at all.
 *
 * With --cpp (the canon_cpp test), the attention template against the C
 * preprocessor (cc -E, GCC's, standing in for NVRTC's): for random
 * configurations and one-knob changes of them, two configurations with
 * one canonical text must preprocess to the same text. Exits 77 when
 * there is no cc.
 *
 * With --nvrtc (canon_nvrtc), against NVRTC itself: what it predefines
 * (predef.h), compile keys (a twin shares its twin's key and is a cache
 * hit; EVOENG_CANON=0 keys on the source), and attention twins compiled
 * each on its own give the same cubin, byte for byte.
 */
#include <jansson.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "compile/canon.h"
#include "compile/cserver.h"
#include "compile/kfile.h"
#include "compile/nvrtc.h"
#include "compile/predef.h"
#include "config.h"
#include "task/template.h"
#include "testdata.h"
#include "testhelp.h"
#include "util.h"

/* The compiler's names as for sm_90a: __CUDA_ARCH__ 900, the feature
 * macro defined with no value, MYSTERY unknown, the rest undefined. */
static int lookup(void *ctx, const char *name, int *defined, int *has_value, long long *value)
{
    int *calls = ctx;
    (*calls)++;
    if (strcmp(name, "MYSTERY") == 0)
        return -1;
    *defined = strcmp(name, "__CUDA_ARCH__") == 0 || strcmp(name, "__CUDA_ARCH_FEAT_SM90_ALL") == 0;
    *has_value = strcmp(name, "__CUDA_ARCH__") == 0;
    *value = 900;
    return 0;
}

static char *canon(const char *src)
{
    int calls = 0;
    return canon_source(src, lookup, &calls);
}

/* src with "@K@", "@W@" replaced by k and w. */
static char *cfg(const char *tmpl, const char *k, const char *w)
{
    char *a = str_replace_all(tmpl, "@K@", k);
    char *b = str_replace_all(a, "@W@", w);
    free(a);
    return b;
}

/* 1 when the two configurations of tmpl have the same canonical text
 * (both have one), 0 when they differ, -1 when either has none. */
static int same(const char *tmpl, const char *k1, const char *w1, const char *k2, const char *w2)
{
    char *s1 = cfg(tmpl, k1, w1), *s2 = cfg(tmpl, k2, w2);
    char *c1 = canon(s1), *c2 = canon(s2);
    int r = (!c1 || !c2) ? -1 : strcmp(c1, c2) == 0;
    free(s1);
    free(s2);
    free(c1);
    free(c2);
    return r;
}

static int lines_of(const char *s)
{
    int n = 0;
    for (; *s; s++)
        n += *s == '\n';
    return n;
}

static void test_dead_and_live_knobs(void)
{
    const char *t = "#define K @K@\n#define W @W@\n#if K\nint a[W];\n#endif\n";
    CHECK(same(t, "1", "4", "2", "4") == 1);    /* K read only by a true #if */
    CHECK(same(t, "1", "4", "1", "8") == 0);    /* W read by the surviving text */
    CHECK(same(t, "1", "4", "0", "4") == 0);    /* the line goes */
    CHECK(same(t, "0", "4", "0", "8") == 1);    /* W read only by a dead line */

    /* through macros: E reads W and is read by the text; F reads K and
     * only steers an #if */
    const char *u = "#define K @K@\n#define W @W@\n#define E (W * 2)\n#define F (K + 1)\n"
                    "#if F > 1\nint e = E;\n#endif\n";
    CHECK(same(u, "1", "4", "5", "4") == 1);
    CHECK(same(u, "1", "4", "1", "5") == 0);
    CHECK(same(u, "1", "4", "0", "4") == 0);

    /* a string holding a macro's name does not read it */
    CHECK(same("#define W @W@ @K@\nconst char *s = \"W\";\n", "", "1", "", "2") == 1);
    /* #pragma reads its names */
    CHECK(same("#define W @W@ @K@\n#pragma unroll W\n", "", "1", "", "2") == 0);
}

static void test_conditions(void)
{
    /* function-like macros in a condition, as the WS template's estimates */
    const char *t = "#define K @K@ @W@\n#define EST(a, b) ((a) * 3 + (b))\n#define CAP 20\n"
                    "#if EST(K, 2) <= CAP\nint fits;\n#else\nint spills;\n#endif\n";
    CHECK(same(t, "4", "", "5", "") == 1);   /* 14 and 17: both fit */
    CHECK(same(t, "5", "", "7", "") == 0);   /* 17 and 23 */
    char *s = cfg(t, "7", ""), *c = canon(s);
    CHECK(c && strstr(c, "int spills;") && !strstr(c, "int fits;"));
    free(s);
    free(c);

    /* #elif chains and nested dead groups */
    const char *e = "#define K @K@ @W@\n#if K == 1\nint A;\n#elif K == 2\nint B;\n#if K\nint B2;\n#endif\n"
                    "#else\n#if 1\nint C;\n#endif\n#endif\n";
    const char *want[] = {"int A;", "int B;", "int C;"};
    for (int k = 1; k <= 3; k++) {
        char num[4];
        snprintf(num, sizeof(num), "%d", k);
        char *src = cfg(e, num, ""), *out = canon(src);
        CHECK(out != NULL);
        for (int j = 0; out && j < 3; j++)
            CHECK((strstr(out, want[j]) != NULL) == (j == k - 1));
        CHECK(!out || (strstr(out, "int B2;") != NULL) == (k == 2));
        free(src);
        free(out);
    }

    /* the operators and literals of #if */
    char *ok = canon("#if (1 + 2 * 3 == 7) && (8 >> 1 == 4) && (1 << 4 == 16) && (-1 < 0) && (5 % 3 == 2) \\\n"
                     " && ((1 ? 2 : 3) == 2) && !0 && (~0 == -1) && (0x10 == 16) && (010 == 8) \\\n"
                     " && (0b11 == 3) && (1'000 == 1000) && (2L == 2) && true && !false && (7 / 2 == 3) \\\n"
                     " && (0 || 3) == 1 && (1 | 2) == 3 && (3 & 6) == 2 && (3 ^ 5) == 6 && 2 >= 2 && 1 != 2\n"
                     "int all_true;\n#endif\n");
    CHECK(ok && strstr(ok, "int all_true;"));
    free(ok);

    /* the compiler's names: asked of the caller */
    const char *p = "#define WS @K@ @W@\n#if WS && defined(__CUDA_ARCH__) && defined(__CUDA_ARCH_FEAT_SM90_ALL) "
                    "&& __CUDA_ARCH__ >= 900\n#define ATT_WSP 1\n#else\n#define ATT_WSP 0\n#endif\n"
                    "#if ATT_WSP\nint ws;\n#endif\n#ifdef NOT_DEFINED_ANYWHERE\nint no;\n#endif\n";
    CHECK(same(p, "0", "", "1", "") == 0);
    char *src = cfg(p, "1", ""), *out = canon(src);
    CHECK(out && strstr(out, "int ws;") && !strstr(out, "int no;"));
    free(src);
    free(out);
    /* #undef of a predefined name is the source's to answer */
    char *u = canon("#undef __CUDA_ARCH__\n#ifdef __CUDA_ARCH__\nint arch;\n#endif\n");
    CHECK(u && !strstr(u, "int arch;") && strstr(u, "#undef __CUDA_ARCH__"));
    free(u);
}

static void test_lines_and_comments(void)
{
    const char *src = "/* a comment\n   #define K 3 */\n#define W \\\n  4\n// #if 0\nint a[W]; /* x */ int b;\n"
                      "#if 0 /* spans\n lines? no: a directive */\n#endif\n";
    char *c = canon(src);
    CHECK(c == NULL);   /* a block comment that joins the lines of a directive */
    free(c);

    src = "/* a comment\n   #define K 3 */ int k;\n#define W \\\n  4\n// #if 0\nint a[W]; /* x\n y */ int b;\n";
    c = canon(src);
    CHECK(c != NULL);
    if (c) {
        CHECK(lines_of(c) == lines_of(src) + 1);   /* the tag's line */
        CHECK(strstr(c, "int k;") != NULL);        /* after the comment: code, not the #define */
        CHECK(strstr(c, "K 3") == NULL);
        CHECK(strstr(c, "#define W") != NULL);     /* read by a[W] */
        CHECK(strstr(c, "int b;") != NULL);
    }
    free(c);
    /* a dead knob's #define is an empty line, so the lines do not move */
    char *a = canon("#define K 1\n#if K\nint x = __LINE__;\n#endif\n");
    char *b = canon("#define K 2\n#if K\nint x = __LINE__;\n#endif\n");
    CHECK(a && b && strcmp(a, b) == 0 && lines_of(a) == 5);
    free(a);
    free(b);
}

static void test_gives_up(void)
{
    const char *bad[] = {
        "#include <cuda_fp16.h>\nint a;\n",                 /* another file's text */
        "#if MYSTERY\nint a;\n#endif\n",                    /* the caller cannot tell */
        "#if 1u\nint a;\n#endif\n",                         /* unsigned arithmetic */
        "#if 1 / 0\nint a;\n#endif\n",
        "#if 'a'\nint a;\n#endif\n",
        "#if __CUDA_ARCH_FEAT_SM90_ALL > 0\nint a;\n#endif\n", /* defined, but no value */
        "#define S(x) #x\n#if S(1)\n#endif\n",              /* # in a macro a condition uses */
        "#define C(a, b) a ## b\n#if C(1, 2)\n#endif\n",
        "#define D defined(X)\n#if D\n#endif\n",            /* defined made by an expansion */
        "const char *s = R\"(/* not a comment )\";\n",      /* raw strings */
        "int a;\r\nint b;\r\n",
        "/* unterminated\nint a;\n",
        "#if 1\nint a;\n",                                  /* unbalanced */
        "#endif\n",
        "#else\n",
        "#if 1\n#else\n#else\n#endif\n",
        "#define V(...) __VA_ARGS__\n#if V(1)\n#endif\n",
        "#define F(a) a\n#if F(1, 2)\n#endif\n",            /* wrong argument count */
        "#if (1\n#endif\n",
        "#if\n#endif\n",
        "#if 9223372036854775807 + 1\n#endif\n",
        "const char *s = \"unterminated;\n",
        "#if 0\n#elifdef X\n#endif\n",                       /* C++23 */
        "#define F(a) a\n#if F(defined(X))\n#endif\n",       /* compilers differ */
        "# 33 \"file.cu\"\n",                                /* a GNU line marker */
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        char *c = canon(bad[i]);
        CHECK_MSG(c == NULL, "case %zu gave a text", i);
        free(c);
    }
    /* and the same text without the problem gives one */
    const char *good[] = {"int a;\n", "#if 1\nint a;\n#endif\n", "#define S(x) #x\nconst char *s = S(a);\n",
                          "#if 0\n#include <nothing.h>\n#endif\n", "int a; // no newline at the end"};
    for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
        char *c = canon(good[i]);
        CHECK_MSG(c != NULL, "case %zu gave none", i);
        free(c);
    }
}

/* Random sources from a preprocessor's alphabet: canon_source must
 * return (a text or NULL) without a sanitizer report, and a text must
 * keep the line count. Pathological ones are bounded: deep nesting, and a
 * macro whose expansion doubles 60 times. */
static void test_random_and_hostile(void)
{
    static const char *const bits[] = {
        "#if ", "#ifdef ", "#ifndef ", "#elif ", "#else", "#endif", "#define ", "#undef ", "#pragma x ", "#line 3 ",
        "#include <a.h>", "defined", "(", ")", ",", "?", ":", "&&", "||", "!", "~", "-", "+", "*", "/", "%", "<<",
        ">>", "<", ">=", "==", "!=", "0", "1", "7", "0x1f", "010", "1'0", "9223372036854775807", "A", "B", "F",
        "F(", "A(x) x ", "B(x, y) (x + y) ", "__CUDA_ARCH__", "__CUDA_ARCH_FEAT_SM90_ALL", "MYSTERY", "\n",
        "\\\n", "/*", "*/", "//", "\"s\"", "'c'", "R\"(", "#", "##", " ", "\t", "int x;", "\r"};
    Rng r;
    rng_seed(&r, 7);
    int texts = 0;
    for (int it = 0; it < 3000; it++) {
        StrBuf sb = {0};
        int n = 1 + (int)rng_below(&r, 40);
        for (int i = 0; i < n; i++)
            sb_append(&sb, bits[rng_below(&r, sizeof(bits) / sizeof(bits[0]))]);
        char *src = sb_take(&sb), *c = canon(src);
        if (c) {
            texts++;
            CHECK(lines_of(c) >= lines_of(src));
        }
        free(src);
        free(c);
    }
    CHECK(texts > 100);   /* some of them are sources canon reads */
    StrBuf sb = {0};
    sb_append(&sb, "#if ");
    for (int i = 0; i < 100000; i++)
        sb_putc(&sb, '(');
    sb_append(&sb, "1\n#endif\n");
    char *deep = sb_take(&sb), *c = canon(deep);
    CHECK(c == NULL);
    free(deep);
    free(c);
    sb_append(&sb, "#define A0 1 1\n");
    for (int i = 1; i < 60; i++)
        sb_printf(&sb, "#define A%d A%d A%d\n", i, i - 1, i - 1);
    sb_append(&sb, "#if A59\n#endif\n");
    char *blow = sb_take(&sb);
    double t0 = time_now_ms();
    c = canon(blow);
    CHECK(c == NULL);
    CHECK_MSG(time_now_ms() - t0 < 20000, "%.0f ms", time_now_ms() - t0);
    free(blow);
    free(c);
}

/* ---- against the C preprocessor ------------------------------------------ */

/* cc -E -P of src, as NVRTC sees it for sm_90a; NULL when cc fails (an
 * #error of the configuration). */
static char *cpp_text(const char *src, const char *dir)
{
    char *in = xasprintf("%s/in.cu", dir), *out = xasprintf("%s/out.i", dir), *text = NULL;
    char *cmd = xasprintf("cc -E -P -x c++ -undef -D__CUDA_ARCH__=900 -D__CUDA_ARCH_FEAT_SM90_ALL -D__CUDACC__ "
                          "'%s' -o '%s' 2>/dev/null", in, out);
    size_t len;
    if (file_write(in, src, strlen(src), NULL) == 0 && system(cmd) == 0 && file_read(out, &text, &len, NULL) < 0)
        text = NULL;
    free(in);
    free(out);
    free(cmd);
    return text;
}

/* As for sm_90a under cc -E: the feature macro is 1 there. */
static int lookup_cpp(void *ctx, const char *name, int *defined, int *has_value, long long *value)
{
    (void)ctx;
    *defined = *has_value = strcmp(name, "__CUDA_ARCH__") == 0 || strcmp(name, "__CUDA_ARCH_FEAT_SM90_ALL") == 0 ||
                            strcmp(name, "__CUDACC__") == 0;
    *value = strcmp(name, "__CUDA_ARCH__") == 0 ? 900 : 1;
    return 0;
}

typedef struct Knob {
    const char *name;
    int64_t     values[8];
    int         n;
} Knob;

static char *render(const char *tmpl, const Knob *k, int nk, const int *pick)
{
    const char *names[64];
    int64_t vals[64];
    for (int i = 0; i < nk; i++) {
        names[i] = k[i].name;
        vals[i] = k[i].values[pick[i]];
    }
    char *src = NULL;
    EvoErr err;
    if (template_render(tmpl, "attention.cu", names, vals, nk, &src, &err) < 0)
        fprintf(stderr, "template_render: %s\n", err.msg);
    return src;
}

/* The attention template (its parts inlined) and its knobs into k[0..*nk):
 * the compile dims first, then the task's parameters, each with its
 * values; the parameters' names live in *task (json_decref it). */
static char *attention(Knob *k, int *nk, json_t **task)
{
    char *tdir = test_source_path("templates/attention");
    char *jpath = xasprintf("%s/task.json", tdir), *cpath = xasprintf("%s/attention.cu", tdir);
    char *text = NULL, *tmpl = NULL;
    size_t len;
    EvoErr err;
    *task = json_load_file(jpath, 0, NULL);
    json_t *params = json_object_get(*task, "params");
    CHECK(*task && params && file_read(cpath, &text, &len, &err) == 0 &&
          template_expand(text, "attention.cu", tdir, &tmpl, &err) == 0);
    Knob dims[3] = {{"D", {64, 128}, 2}, {"CAUSAL", {0, 1}, 2}, {"DTYPE", {0, 1}, 2}};
    memcpy(k, dims, sizeof(dims));
    *nk = 3;
    const char *key;
    json_t *p;
    json_object_foreach(params, key, p) {
        json_t *vs = json_object_get(p, "values"), *v;
        size_t i;
        if (*nk == 64)
            break;
        k[*nk].name = key;
        k[*nk].n = 0;
        json_array_foreach(vs, i, v) if (i < 8) k[*nk].values[k[*nk].n++] = json_integer_value(v);
        (*nk)++;
    }
    free(text);
    free(tdir);
    free(jpath);
    free(cpath);
    return tmpl;
}

static void test_cpp_twins(void)
{
    Knob k[64];
    json_t *task = NULL;
    int nk = 0;
    char *tmpl = attention(k, &nk, &task);
    char dir[] = "/tmp/evo_canon_XXXXXX";
    CHECK(mkdtemp(dir) != NULL);
    Rng r;
    rng_seed(&r, 12345);
    int pairs = 0, same_canon = 0, same_cpp = 0, missed = 0, none = 0;
    for (int it = 0; it < 120 && tmpl; it++) {
        int a[64], b[64];
        for (int i = 0; i < nk; i++)
            a[i] = b[i] = (int)rng_below(&r, (uint64_t)k[i].n);
        int which = (int)rng_below(&r, (uint64_t)nk);
        b[which] = (a[which] + 1 + (int)rng_below(&r, (uint64_t)k[which].n - 1)) % k[which].n;
        char *sa = render(tmpl, k, nk, a), *sb = render(tmpl, k, nk, b);
        char *ca = canon_source(sa, lookup_cpp, NULL), *cb = canon_source(sb, lookup_cpp, NULL);
        char *pa = cpp_text(sa, dir), *pb = cpp_text(sb, dir);
        if (!ca || !cb)
            none++;
        if (pa && pb && ca && cb) {
            pairs++;
            int sc = strcmp(ca, cb) == 0, sp = strcmp(pa, pb) == 0;
            same_canon += sc;
            same_cpp += sp;
            missed += sp && !sc;
            CHECK_MSG(!sc || sp, "%s changed from %lld to %lld: one canonical text, two preprocessed ones",
                      k[which].name, (long long)k[which].values[a[which]], (long long)k[which].values[b[which]]);
        }
        free(sa);
        free(sb);
        free(ca);
        free(cb);
        free(pa);
        free(pb);
    }
    printf("%d pairs preprocessed: %d with one canonical text, %d with one preprocessed text (%d of those "
           "not caught); %d without a canonical text\n", pairs, same_canon, same_cpp, missed, none);
    CHECK(pairs >= 60);       /* most configurations preprocess (the rest hit an #error) */
    CHECK(none == 0);         /* the template is within what canon handles */
    CHECK(same_canon >= 5);   /* and the comparison saw twins */
    CHECK(test_rmtree(dir) == 0);
    json_decref(task);
    free(tmpl);
}

/* ---- against NVRTC ------------------------------------------------------ */

static void test_predef(void)
{
    const char *o90a[] = {"--gpu-architecture=sm_90a", "-std=c++17", "-default-device",
                          "--pre-include=" KFILE_PRELUDE};
    const char *o90[] = {"--gpu-architecture=sm_90", "-std=c++17", "-default-device", "--pre-include=" KFILE_PRELUDE};
    PredefOptions a = {o90a, 4}, b = {o90, 4};
    int d = -1, hv = -1;
    long long v = 0;
    CHECK(predef_lookup(&a, "__CUDA_ARCH__", &d, &hv, &v) == 0 && d == 1 && hv == 1 && v == 900);
    CHECK(predef_lookup(&a, "__CUDA_ARCH_FEAT_SM90_ALL", &d, &hv, &v) == 0 && d == 1);
    CHECK(predef_lookup(&b, "__CUDA_ARCH_FEAT_SM90_ALL", &d, &hv, &v) == 0 && d == 0 && hv == 0);
    CHECK(predef_lookup(&a, "EVOENG_NO_SUCH_NAME", &d, &hv, &v) == 0 && d == 0 && hv == 0);
    CHECK(predef_lookup(&a, "INFINITY", &d, &hv, &v) == 0 && d == 1 && hv == 0);   /* the prelude's, a float */
    CHECK(predef_lookup(&a, "__CUDA_ARCH__", &d, &hv, &v) == 0 && v == 900);       /* remembered */
}

static CompileRequest att_request(const char *src)
{
    static const char *const opts[] = {"-std=c++17", "--minimal"};   /* the attention task's */
    CompileRequest r = {0};
    r.source = src;
    r.name = "attention.cu";
    r.arch = "sm_90a";
    r.options = opts;
    r.noptions = 2;
    return r;
}

static int same_key(const char *s1, const char *s2)
{
    CompileRequest a = att_request(s1), b = att_request(s2);
    char ka[65], kb[65], *oa = NULL, *ob = NULL;
    EvoErr err;
    int r = nvrtc_request_key(&a, &oa, ka, &err) == 0 && nvrtc_request_key(&b, &ob, kb, &err) == 0 &&
            strcmp(ka, kb) == 0;
    free(oa);
    free(ob);
    return r;
}

typedef int (*CompileFn)(const CompileRequest *req, CompileResult *res, EvoErr *err);

/* s1, then its twin s2, through compile into a fresh cache: s1 compiles,
 * s2 is a cache hit with s1's cubin; both have key want (unless NULL). */
static void twin_cached(CompileFn compile, const char *s1, const char *s2, const char *want)
{
    char dir[] = "/tmp/evo_canon_cache_XXXXXX";
    CHECK(mkdtemp(dir) != NULL);
    nvrtc_set_cache_dir(dir);
    CompileRequest a = att_request(s1), b = att_request(s2);
    CompileResult ra, rb;
    EvoErr err;
    CHECK(compile(&a, &ra, &err) == 0 && ra.ok && !ra.cache_hit);
    CHECK(compile(&b, &rb, &err) == 0 && rb.ok && rb.cache_hit);   /* the twin: no compile */
    CHECK(!want || (strcmp(ra.key, want) == 0 && strcmp(rb.key, want) == 0));
    CHECK(ra.cubin_len == rb.cubin_len && memcmp(ra.cubin, rb.cubin, ra.cubin_len) == 0);
    nvrtc_result_free(&ra);
    nvrtc_result_free(&rb);
    nvrtc_set_cache_dir(NULL);
    CHECK(test_rmtree(dir) == 0);
}

static void test_keys_and_cache(void)
{
    const char *t = "#define K @K@ @W@\n#if K\nextern \"C\" __global__ void k(float *x) { x[0] = 1.f; }\n#endif\n";
    char *k1 = cfg(t, "1", ""), *k2 = cfg(t, "2", ""), *k0 = cfg(t, "0", "");
    CHECK(same_key(k1, k2));    /* K > 0 either way: the same text */
    CHECK(!same_key(k1, k0));
    setenv("EVOENG_CANON", "0", 1);
    CHECK(!same_key(k1, k2));   /* keyed on the source as it is */
    unsetenv("EVOENG_CANON");

    twin_cached(nvrtc_compile, k1, k2, NULL);
    free(k1);
    free(k2);
    free(k0);
}

/* Through a compile helper process (cserver.h): the helper's key comes
 * back with its reply and the parent takes the result by it; the keys
 * are those nvrtc_request_key computes, and a twin is a cache hit. (A
 * helper that fails is replaced by an in-process compile with the same
 * results, so this checks the results, not which process made them.) */
static void test_helper_keys(void)
{
    const char *exe = getenv("EVOENG");
    if (!exe || access(exe, X_OK) != 0) {
        printf("skip test_helper_keys: no evoeng binary in $EVOENG\n");
        return;
    }
    const char *t = "#define K @K@ @W@\n#if K\nextern \"C\" __global__ void k(float *x) { x[0] = 2.f; }\n#endif\n";
    char *k1 = cfg(t, "1", ""), *k2 = cfg(t, "3", "");
    CompileRequest a = att_request(k1);
    EvoErr err;
    char want[65], *opts = NULL;
    CHECK(nvrtc_request_key(&a, &opts, want, &err) == 0);
    cserver_enable(exe);
    twin_cached(cserver_compile, k1, k2, want);
    cserver_enable(NULL);
    free(opts);
    free(k1);
    free(k2);
}

/* The attention template at its defaults, then the settings in set
 * ("WS=1,CONSUMERS=2", may be NULL), then name = v. */
static char *att_config(const char *tmpl, const Knob *k, int nk, json_t *task, const char *set, const char *name,
                        int64_t v)
{
    int pick[64];
    json_t *params = json_object_get(task, "params");
    for (int i = 0; i < nk; i++) {
        json_t *p = json_object_get(params, k[i].name);
        int64_t want = p ? json_integer_value(json_object_get(p, "default")) : k[i].values[0];
        char *pat = xasprintf("%s=", k[i].name);
        for (const char *q = set; q && (q = strstr(q, pat)); q++)
            if (q == set || q[-1] == ',')
                want = strtoll(q + strlen(pat), NULL, 10);
        free(pat);
        if (strcmp(k[i].name, name) == 0)
            want = v;
        pick[i] = 0;
        for (int j = 0; j < k[i].n; j++)
            if (k[i].values[j] == want)
                pick[i] = j;
    }
    return render(tmpl, k, nk, pick);
}

/* Twins of the attention template (the mma.sync path at its defaults,
 * where the warp-specialised path's knobs are dead), each compiled on its
 * own with no cache: one key, one cubin. A live knob: two keys. */
static void test_attention_twins(void)
{
    Knob k[64];
    json_t *task = NULL;
    int nk = 0;
    char *tmpl = attention(k, &nk, &task);
    /* the seed shape's winner (2026-11-27e): the warp-specialised path */
    const char *ws = "BLOCK_M=128,STAGES=1,WS=1,CONSUMERS=2,REGSPLIT=0,STAGGER=1";
    struct { const char *set, *name; int64_t a, b; int twins; } pairs[] = {
        {NULL, "PINGPONG", 0, 1, 1}, {NULL, "LAZY", 0, 1, 1}, {NULL, "BLOCK_N", 128, 64, 0},
        {ws, "CAUSAL_SKIP", 1, 0, 1}, {ws, "Q_IN_REGS", 1, 0, 1}, {ws, "PVSPLIT", 0, 2, 0}};
    for (size_t i = 0; i < sizeof(pairs) / sizeof(pairs[0]); i++) {
        char *sa = att_config(tmpl, k, nk, task, pairs[i].set, pairs[i].name, pairs[i].a);
        char *sb = att_config(tmpl, k, nk, task, pairs[i].set, pairs[i].name, pairs[i].b);
        CHECK(sa && sb && strcmp(sa, sb) != 0);
        CHECK_MSG(same_key(sa, sb) == pairs[i].twins, "%s %lld and %lld", pairs[i].name, (long long)pairs[i].a,
                  (long long)pairs[i].b);
        if (pairs[i].twins) {   /* compiled apart: the same cubin */
            CompileRequest a = att_request(sa), b = att_request(sb);
            CompileResult ra, rb;
            EvoErr err;
            CHECK(nvrtc_compile(&a, &ra, &err) == 0 && ra.ok);
            CHECK(nvrtc_compile(&b, &rb, &err) == 0 && rb.ok && !rb.cache_hit);
            CHECK_MSG(ra.cubin_len == rb.cubin_len && memcmp(ra.cubin, rb.cubin, ra.cubin_len) == 0,
                      "%s twins compiled apart: %zu and %zu bytes", pairs[i].name, ra.cubin_len, rb.cubin_len);
            nvrtc_result_free(&ra);
            nvrtc_result_free(&rb);
        }
        free(sa);
        free(sb);
    }
    free(tmpl);
    json_decref(task);
}

int main(int argc, char **argv)
{
    if (argc > 1 && strcmp(argv[1], "--nvrtc") == 0) {
        RUN(test_predef);
        RUN(test_keys_and_cache);
        RUN(test_helper_keys);
        RUN(test_attention_twins);
        return test_report();
    }
    if (argc > 1 && strcmp(argv[1], "--cpp") == 0) {
        if (system("cc --version > /dev/null 2>&1") != 0) {
            printf("SKIP: no cc for the preprocessor comparison\n");
            return 77;
        }
        RUN(test_cpp_twins);
        return test_report();
    }
    RUN(test_dead_and_live_knobs);
    RUN(test_conditions);
    RUN(test_lines_and_comments);
    RUN(test_gives_up);
    RUN(test_random_and_hostile);
    return test_report();
}

/*
 * test_kscan: what `evoeng init` reads in a kernel file (compile/kscan.h)
 * and the C expressions it turns into the spec's language
 * (compile/cexpr.h): tests/data/kfile/fa_seed.cu (the seed-style file of
 * issue 34) and small files that try the lexer's corners (comments and
 * strings that look like code, extern __shared__, several declarators).
 */
#include "testhelp.h"
#include "testdata.h"

#include <stdlib.h>
#include <string.h>

#include "compile/cexpr.h"
#include "compile/kscan.h"
#include "task/expr.h"

/* Names: those listed resolve to themselves, "scale" to a float
 * expression, anything else is unknown. */
static char *names(void *ctx, const char *name)
{
    (void)ctx;
    static const char *const known[] = {"B", "H", "S", "D", "N", "BLOCK_M", "WARPS", NULL};
    if (strcmp(name, "scale") == 0)
        return xstrdup("1.0 / sqrt(D)");
    for (const char *const *k = known; *k; k++)
        if (strcmp(*k, name) == 0)
            return xstrdup(name);
    return NULL;
}

static void expect_tr(const char *c, const char *want)
{
    char *got = cexpr_translate(c, names, NULL);
    if (want) {
        CHECK_MSG(got && strcmp(got, want) == 0, "'%s' -> '%s', expected '%s'", c, got ? got : "(null)", want);
        Expr *e = NULL;
        EvoErr err;
        CHECK_MSG(got && expr_parse(got, &e, &err) == 0, "'%s' parses in the spec's language", got ? got : "");
        expr_free(&e);
    } else {
        CHECK_MSG(!got, "'%s' cannot be translated, got '%s'", c, got ? got : "");
    }
    free(got);
}

static void test_translate(void)
{
    expect_tr("1.0f / sqrtf((float)D)", "1.0 / sqrt(D)");
    expect_tr("(S + BLOCK_M - 1) / BLOCK_M", "(S + BLOCK_M - 1) / BLOCK_M");
    expect_tr("B * H", "B * H");
    expect_tr("(float)S / 2", "(1.0 * S) / 2");                  /* a float division stays one */
    expect_tr("(int64_t)B * S * D", "B * S * D");
    expect_tr("static_cast<int>(N) + 1", "(N) + 1");
    expect_tr("0x40u * 2", "64 * 2");
    expect_tr("1'024 * WARPS", "1024 * WARPS");
    expect_tr(".5f * N", "0.5 * N");
    expect_tr("sizeof(__half) * N", "2 * N");
    expect_tr("sizeof(float4) * BLOCK_M", "16 * BLOCK_M");
    expect_tr("std::min(N, 1024)", "min(N, 1024)");
    expect_tr("fmaxf(N, 1.f)", "max(N, 1.0)");
    expect_tr("-N + !WARPS", "-N + !WARPS");
    expect_tr("WARPS * 32 <= 1024 && BLOCK_M % 16 == 0", "WARPS * 32 <= 1024 && BLOCK_M % 16 == 0");
    expect_tr("true", "1");
    expect_tr("2 * scale", "2 * (1.0 / sqrt(D))");             /* a name's replacement in parentheses */
    /* what the spec's language lacks, or names it does not know */
    expect_tr("N > 4 ? 2 : 1", NULL);
    expect_tr("1 << WARPS", NULL);
    expect_tr("N & 7", NULL);
    expect_tr("v[0]", NULL);
    expect_tr("p->n", NULL);
    expect_tr("foo(N)", NULL);
    expect_tr("M * 2", NULL);
    expect_tr("sizeof(N)", NULL);
    expect_tr("", NULL);
    CHECK(cexpr_sizeof("__half") == 2 && cexpr_sizeof("__nv_bfloat16") == 2 && cexpr_sizeof("float") == 4 &&
          cexpr_sizeof("unsigned int") == 4 && cexpr_sizeof("float4") == 16 && cexpr_sizeof("MyType") == 0);
}

static void test_seed_file(void)
{
    char *src = test_data_load("kfile", "fa_seed.cu");
    Kscan k;
    kscan_file(src, &k);
    CHECK_MSG(k.nlaunchers == 1, "one launcher (got %d)", k.nlaunchers);
    if (k.nlaunchers == 1) {
        const KscanLauncher *l = &k.launchers[0];
        CHECK_STR(l->sig.name, "fa_forward");
        CHECK(l->sig.extern_c && l->sig.nparams == 9);
        CHECK(l->nlaunches == 1);
        const KscanLaunch *la = &l->launches[0];
        CHECK_STR(la->kernel, "fa_fwd");
        CHECK(la->ntargs == 2 && strcmp(la->targs[0], "512") == 0 && strcmp(la->targs[1], "64") == 0);
        CHECK_STR(la->config[0], "grid");
        CHECK_STR(la->config[1], "block");
        CHECK_STR(la->config[2], "0");
        CHECK_STR(la->config[3], "stream");
        CHECK(la->nargs == 5 && strcmp(la->args[4], "scale") == 0);
        CHECK_STR(la->guard, "S == 512 && D == 64");
        const KscanLocal *g = kscan_local(l->locals, l->nlocals, "grid");
        CHECK(g && strcmp(g->type, "dim3") == 0 && strcmp(g->init, "B * H, (S + BLOCK_M - 1) / BLOCK_M") == 0);
        const KscanLocal *b = kscan_local(l->locals, l->nlocals, "block");
        CHECK(b && strcmp(b->init, "WARPS * 32") == 0);
        const KscanLocal *sc = kscan_local(l->locals, l->nlocals, "scale");
        CHECK(sc && strcmp(sc->type, "const float") == 0 && strcmp(sc->init, "1.0f / sqrtf((float)D)") == 0);
    }
    const KscanKernel *kk = kscan_kernel(&k, "fa_fwd");
    CHECK(kk != NULL);
    if (kk) {
        CHECK_STR(kk->bounds[0], "WARPS * 32");
        CHECK_STR(kk->bounds[1], "MIN_BLOCKS");
        CHECK_MSG(kk->nshared == 7, "7 shared arrays (got %d)", kk->nshared);
        if (kk->nshared == 7) {
            CHECK(strcmp(kk->shared[0].type, "__half") == 0 && strcmp(kk->shared[0].name, "sQ") == 0 &&
                  kk->shared[0].ndims == 2 && strcmp(kk->shared[0].dims[1], "D + PAD") == 0 &&
                  kk->shared[0].align == 32);
            CHECK(kk->shared[1].ndims == 3 && strcmp(kk->shared[1].dims[0], "STAGES") == 0);
            CHECK(strcmp(kk->shared[3].type, "float") == 0);
            CHECK(strcmp(kk->shared[5].name, "sM") == 0 && strcmp(kk->shared[6].name, "sL") == 0 &&
                  kk->shared[6].align == 0);             /* float sM[BLOCK_M], sL[BLOCK_M]: two declarators */
        }
        CHECK(!kk->dyn_shared);
        CHECK_MSG(kk->nasserts == 5, "5 static_asserts (got %d)", kk->nasserts);
        if (kk->nasserts == 5) {
            CHECK_STR(kk->asserts[0].cond, "BLOCK_M % (16 * WARPS) == 0");
            CHECK_STR(kk->asserts[0].msg, "each warp takes whole 16-row WMMA tiles of the query block");
            CHECK_STR(kk->asserts[4].cond, "VEC >= 2 && VEC <= 8");
        }
        const KscanLocal *t = kscan_local(kk->locals, kk->nlocals, "TILES");
        CHECK(t && strcmp(t->init, "(S + BLOCK_N - 1) / BLOCK_N") == 0);
    }
    const KscanMacro *m = kscan_macro(&k, "BLOCK_N");
    CHECK(m && strcmp(m->value, "32") == 0);            /* the comment after it is not its value */
    CHECK(kscan_is_switch(src, "CP_ASYNC") && kscan_is_switch(src, "EXP2"));
    CHECK(!kscan_is_switch(src, "MIN_BLOCKS") && !kscan_is_switch(src, "WARPS") && !kscan_is_switch(src, "VEC"));
    kscan_free(&k);
    free(src);
}

/* Code in comments and strings is no code; extern __shared__ is dynamic;
 * a launch inside if (...) { } has its guard; a namespaced kernel. */
static void test_corners(void)
{
    const char *src =
        "#define THREADS 128 /* a comment */\n"
        "#ifndef USE_X\n#define USE_X 0\n#endif\n"
        "#define SQ(x) ((x) * (x))\n"
        "// k<<<1, 1>>>(p) in a comment\n"
        "namespace ns {\n"
        "__global__ void k(float *p, int n) {\n"
        "    extern __shared__ float dyn[];\n"
        "    __shared__ int a[THREADS], b[2][THREADS];\n"
        "    const char *s = \"static_assert(0, \\\"no\\\")\";\n"
        "    static_assert(THREADS % 32 == 0, \"whole \" \"warps\");\n"
        "    if (USE_X && n) p[0] = dyn[0];\n"
        "}\n"
        "}\n"
        "static_assert(sizeof(float) == 4);\n"
        "void launch(float *p, int n) {\n"
        "    const char *msg = \"<<<\";\n"
        "    if (n > 0) {\n"
        "        ns::k<<<(n + THREADS - 1) / THREADS, THREADS, 64 * sizeof(float)>>>(p, n);\n"
        "    }\n"
        "}\n";
    Kscan k;
    kscan_file(src, &k);
    CHECK(k.nlaunchers == 1 && k.launchers[0].nlaunches == 1);
    if (k.nlaunchers == 1 && k.launchers[0].nlaunches == 1) {
        const KscanLaunch *la = &k.launchers[0].launches[0];
        CHECK_STR(la->kernel, "ns::k");
        CHECK(la->ntargs == 0);
        CHECK_STR(la->config[0], "(n + THREADS - 1) / THREADS");
        CHECK_STR(la->config[2], "64 * sizeof(float)");
        CHECK(la->config[3] == NULL);
        CHECK_STR(la->guard, "n > 0");
    }
    const KscanKernel *kk = kscan_kernel(&k, "ns::k");
    CHECK(kk && kk->dyn_shared && kk->nshared == 2);
    if (kk && kk->nshared == 2) {
        CHECK(strcmp(kk->shared[0].type, "int") == 0 && kk->shared[0].ndims == 1);
        CHECK(strcmp(kk->shared[1].name, "b") == 0 && kk->shared[1].ndims == 2);
    }
    CHECK_MSG(kk && kk->nasserts == 2, "the kernel's static_assert and the file's (got %d)", kk ? kk->nasserts : -1);
    if (kk && kk->nasserts == 2) {
        CHECK_STR(kk->asserts[0].msg, "whole warps");   /* adjacent strings joined; the one in a string skipped */
        CHECK_STR(kk->asserts[1].cond, "sizeof(float) == 4");
        CHECK_STR(kk->asserts[1].msg, "");
    }
    CHECK(kscan_macro(&k, "SQ") == NULL);                /* function-like macros are not values */
    CHECK(kscan_macro(&k, "THREADS") && strcmp(kscan_macro(&k, "THREADS")->value, "128") == 0);
    CHECK(kscan_is_switch(src, "USE_X") && !kscan_is_switch(src, "THREADS"));
    kscan_free(&k);
}

int main(void)
{
    RUN(test_translate);
    RUN(test_seed_file);
    RUN(test_corners);
    return test_report();
}

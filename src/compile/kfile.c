/*
 * kfile: the prelude, the header stubs and the device view that let a
 * kernel file written for nvcc compile under NVRTC unchanged. See kfile.h.
 *
 * Layout: the headers (static text), the device-view pass over top-level
 * declarations, the kernel signatures (both on the lexer of clex.h), and
 * the log reader behind kfile_hint().
 */
#include "compile/kfile.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "compile/clex.h"
#include "util.h"

/* ---- headers ------------------------------------------------------------ */

#define STDINT_TEXT                                                                                              \
    "/* evoeng: <stdint.h> for NVRTC (LP64, as glibc's) */\n"                                                  \
    "#ifndef EVOENG_STDINT_H\n#define EVOENG_STDINT_H\n"                                                          \
    "typedef signed char int8_t;\ntypedef short int16_t;\ntypedef int int32_t;\ntypedef long int64_t;\n"         \
    "typedef unsigned char uint8_t;\ntypedef unsigned short uint16_t;\ntypedef unsigned int uint32_t;\n"         \
    "typedef unsigned long uint64_t;\ntypedef long intptr_t;\ntypedef unsigned long uintptr_t;\n"                \
    "typedef long intmax_t;\ntypedef unsigned long uintmax_t;\n"                                                 \
    "typedef signed char int_least8_t;\ntypedef short int_least16_t;\ntypedef int int_least32_t;\n"              \
    "typedef long int_least64_t;\ntypedef unsigned char uint_least8_t;\ntypedef unsigned short uint_least16_t;\n" \
    "typedef unsigned int uint_least32_t;\ntypedef unsigned long uint_least64_t;\n"                              \
    "typedef signed char int_fast8_t;\ntypedef long int_fast16_t;\ntypedef long int_fast32_t;\n"                 \
    "typedef long int_fast64_t;\ntypedef unsigned char uint_fast8_t;\ntypedef unsigned long uint_fast16_t;\n"   \
    "typedef unsigned long uint_fast32_t;\ntypedef unsigned long uint_fast64_t;\n"                               \
    "#define INT8_MIN (-128)\n#define INT16_MIN (-32767-1)\n#define INT32_MIN (-2147483647-1)\n"                 \
    "#define INT64_MIN (-9223372036854775807L-1)\n#define INT8_MAX 127\n#define INT16_MAX 32767\n"               \
    "#define INT32_MAX 2147483647\n#define INT64_MAX 9223372036854775807L\n#define UINT8_MAX 255\n"              \
    "#define UINT16_MAX 65535\n#define UINT32_MAX 4294967295U\n#define UINT64_MAX 18446744073709551615UL\n"      \
    "#define INTPTR_MAX INT64_MAX\n#define UINTPTR_MAX UINT64_MAX\n#define SIZE_MAX UINT64_MAX\n"                 \
    "#endif\n"

/* Each macro under its own #ifndef: a file that defines one itself (as the
 * shipped templates once did) keeps its own. */
static const char prelude_text[] =
    "/* evoeng prelude: what NVRTC lacks and kernels commonly use (src/compile/kfile.c) */\n"
    "#ifndef EVOENG_PRELUDE_H\n#define EVOENG_PRELUDE_H 1\n"
    "#include <stdint.h>\n"
    "#ifndef INFINITY\n#define INFINITY __builtin_bit_cast(float, 0x7f800000u)\n#endif\n"
    "#ifndef NAN\n#define NAN __builtin_bit_cast(float, 0x7fc00000u)\n#endif\n"
    "#ifndef HUGE_VALF\n#define HUGE_VALF __builtin_bit_cast(float, 0x7f800000u)\n#endif\n"
    "#ifndef HUGE_VAL\n#define HUGE_VAL __builtin_bit_cast(double, 0x7ff0000000000000ull)\n#endif\n"
    "#ifndef FLT_MAX\n#define FLT_MAX 3.40282346638528859812e+38F\n#endif\n"
    "#ifndef FLT_MIN\n#define FLT_MIN 1.17549435082228750797e-38F\n#endif\n"
    "#ifndef FLT_EPSILON\n#define FLT_EPSILON 1.1920928955078125e-07F\n#endif\n"
    "#ifndef DBL_MAX\n#define DBL_MAX 1.79769313486231570815e+308\n#endif\n"
    "#ifndef DBL_MIN\n#define DBL_MIN 2.22507385850720138309e-308\n#endif\n"
    "#ifndef DBL_EPSILON\n#define DBL_EPSILON 2.22044604925031308085e-16\n#endif\n"
    "#ifndef CHAR_BIT\n#define CHAR_BIT 8\n#endif\n"
    "#ifndef SCHAR_MAX\n#define SCHAR_MAX 127\n#endif\n"
    "#ifndef SCHAR_MIN\n#define SCHAR_MIN (-128)\n#endif\n"
    "#ifndef UCHAR_MAX\n#define UCHAR_MAX 255\n#endif\n"
    "#ifndef SHRT_MAX\n#define SHRT_MAX 32767\n#endif\n"
    "#ifndef SHRT_MIN\n#define SHRT_MIN (-32768)\n#endif\n"
    "#ifndef USHRT_MAX\n#define USHRT_MAX 65535\n#endif\n"
    "#ifndef INT_MAX\n#define INT_MAX 2147483647\n#endif\n"
    "#ifndef INT_MIN\n#define INT_MIN (-INT_MAX - 1)\n#endif\n"
    "#ifndef UINT_MAX\n#define UINT_MAX 4294967295U\n#endif\n"
    "#ifndef LONG_MAX\n#define LONG_MAX 9223372036854775807L\n#endif\n"
    "#ifndef LONG_MIN\n#define LONG_MIN (-LONG_MAX - 1L)\n#endif\n"
    "#ifndef ULONG_MAX\n#define ULONG_MAX 18446744073709551615UL\n#endif\n"
    "#ifndef LLONG_MAX\n#define LLONG_MAX 9223372036854775807LL\n#endif\n"
    "#ifndef LLONG_MIN\n#define LLONG_MIN (-LLONG_MAX - 1LL)\n#endif\n"
    "#ifndef ULLONG_MAX\n#define ULLONG_MAX 18446744073709551615ULL\n#endif\n"
    "#ifndef M_E\n#define M_E 2.7182818284590452354\n#endif\n"
    "#ifndef M_LOG2E\n#define M_LOG2E 1.4426950408889634074\n#endif\n"
    "#ifndef M_LOG10E\n#define M_LOG10E 0.43429448190325182765\n#endif\n"
    "#ifndef M_LN2\n#define M_LN2 0.69314718055994530942\n#endif\n"
    "#ifndef M_LN10\n#define M_LN10 2.30258509299404568402\n#endif\n"
    "#ifndef M_PI\n#define M_PI 3.14159265358979323846\n#endif\n"
    "#ifndef M_PI_2\n#define M_PI_2 1.57079632679489661923\n#endif\n"
    "#ifndef M_PI_4\n#define M_PI_4 0.78539816339744830962\n#endif\n"
    "#ifndef M_1_PI\n#define M_1_PI 0.31830988618379067154\n#endif\n"
    "#ifndef M_2_PI\n#define M_2_PI 0.63661977236758134308\n#endif\n"
    "#ifndef M_2_SQRTPI\n#define M_2_SQRTPI 1.12837916709551257390\n#endif\n"
    "#ifndef M_SQRT2\n#define M_SQRT2 1.41421356237309504880\n#endif\n"
    "#ifndef M_SQRT1_2\n#define M_SQRT1_2 0.70710678118654752440\n#endif\n"
    "#endif\n";

#define PROVIDED "/* evoeng: provided by the evoeng prelude under NVRTC */\n"
#define HOSTONLY "/* evoeng: a host-only header, empty under NVRTC (host functions are left out) */\n"

static const char *const header_names[] = {
    KFILE_PRELUDE,
    "stdint.h", "cstdint", "inttypes.h", "cinttypes",
    "math.h", "cmath", "float.h", "cfloat", "limits.h", "climits", "assert.h", "cassert",
    "stddef.h", "cstddef",
    "stdio.h", "cstdio", "stdlib.h", "cstdlib", "string.h", "cstring", "time.h", "ctime", "errno.h", "cerrno",
    "iostream", "sstream", "fstream", "iomanip", "vector", "string", "memory", "algorithm", "stdexcept",
    "utility", "functional", "chrono", "map", "unordered_map", "set", "numeric", "random", "tuple",
};

static const char *const header_texts[] = {
    prelude_text,
    STDINT_TEXT, STDINT_TEXT, STDINT_TEXT, STDINT_TEXT,
    PROVIDED, PROVIDED, PROVIDED, PROVIDED, PROVIDED, PROVIDED, PROVIDED, PROVIDED,
    PROVIDED, PROVIDED,
    HOSTONLY, HOSTONLY, HOSTONLY, HOSTONLY, HOSTONLY, HOSTONLY, HOSTONLY, HOSTONLY, HOSTONLY, HOSTONLY,
    HOSTONLY, HOSTONLY, HOSTONLY, HOSTONLY, HOSTONLY, HOSTONLY, HOSTONLY, HOSTONLY, HOSTONLY,
    HOSTONLY, HOSTONLY, HOSTONLY, HOSTONLY, HOSTONLY, HOSTONLY, HOSTONLY, HOSTONLY, HOSTONLY,
};

_Static_assert(sizeof(header_names) == sizeof(header_texts), "one text per header name");

int kfile_headers(const char *const **names, const char *const **texts)
{
    *names = header_names;
    *texts = header_texts;
    return (int)EVO_ARRAY_LEN(header_names);
}

/* ---- device view ------------------------------------------------------- */

/* The function's name: the identifier before the first '(' of the head. */
static int head_is_main(const char *head)
{
    const char *p = strchr(head, '(');
    if (!p)
        return 0;
    while (p > head && isspace((unsigned char)p[-1]))
        p--;
    const char *e = p;
    while (p > head && clex_is_ident((unsigned char)p[-1]))
        p--;
    return e - p == 4 && strncmp(p, "main", 4) == 0 && (p == head || p[-1] != ':');
}


/* extern_c: the function is inside an extern "C" { } block. */
static int is_host_function(const char *head, const char *body, int extern_c)
{
    if (clex_has_word(head, "__global__") || clex_has_word(head, "__device__") || clex_has_word(head, "constexpr"))
        return 0;
    if (clex_has_word(head, "__host__") || head_is_main(head))
        return 1;
    if (extern_c || clex_has_extern_c(head))
        return 1;
    static const char *const host_words[] = {"stderr", "stdout", "fprintf", "fputs", "fopen", "fclose", "exit",
                                             "abort", "getenv", "throw", "puts", NULL};
    if (strstr(body, "<<<") || strstr(body, "std::") || clex_calls_api(body, "cuda") || clex_calls_api(body, "cu"))
        return 1;
    for (const char *const *w = host_words; *w; w++)
        if (clex_has_word(body, *w))
            return 1;
    return 0;
}

static void blank(char *s, size_t a, size_t b)
{
    for (size_t i = a; i < b; i++)
        if (s[i] != '\n')
            s[i] = ' ';
}





typedef struct StripCtx {
    const char *src;
    char       *out;
    int         removed;
} StripCtx;

static void strip_visit(void *ctx, const char *head, size_t decl, size_t brace, size_t end, const char *ns,
                        int extern_c)
{
    StripCtx *c = ctx;
    char *body = clex_code_only(c->src, brace, end + 1);
    if (is_host_function(head, body, extern_c)) {
        blank(c->out, decl, end + 1);
        c->removed++;
    }
    free(body);
}

char *kfile_device_source(const char *src, int *nremoved)
{
    StripCtx c = {src, xstrdup(src), 0};
    clex_walk_functions(src, strip_visit, &c);
    if (nremoved)
        *nremoved = c.removed;
    return c.out;
}

/* ---- kernel signatures -------------------------------------------------- */

static void add_param(void *ctx, const char *a, const char *b)
{
    KfileKernel *k = ctx;
    char *all = clex_trim(a, b);
    if (!all[0] || strcmp(all, "void") == 0) {
        free(all);
        return;
    }
    const char *name_at = NULL;
    char *name = clex_last_ident(a, b, &name_at);
    k->params = xrealloc(k->params, (size_t)(k->nparams + 1) * sizeof(*k->params));
    KfileParam *pp = &k->params[k->nparams++];
    pp->name = name ? name : xasprintf("arg%d", k->nparams - 1);
    pp->type = name ? clex_trim(a, name_at) : xstrdup(all);
    free(all);
}

static void add_tparam(void *ctx, const char *a, const char *b)
{
    KfileKernel *k = ctx;
    const char *eq = a;
    while (eq < b && *eq != '=')
        eq++;
    const char *name_at = NULL;
    char *name = clex_last_ident(a, eq, &name_at);
    k->tnames = xrealloc(k->tnames, (size_t)(k->ntparams + 1) * sizeof(char *));
    k->tnames[k->ntparams] = name ? name : xasprintf("T%d", k->ntparams);
    k->ntparams++;
}

typedef struct KernCtx {
    const char  *src;
    KfileKernel *k;
    int          n;
} KernCtx;

int kfile_signature(const char *head, KfileKernel *k)
{
    memset(k, 0, sizeof(*k));
    const char *close = strrchr(head, ')');
    if (!close)
        return -1;
    int depth = 0;
    const char *open = close;
    for (; open >= head; open--) {
        if (*open == ')')
            depth++;
        else if (*open == '(' && --depth == 0)
            break;
    }
    if (open < head)
        return -1;
    const char *name_at = NULL;
    k->name = clex_last_ident(head, open, &name_at);
    if (!k->name)
        return -1;
    k->extern_c = clex_has_extern_c(head);
    const char *tp = clex_has_word(head, "template") ? strstr(head, "template") : NULL;
    if (tp && (tp = strchr(tp, '<')) != NULL && tp < open) {
        int d = 0;
        const char *e = tp;
        for (; *e; e++) {
            if (*e == '<')
                d++;
            else if (*e == '>' && --d == 0)
                break;
        }
        if (*e == '>') {
            k->is_template = 1;
            clex_split_commas(tp + 1, e, add_tparam, k);
        }
    }
    clex_split_commas(open + 1, close, add_param, k);
    return 0;
}

static void kern_visit(void *ctx, const char *head, size_t decl, size_t brace, size_t end, const char *ns,
                       int extern_c)
{
    KernCtx *c = ctx;
    KfileKernel sig;
    if (!clex_has_word(head, "__global__") || kfile_signature(head, &sig))
        return;
    c->k = xrealloc(c->k, (size_t)(c->n + 1) * sizeof(*c->k));
    KfileKernel *k = &c->k[c->n++];
    *k = sig;
    if (ns[0]) {
        k->name = xasprintf("%s::%s", ns, sig.name);
        free(sig.name);
    }
    k->extern_c |= extern_c;
    k->line = 1;
    const char *g = strstr(c->src + decl, "__global__");
    for (const char *p = c->src; g && p < g && p < c->src + brace; p++)
        k->line += *p == '\n';
}

int kfile_kernels(const char *src, KfileKernel **out)
{
    KernCtx c = {src, NULL, 0};
    clex_walk_functions(src, kern_visit, &c);
    *out = c.k;
    return c.n;
}

void kfile_signature_clear(KfileKernel *k)
{
    free(k->name);
    for (int j = 0; j < k->ntparams; j++)
        free(k->tnames[j]);
    free(k->tnames);
    for (int j = 0; j < k->nparams; j++) {
        free(k->params[j].type);
        free(k->params[j].name);
    }
    free(k->params);
    memset(k, 0, sizeof(*k));
}

void kfile_kernels_free(KfileKernel *k, int n)
{
    for (int i = 0; i < n; i++)
        kfile_signature_clear(&k[i]);
    free(k);
}

/* ---- hints ------------------------------------------------------------- */

/* Host names that an undefined-identifier error points at. */
static int host_identifier(const char *id)
{
    static const char *const words[] = {"std", "stderr", "stdout", "fprintf", "fputs", "fopen", "fclose", "exit",
                                        "abort", "getenv", "malloc", "free", "calloc", "realloc", "memcpy",
                                        "memset", "strlen", "puts", NULL};
    if ((strncmp(id, "cuda", 4) == 0 && isupper((unsigned char)id[4])) ||
        (strncmp(id, "cu", 2) == 0 && isupper((unsigned char)id[2])))
        return 1;
    for (const char *const *w = words; *w; w++)
        if (strcmp(id, *w) == 0)
            return 1;
    return 0;
}

char *kfile_hint(const char *log)
{
    if (!log)
        return NULL;
    /* The first error line: "<file>(<line>): error: ..." or "... catastrophic error: ..." */
    const char *e = strstr(log, "error");
    while (e && !((e == log || e[-1] == ' ') && e[5] == ':'))
        e = strstr(e + 5, "error");
    if (!e)
        return NULL;
    const char *b = e;
    while (b > log && b[-1] != '\n')
        b--;
    const char *eol = strchr(e, '\n');
    size_t len = eol ? (size_t)(eol - b) : strlen(b);
    char *line = xstrndup(b, len);
    char *msg = strstr(line, "error: ");
    msg = msg ? msg + 7 : line;
    char *where = NULL;
    const char *paren = strchr(line, '(');
    if (paren && paren > line && isdigit((unsigned char)paren[1])) {
        char *close = strchr(paren, ')');
        if (close)
            where = xasprintf("%.*s:%.*s", (int)(paren - line), line, (int)(close - paren - 1), paren + 1);
    }
    char *hint = NULL;
    const char *q1 = strchr(msg, '"');
    const char *q2 = q1 ? strchr(q1 + 1, '"') : NULL;
    char *id = q1 && q2 ? xstrndup(q1 + 1, (size_t)(q2 - q1 - 1)) : NULL;
    int host = 0;
    if (strncmp(line, "__nv_name_map", 13) == 0) {
        /* NVRTC's name expressions are compiled as "__nv_name_map" */
        hint = xasprintf("a task entry names no kernel of this source (%s): the entries must match the "
                         "kernels' names and template arguments", msg);
        free(id);
        free(where);
        free(line);
        return hint;
    }
    if (strstr(msg, "cannot open source file"))
        host = 1;
    else if (id && strstr(msg, "is undefined") && host_identifier(id))
        host = 1;
    else if (id && strstr(msg, "namespace \"std\""))
        host = 1;
    else if (strstr(msg, "kernel launch") || strstr(msg, "<<<"))
        host = 1;
    if (host)
        hint = xasprintf("%s: host-only code NVRTC cannot compile (%s): guard it with "
                         "#ifndef __CUDACC_RTC__ ... #endif",
                         where ? where : "the source", msg);
    free(id);
    free(where);
    free(line);
    return hint;
}

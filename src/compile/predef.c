/*
 * predef: NVRTC's predefined names, asked of NVRTC (predef.h).
 *
 * The probe for NAME instantiates one of two kernel templates,
 *
 *   template <int D> __global__ void evoeng_probe_d() {}
 *   template <long long V> __global__ void evoeng_probe_v() {}
 *
 * evoeng_probe_d<1> and evoeng_probe_v<(NAME)> when NAME is defined,
 * evoeng_probe_d<0> otherwise, and reads the answers back from the
 * mangled names in the cubin (_Z14evoeng_probe_dILi1EEvv,
 * _Z14evoeng_probe_vILx900EEvv). A NAME that is not an integer constant
 * (a float, empty, a string) fails the template argument's conversion:
 * the probe is then made again without it, and the name is defined with
 * no value.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "compile/kfile.h"
#include "compile/predef.h"
#include "util.h"

#include <../include/nvrtc.h>   /* the toolkit's (see nvrtc.c) */
#ifndef __NVRTC_H__
#error "the CUDA toolkit's nvrtc.h was not found (got another nvrtc.h)"
#endif

typedef struct Answer {
    char     *key;        /* the options, one a line, then the name */
    int       defined, has_value;
    long long value;
} Answer;

static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
static Answer         *g_answers;   /* guarded by g_lock */
static int             g_n, g_cap;

/* Compile src with the options; *cubin (fresh) on success. Returns 0,
 * 1 for a compile error, -1 for anything else. */
static int probe(const PredefOptions *o, const char *src, char **cubin, size_t *len)
{
    const char *const *hnames, *const *htexts;
    int nh = kfile_headers(&hnames, &htexts);
    nvrtcProgram prog = NULL;
    int rc = -1;
    if (nvrtcCreateProgram(&prog, src, "evoeng_probe.cu", nh, (const char **)htexts, (const char **)hnames) !=
        NVRTC_SUCCESS)
        return -1;
    nvrtcResult r = nvrtcCompileProgram(prog, o->n, (const char *const *)o->v);
    if (r == NVRTC_ERROR_COMPILATION) {
        rc = 1;
    } else if (r == NVRTC_SUCCESS && nvrtcGetCUBINSize(prog, len) == NVRTC_SUCCESS && *len > 0) {
        *cubin = xmalloc(*len);
        if (nvrtcGetCUBIN(prog, *cubin) == NVRTC_SUCCESS) {
            rc = 0;
        } else {
            free(*cubin);
            *cubin = NULL;
        }
    }
    nvrtcDestroyProgram(&prog);
    return rc;
}

/* The integer after tag in the cubin's names, up to 'E' ('n': minus).
 * Returns 0, or -1 when it is not there. */
static int mangled_value(const char *cubin, size_t len, const char *tag, long long *v)
{
    size_t tl = strlen(tag);
    for (size_t i = 0; i + tl < len; i++) {
        if (memcmp(cubin + i, tag, tl) != 0)
            continue;
        size_t j = i + tl;
        int neg = j < len && cubin[j] == 'n';
        j += (size_t)neg;
        long long x = 0;
        size_t d0 = j;
        while (j < len && cubin[j] >= '0' && cubin[j] <= '9' && j - d0 < 18)
            x = x * 10 + (cubin[j++] - '0');
        if (j == d0 || j >= len || cubin[j] != 'E')
            return -1;
        *v = neg ? -x : x;
        return 0;
    }
    return -1;
}

static int ask(const PredefOptions *o, const char *name, Answer *a)
{
    static const char head[] = "template <int D> __global__ void evoeng_probe_d() {}\n"
                               "template <long long V> __global__ void evoeng_probe_v() {}\n";
    char *with = xasprintf("%s#if defined(%s)\ntemplate __global__ void evoeng_probe_d<1>();\n"
                           "template __global__ void evoeng_probe_v<(%s)>();\n#else\n"
                           "template __global__ void evoeng_probe_d<0>();\n#endif\n", head, name, name);
    char *without = xasprintf("%s#if defined(%s)\ntemplate __global__ void evoeng_probe_d<1>();\n#else\n"
                              "template __global__ void evoeng_probe_d<0>();\n#endif\n", head, name);
    char *cubin = NULL;
    size_t len = 0;
    long long d = -1;
    int rc = probe(o, with, &cubin, &len);
    a->has_value = rc == 0;
    if (rc == 1)
        rc = probe(o, without, &cubin, &len);
    if (rc == 0 && mangled_value(cubin, len, "evoeng_probe_dILi", &d) == 0 && (d == 0 || d == 1)) {
        a->defined = (int)d;
        a->has_value &= a->defined;
        if (a->has_value && mangled_value(cubin, len, "evoeng_probe_vILx", &a->value) < 0)
            rc = -1;
    } else {
        rc = -1;
    }
    free(cubin);
    free(with);
    free(without);
    return rc == 0 ? 0 : -1;
}

int predef_lookup(void *ctx, const char *name, int *defined, int *has_value, long long *value)
{
    const PredefOptions *o = ctx;
    StrBuf sb = {0};
    for (int i = 0; i < o->n; i++) {
        sb_append(&sb, o->v[i]);
        sb_putc(&sb, '\n');
    }
    sb_append(&sb, name);
    char *key = sb_take(&sb);
    int found = -1;
    pthread_mutex_lock(&g_lock);
    for (int i = 0; i < g_n && found < 0; i++)
        if (strcmp(g_answers[i].key, key) == 0) {
            *defined = g_answers[i].defined;
            *has_value = g_answers[i].has_value;
            *value = g_answers[i].value;
            found = 0;
        }
    pthread_mutex_unlock(&g_lock);
    if (found == 0) {
        free(key);
        return 0;
    }
    Answer a = {0};
    if (ask(o, name, &a) < 0) {
        free(key);
        return -1;
    }
    *defined = a.defined;
    *has_value = a.has_value;
    *value = a.value;
    pthread_mutex_lock(&g_lock);
    if (g_n == g_cap) {
        g_cap = g_cap ? 2 * g_cap : 16;
        g_answers = xrealloc(g_answers, (size_t)g_cap * sizeof(Answer));
    }
    a.key = key;
    g_answers[g_n++] = a;
    pthread_mutex_unlock(&g_lock);
    return 0;
}

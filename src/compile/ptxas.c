/*
 * ptxas: the resource report of ptxas -v, parsed. See ptxas.h.
 *
 * NVRTC 13.0 / sm_90 writes, per entry function:
 *
 *   ptxas info    : Compiling entry function 'k' for 'sm_90'
 *   ptxas info    : Function properties for k
 *   ptxas         .     1312 bytes stack frame, 2152 bytes spill stores, 2196 bytes spill loads
 *   ptxas info    : Used 32 registers, used 0 barriers, 1312 bytes cumulative stack size
 *
 * with ", N bytes smem" on the "Used" line when there is static shared
 * memory. Older toolkits print "Used N registers, N bytes smem, N bytes
 * cmem[0]" and an unprefixed stack-frame line. Non-entry functions get a
 * "Function properties" block but no "Compiling entry" or "Used" line.
 */
#include "compile/ptxas.h"

#include <ctype.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "util.h"

/* The integer just before the first occurrence of tail in line. */
static int num_before(const char *line, const char *tail, int *out)
{
    const char *p = strstr(line, tail);
    if (!p)
        return 0;
    const char *b = p;
    while (b > line && isdigit((unsigned char)b[-1]))
        b--;
    if (b == p)
        return 0;
    long v = strtol(b, NULL, 10);
    *out = v > INT_MAX ? INT_MAX : (int)v;
    return 1;
}

static void copy_name(char dst[128], const char *s, size_t n)
{
    if (n > 127)
        n = 127;
    memcpy(dst, s, n);
    dst[n] = '\0';
}

int ptxas_find_kernel(const KernelResources *k, int n, const char *name)
{
    for (int i = n - 1; i >= 0; i--)
        if (strcmp(k[i].name, name) == 0)
            return i;
    return -1;
}

static void parse_line(const char *line, KernelResources **ks, int *nk, int *cur, int *props)
{
    const char *p;
    if ((p = strstr(line, "Compiling entry function '")) != NULL) {
        p += strlen("Compiling entry function '");
        const char *q = strchr(p, '\'');
        size_t n = q ? (size_t)(q - p) : strlen(p);
        *ks = xrealloc(*ks, sizeof(KernelResources) * (size_t)(*nk + 1));
        KernelResources *k = &(*ks)[*nk];
        memset(k, 0, sizeof(*k));
        k->cmem = -1;
        copy_name(k->name, p, n);
        *cur = *props = (*nk)++;
        return;
    }
    if ((p = strstr(line, "Function properties for ")) != NULL) {
        p += strlen("Function properties for ");
        size_t n = strlen(p);
        while (n > 0 && isspace((unsigned char)p[n - 1]))
            n--;
        char name[128];
        copy_name(name, p, n);
        *props = ptxas_find_kernel(*ks, *nk, name);
        return;
    }
    if (strstr(line, "bytes stack frame")) {
        if (*props < 0)
            return;
        KernelResources *k = &(*ks)[*props];
        int v;
        if (num_before(line, " bytes stack frame", &v) && v > k->stack)
            k->stack = v;
        if (num_before(line, " bytes spill stores", &v))
            k->spill_stores = v;
        if (num_before(line, " bytes spill loads", &v))
            k->spill_loads = v;
        return;
    }
    if (strstr(line, "Used ") && strstr(line, " registers")) {
        if (*cur < 0)
            return;
        KernelResources *k = &(*ks)[*cur];
        int v;
        if (num_before(line, " registers", &v))
            k->registers = v;
        if (num_before(line, " bytes smem", &v))
            k->smem = v;
        if (num_before(line, " bytes cmem[0]", &v))
            k->cmem = v;
        if (num_before(line, " bytes cumulative stack size", &v) && v > k->stack)
            k->stack = v;
    }
}

int ptxas_parse_resources(const char *log, KernelResources **out)
{
    KernelResources *ks = NULL;
    int nk = 0, cur = -1, props = -1;
    *out = NULL;
    if (!log)
        return 0;
    const char *s = log;
    while (*s) {
        const char *e = strchr(s, '\n');
        size_t n = e ? (size_t)(e - s) : strlen(s);
        char *line = xstrndup(s, n);
        parse_line(line, &ks, &nk, &cur, &props);
        free(line);
        s += n;
        if (*s == '\n')
            s++;
    }
    *out = ks;
    return nk;
}

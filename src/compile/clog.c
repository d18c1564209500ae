/*
 * clog: error lines of a compile log, and ptxas's silent refusals. See
 * clog.h.
 */
#include "compile/clog.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util.h"

/* 1 when line[0..n) is an error line. */
static int is_error_line(const char *line, size_t n)
{
    char *l = xstrndup(line, n);
    int yes = 0;
    if (strncmp(l, "evoeng: ", 8) == 0 || strstr(l, "ptxas fatal") || strstr(l, "ptxas error") ||
        strstr(l, "nvlink error") || strstr(l, "nvlink fatal"))
        yes = 1;
    for (const char *p = strstr(l, "error"); p && !yes; p = strstr(p + 5, "error"))
        yes = (p == l || p[-1] == ' ') && (p[5] == ':' || p[5] == ' ') && !strstr(l, "detected in the compilation");
    free(l);
    return yes;
}

char *clog_errors(const char *log, int max)
{
    if (!log)
        return NULL;
    StrBuf sb = {0};
    int n = 0;
    for (const char *line = log; *line && (max <= 0 || n < max);) {
        const char *eol = strchr(line, '\n');
        size_t len = eol ? (size_t)(eol - line) : strlen(line);
        if (len > 0 && is_error_line(line, len)) {
            sb_printf(&sb, "%s%.*s", n ? "\n" : "", (int)len, line);
            n++;
        }
        line = eol ? eol + 1 : line + len;
    }
    return n ? sb_take(&sb) : (sb_free(&sb), NULL);
}

char *clog_silent_cause(const KernelResources *k, int n)
{
    for (int i = 0; i < n; i++)
        if (k[i].smem > CLOG_STATIC_SMEM_MAX)
            return xasprintf("ptxas: entry function '%s' uses too much shared data (%d bytes, 0x%x; %d, 0x%x, max): "
                             "static __shared__ arrays are limited to 48 KB a block (extern __shared__ memory can "
                             "opt in to more)",
                             k[i].name, k[i].smem, (unsigned)k[i].smem, CLOG_STATIC_SMEM_MAX,
                             (unsigned)CLOG_STATIC_SMEM_MAX);
    return xasprintf("NVRTC failed without an error line (ptxas reported %d kernel%s)", n, n == 1 ? "" : "s");
}

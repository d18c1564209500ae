/*
 * msg: the one place that writes diagnostics. See msg.h.
 */
#include "msg.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

int msg_verbosity = 1;

static pthread_mutex_t kept_lock = PTHREAD_MUTEX_INITIALIZER;
static int             keeping;
static char          **kept;
static int             nkept;

void msg_keep_errors(void)
{
    keeping = 1;
}

const char *const *msg_errors(int *n)
{
    *n = nkept;
    return (const char *const *)kept;
}

static void vmsg(const char *kind, const char *fmt, va_list ap)
{
    fflush(stdout);
    fputs("evoeng: ", stderr);
    if (kind)
        fputs(kind, stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    fflush(stderr);
}

void errorf(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vmsg(NULL, fmt, ap);
    va_end(ap);
    if (!keeping)
        return;
    StrBuf sb = {0};
    va_start(ap, fmt);
    sb_vprintf(&sb, fmt, ap);
    va_end(ap);
    pthread_mutex_lock(&kept_lock);
    kept = xrealloc(kept, (size_t)(nkept + 1) * sizeof(*kept));
    kept[nkept++] = sb.s ? sb_take(&sb) : xstrdup("");
    pthread_mutex_unlock(&kept_lock);
}

void warnf(const char *fmt, ...)
{
    if (msg_verbosity < 1)
        return;
    va_list ap;
    va_start(ap, fmt);
    vmsg("warning: ", fmt, ap);
    va_end(ap);
}

void notef(const char *fmt, ...)
{
    if (msg_verbosity < 2)
        return;
    va_list ap;
    va_start(ap, fmt);
    vmsg("note: ", fmt, ap);
    va_end(ap);
}

void progressf(const char *fmt, ...)
{
    if (msg_verbosity < 1)
        return;
    va_list ap;
    va_start(ap, fmt);
    vmsg(NULL, fmt, ap);
    va_end(ap);
}

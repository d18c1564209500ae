/*
 * msg: the one place that writes diagnostics. See msg.h.
 */
#include "msg.h"

#include <stdio.h>

int msg_verbosity = 1;

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

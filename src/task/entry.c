/*
 * entry: the names a task may give its kernels' entry points. Besides a
 * plain identifier (an extern "C" kernel, or a C++ one whose name NVRTC
 * mangles), an entry may be a namespaced kernel (ns::k) or a template
 * instantiation (k<128, 64>, ns::k<float, 4>, k<-1, vec<2>>): an NVRTC name
 * expression, whose lowered name the compile records (nvrtc.h). Names are
 * checked against a small grammar and written in one canonical spelling,
 * so that "k<128,64>" in `entries` and "k<128, 64>" in `launch` agree.
 *
 *   entry    := ['::'] ident ('::' ident)* [targs]
 *   targs    := '<' [targ (',' targ)*] '>'
 *   targ     := ['-'] number | type
 *   type     := ['::'] ident+ ('::' ident+)* [targs] ('*' | '&' | 'const')*
 *
 * Canonical spelling: no blanks, except one between two words
 * ("unsigned int") and one after each comma.
 */
#include "task/entry.h"

#include <ctype.h>
#include <stdio.h>
#include <string.h>

#include "util.h"

typedef struct EParse {
    const char *s;
    size_t      i;
    StrBuf      out;
    const char *why;
    int         depth;
} EParse;

static void blanks(EParse *p)
{
    while (p->s[p->i] == ' ' || p->s[p->i] == '\t')
        p->i++;
}

static int ident_start(int c)
{
    return isalpha(c) || c == '_';
}

/* A word (identifier) at p->i into the output, with a blank before it when
 * the output ends with a word. Returns 0 or -1. */
static int word(EParse *p)
{
    blanks(p);
    if (!ident_start((unsigned char)p->s[p->i])) {
        p->why = "expected an identifier";
        return -1;
    }
    if (p->out.len && (isalnum((unsigned char)p->out.s[p->out.len - 1]) || p->out.s[p->out.len - 1] == '_'))
        sb_putc(&p->out, ' ');
    while (isalnum((unsigned char)p->s[p->i]) || p->s[p->i] == '_')
        sb_putc(&p->out, p->s[p->i++]);
    return 0;
}

/* ['::'] word ('::' word)*, with more words allowed per part when `multi`
 * (type names such as "unsigned int"). */
static int qualified(EParse *p, int multi)
{
    blanks(p);
    if (p->s[p->i] == ':' && p->s[p->i + 1] == ':') {
        sb_append(&p->out, "::");
        p->i += 2;
    }
    for (;;) {
        if (word(p) < 0)
            return -1;
        blanks(p);
        while (multi && ident_start((unsigned char)p->s[p->i])) {
            if (word(p) < 0)
                return -1;
            blanks(p);
        }
        if (p->s[p->i] == ':' && p->s[p->i + 1] == ':') {
            sb_append(&p->out, "::");
            p->i += 2;
            continue;
        }
        return 0;
    }
}

static int targs(EParse *p);

static int targ(EParse *p)
{
    blanks(p);
    char c = p->s[p->i];
    if (c == '-' || isdigit((unsigned char)c)) {
        if (c == '-') {
            sb_putc(&p->out, '-');
            p->i++;
            blanks(p);
        }
        if (!isdigit((unsigned char)p->s[p->i])) {
            p->why = "expected a number after '-'";
            return -1;
        }
        while (isalnum((unsigned char)p->s[p->i]))   /* 128, 0x80, 4u, 8ll */
            sb_putc(&p->out, p->s[p->i++]);
        return 0;
    }
    if (qualified(p, 1) < 0)
        return -1;
    blanks(p);
    if (p->s[p->i] == '<' && targs(p) < 0)
        return -1;
    for (;;) {
        blanks(p);
        if (p->s[p->i] == '*' || p->s[p->i] == '&') {
            sb_putc(&p->out, p->s[p->i++]);
        } else if (strncmp(p->s + p->i, "const", 5) == 0 && !isalnum((unsigned char)p->s[p->i + 5]) &&
                   p->s[p->i + 5] != '_') {
            sb_append(&p->out, " const");
            p->i += 5;
        } else {
            return 0;
        }
    }
}

static int targs(EParse *p)
{
    if (++p->depth > 16) {
        p->why = "template arguments nested too deeply";
        return -1;
    }
    sb_putc(&p->out, '<');
    p->i++;
    blanks(p);
    if (p->s[p->i] != '>') {
        for (;;) {
            blanks(p);
            if (!p->s[p->i]) {
                p->why = "unclosed '<'";
                return -1;
            }
            if (targ(p) < 0)
                return -1;
            blanks(p);
            if (p->s[p->i] != ',')
                break;
            sb_append(&p->out, ", ");
            p->i++;
        }
    }
    if (p->s[p->i] != '>') {
        p->why = p->s[p->i] ? "expected ',' or '>' in the template arguments" : "unclosed '<'";
        return -1;
    }
    sb_putc(&p->out, '>');
    p->i++;
    p->depth--;
    return 0;
}

char *task_entry_canon(const char *s, char *why, size_t why_size)
{
    EParse p = {.s = s ? s : ""};
    int rc = qualified(&p, 0);
    blanks(&p);
    if (rc == 0 && p.s[p.i] == '<')
        rc = targs(&p);
    blanks(&p);
    if (rc == 0 && p.s[p.i]) {
        p.why = "unexpected characters after the name";
        rc = -1;
    }
    if (rc == 0)
        return sb_take(&p.out);
    sb_free(&p.out);
    if (why)
        snprintf(why, why_size,
                 "'%s' is not a kernel name (column %zu: %s): expected an identifier, a namespaced kernel "
                 "(ns::k) or a template instantiation (k<128, 64>)",
                 p.s, p.i + 1, p.why);
    return NULL;
}

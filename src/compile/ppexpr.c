/*
 * ppexpr: the preprocessor's tokens and the arithmetic of #if (ppexpr.h).
 * The evaluator is precedence climbing over the tokens, ?: right
 * associative; both sides of && || and ?: are computed (they have no side
 * effects), so a division by zero on a side not taken is refused too.
 */
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "compile/ppexpr.h"
#include "util.h"

void pptoks_push(PpToks *t, int type, const char *s, size_t n)
{
    if (t->n == t->cap) {
        t->cap = t->cap ? 2 * t->cap : 16;
        t->v = xrealloc(t->v, (size_t)t->cap * sizeof(PpTok));
    }
    t->v[t->n].type = type;
    t->v[t->n].s = xstrndup(s, n);
    t->n++;
}

void pptoks_free(PpToks *t)
{
    for (int i = 0; i < t->n; i++)
        free(t->v[i].s);
    free(t->v);
    memset(t, 0, sizeof(*t));
}

/* ---- tokens -------------------------------------------------------------- */

int pp_is_id(int c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '$';
}

int pp_is_digit(int c)
{
    return c >= '0' && c <= '9';
}

/* A string or character literal starting at s[i] (the quote): the index
 * after it, or 0 when it does not end on this line. */
size_t pp_skip_quoted(const char *s, size_t i)
{
    char q = s[i++];
    for (; s[i] && s[i] != '\n'; i++) {
        if (s[i] == '\\' && s[i + 1] && s[i + 1] != '\n')
            i++;
        else if (s[i] == q)
            return i + 1;
    }
    return 0;
}

/* The end of the pp-number starting at s[i]. */
static size_t skip_number(const char *s, size_t i)
{
    for (;;) {
        char c = s[i];
        if ((c == 'e' || c == 'E' || c == 'p' || c == 'P') && (s[i + 1] == '+' || s[i + 1] == '-'))
            i += 2;
        else if (pp_is_id(c) || c == '.' || (c == '\'' && pp_is_id(s[i + 1])))
            i++;
        else
            return i;
    }
}

int pp_raw_prefix(const char *s, size_t n)
{
    static const char *const pre[] = {"R", "LR", "uR", "UR", "u8R"};
    for (size_t i = 0; i < sizeof(pre) / sizeof(pre[0]); i++)
        if (strlen(pre[i]) == n && memcmp(pre[i], s, n) == 0)
            return 1;
    return 0;
}

/* The next token of s from s[*i] on (blanks skipped): its type, its
 * start in *i and its end in *end. Returns 1, 0 at the end of s, or -1
 * for a raw string or a literal that does not close. */
static int next_token(const char *s, size_t *i, size_t *end, int *type)
{
    static const char *const p3[] = {"<<=", ">>=", "...", "->*", "<=>"};
    static const char *const p2[] = {"<<", ">>", "<=", ">=", "==", "!=", "&&", "||", "##", "::", "->", "++",
                                     "--", "+=", "-=", "*=", "/=", "%=", "&=", "|=", "^=", ".*"};
    size_t a = *i;
    while (s[a] == ' ' || s[a] == '\t' || s[a] == '\v' || s[a] == '\f')
        a++;
    char c = s[a];
    size_t b = a + 1;
    *i = a;
    if (!c)
        return 0;
    if (pp_is_id(c) && !pp_is_digit(c)) {
        for (b = a; pp_is_id(s[b]); b++)
            ;
        if (s[b] == '"' && pp_raw_prefix(s + a, b - a))
            return -1;   /* a raw string: its text is not lexed here */
        *type = PP_ID;
    } else if (pp_is_digit(c) || (c == '.' && pp_is_digit(s[a + 1]))) {
        b = skip_number(s, a);
        *type = PP_NUM;
    } else if (c == '"' || c == '\'') {
        if (!(b = pp_skip_quoted(s, a)))
            return -1;
        *type = c == '"' ? PP_STR : PP_CHR;
    } else {
        for (size_t k = 0; k < sizeof(p3) / sizeof(p3[0]) && b == a + 1; k++)
            if (strncmp(s + a, p3[k], 3) == 0)
                b = a + 3;
        for (size_t k = 0; k < sizeof(p2) / sizeof(p2[0]) && b == a + 1; k++)
            if (strncmp(s + a, p2[k], 2) == 0)
                b = a + 2;
        *type = PP_PUNCT;
    }
    *end = b;
    return 1;
}

int pp_lex(const char *s, PpToks *t)
{
    size_t i = 0, end;
    int type, rc;
    while ((rc = next_token(s, &i, &end, &type)) == 1) {
        pptoks_push(t, type, s + i, end - i);
        i = end;
    }
    return rc;
}

int pp_idents(const char *s, void (*fn)(void *ctx, const char *id, size_t n), void *ctx)
{
    size_t i = 0, end;
    int type, rc;
    while ((rc = next_token(s, &i, &end, &type)) == 1) {
        if (type == PP_ID)
            fn(ctx, s + i, end - i);
        i = end;
    }
    return rc;
}

/* ---- #if arithmetic ----------------------------------------------------------- */

typedef struct Ev {
    const PpTok *t;
    int          n, i;
    PpIdent      ident;
    void        *ctx;
    int          fail;
    int          depth;   /* nesting of ev_cond: bounded, for the stack's sake */
} Ev;

static long long ev_cond(Ev *e);
static long long ev_unary(Ev *e);

static int ev_peek(Ev *e, const char *p)
{
    return e->i < e->n && pp_is_punct(&e->t[e->i], p);
}

static long long ev_fail(Ev *e)
{
    e->fail = 1;
    e->i = e->n;
    return 0;
}

static long long ev_number(Ev *e, const char *s)
{
    char buf[64];
    size_t k = 0;
    for (; *s && k + 1 < sizeof(buf); s++)
        if (*s != '\'')
            buf[k++] = *s;
    buf[k] = 0;
    while (k > 0 && (buf[k - 1] == 'l' || buf[k - 1] == 'L'))
        buf[--k] = 0;
    int base = 10;
    const char *d = buf;
    if (buf[0] == '0' && (buf[1] == 'x' || buf[1] == 'X'))
        base = 16, d += 2;
    else if (buf[0] == '0' && (buf[1] == 'b' || buf[1] == 'B'))
        base = 2, d += 2;
    else if (buf[0] == '0')
        base = 8;
    if (!*d)
        return base == 8 ? 0 : ev_fail(e);
    unsigned long long v = 0;
    for (; *d; d++) {
        int x = pp_is_digit(*d) ? *d - '0' : (*d >= 'a' && *d <= 'f') ? *d - 'a' + 10
                                       : (*d >= 'A' && *d <= 'F') ? *d - 'A' + 10 : 99;
        if (x >= base || v > (unsigned long long)LLONG_MAX / (unsigned)base)
            return ev_fail(e);   /* u/U suffixes, floats, overflow */
        v = v * (unsigned)base + (unsigned)x;
    }
    if (v > (unsigned long long)LLONG_MAX)
        return ev_fail(e);
    return (long long)v;
}

static long long ev_ident(Ev *e, const PpTok *t)
{
    long long v = 0;
    if (strcmp(t->s, "true") == 0)
        return 1;
    if (strcmp(t->s, "false") == 0)
        return 0;
    return e->ident(e->ctx, t, &v) < 0 ? ev_fail(e) : v;
}

static long long ev_unary1(Ev *e)
{
    if (e->i >= e->n)
        return ev_fail(e);
    const PpTok *t = &e->t[e->i++];
    if (t->type == PP_NUM)
        return ev_number(e, t->s);
    if (t->type == PP_ID || t->type == PP_HIDDEN)
        return ev_ident(e, t);
    if (pp_is_punct(t, "(")) {
        long long v = ev_cond(e);
        if (!ev_peek(e, ")"))
            return ev_fail(e);
        e->i++;
        return v;
    }
    long long v;
    if (pp_is_punct(t, "!"))
        return !ev_unary(e);
    if (pp_is_punct(t, "~"))
        return ~ev_unary(e);
    if (pp_is_punct(t, "+"))
        return ev_unary(e);
    if (pp_is_punct(t, "-")) {
        v = ev_unary(e);
        return v == LLONG_MIN ? ev_fail(e) : -v;
    }
    return ev_fail(e);   /* character literals, strings, anything else */
}

static long long ev_unary(Ev *e)
{
    if (++e->depth > 256)
        return ev_fail(e);
    long long v = ev_unary1(e);
    e->depth--;
    return v;
}

static int ev_prec(const PpTok *t)
{
    static const struct { const char *op; int prec; } ops[] = {
        {"||", 1}, {"&&", 2}, {"|", 3}, {"^", 4}, {"&", 5}, {"==", 6}, {"!=", 6}, {"<", 7}, {">", 7},
        {"<=", 7}, {">=", 7}, {"<<", 8}, {">>", 8}, {"+", 9}, {"-", 9}, {"*", 10}, {"/", 10}, {"%", 10}};
    if (t->type != PP_PUNCT)
        return 0;
    for (size_t i = 0; i < sizeof(ops) / sizeof(ops[0]); i++)
        if (strcmp(t->s, ops[i].op) == 0)
            return ops[i].prec;
    return 0;
}

static long long ev_apply(Ev *e, const char *op, long long a, long long b)
{
    long long r;
    switch (op[0]) {
    case '|': return op[1] ? (a || b) : (a | b);
    case '&': return op[1] ? (a && b) : (a & b);
    case '^': return a ^ b;
    case '=': return a == b;
    case '!': return a != b;
    case '<':
        if (op[1] == '<')
            return (b < 0 || b > 62 || a < 0 || a > (LLONG_MAX >> b)) ? ev_fail(e) : a << b;
        return op[1] ? a <= b : a < b;
    case '>':
        if (op[1] == '>')
            return (b < 0 || b > 63) ? ev_fail(e) : a >> b;
        return op[1] ? a >= b : a > b;
    case '+': return __builtin_add_overflow(a, b, &r) ? ev_fail(e) : r;
    case '-': return __builtin_sub_overflow(a, b, &r) ? ev_fail(e) : r;
    case '*': return __builtin_mul_overflow(a, b, &r) ? ev_fail(e) : r;
    case '/': return (b == 0 || (a == LLONG_MIN && b == -1)) ? ev_fail(e) : a / b;
    case '%': return (b == 0 || (a == LLONG_MIN && b == -1)) ? ev_fail(e) : a % b;
    }
    return ev_fail(e);
}

static long long ev_binary(Ev *e, int min)
{
    long long a = ev_unary(e);
    while (e->i < e->n) {
        const PpTok *op = &e->t[e->i];
        int p = ev_prec(op);
        if (!p || p < min)
            break;
        e->i++;
        long long b = ev_binary(e, p + 1);
        a = ev_apply(e, op->s, a, b);
    }
    return a;
}

static long long ev_cond(Ev *e)
{
    if (++e->depth > 256)
        return ev_fail(e);
    long long c = ev_binary(e, 1), v = c;
    if (ev_peek(e, "?")) {
        e->i++;
        long long a = ev_cond(e);
        if (!ev_peek(e, ":"))
            return ev_fail(e);
        e->i++;
        long long b = ev_cond(e);
        v = c ? a : b;
    }
    e->depth--;
    return v;
}

int pp_is_punct(const PpTok *t, const char *p)
{
    return t->type == PP_PUNCT && strcmp(t->s, p) == 0;
}

int pp_eval(const PpTok *t, int n, PpIdent ident, void *ctx, long long *v)
{
    Ev e = {t, n, 0, ident, ctx, 0, 0};
    *v = n ? ev_cond(&e) : 0;
    return (e.fail || n == 0 || e.i != n) ? -1 : 0;
}

/*
 * cexpr: C expressions in the task spec's language. See cexpr.h.
 *
 * The text is cut into tokens, then translated range by range: a cast
 * covers the operand after it (a float cast keeps its float meaning as
 * (1.0 * x), so (float)S / 2 stays a float division), a call must be one
 * the spec's language has, and names go through the caller.
 */
#include "compile/cexpr.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util.h"

typedef enum { T_NAME, T_NUM, T_OP } TokKind;

typedef struct Tok {
    TokKind kind;
    char    text[64];
} Tok;

/* Cut c into tokens; -1 on a token too long or a character no C
 * expression has. */
static int tokenize(const char *c, Tok **out, int *n)
{
    static const char *const two[] = {"&&", "||", "==", "!=", "<=", ">=", "<<", ">>", "->", NULL};
    Tok *v = NULL;
    int k = 0;
    for (const char *p = c; *p;) {
        if (isspace((unsigned char)*p)) {
            p++;
            continue;
        }
        Tok t = {T_OP, ""};
        const char *b = p;
        if (isalpha((unsigned char)*p) || *p == '_' || (p[0] == ':' && p[1] == ':')) {
            t.kind = T_NAME;
            while (isalnum((unsigned char)*p) || *p == '_' || (p[0] == ':' && p[1] == ':'))
                p += (*p == ':') ? 2 : 1;
        } else if (isdigit((unsigned char)*p) || (*p == '.' && isdigit((unsigned char)p[1]))) {
            t.kind = T_NUM;
            int hex = p[0] == '0' && (p[1] == 'x' || p[1] == 'X');
            while (isalnum((unsigned char)*p) || *p == '.' || *p == '\'' ||
                   (!hex && (*p == '+' || *p == '-') && (p[-1] == 'e' || p[-1] == 'E')))
                p++;
        } else {
            p++;
            for (const char *const *w = two; *w; w++)
                if (b[0] == (*w)[0] && b[1] == (*w)[1])
                    p = b + 2;
        }
        size_t len = (size_t)(p - b);
        if (len >= sizeof(t.text)) {
            free(v);
            return -1;
        }
        memcpy(t.text, b, len);
        t.text[len] = '\0';
        v = xrealloc(v, (size_t)(k + 1) * sizeof(*v));
        v[k++] = t;
    }
    *out = v;
    *n = k;
    return 0;
}

/* A number in the spec's syntax: suffixes and digit separators dropped,
 * hex made decimal, "1." and ".5" completed. 0, or -1 when not a number. */
static int number(const char *s, char *out, size_t cap)
{
    char buf[64];
    size_t k = 0;
    for (const char *p = s; *p && k + 1 < sizeof(buf); p++)
        if (*p != '\'')
            buf[k++] = *p;
    buf[k] = '\0';
    if (buf[0] == '0' && (buf[1] == 'x' || buf[1] == 'X')) {
        char *end;
        unsigned long long v = strtoull(buf, &end, 16);
        while (*end == 'u' || *end == 'U' || *end == 'l' || *end == 'L')
            end++;
        if (*end)
            return -1;
        snprintf(out, cap, "%llu", v);
        return 0;
    }
    int is_float = strpbrk(buf, ".eE") != NULL;
    while (k > 0 && strchr(is_float ? "fFlL" : "uUlL", buf[k - 1]))
        buf[--k] = '\0';
    char *end;
    if (is_float)
        (void)strtod(buf, &end);
    else
        (void)strtoull(buf, &end, 10);
    if (k == 0 || *end)
        return -1;
    snprintf(out, cap, "%s%s%s", buf[0] == '.' ? "0" : "", buf, buf[k - 1] == '.' ? "0" : "");
    return 0;
}

int cexpr_type_word(const char *w, size_t n)
{
    static const char *const words[] = {"int",      "unsigned", "signed",  "long",    "short",    "float",
                                        "double",   "size_t",   "int64_t", "int32_t", "uint32_t", "uint64_t",
                                        "char",     "bool",     "int16_t", "uint16_t", "ptrdiff_t", "int8_t",
                                        "uint8_t",  "auto",     NULL};
    for (const char *const *k = words; *k; k++)
        if (strlen(*k) == n && strncmp(*k, w, n) == 0)
            return 1;
    return 0;
}

/* A word of a cast's type: a type word or const. */
static int is_type_word(const char *w)
{
    return strcmp(w, "const") == 0 || (strcmp(w, "auto") != 0 && cexpr_type_word(w, strlen(w)));
}

int cexpr_sizeof(const char *type)
{
    static const struct {
        const char *t;
        int         size;
    } sizes[] = {
        {"char", 1},           {"int8_t", 1},        {"uint8_t", 1},        {"unsigned char", 1},
        {"signed char", 1},    {"bool", 1},          {"short", 2},          {"int16_t", 2},
        {"uint16_t", 2},       {"unsigned short", 2}, {"__half", 2},        {"half", 2},
        {"__nv_bfloat16", 2},  {"nv_bfloat16", 2},   {"int", 4},            {"unsigned", 4},
        {"unsigned int", 4},   {"int32_t", 4},       {"uint32_t", 4},       {"float", 4},
        {"__half2", 4},        {"half2", 4},         {"__nv_bfloat162", 4}, {"nv_bfloat162", 4},
        {"long long", 8},      {"unsigned long long", 8}, {"int64_t", 8},  {"uint64_t", 8},
        {"size_t", 8},         {"double", 8},        {"float2", 8},         {"int2", 8},
        {"uint2", 8},          {"float4", 16},       {"int4", 16},          {"uint4", 16},
        {"double2", 16},       {"long", 8},          {"unsigned long", 8},  {"char4", 4},
    };
    for (size_t i = 0; i < EVO_ARRAY_LEN(sizes); i++)
        if (strcmp(sizes[i].t, type) == 0)
            return sizes[i].size;
    return 0;
}

/* The spec's function for a C one, or NULL. */
static const char *function_of(const char *name)
{
    static const struct {
        const char *c, *spec;
    } map[] = {
        {"sqrtf", "sqrt"}, {"sqrt", "sqrt"},      {"std::sqrt", "sqrt"}, {"fminf", "min"},    {"fmin", "min"},
        {"min", "min"},    {"std::min", "min"},   {"::min", "min"},      {"fmaxf", "max"},    {"fmax", "max"},
        {"max", "max"},    {"std::max", "max"},   {"::max", "max"},      {"ceil_div", "ceil_div"},
        {"cdiv", "ceil_div"}, {"div_up", "ceil_div"}, {"DIV_UP", "ceil_div"}, {"CEIL_DIV", "ceil_div"},
        {"ceildiv", "ceil_div"},
    };
    for (size_t i = 0; i < EVO_ARRAY_LEN(map); i++)
        if (strcmp(map[i].c, name) == 0)
            return map[i].spec;
    return NULL;
}

typedef enum { O_NONE, O_OPERAND, O_BINOP, O_UNARY, O_LPAREN, O_RPAREN, O_COMMA, O_FUNC } OutKind;

typedef struct Tr {
    const Tok *t;
    int        n;
    CexprName  name;
    void      *ctx;
    StrBuf     out;
    OutKind    prev;
} Tr;

static void emit(Tr *tr, const char *s, OutKind k)
{
    int space = tr->prev != O_NONE && tr->prev != O_LPAREN && tr->prev != O_UNARY && tr->prev != O_FUNC &&
                k != O_RPAREN && k != O_COMMA;
    if (tr->prev == O_FUNC && k == O_LPAREN)
        space = 0;
    if (space)
        sb_putc(&tr->out, ' ');
    sb_append(&tr->out, s);
    tr->prev = k;
}

/* Index just past the ')' matching the '(' at i, or -1. */
static int group_end(const Tr *tr, int i)
{
    int depth = 0;
    for (int k = i; k < tr->n; k++) {
        if (strcmp(tr->t[k].text, "(") == 0)
            depth++;
        else if (strcmp(tr->t[k].text, ")") == 0 && --depth == 0)
            return k + 1;
    }
    return -1;
}

/* The extent [i, end) of one operand: unary signs, then a group, a
 * number, or a name with its call; -1 when there is none. */
static int operand_end(const Tr *tr, int i)
{
    while (i < tr->n && tr->t[i].kind == T_OP &&
           (strcmp(tr->t[i].text, "-") == 0 || strcmp(tr->t[i].text, "+") == 0 || strcmp(tr->t[i].text, "!") == 0))
        i++;
    if (i >= tr->n)
        return -1;
    if (strcmp(tr->t[i].text, "(") == 0)
        return group_end(tr, i);
    if (tr->t[i].kind == T_NUM)
        return i + 1;
    if (tr->t[i].kind == T_NAME)
        return i + 1 < tr->n && strcmp(tr->t[i + 1].text, "(") == 0 ? group_end(tr, i + 1) : i + 1;
    return -1;
}

static int range(Tr *tr, int a, int b);

/* A cast's type spans [a, e) ("(" type ")" or static_cast<type>); the
 * operand [o, oe) is translated, as a float when the type is one. */
static int cast(Tr *tr, int a, int e, int o, int oe)
{
    int is_float = 0;
    for (int k = a; k < e; k++)
        is_float |= strcmp(tr->t[k].text, "float") == 0 || strcmp(tr->t[k].text, "double") == 0;
    if (oe < 0)
        return -1;
    /* sqrt's result is a float whatever its argument */
    size_t len = tr->out.len;
    if (is_float && tr->prev == O_LPAREN && len >= 5 && strcmp(tr->out.s + len - 5, "sqrt(") == 0)
        is_float = 0;
    if (is_float) {
        emit(tr, "(", O_LPAREN);
        emit(tr, "1.0", O_OPERAND);
        emit(tr, "*", O_BINOP);
    }
    if (range(tr, o, oe))
        return -1;
    if (is_float)
        emit(tr, ")", O_RPAREN);
    return 0;
}

/* A name that is no call: the caller's replacement. */
static int name(Tr *tr, const char *n)
{
    if (strcmp(n, "true") == 0 || strcmp(n, "false") == 0) {
        emit(tr, n[0] == 't' ? "1" : "0", O_OPERAND);
        return 0;
    }
    char *r = tr->name(tr->ctx, n);
    if (!r)
        return -1;
    int single = 1;
    for (const char *p = r; *p; p++)
        single &= isalnum((unsigned char)*p) || *p == '_' || *p == '.';
    if (single) {
        emit(tr, r, O_OPERAND);
    } else {
        emit(tr, "(", O_LPAREN);
        sb_append(&tr->out, r);
        tr->prev = O_OPERAND;
        emit(tr, ")", O_RPAREN);
    }
    free(r);
    return 0;
}

/* Translate tokens [a, b) into tr->out. */
static int range(Tr *tr, int a, int b)
{
    static const char *const binops[] = {"+", "-", "*", "/", "%", "<", ">", "<=", ">=", "==", "!=", "&&", "||", NULL};
    for (int i = a; i < b;) {
        const Tok *t = &tr->t[i];
        if (t->kind == T_NUM) {
            char num[64];
            if (number(t->text, num, sizeof(num)))
                return -1;
            emit(tr, num, O_OPERAND);
            i++;
        } else if (t->kind == T_NAME && strcmp(t->text, "sizeof") == 0) {
            /* sizeof(type): the type's words up to the ')' */
            int e = i + 1 < b && strcmp(tr->t[i + 1].text, "(") == 0 ? group_end(tr, i + 1) : -1;
            StrBuf ty = {0};
            for (int k = i + 2; e > 0 && k < e - 1; k++)
                sb_printf(&ty, "%s%s", ty.len ? " " : "", tr->t[k].text);
            int size = e > 0 && ty.s ? cexpr_sizeof(ty.s) : 0;
            sb_free(&ty);
            if (size <= 0)
                return -1;
            char num[16];
            snprintf(num, sizeof(num), "%d", size);
            emit(tr, num, O_OPERAND);
            i = e;
        } else if (t->kind == T_NAME && strcmp(t->text, "static_cast") == 0) {
            int lt = i + 1, gt = lt;
            while (gt < b && strcmp(tr->t[gt].text, ">") != 0)
                gt++;
            if (lt >= b || strcmp(tr->t[lt].text, "<") != 0 || gt + 1 >= b || strcmp(tr->t[gt + 1].text, "(") != 0)
                return -1;
            int e = group_end(tr, gt + 1);
            if (e < 0 || cast(tr, lt + 1, gt, gt + 1, e))
                return -1;
            i = e;
        } else if (t->kind == T_NAME && i + 1 < b && strcmp(tr->t[i + 1].text, "(") == 0) {
            const char *f = function_of(t->text);
            int e = group_end(tr, i + 1);
            if (!f || e < 0 || e > b)
                return -1;
            emit(tr, f, O_FUNC);
            if (range(tr, i + 1, e))
                return -1;
            i = e;
        } else if (t->kind == T_NAME) {
            if (name(tr, t->text))
                return -1;
            i++;
        } else if (strcmp(t->text, "(") == 0) {
            int e = group_end(tr, i);
            if (e < 0 || e > b)
                return -1;
            int k = i + 1, types = 0;
            while (k < e - 1 && tr->t[k].kind == T_NAME && is_type_word(tr->t[k].text))
                k++, types++;
            if (types > 0 && k == e - 1) {         /* a cast: (type) operand */
                if (cast(tr, i + 1, e - 1, e, operand_end(tr, e)))
                    return -1;
                i = operand_end(tr, e);
                continue;
            }
            emit(tr, "(", O_LPAREN);
            if (range(tr, i + 1, e - 1))
                return -1;
            emit(tr, ")", O_RPAREN);
            i = e;
        } else if (strcmp(t->text, ",") == 0) {
            emit(tr, ",", O_COMMA);
            i++;
        } else {
            int unary = tr->prev == O_NONE || tr->prev == O_BINOP || tr->prev == O_UNARY || tr->prev == O_LPAREN ||
                        tr->prev == O_COMMA;
            if (unary && (strcmp(t->text, "-") == 0 || strcmp(t->text, "+") == 0 || strcmp(t->text, "!") == 0)) {
                emit(tr, t->text, O_UNARY);
                i++;
                continue;
            }
            int ok = 0;
            for (const char *const *o = binops; *o && !ok; o++)
                ok = strcmp(*o, t->text) == 0;
            if (!ok || unary)
                return -1;
            emit(tr, t->text, O_BINOP);
            i++;
        }
    }
    return 0;
}

char *cexpr_translate(const char *c, CexprName name_fn, void *ctx)
{
    Tok *t = NULL;
    int n = 0;
    if (!c || tokenize(c, &t, &n) || n == 0) {
        free(t);
        return NULL;
    }
    Tr tr = {t, n, name_fn, ctx, {0}, O_NONE};
    int rc = range(&tr, 0, n);
    free(t);
    if (rc || !tr.out.s) {
        sb_free(&tr.out);
        return NULL;
    }
    return sb_take(&tr.out);
}

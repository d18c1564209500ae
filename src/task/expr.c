/*
 * expr: a recursive-descent parser into a flat node array (expr_priv.h);
 * the checked evaluator is expr_eval.c. See expr.h for the language.
 *
 * Grammar, loosest binding first:
 *   or    := and ('||' and)*
 *   and   := eq ('&&' eq)*
 *   eq    := rel (('==' | '!=') rel)*
 *   rel   := add (('<' | '<=' | '>' | '>=') add)*
 *   add   := mul (('+' | '-') mul)*
 *   mul   := unary (('*' | '/' | '%') unary)*
 *   unary := ('-' | '+' | '!') unary | primary
 *   primary := INT | FLOAT | NAME | NAME '(' args ')' | '(' or ')'
 *
 * Recursion is bounded twice: parser nesting (parentheses, unary chains,
 * call arguments) stops at MAX_NEST, and every node records the height of
 * its subtree, which stops at MAX_HEIGHT, so evaluation (recursive over
 * the tree) can never run deep either, even for "1+1+1+...".
 */
#include "task/expr_priv.h"

#include <ctype.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_NEST   200
#define MAX_HEIGHT 1000

static const struct {
    const char *name;
    int         nargs;
} funcs[] = {
    [F_MIN] = {"min", 2}, [F_MAX] = {"max", 2}, [F_CEIL_DIV] = {"ceil_div", 2}, [F_SQRT] = {"sqrt", 1},
};

/* ---- lexer ----------------------------------------------------------- */

enum TokKind { T_END, T_INT, T_FLT, T_NAME, T_LP, T_RP, T_COMMA, T_OP, T_NOT };

typedef struct Token {
    int     kind;
    int     op;     /* T_OP */
    int     col;
    size_t  start, len;
    int64_t i;
    double  f;
} Token;

typedef struct Parser {
    const char *s;
    size_t      pos;
    Token       tok;
    Expr       *e;
    int         nest;
    EvoErr     *err;
} Parser;

static int perr(Parser *p, int col, const char *fmt, ...) EVO_PRINTF(3, 4);

static int perr(Parser *p, int col, const char *fmt, ...)
{
    char what[256];
    va_list ap;
    va_start(ap, fmt);
    if (vsnprintf(what, sizeof(what), fmt, ap) >= (int)sizeof(what))
        what[sizeof(what) - 1] = 0; /* truncated: fine for a message */
    va_end(ap);
    return err_set(p->err, "column %d: %s", col, what);
}

static int is_name_start(int c) { return isalpha(c) || c == '_'; }
static int is_name_char(int c) { return isalnum(c) || c == '_'; }

static int lex_number(Parser *p, Token *t)
{
    const char *s = p->s;
    size_t i = p->pos;
    int is_float = 0;
    while (isdigit((unsigned char)s[i]))
        i++;
    if (s[i] == '.') {
        is_float = 1;
        i++;
        while (isdigit((unsigned char)s[i]))
            i++;
    }
    if (s[i] == 'e' || s[i] == 'E') {
        is_float = 1;
        i++;
        if (s[i] == '+' || s[i] == '-')
            i++;
        if (!isdigit((unsigned char)s[i]))
            return perr(p, t->col, "malformed number%s", "");
        while (isdigit((unsigned char)s[i]))
            i++;
    }
    if (is_name_char((unsigned char)s[i]) || s[i] == '.')
        return perr(p, t->col, "malformed number%s", "");
    t->start = p->pos;
    t->len = i - p->pos;
    if (is_float) {
        char buf[64];
        if (t->len >= sizeof(buf))
            return perr(p, t->col, "number too long%s", "");
        memcpy(buf, s + p->pos, t->len);
        buf[t->len] = 0;
        t->kind = T_FLT;
        t->f = strtod(buf, NULL);
        if (!isfinite(t->f))
            return perr(p, t->col, "number out of range%s", "");
    } else {
        int64_t v = 0;
        for (size_t k = p->pos; k < i; k++) {
            if (__builtin_mul_overflow(v, 10, &v) || __builtin_add_overflow(v, s[k] - '0', &v))
                return perr(p, t->col, "integer literal out of range%s", "");
        }
        t->kind = T_INT;
        t->i = v;
    }
    p->pos = i;
    return 0;
}

/* Read the next token into p->tok. */
static int lex(Parser *p)
{
    const char *s = p->s;
    while (s[p->pos] == ' ' || s[p->pos] == '\t' || s[p->pos] == '\n' || s[p->pos] == '\r')
        p->pos++;
    Token *t = &p->tok;
    memset(t, 0, sizeof(*t));
    t->col = (int)p->pos + 1;
    t->start = p->pos;
    char c = s[p->pos], d = c ? s[p->pos + 1] : 0;
    if (c == 0) {
        t->kind = T_END;
        return 0;
    }
    if (isdigit((unsigned char)c) || (c == '.' && isdigit((unsigned char)d)))
        return lex_number(p, t);
    if (is_name_start((unsigned char)c)) {
        size_t i = p->pos;
        while (is_name_char((unsigned char)s[i]))
            i++;
        t->kind = T_NAME;
        t->len = i - p->pos;
        p->pos = i;
        return 0;
    }
    int op = 0, len = 1;
    switch (c) {
    case '(': t->kind = T_LP; break;
    case ')': t->kind = T_RP; break;
    case ',': t->kind = T_COMMA; break;
    case '+': op = OP_ADD; break;
    case '-': op = OP_SUB; break;
    case '*': op = OP_MUL; break;
    case '/': op = OP_DIV; break;
    case '%': op = OP_MOD; break;
    case '<': op = d == '=' ? (len = 2, OP_LE) : OP_LT; break;
    case '>': op = d == '=' ? (len = 2, OP_GE) : OP_GT; break;
    case '=':
        if (d != '=')
            return perr(p, t->col, "unexpected '='%s (did you mean '=='?)", "");
        op = OP_EQ, len = 2;
        break;
    case '!':
        if (d == '=')
            op = OP_NE, len = 2;
        else
            t->kind = T_NOT;
        break;
    case '&':
        if (d != '&')
            return perr(p, t->col, "unexpected '&'%s (did you mean '&&'?)", "");
        op = OP_AND, len = 2;
        break;
    case '|':
        if (d != '|')
            return perr(p, t->col, "unexpected '|'%s (did you mean '||'?)", "");
        op = OP_OR, len = 2;
        break;
    default: {
        char ch[8];
        if (isprint((unsigned char)c))
            snprintf(ch, sizeof(ch), "'%c'", c);
        else
            snprintf(ch, sizeof(ch), "0x%02x", (unsigned char)c);
        return perr(p, t->col, "unexpected character %s", ch);
    }
    }
    if (op) {
        t->kind = T_OP;
        t->op = op;
    }
    t->len = (size_t)len;
    p->pos += (size_t)len;
    return 0;
}

/* A short description of the current token for error messages. */
static const char *tok_desc(const Parser *p, char *buf, size_t size)
{
    const Token *t = &p->tok;
    if (t->kind == T_END)
        return "end of expression";
    int n = t->len > 20 ? 20 : (int)t->len;
    snprintf(buf, size, "'%.*s%s'", n, p->s + t->start, t->len > 20 ? "..." : "");
    return buf;
}

/* ---- parser ---------------------------------------------------------- */

static int node_new(Parser *p, int kind, int col, int a, int b)
{
    Expr *e = p->e;
    int h = 0;
    if (a >= 0 && e->nodes[a].height > h)
        h = e->nodes[a].height;
    if (b >= 0 && e->nodes[b].height > h)
        h = e->nodes[b].height;
    if (h + 1 > MAX_HEIGHT)
        return perr(p, col, "expression too deeply nested%s", "") - 1; /* -2: distinguish from an index */
    if (e->nnodes == e->cap) {
        e->cap = e->cap ? e->cap * 2 : 16;
        e->nodes = xrealloc(e->nodes, (size_t)e->cap * sizeof(*e->nodes));
    }
    Node *n = &e->nodes[e->nnodes];
    memset(n, 0, sizeof(*n));
    n->kind = kind;
    n->col = col;
    n->a = a;
    n->b = b;
    n->height = h + 1;
    n->var = -1;
    return e->nnodes++;
}

static int parse_or(Parser *p);

static int parse_call(Parser *p, const Token *name)
{
    int fn = -1;
    for (int k = 0; k < (int)EVO_ARRAY_LEN(funcs); k++)
        if (strlen(funcs[k].name) == name->len && memcmp(funcs[k].name, p->s + name->start, name->len) == 0)
            fn = k;
    if (fn < 0) {
        char nm[64];
        snprintf(nm, sizeof(nm), "%.*s", name->len > 40 ? 40 : (int)name->len, p->s + name->start);
        return perr(p, name->col, "unknown function '%s' (known: min, max, ceil_div, sqrt)", nm);
    }
    if (lex(p) < 0) /* consume '(' */
        return -1;
    int args[2] = {-1, -1}, nargs = 0;
    if (p->tok.kind != T_RP) {
        for (;;) {
            int a = parse_or(p);
            if (a < 0)
                return -1;
            if (nargs < 2)
                args[nargs] = a;
            nargs++;
            if (p->tok.kind != T_COMMA)
                break;
            if (lex(p) < 0)
                return -1;
        }
    }
    if (p->tok.kind != T_RP) {
        char buf[48];
        char what[96];
        snprintf(what, sizeof(what), "expected ',' or ')' in call to %s, found %s", funcs[fn].name,
                 tok_desc(p, buf, sizeof(buf)));
        return perr(p, p->tok.col, "%s", what);
    }
    if (nargs != funcs[fn].nargs) {
        char what[64];
        snprintf(what, sizeof(what), "%s expects %d argument%s, got %d", funcs[fn].name, funcs[fn].nargs,
                 funcs[fn].nargs == 1 ? "" : "s", nargs);
        return perr(p, name->col, "%s", what);
    }
    if (lex(p) < 0)
        return -1;
    int n = node_new(p, N_CALL, name->col, args[0], args[1]);
    if (n < 0)
        return -1;
    p->e->nodes[n].op = fn;
    return n;
}

static int parse_primary(Parser *p)
{
    Token t = p->tok;
    char buf[48];
    int n;
    switch (t.kind) {
    case T_INT:
    case T_FLT:
        n = node_new(p, t.kind == T_INT ? N_INT : N_FLT, t.col, -1, -1);
        if (n < 0)
            return -1;
        p->e->nodes[n].i = t.i;
        p->e->nodes[n].f = t.f;
        return lex(p) < 0 ? -1 : n;
    case T_NAME:
        if (lex(p) < 0)
            return -1;
        if (p->tok.kind == T_LP)
            return parse_call(p, &t);
        n = node_new(p, N_VAR, t.col, -1, -1);
        if (n < 0)
            return -1;
        {
            Expr *e = p->e;
            if (e->nvars == e->vcap) {
                e->vcap = e->vcap ? e->vcap * 2 : 8;
                e->vars = xrealloc(e->vars, (size_t)e->vcap * sizeof(*e->vars));
            }
            e->vars[e->nvars].name = xstrndup(p->s + t.start, t.len);
            e->vars[e->nvars].col = t.col;
            e->vars[e->nvars].slot = -1;
            e->nodes[n].var = e->nvars++;
        }
        return n;
    case T_LP: {
        if (lex(p) < 0)
            return -1;
        int inner = parse_or(p);
        if (inner < 0)
            return -1;
        if (p->tok.kind != T_RP)
            return perr(p, p->tok.col, "expected ')', found %s", tok_desc(p, buf, sizeof(buf)));
        return lex(p) < 0 ? -1 : inner;
    }
    default:
        return perr(p, t.col, "expected a number, a name or '(', found %s", tok_desc(p, buf, sizeof(buf)));
    }
}

static int parse_unary(Parser *p)
{
    if (++p->nest > MAX_NEST)
        return perr(p, p->tok.col, "expression too deeply nested%s", "");
    int r;
    Token t = p->tok;
    if (t.kind == T_NOT || (t.kind == T_OP && (t.op == OP_SUB || t.op == OP_ADD))) {
        if (lex(p) < 0)
            return -1;
        int a = parse_unary(p);
        if (a < 0)
            return -1;
        if (t.kind == T_OP && t.op == OP_ADD)
            r = a;
        else
            r = node_new(p, t.kind == T_NOT ? N_NOT : N_NEG, t.col, a, -1);
    } else {
        r = parse_primary(p);
    }
    p->nest--;
    return r < 0 ? -1 : r;
}

/* One left-associative binary level: operands from `next`, operators
 * between lo and hi (inclusive) of enum Op. */
static int parse_level(Parser *p, int (*next)(Parser *), int lo, int hi)
{
    int a = next(p);
    if (a < 0)
        return -1;
    while (p->tok.kind == T_OP && p->tok.op >= lo && p->tok.op <= hi) {
        Token t = p->tok;
        if (lex(p) < 0)
            return -1;
        int b = next(p);
        if (b < 0)
            return -1;
        int n = node_new(p, N_BIN, t.col, a, b);
        if (n < 0)
            return -1;
        p->e->nodes[n].op = t.op;
        a = n;
    }
    return a;
}

static int parse_mul(Parser *p) { return parse_level(p, parse_unary, OP_MUL, OP_MOD); }
static int parse_add(Parser *p) { return parse_level(p, parse_mul, OP_ADD, OP_SUB); }
static int parse_rel(Parser *p) { return parse_level(p, parse_add, OP_LT, OP_GE); }
static int parse_eq(Parser *p) { return parse_level(p, parse_rel, OP_EQ, OP_NE); }
static int parse_and(Parser *p) { return parse_level(p, parse_eq, OP_AND, OP_AND); }
static int parse_or(Parser *p) { return parse_level(p, parse_and, OP_OR, OP_OR); }

int expr_parse(const char *text, Expr **out, EvoErr *err)
{
    Parser p = {0};
    Expr *e = xcalloc(1, sizeof(*e));
    char buf[48];
    *out = NULL;
    e->text = xstrdup(text ? text : "");
    p.s = e->text;
    p.e = e;
    p.err = err;
    if (lex(&p) < 0)
        goto fail;
    if (p.tok.kind == T_END) {
        err_set(err, "column 1: empty expression");
        goto fail;
    }
    e->root = parse_or(&p);
    if (e->root < 0)
        goto fail;
    if (p.tok.kind != T_END) {
        if (p.tok.kind == T_RP)
            perr(&p, p.tok.col, "unmatched ')'%s", "");
        else
            perr(&p, p.tok.col, "expected an operator, found %s", tok_desc(&p, buf, sizeof(buf)));
        goto fail;
    }
    *out = e;
    return 0;
fail:
    expr_free(&e);
    return -1;
}

void expr_free(Expr **pe)
{
    if (!pe || !*pe)
        return;
    Expr *e = *pe;
    for (int i = 0; i < e->nvars; i++)
        free(e->vars[i].name);
    free(e->vars);
    free(e->nodes);
    free(e->text);
    free(e);
    *pe = NULL;
}

/*
 * expr_eval.c: evaluating a parsed expression (expr_priv.h) with checked
 * integer arithmetic (overflow, division by zero) and finite floats,
 * explaining a failed comparison with its operands' values, and the
 * introspection and name suggestions of expr.h.
 */
#include "task/expr_priv.h"

#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const op_text[] = {
    "?", "+", "-", "*", "/", "%", "<", "<=", ">", ">=", "==", "!=", "&&", "||",
};

/* ---- evaluation ------------------------------------------------------ */

typedef struct EvalCtx {
    const Expr    *e;
    ExprLookup     lookup;  /* by name, or */
    ExprSlotLookup slots;   /* by slot */
    void          *ctx;
    EvoErr        *err;
} EvalCtx;

double expr_value_f(ExprValue v) { return v.is_float ? v.f : (double)v.i; }
int    expr_value_true(ExprValue v) { return v.is_float ? v.f != 0.0 : v.i != 0; }

static ExprValue vint(int64_t i) { ExprValue v = {0, i, 0}; return v; }
static ExprValue vflt(double f) { ExprValue v = {1, 0, f}; return v; }

static int eerr(EvalCtx *c, const Node *n, const char *what)
{
    return err_set(c->err, "column %d: %s", n->col, what);
}

static int eval_node(EvalCtx *c, int idx, ExprValue *out);

static int fcheck(EvalCtx *c, const Node *n, double f, ExprValue *out)
{
    if (!isfinite(f))
        return eerr(c, n, "float result is not finite");
    *out = vflt(f);
    return 0;
}

static int eval_arith(EvalCtx *c, const Node *n, ExprValue a, ExprValue b, ExprValue *out)
{
    if (!a.is_float && !b.is_float) {
        int64_t x = a.i, y = b.i, r;
        switch (n->op) {
        case OP_ADD: if (__builtin_add_overflow(x, y, &r)) return eerr(c, n, "integer overflow"); break;
        case OP_SUB: if (__builtin_sub_overflow(x, y, &r)) return eerr(c, n, "integer overflow"); break;
        case OP_MUL: if (__builtin_mul_overflow(x, y, &r)) return eerr(c, n, "integer overflow"); break;
        case OP_DIV:
            if (y == 0)
                return eerr(c, n, "division by zero");
            if (x == INT64_MIN && y == -1)
                return eerr(c, n, "integer overflow");
            r = x / y;
            break;
        default: /* OP_MOD */
            if (y == 0)
                return eerr(c, n, "division by zero");
            r = y == -1 ? 0 : x % y;
            break;
        }
        *out = vint(r);
        return 0;
    }
    double x = expr_value_f(a), y = expr_value_f(b);
    switch (n->op) {
    case OP_ADD: return fcheck(c, n, x + y, out);
    case OP_SUB: return fcheck(c, n, x - y, out);
    case OP_MUL: return fcheck(c, n, x * y, out);
    case OP_DIV:
        if (y == 0.0)
            return eerr(c, n, "division by zero");
        return fcheck(c, n, x / y, out);
    default:
        if (y == 0.0)
            return eerr(c, n, "division by zero");
        return fcheck(c, n, fmod(x, y), out);
    }
}

static int compare(int op, ExprValue a, ExprValue b)
{
    int cmp;
    if (!a.is_float && !b.is_float)
        cmp = a.i < b.i ? -1 : a.i > b.i;
    else {
        double x = expr_value_f(a), y = expr_value_f(b);
        cmp = x < y ? -1 : x > y;
    }
    switch (op) {
    case OP_LT: return cmp < 0;
    case OP_LE: return cmp <= 0;
    case OP_GT: return cmp > 0;
    case OP_GE: return cmp >= 0;
    case OP_EQ: return cmp == 0;
    default:    return cmp != 0;
    }
}

/* A call on its evaluated arguments (b: 0 for a one-argument call). */
static int apply_call(EvalCtx *c, const Node *n, ExprValue a, ExprValue b, ExprValue *out)
{
    int both_int = !a.is_float && !b.is_float;
    switch (n->op) {
    case F_MIN:
    case F_MAX: {
        int take_a = compare(n->op == F_MIN ? OP_LE : OP_GE, a, b);
        ExprValue r = take_a ? a : b;
        *out = both_int ? r : vflt(expr_value_f(r));
        return 0;
    }
    case F_CEIL_DIV:
        if (both_int) {
            if (b.i == 0)
                return eerr(c, n, "division by zero in ceil_div");
            if (a.i == INT64_MIN && b.i == -1)
                return eerr(c, n, "integer overflow");
            int64_t q = a.i / b.i, r = a.i % b.i;
            if (r != 0 && ((r < 0) == (b.i < 0)))
                q++;
            *out = vint(q);
            return 0;
        }
        if (expr_value_f(b) == 0.0)
            return eerr(c, n, "division by zero in ceil_div");
        return fcheck(c, n, ceil(expr_value_f(a) / expr_value_f(b)), out);
    default: /* F_SQRT */
        if (expr_value_f(a) < 0)
            return eerr(c, n, "sqrt of a negative number");
        return fcheck(c, n, sqrt(expr_value_f(a)), out);
    }
}

static int apply_neg(EvalCtx *c, const Node *n, ExprValue a, ExprValue *out)
{
    if (a.is_float)
        *out = vflt(-a.f);
    else if (a.i == INT64_MIN)
        return eerr(c, n, "integer overflow");
    else
        *out = vint(-a.i);
    return 0;
}

/* A binary operator other than && and || on its evaluated operands. */
static int apply_bin(EvalCtx *c, const Node *n, ExprValue a, ExprValue b, ExprValue *out)
{
    if (n->op >= OP_LT) {
        *out = vint(compare(n->op, a, b));
        return 0;
    }
    return eval_arith(c, n, a, b, out);
}

static int eval_node(EvalCtx *c, int idx, ExprValue *out)
{
    const Node *n = &c->e->nodes[idx];
    ExprValue a, b;
    switch (n->kind) {
    case N_INT:
        *out = vint(n->i);
        return 0;
    case N_FLT:
        *out = vflt(n->f);
        return 0;
    case N_VAR: {
        const char *name = c->e->vars[n->var].name;
        char what[160];
        int found = c->slots ? c->slots(c->ctx, c->e->vars[n->var].slot, out)
                  : c->lookup ? c->lookup(c->ctx, name, out) : 0;
        if (found != 1) {
            snprintf(what, sizeof(what), "unknown variable '%.100s'", name);
            return eerr(c, n, what);
        }
        if (out->is_float && !isfinite(out->f)) {
            snprintf(what, sizeof(what), "variable '%.100s' is not finite", name);
            return eerr(c, n, what);
        }
        return 0;
    }
    case N_NEG:
        if (eval_node(c, n->a, &a) < 0)
            return -1;
        return apply_neg(c, n, a, out);
    case N_NOT:
        if (eval_node(c, n->a, &a) < 0)
            return -1;
        *out = vint(!expr_value_true(a));
        return 0;
    case N_CALL:
        b = vint(0);
        if (eval_node(c, n->a, &a) < 0 || (n->b >= 0 && eval_node(c, n->b, &b) < 0))
            return -1;
        return apply_call(c, n, a, b, out);
    default: /* N_BIN */
        if (eval_node(c, n->a, &a) < 0)
            return -1;
        if (n->op == OP_AND || n->op == OP_OR) {
            int ta = expr_value_true(a);
            if (n->op == OP_AND ? !ta : ta) {
                *out = vint(ta);
                return 0;
            }
            if (eval_node(c, n->b, &b) < 0)
                return -1;
            *out = vint(expr_value_true(b));
            return 0;
        }
        if (eval_node(c, n->b, &b) < 0)
            return -1;
        return apply_bin(c, n, a, b, out);
    }
}

int expr_eval(const Expr *e, ExprLookup lookup, void *ctx, ExprValue *out, EvoErr *err)
{
    EvalCtx c = {e, lookup, NULL, ctx, err};
    return eval_node(&c, e->root, out);
}

int expr_eval_slots(const Expr *e, ExprSlotLookup lookup, void *ctx, ExprValue *out, EvoErr *err)
{
    EvalCtx c = {e, NULL, lookup, ctx, err};
    return eval_node(&c, e->root, out);
}

/* ---- partial evaluation ------------------------------------------------ */

/* 1 with *out when node idx has that value (or fails) whatever the unknown
 * variables hold, else 0. c->err is NULL: failures only make it unknown. */
static int peval_node(EvalCtx *c, int idx, ExprValue *out)
{
    const Node *n = &c->e->nodes[idx];
    ExprValue a, b = vint(0);
    int ka, kb;
    switch (n->kind) {
    case N_INT:
    case N_FLT:
        return eval_node(c, idx, out) == 0;
    case N_VAR: /* unknown: no message to format */
        if (c->slots(c->ctx, c->e->vars[n->var].slot, out) != 1)
            return 0;
        return !out->is_float || isfinite(out->f);
    case N_NEG:
        return peval_node(c, n->a, &a) && apply_neg(c, n, a, out) == 0;
    case N_NOT:
        if (!peval_node(c, n->a, &a))
            return 0;
        *out = vint(!expr_value_true(a));
        return 1;
    case N_CALL:
        ka = peval_node(c, n->a, &a);
        kb = n->b < 0 || peval_node(c, n->b, &b);
        return ka && kb && apply_call(c, n, a, b, out) == 0;
    default: /* N_BIN */
        ka = peval_node(c, n->a, &a);
        if (n->op == OP_AND || n->op == OP_OR) {
            /* decided by a known side that short-circuits: a false
             * operand of && (a true one of ||), on either side; when the
             * left side is unknown, the right's value stands for every
             * completion where the left does not already decide */
            int stop = n->op == OP_OR;
            if (ka && expr_value_true(a) == stop) {
                *out = vint(stop);
                return 1;
            }
            kb = peval_node(c, n->b, &b);
            if (kb && (ka || expr_value_true(b) == stop)) {
                *out = vint(expr_value_true(b));
                return 1;
            }
            return 0;
        }
        kb = peval_node(c, n->b, &b);
        return ka && kb && apply_bin(c, n, a, b, out) == 0;
    }
}

int expr_eval_partial(const Expr *e, ExprSlotLookup lookup, void *ctx, ExprValue *out)
{
    EvalCtx c = {e, NULL, lookup, ctx, NULL};
    return peval_node(&c, e->root, out);
}

void expr_set_slot(Expr *e, int i, int slot)
{
    if (i >= 0 && i < e->nvars)
        e->vars[i].slot = slot;
}

int expr_eval_string(const char *text, ExprLookup lookup, void *ctx, ExprValue *out, EvoErr *err)
{
    Expr *e = NULL;
    if (expr_parse(text, &e, err) < 0)
        return -1;
    int rc = expr_eval(e, lookup, ctx, out, err);
    expr_free(&e);
    return rc;
}

/* ---- introspection --------------------------------------------------- */

int expr_nvars(const Expr *e) { return e->nvars; }

const char *expr_var(const Expr *e, int i, int *col)
{
    if (i < 0 || i >= e->nvars)
        return NULL;
    if (col)
        *col = e->vars[i].col;
    return e->vars[i].name;
}

int expr_is_var(const Expr *e, const char **name)
{
    const Node *n = &e->nodes[e->root];
    if (n->kind != N_VAR)
        return 0;
    if (name)
        *name = e->vars[n->var].name;
    return 1;
}

const char *expr_text(const Expr *e) { return e->text; }

char *expr_value_str(ExprValue v, char *buf, size_t size)
{
    if (v.is_float)
        snprintf(buf, size, "%.17g", v.f);
    else
        snprintf(buf, size, "%lld", (long long)v.i);
    return buf;
}

static char *explain(EvalCtx *cp)
{
    EvalCtx c = *cp;
    const Expr *e = c.e;
    const Node *n = &e->nodes[e->root];
    if (n->kind != N_BIN || n->op < OP_LT || n->op > OP_NE)
        return NULL;
    ExprValue a, b;
    if (eval_node(&c, n->a, &a) < 0 || eval_node(&c, n->b, &b) < 0)
        return NULL;
    char x[40], y[40];
    return xasprintf("%s %s %s", expr_value_str(a, x, sizeof(x)), op_text[n->op], expr_value_str(b, y, sizeof(y)));
}

char *expr_explain(const Expr *e, ExprLookup lookup, void *ctx)
{
    EvalCtx c = {e, lookup, NULL, ctx, NULL};
    return explain(&c);
}

char *expr_explain_slots(const Expr *e, ExprSlotLookup lookup, void *ctx)
{
    EvalCtx c = {e, NULL, lookup, ctx, NULL};
    return explain(&c);
}

/* Levenshtein distance, capped: returns limit+1 as soon as it is exceeded
 * (or when the names are too long to bother with). */
static int edit_distance(const char *a, const char *b, int limit)
{
    size_t la = strlen(a), lb = strlen(b);
    if (la > 63 || lb > 63)
        return limit + 1;
    if ((la > lb ? la - lb : lb - la) > (size_t)limit)
        return limit + 1;
    int row[64], prev[64];
    for (size_t j = 0; j <= lb; j++)
        prev[j] = (int)j;
    for (size_t i = 1; i <= la; i++) {
        row[0] = (int)i;
        int best = row[0];
        for (size_t j = 1; j <= lb; j++) {
            int cost = toupper((unsigned char)a[i - 1]) == toupper((unsigned char)b[j - 1]) ? 0 : 1;
            int v = prev[j - 1] + cost;
            if (prev[j] + 1 < v)
                v = prev[j] + 1;
            if (row[j - 1] + 1 < v)
                v = row[j - 1] + 1;
            row[j] = v;
            if (v < best)
                best = v;
        }
        if (best > limit)
            return limit + 1;
        memcpy(prev, row, (lb + 1) * sizeof(int));
    }
    return prev[lb];
}

const char *expr_closest(const char *name, const char *const *cands, int n)
{
    int limit = strlen(name) <= 3 ? 1 : 2;
    const char *best = NULL;
    int bestd = limit + 1;
    for (int i = 0; i < n; i++) {
        if (!cands[i] || strcmp(cands[i], name) == 0)
            continue;
        int d = edit_distance(name, cands[i], limit);
        if (d < bestd) {
            bestd = d;
            best = cands[i];
        }
    }
    return best;
}

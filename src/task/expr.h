/*
 * expr: the small expression language of task specs. Constraints, grid and
 * block sizes, buffer shapes, flops and bytes are all expressions over
 * integer (int64) and floating-point values:
 *
 *   + - * / %   < <= > >= == !=   && || !   ( )   min max ceil_div sqrt
 *
 * Integer arithmetic is checked: overflow, and division or remainder by
 * zero, are errors (float division by zero too). Mixed int/float promotes
 * to float; comparisons and logic give int 0/1; && and || short-circuit.
 * A text is parsed once into an AST (Expr) and evaluated many times with a
 * variable lookup callback, so a constraint checked a million times costs
 * no parsing. Every error names the 1-based column of the offending token:
 * "column 7: expected ')'", "column 3: division by zero".
 */
#ifndef EVO_EXPR_H
#define EVO_EXPR_H

#include <stdint.h>

#include "util.h"

typedef struct Expr Expr;

/* A value: an int64 when !is_float, else a double. */
typedef struct ExprValue {
    int     is_float;
    int64_t i;
    double  f;
} ExprValue;

/* Variable lookup: set *out and return 1 when name is known, return 0 when
 * it is not (the evaluation then fails with "unknown variable 'name'"). */
typedef int (*ExprLookup)(void *ctx, const char *name, ExprValue *out);

/* Parse text into a fresh Expr (*out, freed with expr_free). Returns 0, or
 * -1 with err "column N: <what>" (syntax error, unknown function, wrong
 * argument count, literal out of range, nesting deeper than 200). *out is
 * NULL on failure. */
int expr_parse(const char *text, Expr **out, EvoErr *err);

/* Evaluate e. lookup (may be NULL when e has no variables) resolves
 * variables through ctx. Returns 0 with *out set, or -1 with err
 * "column N: <what>" (unknown variable, division by zero, integer
 * overflow, sqrt of a negative number, non-finite float result). */
int expr_eval(const Expr *e, ExprLookup lookup, void *ctx, ExprValue *out, EvoErr *err);

/* Fast path for hot loops: give each variable occurrence i (see
 * expr_var) an integer slot once, e.g. an index into the caller's table,
 * then evaluate with a lookup by slot instead of by name. The lookup
 * returns 1 and sets *out, or 0 (then "unknown variable"). Occurrences
 * without a slot get -1. */
typedef int (*ExprSlotLookup)(void *ctx, int slot, ExprValue *out);
void expr_set_slot(Expr *e, int i, int slot);
int  expr_eval_slots(const Expr *e, ExprSlotLookup lookup, void *ctx, ExprValue *out, EvoErr *err);

/* Evaluate e as far as the known variables decide it, for cutting a
 * search early: the slot lookup returns 0 for a variable whose value is
 * not known yet. Returns 1 with *out when, whatever values the unknown
 * variables take, e evaluates to *out or fails: && and || are decided by
 * one short-circuiting operand on either side ("WS == 0 || WARPS == 4" is
 * 0 once WS = 1 and WARPS = 2, "A && B" is 0 with B = 0 and A unknown),
 * any other operator needs all its operands known. Returns 0 when the
 * unknown variables decide, or when a known part fails to evaluate (no
 * message: the full evaluation reports it). */
int expr_eval_partial(const Expr *e, ExprSlotLookup lookup, void *ctx, ExprValue *out);

/* Release an Expr and set *e to NULL; safe on NULL and on *e == NULL. */
void expr_free(Expr **e);

/* Parse and evaluate in one go (convenience for one-off use). Same
 * errors as expr_parse and expr_eval. */
int expr_eval_string(const char *text, ExprLookup lookup, void *ctx, ExprValue *out, EvoErr *err);

/* The variables e references, one entry per occurrence in source order:
 * expr_nvars() of them; expr_var() returns the i-th name (owned by e) and
 * its 1-based column in *col (col may be NULL). For load-time validation. */
int         expr_nvars(const Expr *e);
const char *expr_var(const Expr *e, int i, int *col);

/* 1 when e is a bare variable reference (text "X"), with its name in
 * *name (owned by e); else 0. */
int expr_is_var(const Expr *e, const char **name);

/* The original text e was parsed from (owned by e). */
const char *expr_text(const Expr *e);

/* When e's top operator is a comparison, evaluate both sides and return
 * "73728 > 65536" as a fresh string (the operator as written); NULL when
 * e is not a comparison or a side fails to evaluate. For explaining why a
 * constraint fails. */
char *expr_explain(const Expr *e, ExprLookup lookup, void *ctx);
/* The same with a slot lookup (see expr_eval_slots). */
char *expr_explain_slots(const Expr *e, ExprSlotLookup lookup, void *ctx);

/* The candidate closest to name (edit distance at most 2, or 1 for names
 * of 3 characters or fewer; ties: the first), or NULL. cands has n
 * entries; NULL entries are skipped. For "did you mean 'BLOCK_M'?". */
const char *expr_closest(const char *name, const char *const *cands, int n);

/* Format v into buf (integers exactly, floats with %.17g). Returns buf. */
char *expr_value_str(ExprValue v, char *buf, size_t size);

/* v as a double / truthiness (nonzero). */
double expr_value_f(ExprValue v);
int    expr_value_true(ExprValue v);

#endif

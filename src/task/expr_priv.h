/*
 * expr_priv.h: the parsed form of an expression, shared by the parser
 * (expr.c) and the evaluator (expr_eval.c); never included outside
 * src/task/. An Expr is a flat array of nodes; children are indices.
 */
#ifndef EVO_EXPR_PRIV_H
#define EVO_EXPR_PRIV_H

#include "task/expr.h"

enum NodeKind { N_INT, N_FLT, N_VAR, N_NEG, N_NOT, N_BIN, N_CALL };

enum Op {
    OP_ADD = 1, OP_SUB, OP_MUL, OP_DIV, OP_MOD,
    OP_LT, OP_LE, OP_GT, OP_GE, OP_EQ, OP_NE, OP_AND, OP_OR
};

enum Func { F_MIN, F_MAX, F_CEIL_DIV, F_SQRT };

typedef struct Node {
    int     kind;    /* NodeKind */
    int     op;      /* Op for N_BIN, Func for N_CALL */
    int     col;     /* 1-based column of the token */
    int     a, b;    /* children (node indices), -1 when absent */
    int     height;  /* 1 + height of the tallest child */
    int64_t i;       /* N_INT */
    double  f;       /* N_FLT */
    int     var;     /* N_VAR: index into Expr.vars */
} Node;

typedef struct ExprVarRef {
    char *name;
    int   col;
    int   slot;  /* expr_set_slot, -1 when unset */
} ExprVarRef;

struct Expr {
    char       *text;
    Node       *nodes;
    int         nnodes, cap;
    int         root;
    ExprVarRef *vars;
    int         nvars, vcap;
};

#endif

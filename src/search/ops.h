/*
 * ops: the variation operators of the evolutionary search, as const
 * vtables in a NULL-terminated registry (selected by name, dav1d style).
 * Each proposes a child configuration from one or two parent
 * configurations; validity (constraints) and novelty are checked by the
 * loop, not here. The LLM operator (issue 7) plugs in beside these: it
 * proposes a source instead of parameters, so it has its own entry point
 * in the loop, but it is listed here so that weights and names stay in
 * one place.
 */
#ifndef EVO_OPS_H
#define EVO_OPS_H

#include <stdint.h>

#include "task/task.h"
#include "util.h"

typedef struct Operator {
    const char *name;      /* stored in candidates.operator */
    int         nparents;  /* 1 or 2 */
    double      weight;    /* relative chance in the evolve strategy */
    /* Write a child into out (nparams values) from p1 (and p2 when
     * nparents == 2). Returns 0, or -1 when this operator cannot change
     * anything here (e.g. every param has one value). */
    int (*propose)(const Task *t, Rng *rng, const int64_t *p1, const int64_t *p2, int64_t *out);
} Operator;

/* mutate, reset, crossover; NULL-terminated. */
extern const Operator *const ops_registry[];

/* Find an operator by name, or NULL. */
const Operator *ops_find(const char *name);

/* Pick an operator at random by weight (only those with weight > 0;
 * two-parent operators only when allow_two). */
const Operator *ops_pick(Rng *rng, int allow_two);

/* A stronger mutation: n distinct movable params (at most all of them)
 * each move to a neighbouring value, or, with reset set, to a uniformly
 * random different value. Returns 0, or -1 when no param can move. */
int ops_perturb(const Task *t, Rng *rng, const int64_t *p1, int n, int reset, int64_t *out);

/* A uniformly random configuration (each param independently). */
void ops_random(const Task *t, Rng *rng, int64_t *out);

/* Canonical identity of a configuration: "BLOCK_M=64,WARPS=4,..." in
 * param order, plus "@<source hash>" when the kernel source is not the
 * task's template. Fresh string. */
char *ops_params_key(const Task *t, const int64_t *vals, const char *source_hash);

#endif

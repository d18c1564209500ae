/*
 * task_space.c: the exact enumeration of the valid configurations (see
 * task_space.h). Three steps:
 *
 *  1. dependencies: the params each derived value and each constraint
 *     reads, followed through the derived values it names (dims, device
 *     facts and shape values are not params);
 *  2. an order: greedily, the param next that closes the most constraints
 *     (all their params assigned), ties to the one that more open
 *     constraints read; each derived value and constraint is then due at
 *     the level where its last param is assigned (level 0, the root, for
 *     those that read none);
 *  3. a depth-first search over that order: after each value, the derived
 *     values and constraints due at that level are evaluated on every
 *     shape (a TProbe keeps the values of the levels above), and the
 *     branch is cut at the first false constraint. Then each constraint
 *     not yet due that reads the param just assigned is evaluated as far
 *     as the known params decide it (expr_eval_partial): one already false
 *     whatever the others hold cuts the branch too. The attention task's
 *     'WS == 0 || (WARPS == 4 && SWIZZLE == 1 && ...)' reads eleven
 *     params but fails as soon as WS = 1 and WARPS = 2 are assigned; this
 *     cuts its search from 1.9 million nodes to 0.21 million. Unassigned
 *     params hold their defaults, which nothing evaluated fully reads.
 *     An item has the same value on two shapes that agree on every dim it
 *     reads (directly or through derived values), so it is evaluated only
 *     on the first shape of each such group; its value or verdict there
 *     stands for the others. What reads no dim is evaluated once, on shape
 *     0; what reads only D, once a head dim (the attention task: 13 shapes,
 *     2 head dims). The same errors and the same cuts come first, since a
 *     group's first shape is never later than its others.
 *
 * A leaf that survives passes every constraint on every shape with every
 * derived value evaluated: exactly task_check's verdict. An early cut only
 * drops configurations that some constraint rules out.
 */
#include "task/task_space.h"

#include <stdlib.h>
#include <string.h>

#include "task/task.h"
#include "task/task_priv.h"

/* Lists by level: those of level L are item[off[L]] .. item[off[L + 1] - 1],
 * in spec order. Levels run from 0 (the root) to nparams. */
typedef struct Levels {
    int *item;
    int *off;
} Levels;

typedef struct Search {
    const Task    *t;
    TProbe        *probe;
    int64_t       *vals;      /* the configuration being built */
    unsigned char *pknown;    /* per param: assigned */
    unsigned char *dknown;    /* per derived value: evaluated for this branch */
    int           *order;     /* params in search order */
    Levels         derived;   /* derived values due at each level */
    Levels         cons;      /* constraints due at each level */
    Levels         partial;   /* open constraints that read the param of each level */
    int            nshapes;
    int           *drep;      /* per derived value, per shape: the shape evaluated for it */
    int           *crep;      /* per constraint, per shape: likewise */
    uint64_t       max_nodes;
    const int     *stop;      /* nonzero: end now (task_space_enumerate_stop) */
    TaskSpace     *out;
    size_t         cap;       /* room in out->vals, in configurations */
    EvoErr        *err;
} Search;

/* ---- dependencies and order --------------------------------------------- */

/* The flags of an item: one per param it reads, then one per dim (index
 * nparams + the dim's index), so that its value may differ between shapes
 * that differ in that dim. */
#define DEP_ROW(t) ((size_t)(t)->nparams + (size_t)(t)->ndims)

/* OR into dep (DEP_ROW flags) what expression e reads, directly or
 * through the first nderived derived values, whose flags are ddep. */
static void expr_deps(const Task *t, const Expr *e, const unsigned char *ddep, int nderived, unsigned char *dep)
{
    int np = t->nparams;
    for (int i = 0; i < expr_nvars(e); i++) {
        const char *name = expr_var(e, i, NULL);
        int p = tl_param_find(t, name);
        if (p >= 0) {
            dep[p] = 1;
            continue;
        }
        int dim = tl_find_name(t->dim_names, t->ndims, name);
        if (dim >= 0) {
            dep[np + dim] = 1;
            continue;
        }
        for (int d = 0; d < nderived; d++)
            if (strcmp(t->derived[d].name, name) == 0)
                for (size_t k = 0; k < DEP_ROW(t); k++)
                    dep[k] |= ddep[(size_t)d * DEP_ROW(t) + k];
    }
}

/* For n items (flags dep, DEP_ROW each): rep[i * nshapes + s], the first
 * shape that agrees with shape s on every dim item i reads (s itself when
 * none before it does; 0 for an item that reads no dim). Fresh. */
static int *shape_reps(const Task *t, const unsigned char *dep, int n)
{
    int nshapes = task_nshapes(t), np = t->nparams;
    int *rep = xcalloc((size_t)n * (size_t)nshapes + 1, sizeof(int));
    for (int i = 0; i < n; i++) {
        const unsigned char *di = dep + (size_t)i * DEP_ROW(t) + np;
        for (int s = 0; s < nshapes; s++) {
            int r = 0;
            for (; r < s; r++) {
                int k = 0;
                while (k < t->ndims && (!di[k] || task_dim_value(t, r, k) == task_dim_value(t, s, k)))
                    k++;
                if (k == t->ndims)
                    break;
            }
            rep[(size_t)i * (size_t)nshapes + (size_t)s] = r;
        }
    }
    return rep;
}

/* The level of an item reading the params flagged in dep: one past the
 * position of its last param in the order (pos[p]), 0 when none. */
static int due_level(const unsigned char *dep, const int *pos, int np)
{
    int level = 0;
    for (int p = 0; p < np; p++)
        if (dep[p] && pos[p] + 1 > level)
            level = pos[p] + 1;
    return level;
}

/* L from in[l * n + i] (nonzero: item i belongs to level l), levels 0 to
 * np. */
static void levels_build(Levels *L, const unsigned char *in, int n, int np)
{
    size_t total = 0;
    for (size_t k = 0; k < (size_t)(np + 1) * (size_t)n; k++)
        total += in[k] != 0;
    L->item = xcalloc(total + 1, sizeof(int));
    L->off = xcalloc((size_t)np + 2, sizeof(int));
    int m = 0;
    for (int l = 0; l <= np; l++) {
        L->off[l] = m;
        for (int i = 0; i < n; i++)
            if (in[(size_t)l * (size_t)n + (size_t)i])
                L->item[m++] = i;
    }
    L->off[np + 1] = m;
}

/* L: n items (flags dep, DEP_ROW each) at their due levels (pos: the
 * params' positions in the order). Returns their shape_reps. */
static int *levels_due(Levels *L, const Task *t, const unsigned char *dep, int n, const int *pos)
{
    int np = t->nparams;
    unsigned char *in = xcalloc(((size_t)np + 1) * (size_t)n + 1, 1);
    for (int i = 0; i < n; i++)
        in[(size_t)due_level(dep + (size_t)i * DEP_ROW(t), pos, np) * (size_t)n + (size_t)i] = 1;
    levels_build(L, in, n, np);
    free(in);
    return shape_reps(t, dep, n);
}

static void levels_free(Levels *L)
{
    free(L->item);
    free(L->off);
}

/* The order: greedily the param that closes the most open constraints,
 * ties to the one the most open constraints read, then spec order. cdep
 * holds the constraints' flags; pos[p] gets each param's position. */
static void plan_order(Search *S, const unsigned char *cdep, int *pos)
{
    int np = S->t->nparams, nc = S->t->ncons;
    size_t row = DEP_ROW(S->t);
    int *open = xcalloc((size_t)nc + 1, sizeof(int));  /* unassigned params read */
    for (int c = 0; c < nc; c++)
        for (int p = 0; p < np; p++)
            open[c] += cdep[(size_t)c * row + (size_t)p];
    for (int p = 0; p < np; p++)
        pos[p] = -1;
    for (int k = 0; k < np; k++) {
        int best = -1, best_close = -1, best_read = -1;
        for (int p = 0; p < np; p++) {
            if (pos[p] >= 0)
                continue;
            int close = 0, read = 0;
            for (int c = 0; c < nc; c++)
                if (open[c] > 0 && cdep[(size_t)c * row + (size_t)p]) {
                    read++;
                    close += open[c] == 1;
                }
            if (close > best_close || (close == best_close && read > best_read)) {
                best = p;
                best_close = close;
                best_read = read;
            }
        }
        S->order[k] = best;
        pos[best] = k;
        for (int c = 0; c < nc; c++)
            open[c] -= cdep[(size_t)c * row + (size_t)best];
    }
    free(open);
}

/* The order, then what is due and what can be cut early at each level. */
static void plan_search(Search *S)
{
    const Task *t = S->t;
    int np = t->nparams, nd = t->nderived, nc = t->ncons;
    size_t row = DEP_ROW(t), nl = (size_t)np + 1;
    unsigned char *ddep = xcalloc((size_t)nd * row + 1, 1);
    unsigned char *cdep = xcalloc((size_t)nc * row + 1, 1);
    for (int d = 0; d < nd; d++)
        expr_deps(t, t->derived[d].x.e, ddep, d, ddep + (size_t)d * row);
    for (int c = 0; c < nc; c++)
        expr_deps(t, t->cons[c].x.e, ddep, nd, cdep + (size_t)c * row);
    int *pos = xcalloc((size_t)np + 1, sizeof(int));
    plan_order(S, cdep, pos);

    S->nshapes = task_nshapes(t);
    S->drep = levels_due(&S->derived, t, ddep, nd, pos);
    S->crep = levels_due(&S->cons, t, cdep, nc, pos);
    /* an open constraint may be decided early at a level whose param it reads */
    unsigned char *in = xcalloc(nl * (size_t)nc + 1, 1);
    for (int c = 0; c < nc; c++)
        for (int l = 1; l < due_level(cdep + (size_t)c * row, pos, np); l++)
            in[(size_t)l * (size_t)nc + (size_t)c] = cdep[(size_t)c * row + (size_t)S->order[l - 1]];
    levels_build(&S->partial, in, nc, np);
    free(in);
    free(pos);
    free(ddep);
    free(cdep);
}

/* ---- the search ----------------------------------------------------------- */

/* Evaluate what is due at level l on every shape (each item on the first
 * shape of each group of shapes it cannot tell apart, shape_reps), then
 * try to rule out the open constraints that read the param just assigned:
 * 1 when the branch lives on, 0 when a constraint fails, -1 on an
 * evaluation error (S->err). */
static int level_holds(Search *S, int l)
{
    const Levels *D = &S->derived, *C = &S->cons, *P = &S->partial;
    int ns = S->nshapes;
    for (int s = 0; s < ns; s++) {
        for (int i = D->off[l]; i < D->off[l + 1]; i++) {
            int d = D->item[i], r = S->drep[d * ns + s];
            if (r != s)
                tl_probe_derived_copy(S->probe, r, s, d);
            else if (tl_probe_derived(S->probe, s, d, S->err) < 0)
                return -1;
        }
        for (int i = C->off[l]; i < C->off[l + 1]; i++) {
            int c = C->item[i];
            int ok = S->crep[c * ns + s] == s ? tl_probe_constraint(S->probe, s, c, S->err) : 1;
            if (ok <= 0)
                return ok;
        }
    }
    for (int i = P->off[l]; i < P->off[l + 1]; i++) {
        int c = P->item[i];
        for (int s = 0; s < ns; s++)
            if (S->crep[c * ns + s] == s && tl_probe_excluded(S->probe, s, c))
                return 0;
    }
    return 1;
}

/* Append the current configuration to the result. */
static void emit(Search *S)
{
    TaskSpace *o = S->out;
    size_t np = (size_t)o->nparams;
    if (o->count == S->cap) {
        S->cap = S->cap ? 2 * S->cap : 1024;
        o->vals = xrealloc(o->vals, S->cap * np * sizeof(int64_t) + 1);
    }
    memcpy(o->vals + o->count * np, S->vals, np * sizeof(int64_t));
    o->count++;
}

/* Mark what level l makes known (its param, its derived values): on = 1
 * on the way down, 0 on the way back up. */
static void level_mark(Search *S, int l, unsigned char on)
{
    S->pknown[S->order[l - 1]] = on;
    for (int i = S->derived.off[l]; i < S->derived.off[l + 1]; i++)
        S->dknown[S->derived.item[i]] = on;
}

/* Assign the param at depth k (level k + 1) each of its values in turn and
 * search below. Returns 0, TASK_SPACE_TOO_LARGE or -1. */
static int search(Search *S, int k)
{
    const TParam *tp = &S->t->params[S->order[k]];
    int64_t *slot = &S->vals[S->order[k]];
    level_mark(S, k + 1, 1);
    for (int v = 0; v < tp->nvalues; v++) {
        *slot = tp->values[v];
        if (++S->out->nodes > S->max_nodes)
            return TASK_SPACE_TOO_LARGE;
        if (S->stop && !(S->out->nodes & 1023) && __atomic_load_n(S->stop, __ATOMIC_RELAXED))
            return TASK_SPACE_TOO_LARGE;
        int rc = level_holds(S, k + 1);
        if (rc < 0)
            return -1;
        if (rc == 0)
            continue;
        if (k + 1 == S->t->nparams) {
            if (S->out->count == TASK_SPACE_MAX_CONFIGS)
                return TASK_SPACE_TOO_LARGE;
            emit(S);
        } else if ((rc = search(S, k + 1)) != 0)
            return rc;
    }
    *slot = tp->values[tp->def];
    level_mark(S, k + 1, 0);
    return 0;
}

int task_space_enumerate(const Task *t, const DeviceInfo *dev, uint64_t max_nodes, TaskSpace *out, EvoErr *err)
{
    return task_space_enumerate_stop(t, dev, max_nodes, NULL, out, err);
}

int task_space_enumerate_stop(const Task *t, const DeviceInfo *dev, uint64_t max_nodes, const int *stop,
                              TaskSpace *out, EvoErr *err)
{
    int np = t->nparams;
    Search S = {.t = t, .max_nodes = max_nodes ? max_nodes : TASK_SPACE_MAX_NODES, .stop = stop, .out = out,
                .err = err};
    memset(out, 0, sizeof(*out));
    out->nparams = np;
    S.vals = xcalloc((size_t)np + 1, sizeof(int64_t));
    S.pknown = xcalloc((size_t)np + 1, 1);
    S.dknown = xcalloc((size_t)t->nderived + 1, 1);
    S.order = xcalloc((size_t)np + 1, sizeof(int));
    task_defaults(t, S.vals);
    plan_search(&S);
    S.probe = tl_probe_open(t, S.vals, dev);
    tl_probe_known(S.probe, S.pknown, S.dknown);
    for (int i = S.derived.off[0]; i < S.derived.off[1]; i++)
        S.dknown[S.derived.item[i]] = 1;
    int rc = level_holds(&S, 0);
    if (rc == 1 && np == 0)
        emit(&S);
    rc = rc == 1 && np > 0 ? search(&S, 0) : rc < 0 ? -1 : 0;
    if (rc != 0) {
        uint64_t nodes = out->nodes;
        task_space_free(out);
        out->nparams = np;
        out->nodes = nodes;
    }
    tl_probe_close(&S.probe);
    levels_free(&S.derived);
    levels_free(&S.cons);
    levels_free(&S.partial);
    free(S.drep);
    free(S.crep);
    free(S.order);
    free(S.dknown);
    free(S.pknown);
    free(S.vals);
    return rc;
}

void task_space_free(TaskSpace *s)
{
    free(s->vals);
    memset(s, 0, sizeof(*s));
}

/* ---- lookups and sampling ------------------------------------------------- */

const int64_t *task_space_config(const TaskSpace *s, size_t i)
{
    return s->vals + i * (size_t)s->nparams;
}

int64_t task_space_find(const TaskSpace *s, const int64_t *vals)
{
    size_t bytes = (size_t)s->nparams * sizeof(int64_t);
    for (size_t i = 0; i < s->count; i++)
        if (memcmp(task_space_config(s, i), vals, bytes) == 0)
            return (int64_t)i;
    return -1;
}

size_t task_space_sample(const TaskSpace *s, Rng *rng, const int64_t *skip, size_t n, size_t *idx)
{
    /* a partial Fisher-Yates shuffle of the indices, skip moved out first */
    size_t m = s->count;
    size_t *perm = xcalloc(m + 1, sizeof(size_t));
    for (size_t i = 0; i < m; i++)
        perm[i] = i;
    int64_t at = skip ? task_space_find(s, skip) : -1;
    if (at >= 0) {
        perm[at] = perm[m - 1];
        m--;
    }
    if (n > m)
        n = m;
    for (size_t i = 0; i < n; i++) {
        size_t j = i + (size_t)rng_below(rng, m - i);
        size_t x = perm[i];
        perm[i] = perm[j];
        perm[j] = x;
        idx[i] = perm[i];
    }
    free(perm);
    return n;
}

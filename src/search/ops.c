/*
 * ops: mutate, reset and crossover. See ops.h.
 */
#include "search/ops.h"

#include <string.h>

/* Copy p1 to out and list the params that have more than one value
 * (at most 256). Returns how many. */
static int copy_and_list_movable(const Task *t, const int64_t *p1, int64_t *out, int movable[256])
{
    int n = task_nparams(t), nm = 0;
    memcpy(out, p1, (size_t)n * sizeof(*out));
    for (int i = 0; i < n && nm < 256; i++)
        if (task_param_nvalues(t, i) > 1)
            movable[nm++] = i;
    return nm;
}

/* Move param i of out to a neighbouring value in its ordered list. */
static void move_neighbour(const Task *t, Rng *rng, int i, int64_t *out)
{
    int nv = task_param_nvalues(t, i);
    int k = task_param_find(t, i, out[i]);
    if (k < 0)
        k = task_param_default(t, i);
    if (k == 0)
        k = 1;
    else if (k == nv - 1)
        k = nv - 2;
    else
        k += rng_below(rng, 2) ? 1 : -1;
    out[i] = task_param_value(t, i, k);
}

/* Set param i of out to a uniformly random different value. */
static void move_reset(const Task *t, Rng *rng, int i, int64_t *out)
{
    int nv = task_param_nvalues(t, i);
    int cur = task_param_find(t, i, out[i]);
    int k = (int)rng_below(rng, (uint64_t)(nv - 1));
    if (k >= cur && cur >= 0)
        k++;
    out[i] = task_param_value(t, i, k);
}

int ops_perturb(const Task *t, Rng *rng, const int64_t *p1, int n, int reset, int64_t *out)
{
    int movable[256], nm = copy_and_list_movable(t, p1, out, movable);
    if (nm == 0)
        return -1;
    if (n > nm)
        n = nm;
    /* n distinct params: a partial Fisher-Yates shuffle of the movable list */
    for (int c = 0; c < n; c++) {
        int j = c + (int)rng_below(rng, (uint64_t)(nm - c));
        int i = movable[j];
        movable[j] = movable[c];
        movable[c] = i;
        if (reset)
            move_reset(t, rng, i, out);
        else
            move_neighbour(t, rng, i, out);
    }
    return 0;
}

/* Move one or two params to a neighbouring value in their ordered list. */
static int op_mutate(const Task *t, Rng *rng, const int64_t *p1, const int64_t *p2, int64_t *out)
{
    (void)p2;
    int movable[256], nm = copy_and_list_movable(t, p1, out, movable);
    if (nm == 0)
        return -1;
    int changes = nm > 1 && rng_below(rng, 2) ? 2 : 1;
    int first = -1;
    for (int c = 0; c < changes; c++) {
        int i;
        do
            i = movable[rng_below(rng, (uint64_t)nm)];
        while (i == first);
        first = i;
        move_neighbour(t, rng, i, out);
    }
    return 0;
}

/* Set one param to a random different value. */
static int op_reset(const Task *t, Rng *rng, const int64_t *p1, const int64_t *p2, int64_t *out)
{
    (void)p2;
    int movable[256], nm = copy_and_list_movable(t, p1, out, movable);
    if (nm == 0)
        return -1;
    move_reset(t, rng, movable[rng_below(rng, (uint64_t)nm)], out);
    return 0;
}

/* Uniform crossover: each param from either parent. */
static int op_crossover(const Task *t, Rng *rng, const int64_t *p1, const int64_t *p2, int64_t *out)
{
    int n = task_nparams(t);
    for (int i = 0; i < n; i++)
        out[i] = rng_below(rng, 2) ? p2[i] : p1[i];
    return 0;
}

static const Operator op_mutate_vt = {"mutate", 1, 0.5, op_mutate};
static const Operator op_reset_vt = {"reset", 1, 0.2, op_reset};
static const Operator op_crossover_vt = {"crossover", 2, 0.3, op_crossover};

const Operator *const ops_registry[] = {&op_mutate_vt, &op_reset_vt, &op_crossover_vt, NULL};

const Operator *ops_find(const char *name)
{
    for (int i = 0; ops_registry[i]; i++)
        if (strcmp(ops_registry[i]->name, name) == 0)
            return ops_registry[i];
    return NULL;
}

const Operator *ops_pick(Rng *rng, int allow_two)
{
    double total = 0;
    for (int i = 0; ops_registry[i]; i++)
        if (allow_two || ops_registry[i]->nparents == 1)
            total += ops_registry[i]->weight;
    double x = rng_uniform(rng) * total;
    const Operator *last = NULL;
    for (int i = 0; ops_registry[i]; i++) {
        const Operator *o = ops_registry[i];
        if (!allow_two && o->nparents != 1)
            continue;
        last = o;
        if (x < o->weight)
            return o;
        x -= o->weight;
    }
    return last;
}

void ops_random(const Task *t, Rng *rng, int64_t *out)
{
    for (int i = 0; i < task_nparams(t); i++)
        out[i] = task_param_value(t, i, (int)rng_below(rng, (uint64_t)task_param_nvalues(t, i)));
}

char *ops_params_key(const Task *t, const int64_t *vals, const char *source_hash)
{
    StrBuf sb = {0};
    for (int i = 0; i < task_nparams(t); i++)
        sb_printf(&sb, "%s%s=%lld", i ? "," : "", task_param_name(t, i), (long long)vals[i]);
    if (source_hash)
        sb_printf(&sb, "@%.16s", source_hash);
    return sb_take(&sb);
}

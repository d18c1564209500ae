/* space_index: see space_index.h. */
#include "task/space_index.h"

#include <stdlib.h>
#include <string.h>

struct SpaceIndex {
    const TaskSpace *s;
    int              np;
    uint16_t        *vidx;      /* count x np value indices */
    uint32_t        *slots;     /* open addressing: config index + 1, 0 empty */
    size_t           mask;
    uint32_t       **bucket;    /* [param][value]: configs, ascending */
    size_t          *nbucket;   /* [param * maxv + value] */
    int             *boff;      /* per param: its first (param, value) slot */
};

static uint64_t hash_vals(const int64_t *v, int n)
{
    uint64_t h = 0xcbf29ce484222325ULL;
    for (int i = 0; i < n; i++) {
        h ^= (uint64_t)v[i];
        h *= 0x100000001b3ULL;
        h ^= h >> 29;
    }
    return h;
}

int space_index_build(SpaceIndex **out, const Task *t, const TaskSpace *s, EvoErr *err)
{
    *out = NULL;
    int np = s->nparams;
    if (s->count >= UINT32_MAX)
        return err_set(err, "space_index: %zu configurations are too many to index", s->count);
    SpaceIndex *x = xcalloc(1, sizeof(*x));
    x->s = s;
    x->np = np;
    x->vidx = xcalloc(s->count * (size_t)np + 1, sizeof(uint16_t));
    x->boff = xcalloc((size_t)np + 1, sizeof(int));
    int nb = 0;
    for (int i = 0; i < np; i++) {
        x->boff[i] = nb;
        nb += task_param_nvalues(t, i);
    }
    x->boff[np] = nb;
    x->nbucket = xcalloc((size_t)nb + 1, sizeof(size_t));
    x->bucket = xcalloc((size_t)nb + 1, sizeof(uint32_t *));
    for (size_t k = 0; k < s->count; k++) {
        const int64_t *cfg = task_space_config(s, k);
        for (int i = 0; i < np; i++) {
            int f = task_param_find(t, i, cfg[i]);
            if (f < 0 || f > UINT16_MAX) {
                space_index_free(&x);
                return err_set(err, "space_index: configuration %zu holds %lld, not a value of param %d", k,
                               (long long)cfg[i], i);
            }
            x->vidx[k * (size_t)np + (size_t)i] = (uint16_t)f;
            x->nbucket[x->boff[i] + f]++;
        }
    }
    for (int b = 0; b < nb; b++) {
        x->bucket[b] = xcalloc(x->nbucket[b] + 1, sizeof(uint32_t));
        x->nbucket[b] = 0;
    }
    for (size_t k = 0; k < s->count; k++)
        for (int i = 0; i < np; i++) {
            int b = x->boff[i] + x->vidx[k * (size_t)np + (size_t)i];
            x->bucket[b][x->nbucket[b]++] = (uint32_t)k;
        }
    size_t cap = 16;
    while (cap < 2 * s->count)
        cap <<= 1;
    x->mask = cap - 1;
    x->slots = xcalloc(cap, sizeof(uint32_t));
    for (size_t k = 0; k < s->count; k++) {
        size_t h = (size_t)hash_vals(task_space_config(s, k), np) & x->mask;
        while (x->slots[h])
            h = (h + 1) & x->mask;
        x->slots[h] = (uint32_t)k + 1;
    }
    *out = x;
    return 0;
}

void space_index_free(SpaceIndex **px)
{
    SpaceIndex *x = *px;
    if (!x)
        return;
    for (int b = 0; x->boff && b < x->boff[x->np]; b++)
        free(x->bucket[b]);
    free(x->bucket);
    free(x->nbucket);
    free(x->boff);
    free(x->slots);
    free(x->vidx);
    free(x);
    *px = NULL;
}

int64_t space_index_find(const SpaceIndex *x, const int64_t *vals)
{
    size_t h = (size_t)hash_vals(vals, x->np) & x->mask;
    size_t bytes = (size_t)x->np * sizeof(int64_t);
    for (; x->slots[h]; h = (h + 1) & x->mask) {
        size_t k = x->slots[h] - 1;
        if (memcmp(task_space_config(x->s, k), vals, bytes) == 0)
            return (int64_t)k;
    }
    return -1;
}

const uint16_t *space_index_vidx(const SpaceIndex *x, size_t k)
{
    return x->vidx + k * (size_t)x->np;
}

const uint32_t *space_index_bucket(const SpaceIndex *x, int param, int vidx, size_t *n)
{
    int b = x->boff[param] + vidx;
    *n = x->nbucket[b];
    return x->bucket[b];
}

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
    /* every configuration's value indices packed in nw words (0: not
     * packed, too wide): per param a field of its width and a guard bit
     * above it (clear), no field across two words */
    int              nw;
    uint64_t        *pack;      /* count x nw */
    int             *fword, *fshift, *fwidth;   /* per param: its field */
    uint64_t         low[SPACE_NEAR_WORDS], guard[SPACE_NEAR_WORDS];
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

/* Lay out the packed fields (x->nw stays 0 when they need more than
 * SPACE_NEAR_WORDS words) and pack every configuration. */
static void pack_build(SpaceIndex *x, const Task *t)
{
    int np = x->np, w = 0, used = 0;
    x->fword = xcalloc((size_t)np + 1, sizeof(int));
    x->fshift = xcalloc((size_t)np + 1, sizeof(int));
    x->fwidth = xcalloc((size_t)np + 1, sizeof(int));
    for (int i = 0; i < np; i++) {
        int width = 1;
        while ((1 << width) < task_param_nvalues(t, i) && width < 16)
            width++;
        if (used + width + 1 > 64) {
            w++;
            used = 0;
        }
        if (w >= SPACE_NEAR_WORDS)
            return;
        x->fword[i] = w;
        x->fshift[i] = used;
        x->fwidth[i] = width;
        x->low[w] |= 1ULL << used;
        x->guard[w] |= 1ULL << (used + width);
        used += width + 1;
    }
    x->nw = w + 1;
    x->pack = xcalloc(x->s->count * (size_t)x->nw + 1, sizeof(uint64_t));
    for (size_t k = 0; k < x->s->count; k++)
        for (int i = 0; i < np; i++)
            x->pack[k * (size_t)x->nw + (size_t)x->fword[i]] |=
                (uint64_t)x->vidx[k * (size_t)np + (size_t)i] << x->fshift[i];
}

int space_index_build(SpaceIndex **out, const Task *t, const TaskSpace *s, int flags, EvoErr *err)
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
    if (!(flags & SPACE_INDEX_UNPACKED))
        pack_build(x, t);
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
    free(x->pack);
    free(x->fword);
    free(x->fshift);
    free(x->fwidth);
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

void space_index_near_init(const SpaceIndex *x, const int *at, const unsigned char *fix, SpaceNear *q)
{
    memset(q, 0, sizeof(*q));
    q->at = at;
    q->fix = fix;
    for (int i = 0; i < x->np; i++) {
        if (at[i] < 0) {
            if (fix[i])
                q->none = 1;
            else
                q->extra++;
            continue;
        }
        if (!x->nw)
            continue;
        int w = x->fword[i], sh = x->fshift[i];
        q->v[w] |= (uint64_t)at[i] << sh;
        if (fix[i])
            q->fixed[w] |= ((1ULL << x->fwidth[i]) - 1) << sh;
        else
            q->free[w] |= 1ULL << (sh + x->fwidth[i]);
    }
}

int space_index_near(const SpaceIndex *x, const SpaceNear *q, size_t k, int maxd)
{
    if (q->none)
        return -1;
    int d = q->extra;
    if (x->nw) {
        const uint64_t *p = x->pack + k * (size_t)x->nw;
        for (int w = 0; w < x->nw; w++)
            if ((p[w] ^ q->v[w]) & q->fixed[w])
                return -1;
        /* a field's guard survives "minus its low bit" exactly when the
         * field is not zero, that is when the values differ */
        for (int w = 0; w < x->nw && d <= maxd; w++)
            d += __builtin_popcountll((((p[w] ^ q->v[w]) | x->guard[w]) - x->low[w]) & q->free[w]);
        return d <= maxd ? d : -1;
    }
    const uint16_t *vi = space_index_vidx(x, k);
    for (int i = 0; i < x->np; i++)
        if (q->at[i] >= 0 && vi[i] != q->at[i]) {
            if (q->fix[i] || ++d > maxd)
                return -1;
        }
    return d <= maxd ? d : -1;
}

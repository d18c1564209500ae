/*
 * resident: bays of resident evaluation state on the worker's GPU. See
 * resident.h for the layout, the keys and the protection.
 */
#include "gpu/resident.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpu/gen.h"

struct Bay {
    char        *key;       /* inputs + reference signature + ref module + seeds */
    char        *in_key;    /* inputs (every profile's generators) only: timing lookups */
    int          ref_id;    /* -1: no reference outputs */
    int          nseeds;
    uint64_t     seeds[RESIDENT_MAX_SEEDS];
    int          nprof;     /* input profiles; variant v = profile * nseeds + seed index */
    int          nvar;
    int          nbuf;
    int          nsets;     /* working sets: 2 per profile */
    CUdeviceptr  block;
    size_t       block_bytes;
    CUdeviceptr *pristine;  /* [v * nbuf + i], inputs only (shared by variants whose generators agree) */
    CUdeviceptr *refout;    /* [v * nbuf + i], reference outputs only */
    size_t      *cap;       /* [i] working capacity, bytes */
    CUdeviceptr *work;      /* [set * nbuf + i] */
    DevRegion   *regions;   /* resident data to protect */
    uint64_t    *digests;   /* their digests when made */
    int          nregions;
    uint64_t     last_use;
    int          dead;      /* dropped; freed at the next resident_begin */
    Bay         *next;
};

struct Resident {
    CudaCtx    *c;
    DevKern    *k;
    Bay        *bays;
    uint64_t    tick;       /* request counter: bays used in this request are pinned */
    uint64_t    budget;     /* bytes */
    CUdeviceptr sums;       /* RESIDENT_MAX_SUMS DevSum */
    DevSum     *host_sums;
    uint64_t    guard_digest;  /* digest of one intact red zone */
    int         verified;   /* 1: a resident_verify completed and no request began since */
};

static size_t round256(size_t n)
{
    return (n + 255) & ~(size_t)255;
}

static size_t buf_bytes(const PlanBuffer *b)
{
    return (size_t)b->count * (size_t)dtype_size(b->dtype);
}

/* ---- life cycle ------------------------------------------------------- */

/* Free a bay's memory, scrubbed first: no later allocation may find the
 * reference outputs (or anything else of it) in recycled memory. */
static void drop_block(Resident *r, Bay *b)
{
    CudaApi *api = r->c->api;
    api->cuMemsetD8Async(b->block, 0xFF, b->block_bytes, r->c->stream);
    api->cuStreamSynchronize(r->c->stream);
    api->cuMemFree(b->block);
    b->block = 0;
    b->block_bytes = 0;
}

static void bay_free(Resident *r, Bay *b)
{
    if (!b)
        return;
    if (b->block)
        drop_block(r, b);
    free(b->key);
    free(b->in_key);
    free(b->pristine);
    free(b->refout);
    free(b->cap);
    free(b->work);
    free(b->regions);
    free(b->digests);
    free(b);
}

int resident_open(Resident **out, CudaCtx *c, EvoErr *err)
{
    CudaApi *api = c->api;
    Resident *r = xcalloc(1, sizeof(*r));
    CUdeviceptr g = 0;
    DevRegion reg;
    *out = NULL;
    r->c = c;
    r->budget = c->info.mem_bytes > 0 ? (uint64_t)c->info.mem_bytes / 4 : (4ull << 30);
    r->host_sums = xcalloc(RESIDENT_MAX_SUMS, sizeof(DevSum));
    if (devkern_open(&r->k, c, err) != 0)
        goto fail;
    EVO_CU(api, api->cuMemAlloc(&r->sums, RESIDENT_MAX_SUMS * sizeof(DevSum)), err);
    /* the digest every intact red zone has */
    EVO_CU(api, api->cuMemAlloc(&g, RESIDENT_GUARD), err);
    EVO_CU(api, api->cuMemsetD16Async(g, (unsigned short)RESIDENT_PATTERN, RESIDENT_GUARD / 2, c->stream), err);
    reg.ptr = g;
    reg.nwords = RESIDENT_GUARD / 2;
    if (devkern_hash(r->k, &reg, 1, &r->guard_digest, NULL, err) != 0)
        goto fail;
    api->cuMemFree(g);
    *out = r;
    return 0;
fail:
    if (g)
        api->cuMemFree(g);
    resident_close(&r);
    return -1;
}

void resident_close(Resident **pr)
{
    Resident *r = pr ? *pr : NULL;
    if (!r)
        return;
    while (r->bays) {
        Bay *b = r->bays;
        r->bays = b->next;
        bay_free(r, b);
    }
    if (r->sums)
        r->c->api->cuMemFree(r->sums);
    devkern_close(&r->k);
    free(r->host_sums);
    free(r);
    *pr = NULL;
}

DevKern *resident_kern(Resident *r)
{
    return r->k;
}

void resident_begin(Resident *r)
{
    Bay **pp = &r->bays;
    r->tick++;
    r->verified = 0;   /* this request may run kernels: what was verified holds no more */
    while (*pp) {
        Bay *b = *pp;
        if (b->dead) {
            *pp = b->next;
            bay_free(r, b);
        } else {
            pp = &b->next;
        }
    }
}

int resident_verified(const Resident *r)
{
    return r->verified;
}

uint64_t resident_bytes(const Resident *r)
{
    uint64_t n = 0;
    for (const Bay *b = r->bays; b; b = b->next)
        n += b->block_bytes;
    return n;
}

int resident_nbays(const Resident *r)
{
    int n = 0;
    for (const Bay *b = r->bays; b; b = b->next)
        n += !b->dead;
    return n;
}

/* ---- keys ------------------------------------------------------------- */

static void sig_init(StrBuf *sb, const InitSpec *s)
{
    sb_printf(sb, ":%d:%.17g:%.17g", (int)s->kind, s->a, s->b);
    if (s->kind == INIT_OUTLIER)
        sb_printf(sb, ":%.17g:%.17g", s->p, s->c);
    if (s->rows != ROWS_NONE)
        sb_printf(sb, ":r%d:%.17g:%.17g:%llu", (int)s->rows, s->ra, s->rb, (unsigned long long)s->row_len);
}

/* Buffer i of p; an input with its generator under every profile. */
static void sig_buffer(StrBuf *sb, const Plan *p, int i, int with_count)
{
    const PlanBuffer *b = &p->buffers[i];
    sb_printf(sb, "%s:%s:%d:%llu", b->name, dtype_name(b->dtype), (int)b->role,
              with_count ? (unsigned long long)b->count : 0ull);
    if (b->role == ROLE_INPUT) {
        sb_printf(sb, ":%llu", (unsigned long long)b->seed_salt);
        for (int k = 0; k < plan_nprofiles(p); k++)
            sig_init(sb, plan_init(p, k, i));
    }
    sb_putc(sb, ';');
}

/* Inputs only: every input buffer with its generators. */
static char *input_key(const Plan *p)
{
    StrBuf sb = {0};
    for (int i = 0; i < p->nbuffers; i++)
        if (p->buffers[i].role == ROLE_INPUT)
            sig_buffer(&sb, p, i, 1);
    return sb_take(&sb);
}

/* Everything the reference reads and writes, the buffer list's shape (so
 * working sets line up by index), the reference module and the seeds. */
static char *gate_key(const Plan *p, int ref_id, const uint64_t *seeds, int nseeds)
{
    StrBuf sb = {0};
    for (int i = 0; i < p->nbuffers; i++) {
        const PlanBuffer *b = &p->buffers[i];
        sig_buffer(&sb, p, i, b->role != ROLE_SCRATCH || b->for_ref);
    }
    sb_printf(&sb, "|ref=%d|", ref_id);
    for (int l = 0; l < p->nref_launches; l++) {
        const PlanLaunch *pl = &p->ref_launches[l];
        sb_printf(&sb, "%s<%u,%u,%u><%u,%u,%u>%u(", pl->entry, pl->grid[0], pl->grid[1], pl->grid[2], pl->block[0],
                  pl->block[1], pl->block[2], pl->smem);
        for (int a = 0; a < pl->nargs; a++) {
            const PlanArg *pa = &pl->args[a];
            if (pa->kind == ARG_BUFFER || pa->kind == ARG_TMAP)
                sb_printf(&sb, "%s,", pa->buffer >= 0 && pa->buffer < p->nbuffers ? p->buffers[pa->buffer].name : "?");
            if (pa->kind == ARG_TMAP)
                for (int d = 0; d < pa->tmap.rank; d++)
                    sb_printf(&sb, "t%llu/%llu/%u/%u,", (unsigned long long)pa->tmap.dims[d],
                              (unsigned long long)(d ? pa->tmap.strides[d - 1] : 0), pa->tmap.box[d],
                              pa->tmap.elem_strides[d]);
            else if (pa->kind == ARG_I32 || pa->kind == ARG_I64)
                sb_printf(&sb, "%d:%lld,", (int)pa->kind, (long long)pa->i);
            else if (pa->kind == ARG_F32 || pa->kind == ARG_F64)
                sb_printf(&sb, "%d:%.17g,", (int)pa->kind, pa->f);
        }
        sb_append(&sb, ")");
    }
    sb_append(&sb, "|seeds=");
    for (int k = 0; k < nseeds; k++)
        sb_printf(&sb, "%llu,", (unsigned long long)seeds[k]);
    return sb_take(&sb);
}

/* ---- making a bay ----------------------------------------------------- */

/* Evict least recently used bays not pinned by this request until `need`
 * more bytes fit in the budget. */
static void evict_for(Resident *r, uint64_t need)
{
    for (;;) {
        uint64_t used = resident_bytes(r);
        Bay *lru = NULL;
        if (used + need <= r->budget)
            return;
        for (Bay *b = r->bays; b; b = b->next)
            if (!b->dead && b->last_use != r->tick && (!lru || b->last_use < lru->last_use))
                lru = b;
        if (!lru)
            return;
        lru->dead = 1;
        drop_block(r, lru);  /* the memory goes now; the record at the next begin */
    }
}

static int init_equal(const InitSpec *x, const InitSpec *y)
{
    return x->kind == y->kind && x->a == y->a && x->b == y->b && x->p == y->p && x->c == y->c && x->rows == y->rows &&
           x->ra == y->ra && x->rb == y->rb && x->row_len == y->row_len;
}

/* The first profile before k whose generator of buffer i is k's, else k:
 * variants of such profiles share their pristine copies. */
static int same_as(const Plan *p, int k, int i)
{
    for (int j = 0; j < k; j++)
        if (init_equal(plan_init(p, j, i), plan_init(p, k, i)))
            return j;
    return k;
}

/* Allocate a bay for plan with working capacities at least min_cap[i]
 * (may be NULL), generate its pristine inputs for every (profile, seed)
 * variant and fill its red zones. No reference yet. */
static int bay_make(Resident *r, const Plan *p, const uint64_t *seeds, int nseeds, const size_t *min_cap, Bay **out,
                    CUresult *cu, EvoErr *err)
{
    CudaApi *api = r->c->api;
    CUstream s = r->c->stream;
    Bay *b = xcalloc(1, sizeof(*b));
    int nb = p->nbuffers > 0 ? p->nbuffers : 1;
    size_t off = 0;
    CUresult rc = CUDA_SUCCESS;
    *out = NULL;
    if (nseeds > RESIDENT_MAX_SEEDS)
        nseeds = RESIDENT_MAX_SEEDS;
    b->nseeds = nseeds;
    memcpy(b->seeds, seeds, (size_t)nseeds * sizeof(*seeds));
    b->nprof = plan_nprofiles(p);
    b->nvar = b->nprof * nseeds;
    b->nsets = 2 * b->nprof;
    b->nbuf = p->nbuffers;
    b->ref_id = -1;
    b->pristine = xcalloc((size_t)b->nvar * (size_t)nb, sizeof(CUdeviceptr));
    b->refout = xcalloc((size_t)b->nvar * (size_t)nb, sizeof(CUdeviceptr));
    b->cap = xcalloc((size_t)nb, sizeof(size_t));
    b->work = xcalloc((size_t)b->nsets * (size_t)nb, sizeof(CUdeviceptr));
    b->regions = xcalloc((size_t)b->nvar * (size_t)nb * 2 + 1, sizeof(DevRegion));
    b->digests = xcalloc((size_t)b->nvar * (size_t)nb * 2 + 1, sizeof(uint64_t));
    /* layout: offsets first, then one allocation */
    for (int v = 0; v < b->nvar; v++)
        for (int i = 0; i < p->nbuffers; i++) {
            int k = v / nseeds, j = same_as(p, k, i);
            if (p->buffers[i].role != ROLE_INPUT)
                continue;
            if (j < k) {
                b->pristine[v * nb + i] = b->pristine[(j * nseeds + v % nseeds) * nb + i];
                continue;
            }
            b->pristine[v * nb + i] = off + 1;  /* offset + 1 until the base is known; 0 = none */
            off += round256(buf_bytes(&p->buffers[i]));
        }
    for (int v = 0; v < b->nvar; v++)
        for (int i = 0; i < p->nbuffers; i++)
            if (p->buffers[i].role == ROLE_OUTPUT && p->buffers[i].for_ref) {
                b->refout[v * nb + i] = off + 1;
                off += round256(buf_bytes(&p->buffers[i]));
            }
    for (int i = 0; i < p->nbuffers; i++) {
        size_t want = buf_bytes(&p->buffers[i]);
        b->cap[i] = round256(min_cap && min_cap[i] > want ? min_cap[i] : want);
    }
    for (int set = 0; set < b->nsets; set++)
        for (int i = 0; i < p->nbuffers; i++) {
            off += RESIDENT_GUARD;
            b->work[set * nb + i] = off + 1;
            off += b->cap[i] + RESIDENT_GUARD;
        }
    b->block_bytes = off > 0 ? off : 256;
    evict_for(r, b->block_bytes);
    if ((rc = api->cuMemAlloc(&b->block, b->block_bytes)) != CUDA_SUCCESS) {
        cuda_check(api, rc, "cuMemAlloc", err);
        err_prefix(err, "resident state of shape '%s' (%.1f MiB)", p->shape_label ? p->shape_label : "?",
                   (double)b->block_bytes / (1 << 20));
        goto fail;
    }
    for (int x = 0; x < b->nvar * nb; x++) {
        if (b->pristine[x])
            b->pristine[x] += b->block - 1;
        if (b->refout[x])
            b->refout[x] += b->block - 1;
    }
    for (int x = 0; x < b->nsets * nb; x++)
        if (x < b->nsets * p->nbuffers)
            b->work[x] += b->block - 1;
    /* red zones: the whole working area gets the pattern; buffers are reset before use */
    if (p->nbuffers > 0) {
        CUdeviceptr w0 = b->work[0] - RESIDENT_GUARD;
        size_t wbytes = b->block + b->block_bytes - w0;
        if ((rc = api->cuMemsetD16Async(w0, (unsigned short)RESIDENT_PATTERN, wbytes / 2, s)) != CUDA_SUCCESS) {
            cuda_check(api, rc, "cuMemsetD16Async(red zones)", err);
            goto fail;
        }
    }
    for (int v = 0; v < b->nvar; v++)
        for (int i = 0; i < p->nbuffers; i++) {
            const PlanBuffer *pb = &p->buffers[i];
            int k = v / nseeds;
            CUdeviceptr d = b->pristine[v * nb + i];
            if (!d || pb->count == 0 || same_as(p, k, i) < k)
                continue;
            if (devkern_fill(r->k, d, pb->count, pb->dtype, plan_init(p, k, i), seeds[v % nseeds], pb->seed_salt,
                             &rc, err) != 0)
                goto fail;
            b->regions[b->nregions].ptr = d;
            b->regions[b->nregions].nwords = buf_bytes(pb) / 2;
            b->nregions++;
        }
    b->in_key = input_key(p);
    *out = b;
    return 0;
fail:
    *cu = rc == CUDA_SUCCESS ? CUDA_ERROR_OUT_OF_MEMORY : rc;
    bay_free(r, b);
    return -1;
}

static void bay_link(Resident *r, Bay *b)
{
    b->last_use = r->tick;
    b->next = r->bays;
    r->bays = b;
}

/* Take the digests of the bay's resident regions (after they are made). */
static int bay_seal(Resident *r, Bay *b, CUresult *cu, EvoErr *err)
{
    return devkern_hash(r->k, b->regions, b->nregions, b->digests, cu, err);
}

int resident_variant(const Bay *b, int profile, uint64_t seed)
{
    if (profile < 0 || profile >= b->nprof)
        return -1;
    for (int k = 0; k < b->nseeds; k++)
        if (b->seeds[k] == seed)
            return profile * b->nseeds + k;
    return -1;
}

int resident_nvariants(const Bay *b)
{
    return b->nvar;
}

uint64_t resident_variant_seed(const Bay *b, int v)
{
    return v >= 0 && v < b->nvar ? b->seeds[v % b->nseeds] : 0;
}

int resident_variant_profile(const Bay *b, int v)
{
    return v >= 0 && v < b->nvar ? v / b->nseeds : -1;
}

int resident_nsets(const Bay *b)
{
    return b->nsets;
}

/* Larger working capacities than the bay has? Fills want[] (max of both). */
static int needs_room(const Bay *b, const Plan *p, size_t *want)
{
    int more = 0;
    for (int i = 0; i < p->nbuffers && i < b->nbuf; i++) {
        size_t n = round256(buf_bytes(&p->buffers[i]));
        want[i] = n > b->cap[i] ? n : b->cap[i];
        more |= n > b->cap[i];
    }
    return more;
}

void resident_plan(const Bay *b, int set, const Plan *plan, CudaPlan *cp)
{
    int nb = plan->nbuffers > 0 ? plan->nbuffers : 1;
    memset(cp, 0, sizeof(*cp));
    cp->plan = plan;
    cp->dptr = xcalloc((size_t)nb, sizeof(*cp->dptr));
    cp->bytes = xcalloc((size_t)nb, sizeof(*cp->bytes));
    if (set < 0 || set >= b->nsets)
        set = 0;
    for (int i = 0; i < plan->nbuffers && i < b->nbuf; i++) {
        cp->bytes[i] = buf_bytes(&plan->buffers[i]);
        cp->dptr[i] = cp->bytes[i] ? b->work[set * b->nbuf + i] : 0;
    }
}

void resident_plan_free(CudaPlan *cp)
{
    free(cp->dptr);
    free(cp->bytes);
    memset(cp, 0, sizeof(*cp));
}

CUdeviceptr resident_pristine(const Bay *b, int v, int i)
{
    return v >= 0 && v < b->nvar && i >= 0 && i < b->nbuf ? b->pristine[v * b->nbuf + i] : 0;
}

CUdeviceptr resident_reference(const Bay *b, int v, int i)
{
    return v >= 0 && v < b->nvar && i >= 0 && i < b->nbuf && b->ref_id >= 0 ? b->refout[v * b->nbuf + i] : 0;
}

int resident_reset(Resident *r, const Bay *b, int set, int v, const Plan *plan, int which, CUresult *cu,
                   EvoErr *err)
{
    CudaApi *api = r->c->api;
    CUstream s = r->c->stream;
    if (set < 0 || set >= b->nsets || v < 0 || v >= b->nvar) {
        *cu = CUDA_SUCCESS;
        return err_set(err, "resident: working set %d or variant %d out of range", set, v);
    }
    for (int i = 0; i < plan->nbuffers && i < b->nbuf; i++) {
        const PlanBuffer *pb = &plan->buffers[i];
        CUdeviceptr d = b->work[set * b->nbuf + i];
        size_t bytes = buf_bytes(pb);
        CUresult rc = CUDA_SUCCESS;
        if (bytes == 0 || !(which ? pb->for_ref : pb->for_cand))
            continue;
        if (pb->role == ROLE_INPUT)
            rc = api->cuMemcpyDtoDAsync(d, b->pristine[v * b->nbuf + i], bytes, s);
        else if (pb->role == ROLE_SCRATCH)
            rc = api->cuMemsetD8Async(d, 0, bytes, s);
        else if (pb->dtype == DT_F16 || pb->dtype == DT_BF16)
            rc = api->cuMemsetD16Async(d, (unsigned short)GATE_SENTINEL_F16, pb->count, s);
        else
            rc = api->cuMemsetD32Async(d, pb->dtype == DT_F32 ? GATE_SENTINEL_F32 : GATE_SENTINEL_I32, pb->count, s);
        if (rc != CUDA_SUCCESS) {
            *cu = rc;
            cuda_check(api, rc, pb->role == ROLE_INPUT ? "cuMemcpyDtoDAsync" : "cuMemsetAsync", err);
            return err_prefix(err, "buffer '%s'", pb->name);
        }
    }
    *cu = CUDA_SUCCESS;
    return 0;
}

/* ---- summaries -------------------------------------------------------- */

int resident_sums_reset(Resident *r, int n, CUdeviceptr *base, CUresult *cu, EvoErr *err)
{
    if (n > RESIDENT_MAX_SUMS)
        return err_set(err, "resident: %d summaries asked, at most %d", n, RESIDENT_MAX_SUMS);
    *cu = r->c->api->cuMemsetD8Async(r->sums, 0, (size_t)(n > 0 ? n : 1) * sizeof(DevSum), r->c->stream);
    if (*cu != CUDA_SUCCESS)
        return cuda_check(r->c->api, *cu, "cuMemsetD8Async(summaries)", err);
    *base = r->sums;
    return 0;
}

int resident_sums_read(Resident *r, int n, const DevSum **host, CUresult *cu, EvoErr *err)
{
    CudaApi *api = r->c->api;
    if ((*cu = api->cuMemcpyDtoHAsync(r->host_sums, r->sums, (size_t)(n > 0 ? n : 1) * sizeof(DevSum),
                                      r->c->stream)) != CUDA_SUCCESS ||
        (*cu = api->cuStreamSynchronize(r->c->stream)) != CUDA_SUCCESS)
        return cuda_check(api, *cu, "cuStreamSynchronize", err);
    *host = r->host_sums;
    return 0;
}

/* ---- the reference ---------------------------------------------------- */

/* Run the reference of plan for every variant of bay b on its working set A,
 * check its outputs complete and finite, and keep them. 0 ok, 1 verdict in
 * rep, -1 internal (err). */
static int bay_reference(Resident *r, Bay *b, const Plan *p, CUmodule ref, int ref_id, GateReport *rep, CUresult *cu,
                         EvoErr *err)
{
    CudaApi *api = r->c->api;
    CUstream s = r->c->stream;
    CudaPlan cp;
    CudaLaunches rl = {0};
    CUevent e0 = NULL, e1 = NULL;
    CUdeviceptr sums = 0;
    const DevSum *hs = NULL;
    int nb = b->nbuf, rc = -1, nsum = 0;
    EvoErr e = {{0}};
    float ms = 0;

    resident_plan(b, 0, p, &cp);
    *cu = CUDA_SUCCESS;
    if (cuda_launches_prepare(r->c, &cp, ref, p->ref_launches, p->nref_launches, &rl, cu, &e) != 0)
        goto ref_failed;
    if ((*cu = api->cuEventCreate(&e0, CU_EVENT_DEFAULT)) != CUDA_SUCCESS ||
        (*cu = api->cuEventCreate(&e1, CU_EVENT_DEFAULT)) != CUDA_SUCCESS) {
        cuda_check(api, *cu, "cuEventCreate", err);
        goto out;
    }
    if (resident_sums_reset(r, b->nvar * nb, &sums, cu, err) != 0)
        goto out;
    for (int k = 0; k < b->nvar; k++) {
        if (resident_reset(r, b, 0, k, p, 1, cu, &e) != 0)
            goto ref_failed;
        if (k == 0 && (*cu = api->cuEventRecord(e0, s)) != CUDA_SUCCESS)
            goto ref_failed;
        if (cuda_launches_run(r->c, &rl, cu, &e) != 0)
            goto ref_failed;
        if (k == 0 && (*cu = api->cuEventRecord(e1, s)) != CUDA_SUCCESS)
            goto ref_failed;
        for (int i = 0; i < p->nbuffers; i++) {
            const PlanBuffer *pb = &p->buffers[i];
            CUdeviceptr dst = b->refout[k * nb + i];
            if (!dst || pb->count == 0)
                continue;
            /* complete and finite: compared with itself at zero tolerance */
            if (devkern_compare(r->k, cp.dptr[i], cp.dptr[i], pb->count, pb->dtype, 0, 0,
                                sums + (CUdeviceptr)((k * nb + i) * sizeof(DevSum)), cu, &e) != 0 ||
                (*cu = api->cuMemcpyDtoDAsync(dst, cp.dptr[i], buf_bytes(pb), s)) != CUDA_SUCCESS)
                goto ref_failed;
        }
    }
    nsum = b->nvar * nb;
    if (resident_sums_read(r, nsum, &hs, cu, &e) != 0)
        goto ref_failed;
    api->EventElapsedTime(&ms, e0, e1);
    rep->ref_ms = ms;
    for (int x = 0; x < nsum; x++) {
        const PlanBuffer *pb = &p->buffers[x % nb];
        if (!b->refout[x] || (!hs[x].nunwritten && !hs[x].nnan))
            continue;
        rep->status = EVAL_INVALID;
        snprintf(rep->check, sizeof(rep->check), "reference");
        snprintf(rep->buffer, sizeof(rep->buffer), "%s", pb->name);
        rep->seed = resident_variant_seed(b, x / nb);
        snprintf(rep->profile, sizeof(rep->profile), "%s", plan_profile_name(p, resident_variant_profile(b, x / nb)));
        snprintf(rep->error, sizeof(rep->error), "the reference's output '%s' has %llu unwritten and %llu NaN/Inf elements",
                 pb->name, (unsigned long long)hs[x].nunwritten, (unsigned long long)hs[x].nnan);
        rc = 1;
        goto out;
    }
    /* the reference outputs join the protected regions */
    for (int k = 0; k < b->nvar; k++)
        for (int i = 0; i < p->nbuffers; i++)
            if (b->refout[k * nb + i] && p->buffers[i].count) {
                b->regions[b->nregions].ptr = b->refout[k * nb + i];
                b->regions[b->nregions].nwords = buf_bytes(&p->buffers[i]) / 2;
                b->nregions++;
            }
    b->ref_id = ref_id;
    rc = 0;
    goto out;
ref_failed:
    /* the reference is broken (or the context died): not the candidate's fault */
    rep->status = *cu == CUDA_SUCCESS ? EVAL_INVALID : gate_status_from_cuda(*cu);
    rep->fatal = cuda_error_is_sticky(*cu);
    if (rep->status != EVAL_CRASHED)
        rep->status = EVAL_INVALID;
    snprintf(rep->cuda_error, sizeof(rep->cuda_error), "%s", *cu == CUDA_SUCCESS ? "" : cuda_error_name(api, *cu));
    snprintf(rep->error, sizeof(rep->error), "reference: %s", e.msg);
    rc = 1;
out:
    if (e0)
        api->cuEventDestroy(e0);
    if (e1)
        api->cuEventDestroy(e1);
    cuda_launches_free(&rl);
    resident_plan_free(&cp);
    return rc;
}

/* ---- lookups ---------------------------------------------------------- */

int resident_bay_gate(Resident *r, const Plan *plan, CUmodule ref, int ref_id, const uint64_t *seeds, int nseeds,
                      Bay **out, GateReport *rep, CUresult *cu, EvoErr *err)
{
    char *key = gate_key(plan, ref_id, seeds, nseeds);
    size_t *want = xcalloc((size_t)(plan->nbuffers > 0 ? plan->nbuffers : 1), sizeof(size_t));
    Bay *b = NULL;
    int rc;
    *out = NULL;
    *cu = CUDA_SUCCESS;
    for (b = r->bays; b; b = b->next)
        if (!b->dead && b->key && strcmp(b->key, key) == 0)
            break;
    if (b && !needs_room(b, plan, want)) {
        b->last_use = r->tick;
        *out = b;
        free(key);
        free(want);
        return 0;
    }
    if (b) {
        b->dead = 1;            /* too small: made again, larger */
        drop_block(r, b);
    }
    if (bay_make(r, plan, seeds, nseeds, b ? want : NULL, &b, cu, err) != 0) {
        free(key);
        free(want);
        return -1;
    }
    free(want);
    b->key = key;
    rc = bay_reference(r, b, plan, ref, ref_id, rep, cu, err);
    if (rc == 0 && bay_seal(r, b, cu, err) != 0)
        rc = -1;
    if (rc != 0) {
        bay_free(r, b);
        return rc;
    }
    bay_link(r, b);
    *out = b;
    return 0;
}

int resident_bay_time(Resident *r, const Plan *plan, int profile, uint64_t seed, Bay **out, CUresult *cu,
                      EvoErr *err)
{
    char *ikey = input_key(plan);
    size_t *want = xcalloc((size_t)(plan->nbuffers > 0 ? plan->nbuffers : 1), sizeof(size_t));
    Bay *b;
    *cu = CUDA_SUCCESS;
    *out = NULL;
    for (b = r->bays; b; b = b->next)
        if (!b->dead && b->nbuf == plan->nbuffers && strcmp(b->in_key, ikey) == 0 &&
            resident_variant(b, profile, seed) >= 0 && !needs_room(b, plan, want))
            break;
    free(ikey);
    free(want);
    if (!b) {
        if (bay_make(r, plan, &seed, 1, NULL, &b, cu, err) != 0 || bay_seal(r, b, cu, err) != 0) {
            bay_free(r, b);
            return -1;
        }
        bay_link(r, b);
    }
    b->last_use = r->tick;
    *out = b;
    return 0;
}

/* ---- protection ------------------------------------------------------- */

int resident_verify(Resident *r, int *resident_bad, int *guard_bad, char *where, size_t cap, CUresult *cu,
                    EvoErr *err)
{
    int n = 0, at = 0;
    DevRegion *regs;
    uint64_t *dig;
    *resident_bad = *guard_bad = 0;
    if (where && cap)
        where[0] = 0;
    for (Bay *b = r->bays; b; b = b->next)
        if (!b->dead)
            n += b->nregions + 2 * b->nsets * b->nbuf;
    regs = xcalloc((size_t)n + 1, sizeof(*regs));
    dig = xcalloc((size_t)n + 1, sizeof(*dig));
    for (Bay *b = r->bays; b; b = b->next) {
        if (b->dead)
            continue;
        memcpy(regs + at, b->regions, (size_t)b->nregions * sizeof(*regs));
        at += b->nregions;
        for (int set = 0; set < b->nsets; set++)
            for (int i = 0; i < b->nbuf; i++) {
                regs[at].ptr = b->work[set * b->nbuf + i] - RESIDENT_GUARD;
                regs[at++].nwords = RESIDENT_GUARD / 2;
                regs[at].ptr = b->work[set * b->nbuf + i] + b->cap[i];
                regs[at++].nwords = RESIDENT_GUARD / 2;
            }
    }
    if (devkern_hash(r->k, regs, n, dig, cu, err) != 0) {
        free(regs);
        free(dig);
        return -1;
    }
    at = 0;
    for (Bay *b = r->bays; b; b = b->next) {
        int bad = 0;
        if (b->dead)
            continue;
        for (int x = 0; x < b->nregions; x++)
            bad |= dig[at + x] != b->digests[x];
        at += b->nregions;
        for (int set = 0; set < b->nsets; set++)
            for (int i = 0; i < b->nbuf; i++)
                for (int side = 0; side < 2; side++, at++) {
                    if (dig[at] == r->guard_digest)
                        continue;
                    if (!*guard_bad && where && cap)
                        snprintf(where, cap, "the red zone %s working buffer %d of set %d", side ? "after" : "before",
                                 i, set);
                    ++*guard_bad;
                    r->c->api->cuMemsetD16Async(regs[at].ptr, (unsigned short)RESIDENT_PATTERN, RESIDENT_GUARD / 2,
                                                r->c->stream);
                }
        if (bad) {
            ++*resident_bad;
            b->dead = 1;
        }
    }
    free(regs);
    free(dig);
    r->verified = 1;
    *cu = CUDA_SUCCESS;
    return 0;
}

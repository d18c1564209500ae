/*
 * gate: correctness gate. Host math (generation, sentinels, comparison,
 * checksums) first, then the device routine that runs inside the worker.
 * See gate.h for the checks and their order.
 */
#include "gate.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proto.h"

/* ---- statuses --------------------------------------------------------- */

static const char *const status_names[EVAL_NSTATUS] = {
    "ok", "incorrect", "crashed", "timeout", "launch_error", "resource", "compile_error", "invalid",
};

const char *gate_status_name(EvalStatus s)
{
    return (unsigned)s < EVAL_NSTATUS ? status_names[s] : "?";
}

int gate_status_parse(const char *name)
{
    for (int i = 0; name && i < EVAL_NSTATUS; i++)
        if (strcmp(name, status_names[i]) == 0)
            return i;
    return -1;
}

EvalStatus gate_status_from_cuda(CUresult r)
{
    if (cuda_error_is_sticky(r))
        return EVAL_CRASHED;
    if (r == CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES || r == CUDA_ERROR_OUT_OF_MEMORY)
        return EVAL_RESOURCE;
    return EVAL_LAUNCH_ERROR;
}

/* ---- half conversions ------------------------------------------------- */

uint16_t gate_f32_to_f16(float f)
{
    uint32_t x, sign, exp, mant, h, rem, mid;
    int e;
    memcpy(&x, &f, 4);
    sign = (x >> 16) & 0x8000u;
    exp = (x >> 23) & 0xffu;
    mant = x & 0x7fffffu;
    if (exp == 0xff)
        return (uint16_t)(sign | 0x7c00u | (mant ? 0x200u : 0));
    e = (int)exp - 127 + 15;
    if (e >= 31)
        return (uint16_t)(sign | 0x7c00u);
    if (e <= 0) {
        int shift = 14 - e;
        if (shift > 24)
            return (uint16_t)sign;
        mant |= 0x800000u;
        h = mant >> shift;
        rem = mant & ((1u << shift) - 1);
        mid = 1u << (shift - 1);
        if (rem > mid || (rem == mid && (h & 1)))
            h++;
        return (uint16_t)(sign | h);
    }
    h = ((uint32_t)e << 10) | (mant >> 13);
    rem = mant & 0x1fffu;
    if (rem > 0x1000u || (rem == 0x1000u && (h & 1)))
        h++; /* a carry into the exponent is the right answer, up to inf */
    return (uint16_t)(sign | h);
}

float gate_f16_to_f32(uint16_t h)
{
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16, exp = (h >> 10) & 0x1fu, mant = h & 0x3ffu, x;
    float f;
    if (exp == 0) {
        f = ldexpf((float)mant, -24);
        return sign ? -f : f;
    }
    if (exp == 31)
        x = sign | 0x7f800000u | (mant << 13);
    else
        x = sign | ((exp - 15 + 127) << 23) | (mant << 13);
    memcpy(&f, &x, 4);
    return f;
}

uint16_t gate_f32_to_bf16(float f)
{
    uint32_t x;
    memcpy(&x, &f, 4);
    if ((x & 0x7f800000u) == 0x7f800000u && (x & 0x7fffffu))
        return (uint16_t)((x >> 16) | 0x40u);
    x += 0x7fffu + ((x >> 16) & 1u);
    return (uint16_t)(x >> 16);
}

float gate_bf16_to_f32(uint16_t h)
{
    uint32_t x = (uint32_t)h << 16;
    float f;
    memcpy(&f, &x, 4);
    return f;
}

double gate_load(DType t, const void *buf, uint64_t i)
{
    switch (t) {
    case DT_F16: return gate_f16_to_f32(((const uint16_t *)buf)[i]);
    case DT_BF16: return gate_bf16_to_f32(((const uint16_t *)buf)[i]);
    case DT_F32: return ((const float *)buf)[i];
    case DT_I32: return ((const int32_t *)buf)[i];
    }
    return 0;
}

static void store_val(DType t, void *buf, uint64_t i, double v)
{
    switch (t) {
    case DT_F16: ((uint16_t *)buf)[i] = gate_f32_to_f16((float)v); break;
    case DT_BF16: ((uint16_t *)buf)[i] = gate_f32_to_bf16((float)v); break;
    case DT_F32: ((float *)buf)[i] = (float)v; break;
    case DT_I32: ((int32_t *)buf)[i] = (int32_t)llround(v); break;
    }
}

/* ---- generation ------------------------------------------------------- */

static uint64_t splitmix64(uint64_t *s)
{
    uint64_t z = (*s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

static double uniform01(uint64_t *s)
{
    return (double)(splitmix64(s) >> 11) * 0x1.0p-53;
}

void gate_fill_host(const PlanBuffer *b, uint64_t seed, void *dst)
{
    uint64_t st = seed * 0xD1B54A32D192ED03ull;
    uint64_t n = b->count;
    st ^= splitmix64(&st) ^ (b->seed_salt * 0x9E3779B97F4A7C15ull + 0x632BE59BD9B4E019ull);
    switch (b->init) {
    case INIT_ZERO:
        memset(dst, 0, n * (uint64_t)dtype_size(b->dtype));
        break;
    case INIT_CONST:
        for (uint64_t i = 0; i < n; i++)
            store_val(b->dtype, dst, i, b->a);
        break;
    case INIT_UNIFORM:
        for (uint64_t i = 0; i < n; i++)
            store_val(b->dtype, dst, i, b->a + (b->b - b->a) * uniform01(&st));
        break;
    case INIT_NORMAL:
        for (uint64_t i = 0; i < n; i += 2) {
            double u1 = 1.0 - uniform01(&st), u2 = uniform01(&st);
            double r = sqrt(-2.0 * log(u1)), th = 6.283185307179586 * u2;
            store_val(b->dtype, dst, i, b->a + b->b * r * cos(th));
            if (i + 1 < n)
                store_val(b->dtype, dst, i + 1, b->a + b->b * r * sin(th));
        }
        break;
    }
}

void gate_fill_sentinel(DType t, void *dst, uint64_t n)
{
    for (uint64_t i = 0; i < n; i++) {
        if (t == DT_F16 || t == DT_BF16)
            ((uint16_t *)dst)[i] = GATE_SENTINEL_F16;
        else if (t == DT_F32)
            ((uint32_t *)dst)[i] = GATE_SENTINEL_F32;
        else
            ((uint32_t *)dst)[i] = GATE_SENTINEL_I32;
    }
}

uint64_t gate_checksum(const void *data, size_t len)
{
    const unsigned char *p = data;
    uint64_t h = 0xcbf29ce484222325ull;
    for (size_t i = 0; i < len; i++) {
        h ^= p[i];
        h *= 0x100000001b3ull;
    }
    return h;
}

/* ---- comparison ------------------------------------------------------- */

static int is_sentinel(DType t, const void *buf, uint64_t i)
{
    if (t == DT_F16 || t == DT_BF16)
        return ((const uint16_t *)buf)[i] == GATE_SENTINEL_F16;
    if (t == DT_F32)
        return ((const uint32_t *)buf)[i] == GATE_SENTINEL_F32;
    return ((const uint32_t *)buf)[i] == GATE_SENTINEL_I32;
}

int gate_compare(DType t, const void *got, const void *ref, uint64_t n, double atol, double rtol, GateCmp *out)
{
    uint64_t nmis = 0;
    memset(out, 0, sizeof(*out));
    out->first_bad = -1;
    for (uint64_t i = 0; i < n; i++) {
        double g = gate_load(t, got, i), r = gate_load(t, ref, i);
        int bad = 0;
        if (isfinite(r) && fabs(r) > out->ref_absmax)
            out->ref_absmax = fabs(r);
        if (is_sentinel(t, got, i)) {
            out->nunwritten++;
            bad = 1;
        } else if (!isfinite(g)) {
            out->nnan++;
            bad = 1;
        } else {
            double d = fabs(g - r);
            if (fabs(g) > out->got_absmax)
                out->got_absmax = fabs(g);
            if (!isfinite(r)) {
                bad = 1;
                nmis++;
            } else {
                if (d > out->max_abs)
                    out->max_abs = d;
                if (r != 0 && d / fabs(r) > out->max_rel)
                    out->max_rel = d / fabs(r);
                if (d > atol + rtol * fabs(r)) {
                    bad = 1;
                    nmis++;
                }
            }
        }
        if (bad) {
            if (out->first_bad < 0) {
                out->first_bad = (int64_t)i;
                out->got = g;
                out->want = r;
            }
            out->nbad++;
        }
    }
    if (out->nunwritten)
        snprintf(out->check, sizeof(out->check), "unwritten");
    else if (out->nnan)
        snprintf(out->check, sizeof(out->check), "nan");
    else if (n > 0 && out->ref_absmax > 10 * atol && out->got_absmax <= atol)
        snprintf(out->check, sizeof(out->check), "zero_output");
    else if (nmis)
        snprintf(out->check, sizeof(out->check), "mismatch");
    else
        snprintf(out->check, sizeof(out->check), "ok");
    return strcmp(out->check, "ok") == 0;
}

/* ---- reports ---------------------------------------------------------- */

void gate_options_default(GateOptions *o)
{
    memset(o, 0, sizeof(*o));
    o->nseeds = 3;
}

json_t *gate_report_to_json(const GateReport *r)
{
    json_t *o = json_object();
    json_object_set_new(o, "status", json_string(gate_status_name(r->status)));
    json_object_set_new(o, "check", json_string(r->check));
    json_object_set_new(o, "error", json_string(r->error));
    json_object_set_new(o, "cuda_error", json_string(r->cuda_error));
    json_object_set_new(o, "shape", json_string(r->shape));
    json_object_set_new(o, "buffer", json_string(r->buffer));
    json_object_set_new(o, "seed", json_integer((json_int_t)r->seed));
    json_object_set_new(o, "run", json_integer(r->run));
    json_object_set_new(o, "max_abs", json_real(r->max_abs));
    json_object_set_new(o, "max_rel", json_real(r->max_rel));
    json_object_set_new(o, "first_bad", json_integer(r->first_bad));
    json_object_set_new(o, "nbad", json_integer((json_int_t)r->nbad));
    json_object_set_new(o, "got", json_real(isfinite(r->got) ? r->got : 0));
    json_object_set_new(o, "want", json_real(isfinite(r->want) ? r->want : 0));
    json_object_set_new(o, "got_nan", json_boolean(!isfinite(r->got)));
    json_object_set_new(o, "cand_ms", json_real(r->cand_ms));
    json_object_set_new(o, "ref_ms", json_real(r->ref_ms));
    json_object_set_new(o, "seeds_run", json_integer(r->seeds_run));
    json_object_set_new(o, "fatal", json_boolean(r->fatal));
    return o;
}

void gate_report_from_json(const json_t *j, GateReport *r)
{
    int st = gate_status_parse(proto_get_str(j, "status", ""));
    memset(r, 0, sizeof(*r));
    r->status = st < 0 ? EVAL_INVALID : (EvalStatus)st;
    proto_copy_str(j, "check", r->check, sizeof(r->check));
    proto_copy_str(j, "error", r->error, sizeof(r->error));
    proto_copy_str(j, "cuda_error", r->cuda_error, sizeof(r->cuda_error));
    proto_copy_str(j, "shape", r->shape, sizeof(r->shape));
    proto_copy_str(j, "buffer", r->buffer, sizeof(r->buffer));
    r->seed = (uint64_t)proto_get_int(j, "seed", 0);
    r->run = (int)proto_get_int(j, "run", 0);
    r->max_abs = proto_get_num(j, "max_abs", 0);
    r->max_rel = proto_get_num(j, "max_rel", 0);
    r->first_bad = proto_get_int(j, "first_bad", -1);
    r->nbad = (uint64_t)proto_get_int(j, "nbad", 0);
    r->got = proto_get_int(j, "got_nan", 0) ? NAN : proto_get_num(j, "got", 0);
    r->want = proto_get_num(j, "want", 0);
    r->cand_ms = proto_get_num(j, "cand_ms", 0);
    r->ref_ms = proto_get_num(j, "ref_ms", 0);
    r->seeds_run = (int)proto_get_int(j, "seeds_run", 0);
    r->fatal = (int)proto_get_int(j, "fatal", 0);
    if (st < 0 && !r->error[0])
        snprintf(r->error, sizeof(r->error), "gate report without a valid status");
}

void gate_report_format(const GateReport *r, char *buf, size_t cap)
{
    if (r->status == EVAL_OK) {
        snprintf(buf, cap, "ok: %d seed%s passed (last shape '%s'); max abs err %.3g, max rel err %.3g; "
                 "candidate %.4f ms, reference %.4f ms", r->seeds_run, r->seeds_run == 1 ? "" : "s", r->shape,
                 r->max_abs, r->max_rel, r->cand_ms, r->ref_ms);
        return;
    }
    if (r->check[0] && r->first_bad >= 0)
        snprintf(buf, cap, "%s: %s in %s (shape '%s', seed %llu, run %d): %llu bad, first at %lld: got %.6g "
                 "want %.6g; max abs err %.3g, max rel err %.3g", gate_status_name(r->status), r->check,
                 r->buffer, r->shape, (unsigned long long)r->seed, r->run, (unsigned long long)r->nbad,
                 (long long)r->first_bad, r->got, r->want, r->max_abs, r->max_rel);
    else
        snprintf(buf, cap, "%s%s%s: %s%s%s (shape '%s', seed %llu)", gate_status_name(r->status),
                 r->check[0] ? ": " : "", r->check, r->error, r->cuda_error[0] ? " " : "", r->cuda_error,
                 r->shape, (unsigned long long)r->seed);
}

/* ---- reference cache -------------------------------------------------- */

typedef struct CacheEntry {
    char   *key;
    int     nbuf;
    void  **out;    /* per buffer: host copy of the reference output, or NULL */
    double  ref_ms;
} CacheEntry;

#define CACHE_CAP 64

struct GateRefCache {
    CacheEntry e[CACHE_CAP];
    int next;       /* FIFO slot to fill next */
};

void gate_cache_open(GateRefCache **out)
{
    *out = xcalloc(1, sizeof(**out));
}

static void entry_free(CacheEntry *e)
{
    for (int i = 0; e->out && i < e->nbuf; i++)
        free(e->out[i]);
    free(e->out);
    free(e->key);
    memset(e, 0, sizeof(*e));
}

void gate_cache_close(GateRefCache **c)
{
    if (!c || !*c)
        return;
    for (int i = 0; i < CACHE_CAP; i++)
        entry_free(&(*c)->e[i]);
    free(*c);
    *c = NULL;
}

static CacheEntry *cache_find(GateRefCache *c, const char *key)
{
    for (int i = 0; c && key && i < CACHE_CAP; i++)
        if (c->e[i].key && strcmp(c->e[i].key, key) == 0)
            return &c->e[i];
    return NULL;
}

/* ---- device routine --------------------------------------------------- */

/* Record a CUDA failure in the report. */
static void rep_cuda(GateReport *rep, CudaCtx *c, CUresult r, const EvoErr *e, const char *what)
{
    rep->status = r == CUDA_SUCCESS ? EVAL_INVALID : gate_status_from_cuda(r);
    rep->fatal = cuda_error_is_sticky(r);
    snprintf(rep->cuda_error, sizeof(rep->cuda_error), "%s", r == CUDA_SUCCESS ? "" : cuda_error_name(c->api, r));
    snprintf(rep->error, sizeof(rep->error), "%s: %s", what, e->msg);
}

static int upload(CudaCtx *c, const CudaPlan *cp, void **host_in, int which, CUresult *cu, EvoErr *err)
{
    CudaApi *api = c->api;
    const Plan *p = cp->plan;
    for (int i = 0; i < p->nbuffers; i++) {
        const PlanBuffer *b = &p->buffers[i];
        CUdeviceptr d = cp->dptr[i];
        CUresult r = CUDA_SUCCESS;
        if (!d || !(which ? b->for_ref : b->for_cand))
            continue;
        if (b->role == ROLE_INPUT)
            r = api->cuMemcpyHtoD(d, host_in[i], cp->bytes[i]);
        else if (b->role == ROLE_SCRATCH)
            r = api->cuMemsetD8(d, 0, cp->bytes[i]);
        else if (b->dtype == DT_F16 || b->dtype == DT_BF16)
            r = api->cuMemsetD16(d, (unsigned short)GATE_SENTINEL_F16, b->count);
        else
            r = api->cuMemsetD32(d, b->dtype == DT_F32 ? GATE_SENTINEL_F32 : GATE_SENTINEL_I32, b->count);
        if (r != CUDA_SUCCESS) {
            *cu = r;
            cuda_check(api, r, b->role == ROLE_INPUT ? "cuMemcpyHtoD" : "cuMemset", err);
            return err_prefix(err, "buffer '%s'", b->name);
        }
    }
    *cu = CUDA_SUCCESS;
    return 0;
}

static void gen_inputs(const Plan *p, uint64_t seed, void **host_in)
{
    for (int i = 0; i < p->nbuffers; i++) {
        const PlanBuffer *b = &p->buffers[i];
        free(host_in[i]);
        host_in[i] = NULL;
        if (b->role != ROLE_INPUT || b->count == 0)
            continue;
        host_in[i] = xmalloc((size_t)b->count * (size_t)dtype_size(b->dtype));
        gate_fill_host(b, seed, host_in[i]);
    }
}

int gate_prepare_buffers(CudaCtx *c, const CudaPlan *cp, uint64_t seed, int which, CUresult *cu_err, EvoErr *err)
{
    const Plan *p = cp->plan;
    void **host_in = xcalloc((size_t)(p->nbuffers > 0 ? p->nbuffers : 1), sizeof(void *));
    CUresult r = CUDA_SUCCESS;
    gen_inputs(p, seed, host_in);
    int rc = upload(c, cp, host_in, which, &r, err);
    for (int i = 0; i < p->nbuffers; i++)
        free(host_in[i]);
    free(host_in);
    if (cu_err)
        *cu_err = r;
    return rc;
}

/* Launch, record events around the launches, sync. Returns 0 or -1. */
static int run_timed(CudaCtx *c, const CudaLaunches *cl, CUevent e0, CUevent e1, double *ms, CUresult *cu,
                     EvoErr *err)
{
    CudaApi *api = c->api;
    CUresult r;
    float f = 0;
    if ((r = api->cuEventRecord(e0, c->stream)) != CUDA_SUCCESS)
        goto fail_cu;
    if (cuda_launches_run(c, cl, cu, err) != 0)
        return -1;
    if ((r = api->cuEventRecord(e1, c->stream)) != CUDA_SUCCESS)
        goto fail_cu;
    if ((r = api->cuStreamSynchronize(c->stream)) != CUDA_SUCCESS) {
        *cu = r;
        return cuda_check(api, r, "cuStreamSynchronize", err);
    }
    if ((r = api->EventElapsedTime(&f, e0, e1)) != CUDA_SUCCESS)
        goto fail_cu;
    *ms = f;
    *cu = CUDA_SUCCESS;
    return 0;
fail_cu:
    *cu = r;
    return cuda_check(api, r, "cuEventRecord/cuEventElapsedTime", err);
}

static int download(CudaCtx *c, const CudaPlan *cp, int role, void **host, CUresult *cu, EvoErr *err)
{
    const Plan *p = cp->plan;
    for (int i = 0; i < p->nbuffers; i++) {
        if (p->buffers[i].role != (BufRole)role || !cp->dptr[i])
            continue;
        if (!host[i])
            host[i] = xmalloc(cp->bytes[i] ? cp->bytes[i] : 1);
        CUresult r = c->api->cuMemcpyDtoH(host[i], cp->dptr[i], cp->bytes[i]);
        if (r != CUDA_SUCCESS) {
            *cu = r;
            cuda_check(c->api, r, "cuMemcpyDtoH", err);
            return err_prefix(err, "buffer '%s'", p->buffers[i].name);
        }
    }
    *cu = CUDA_SUCCESS;
    return 0;
}

/* Run the reference for one seed on fresh buffers; fill ref_out[] (host
 * copies of the outputs) and *ms. On failure fills rep. Returns 0 / -1. */
static int run_reference(CudaCtx *c, const Plan *plan, CUmodule ref, void **host_in, CUevent e0, CUevent e1,
                         void **ref_out, double *ms, GateReport *rep)
{
    CudaPlan rp = {0};
    CudaLaunches rl = {0};
    CUresult cu = CUDA_SUCCESS;
    EvoErr e = {{0}};
    int rc = -1;
    if (cuda_plan_alloc(c, plan, &rp, &e) != 0) {
        rep_cuda(rep, c, CUDA_ERROR_OUT_OF_MEMORY, &e, "reference buffers");
        goto fail;
    }
    if (cuda_launches_prepare(c, &rp, ref, plan->ref_launches, plan->nref_launches, &rl, &cu, &e) != 0 ||
        upload(c, &rp, host_in, 1, &cu, &e) != 0 || run_timed(c, &rl, e0, e1, ms, &cu, &e) != 0 ||
        download(c, &rp, ROLE_OUTPUT, ref_out, &cu, &e) != 0) {
        rep_cuda(rep, c, cu, &e, "reference");
        if (rep->status != EVAL_CRASHED)
            rep->status = EVAL_INVALID; /* the reference is broken, not the candidate */
        goto fail;
    }
    for (int i = 0; i < plan->nbuffers; i++)
        if (!plan->buffers[i].for_ref) {
            free(ref_out[i]);
            ref_out[i] = NULL;
        }
    /* scrub: nothing may find the reference's answer in freed memory */
    for (int i = 0; i < plan->nbuffers; i++) {
        const PlanBuffer *b = &plan->buffers[i];
        if (b->role == ROLE_OUTPUT && rp.dptr[i])
            c->api->cuMemsetD8(rp.dptr[i], 0xFF, rp.bytes[i]);
    }
    c->api->cuCtxSynchronize();
    rc = 0;
fail:
    cuda_launches_free(&rl);
    cuda_plan_free(c, &rp);
    return rc;
}

static uint64_t launch_ctas(const PlanLaunch *l)
{
    return (uint64_t)l->grid[0] * l->grid[1] * l->grid[2];
}

/* Compare every candidate output in got[] against want[]; on failure fill
 * rep (check name `fail_check` overrides the comparison's own name when
 * not NULL). Returns 1 when all pass. */
static int check_outputs(const Plan *plan, void **got, void **want, const char *fail_check, double tol_scale,
                         GateReport *rep)
{
    for (int i = 0; i < plan->nbuffers; i++) {
        const PlanBuffer *b = &plan->buffers[i];
        GateCmp cmp;
        if (b->role != ROLE_OUTPUT || !b->for_cand || !got[i] || !want[i])
            continue;
        int ok = gate_compare(b->dtype, got[i], want[i], b->count, tol_scale * b->atol,
                              tol_scale * b->rtol, &cmp);
        if (cmp.max_abs > rep->max_abs)
            rep->max_abs = cmp.max_abs;
        if (cmp.max_rel > rep->max_rel)
            rep->max_rel = cmp.max_rel;
        if (ok)
            continue;
        rep->status = EVAL_INCORRECT;
        snprintf(rep->check, sizeof(rep->check), "%s",
                 fail_check && strcmp(cmp.check, "mismatch") == 0 ? fail_check : cmp.check);
        snprintf(rep->buffer, sizeof(rep->buffer), "%s", b->name);
        rep->first_bad = cmp.first_bad;
        rep->nbad = cmp.nbad;
        rep->got = cmp.got;
        rep->want = cmp.want;
        snprintf(rep->error, sizeof(rep->error),
                 "%s: %llu of %llu elements bad (%llu unwritten, %llu NaN/Inf), max|ref| %.4g, max|got| %.4g, "
                 "atol %.3g rtol %.3g", rep->check, (unsigned long long)cmp.nbad, (unsigned long long)b->count,
                 (unsigned long long)cmp.nunwritten, (unsigned long long)cmp.nnan, cmp.ref_absmax, cmp.got_absmax,
                 b->atol, b->rtol);
        return 0;
    }
    return 1;
}

int gate_run(CudaCtx *c, const Plan *plan, CUmodule cand, CUmodule ref, const GateOptions *opt, GateRefCache *cache,
             const char *key, GateReport *rep, EvoErr *err)
{
    CudaApi *api = c->api;
    CudaPlan cp = {0};
    CudaLaunches cl = {0};
    CUevent e0 = NULL, e1 = NULL;
    CUresult cu = CUDA_SUCCESS;
    EvoErr e = {{0}};
    int nb = plan->nbuffers > 0 ? plan->nbuffers : 1;
    void **host_in = xcalloc((size_t)nb, sizeof(void *));
    void **c1 = xcalloc((size_t)nb, sizeof(void *));
    void **c2 = xcalloc((size_t)nb, sizeof(void *));
    void **in_after = xcalloc((size_t)nb, sizeof(void *));
    void **fresh_ref = xcalloc((size_t)nb, sizeof(void *));
    uint64_t largest = 0;
    int nseeds = opt && opt->nseeds > 0 ? opt->nseeds : 3;
    char *ckey = NULL;
    (void)err;

    memset(rep, 0, sizeof(*rep));
    rep->first_bad = -1;
    snprintf(rep->shape, sizeof(rep->shape), "%s", plan->shape_label ? plan->shape_label : "");
    if (nseeds > 16)
        nseeds = 16;

    for (int i = 0; i < plan->nlaunches; i++)
        if (launch_ctas(&plan->launches[i]) > largest)
            largest = launch_ctas(&plan->launches[i]);
    if (plan->min_ctas > 0 && largest < (uint64_t)plan->min_ctas) {
        rep->status = EVAL_INVALID;
        snprintf(rep->check, sizeof(rep->check), "min_ctas");
        snprintf(rep->error, sizeof(rep->error), "largest launch has %llu CTAs, the task requires at least %d",
                 (unsigned long long)largest, plan->min_ctas);
        goto done;
    }
    if (cuda_plan_alloc(c, plan, &cp, &e) != 0) {
        rep_cuda(rep, c, CUDA_ERROR_OUT_OF_MEMORY, &e, "candidate buffers");
        rep->status = EVAL_RESOURCE;
        goto done;
    }
    if (cuda_launches_prepare(c, &cp, cand, plan->launches, plan->nlaunches, &cl, &cu, &e) != 0) {
        rep_cuda(rep, c, cu, &e, "candidate");
        goto done;
    }
    if ((cu = api->cuEventCreate(&e0, CU_EVENT_DEFAULT)) != CUDA_SUCCESS ||
        (cu = api->cuEventCreate(&e1, CU_EVENT_DEFAULT)) != CUDA_SUCCESS) {
        cuda_check(api, cu, "cuEventCreate", &e);
        rep_cuda(rep, c, cu, &e, "events");
        goto done;
    }

    for (int s = 0; s < nseeds; s++) {
        uint64_t seed = opt && opt->seeds_given ? opt->seeds[s] : (uint64_t)(s + 1);
        double ms = 0;
        void **want;
        CacheEntry *ce;
        rep->seed = seed;
        gen_inputs(plan, seed, host_in);

        /* run 1 */
        rep->run = 1;
        if (upload(c, &cp, host_in, 0, &cu, &e) != 0 || run_timed(c, &cl, e0, e1, &ms, &cu, &e) != 0 ||
            download(c, &cp, ROLE_OUTPUT, c1, &cu, &e) != 0 || download(c, &cp, ROLE_INPUT, in_after, &cu, &e) != 0) {
            rep_cuda(rep, c, cu, &e, "candidate");
            goto done;
        }
        if (s == 0)
            rep->cand_ms = ms;
        for (int i = 0; i < plan->nbuffers; i++) {
            const PlanBuffer *b = &plan->buffers[i];
            if (b->role != ROLE_INPUT || !b->for_cand || !host_in[i] || !in_after[i])
                continue;
            if (gate_checksum(host_in[i], cp.bytes[i]) != gate_checksum(in_after[i], cp.bytes[i])) {
                uint64_t k = 0;
                while (k < cp.bytes[i] && ((unsigned char *)host_in[i])[k] == ((unsigned char *)in_after[i])[k])
                    k++;
                rep->status = EVAL_INCORRECT;
                snprintf(rep->check, sizeof(rep->check), "inputs_modified");
                snprintf(rep->buffer, sizeof(rep->buffer), "%s", b->name);
                rep->first_bad = (int64_t)(k / (uint64_t)dtype_size(b->dtype));
                rep->got = gate_load(b->dtype, in_after[i], (uint64_t)rep->first_bad);
                rep->want = gate_load(b->dtype, host_in[i], (uint64_t)rep->first_bad);
                rep->nbad = 1;
                snprintf(rep->error, sizeof(rep->error), "the candidate wrote its input '%s' (checksum changed)",
                         b->name);
                goto done;
            }
        }

        /* reference */
        free(ckey);
        ckey = key ? xasprintf("%s|seed=%llu", key, (unsigned long long)seed) : NULL;
        ce = cache_find(cache, ckey);
        if (ce) {
            want = ce->out;
        } else {
            double rms = 0;
            for (int i = 0; i < plan->nbuffers; i++) {
                free(fresh_ref[i]);
                fresh_ref[i] = NULL;
            }
            if (run_reference(c, plan, ref, host_in, e0, e1, fresh_ref, &rms, rep) != 0)
                goto done;
            if (rms > rep->ref_ms)
                rep->ref_ms = rms;
            want = fresh_ref;
            /* the reference itself must be complete and finite */
            for (int i = 0; i < plan->nbuffers; i++) {
                const PlanBuffer *b = &plan->buffers[i];
                GateCmp cmp;
                if (b->role != ROLE_OUTPUT || !want[i])
                    continue;
                if (!gate_compare(b->dtype, want[i], want[i], b->count, 0, 0, &cmp) &&
                    strcmp(cmp.check, "zero_output") != 0) {
                    rep->status = EVAL_INVALID;
                    snprintf(rep->check, sizeof(rep->check), "reference");
                    snprintf(rep->buffer, sizeof(rep->buffer), "%s", b->name);
                    snprintf(rep->error, sizeof(rep->error),
                             "the reference's output '%s' has %llu unwritten and %llu NaN/Inf elements", b->name,
                             (unsigned long long)cmp.nunwritten, (unsigned long long)cmp.nnan);
                    goto done;
                }
            }
            if (cache && ckey) {
                CacheEntry *slot = &cache->e[cache->next];
                cache->next = (cache->next + 1) % CACHE_CAP;
                entry_free(slot);
                slot->key = xstrdup(ckey);
                slot->nbuf = plan->nbuffers;
                slot->out = xcalloc((size_t)nb, sizeof(void *));
                for (int i = 0; i < plan->nbuffers; i++) {
                    slot->out[i] = fresh_ref[i];
                    fresh_ref[i] = NULL;
                }
                slot->ref_ms = rms;
                want = slot->out;
            }
        }

        /* run 2 on re-initialized buffers */
        rep->run = 2;
        if (upload(c, &cp, host_in, 0, &cu, &e) != 0 || run_timed(c, &cl, e0, e1, &ms, &cu, &e) != 0 ||
            download(c, &cp, ROLE_OUTPUT, c2, &cu, &e) != 0) {
            rep_cuda(rep, c, cu, &e, "candidate (second run)");
            goto done;
        }
        rep->run = 1;
        if (!check_outputs(plan, c1, want, NULL, 1.0, rep))
            goto done;
        rep->run = 2;
        if (!check_outputs(plan, c2, want, "stale", 1.0, rep))
            goto done;
        if (!check_outputs(plan, c2, c1, "nondeterministic", 2.0, rep))
            goto done;
        rep->run = 0;
        rep->seeds_run++;
    }
    rep->status = EVAL_OK;
    rep->first_bad = -1;
done:
    if (e0)
        api->cuEventDestroy(e0);
    if (e1)
        api->cuEventDestroy(e1);
    cuda_launches_free(&cl);
    cuda_plan_free(c, &cp);
    for (int i = 0; i < nb; i++) {
        free(host_in[i]);
        free(c1[i]);
        free(c2[i]);
        free(in_after[i]);
        free(fresh_ref[i]);
    }
    free(host_in);
    free(c1);
    free(c2);
    free(in_after);
    free(fresh_ref);
    free(ckey);
    return 0;
}

/*
 * gate: correctness gate. Host math (generation, sentinels, comparison,
 * checksums) first, then the device routine that runs inside the worker.
 * See gate.h for the checks and their order.
 */
#include "gpu/gate.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpu/proto.h"
#include "gpu/resident.h"

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

/* The counter-based generator: element i of a buffer depends only on
 * (seed, salt, i). gensrc.c has the same code for the device. */
static uint64_t mix64(uint64_t z)
{
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

static double unit(uint64_t key, uint64_t c)
{
    return (double)(mix64(key + (c + 1) * 0x9E3779B97F4A7C15ull) >> 11) * 0x1.0p-53;
}

uint64_t gate_seed_key(uint64_t seed, uint64_t salt)
{
    uint64_t st = seed * 0xD1B54A32D192ED03ull;
    return st ^ mix64(st + 0x9E3779B97F4A7C15ull) ^ (salt * 0x9E3779B97F4A7C15ull + 0x632BE59BD9B4E019ull);
}

/* Box-Muller over the counter pair of i: the radius and the cosine (even
 * i) or sine (odd i). */
static void box_muller(uint64_t key, uint64_t i, double *r, double *t)
{
    uint64_t j = i >> 1;
    double u1 = 1.0 - unit(key, 2 * j), u2 = unit(key, 2 * j + 1);
    double th = 6.283185307179586 * u2;
    *r = sqrt(-2.0 * log(u1));
    *t = (i & 1) ? sin(th) : cos(th);
}

double gate_gen_value(const InitSpec *g, uint64_t key, uint64_t i)
{
    double v, r, t;
    switch (g->kind) {
    case INIT_ZERO:
        v = 0;
        break;
    case INIT_CONST:
        v = g->a;
        break;
    case INIT_UNIFORM:
        v = g->a + (g->b - g->a) * unit(key, i);
        break;
    default:
        box_muller(key, i, &r, &t);
        v = g->a + g->b * r * t;
        if (g->kind == INIT_OUTLIER && unit(key ^ 0xA0761D6478BD642Full, i) < g->p) {
            box_muller(key ^ 0xE7037ED1A0B428DBull, i, &r, &t);
            v += g->c * r * t;
        }
    }
    if (g->rows != ROWS_NONE) {
        uint64_t row = i / (g->row_len > 0 ? g->row_len : 1), rk = key ^ 0x8EBC6AF09C88C6E3ull;
        if (g->rows == ROWS_UNIFORM) {
            v *= g->ra + (g->rb - g->ra) * unit(rk, row);
        } else {
            box_muller(rk, row, &r, &t);
            v *= exp(g->ra + g->rb * r * t);
        }
    }
    return v;
}

void gate_fill_host(const PlanBuffer *b, uint64_t seed, void *dst)
{
    uint64_t key = gate_seed_key(seed, b->seed_salt);
    for (uint64_t i = 0; i < b->count; i++)
        store_val(b->dtype, dst, i, gate_gen_value(&b->init, key, i));
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
    if (r->profile[0])
        json_object_set_new(o, "profile", json_string(r->profile));
    if (r->profiles > 1)
        json_object_set_new(o, "profiles", json_integer(r->profiles));
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
    proto_copy_str(j, "profile", r->profile, sizeof(r->profile));
    r->profiles = (int)proto_get_int(j, "profiles", 1);
    if (st < 0 && !r->error[0])
        snprintf(r->error, sizeof(r->error), "gate report without a valid status");
}

void gate_report_format(const GateReport *r, char *buf, size_t cap)
{
    char prof[64] = "";
    if (r->status == EVAL_OK) {
        int np = r->profiles > 1 ? r->profiles : 1, ns = r->seeds_run / np;
        if (np > 1)
            snprintf(prof, sizeof(prof), " x %d profiles", np);
        snprintf(buf, cap, "ok: %d seed%s%s passed (last shape '%s'); max abs err %.3g, max rel err %.3g; "
                 "candidate %.4f ms, reference %.4f ms", ns, ns == 1 ? "" : "s", prof, r->shape, r->max_abs,
                 r->max_rel, r->cand_ms, r->ref_ms);
        return;
    }
    if (r->profile[0] && strcmp(r->profile, "default") != 0)
        snprintf(prof, sizeof(prof), ", profile %s", r->profile);
    if (r->check[0] && r->first_bad >= 0)
        snprintf(buf, cap, "%s: %s in %s (shape '%s'%s, seed %llu, run %d): %llu bad, first at %lld: got %.6g "
                 "want %.6g; max abs err %.3g, max rel err %.3g", gate_status_name(r->status), r->check,
                 r->buffer, r->shape, prof, (unsigned long long)r->seed, r->run, (unsigned long long)r->nbad,
                 (long long)r->first_bad, r->got, r->want, r->max_abs, r->max_rel);
    else
        snprintf(buf, cap, "%s%s%s: %s%s%s (shape '%s'%s, seed %llu)", gate_status_name(r->status),
                 r->check[0] ? ": " : "", r->check, r->error, r->cuda_error[0] ? " " : "", r->cuda_error,
                 r->shape, prof, (unsigned long long)r->seed);
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

static uint64_t launch_ctas(const PlanLaunch *l)
{
    return (uint64_t)l->grid[0] * l->grid[1] * l->grid[2];
}

/* Read element i of a device buffer as a double (for the report). */
static double fetch(CudaCtx *c, CUdeviceptr p, DType t, int64_t i)
{
    unsigned char v[8] = {0};
    if (!p || i < 0 || c->api->cuMemcpyDtoH(v, p + (CUdeviceptr)i * (CUdeviceptr)dtype_size(t),
                                            (size_t)dtype_size(t)) != CUDA_SUCCESS)
        return NAN;
    return gate_load(t, v, 0);
}

/* Turn a compare summary into GateCmp terms and, on failure, the report.
 * Returns 1 when it passes. */
static int judge_compare(CudaCtx *c, const PlanBuffer *b, const DevSum *s, double atol, const char *fail_check,
                         CUdeviceptr got, CUdeviceptr want, GateReport *rep)
{
    double max_abs = devsum_real(s->max_abs), max_rel = devsum_real(s->max_rel);
    double ref_absmax = devsum_real(s->ref_absmax), got_absmax = devsum_real(s->got_absmax);
    const char *check;
    if (max_abs > rep->max_abs)
        rep->max_abs = max_abs;
    if (max_rel > rep->max_rel)
        rep->max_rel = max_rel;
    if (s->nunwritten)
        check = "unwritten";
    else if (s->nnan)
        check = "nan";
    else if (b->count > 0 && ref_absmax > 10 * atol && got_absmax <= atol)
        check = "zero_output";
    else if (s->nmis)
        check = fail_check ? fail_check : "mismatch";
    else
        return 1;
    rep->status = EVAL_INCORRECT;
    snprintf(rep->check, sizeof(rep->check), "%s", check);
    snprintf(rep->buffer, sizeof(rep->buffer), "%s", b->name);
    rep->first_bad = devsum_first_bad(s);
    rep->nbad = s->nbad;
    rep->got = fetch(c, got, b->dtype, rep->first_bad);
    rep->want = fetch(c, want, b->dtype, rep->first_bad);
    snprintf(rep->error, sizeof(rep->error),
             "%s: %llu of %llu elements bad (%llu unwritten, %llu NaN/Inf), max|ref| %.4g, max|got| %.4g, "
             "atol %.3g rtol %.3g", rep->check, (unsigned long long)s->nbad, (unsigned long long)b->count,
             (unsigned long long)s->nunwritten, (unsigned long long)s->nnan, ref_absmax, got_absmax, b->atol, b->rtol);
    return 0;
}

/* Summary slots of one variant (profile, seed): per buffer, 5 of them. */
enum { SUM_IN_A, SUM_IN_B, SUM_RUN1, SUM_RUN2, SUM_RUN21, SUM_PER_BUF };

/* Enqueue variant k's two candidate runs and every comparison of their
 * results. Returns 0 or -1 (err, *cu). */
static int enqueue_variant(CudaCtx *c, Resident *res, const Bay *bay, int k, const Plan *plan, const CudaPlan cp[2],
                        const CudaLaunches cl[2], CUevent e0, CUevent e1, CUdeviceptr sums, int *run, CUresult *cu,
                        EvoErr *err)
{
    DevKern *dk = resident_kern(res);
    for (int set = 0; set < 2; set++) {
        *run = set + 1;
        if (resident_reset(res, bay, set, k, plan, 0, cu, err) != 0)
            return -1;
        if (k == 0 && set == 0 && (*cu = c->api->cuEventRecord(e0, c->stream)) != CUDA_SUCCESS)
            return cuda_check(c->api, *cu, "cuEventRecord", err);
        if (cuda_launches_run(c, &cl[set], cu, err) != 0)
            return -1;
        if (k == 0 && set == 0 && (*cu = c->api->cuEventRecord(e1, c->stream)) != CUDA_SUCCESS)
            return cuda_check(c->api, *cu, "cuEventRecord", err);
    }
    for (int i = 0; i < plan->nbuffers; i++) {
        const PlanBuffer *b = &plan->buffers[i];
        CUdeviceptr slot = sums + (CUdeviceptr)((size_t)(k * plan->nbuffers + i) * SUM_PER_BUF * sizeof(DevSum));
        CUdeviceptr ref = resident_reference(bay, k, i);
        if (!b->for_cand || b->count == 0)
            continue;
        if (b->role == ROLE_INPUT) {
            uint64_t nw = (uint64_t)b->count * (uint64_t)dtype_size(b->dtype) / 2;
            for (int set = 0; set < 2; set++)
                if (devkern_diff(dk, cp[set].dptr[i], resident_pristine(bay, k, i), 0, nw,
                                 slot + (CUdeviceptr)((SUM_IN_A + set) * sizeof(DevSum)), cu, err) != 0)
                    return -1;
        } else if (b->role == ROLE_OUTPUT && ref) {
            if (devkern_compare(dk, cp[0].dptr[i], ref, b->count, b->dtype, b->atol, b->rtol,
                                slot + SUM_RUN1 * sizeof(DevSum), cu, err) != 0 ||
                devkern_compare(dk, cp[1].dptr[i], ref, b->count, b->dtype, b->atol, b->rtol,
                                slot + SUM_RUN2 * sizeof(DevSum), cu, err) != 0 ||
                devkern_compare(dk, cp[1].dptr[i], cp[0].dptr[i], b->count, b->dtype, 2 * b->atol, 2 * b->rtol,
                                slot + SUM_RUN21 * sizeof(DevSum), cu, err) != 0)
                return -1;
        }
    }
    return 0;
}

/* Judge variant k from its summaries, in the gate's order. 1 passes. */
static int judge_variant(CudaCtx *c, const Bay *bay, int k, const Plan *plan, const CudaPlan cp[2], const DevSum *hs,
                      GateReport *rep)
{
    for (int i = 0; i < plan->nbuffers; i++) {
        const PlanBuffer *b = &plan->buffers[i];
        const DevSum *s = hs + (size_t)(k * plan->nbuffers + i) * SUM_PER_BUF;
        if (b->role != ROLE_INPUT || !b->for_cand || b->count == 0)
            continue;
        for (int set = 0; set < 2; set++) {
            const DevSum *d = &s[SUM_IN_A + set];
            if (!d->nbad)
                continue;
            rep->status = EVAL_INCORRECT;
            rep->run = set + 1;
            snprintf(rep->check, sizeof(rep->check), "inputs_modified");
            snprintf(rep->buffer, sizeof(rep->buffer), "%s", b->name);
            rep->first_bad = devsum_first_bad(d) * 2 / dtype_size(b->dtype);
            rep->got = fetch(c, cp[set].dptr[i], b->dtype, rep->first_bad);
            rep->want = fetch(c, resident_pristine(bay, k, i), b->dtype, rep->first_bad);
            rep->nbad = d->nbad;
            snprintf(rep->error, sizeof(rep->error),
                     "the candidate wrote its input '%s' (%llu 16-bit words differ from the pristine copy)", b->name,
                     (unsigned long long)d->nbad);
            return 0;
        }
    }
    for (int pass = 0; pass < 3; pass++)
        for (int i = 0; i < plan->nbuffers; i++) {
            const PlanBuffer *b = &plan->buffers[i];
            const DevSum *s = hs + (size_t)(k * plan->nbuffers + i) * SUM_PER_BUF;
            CUdeviceptr ref = resident_reference(bay, k, i);
            if (b->role != ROLE_OUTPUT || !b->for_cand || b->count == 0 || !ref)
                continue;
            rep->run = pass == 0 ? 1 : 2;
            if (pass == 0 && !judge_compare(c, b, &s[SUM_RUN1], b->atol, NULL, cp[0].dptr[i], ref, rep))
                return 0;
            if (pass == 1 && !judge_compare(c, b, &s[SUM_RUN2], b->atol, "stale", cp[1].dptr[i], ref, rep))
                return 0;
            if (pass == 2 && !judge_compare(c, b, &s[SUM_RUN21], 2 * b->atol, "nondeterministic", cp[1].dptr[i],
                                            cp[0].dptr[i], rep))
                return 0;
        }
    return 1;
}

/* The report names the seed and profile of variant k. */
static void variant_names(GateReport *rep, const Plan *plan, const Bay *bay, int k)
{
    rep->seed = resident_variant_seed(bay, k);
    snprintf(rep->profile, sizeof(rep->profile), "%s", plan_profile_name(plan, resident_variant_profile(bay, k)));
}

int gate_run(CudaCtx *c, Resident *res, const Plan *plan, CUmodule cand, CUmodule ref, int ref_id,
             const GateOptions *opt, GateReport *rep, EvoErr *err)
{
    CudaApi *api = c->api;
    CudaPlan cp[2] = {{0}, {0}};
    CudaLaunches cl[2] = {{0}, {0}};
    CUevent e0 = NULL, e1 = NULL;
    CUresult cu = CUDA_SUCCESS;
    CUdeviceptr sums = 0;
    const DevSum *hs = NULL;
    EvoErr e = {{0}};
    Bay *bay = NULL;
    uint64_t largest = 0, seeds[16];
    int nseeds = opt && opt->nseeds > 0 ? opt->nseeds : 3, resident_bad = 0, guard_bad = 0, brc, nvar;
    char where[160];
    float ms = 0;
    (void)err;

    memset(rep, 0, sizeof(*rep));
    rep->first_bad = -1;
    rep->profiles = plan_nprofiles(plan);
    snprintf(rep->shape, sizeof(rep->shape), "%s", plan->shape_label ? plan->shape_label : "");
    if (nseeds > 16)
        nseeds = 16;
    for (int s = 0; s < nseeds; s++)
        seeds[s] = opt && opt->seeds_given ? opt->seeds[s] : (uint64_t)(s + 1);

    for (int i = 0; i < plan->nlaunches; i++)
        if (launch_ctas(&plan->launches[i]) > largest)
            largest = launch_ctas(&plan->launches[i]);
    if (plan->min_ctas > 0 && largest < (uint64_t)plan->min_ctas) {
        rep->status = EVAL_INVALID;
        snprintf(rep->check, sizeof(rep->check), "min_ctas");
        snprintf(rep->error, sizeof(rep->error), "largest launch has %llu CTAs, the task requires at least %d",
                 (unsigned long long)largest, plan->min_ctas);
        return 0;
    }
    /* EVOENG_GATE_PHASES=1: the host time of each phase to stderr (where
     * a gate's time goes; the syncs are the verifies' and the summaries') */
    static int phases = -1;
    if (phases < 0)
        phases = getenv("EVOENG_GATE_PHASES") && strcmp(getenv("EVOENG_GATE_PHASES"), "1") == 0;
    double ph[8] = {time_now_ms()};
    resident_begin(res);
    /* whatever an earlier request may have written over is made again */
    if (resident_verify(res, &resident_bad, &guard_bad, where, sizeof(where), &cu, &e) != 0) {
        rep_cuda(rep, c, cu, &e, "verifying the resident state");
        goto done;
    }
    ph[1] = time_now_ms();
    brc = resident_bay_gate(res, plan, ref, ref_id, seeds, nseeds, &bay, rep, &cu, &e);
    ph[2] = time_now_ms();
    if (brc == 1)
        goto done;
    if (brc != 0) {
        rep_cuda(rep, c, cu, &e, "resident state");
        if (cu == CUDA_ERROR_OUT_OF_MEMORY || cu == CUDA_SUCCESS)
            rep->status = EVAL_RESOURCE;
        goto done;
    }
    for (int set = 0; set < 2; set++) {
        resident_plan(bay, set, plan, &cp[set]);
        if (cuda_launches_prepare(c, &cp[set], cand, plan->launches, plan->nlaunches, &cl[set], &cu, &e) != 0) {
            rep_cuda(rep, c, cu, &e, "candidate");
            goto done;
        }
    }
    if ((cu = api->cuEventCreate(&e0, CU_EVENT_DEFAULT)) != CUDA_SUCCESS ||
        (cu = api->cuEventCreate(&e1, CU_EVENT_DEFAULT)) != CUDA_SUCCESS) {
        cuda_check(api, cu, "cuEventCreate", &e);
        rep_cuda(rep, c, cu, &e, "events");
        goto done;
    }
    nvar = resident_nvariants(bay);
    if (resident_sums_reset(res, nvar * plan->nbuffers * SUM_PER_BUF, &sums, &cu, &e) != 0) {
        rep_cuda(rep, c, cu, &e, "summaries");
        goto done;
    }
    ph[3] = time_now_ms();
    /* every variant's runs and comparisons go out at once; one sync */
    for (int k = 0; k < nvar; k++) {
        variant_names(rep, plan, bay, k);
        if (enqueue_variant(c, res, bay, k, plan, cp, cl, e0, e1, sums, &rep->run, &cu, &e) != 0) {
            rep_cuda(rep, c, cu, &e, rep->run == 2 ? "candidate (second run)" : "candidate");
            goto done;
        }
    }
    ph[4] = time_now_ms();
    if (resident_sums_read(res, nvar * plan->nbuffers * SUM_PER_BUF, &hs, &cu, &e) != 0) {
        rep_cuda(rep, c, cu, &e, "candidate");
        goto done;
    }
    ph[5] = time_now_ms();
    if (api->EventElapsedTime(&ms, e0, e1) == CUDA_SUCCESS)
        rep->cand_ms = ms;
    for (int k = 0; k < nvar; k++) {
        variant_names(rep, plan, bay, k);
        if (!judge_variant(c, bay, k, plan, cp, hs, rep))
            goto verify;
        rep->seeds_run++;
    }
    rep->profile[0] = 0;
    rep->status = EVAL_OK;
    rep->run = 0;
    rep->first_bad = -1;
verify:
    ph[6] = time_now_ms();
    /* nothing outside the candidate's own buffers may have changed */
    if (resident_verify(res, &resident_bad, &guard_bad, where, sizeof(where), &cu, &e) != 0) {
        rep_cuda(rep, c, cu, &e, "verifying the resident state");
        goto done;
    }
    if (phases)
        fprintf(stderr, "gate phases %s (%d variants): verify %.2f, bay %.2f, prepare %.2f, enqueue %.2f, "
                "wait %.2f, judge %.2f, verify %.2f ms\n", rep->shape, resident_nvariants(bay), ph[1] - ph[0],
                ph[2] - ph[1], ph[3] - ph[2], ph[4] - ph[3], ph[5] - ph[4], ph[6] - ph[5], time_now_ms() - ph[6]);
    /* writing outside its buffers explains (and outranks) any mismatch it caused */
    if ((rep->status == EVAL_OK || rep->status == EVAL_INCORRECT) && (resident_bad || guard_bad)) {
        rep->status = EVAL_INCORRECT;
        rep->nbad = 0;
        rep->first_bad = -1;
        snprintf(rep->check, sizeof(rep->check), "%s", resident_bad ? "resident_modified" : "out_of_bounds");
        if (resident_bad)
            snprintf(rep->error, sizeof(rep->error),
                     "the candidate wrote outside its buffers: the resident inputs or reference outputs of %d "
                     "shape%s changed (they are made again)", resident_bad, resident_bad == 1 ? "" : "s");
        else
            snprintf(rep->error, sizeof(rep->error), "the candidate wrote outside its buffers: %d red zone%s changed, "
                     "first %s", guard_bad, guard_bad == 1 ? "" : "s", where);
    }
done:
    if (e0)
        api->cuEventDestroy(e0);
    if (e1)
        api->cuEventDestroy(e1);
    for (int set = 0; set < 2; set++) {
        cuda_launches_free(&cl[set]);
        resident_plan_free(&cp[set]);
    }
    return 0;
}

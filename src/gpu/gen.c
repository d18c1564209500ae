/*
 * gen: the gate's host math: half conversions, the input generator,
 * sentinels and the comparison of an output with its reference. See
 * gen.h.
 */
#include "gpu/gen.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

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

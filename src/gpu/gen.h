/*
 * gen: the gate's host math, pure and unit-tested on the CPU: IEEE half
 * conversions, the counter-based input generator and its seed keys, the
 * NaN sentinels of unwritten outputs, and the comparison of an output
 * with its reference (gate.h says how the gate uses them; devkern.h is
 * their mirror on the device).
 */
#ifndef EVO_GPU_GEN_H
#define EVO_GPU_GEN_H

#include <stdint.h>

#include "task/plan.h"

#define GATE_SENTINEL_F16  0xFFFFu
#define GATE_SENTINEL_F32  0x7FFFFFFFu
#define GATE_SENTINEL_I32  0x7FBADBADu

/* IEEE half / bfloat16 conversions (round to nearest even). */
uint16_t gate_f32_to_f16(float f);
float    gate_f16_to_f32(uint16_t h);
uint16_t gate_f32_to_bf16(float f);
float    gate_bf16_to_f32(uint16_t h);

/* Element i of a typed buffer as a double. */
double gate_load(DType t, const void *buf, uint64_t i);

/* The input generator, counter-based: element i of buffer b for a seed is
 * gate_gen_value(&b->init, gate_seed_key(seed, b->seed_salt), i), by
 * kind: normal (Box-Muller in double over the pair i/2: cos for even i,
 * sin for odd; mean a, stddev b), uniform [a, b), zero, const a, outlier
 * (the normal, plus with probability p, decided on a stream of its own, a
 * normal of stddev c from another); then, with a row scale, times the
 * factor of row i / row_len (lognormal exp(ra + rb z) or uniform [ra, rb),
 * from a third stream over the rows); then rounded to the dtype (through
 * float, nearest even). The worker makes the same values on the device
 * (gensrc.c, devkern.c: evo_fill). */
uint64_t gate_seed_key(uint64_t seed, uint64_t salt);
double   gate_gen_value(const InitSpec *s, uint64_t key, uint64_t i);

/* Fill dst (b->count elements of b->dtype) with the generator's values for
 * (seed, b->seed_salt) under b->init on the host (another profile: a copy
 * of b with that profile's init). Same inputs, same bytes. */
void gate_fill_host(const PlanBuffer *b, uint64_t seed, void *dst);

/* Fill n elements of dtype t with the NaN sentinel. */
void gate_fill_sentinel(DType t, void *dst, uint64_t n);

/* Result of comparing one output buffer. */
typedef struct GateCmp {
    char     check[24];   /* "ok", "unwritten", "nan", "zero_output", "mismatch" */
    double   max_abs;     /* largest |got - ref| over finite elements */
    double   max_rel;     /* largest |got - ref| / |ref| (ref != 0) */
    int64_t  first_bad;   /* index of the first failing element, -1 if none */
    uint64_t nbad;        /* failing elements (any reason) */
    uint64_t nunwritten;  /* elements still equal to the sentinel */
    uint64_t nnan;        /* NaN/Inf elements (not counting sentinels) */
    double   got, want;   /* values at first_bad */
    double   ref_absmax, got_absmax;
} GateCmp;

/* Compare got against ref (n elements of dtype t) with |got-ref| <= atol +
 * rtol*|ref|. Fills *out; returns 1 when everything passes, 0 otherwise.
 * Check precedence: unwritten > nan > zero_output > mismatch. */
int gate_compare(DType t, const void *got, const void *ref, uint64_t n, double atol, double rtol, GateCmp *out);

#endif

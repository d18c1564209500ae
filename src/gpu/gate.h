/*
 * gate: the correctness gate, built so that a wrong kernel cannot pass.
 *
 * For every plan (correctness shapes and the benchmark shape) and every
 * seed (>= 3):
 *   1. inputs are generated on the host from (seed, buffer.seed_salt) and
 *      uploaded; outputs are filled with a NaN sentinel (0xFFFF for
 *      f16/bf16, 0x7FFFFFFF for f32, GATE_SENTINEL_I32 for i32); scratch
 *      is zeroed;
 *   2. the candidate runs; its outputs are read back and the inputs are
 *      checksummed (FNV-1a 64) against the uploaded data: a kernel that
 *      writes its inputs fails `inputs_modified`;
 *   3. the reference runs on freshly allocated buffers (or comes from the
 *      worker's cache for (reference module, shape, seed)); its outputs are
 *      scrubbed with the sentinel before the buffers are freed, so that a
 *      kernel reading a freed or stale reference result reads NaN;
 *   4. the candidate runs again on re-initialized buffers (fresh sentinel).
 * Checks, in order: `min_ctas` (largest launch too small), run 1 vs the
 * reference (`unwritten`, `nan`, `zero_output`, `mismatch`), run 2 vs the
 * reference (`stale`: the second run differs, e.g. state kept between
 * runs), run 2 vs run 1 within twice the tolerance (`nondeterministic`:
 * each run may sit on either side of the reference). The two runs are
 * compared within tolerance, not bitwise, because float atomics (split-K,
 * split-KV) legitimately reorder sums.
 *
 * An element passes when |got - ref| <= atol + rtol * |ref|. Any NaN/Inf
 * in an output fails. An output whose reference is far from zero
 * (max|ref| > 10 * atol) while the output is ~0 everywhere
 * (max|got| <= atol) fails `zero_output`.
 *
 * The host-side math (generation, sentinels, comparison, checksums, half
 * conversions) is pure and unit-tested on the CPU; gate_run() is the
 * device part and runs inside the worker.
 */
#ifndef EVO_GATE_H
#define EVO_GATE_H

#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "cuda_api.h"
#include "plan.h"
#include "util.h"

/* The outcome of evaluating a candidate. Names in gate_status_name(). */
typedef enum EvalStatus {
    EVAL_OK = 0,        /* correct (and timed, when timing was asked) */
    EVAL_INCORRECT,     /* ran, but the gate rejected the outputs */
    EVAL_CRASHED,       /* the kernel faulted (sticky CUDA error such as
                           CUDA_ERROR_ILLEGAL_ADDRESS) or the worker died */
    EVAL_TIMEOUT,       /* the request ran past its deadline; worker killed */
    EVAL_LAUNCH_ERROR,  /* the launch was refused (bad configuration) */
    EVAL_RESOURCE,      /* out of registers / shared memory / device memory */
    EVAL_COMPILE_ERROR, /* NVRTC failed or the cubin does not load */
    EVAL_INVALID,       /* the plan or candidate is unusable (missing entry,
                           too few CTAs, broken reference) */
    EVAL_NSTATUS
} EvalStatus;

/* "ok", "incorrect", ... ; "?" when out of range. */
const char *gate_status_name(EvalStatus s);
/* Reverse lookup; -1 when unknown. */
int gate_status_parse(const char *name);
/* The status a failing CUresult maps to (sticky -> crashed, out of
 * resources/memory -> resource, else launch_error). */
EvalStatus gate_status_from_cuda(CUresult r);

#define GATE_SENTINEL_F16  0xFFFFu
#define GATE_SENTINEL_F32  0x7FFFFFFFu
#define GATE_SENTINEL_I32  0x7FBADBADu

/* ---- host math -------------------------------------------------------- */

/* IEEE half / bfloat16 conversions (round to nearest even). */
uint16_t gate_f32_to_f16(float f);
float    gate_f16_to_f32(uint16_t h);
uint16_t gate_f32_to_bf16(float f);
float    gate_bf16_to_f32(uint16_t h);

/* Element i of a typed buffer as a double. */
double gate_load(DType t, const void *buf, uint64_t i);

/* Fill dst (b->count elements of b->dtype) deterministically from
 * (seed, b->seed_salt) according to b->init: normal (Box-Muller, mean a,
 * stddev b), uniform [a, b), zero, const a. Same inputs, same bytes. */
void gate_fill_host(const PlanBuffer *b, uint64_t seed, void *dst);

/* Fill n elements of dtype t with the NaN sentinel. */
void gate_fill_sentinel(DType t, void *dst, uint64_t n);

/* FNV-1a 64 of len bytes. */
uint64_t gate_checksum(const void *data, size_t len);

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

/* ---- reports ---------------------------------------------------------- */

typedef struct GateOptions {
    int       nseeds;     /* >= 1; default 3 */
    uint64_t  seeds[16];  /* used when nseeds > 0 and seeds_given */
    int       seeds_given;
} GateOptions;

/* Defaults: 3 seeds (1, 2, 3). */
void gate_options_default(GateOptions *o);

typedef struct GateReport {
    EvalStatus status;
    char     check[24];      /* the failed check ("mismatch", ...), "" when ok */
    char     error[768];     /* human-readable reason, "" when ok */
    char     cuda_error[48]; /* CUDA_ERROR_* when a driver call failed */
    char     shape[160];     /* where it failed (or the last shape checked) */
    char     buffer[64];
    uint64_t seed;
    int      run;            /* 1 or 2: which candidate run failed */
    double   max_abs, max_rel;  /* worst over everything checked */
    int64_t  first_bad;
    uint64_t nbad;
    double   got, want;
    double   cand_ms;        /* one run of the candidate launch plan (first seed) */
    double   ref_ms;         /* one run of the reference launch plan (0 if cached) */
    int      seeds_run;
    int      fatal;          /* the worker's context is unusable: replace it */
} GateReport;

json_t *gate_report_to_json(const GateReport *r);
void    gate_report_from_json(const json_t *j, GateReport *r);
/* One line: "incorrect: mismatch in O (shape 'B=1', seed 2, run 1): 17
 * bad of 4096, first at 12: got 1.5 want 1.25; max abs 0.3 rel 0.2". */
void    gate_report_format(const GateReport *r, char *buf, size_t cap);

/* ---- device part (worker only) ---------------------------------------- */

/* The worker's cache of reference outputs, keyed by a string the worker
 * builds from (reference module, plan, seed). */
typedef struct GateRefCache GateRefCache;
void gate_cache_open(GateRefCache **out);
void gate_cache_close(GateRefCache **c);

/* Run the gate of one plan: candidate module cand against reference module
 * ref, for every seed of opt. key identifies (ref module, plan) for the
 * cache (may be NULL: no caching). Fills *rep. Returns 0 when a verdict
 * was reached (rep->status says which, rep->fatal says whether the
 * context died), -1 only for an internal failure (err). */
int gate_run(CudaCtx *c, const Plan *plan, CUmodule cand, CUmodule ref, const GateOptions *opt, GateRefCache *cache,
             const char *key, GateReport *rep, EvoErr *err);

/* Upload the inputs generated for seed, fill outputs with the sentinel and
 * zero scratch, for buffers used by the candidate (which=0) or the
 * reference (which=1). Used by gate_run and by the timing requests.
 * Returns 0 or -1 (err; *cu_err gets the CUresult). */
int gate_prepare_buffers(CudaCtx *c, const CudaPlan *cp, uint64_t seed, int which, CUresult *cu_err, EvoErr *err);

#endif

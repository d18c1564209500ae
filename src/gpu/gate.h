/*
 * gate: the correctness gate, built so that a wrong kernel cannot pass.
 *
 * For every plan (correctness shapes and the benchmark shape), every input
 * profile of the plan and every seed (>= 3), on the worker's resident
 * state (resident.h):
 *   1. the inputs are the seed's pristine copies, generated once on the
 *      device from (seed, buffer.seed_salt) and copied into a working set;
 *      outputs are filled with a NaN sentinel (0xFFFF for f16/bf16,
 *      0x7FFFFFFF for f32, GATE_SENTINEL_I32 for i32); scratch is zeroed;
 *   2. the candidate runs on working set A, then again on the fresh
 *      working set B (fresh sentinel, fresh copies of the inputs);
 *   3. the reference outputs were computed once per (shape, seed) and are
 *      kept on the device, hashed; nothing of them is ever freed unscrubbed;
 *   4. on the device, both sets' inputs are compared exactly with the
 *      pristine copies (a kernel that writes its inputs fails
 *      `inputs_modified`), and the outputs with the reference;
 *   5. afterwards the resident inputs and references and the red zones
 *      around every working buffer are re-hashed: a kernel that wrote
 *      outside its buffers fails `resident_modified` or `out_of_bounds`.
 * Checks, in order: `min_ctas` (largest launch too small), inputs, run 1
 * vs the reference (`unwritten`, `nan`, `zero_output`, `mismatch`), run 2
 * vs the reference (`stale`: the second run differs, e.g. state kept
 * between runs), run 2 vs run 1 within twice the tolerance
 * (`nondeterministic`: each run may sit on either side of the reference),
 * then the red zones and the resident state. The two runs are compared
 * within tolerance, not bitwise, because float atomics (split-K, split-KV)
 * legitimately reorder sums.
 *
 * An element passes when |got - ref| <= atol + rtol * |ref|. Any NaN/Inf
 * in an output fails. An output whose reference is far from zero
 * (max|ref| > 10 * atol) while the output is ~0 everywhere
 * (max|got| <= atol) fails `zero_output`.
 *
 * The host-side math (generation, sentinels, comparison, half conversions)
 * is pure and unit-tested on the CPU, and is the mirror of the device
 * kernels (devkern.h) that the GPU tests compare with it; gate_run() is
 * the device part and runs inside the worker.
 */
#ifndef EVO_GATE_H
#define EVO_GATE_H

#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "gpu/cuda_api.h"
#include "task/plan.h"
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
    int      seeds_run;      /* (profile, seed) variants that passed */
    int      fatal;          /* the worker's context is unusable: replace it */
    char     profile[32];    /* the input profile of the failure ("" when ok) */
    int      profiles;       /* input profiles the gate ran (every seed of each) */
} GateReport;

json_t *gate_report_to_json(const GateReport *r);
void    gate_report_from_json(const json_t *j, GateReport *r);
/* One line: "incorrect: mismatch in O (shape 'B=1', seed 2, run 1): 17
 * bad of 4096, first at 12: got 1.5 want 1.25; max abs 0.3 rel 0.2". */
void    gate_report_format(const GateReport *r, char *buf, size_t cap);

/* ---- device part (worker only) ---------------------------------------- */

typedef struct Resident Resident;   /* resident.h */

/* Run the gate of one plan on the worker's resident state: candidate
 * module cand against reference module ref (worker module id ref_id, part
 * of the resident key), for every seed of opt. The pristine inputs and
 * the reference outputs come from the plan's bay (made on first use); the
 * candidate runs on working set A, then again on the fresh set B; every
 * comparison runs on the device and only summaries are read back. After
 * the runs, the resident state and the red zones are re-hashed: a
 * candidate that wrote outside its buffers fails `resident_modified` or
 * `out_of_bounds`. Fills *rep. Returns 0 when a verdict was reached
 * (rep->status says which, rep->fatal whether the context died), -1 only
 * for an internal failure (err). */
int gate_run(CudaCtx *c, Resident *res, const Plan *plan, CUmodule cand, CUmodule ref, int ref_id,
             const GateOptions *opt, GateReport *rep, EvoErr *err);

#endif

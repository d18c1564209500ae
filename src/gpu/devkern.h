/*
 * devkern: evoeng's own device kernels, which keep the evaluation state on
 * the GPU. The worker compiles them once (NVRTC, for its device) and uses
 * them for:
 *   fill     inputs from a counter-based generator: element i of a buffer
 *            depends only on (seed, salt, i), so a buffer is made in one
 *            pass on the device; gate_fill_host() is the same generator on
 *            the host (the tests compare the two);
 *   compare  a candidate output against the reference output with the
 *            gate's rules (sentinel, NaN/Inf, |got - ref| <= atol +
 *            rtol |ref|, the figures the zero-output guard needs), reduced
 *            to one DevSum;
 *   diff     exact comparison of two buffers, or of a buffer with a
 *            constant 16-bit pattern (inputs against their pristine copy,
 *            red zones around working buffers);
 *   hash     a 64-bit digest of many buffers in one launch (the resident
 *            inputs and references are re-hashed to prove nothing wrote
 *            them).
 * Only DevSum records (a few hundred bytes) cross to the host.
 *
 * Everything is enqueued on the context's stream and not synchronized;
 * the caller syncs once and reads the sums.
 */
#ifndef EVO_DEVKERN_H
#define EVO_DEVKERN_H

#include <stdint.h>

#include "gpu/cuda_api.h"
#include "task/plan.h"
#include "util.h"

/* A reduction record on the device, read back as it is. Maxima of
 * non-negative doubles are kept as their bit patterns; first_bad is kept
 * complemented (UINT64_MAX - index, 0 = none) so that one atomicMax finds
 * the smallest index and a zeroed record means "nothing yet". */
typedef struct DevSum {
    uint64_t nbad;        /* elements that fail (any reason) */
    uint64_t nunwritten;  /* still equal to the sentinel */
    uint64_t nnan;        /* NaN/Inf (not counting sentinels) */
    uint64_t nmis;        /* finite but out of tolerance (or reference not finite) */
    uint64_t first_bad_c; /* UINT64_MAX - first bad index; 0: none */
    uint64_t max_abs;     /* bits of a double */
    uint64_t max_rel;
    uint64_t ref_absmax;
    uint64_t got_absmax;
    uint64_t pad[7];      /* 128 bytes */
} DevSum;

/* Host view of a DevSum. */
int64_t devsum_first_bad(const DevSum *s);
double  devsum_real(uint64_t bits);

typedef struct DevKern DevKern;

/* Compile (NVRTC, for the context's device) and load the kernels. Returns
 * 0 or -1 (err names the failing call; an NVRTC failure includes the head
 * of its log). */
int devkern_open(DevKern **out, CudaCtx *c, EvoErr *err);
void devkern_close(DevKern **k);

/* The CUDA source of the kernels (for tests: it must compile for every
 * architecture evoeng supports). */
const char *devkern_source(void);

/* Fill n elements of dtype at dst from (seed, salt) per init (the
 * generator of gen.h: gate_gen_value). */
int devkern_fill(DevKern *k, CUdeviceptr dst, uint64_t n, DType dtype, const InitSpec *init, uint64_t seed,
                 uint64_t salt, CUresult *cu, EvoErr *err);

/* Compare got against ref (n elements of dtype) into *sum (device address
 * of a zeroed DevSum). tol_scale multiplies atol and rtol. */
int devkern_compare(DevKern *k, CUdeviceptr got, CUdeviceptr ref, uint64_t n, DType dtype, double atol, double rtol,
                    CUdeviceptr sum, CUresult *cu, EvoErr *err);

/* Count the 16-bit words that differ between a and b (b == 0: the constant
 * pattern), nwords of them, into *sum (nbad, first_bad_c). */
int devkern_diff(DevKern *k, CUdeviceptr a, CUdeviceptr b, unsigned pattern, uint64_t nwords, CUdeviceptr sum,
                 CUresult *cu, EvoErr *err);

/* One region to hash. */
typedef struct DevRegion {
    CUdeviceptr ptr;
    uint64_t    nwords;   /* 16-bit words */
} DevRegion;

/* Hash n regions into out[0..n) (host array), synchronously (one launch,
 * one small copy each way). The digest of a region is the wrapping sum of
 * mix(index, word) over its words: any change to a word changes it except
 * with probability ~2^-64. */
int devkern_hash(DevKern *k, const DevRegion *regs, int n, uint64_t *out, CUresult *cu, EvoErr *err);

#endif

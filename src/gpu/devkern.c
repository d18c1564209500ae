/*
 * devkern: the worker's own kernels (fill, compare, diff, hash). See
 * devkern.h. The CUDA source below is compiled once per worker with NVRTC;
 * it includes no header, so it needs nothing from the toolkit at run time
 * but libnvrtc.
 */
#include "gpu/devkern.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "compile/nvrtc.h"
#include "gpu/gen.h"
#include "gpu/gensrc.h"

/* The kernels, after the generator's source (gensrc.h), which defines
 * u64, u32, u16, mix64 and gen_value. The host mirror of the generator is
 * gate_gen_value (gen.c). */
static const char kernel_src[] = GEN_SOURCE
    "struct DevSum { u64 nbad, nunwritten, nnan, nmis, first_bad_c, max_abs, max_rel, ref_absmax, got_absmax, pad[7]; };\n"
    /* f32 -> f16, round to nearest even (the host's gate_f32_to_f16) */
    "__device__ u16 f2h(float f) {\n"
    "    u32 x = __float_as_uint(f), sign = (x >> 16) & 0x8000u, ex = (x >> 23) & 0xffu, mant = x & 0x7fffffu, h, rem, mid;\n"
    "    if (ex == 0xff) return (u16)(sign | 0x7c00u | (mant ? 0x200u : 0));\n"
    "    int e = (int)ex - 127 + 15;\n"
    "    if (e >= 31) return (u16)(sign | 0x7c00u);\n"
    "    if (e <= 0) {\n"
    "        int shift = 14 - e;\n"
    "        if (shift > 24) return (u16)sign;\n"
    "        mant |= 0x800000u; h = mant >> shift; rem = mant & ((1u << shift) - 1); mid = 1u << (shift - 1);\n"
    "        if (rem > mid || (rem == mid && (h & 1))) h++;\n"
    "        return (u16)(sign | h);\n"
    "    }\n"
    "    h = ((u32)e << 10) | (mant >> 13); rem = mant & 0x1fffu;\n"
    "    if (rem > 0x1000u || (rem == 0x1000u && (h & 1))) h++;\n"
    "    return (u16)(sign | h);\n"
    "}\n"
    "__device__ u16 f2bf(float f) {\n"
    "    u32 x = __float_as_uint(f);\n"
    "    if ((x & 0x7f800000u) == 0x7f800000u && (x & 0x7fffffu)) return (u16)((x >> 16) | 0x40u);\n"
    "    x += 0x7fffu + ((x >> 16) & 1u);\n"
    "    return (u16)(x >> 16);\n"
    "}\n"
    "__device__ float h2f(u16 h) {\n"
    "    u32 sign = (u32)(h & 0x8000u) << 16, ex = (h >> 10) & 0x1fu, mant = h & 0x3ffu;\n"
    "    if (ex == 0) { float f = (float)mant * 5.9604644775390625e-8f; return sign ? -f : f; }\n"
    "    if (ex == 31) return __uint_as_float(sign | 0x7f800000u | (mant << 13));\n"
    "    return __uint_as_float(sign | ((ex - 15 + 127) << 23) | (mant << 13));\n"
    "}\n"
    "__device__ double ld(int dt, const void *p, u64 i) {\n"
    "    if (dt == 0) return h2f(((const u16 *)p)[i]);\n"
    "    if (dt == 1) return __uint_as_float((u32)((const u16 *)p)[i] << 16);\n"
    "    if (dt == 2) return ((const float *)p)[i];\n"
    "    return ((const int *)p)[i];\n"
    "}\n"
    "__device__ bool sentinel(int dt, const void *p, u64 i) {\n"
    "    if (dt <= 1) return ((const u16 *)p)[i] == 0xFFFFu;\n"
    "    if (dt == 2) return ((const u32 *)p)[i] == 0x7FFFFFFFu;\n"
    "    return ((const u32 *)p)[i] == 0x7FBADBADu;\n"
    "}\n"
    "__device__ void st(int dt, void *p, u64 i, double v) {\n"
    "    if (dt == 0) ((u16 *)p)[i] = f2h((float)v);\n"
    "    else if (dt == 1) ((u16 *)p)[i] = f2bf((float)v);\n"
    "    else if (dt == 2) ((float *)p)[i] = (float)v;\n"
    "    else ((int *)p)[i] = (int)llround(v);\n"
    "}\n"
    "__device__ __forceinline__ u64 wsum(u64 v) {\n"
    "    for (int o = 16; o; o >>= 1) v += __shfl_down_sync(0xffffffffu, v, o);\n"
    "    return v;\n"
    "}\n"
    "__device__ __forceinline__ u64 wmax(u64 v) {\n"
    "    for (int o = 16; o; o >>= 1) { u64 t = __shfl_down_sync(0xffffffffu, v, o); v = t > v ? t : v; }\n"
    "    return v;\n"
    "}\n"
    "#define GRID_STRIDE(i, n) for (u64 i = blockIdx.x * (u64)blockDim.x + threadIdx.x; i < (n); i += (u64)gridDim.x * blockDim.x)\n"
    "extern \"C\" __global__ void evo_fill(void *dst, u64 n, int dt, GenSpec g, u64 key) {\n"
    "    GRID_STRIDE(i, n) st(dt, dst, i, gen_value(g, key, i));\n"
    "}\n"
    "extern \"C\" __global__ void evo_compare(const void *got, const void *ref, u64 n, int dt, double atol, double rtol,\n"
    "                                        DevSum *s) {\n"
    "    u64 nbad = 0, nun = 0, nnan = 0, nmis = 0, fb = 0;\n"
    "    double mabs = 0, mrel = 0, rmax = 0, gmax = 0;\n"
    "    GRID_STRIDE(i, n) {\n"
    "        double g = ld(dt, got, i), r = ld(dt, ref, i);\n"
    "        bool bad = false;\n"
    "        if (isfinite(r) && fabs(r) > rmax) rmax = fabs(r);\n"
    "        if (sentinel(dt, got, i)) { nun++; bad = true; }\n"
    "        else if (!isfinite(g)) { nnan++; bad = true; }\n"
    "        else {\n"
    "            double d = fabs(g - r);\n"
    "            if (fabs(g) > gmax) gmax = fabs(g);\n"
    "            if (!isfinite(r)) { bad = true; nmis++; }\n"
    "            else {\n"
    "                if (d > mabs) mabs = d;\n"
    "                if (r != 0 && d / fabs(r) > mrel) mrel = d / fabs(r);\n"
    "                if (d > atol + rtol * fabs(r)) { bad = true; nmis++; }\n"
    "            }\n"
    "        }\n"
    "        if (bad) { nbad++; if (~i > fb) fb = ~i; }\n"
    "    }\n"
    "    nbad = wsum(nbad); nun = wsum(nun); nnan = wsum(nnan); nmis = wsum(nmis); fb = wmax(fb);\n"
    "    u64 b0 = wmax((u64)__double_as_longlong(mabs)), b1 = wmax((u64)__double_as_longlong(mrel));\n"
    "    u64 b2 = wmax((u64)__double_as_longlong(rmax)), b3 = wmax((u64)__double_as_longlong(gmax));\n"
    "    if ((threadIdx.x & 31) == 0) {\n"
    "        if (nbad) atomicAdd(&s->nbad, nbad);\n"
    "        if (nun) atomicAdd(&s->nunwritten, nun);\n"
    "        if (nnan) atomicAdd(&s->nnan, nnan);\n"
    "        if (nmis) atomicAdd(&s->nmis, nmis);\n"
    "        if (fb) atomicMax(&s->first_bad_c, fb);\n"
    "        if (b0) atomicMax(&s->max_abs, b0);\n"
    "        if (b1) atomicMax(&s->max_rel, b1);\n"
    "        if (b2) atomicMax(&s->ref_absmax, b2);\n"
    "        if (b3) atomicMax(&s->got_absmax, b3);\n"
    "    }\n"
    "}\n"
    "extern \"C\" __global__ void evo_diff(const u16 *a, const u16 *b, u32 pat, u64 n, DevSum *s) {\n"
    "    u64 nbad = 0, fb = 0;\n"
    "    GRID_STRIDE(i, n) {\n"
    "        if (a[i] != (b ? b[i] : (u16)pat)) { nbad++; if (~i > fb) fb = ~i; }\n"
    "    }\n"
    "    nbad = wsum(nbad); fb = wmax(fb);\n"
    "    if ((threadIdx.x & 31) == 0) {\n"
    "        if (nbad) atomicAdd(&s->nbad, nbad);\n"
    "        if (fb) atomicMax(&s->first_bad_c, fb);\n"
    "    }\n"
    "}\n"
    "struct Chunk { u64 ptr, start, n, region; };\n"
    "extern \"C\" __global__ void evo_hash(const Chunk *ch, u64 *out) {\n"
    "    Chunk c = ch[blockIdx.x];\n"
    "    const u16 *p = (const u16 *)c.ptr;\n"
    "    u64 h = 0;\n"
    "    for (u64 i = c.start + threadIdx.x; i < c.start + c.n; i += blockDim.x)\n"
    "        h += mix64(i * 0x9E3779B97F4A7C15ull + (u64)p[i] * 0xD1B54A32D192ED03ull + 1);\n"
    "    h = wsum(h);\n"
    "    if ((threadIdx.x & 31) == 0) atomicAdd(&out[c.region], h);\n"
    "}\n";

enum { K_FILL, K_COMPARE, K_DIFF, K_HASH, K_N };
static const char *const kernel_names[K_N] = {"evo_fill", "evo_compare", "evo_diff", "evo_hash"};

#define HASH_CHUNK (64u * 1024u)   /* 16-bit words a block of evo_hash takes */

/* One block's share of a region to hash (the kernel's Chunk). */
typedef struct HashChunk {
    uint64_t ptr, start, n, region;
} HashChunk;

struct DevKern {
    CudaCtx    *c;
    CUmodule    mod;
    CUfunction  fn[K_N];
    CUdeviceptr chunks, digests; /* devkern_hash's work list and results (grown as needed) */
    size_t      cap_chunks, cap_digests;
    unsigned    grid;            /* CTAs for grid-stride kernels */
};

const char *devkern_source(void)
{
    return kernel_src;
}

int64_t devsum_first_bad(const DevSum *s)
{
    return s->first_bad_c ? (int64_t)(UINT64_MAX - s->first_bad_c) : -1;
}

double devsum_real(uint64_t bits)
{
    double d;
    memcpy(&d, &bits, sizeof(d));
    return d;
}

int devkern_open(DevKern **out, CudaCtx *c, EvoErr *err)
{
    CudaApi *api = c->api;
    CompileRequest req = {0};
    CompileResult res = {0};
    DevKern *k = xcalloc(1, sizeof(*k));
    *out = NULL;
    k->c = c;
    req.source = devkern_source();
    req.name = "evoeng_devkern.cu";
    req.arch = c->info.arch;
    if (nvrtc_compile(&req, &res, err) != 0)
        goto fail;
    if (!res.ok) {
        err_set(err, "compiling evoeng's own kernels for %s: %s: %.400s", req.arch, res.error, res.log);
        goto fail;
    }
    EVO_CU(api, api->cuModuleLoadData(&k->mod, res.cubin), err);
    for (int i = 0; i < K_N; i++)
        EVO_CU(api, api->cuModuleGetFunction(&k->fn[i], k->mod, kernel_names[i]), err);
    k->grid = (unsigned)(c->info.sm_count > 0 ? c->info.sm_count * 8 : 512);
    nvrtc_result_free(&res);
    *out = k;
    return 0;
fail:
    nvrtc_result_free(&res);
    devkern_close(&k);
    return -1;
}

void devkern_close(DevKern **pk)
{
    DevKern *k = pk ? *pk : NULL;
    if (!k)
        return;
    if (k->chunks)
        k->c->api->cuMemFree(k->chunks);
    if (k->digests)
        k->c->api->cuMemFree(k->digests);
    if (k->mod)
        k->c->api->cuModuleUnload(k->mod);
    free(k);
    *pk = NULL;
}

/* Launch kernel f over n elements (grid-stride, 256 threads), y blocks in
 * the second dimension. */
static int launch(DevKern *k, int f, uint64_t n, unsigned y, void **params, CUresult *cu, EvoErr *err)
{
    uint64_t want = (n + 255) / 256;
    unsigned gx = want < k->grid ? (unsigned)(want > 0 ? want : 1) : k->grid;
    CUresult r = k->c->api->cuLaunchKernel(k->fn[f], gx, y, 1, 256, 1, 1, 0, k->c->stream, params, NULL);
    if (cu)
        *cu = r;
    if (r != CUDA_SUCCESS) {
        cuda_check(k->c->api, r, "cuLaunchKernel", err);
        return err_prefix(err, "evoeng's %s kernel", kernel_names[f]);
    }
    return 0;
}

int devkern_fill(DevKern *k, CUdeviceptr dst, uint64_t n, DType dtype, const InitSpec *init, uint64_t seed,
                 uint64_t salt, CUresult *cu, EvoErr *err)
{
    unsigned long long key = gate_seed_key(seed, salt), nn = n;
    int dt = (int)dtype;
    GenArgs g = gen_args(init);
    void *params[] = {&dst, &nn, &dt, &g, &key};
    return launch(k, K_FILL, n, 1, params, cu, err);
}

int devkern_compare(DevKern *k, CUdeviceptr got, CUdeviceptr ref, uint64_t n, DType dtype, double atol, double rtol,
                    CUdeviceptr sum, CUresult *cu, EvoErr *err)
{
    unsigned long long nn = n;
    int dt = (int)dtype;
    void *params[] = {&got, &ref, &nn, &dt, &atol, &rtol, &sum};
    return launch(k, K_COMPARE, n, 1, params, cu, err);
}

int devkern_diff(DevKern *k, CUdeviceptr a, CUdeviceptr b, unsigned pattern, uint64_t nwords, CUdeviceptr sum,
                 CUresult *cu, EvoErr *err)
{
    unsigned long long nn = nwords;
    void *params[] = {&a, &b, &pattern, &nn, &sum};
    return launch(k, K_DIFF, nwords, 1, params, cu, err);
}

/* Make the device array *buf hold at least want elements of size es. */
static CUresult grow(DevKern *k, CUdeviceptr *buf, size_t *cap, size_t want, size_t es)
{
    if (want <= *cap)
        return CUDA_SUCCESS;
    size_t n = *cap ? *cap : 256;
    while (n < want)
        n *= 2;
    if (*buf)
        k->c->api->cuMemFree(*buf);
    *buf = 0;
    *cap = 0;
    CUresult r = k->c->api->cuMemAlloc(buf, n * es);
    if (r == CUDA_SUCCESS)
        *cap = n;
    return r;
}

/* Every region is cut into chunks of HASH_CHUNK words, one block each, so
 * one launch covers them all whatever their sizes (a grid sized by the
 * largest region left most blocks idle: 7.8 ms for 310 MiB on an H200). */
int devkern_hash(DevKern *k, const DevRegion *regs, int n, uint64_t *out, CUresult *cu, EvoErr *err)
{
    CudaApi *api = k->c->api;
    CUstream s = k->c->stream;
    CUresult r = CUDA_SUCCESS;
    size_t nch = 0, at = 0;
    for (int i = 0; i < n; i++)
        nch += (regs[i].nwords + HASH_CHUNK - 1) / HASH_CHUNK;
    HashChunk *ch = xcalloc(nch + 1, sizeof(*ch));
    for (int i = 0; i < n; i++)
        for (uint64_t st = 0; st < regs[i].nwords; st += HASH_CHUNK)
            ch[at++] = (HashChunk){regs[i].ptr, st, regs[i].nwords - st < HASH_CHUNK ? regs[i].nwords - st : HASH_CHUNK,
                                   (uint64_t)i};
    if ((r = grow(k, &k->chunks, &k->cap_chunks, nch + 1, sizeof(HashChunk))) != CUDA_SUCCESS ||
        (r = grow(k, &k->digests, &k->cap_digests, (size_t)n + 1, sizeof(uint64_t))) != CUDA_SUCCESS) {
        cuda_check(api, r, "cuMemAlloc", err);
        goto fail;
    }
    if ((nch && (r = api->cuMemcpyHtoD(k->chunks, ch, nch * sizeof(*ch))) != CUDA_SUCCESS) ||
        (r = api->cuMemsetD8Async(k->digests, 0, (size_t)n * sizeof(uint64_t), s)) != CUDA_SUCCESS) {
        cuda_check(api, r, "cuMemcpyHtoD/cuMemsetD8Async", err);
        goto fail;
    }
    void *params[] = {&k->chunks, &k->digests};
    if (nch && (r = api->cuLaunchKernel(k->fn[K_HASH], (unsigned)nch, 1, 1, 256, 1, 1, 0, s, params, NULL)) !=
                   CUDA_SUCCESS) {
        cuda_check(api, r, "cuLaunchKernel", err);
        goto fail;
    }
    if ((r = api->cuMemcpyDtoHAsync(out, k->digests, (size_t)n * sizeof(uint64_t), s)) != CUDA_SUCCESS ||
        (r = api->cuStreamSynchronize(s)) != CUDA_SUCCESS) {
        cuda_check(api, r, "cuMemcpyDtoHAsync/cuStreamSynchronize", err);
        goto fail;
    }
    free(ch);
    if (cu)
        *cu = CUDA_SUCCESS;
    return 0;
fail:
    free(ch);
    if (cu)
        *cu = r;
    return err_prefix(err, "hashing the resident buffers");
}

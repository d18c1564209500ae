// STREAM triad a[i] = b[i] + s * c[i] over n floats: the bandwidth-bound
// task (templates/triad/task.json), used to check that the A/B timing stays
// unbiased for kernels that move more than the L2 holds.
//
// Knobs:
//   BLOCK        threads per block
//   VEC          floats per access: 1 (float), 2 (float2), 4 (float4)
//   UNROLL       vectors per thread per step, all loaded before any store
//   GRID_STRIDE  0: one step per thread, the grid covers n; 1: a grid-stride
//                loop over a grid of WAVES x the resident blocks (task.json)
//   WAVES        grid size of the grid-stride loop, in resident-block waves
//   CACHE        0: plain loads and stores; 1: __ldg (read-only path) loads;
//                2: streaming __ldcs loads and __stcs stores (evict first)
// The elements past the last whole vector (n % VEC of them) are done one by
// one by the first threads of block 0.
#ifndef BLOCK
#define BLOCK 256
#endif
#ifndef VEC
#define VEC 1
#endif
#ifndef UNROLL
#define UNROLL 1
#endif
#ifndef GRID_STRIDE
#define GRID_STRIDE 0
#endif
#ifndef WAVES
#define WAVES 1
#endif
#ifndef CACHE
#define CACHE 0
#endif

#if VEC == 4
typedef float4 vec_t;
#elif VEC == 2
typedef float2 vec_t;
#elif VEC == 1
typedef float vec_t;
#else
#error "VEC must be 1, 2 or 4"
#endif

#if CACHE == 2
#define LOAD(p) __ldcs(p)
#define STORE(p, v) __stcs((p), (v))
#elif CACHE == 1
#define LOAD(p) __ldg(p)
#define STORE(p, v) (*(p) = (v))
#else
#define LOAD(p) (*(p))
#define STORE(p, v) (*(p) = (v))
#endif

static __device__ __forceinline__ float fma_s(float b, float s, float c) { return b + s * c; }
static __device__ __forceinline__ float2 fma_s(float2 b, float s, float2 c)
{
    return make_float2(b.x + s * c.x, b.y + s * c.y);
}
static __device__ __forceinline__ float4 fma_s(float4 b, float s, float4 c)
{
    return make_float4(b.x + s * c.x, b.y + s * c.y, b.z + s * c.z, b.w + s * c.w);
}

extern "C" __global__ void __launch_bounds__(BLOCK) triad(float *a, const float *b, const float *c, float s, int n)
{
    const long long nv = n / VEC;   /* whole vectors */
    vec_t *av = reinterpret_cast<vec_t *>(a);
    const vec_t *bv = reinterpret_cast<const vec_t *>(b);
    const vec_t *cv = reinterpret_cast<const vec_t *>(c);
    const long long step = (long long)gridDim.x * BLOCK * UNROLL;
    long long i0 = (long long)blockIdx.x * BLOCK * UNROLL + threadIdx.x;
#if GRID_STRIDE
    for (; i0 < nv; i0 += step)
#else
    (void)step;
    if (i0 < nv)
#endif
    {
        vec_t rb[UNROLL], rc[UNROLL];
#pragma unroll
        for (int u = 0; u < UNROLL; u++) {
            long long i = i0 + (long long)u * BLOCK;
            if (i < nv) {
                rb[u] = LOAD(bv + i);
                rc[u] = LOAD(cv + i);
            }
        }
#pragma unroll
        for (int u = 0; u < UNROLL; u++) {
            long long i = i0 + (long long)u * BLOCK;
            if (i < nv)
                STORE(av + i, fma_s(rb[u], s, rc[u]));
        }
    }
    if (VEC > 1 && blockIdx.x == 0) {
        long long t = nv * VEC + threadIdx.x;
        if (t < n)
            a[t] = b[t] + s * c[t];
    }
}

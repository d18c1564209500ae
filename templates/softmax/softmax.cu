// Row softmax, fp16 in and out, fp32 math: Y[r, :] = softmax(X[r, :]) for
// X, Y of shape [rows, cols], row-major and contiguous.
//
// Each block handles ROWS_PER_BLOCK rows; its THREADS threads split into
// ROWS_PER_BLOCK groups of whole warps, one group per row. A group makes
// one pass over its row keeping an online (max, sum of exp) pair per
// thread, combines the pairs (warp shuffles, then shared memory across the
// group's warps), and makes a second pass to write exp(x - max) / sum.
// Loads and stores move VEC halves at a time when every row start is
// aligned to that (cols % VEC == 0); otherwise a scalar path runs, so any
// cols is correct.
//
// Knobs (macros with defaults; the evoeng renderer prepends #defines):
//   THREADS         threads per block (a multiple of 32 * ROWS_PER_BLOCK)
//   ROWS_PER_BLOCK  rows per block
//   VEC             halves per vector access: 1, 2, 4 or 8
#include <cuda_fp16.h>

#ifndef THREADS
#define THREADS 256
#endif
#ifndef ROWS_PER_BLOCK
#define ROWS_PER_BLOCK 1
#endif
#ifndef VEC
#define VEC 4
#endif

#define SM_GROUP (THREADS / ROWS_PER_BLOCK)      // threads per row
#define SM_GROUP_WARPS (SM_GROUP / 32)

static_assert(THREADS % (32 * ROWS_PER_BLOCK) == 0, "a row group must be whole warps");
static_assert(VEC == 1 || VEC == 2 || VEC == 4 || VEC == 8, "VEC must be 1, 2, 4 or 8");

template <int N> struct alignas(2 * N) HalfVec {
    __half h[N];
};

// Fold one value into a running (max m, sum s of exp(x - m)).
__device__ __forceinline__ void sm_add(float &m, float &s, float x)
{
    if (x > m) {
        s = s * __expf(m - x) + 1.0f;
        m = x;
    } else {
        s += __expf(x - m);
    }
}

// Merge (m2, s2) into (m, s). Empty pairs have m = -inf.
__device__ __forceinline__ void sm_merge(float &m, float &s, float m2, float s2)
{
    float mm = fmaxf(m, m2);
    if (mm == -INFINITY)
        return;
    s = s * __expf(m - mm) + s2 * __expf(m2 - mm);
    m = mm;
}

extern "C" __global__ void __launch_bounds__(THREADS)
softmax_fwd(const __half *__restrict__ X, __half *__restrict__ Y, int rows, int cols)
{
    __shared__ float red_m[ROWS_PER_BLOCK][SM_GROUP_WARPS];
    __shared__ float red_s[ROWS_PER_BLOCK][SM_GROUP_WARPS];

    const int g = threadIdx.x / SM_GROUP;        // group (row) within the block
    const int t = threadIdx.x % SM_GROUP;        // thread within the group
    const int warp = t / 32, lane = t % 32;
    const int row = blockIdx.x * ROWS_PER_BLOCK + g;
    const int n = row < rows ? cols : 0;         // inactive groups still reach the barrier
    const __half *x = X + (size_t)(row < rows ? row : 0) * cols;
    __half *y = Y + (size_t)(row < rows ? row : 0) * cols;
    const bool vec = VEC > 1 && cols % VEC == 0;

    float m = -INFINITY, s = 0.0f;
    if (vec) {
        for (int i = t * VEC; i < n; i += SM_GROUP * VEC) {
            HalfVec<VEC> v = *reinterpret_cast<const HalfVec<VEC> *>(x + i);
#pragma unroll
            for (int k = 0; k < VEC; k++)
                sm_add(m, s, __half2float(v.h[k]));
        }
    } else {
        for (int i = t; i < n; i += SM_GROUP)
            sm_add(m, s, __half2float(x[i]));
    }

#pragma unroll
    for (int off = 16; off > 0; off >>= 1) {
        float m2 = __shfl_xor_sync(0xffffffffu, m, off);
        float s2 = __shfl_xor_sync(0xffffffffu, s, off);
        sm_merge(m, s, m2, s2);
    }
    if (lane == 0) {
        red_m[g][warp] = m;
        red_s[g][warp] = s;
    }
    __syncthreads();
    m = -INFINITY;
    s = 0.0f;
#pragma unroll
    for (int w = 0; w < SM_GROUP_WARPS; w++)
        sm_merge(m, s, red_m[g][w], red_s[g][w]);
    const float inv = 1.0f / s;

    if (vec) {
        for (int i = t * VEC; i < n; i += SM_GROUP * VEC) {
            HalfVec<VEC> v = *reinterpret_cast<const HalfVec<VEC> *>(x + i);
#pragma unroll
            for (int k = 0; k < VEC; k++)
                v.h[k] = __float2half(__expf(__half2float(v.h[k]) - m) * inv);
            *reinterpret_cast<HalfVec<VEC> *>(y + i) = v;
        }
    } else {
        for (int i = t; i < n; i += SM_GROUP)
            y[i] = __float2half(__expf(__half2float(x[i]) - m) * inv);
    }
}

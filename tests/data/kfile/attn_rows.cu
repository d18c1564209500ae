// A kernel file as people write them for nvcc, brought into evoeng unchanged
// (tests/test_kfile.c, tests/test_binary.sh): a template kernel, a
// namespaced helper kernel, an extern "C" host launcher with <<<...>>>,
// host-only includes and INFINITY from <math.h>.
//
// Causal attention, one thread per query row, fp32:
//   o[b, i, :] = sum_j softmax_j(q[b, i, :] . k[b, j, :] * scale) v[b, j, :],  j <= i
// q, k, v, o are [B, S, D], row-major. Slow and simple on purpose.
#include <cuda.h>
#include <cuda_runtime.h>
#include <mma.h>
#include <math.h>
#include <stdio.h>
#include <stdint.h>

using namespace nvcuda;

template <int S, int D>
__global__ void __launch_bounds__(128) attn_rows(const float *__restrict__ q, const float *__restrict__ k,
                                                 const float *__restrict__ v, float *__restrict__ o, int B,
                                                 float scale)
{
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    const int b = blockIdx.y;
    if (i >= S || b >= B)
        return;
    const int64_t base = (int64_t)b * S * D;
    const float *qi = q + base + (int64_t)i * D;
    float m = -INFINITY, l = 0.0f;
    float acc[D];
    for (int d = 0; d < D; d++)
        acc[d] = 0.0f;
    for (int j = 0; j < S; j++) {
        float s = -INFINITY;           /* the causal mask */
        if (j <= i) {
            s = 0.0f;
            for (int d = 0; d < D; d++)
                s += qi[d] * k[base + (int64_t)j * D + d];
            s *= scale;
        }
        if (s == -INFINITY)
            continue;
        float mn = fmaxf(m, s);
        float c = expf(m - mn), p = expf(s - mn);
        l = l * c + p;
        for (int d = 0; d < D; d++)
            acc[d] = acc[d] * c + p * v[base + (int64_t)j * D + d];
        m = mn;
    }
    for (int d = 0; d < D; d++)
        o[base + (int64_t)i * D + d] = acc[d] / l;
}

namespace util {
/* Fills a buffer with a constant (used by the launcher to clear o). */
__global__ void fill(float *x, float value, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        x[i] = value;
}
}  // namespace util

static void check(cudaError_t e, const char *what)
{
    if (e != cudaSuccess) {
        fprintf(stderr, "%s: %s\n", what, cudaGetErrorString(e));
        exit(1);
    }
}

extern "C" void attn_rows_launch(const float *q, const float *k, const float *v, float *o, int B, int S, int D,
                                 cudaStream_t stream)
{
    const float scale = 1.0f / sqrtf((float)D);
    util::fill<<<(B * S * D + 255) / 256, 256, 0, stream>>>(o, 0.0f, B * S * D);
    dim3 grid((S + 127) / 128, B);
    if (S == 128 && D == 64)
        attn_rows<128, 64><<<grid, 128, 0, stream>>>(q, k, v, o, B, scale);
    else if (S == 256 && D == 32)
        attn_rows<256, 32><<<grid, 128, 0, stream>>>(q, k, v, o, B, scale);
    check(cudaGetLastError(), "attn_rows");
}

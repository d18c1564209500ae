/*
 * mufu_ex2.cu: does ex2.approx.f16x2 give two exponentials for the MUFU
 * cost of one?
 *
 * At D = 64 the attention softmax's exponentials keep the MUFU unit as
 * busy as the two GEMMs keep the tensor cores (16 384 ex2 a 128x128 tile),
 * so a packed half-precision ex2 at the f32 instruction rate would halve
 * that.  This measures it: the same dependent-chain loop of ex2 in f32 and
 * in f16x2 (8 independent chains a thread, 8 CTAs of 256 threads an SM),
 * reporting exponentials a second, and the f16x2 form's error on [-20, 0]
 * against exp2f.  Read the SASS too:
 *
 *   nvcc -arch=sm_90 -cubin -o /tmp/m.cubin docs/results/raw/2026-11-25/mufu_ex2.cu
 *   cuobjdump -sass /tmp/m.cubin | grep MUFU
 *   nvcc -arch=sm_90 -o /tmp/mufu_ex2 docs/results/raw/2026-11-25/mufu_ex2.cu && /tmp/mufu_ex2
 *
 * On sm_90 each ex2.approx.f16x2 becomes two MUFU.EX2.F16 (one a half), so
 * the rate a exponential is the f32 one (15_mufu_ex2_h100.txt beside
 * this file).  Exit: 0 measured, 1 a CUDA error.
 */
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cuda_fp16.h>

#define ITERS  4096
#define CHAINS 8

#define CHECK(call)                                                          \
    do {                                                                     \
        cudaError_t e_ = (call);                                             \
        if (e_ != cudaSuccess) {                                             \
            fprintf(stderr, "mufu_ex2: %s: %s\n", #call, cudaGetErrorString(e_)); \
            return 1;                                                        \
        }                                                                    \
    } while (0)

__global__ void ex2_f32(float *out, float seed)
{
    float v[CHAINS];
    for (int i = 0; i < CHAINS; ++i)
        v[i] = -0.001f * (threadIdx.x + i) - seed;
    for (int it = 0; it < ITERS; ++it)
#pragma unroll
        for (int i = 0; i < CHAINS; ++i) {
            float y;
            asm volatile("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(v[i]));
            v[i] = y - 1.0f;
        }
    float s = 0.f;
    for (int i = 0; i < CHAINS; ++i)
        s += v[i];
    out[blockIdx.x * blockDim.x + threadIdx.x] = s;
}

__global__ void ex2_f16x2(float *out, float seed)
{
    unsigned v[CHAINS];
    for (int i = 0; i < CHAINS; ++i) {
        __half2 h = __floats2half2_rn(-0.001f * (threadIdx.x + i) - seed, -0.002f * i - seed);
        v[i] = *(unsigned *)&h;
    }
    const unsigned one = 0x3c003c00u;
    for (int it = 0; it < ITERS; ++it)
#pragma unroll
        for (int i = 0; i < CHAINS; ++i) {
            unsigned y;
            asm volatile("ex2.approx.f16x2 %0, %1;" : "=r"(y) : "r"(v[i]));
            asm("sub.f16x2 %0, %1, %2;" : "=r"(v[i]) : "r"(y), "r"(one));
        }
    float s = 0.f;
    for (int i = 0; i < CHAINS; ++i) {
        __half2 h = *(__half2 *)&v[i];
        s += __low2float(h) + __high2float(h);
    }
    out[blockIdx.x * blockDim.x + threadIdx.x] = s;
}

/* err[i]: absolute error of ex2.approx.f16x2 at x = -20 i / n; err[n + i]:
 * relative error where exp2(x) > 1e-3 (else 0) */
__global__ void ex2_f16x2_error(float *err)
{
    const int n = gridDim.x * blockDim.x, i = blockIdx.x * blockDim.x + threadIdx.x;
    const float x = -20.f * i / n;
    __half2 h = __floats2half2_rn(x, x);
    unsigned u = *(unsigned *)&h, y;
    asm("ex2.approx.f16x2 %0, %1;" : "=r"(y) : "r"(u));
    const float got = __low2float(*(__half2 *)&y), want = exp2f(x);
    err[i] = fabsf(got - want);
    err[n + i] = want > 1e-3f ? fabsf(got - want) / want : 0.f;
}

int main(void)
{
    int dev, sms;
    CHECK(cudaGetDevice(&dev));
    CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev));
    const int blocks = sms * 8, threads = 256;
    float *out;
    CHECK(cudaMalloc(&out, (size_t)blocks * threads * sizeof(float)));
    cudaEvent_t a, b;
    CHECK(cudaEventCreate(&a));
    CHECK(cudaEventCreate(&b));
    const double n = (double)blocks * threads * ITERS * CHAINS;
    for (int rep = 0; rep < 3; ++rep) {
        float t32, t16;
        CHECK(cudaEventRecord(a));
        ex2_f32<<<blocks, threads>>>(out, 0.5f);
        CHECK(cudaEventRecord(b));
        CHECK(cudaEventSynchronize(b));
        CHECK(cudaEventElapsedTime(&t32, a, b));
        CHECK(cudaEventRecord(a));
        ex2_f16x2<<<blocks, threads>>>(out, 0.5f);
        CHECK(cudaEventRecord(b));
        CHECK(cudaEventSynchronize(b));
        CHECK(cudaEventElapsedTime(&t16, a, b));
        printf("f32: %.3f ms %.1f Gexp/s | f16x2: %.3f ms %.1f Gexp/s (2 a instruction) | f16x2/f32 %.2f\n",
               t32, n / t32 / 1e6, t16, 2 * n / t16 / 1e6, (2 * n / t16) / (n / t32));
    }
    const int m = 1 << 20;
    float *err, *h = (float *)malloc((size_t)2 * m * sizeof(float));
    if (!h)
        return 1;
    CHECK(cudaMalloc(&err, (size_t)2 * m * sizeof(float)));
    ex2_f16x2_error<<<m / 256, 256>>>(err);
    CHECK(cudaMemcpy(h, err, (size_t)2 * m * sizeof(float), cudaMemcpyDeviceToHost));
    float ma = 0.f, mr = 0.f;
    for (int i = 0; i < m; ++i) {
        ma = fmaxf(ma, h[i]);
        mr = fmaxf(mr, h[m + i]);
    }
    printf("ex2.approx.f16x2 on [-20, 0]: max abs error %.2e, max rel error (exp2 > 1e-3) %.2e\n", ma, mr);
    free(h);
    return 0;
}

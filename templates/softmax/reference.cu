// Reference row softmax, fp16 in and out: one block of 128 threads per row,
// three plain passes (max, sum of exp, write) with shared-memory tree
// reductions and the accurate expf. Slow and obviously correct.
#include <cuda_fp16.h>

#define REF_THREADS 128

extern "C" __global__ void softmax_ref(const __half *X, __half *Y, int rows, int cols)
{
    __shared__ float buf[REF_THREADS];
    const int row = blockIdx.x;
    if (row >= rows)
        return;
    const __half *x = X + (size_t)row * cols;
    __half *y = Y + (size_t)row * cols;

    float m = -INFINITY;
    for (int i = threadIdx.x; i < cols; i += REF_THREADS)
        m = fmaxf(m, __half2float(x[i]));
    buf[threadIdx.x] = m;
    __syncthreads();
    for (int half = REF_THREADS / 2; half > 0; half /= 2) {
        if (threadIdx.x < half)
            buf[threadIdx.x] = fmaxf(buf[threadIdx.x], buf[threadIdx.x + half]);
        __syncthreads();
    }
    m = buf[0];
    __syncthreads();

    float s = 0.0f;
    for (int i = threadIdx.x; i < cols; i += REF_THREADS)
        s += expf(__half2float(x[i]) - m);
    buf[threadIdx.x] = s;
    __syncthreads();
    for (int half = REF_THREADS / 2; half > 0; half /= 2) {
        if (threadIdx.x < half)
            buf[threadIdx.x] += buf[threadIdx.x + half];
        __syncthreads();
    }
    s = buf[0];

    for (int i = threadIdx.x; i < cols; i += REF_THREADS)
        y[i] = __float2half(expf(__half2float(x[i]) - m) / s);
}

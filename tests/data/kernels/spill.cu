extern "C" __global__ void __launch_bounds__(1024, 2) spill_kernel(const float *x, float *y, const int *idx, int n)
{
    float a[64];
    int t = blockIdx.x * blockDim.x + threadIdx.x;
#pragma unroll
    for (int i = 0; i < 64; i++) a[i] = x[t * 64 + i] * (float)(i + 1);
#pragma unroll
    for (int k = 0; k < 8; k++)
#pragma unroll
        for (int i = 0; i < 64; i++) a[i] = a[i] * a[(i + k + 1) & 63] + 1.0f;
    float s = 0.0f;
    for (int i = 0; i < n; i++) s += a[idx[i] & 63];
    y[t] = s;
}

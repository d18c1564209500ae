// The scale task's entries, with scale_main keeping a small array in local
// memory: it is indexed by a value known only at run time, so the compiler
// cannot keep it in registers (a stack frame, no spill). The static gate
// refuses it where the task sets compile.max_stack_bytes below its size.
extern "C" __global__ void scale_main(const float *X, float *Y, float *P, int N, float alpha)
{
    float buf[64];
    const float *x = X + (size_t)blockIdx.y * N;
    float *y = Y + (size_t)blockIdx.y * N;
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= N)
        return;
    const int n = N & 63;                 /* a trip count known only at run time */
    for (int k = 0; k < n; k++)
        buf[k] = x[(i + k) % N];
    y[i] = alpha * (n ? buf[(i * 7) % n] : x[i]);
    (void)P;
}

extern "C" __global__ void scale_combine(const float *P, float *Y, long long n)
{
    (void)P; (void)Y; (void)n;
}

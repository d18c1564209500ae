extern "C" __global__ void reduce_smem(const float *x, float *out, int n)
{
    __shared__ float buf[256];
    __shared__ double extra[16];
    int t = threadIdx.x;
    buf[t] = t < n ? x[t] : 0.0f;
    if (t < 16) extra[t] = t;
    __syncthreads();
    for (int s = 128; s > 0; s >>= 1) {
        if (t < s) buf[t] += buf[t + s];
        __syncthreads();
    }
    if (t == 0) out[blockIdx.x] = buf[0] + (float)extra[3];
}

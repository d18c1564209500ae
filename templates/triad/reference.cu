// Reference STREAM triad: one thread per element, plain loads and stores.
extern "C" __global__ void triad_ref(float *a, const float *b, const float *c, float s, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        a[i] = b[i] + s * c[i];
}

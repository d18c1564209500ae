// 56 KB of static shared memory, over the 48 KB a block may declare:
// NVRTC fails with no error line in its log (tests/test_nvrtc.c).
extern "C" __global__ void smem_over(float *o)
{
    __shared__ float s[14336];
    s[threadIdx.x] = (float)threadIdx.x;
    __syncthreads();
    o[threadIdx.x] = s[(threadIdx.x + 1) % 14336];
}

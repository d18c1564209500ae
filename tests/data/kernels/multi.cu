__constant__ float coeffs[32];
__device__ float gtab[64];
template <int N> __global__ void scale_t(float *y) { y[threadIdx.x] *= (float)N * coeffs[threadIdx.x & 31]; }
template __global__ void scale_t<4>(float *);
extern "C" __global__ void k_add(float *y, const float *x) { y[threadIdx.x] += x[threadIdx.x] + gtab[threadIdx.x & 63]; }
extern "C" __global__ void k_mul(float *y, const float *x) { y[threadIdx.x] *= x[threadIdx.x]; }
__device__ __noinline__ float helper(float v) { float a[8]; for (int i=0;i<8;i++) a[i]=v*i; return a[(int)v & 7]; }
extern "C" __global__ void k_call(float *y) { y[threadIdx.x] = helper(y[threadIdx.x]); }

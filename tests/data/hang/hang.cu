// A planted hang for the watchdog (tests/test_gpu_hang.sh): y = 2 x, and
// with HANG=1 every thread first spins until x[0] holds a value the gate's
// inputs never hold, so the kernel never returns. The run must judge such a
// child `timeout` within seconds, kill and respawn its worker, and go on.
#ifndef THREADS
#define THREADS 256
#endif
#ifndef HANG
#define HANG 0
#endif

extern "C" __global__ void scale2(const float *x, float *y, int n)
{
    const int i = blockIdx.x * THREADS + threadIdx.x;
#if HANG
    volatile const float *vx = x;
    while (vx[0] != 12345.678f) {
    }
#endif
    if (i < n)
        y[i] = 2.0f * x[i];
}

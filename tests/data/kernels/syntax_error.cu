extern "C" __global__ void bad(float *y)
{
    y[threadIdx.x] = 1.0f
    int z = undefined_thing;
}

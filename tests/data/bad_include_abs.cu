// a kernel file that reads a host file into the compile log (refused before NVRTC)
#include "/etc/passwd"
extern "C" __global__ void scale_main(float *y) {}

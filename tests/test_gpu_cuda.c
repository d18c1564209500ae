/*
 * test_gpu_cuda: the dlopen()ed driver table and the device query on a real
 * GPU (suite gpu). Exits 77 (skip) when libcuda.so.1 or a device is missing.
 */
#include "cuda_api.h"
#include "testhelp.h"

#include <stdio.h>
#include <stdlib.h>

static CudaApi *api;

static void test_query(void)
{
    DeviceInfo d;
    EvoErr err = {{0}};
    int rc = cuda_query_device(api, 0, &d, &err);
    CHECK_MSG(rc == 0, "%s", err.msg);
    if (rc != 0)
        return;
    printf("device: %s arch %s cc %d.%d SMs %d smem/block %d optin %d smem/SM %d regs/SM %d L2 %lld "
           "mem %lld clock %d kHz memclock %d kHz bus %d bits driver %d peak %.0f TFLOP/s %.0f GB/s\n",
           d.name, d.arch, d.cc_major, d.cc_minor, d.sm_count, d.smem_per_block, d.smem_per_block_optin,
           d.smem_per_sm, d.regs_per_sm, d.l2_bytes, d.mem_bytes, d.clock_khz, d.mem_clock_khz, d.mem_bus_bits,
           d.driver_version, d.peak_tflops_fp16, d.peak_gbps);
    CHECK(d.name[0] != 0);
    CHECK(d.cc_major >= 5);
    CHECK(d.sm_count > 0);
    CHECK(d.warp_size == 32);
    CHECK(d.smem_per_block_optin >= d.smem_per_block);
    CHECK(d.l2_bytes > 0);
    CHECK(d.mem_bytes > 0);
    CHECK(d.driver_version >= 11000);
    CHECK(!d.is_profile);
}

static void test_error_text(void)
{
    DeviceInfo d;
    EvoErr err = {{0}};
    CHECK(cuda_query_device(api, 4096, &d, &err) != 0);
    printf("bad ordinal: %s\n", err.msg);
    CHECK_CONTAINS(err.msg, "device 4096");
    /* the check helper names the call and the error */
    CHECK(cuda_check(api, CUDA_ERROR_INVALID_IMAGE, "api->cuModuleLoadData(&m, img)", &err) == -1);
    CHECK_STR(err.msg, "cuModuleLoadData: CUDA_ERROR_INVALID_IMAGE: device kernel image is invalid");
}

static void test_context(void)
{
    CudaCtx c;
    EvoErr err = {{0}};
    int rc = cuda_context_open(api, 0, &c, &err);
    CHECK_MSG(rc == 0, "%s", err.msg);
    if (rc == 0) {
        CUmodule m = NULL;
        const char junk[] = "not a cubin";
        CUresult r = api->cuModuleLoadData(&m, junk);
        CHECK(r != CUDA_SUCCESS);
        cuda_check(api, r, "api->cuModuleLoadData(&m, junk)", &err);
        printf("junk module: %s\n", err.msg);
        CHECK_CONTAINS(err.msg, "cuModuleLoadData: CUDA_ERROR_");
    }
    cuda_context_close(&c);
}

int main(void)
{
    EvoErr err = {{0}};
    int n = 0;
    if (cuda_load(&api, &err) != 0) {
        printf("skip: %s\n", err.msg);
        return 77;
    }
    if (api->cuInit(0) != CUDA_SUCCESS || api->cuDeviceGetCount(&n) != CUDA_SUCCESS || n <= 0) {
        printf("skip: no CUDA device\n");
        cuda_close(&api);
        return 77;
    }
    RUN(test_query);
    RUN(test_error_text);
    RUN(test_context);
    cuda_close(&api);
    return test_report();
}

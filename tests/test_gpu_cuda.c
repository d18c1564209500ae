/*
 * test_gpu_cuda: the dlopen()ed driver table and the device query on a real
 * GPU (suite gpu). Exits 77 (skip) when libcuda.so.1 or a device is missing.
 */
#include "gpu/cuda_api.h"
#include "gpu/devkern.h"
#include "gpu/gate.h"
#include "testhelp.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

/* The distributions the fill is checked on: every kind, and both row
 * scales (rows of 64 and of 7 elements). */
static const struct {
    const char *name;
    InitSpec    s;
} fill_cases[] = {
    {"normal", {.kind = INIT_NORMAL, .a = 0.25, .b = 1.5}},
    {"normal std 4", {.kind = INIT_NORMAL, .b = 4}},
    {"uniform", {.kind = INIT_UNIFORM, .a = -2, .b = 3}},
    {"zero", {.kind = INIT_ZERO}},
    {"const", {.kind = INIT_CONST, .a = 0.25}},
    {"outlier", {.kind = INIT_OUTLIER, .b = 1, .p = 0.01, .c = 10}},
    {"normal lognormal", {.kind = INIT_NORMAL, .b = 1, .rows = ROWS_LOGNORMAL, .rb = 1, .row_len = 64}},
    {"uniform x uniform", {.kind = INIT_UNIFORM, .a = -1, .b = 1, .rows = ROWS_UNIFORM, .ra = 0.5, .rb = 2, .row_len = 7}},
};

/* evoeng's own kernels against their host mirrors: the device generator
 * makes the same bytes as gate_fill_host for every dtype and
 * distribution, and the device comparison gives gate_compare's figures. */
static void test_devkern(void)
{
    CudaCtx c;
    DevKern *k = NULL;
    EvoErr err = {{0}};
    CUresult cu;
    const uint64_t n = 3000001;   /* odd: the last normal pair is half used */
    CUdeviceptr d = 0, d2 = 0, sum = 0;
    unsigned char *host = xmalloc(n * 4), *dev = xmalloc(n * 4);
    if (cuda_context_open(api, 0, &c, &err) != 0) {
        CHECK_MSG(0, "%s", err.msg);
        return;
    }
    CHECK_MSG(devkern_open(&k, &c, &err) == 0, "%s", err.msg);
    CHECK(api->cuMemAlloc(&d, n * 4) == CUDA_SUCCESS && api->cuMemAlloc(&d2, n * 4) == CUDA_SUCCESS &&
          api->cuMemAlloc(&sum, sizeof(DevSum)) == CUDA_SUCCESS);
    for (int dt = DT_F16; k && dt <= DT_I32; dt++)
        for (size_t in = 0; in < EVO_ARRAY_LEN(fill_cases); in++) {
            PlanBuffer b = {0};
            uint64_t differ = 0, first = 0;
            size_t bytes = n * (size_t)dtype_size((DType)dt);
            b.dtype = (DType)dt;
            b.count = n;
            b.init = fill_cases[in].s;
            b.seed_salt = 77 + (uint64_t)dt;
            gate_fill_host(&b, 5, host);
            CHECK(devkern_fill(k, d, n, b.dtype, &b.init, 5, b.seed_salt, &cu, &err) == 0);
            CHECK(api->cuStreamSynchronize(c.stream) == CUDA_SUCCESS);
            CHECK(api->cuMemcpyDtoH(dev, d, bytes) == CUDA_SUCCESS);
            for (uint64_t i = 0; i < n; i++)
                if (gate_load(b.dtype, dev, i) != gate_load(b.dtype, host, i) && !differ++)
                    first = i;
            printf("  fill %-4s %-17s: %llu of %llu elements differ from the host%s\n", dtype_name(b.dtype),
                   fill_cases[in].name, (unsigned long long)differ, (unsigned long long)n,
                   differ ? " (first shown below)" : "");
            if (differ)
                printf("    [%llu] device %.9g host %.9g\n", (unsigned long long)first,
                       gate_load(b.dtype, dev, first), gate_load(b.dtype, host, first));
            CHECK_MSG(differ == 0, "device fill differs from gate_fill_host: %llu elements", (unsigned long long)differ);
        }
    /* compare: plant every kind of failure and check the figures */
    for (int dt = DT_F16; k && dt <= DT_F32; dt++) {
        PlanBuffer b = {0};
        GateCmp want;
        DevSum got;
        size_t bytes = n * (size_t)dtype_size((DType)dt);
        b.dtype = (DType)dt;
        b.count = n;
        b.init.b = 1;
        b.seed_salt = 3;
        gate_fill_host(&b, 1, host);      /* reference */
        memcpy(dev, host, bytes);         /* candidate: the reference, then damaged */
        gate_fill_sentinel(b.dtype, dev + 17 * dtype_size(b.dtype), 3);
        if (dt == DT_F32) {
            ((float *)dev)[1000] += 0.5f;
            ((float *)dev)[2000] = NAN;
        } else {
            ((uint16_t *)dev)[1000] ^= 0x0400;   /* an exponent bit: a large error */
            ((uint16_t *)dev)[2000] = 0x7e00;    /* NaN */
        }
        gate_compare(b.dtype, dev, host, n, 0.01, 0.01, &want);
        CHECK(api->cuMemcpyHtoD(d, dev, bytes) == CUDA_SUCCESS && api->cuMemcpyHtoD(d2, host, bytes) == CUDA_SUCCESS &&
              api->cuMemsetD8(sum, 0, sizeof(DevSum)) == CUDA_SUCCESS);
        CHECK(devkern_compare(k, d, d2, n, b.dtype, 0.01, 0.01, sum, &cu, &err) == 0);
        CHECK(api->cuStreamSynchronize(c.stream) == CUDA_SUCCESS && api->cuMemcpyDtoH(&got, sum, sizeof(got)) == 0);
        printf("  compare %-4s: nbad %llu/%llu unwritten %llu/%llu nan %llu/%llu first %lld/%lld max abs %.6g/%.6g "
               "max rel %.6g/%.6g (device/host)\n", dtype_name(b.dtype), (unsigned long long)got.nbad,
               (unsigned long long)want.nbad, (unsigned long long)got.nunwritten, (unsigned long long)want.nunwritten,
               (unsigned long long)got.nnan, (unsigned long long)want.nnan, (long long)devsum_first_bad(&got),
               (long long)want.first_bad, devsum_real(got.max_abs), want.max_abs, devsum_real(got.max_rel),
               want.max_rel);
        CHECK(got.nbad == want.nbad && got.nunwritten == want.nunwritten && got.nnan == want.nnan);
        CHECK(devsum_first_bad(&got) == want.first_bad && want.first_bad == 17);
        CHECK(devsum_real(got.max_abs) == want.max_abs && devsum_real(got.max_rel) == want.max_rel);
        CHECK(devsum_real(got.ref_absmax) == want.ref_absmax && devsum_real(got.got_absmax) == want.got_absmax);
        /* diff against itself and a pattern; hash changes with one word */
        {
            DevRegion r = {d, bytes / 2};
            uint64_t h1 = 0, h2 = 0;
            CHECK(devkern_hash(k, &r, 1, &h1, &cu, &err) == 0);
            CHECK(api->cuMemsetD16(d + 2 * 12345, 0x1234, 1) == CUDA_SUCCESS);
            CHECK(devkern_hash(k, &r, 1, &h2, &cu, &err) == 0);
            CHECK(h1 != h2);
            CHECK(api->cuMemsetD8(sum, 0, sizeof(DevSum)) == CUDA_SUCCESS);
            CHECK(devkern_diff(k, d, d2, 0, bytes / 2, sum, &cu, &err) == 0);
            CHECK(api->cuStreamSynchronize(c.stream) == CUDA_SUCCESS &&
                  api->cuMemcpyDtoH(&got, sum, sizeof(got)) == 0);
            CHECK(got.nbad >= 5 && devsum_first_bad(&got) == 17 * dtype_size(b.dtype) / 2);
        }
    }
    if (d)
        api->cuMemFree(d);
    if (d2)
        api->cuMemFree(d2);
    if (sum)
        api->cuMemFree(sum);
    devkern_close(&k);
    cuda_context_close(&c);
    free(host);
    free(dev);
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
    RUN(test_devkern);
    cuda_close(&api);
    return test_report();
}

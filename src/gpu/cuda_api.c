/*
 * cuda_api: dlopen()ed CUDA driver table, error names, device query, the
 * worker's context and its device-side plan instances. See cuda_api.h.
 */
#include "gpu/cuda_api.h"

#include <dlfcn.h>
#include <stddef.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>

/* ---- loading ---------------------------------------------------------- */

typedef struct Sym {
    const char *names[2]; /* tried in order; the first found wins */
    size_t      offset;   /* of the field in CudaApi */
    int         required;
} Sym;

#define SYM(field, name, req) {{name, NULL}, offsetof(CudaApi, field), req}
#define SYM2(field, n1, n2, req) {{n1, n2}, offsetof(CudaApi, field), req}

static const Sym syms[] = {
    SYM(cuInit, "cuInit", 1),
    SYM(cuDriverGetVersion, "cuDriverGetVersion", 1),
    SYM(cuGetErrorName, "cuGetErrorName", 1),
    SYM(cuGetErrorString, "cuGetErrorString", 1),
    SYM(cuDeviceGetCount, "cuDeviceGetCount", 1),
    SYM(cuDeviceGet, "cuDeviceGet", 1),
    SYM(cuDeviceGetName, "cuDeviceGetName", 1),
    SYM(cuDeviceGetAttribute, "cuDeviceGetAttribute", 1),
    SYM(cuDeviceTotalMem, "cuDeviceTotalMem_v2", 1),
    SYM(cuDevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain", 1),
    SYM(cuDevicePrimaryCtxRelease, "cuDevicePrimaryCtxRelease_v2", 1),
    SYM(cuCtxSetCurrent, "cuCtxSetCurrent", 1),
    SYM(cuCtxSynchronize, "cuCtxSynchronize", 1),
    SYM(cuModuleLoadData, "cuModuleLoadData", 1),
    SYM(cuModuleUnload, "cuModuleUnload", 1),
    SYM(cuModuleGetFunction, "cuModuleGetFunction", 1),
    SYM(cuFuncGetAttribute, "cuFuncGetAttribute", 1),
    SYM(cuFuncSetAttribute, "cuFuncSetAttribute", 1),
    SYM(cuLaunchKernel, "cuLaunchKernel", 1),
    SYM(cuMemAlloc, "cuMemAlloc_v2", 1),
    SYM(cuMemFree, "cuMemFree_v2", 1),
    SYM(cuMemcpyHtoD, "cuMemcpyHtoD_v2", 1),
    SYM(cuMemcpyDtoH, "cuMemcpyDtoH_v2", 1),
    SYM(cuMemsetD8, "cuMemsetD8_v2", 1),
    SYM(cuMemsetD16, "cuMemsetD16_v2", 1),
    SYM(cuMemsetD32, "cuMemsetD32_v2", 1),
    SYM(cuMemsetD32Async, "cuMemsetD32Async", 1),
    SYM(cuStreamCreate, "cuStreamCreate", 1),
    SYM(cuStreamDestroy, "cuStreamDestroy_v2", 1),
    SYM(cuStreamSynchronize, "cuStreamSynchronize", 1),
    SYM(cuEventCreate, "cuEventCreate", 1),
    SYM(cuEventDestroy, "cuEventDestroy_v2", 1),
    SYM(cuEventRecord, "cuEventRecord", 1),
    SYM(cuEventSynchronize, "cuEventSynchronize", 1),
    SYM2(EventElapsedTime, "cuEventElapsedTime_v2", "cuEventElapsedTime", 1),
    SYM(cuOccupancyMaxActiveBlocksPerMultiprocessor, "cuOccupancyMaxActiveBlocksPerMultiprocessor", 1),
    SYM(cuMemcpyDtoHAsync, "cuMemcpyDtoHAsync_v2", 1),
    SYM(cuMemcpyDtoDAsync, "cuMemcpyDtoDAsync_v2", 1),
    SYM(cuMemsetD8Async, "cuMemsetD8Async", 1),
    SYM(cuMemsetD16Async, "cuMemsetD16Async", 1),
    SYM(cuStreamBeginCapture, "cuStreamBeginCapture_v2", 1),
    SYM(cuStreamEndCapture, "cuStreamEndCapture", 1),
    SYM(cuGraphInstantiateWithFlags, "cuGraphInstantiateWithFlags", 1),
    SYM(cuGraphLaunch, "cuGraphLaunch", 1),
    SYM(cuGraphExecDestroy, "cuGraphExecDestroy", 1),
    SYM(cuGraphDestroy, "cuGraphDestroy", 1),
    SYM(cuMemGetInfo, "cuMemGetInfo_v2", 0),
    SYM(cuTensorMapEncodeTiled, "cuTensorMapEncodeTiled", 0),
    SYM2(cuDeviceGetUuid, "cuDeviceGetUuid_v2", "cuDeviceGetUuid", 0),
    SYM(cuDeviceGetPCIBusId, "cuDeviceGetPCIBusId", 0),
    SYM(cuMemHostAlloc, "cuMemHostAlloc", 0),
    SYM(cuMemFreeHost, "cuMemFreeHost", 0),
    SYM(cuMemHostGetDevicePointer, "cuMemHostGetDevicePointer_v2", 0),
    SYM(cuStreamWaitValue32, "cuStreamWaitValue32_v2", 0),
    SYM2(cuDevicePrimaryCtxSetFlags, "cuDevicePrimaryCtxSetFlags_v2", "cuDevicePrimaryCtxSetFlags", 0),
    SYM(cuEventQuery, "cuEventQuery", 0),
};

int cuda_load_from(const char *path, CudaApi **out, EvoErr *err)
{
    CudaApi *api = xcalloc(1, sizeof(*api));
    *out = NULL;
    dlerror();
    api->lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!api->lib) {
        const char *e = dlerror();
        err_set(err, "dlopen(%s): %s (is the NVIDIA driver installed?)", path, e ? e : "unknown error");
        goto fail;
    }
    for (size_t i = 0; i < EVO_ARRAY_LEN(syms); i++) {
        const Sym *s = &syms[i];
        void *fp = NULL;
        const char *why = NULL;
        for (int k = 0; k < 2 && s->names[k] && !fp; k++) {
            dlerror();
            fp = dlsym(api->lib, s->names[k]);
            if (!fp)
                why = dlerror();
        }
        if (!fp && s->required) {
            err_set(err, "dlsym(%s, %s): %s (driver too old?)", path, s->names[0], why ? why : "not found");
            goto fail;
        }
        memcpy((char *)api + s->offset, &fp, sizeof(fp));
    }
    *out = api;
    return 0;
fail:
    cuda_close(&api);
    return -1;
}

int cuda_load(CudaApi **out, EvoErr *err)
{
    /* EVOENG_LIBCUDA overrides the library (tests use a path that does not
     * exist to check behaviour without a driver on a machine that has one). */
    const char *lib = getenv("EVOENG_LIBCUDA");
    return cuda_load_from(lib && *lib ? lib : "libcuda.so.1", out, err);
}

void cuda_close(CudaApi **api)
{
    if (!api || !*api)
        return;
    if ((*api)->lib)
        dlclose((*api)->lib);
    free(*api);
    *api = NULL;
}

/* ---- errors ----------------------------------------------------------- */

const char *cuda_error_name(const CudaApi *api, CUresult r)
{
    const char *s = NULL;
    if (api && api->cuGetErrorName && api->cuGetErrorName(r, &s) == CUDA_SUCCESS && s)
        return s;
    return "CUDA_ERROR_UNRECOGNIZED";
}

int cuda_check(const CudaApi *api, CUresult r, const char *call, EvoErr *err)
{
    const char *desc = NULL;
    const char *p = call;
    size_t n;
    if (r == CUDA_SUCCESS)
        return 0;
    /* "api->cuFoo(a, b)" -> "cuFoo" */
    const char *arrow = strstr(p, "->");
    const char *paren = strchr(p, '(');
    if (arrow && (!paren || arrow < paren))
        p = arrow + 2;
    paren = strchr(p, '(');
    n = paren ? (size_t)(paren - p) : strlen(p);
    if (!api || !api->cuGetErrorString || api->cuGetErrorString(r, &desc) != CUDA_SUCCESS || !desc)
        desc = "unknown error";
    return err_set(err, "%.*s: %s: %s", (int)n, p, cuda_error_name(api, r), desc);
}

int cuda_error_is_sticky(CUresult r)
{
    switch (r) {
    case CUDA_ERROR_ILLEGAL_ADDRESS:
    case CUDA_ERROR_MISALIGNED_ADDRESS:
    case CUDA_ERROR_LAUNCH_FAILED:
    case CUDA_ERROR_ILLEGAL_INSTRUCTION:
    case CUDA_ERROR_HARDWARE_STACK_ERROR:
    case CUDA_ERROR_INVALID_ADDRESS_SPACE:
    case CUDA_ERROR_INVALID_PC:
    case CUDA_ERROR_ASSERT:
    case CUDA_ERROR_LAUNCH_TIMEOUT:
    case CUDA_ERROR_ECC_UNCORRECTABLE:
    case CUDA_ERROR_CONTEXT_IS_DESTROYED:
    case CUDA_ERROR_UNKNOWN:
        return 1;
    default:
        return 0;
    }
}

/* ---- device query ----------------------------------------------------- */

int cuda_query_device(CudaApi *api, int ordinal, DeviceInfo *out, EvoErr *err)
{
    CUdevice dev;
    size_t total = 0;
    int count = 0;
    static const struct { CUdevice_attribute a; size_t off; } attrs[] = {
        {CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, offsetof(DeviceInfo, cc_major)},
        {CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, offsetof(DeviceInfo, cc_minor)},
        {CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, offsetof(DeviceInfo, sm_count)},
        {CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK, offsetof(DeviceInfo, max_threads)},
        {CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR, offsetof(DeviceInfo, max_threads_per_sm)},
        {CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK, offsetof(DeviceInfo, smem_per_block)},
        {CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN, offsetof(DeviceInfo, smem_per_block_optin)},
        {CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR, offsetof(DeviceInfo, smem_per_sm)},
        {CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_BLOCK, offsetof(DeviceInfo, regs_per_block)},
        {CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_MULTIPROCESSOR, offsetof(DeviceInfo, regs_per_sm)},
        {CU_DEVICE_ATTRIBUTE_MAX_BLOCKS_PER_MULTIPROCESSOR, offsetof(DeviceInfo, max_blocks_per_sm)},
        {CU_DEVICE_ATTRIBUTE_WARP_SIZE, offsetof(DeviceInfo, warp_size)},
        {CU_DEVICE_ATTRIBUTE_CLOCK_RATE, offsetof(DeviceInfo, clock_khz)},
        {CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE, offsetof(DeviceInfo, mem_clock_khz)},
        {CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH, offsetof(DeviceInfo, mem_bus_bits)},
    };
    int l2 = 0;

    memset(out, 0, sizeof(*out));
    EVO_CU(api, api->cuInit(0), err);
    EVO_CU(api, api->cuDeviceGetCount(&count), err);
    if (count <= 0) {
        err_set(err, "cuDeviceGetCount: no CUDA device found");
        goto fail;
    }
    if (ordinal < 0 || ordinal >= count) {
        err_set(err, "device %d does not exist (%d device%s found)", ordinal, count, count == 1 ? "" : "s");
        goto fail;
    }
    EVO_CU(api, api->cuDeviceGet(&dev, ordinal), err);
    EVO_CU(api, api->cuDeviceGetName(out->name, (int)sizeof(out->name), dev), err);
    out->ordinal = ordinal;
    out->device_count = count;
    CUuuid uuid;
    if (api->cuDeviceGetUuid && api->cuDeviceGetUuid(&uuid, dev) == CUDA_SUCCESS) {
        const unsigned char *u = (const unsigned char *)uuid.bytes;
        snprintf(out->uuid, sizeof(out->uuid),
                 "GPU-%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", u[0], u[1], u[2], u[3],
                 u[4], u[5], u[6], u[7], u[8], u[9], u[10], u[11], u[12], u[13], u[14], u[15]);
    }
    if (api->cuDeviceGetPCIBusId && api->cuDeviceGetPCIBusId(out->pci_bus_id, (int)sizeof(out->pci_bus_id), dev) !=
                                        CUDA_SUCCESS)
        out->pci_bus_id[0] = 0;
    for (size_t i = 0; i < EVO_ARRAY_LEN(attrs); i++) {
        int v = 0;
        /* A few attributes are deprecated on new drivers (clock rates):
         * they may fail or read 0; 0 means unknown, not an error. */
        if (api->cuDeviceGetAttribute(&v, attrs[i].a, dev) != CUDA_SUCCESS)
            v = 0;
        memcpy((char *)out + attrs[i].off, &v, sizeof(v));
    }
    EVO_CU(api, api->cuDeviceGetAttribute(&l2, CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE, dev), err);
    out->l2_bytes = l2;
    EVO_CU(api, api->cuDeviceTotalMem(&total, dev), err);
    out->mem_bytes = (long long)total;
    EVO_CU(api, api->cuDriverGetVersion(&out->driver_version), err);
    snprintf(out->arch, sizeof(out->arch), "sm_%d%d", out->cc_major, out->cc_minor);
    out->is_profile = 0;
    device_estimate_peaks(out);
    return 0;
fail:
    return -1;
}

/* ---- context ---------------------------------------------------------- */

int cuda_wait_mode(CudaWait *mode)
{
    const char *v = getenv("EVOENG_GPU_WAIT");
    *mode = CUDA_WAIT_BLOCK;
    if (!v || !*v)
        return 0;
    if (strcmp(v, "spin") == 0)
        *mode = CUDA_WAIT_SPIN;
    else if (strcmp(v, "sleep") == 0)
        *mode = CUDA_WAIT_SLEEP;
    else if (strcmp(v, "block") != 0)
        return -1;
    return 0;
}

int cuda_context_open(CudaApi *api, int ordinal, CudaCtx *c, EvoErr *err)
{
    memset(c, 0, sizeof(*c));
    c->api = api;
    c->dev = -1;
    if (cuda_query_device(api, ordinal, &c->info, err) != 0)
        goto fail;
    EVO_CU(api, api->cuDeviceGet(&c->dev, ordinal), err);
    (void)cuda_wait_mode(&c->wait);   /* a bad value waits as block; bench_env_check refuses it first */
    /* a wait that blocks leaves the core to the compile helpers; a context
     * already active (another user of the primary context in this process)
     * keeps its flags, which only changes how this process waits */
    if (c->wait != CUDA_WAIT_SPIN && api->cuDevicePrimaryCtxSetFlags)
        (void)api->cuDevicePrimaryCtxSetFlags(c->dev, CU_CTX_SCHED_BLOCKING_SYNC);
    EVO_CU(api, api->cuDevicePrimaryCtxRetain(&c->ctx, c->dev), err);
    EVO_CU(api, api->cuCtxSetCurrent(c->ctx), err);
    EVO_CU(api, api->cuStreamCreate(&c->stream, CU_STREAM_DEFAULT), err);
    return 0;
fail:
    cuda_context_close(c);
    return -1;
}

void cuda_context_close(CudaCtx *c)
{
    if (!c || !c->api)
        return;
    if (c->stream)
        c->api->cuStreamDestroy(c->stream);
    if (c->ctx)
        c->api->cuDevicePrimaryCtxRelease(c->dev);
    c->stream = NULL;
    c->ctx = NULL;
}

/* ---- plan instance ---------------------------------------------------- */

int cuda_plan_alloc(CudaCtx *c, const Plan *plan, CudaPlan *cp, EvoErr *err)
{
    CudaApi *api = c->api;
    int nb = plan->nbuffers > 0 ? plan->nbuffers : 1;
    memset(cp, 0, sizeof(*cp));
    cp->plan = plan;
    cp->dptr = xcalloc((size_t)nb, sizeof(*cp->dptr));
    cp->bytes = xcalloc((size_t)nb, sizeof(*cp->bytes));
    for (int i = 0; i < plan->nbuffers; i++) {
        const PlanBuffer *b = &plan->buffers[i];
        size_t bytes = (size_t)b->count * (size_t)dtype_size(b->dtype);
        cp->bytes[i] = bytes;
        if (bytes == 0)
            continue;
        /* round up so 16-byte vector tails stay inside the allocation */
        EVO_CU(api, api->cuMemAlloc(&cp->dptr[i], (bytes + 255) & ~(size_t)255), err);
    }
    return 0;
fail:
    err_prefix(err, "allocating buffers of shape '%s'", plan->shape_label ? plan->shape_label : "?");
    cuda_plan_free(c, cp);
    return -1;
}

void cuda_plan_free(CudaCtx *c, CudaPlan *cp)
{
    if (!cp)
        return;
    for (int i = 0; cp->dptr && cp->plan && i < cp->plan->nbuffers; i++)
        if (cp->dptr[i])
            c->api->cuMemFree(cp->dptr[i]);
    free(cp->dptr);
    free(cp->bytes);
    memset(cp, 0, sizeof(*cp));
}

/* Encode a tiled tensor map over the buffer at addr. Returns the
 * CUresult (CUDA_ERROR_NOT_SUPPORTED when the driver has no tensor maps),
 * with err filled on failure. */
static CUresult tmap_encode(const CudaApi *api, const PlanTmap *t, DType dt, CUdeviceptr addr, CUtensorMap *map,
                            EvoErr *err)
{
    static const CUtensorMapDataType types[] = {CU_TENSOR_MAP_DATA_TYPE_FLOAT16, CU_TENSOR_MAP_DATA_TYPE_BFLOAT16,
                                                CU_TENSOR_MAP_DATA_TYPE_FLOAT32, CU_TENSOR_MAP_DATA_TYPE_INT32};
    static const CUtensorMapSwizzle sw[] = {CU_TENSOR_MAP_SWIZZLE_NONE, CU_TENSOR_MAP_SWIZZLE_32B,
                                            CU_TENSOR_MAP_SWIZZLE_64B, CU_TENSOR_MAP_SWIZZLE_128B};
    static const CUtensorMapL2promotion l2[] = {CU_TENSOR_MAP_L2_PROMOTION_NONE, CU_TENSOR_MAP_L2_PROMOTION_L2_64B,
                                                CU_TENSOR_MAP_L2_PROMOTION_L2_128B,
                                                CU_TENSOR_MAP_L2_PROMOTION_L2_256B};
    cuuint64_t dims[TMAP_MAX_RANK], strides[TMAP_MAX_RANK];
    cuuint32_t box[TMAP_MAX_RANK], es[TMAP_MAX_RANK];
    CUresult r;
    if (!api->cuTensorMapEncodeTiled) {
        err_set(err, "cuTensorMapEncodeTiled: the driver has no tensor maps (CUDA 12 or later is needed)");
        return CUDA_ERROR_NOT_SUPPORTED;
    }
    if (t->rank < 1 || t->rank > TMAP_MAX_RANK || t->swizzle < 0 || t->swizzle > 3 || t->l2_promotion < 0 ||
        t->l2_promotion > 3) {
        err_set(err, "tensor map: rank %d, swizzle %d or L2 promotion %d out of range", t->rank, t->swizzle,
                t->l2_promotion);
        return CUDA_ERROR_INVALID_VALUE;
    }
    for (int d = 0; d < t->rank; d++) {
        dims[d] = t->dims[d];
        box[d] = t->box[d];
        es[d] = t->elem_strides[d] ? t->elem_strides[d] : 1;
        if (d > 0)
            strides[d - 1] = t->strides[d - 1];
    }
    r = api->cuTensorMapEncodeTiled(map, types[dt], (cuuint32_t)t->rank, (void *)(uintptr_t)addr, dims, strides, box,
                                    es, CU_TENSOR_MAP_INTERLEAVE_NONE, sw[t->swizzle], l2[t->l2_promotion],
                                    t->oob_nan ? CU_TENSOR_MAP_FLOAT_OOB_FILL_NAN_REQUEST_ZERO_FMA
                                               : CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
    if (r != CUDA_SUCCESS)
        cuda_check(api, r, "cuTensorMapEncodeTiled", err);
    return r;
}

int cuda_launches_prepare(CudaCtx *c, const CudaPlan *cp, CUmodule m, const PlanLaunch *l, int n,
                          CudaLaunches *out, CUresult *cu_err, EvoErr *err)
{
    CudaApi *api = c->api;
    CUresult r = CUDA_SUCCESS;
    size_t total = 0, off = 0;
    memset(out, 0, sizeof(*out));
    out->l = l;
    out->n = n;
    out->fn = xcalloc((size_t)(n > 0 ? n : 1), sizeof(*out->fn));
    out->params = xcalloc((size_t)(n > 0 ? n : 1), sizeof(*out->params));
    for (int i = 0; i < n; i++)
        for (int a = 0; a < l[i].nargs; a++)
            total += l[i].args[a].kind == ARG_TMAP ? sizeof(CUtensorMap) + 64 : 8;
    out->storage = xcalloc(total + 64, 1);
    for (int i = 0; i < n; i++) {
        const PlanLaunch *li = &l[i];
        r = api->cuModuleGetFunction(&out->fn[i], m, li->entry);
        if (r != CUDA_SUCCESS) {
            cuda_check(api, r, "cuModuleGetFunction", err);
            err_prefix(err, "launch %d entry '%s' (not in the module: is it extern \"C\"?)", i, li->entry);
            r = CUDA_SUCCESS; /* a plan/module mismatch, not a driver failure: status invalid */
            goto fail;
        }
        if (c->info.smem_per_block_optin > 0 && li->smem > (unsigned)c->info.smem_per_block_optin) {
            r = CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES;
            err_set(err, "launch %d entry '%s': dynamic shared memory %u bytes exceeds the device's opt-in limit %d",
                    i, li->entry, li->smem, c->info.smem_per_block_optin);
            goto fail;
        }
        if (li->smem > 48 * 1024) {
            r = api->cuFuncSetAttribute(out->fn[i], CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, (int)li->smem);
            if (r != CUDA_SUCCESS) {
                cuda_check(api, r, "cuFuncSetAttribute", err);
                err_prefix(err, "launch %d entry '%s' (dynamic smem %u bytes)", i, li->entry, li->smem);
                goto fail;
            }
        }
        out->params[i] = xcalloc((size_t)(li->nargs > 0 ? li->nargs : 1), sizeof(void *));
        for (int a = 0; a < li->nargs; a++) {
            const PlanArg *pa = &li->args[a];
            unsigned char *slot = out->storage + off;
            if (pa->kind == ARG_TMAP) {
                slot += (64 - (uintptr_t)slot % 64) % 64;   /* CUtensorMap is 64-byte aligned */
                off = (size_t)(slot - out->storage) + sizeof(CUtensorMap);
            } else {
                off += 8;
            }
            switch (pa->kind) {
            case ARG_BUFFER: {
                if (pa->buffer < 0 || pa->buffer >= cp->plan->nbuffers) {
                    r = CUDA_SUCCESS;
                    err_set(err, "launch %d entry '%s' argument %d: buffer index %d out of range", i, li->entry, a,
                            pa->buffer);
                    goto fail;
                }
                CUdeviceptr p = cp->dptr[pa->buffer];
                memcpy(slot, &p, sizeof(p));
                break;
            }
            case ARG_I32: { int32_t v = (int32_t)pa->i; memcpy(slot, &v, 4); break; }
            case ARG_I64: { int64_t v = pa->i; memcpy(slot, &v, 8); break; }
            case ARG_F32: { float v = (float)pa->f; memcpy(slot, &v, 4); break; }
            case ARG_F64: { double v = pa->f; memcpy(slot, &v, 8); break; }
            case ARG_TMAP:
                if (pa->buffer < 0 || pa->buffer >= cp->plan->nbuffers) {
                    r = CUDA_SUCCESS;
                    err_set(err, "launch %d entry '%s' argument %d: buffer index %d out of range", i, li->entry, a,
                            pa->buffer);
                    goto fail;
                }
                if ((r = tmap_encode(api, &pa->tmap, cp->plan->buffers[pa->buffer].dtype, cp->dptr[pa->buffer],
                                     (CUtensorMap *)slot, err)) != CUDA_SUCCESS) {
                    err_prefix(err, "launch %d entry '%s' argument %d (tensor map over '%s')", i, li->entry, a,
                               cp->plan->buffers[pa->buffer].name);
                    goto fail;
                }
                break;
            }
            out->params[i][a] = slot;
        }
    }
    if (cu_err)
        *cu_err = CUDA_SUCCESS;
    return 0;
fail:
    if (cu_err)
        *cu_err = r;
    cuda_launches_free(out);
    return -1;
}

int cuda_launches_run(CudaCtx *c, const CudaLaunches *cl, CUresult *cu_err, EvoErr *err)
{
    CudaApi *api = c->api;
    for (int i = 0; i < cl->n; i++) {
        const PlanLaunch *li = &cl->l[i];
        CUresult r = api->cuLaunchKernel(cl->fn[i], li->grid[0], li->grid[1], li->grid[2], li->block[0],
                                         li->block[1], li->block[2], li->smem, c->stream, cl->params[i], NULL);
        if (r != CUDA_SUCCESS) {
            if (cu_err)
                *cu_err = r;
            cuda_check(api, r, "cuLaunchKernel", err);
            return err_prefix(err, "launch %d entry '%s' grid (%u,%u,%u) block (%u,%u,%u) smem %u", i, li->entry,
                              li->grid[0], li->grid[1], li->grid[2], li->block[0], li->block[1], li->block[2],
                              li->smem);
        }
    }
    if (cu_err)
        *cu_err = CUDA_SUCCESS;
    return 0;
}

void cuda_launches_free(CudaLaunches *cl)
{
    if (!cl)
        return;
    if (cl->params)
        for (int i = 0; i < cl->n; i++)
            free(cl->params[i]);
    free(cl->params);
    free(cl->fn);
    free(cl->storage);
    memset(cl, 0, sizeof(*cl));
}

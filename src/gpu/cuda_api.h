/*
 * cuda_api: the CUDA driver, loaded at run time. libcuda.so.1 is never
 * linked: cuda_load() dlopen()s it and fills one table of function
 * pointers with the exact versioned symbol names, so the evoeng binary
 * runs (and its CPU commands work) on machines without a driver. The
 * toolkit's <cuda.h> is included only for its types and enums.
 *
 * Only the worker process (src/worker.c) should create a CUDA context;
 * `evoeng --version` may call cuda_load() + cuda_query_device() in the
 * main process because it exits right after.
 *
 * The second half of this module is the worker's device-side plan
 * instance (CudaPlan): the device buffers of one Plan, filling them,
 * launching a launch list on them and reading them back. gate.c and
 * bench.c build on it.
 *
 * (This file is not called cuda.h so that it does not shadow <cuda.h>.)
 */
#ifndef EVO_CUDA_API_H
#define EVO_CUDA_API_H

#include <stddef.h>
#include <stdint.h>

#include <cuda.h>

#include "device.h"
#include "task/plan.h"
#include "util.h"

/* The function table. Field names are the driver's names; where <cuda.h>
 * #defines a name to a versioned symbol (cuMemAlloc -> cuMemAlloc_v2), the
 * field is renamed the same way, consistently at every use. */
typedef struct CudaApi {
    void *lib;  /* dlopen handle */
    CUresult (*cuInit)(unsigned int flags);
    CUresult (*cuDriverGetVersion)(int *version);
    CUresult (*cuGetErrorName)(CUresult e, const char **s);
    CUresult (*cuGetErrorString)(CUresult e, const char **s);
    CUresult (*cuDeviceGetCount)(int *n);
    CUresult (*cuDeviceGet)(CUdevice *d, int ordinal);
    CUresult (*cuDeviceGetName)(char *name, int len, CUdevice d);
    CUresult (*cuDeviceGetAttribute)(int *v, CUdevice_attribute a, CUdevice d);
    CUresult (*cuDeviceTotalMem)(size_t *bytes, CUdevice d);
    CUresult (*cuDevicePrimaryCtxRetain)(CUcontext *ctx, CUdevice d);
    CUresult (*cuDevicePrimaryCtxRelease)(CUdevice d);
    CUresult (*cuCtxSetCurrent)(CUcontext ctx);
    CUresult (*cuCtxSynchronize)(void);
    CUresult (*cuModuleLoadData)(CUmodule *m, const void *image);
    CUresult (*cuModuleUnload)(CUmodule m);
    CUresult (*cuModuleGetFunction)(CUfunction *f, CUmodule m, const char *name);
    CUresult (*cuFuncGetAttribute)(int *v, CUfunction_attribute a, CUfunction f);
    CUresult (*cuFuncSetAttribute)(CUfunction f, CUfunction_attribute a, int v);
    CUresult (*cuLaunchKernel)(CUfunction f, unsigned gx, unsigned gy, unsigned gz,
                               unsigned bx, unsigned by, unsigned bz, unsigned smem,
                               CUstream s, void **params, void **extra);
    CUresult (*cuMemAlloc)(CUdeviceptr *p, size_t bytes);
    CUresult (*cuMemFree)(CUdeviceptr p);
    CUresult (*cuMemcpyHtoD)(CUdeviceptr dst, const void *src, size_t bytes);
    CUresult (*cuMemcpyDtoH)(void *dst, CUdeviceptr src, size_t bytes);
    CUresult (*cuMemsetD8)(CUdeviceptr p, unsigned char v, size_t n);
    CUresult (*cuMemsetD16)(CUdeviceptr p, unsigned short v, size_t n);
    CUresult (*cuMemsetD32)(CUdeviceptr p, unsigned int v, size_t n);
    CUresult (*cuMemsetD32Async)(CUdeviceptr p, unsigned int v, size_t n, CUstream s);
    CUresult (*cuStreamCreate)(CUstream *s, unsigned int flags);
    CUresult (*cuStreamDestroy)(CUstream s);
    CUresult (*cuStreamSynchronize)(CUstream s);
    CUresult (*cuEventCreate)(CUevent *e, unsigned int flags);
    CUresult (*cuEventDestroy)(CUevent e);
    CUresult (*cuEventRecord)(CUevent e, CUstream s);
    CUresult (*cuEventSynchronize)(CUevent e);
    CUresult (*EventElapsedTime)(float *ms, CUevent a, CUevent b); /* _v2 or v1 */
    CUresult (*cuOccupancyMaxActiveBlocksPerMultiprocessor)(int *n, CUfunction f, int block, size_t smem);
    CUresult (*cuMemcpyDtoHAsync)(void *dst, CUdeviceptr src, size_t bytes, CUstream s);
    CUresult (*cuMemcpyDtoDAsync)(CUdeviceptr dst, CUdeviceptr src, size_t bytes, CUstream s);
    CUresult (*cuMemsetD8Async)(CUdeviceptr p, unsigned char v, size_t n, CUstream s);
    CUresult (*cuMemsetD16Async)(CUdeviceptr p, unsigned short v, size_t n, CUstream s);
    /* CUDA graphs: timing replays a captured launch plan */
    CUresult (*cuStreamBeginCapture)(CUstream s, CUstreamCaptureMode mode);
    CUresult (*cuStreamEndCapture)(CUstream s, CUgraph *g);
    CUresult (*cuGraphInstantiateWithFlags)(CUgraphExec *e, CUgraph g, unsigned long long flags);
    CUresult (*cuGraphLaunch)(CUgraphExec e, CUstream s);
    CUresult (*cuGraphExecDestroy)(CUgraphExec e);
    CUresult (*cuGraphDestroy)(CUgraph g);
    /* optional (NULL when the driver lacks them) */
    CUresult (*cuDeviceGetUuid)(CUuuid *uuid, CUdevice d);
    CUresult (*cuDeviceGetPCIBusId)(char *id, int len, CUdevice d);
    /* timing's hold: the stream waits on a host-mapped word (bench.c) */
    CUresult (*cuMemHostAlloc)(void **p, size_t bytes, unsigned int flags);
    CUresult (*cuMemFreeHost)(void *p);
    CUresult (*cuMemHostGetDevicePointer)(CUdeviceptr *d, void *p, unsigned int flags);
    CUresult (*cuStreamWaitValue32)(CUstream s, CUdeviceptr addr, cuuint32_t value, unsigned int flags);
    CUresult (*cuMemGetInfo)(size_t *free_b, size_t *total_b);
    CUresult (*cuDevicePrimaryCtxSetFlags)(CUdevice d, unsigned int flags);
    CUresult (*cuEventQuery)(CUevent e);
    CUresult (*cuTensorMapEncodeTiled)(CUtensorMap *map, CUtensorMapDataType type, cuuint32_t rank, void *addr,
                                       const cuuint64_t *dims, const cuuint64_t *strides, const cuuint32_t *box,
                                       const cuuint32_t *elem_strides, CUtensorMapInterleave interleave,
                                       CUtensorMapSwizzle swizzle, CUtensorMapL2promotion l2,
                                       CUtensorMapFloatOOBfill oob);
} CudaApi;

/* dlopen("libcuda.so.1") and resolve the table. *out gets a new table the
 * caller releases with cuda_close(). Returns 0, or -1 with err naming the
 * library or the missing symbol and dlerror()'s text. Does not call
 * cuInit (cuda_query_device and cuda_context_open do). */
/* The library is $EVOENG_LIBCUDA when set (tests), else libcuda.so.1. */
int cuda_load(CudaApi **out, EvoErr *err);

/* Same as cuda_load() with an explicit library path (tests use a bogus
 * one to check the failure path). */
int cuda_load_from(const char *path, CudaApi **out, EvoErr *err);

/* dlclose and free the table; sets *api to NULL. NULL-safe. */
void cuda_close(CudaApi **api);

/* Turn a CUresult into an error: returns 0 for CUDA_SUCCESS, else fills err
 * with "NAME: CUDA_ERROR_X: description" where NAME is the called function
 * taken from `call` (text up to '(', without an "api->" prefix) and
 * returns -1. Use through EVO_CU. */
int cuda_check(const CudaApi *api, CUresult r, const char *call, EvoErr *err);

/* Call `call` (an expression yielding a CUresult) and jump to `fail` when
 * it fails, with err filled. Needs a `CudaApi *api`-like first argument,
 * an EvoErr * and a `fail:` label in the calling function. */
#define EVO_CU(api, call, err) \
    do { if (cuda_check((api), (call), #call, (err)) != 0) goto fail; } while (0)

/* The CUDA_ERROR_* name of r ("CUDA_ERROR_UNKNOWN(999)" style when the
 * driver does not know it). Static or driver-owned storage. */
const char *cuda_error_name(const CudaApi *api, CUresult r);

/* 1 when r leaves the context unusable (illegal address, misaligned
 * address, launch failure, illegal instruction, hardware stack error,
 * trap, ...): the worker must be replaced. */
int cuda_error_is_sticky(CUresult r);

/* cuInit(0), then fill *out with the facts of device `ordinal`: name, cc,
 * SMs, shared memory limits (default, opt-in, per SM), registers, L2,
 * clocks, bus width, total memory, driver version; then
 * device_estimate_peaks(). Returns 0, or -1 with err (e.g. no device:
 * "cuDeviceGet: CUDA_ERROR_INVALID_DEVICE: ..."). */
int cuda_query_device(CudaApi *api, int ordinal, DeviceInfo *out, EvoErr *err);

/* ---- context --------------------------------------------------------- */

/* How a thread waits for the GPU (EVOENG_GPU_WAIT):
 *  - block (the default): the context's waits (stream and context
 *    synchronisation: the gate, loads, copies) sleep until the GPU
 *    signals; the core goes to the compile helpers, which run SCHED_IDLE,
 *    so the woken thread gets it back at once. A timing sample's end
 *    event spins (cuEventSynchronize on an event without
 *    CU_EVENT_BLOCKING_SYNC): blocking there made an A/B 3 ms slower on
 *    one H200 and 7-10 ms on four, and a run 13-15% slower
 *    (docs/results/2026-11-28c-pipeline.md);
 *  - spin: the driver's default, a core spins through every wait;
 *  - sleep: waits block, but a timing sample is slept through for most of
 *    its expected length and its end polled.
 * The three measured against each other: docs/results/2026-11-27b-pipeline-waits.md. */
typedef enum CudaWait { CUDA_WAIT_BLOCK = 0, CUDA_WAIT_SPIN, CUDA_WAIT_SLEEP } CudaWait;

/* *mode from $EVOENG_GPU_WAIT ("block", "spin", "sleep"; unset or empty:
 * block). Returns 0, or -1 for another value (*mode is then block). */
int cuda_wait_mode(CudaWait *mode);

/* A context on one device (the primary context, made current on the
 * calling thread) plus one stream for all work. The stream is a blocking
 * one (CU_STREAM_DEFAULT), so the synchronous cuMemset and cuMemcpy calls on
 * the legacy stream are ordered with the kernels launched on it. */
typedef struct CudaCtx {
    CudaApi  *api;     /* borrowed */
    CUdevice  dev;
    CUcontext ctx;
    CUstream  stream;
    CudaWait  wait;    /* how its waits are done (cuda_wait_mode) */
    DeviceInfo info;
} CudaCtx;

/* cuInit, query the device, retain its primary context (with blocking
 * waits unless cuda_wait_mode says spin), make it current, create a
 * stream. Fills *c. Returns 0 or -1 (err). */
int cuda_context_open(CudaApi *api, int ordinal, CudaCtx *c, EvoErr *err);
/* Destroy the stream and release the primary context. Safe on a zeroed or
 * failed CudaCtx. */
void cuda_context_close(CudaCtx *c);

/* ---- plan instance --------------------------------------------------- */

/* Device buffers of one Plan. dptr[i] is 0 for a buffer not allocated
 * (count 0). Allocated with a 256-byte-aligned size. */
typedef struct CudaPlan {
    const Plan  *plan;   /* borrowed */
    CUdeviceptr *dptr;   /* nbuffers entries */
    size_t      *bytes;  /* nbuffers entries */
} CudaPlan;

/* Allocate every buffer of plan. Returns 0, or -1 (err; e.g. out of device
 * memory: the caller reports status "resource"). Partial allocations are
 * released on failure. */
int cuda_plan_alloc(CudaCtx *c, const Plan *plan, CudaPlan *cp, EvoErr *err);
/* Free the buffers (scrubbing outputs is the caller's business). */
void cuda_plan_free(CudaCtx *c, CudaPlan *cp);

/* A launch list made ready to run on a CudaPlan's buffers: functions
 * resolved from a module, kernel parameters packed, dynamic shared memory
 * opted in. Build once, run many times (timing loops stay cheap). */
typedef struct CudaLaunches {
    const PlanLaunch *l;      /* borrowed, n entries */
    int          n;
    CUfunction  *fn;          /* n entries */
    void      ***params;      /* n arrays of pointers into storage */
    unsigned char *storage;   /* argument values */
} CudaLaunches;

/* Prepare launches l[0..n) of cp's plan with module m. Resolves each
 * entry (cuModuleGetFunction), sets CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_
 * SIZE_BYTES when a launch asks for more than 48 KiB, and packs the
 * arguments (ARG_BUFFER becomes the buffer's device pointer, ARG_TMAP a
 * CUtensorMap encoded over the buffer with cuTensorMapEncodeTiled, passed
 * by value, 64-byte aligned). Returns 0,
 * or -1 with err (unknown entry, bad buffer index); *cu_err (may be NULL)
 * gets the failing CUresult or CUDA_SUCCESS for a non-driver failure
 * (unknown entry, bad buffer index). Dynamic shared memory above the
 * device's opt-in limit gives CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES (status
 * "resource"). */
int cuda_launches_prepare(CudaCtx *c, const CudaPlan *cp, CUmodule m, const PlanLaunch *l, int n,
                          CudaLaunches *out, CUresult *cu_err, EvoErr *err);

/* Enqueue every launch on c->stream, in order, without syncing. Returns 0
 * or -1 (err, *cu_err as above). */
int cuda_launches_run(CudaCtx *c, const CudaLaunches *cl, CUresult *cu_err, EvoErr *err);

/* Release what prepare allocated. Safe on a zeroed struct. */
void cuda_launches_free(CudaLaunches *cl);

#endif

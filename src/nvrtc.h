/*
 * nvrtc: run-time compilation of CUDA C++ to cubin with NVRTC, with the
 * full log kept, resource usage parsed from ptxas' verbose output, an
 * on-disk cache keyed by (source, options, arch, NVRTC version), and a
 * thread pool that compiles many sources in parallel.
 *
 * Needs no GPU: the target architecture is given explicitly ("sm_90").
 */
#ifndef EVO_NVRTC_H
#define EVO_NVRTC_H

#include <stddef.h>

#include "util.h"

typedef struct CompileRequest {
    const char  *source;      /* full CUDA C++ source text */
    const char  *name;        /* program name used in the log, e.g. "attention.cu" */
    const char  *arch;        /* "sm_90" */
    const char *const *options; /* extra NVRTC options (e.g. "-std=c++17"), may be NULL */
    int          noptions;
    int          fast_math;   /* 1: --use_fast_math */
    int          lineinfo;    /* 1: -lineinfo */
} CompileRequest;

/* Resource usage of one kernel, from ptxas -v. */
typedef struct KernelResources {
    char  name[128];          /* the function's (mangled or extern "C") name */
    int   registers;
    int   spill_stores;       /* bytes */
    int   spill_loads;        /* bytes */
    int   stack;              /* stack frame bytes */
    int   smem;               /* static shared memory bytes */
    int   cmem;               /* constant bank 0 bytes (params), -1 if not reported */
} KernelResources;

typedef struct CompileResult {
    int              ok;          /* 1 when a cubin was produced */
    int              cache_hit;   /* 1 when it came from the cache, not NVRTC */
    unsigned char   *cubin;       /* owned; NULL unless ok */
    size_t           cubin_len;
    char            *log;         /* full NVRTC + ptxas log, owned, never NULL */
    char            *options;     /* the exact option string used, owned */
    char             key[65];     /* cache key: sha256 of source, options, arch, NVRTC version */
    KernelResources *kernels;     /* owned, nkernels entries */
    int              nkernels;
    double           compile_ms;  /* wall time of the NVRTC call (0 on a cache hit) */
    char             error[512];  /* short reason when !ok, e.g. "NVRTC_ERROR_COMPILATION" */
} CompileResult;

/* NVRTC's version as major*1000 + minor*10 (e.g. 13000), or -1. */
int nvrtc_version(void);

/* Set the cache directory (created on demand); NULL disables the cache.
 * Process-wide; call before compiling. Default: no cache. */
void nvrtc_set_cache_dir(const char *dir);

/* Compile one request. Fills *res (caller frees with nvrtc_result_free).
 * Returns 0 when NVRTC ran (check res->ok for success: a compile error is
 * not a failure of this function), -1 when it could not run at all (err). */
int nvrtc_compile(const CompileRequest *req, CompileResult *res, EvoErr *err);

/* Compile n requests on a thread pool of `threads` workers (0: one per
 * core). res[i] corresponds to reqs[i]. Returns 0, or -1 if any request
 * could not be run at all. Results are identical to serial compilation. */
int nvrtc_compile_many(const CompileRequest *reqs, CompileResult *res, int n, int threads, EvoErr *err);

void nvrtc_result_free(CompileResult *res);

/* Largest per-kernel figure across res->kernels (registers, spills, smem). */
const KernelResources *nvrtc_find_kernel(const CompileResult *res, const char *name);

#endif

/*
 * nvrtc: run-time compilation of CUDA C++ to cubin with NVRTC, with the
 * full log kept, resource usage parsed from ptxas' verbose output, an
 * on-disk cache keyed by (source, options, arch, NVRTC version), and a
 * thread pool that compiles many sources in parallel. The key takes the
 * source as its preprocessor leaves it (canon.h) where that text exists,
 * so two sources that differ only in what the preprocessor drops share
 * one entry; EVOENG_CANON=0 keys on the source as it is.
 *
 * Needs no GPU: the target architecture is given explicitly ("sm_90").
 */
#ifndef EVO_NVRTC_H
#define EVO_NVRTC_H

#include <stddef.h>

#include "compile/ptxas.h"
#include "util.h"

typedef struct CompileRequest {
    const char  *source;      /* full CUDA C++ source text */
    const char  *name;        /* program name used in the log, e.g. "attention.cu" */
    const char  *arch;        /* "sm_90" */
    const char *const *options; /* extra NVRTC options (e.g. "-std=c++17"), may be NULL */
    int          noptions;
    int          fast_math;   /* 1: --use_fast_math */
    int          lineinfo;    /* 1: -lineinfo */
    const char *const *name_exprs; /* NVRTC name expressions (entries such as "k<128, 64>" or
                                * "ns::k"), lowered after the compile; may be NULL */
    int          nname_exprs;
    const char  *key;         /* NULL, or the cache key nvrtc_compile computed for this very
                               * request elsewhere (a compile helper's reply): not computed again */
} CompileRequest;

typedef struct CompileResult {
    int              ok;          /* 1 when a cubin was produced */
    int              cache_hit;   /* 1 when it came from the cache, not NVRTC */
    unsigned char   *cubin;       /* owned; NULL unless ok */
    size_t           cubin_len;
    char            *log;         /* full NVRTC + ptxas log, owned, never NULL */
    char            *options;     /* the exact option string used, owned */
    char             key[65];     /* cache key: sha256 of source (canon.h), options, arch, NVRTC version */
    KernelResources *kernels;     /* owned, nkernels entries */
    int              nkernels;
    double           compile_ms;  /* wall time of the NVRTC call (0 on a cache hit) */
    char             error[512];  /* short reason when !ok, e.g. "NVRTC_ERROR_COMPILATION" */
    char           **name_exprs;  /* owned copies of the request's name expressions */
    char           **lowered;     /* owned; lowered[i] is name_exprs[i]'s symbol in the cubin
                                   * ("_Z1kILi128ELi64EEvPKfPf"; an extern "C" name is itself), NULL unless ok */
    int              nnames;
} CompileResult;

/* NVRTC's version as major*1000 + minor*10 (e.g. 13000), or -1. */
int nvrtc_version(void);

/* Set the cache directory (created on demand); NULL disables the cache.
 * Process-wide; call before compiling. Default: no cache. The dir string
 * is copied. An entry is <dir>/<key>.cubin plus <dir>/<key>.json (log,
 * options, resources, compile ms, cubin sha256), each written atomically;
 * the .json is written last and is the commit record. An entry whose json
 * does not parse, whose key/options differ or whose cubin does not match
 * the recorded length and sha256 is ignored and rewritten. Successful
 * compiles and deterministic failures (NVRTC_ERROR_COMPILATION,
 * NVRTC_ERROR_INVALID_OPTION) are cached; a failure to write the cache
 * only warns. */
void nvrtc_set_cache_dir(const char *dir);

/* 1 when a cache directory is set (compilations are kept), else 0. */
int nvrtc_cache_enabled(void);

/* Compile one request. The program NVRTC sees is kfile's device view of
 * req->source (top-level host functions blanked out, lines kept), with the
 * kfile prelude pre-included and kfile's header stubs available (see
 * compile/kfile.h), and req->name_exprs added as name expressions, whose
 * lowered names res->lowered then holds. A failure on host code gets
 * kfile's hint (the line and the guard to add) appended to res->error and
 * to the log. Fills *res (caller frees with nvrtc_result_free).
 * Returns 0 when NVRTC ran (check res->ok for success: a compile error is
 * not a failure of this function), -1 when it could not run at all (err).
 * On a compile failure res->error names the call and code, e.g.
 * "nvrtcCompileProgram: NVRTC_ERROR_COMPILATION", and res->log holds
 * NVRTC's diagnostics ("<name>(<line>): error: ..."). Other NVRTC
 * failures (out of memory, internal errors) return -1 and are not cached.
 * *res is always left freeable, even on -1. Thread-safe. */
int nvrtc_compile(const CompileRequest *req, CompileResult *res, EvoErr *err);

/* Compile n requests on a thread pool of `threads` workers (0: one per
 * core). res[i] corresponds to reqs[i]. Returns 0, or -1 if any request
 * could not be run at all. Results are identical to serial compilation. */
int nvrtc_compile_many(const CompileRequest *reqs, CompileResult *res, int n, int threads, EvoErr *err);

void nvrtc_result_free(CompileResult *res);

/* The entry named `name` (exact match against KernelResources.name: the
 * extern "C" name, or the mangled one) in res->kernels, or NULL when it is
 * absent or name is NULL. The pointer stays valid until the result is
 * freed. For the largest figure across all kernels use
 * nvrtc_max_resources(). */
const KernelResources *nvrtc_find_kernel(const CompileResult *res, const char *name);

/* The lowered (mangled) name of name expression expr in a successful
 * compile of a request that named it (exact string match), or NULL. The
 * pointer stays valid until the result is freed. */
const char *nvrtc_lowered_name(const CompileResult *res, const char *expr);

/* Fill *out with the largest figure of each field across res->kernels
 * (registers, spills, stack, smem, cmem), name "*". With no kernels every
 * field is 0 and cmem is -1. */
void nvrtc_max_resources(const CompileResult *res, KernelResources *out);

/* Number of real NVRTC compilations (nvrtcCompileProgram calls) this
 * process has made; cache hits do not count. Atomic, any thread. */
int nvrtc_compile_count(void);

/* Process-wide compile figures since start: real compilations, compile
 * cache hits, and the CPU and wall seconds spent in nvrtcCompileProgram
 * (summed over threads). Atomic reads, any thread. */
typedef struct NvrtcStats {
    int    compiles, cache_hits;
    double cpu_s, wall_s;
    double remote_cpu_s;   /* of cpu_s, in helper processes (not in this process's CPU time) */
} NvrtcStats;
void nvrtc_stats(NvrtcStats *out);
/* acc += sign * x, field by field (sign 1: a sum, as of other processes'
 * figures; -1: a difference, as since a snapshot). */
void nvrtc_stats_add(NvrtcStats *acc, const NvrtcStats *x, int sign);
/* Count compilations made elsewhere for this process (a helper process,
 * compile/cserver.h) whose results this process then loaded from the
 * cache: compiles more, as many cache hits less, their CPU and wall ms. */
void nvrtc_stats_account(int compiles, double cpu_ms, double wall_ms);
/* The compile cache directory as a fresh string, or NULL when caching is
 * off. */
char *nvrtc_cache_dir(void);

/* The exact option list nvrtc_compile() would pass for req, in order:
 * --gpu-architecture=<arch>, -std=c++17 (only when req->options has no
 * -std), req->options, --use_fast_math (fast_math), -lineinfo (lineinfo),
 * --include-path=<CUDA include>, --include-path=<CUDA include>/cccl (when
 * that directory exists: cuda/std, cooperative groups),
 * --ptxas-options=-v, -default-device, --pre-include=evoeng_prelude.h.
 * *options gets them joined by single spaces (fresh string, caller frees;
 * the same text as CompileResult.options) and key the cache key: sha256
 * over a versioned, length-prefixed encoding of the NVRTC version, arch,
 * program name, each option, KFILE_VERSION, each name expression and the
 * source's canonical text (canon.h, with NVRTC's predefined names asked of
 * NVRTC under these options; the source itself when there is none, or
 * with EVOENG_CANON=0). Returns 0, or -1 when req is
 * invalid (no source, arch not "sm_*"), with err naming the field. */
int nvrtc_request_key(const CompileRequest *req, char **options, char key[65], EvoErr *err);

#endif

/*
 * device: facts about a GPU that tasks and reports use. They come either
 * from the real device (queried by the worker through the CUDA driver) or,
 * without a GPU, from a built-in architecture profile chosen with --arch.
 * Task expressions see them as variables: SM_COUNT, SMEM_PER_BLOCK_OPTIN,
 * SMEM_PER_SM, MAX_THREADS, REGS_PER_SM, REGS_PER_BLOCK, CC_MAJOR, CC_MINOR,
 * L2_BYTES, WARP_SIZE.
 */
#ifndef EVO_DEVICE_H
#define EVO_DEVICE_H

#include "util.h"

typedef struct DeviceInfo {
    char   name[256];         /* "NVIDIA H200" or "profile sm_90" */
    char   arch[16];          /* "sm_90": the NVRTC target */
    int    cc_major, cc_minor;
    int    sm_count;
    int    max_threads;       /* per block */
    int    max_threads_per_sm;
    int    smem_per_block;    /* default limit, bytes */
    int    smem_per_block_optin; /* opt-in maximum, bytes */
    int    smem_per_sm;       /* bytes */
    int    regs_per_block;
    int    regs_per_sm;
    int    max_blocks_per_sm;
    int    warp_size;
    long long l2_bytes;
    long long mem_bytes;      /* global memory */
    int    clock_khz;         /* SM clock, 0 if unknown */
    int    mem_clock_khz;
    int    mem_bus_bits;
    double peak_tflops_fp16;  /* dense tensor-core fp16, approximate */
    double peak_gbps;         /* DRAM bandwidth, GB/s */
    int    driver_version;    /* e.g. 13000; 0 for a profile */
    int    is_profile;        /* 1 when these facts come from --arch, not a GPU */
    int    ordinal;           /* CUDA device ordinal (0 for a profile) */
    int    device_count;      /* CUDA devices visible to the process (0 for a profile) */
    char   uuid[48];          /* "GPU-xxxxxxxx-...", "" if unknown */
    char   pci_bus_id[16];    /* "0000:19:00.0", "" if unknown */
} DeviceInfo;

/* The NVRTC target for d: d->arch, or with arch_specific its
 * arch-specific variant ("sm_90" -> "sm_90a", likewise sm_100a, sm_103a,
 * sm_110a, sm_120a, sm_121a) where one exists. Code compiled for such a
 * target runs on that exact compute capability only. Returns a string that
 * lives as long as d, or static storage; never NULL. */
const char *device_nvrtc_target(const DeviceInfo *d, int arch_specific);

/* Fill *out from the built-in profile for arch ("sm_80", "sm_86", "sm_89",
 * "sm_90", also accepted without the "sm_" prefix). Returns 0, or -1 with
 * err listing the known profiles. */
int device_profile(const char *arch, DeviceInfo *out, EvoErr *err);

/* Derive peak_tflops_fp16 and peak_gbps for a real device from its
 * compute capability, SM count, clocks and bus width (best effort). */
void device_estimate_peaks(DeviceInfo *d);

/* Look up a device fact by expression-variable name (SM_COUNT, ...).
 * Returns 1 and sets *val when the name is a device variable, else 0. */
int device_var(const DeviceInfo *d, const char *name, double *val);

/* The names device_var() knows, NULL-terminated (for error messages). */
extern const char *const device_var_names[];

/* The host's cores this process may use: the CPUs of its affinity mask
 * (taskset, cpusets), capped by a cgroup v2 CPU quota (/sys/fs/cgroup/
 * cpu.max, as `docker --cpus` sets), else the online CPUs. At least 1, at
 * most 1024. The compile farm's default size. */
int device_cores(void);

#endif

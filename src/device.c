/*
 * device: architecture profiles, device-fact variables and the host's
 * cores. See device.h.
 */
#include "device.h"

#include <limits.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

typedef struct Profile {
    const char *arch;
    const char *name;
    int cc_major, cc_minor, sm_count, max_threads_per_sm, smem_optin, smem_per_sm;
    int max_blocks_per_sm;
    long long l2_bytes;
    double tflops, gbps;
} Profile;

/* Representative parts: A100-SXM, A10/RTX 30, L4/RTX 40, H100-SXM. */
static const Profile profiles[] = {
    {"sm_80", "profile sm_80 (A100)", 8, 0, 108, 2048, 166912, 167936, 32, 41943040LL, 312.0, 2039.0},
    {"sm_86", "profile sm_86 (A10)", 8, 6, 72, 1536, 101376, 102400, 16, 6291456LL, 125.0, 600.0},
    {"sm_89", "profile sm_89 (L4)", 8, 9, 58, 1536, 101376, 102400, 24, 50331648LL, 121.0, 300.0},
    {"sm_90", "profile sm_90 (H100)", 9, 0, 132, 2048, 232448, 233472, 32, 52428800LL, 989.0, 3350.0},
};

int device_profile(const char *arch, DeviceInfo *out, EvoErr *err)
{
    char want[16];
    if (!arch)
        arch = "sm_90";
    snprintf(want, sizeof(want), "%s%s", strncmp(arch, "sm_", 3) == 0 ? "" : "sm_", arch);
    for (size_t i = 0; i < EVO_ARRAY_LEN(profiles); i++) {
        const Profile *p = &profiles[i];
        if (strcmp(p->arch, want) != 0)
            continue;
        memset(out, 0, sizeof(*out));
        snprintf(out->name, sizeof(out->name), "%s", p->name);
        snprintf(out->arch, sizeof(out->arch), "%s", p->arch);
        out->cc_major = p->cc_major;
        out->cc_minor = p->cc_minor;
        out->sm_count = p->sm_count;
        out->max_threads = 1024;
        out->max_threads_per_sm = p->max_threads_per_sm;
        out->smem_per_block = 49152;
        out->smem_per_block_optin = p->smem_optin;
        out->smem_per_sm = p->smem_per_sm;
        out->regs_per_block = 65536;
        out->regs_per_sm = 65536;
        out->max_blocks_per_sm = p->max_blocks_per_sm;
        out->warp_size = 32;
        out->l2_bytes = p->l2_bytes;
        out->peak_tflops_fp16 = p->tflops;
        out->peak_gbps = p->gbps;
        out->is_profile = 1;
        return 0;
    }
    return err_set(err, "unknown architecture '%s' (known profiles: sm_80, sm_86, sm_89, sm_90)", arch);
}

const char *device_nvrtc_target(const DeviceInfo *d, int arch_specific)
{
    static const char *const specific[] = {"sm_90a", "sm_100a", "sm_103a", "sm_110a", "sm_120a", "sm_121a"};
    if (!arch_specific)
        return d->arch;
    size_t n = strlen(d->arch);
    for (size_t i = 0; i < EVO_ARRAY_LEN(specific); i++)
        if (strncmp(specific[i], d->arch, n) == 0 && strcmp(specific[i] + n, "a") == 0)
            return specific[i];
    return d->arch;
}

void device_estimate_peaks(DeviceInfo *d)
{
    /* Dense fp16 tensor-core FLOP per SM per clock. */
    double per_sm = 0;
    int cc = d->cc_major * 10 + d->cc_minor;
    if (cc >= 90)
        per_sm = 4096;
    else if (cc == 80)
        per_sm = 2048;
    else if (cc >= 86)
        per_sm = 1024;
    else if (cc >= 70)
        per_sm = 1024;
    if (d->clock_khz > 0)
        d->peak_tflops_fp16 = per_sm * d->sm_count * (d->clock_khz * 1e3) / 1e12;
    if (d->mem_clock_khz > 0 && d->mem_bus_bits > 0)
        d->peak_gbps = 2.0 * d->mem_clock_khz * 1e3 * (d->mem_bus_bits / 8.0) / 1e9;
}

const char *const device_var_names[] = {
    "SM_COUNT", "SMEM_PER_BLOCK", "SMEM_PER_BLOCK_OPTIN", "SMEM_PER_SM", "MAX_THREADS",
    "MAX_THREADS_PER_SM", "REGS_PER_BLOCK", "REGS_PER_SM", "MAX_BLOCKS_PER_SM",
    "CC_MAJOR", "CC_MINOR", "CC", "L2_BYTES", "WARP_SIZE", NULL,
};

int device_var(const DeviceInfo *d, const char *name, double *val)
{
    struct { const char *n; double v; } vars[] = {
        {"SM_COUNT", d->sm_count},
        {"SMEM_PER_BLOCK", d->smem_per_block},
        {"SMEM_PER_BLOCK_OPTIN", d->smem_per_block_optin},
        {"SMEM_PER_SM", d->smem_per_sm},
        {"MAX_THREADS", d->max_threads},
        {"MAX_THREADS_PER_SM", d->max_threads_per_sm},
        {"REGS_PER_BLOCK", d->regs_per_block},
        {"REGS_PER_SM", d->regs_per_sm},
        {"MAX_BLOCKS_PER_SM", d->max_blocks_per_sm},
        {"CC_MAJOR", d->cc_major},
        {"CC_MINOR", d->cc_minor},
        {"CC", d->cc_major * 10 + d->cc_minor},
        {"L2_BYTES", (double)d->l2_bytes},
        {"WARP_SIZE", d->warp_size},
    };
    for (size_t i = 0; i < EVO_ARRAY_LEN(vars); i++) {
        if (strcmp(vars[i].n, name) == 0) {
            *val = vars[i].v;
            return 1;
        }
    }
    return 0;
}

/* ---- the host's cores ------------------------------------------------ */

/* The cgroup v2 quota "QUOTA PERIOD" of cpu.max in cores (rounded up), or
 * 0 when there is none ("max") or the file cannot be read. */
static int cgroup_quota_cores(void)
{
    FILE *f = fopen("/sys/fs/cgroup/cpu.max", "r");
    if (!f)
        return 0;
    char q[32] = "";
    long period = 0;
    int got = fscanf(f, "%31s %ld", q, &period);
    fclose(f);
    long quota = 0;
    if (got != 2 || period <= 0 || parse_long(q, 1, LONG_MAX, &quota))
        return 0;
    long n = (quota + period - 1) / period;
    return n > 1024 ? 1024 : (int)n;
}

int device_cores(void)
{
    long n = 0;
    cpu_set_t set;
    CPU_ZERO(&set);
    if (sched_getaffinity(0, sizeof(set), &set) == 0)
        n = CPU_COUNT(&set);
    if (n <= 0)
        n = sysconf(_SC_NPROCESSORS_ONLN);
    int quota = cgroup_quota_cores();
    if (quota > 0 && quota < n)
        n = quota;
    return n < 1 ? 1 : n > 1024 ? 1024 : (int)n;
}

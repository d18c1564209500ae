/*
 * harness: `evoeng export --format harness`, a standalone CUDA program
 * around one candidate. The .cu it writes holds, in order: the candidate's
 * rendered source (as compiled and measured), the task's reference kernel
 * (in namespace evo_ref), the gate's input generator, and host code that
 * allocates the plan's buffers, fills the inputs as the gate does (the
 * same counter-based generator and distributions, seed 1 unless --seed),
 * builds the tensor maps (cuTensorMapEncodeTiled), runs the reference and
 * the candidate's launch plan, compares every output with the task's
 * atol/rtol (max abs/rel error, PASS or FAIL with exit 1), then times the
 * plan with CUDA events (median). The host code sits behind
 * `#ifndef __CUDACC_RTC__`, so NVRTC compiles the device part alone.
 */
#ifndef EVO_HARNESS_H
#define EVO_HARNESS_H

#include "task/plan.h"
#include "util.h"

typedef struct HarnessSpec {
    const char *header;       /* provenance comment lines ("// ...\n"), may be NULL */
    const char *source;       /* the candidate's rendered source */
    const char *ref_source;   /* the reference rendered for the same shape */
    const Plan *plan;         /* the resolved plan of that shape */
    const char *nvcc_flags;   /* export_nvcc_flags() of the candidate's target */
    const char *file;         /* the harness's file name ("best_harness.cu"; NULL: "harness.cu") */
    double      recorded_us;  /* the latency evoeng measured (NaN: not recorded) */
} HarnessSpec;

/* Write the harness program for h into *out (fresh string). Its header
 * gives the build line: `nvcc FLAGS -O3 -o NAME FILE` (NAME: FILE without
 * its .cu), with `-lcuda` when the plan has tensor maps.
 * Returns 0, or -1 with err when h lacks a source, a reference or a plan,
 * the plan has no candidate launch, a launch names an argument buffer out
 * of range, or the candidate and the reference share an entry name (two
 * extern "C" kernels of one name cannot live in one program). */
int harness_render(const HarnessSpec *h, char **out, EvoErr *err);

/* The build line harness_render writes for h (without "// build:"):
 * fresh string. */
char *harness_build_line(const HarnessSpec *h);

#endif

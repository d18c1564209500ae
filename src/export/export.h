/*
 * export: the pieces an exported kernel is made of, shared by the three
 * formats of `evoeng export` (cu, json, harness): the nvcc flags that
 * build a source for the NVRTC target it was compiled and measured for,
 * the launch plan as comment lines and as JSON, and the #undef lines that
 * end a rendered source's macros. No store access: cmd_export.c gathers
 * the candidate, harness.c writes the standalone program.
 */
#ifndef EVO_EXPORT_H
#define EVO_EXPORT_H

#include <jansson.h>

#include "task/plan.h"

/* The nvcc flags that build a source NVRTC compiled for `target` with the
 * recorded option string `nvrtc_options` (CompileRecord.options; NULL when
 * not recorded). The target comes first:
 *   - an arch-specific or family target ("sm_90a", "sm_100f") gives
 *     "-gencode=arch=compute_90a,code=sm_90a": with -arch=sm_90a, nvcc 13
 *     also runs a generic compute_90 pass, which a kernel that needs sm_90a
 *     (and says so with #error) fails;
 *   - any other ("sm_90") gives "-arch=sm_90".
 * Then the recorded options that nvcc understands the same way (-std,
 * --use_fast_math, -lineinfo, -D/-U, --maxrregcount, --fmad, --ftz,
 * --prec-div, --prec-sqrt, -G, include paths other than the toolkit's own),
 * in their recorded order, and -std=c++17 when none was recorded. Options
 * that only mean something to NVRTC (--gpu-architecture, --ptxas-options,
 * -default-device) are left out. Fresh string; NULL when target is not
 * "sm_<digits>[a|f]". */
char *export_nvcc_flags(const char *target, const char *nvrtc_options);

/* The plan's launches and buffers as comment lines ("//   1. entry<<<...>>>(...)"),
 * each ending in a newline. Fresh string. */
char *export_launch_lines(const Plan *p);

/* The plan as JSON: {"shape", "flops", "bytes", "buffers": [{"name",
 * "dtype", "count", "role", "used"}], "launches": [{"entry", "grid",
 * "block", "smem", "args": [{"buffer"|"i32"|"i64"|"f32"|"f64"|"tensor_map": ...}]}],
 * "profiles": [{"name", "timing", "inputs": {BUFFER: init}}]};
 * a tensor map is {"buffer", "dims", "strides" (bytes), "box",
 * "element_strides", "swizzle", "l2_promotion", "oob_fill"}; an init is
 * written as a task spec writes it ({"dist", its parameters, "row_scale":
 * {"dist", ..., "row_len"}}, the row length resolved). New reference. */
json_t *export_plan_json(const Plan *p);

/* "#undef NAME\n" for every macro that src #defines (a line whose first
 * token is `#define NAME`, at any indentation, `#` and `define` possibly
 * apart), each name once, in order of first definition. Fresh string ("" when
 * src defines none). */
char *export_undef_lines(const char *src);

/* The name of a buffer role ("input", "output", "scratch"). */
const char *export_role_name(BufRole r);

#endif

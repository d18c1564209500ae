/*
 * task: loading, validating and resolving a task spec (task.json, format in
 * templates/README.md). Loading checks everything that can be checked
 * without a configuration: JSON syntax (file:line:column), required fields
 * and types, names (dtype, role, dist), duplicates, that every expression
 * parses and references only names it may see, that launch entries are
 * declared, that files exist. Every error names the file and the JSON
 * path, and for expressions the column:
 *
 *   tests/data/bad_unknown_var.json: launch[1].grid[0]: column 5: unknown variable 'BLOK_M' (did you mean 'BLOCK_M'?)
 *
 * A configuration is `int64_t vals[task_nparams(t)]`: the actual values of
 * the params in spec order (not indices into their value lists). Shape 0
 * is the benchmark shape (`dims`), shapes 1.. the correctness shapes.
 * A loaded Task is read-only except for task_set_dim(), so it may be shared
 * between threads as long as nobody calls task_set_dim() meanwhile.
 */
#ifndef EVO_TASK_H
#define EVO_TASK_H

#include <stddef.h>
#include <stdint.h>

#include "device.h"
#include "task/entry.h"
#include "task/plan.h"
#include "util.h"

typedef struct Task Task;

/* Load and validate the spec at path; the template and reference sources
 * are read too (paths relative to the spec's directory). *out is a fresh
 * Task (task_free) or NULL on failure. Returns 0, or -1 with err
 * "<path>: <json path>: <what>" (or "<path>:<line>:<column>: <what>" for
 * JSON syntax errors). */
int task_load(const char *path, Task **out, EvoErr *err);

/* The same from the spec's text (len bytes, e.g. the JSON stored with a
 * run): path names the spec in messages and is the base for its relative
 * file paths (the template and the reference are still read from disk). */
int task_load_text(const char *text, size_t len, const char *path, Task **out, EvoErr *err);

/* Release a Task and set *t to NULL; safe on NULL. */
void task_free(Task **t);

/* ---- descriptive accessors (strings owned by the Task) ---------------- */
const char *task_path(const Task *t);           /* the spec path as given to task_load */
const char *task_name(const Task *t);
const char *task_description(const Task *t);    /* "" when absent */
const char *task_json(const Task *t);           /* the spec file's raw text */
const char *task_template_path(const Task *t);  /* resolved against the spec's directory */
const char *task_template_text(const Task *t);
const char *task_reference_path(const Task *t);
const char *task_reference_text(const Task *t);
int         task_nentries(const Task *t);       /* the candidate's entries */
const char *task_entry(const Task *t, int i);
int         task_nref_entries(const Task *t);
const char *task_ref_entry(const Task *t, int i);
/* All entries of the candidate (reference == 0) or of the reference, in
 * spec order and canonical spelling (task_entry_canon); *n gets the count.
 * Owned by t. */
const char *const *task_entry_list(const Task *t, int reference, int *n);

/* ---- params and configurations --------------------------------------- */
int         task_nparams(const Task *t);
const char *task_param_name(const Task *t, int i);
int         task_param_index(const Task *t, const char *name); /* -1 when unknown */
int         task_param_nvalues(const Task *t, int i);
int64_t     task_param_value(const Task *t, int i, int k);
int         task_param_default(const Task *t, int i);          /* index into the values */
/* Index of v in param i's values, or -1. */
int         task_param_find(const Task *t, int i, int64_t v);
/* Fill vals with every param's default value. */
void        task_defaults(const Task *t, int64_t *vals);
/* Product of the value counts (a double: it may be huge). */
double      task_space_size(const Task *t);

/* The configuration as a JSON object in param order, no spaces:
 * {"BLOCK_M":64,"SPLITS":1}. Fresh string. */
char *task_params_json(const Task *t, const int64_t *vals);

/* Parse "K=V,K=V" (spaces allowed) or a JSON object {"K": V, ...} into
 * vals. Params not mentioned get their default; "" gives all defaults.
 * Returns 0, or -1 with err naming the unknown param, the value that is
 * not in the list (with the allowed values), a repeated param, or the
 * syntax error. */
int task_params_parse(const Task *t, const char *text, int64_t *vals, EvoErr *err);

/* ---- dims and shapes -------------------------------------------------- */
int         task_ndims(const Task *t);
const char *task_dim_name(const Task *t, int d);
/* Value of dim d on shape s (0 = benchmark): the shape's own, else the
 * benchmark's; a dim the spec gives as the name of another ("HKV": "H")
 * takes that dim's value on the shape until --dim sets it. */
int64_t     task_dim_value(const Task *t, int shape, int d);
int         task_nshapes(const Task *t);   /* 1 + number of correctness shapes */
/* Override dim `name` with v (e.g. --dim S=2048): the benchmark shape and
 * every correctness shape that does not set that dim itself. Returns 0, or
 * -1 with err for an unknown dim (with a suggestion) or a value that picks
 * none of a dtype's or tolerance's values (then the dim is left as it was). */
int   task_set_dim(Task *t, const char *name, int64_t v, EvoErr *err);
/* "B=4 H=8 S=512 D=64 causal=0": every dim of shape s, in spec order.
 * Fresh string. */
char *task_shape_label(const Task *t, int shape);
/* The compile dims (macros the template sees besides the params): the
 * i-th one's name, and its index among the dims (task_dim_value's d). */
int         task_ncompile_dims(const Task *t);
const char *task_compile_dim(const Task *t, int i);
int         task_compile_dim_index(const Task *t, int i);

/* ---- input profiles (task_init.c) -------------------------------------- */

/* The spec's "profiles", or one implicit profile "default" of the
 * buffers' own inits when it has none: at least 1. A profile's name, its
 * description ("" when none), whether timing and the A/B use it. */
int         task_nprofiles(const Task *t);
const char *task_profile_name(const Task *t, int k);
const char *task_profile_description(const Task *t, int k);
int         task_profile_timing(const Task *t, int k);
/* The index of the profile called name, or -1 with err naming the task,
 * the name (with a suggestion) and the profiles it has. */
int         task_profile_find(const Task *t, const char *name, EvoErr *err);
/* Time (and compare on) only the profiles a comma-separated list names,
 * any of the task's, "timing" or not; the gate still runs every profile.
 * 0, or -1 with err naming the first unknown (see task_profile_find) or
 * repeated name, or an empty list; the task is unchanged then. */
int         task_time_profiles(Task *t, const char *names, EvoErr *err);

/* ---- checking, resolving, rendering ---------------------------------- */

/* Check a configuration against every constraint on every shape, with dev
 * providing the device variables (SM_COUNT, ...). Returns 1 when valid;
 * 0 when a constraint fails or a value is not in its param's list, with
 * *why (optional; fresh string, caller frees) e.g.
 *   "constraints[2] 'SMEM_BYTES <= SMEM_PER_BLOCK_OPTIN' (shared memory over the device limit) fails on shape 2 (B=1 S=77): 73728 <= 65536"
 * -1 when an expression cannot be evaluated (division by zero, overflow),
 * with err "<path>: constraints[0]: column 9: division by zero (shape 0: ...)". */
int task_check(const Task *t, const int64_t *vals, const DeviceInfo *dev, char **why, EvoErr *err);

/* Resolve everything for one shape: buffers (element counts, init,
 * tolerance, seed salt, which launch plans use them), every input profile
 * (each buffer's generator, rows resolved), the candidate's and
 * the reference's launches (entries, grid, block, smem, args; launches
 * whose `when` is false are left out), flops, bytes, min_ctas. *out must
 * be zeroed or freed; on success the caller frees it with plan_free().
 * Returns 0, or -1 with err naming the JSON path (grid/block value below 1
 * or above 2^32-1, an int argument outside int32, a negative buffer size,
 * an evaluation error); *out is then freed. */
int task_resolve(const Task *t, const int64_t *vals, int shape, const DeviceInfo *dev, Plan *out, EvoErr *err);

/* Render the source to compile for one shape: reference == 0 renders the
 * template with the params then the compile dims as #defines; reference
 * == 1 renders the reference source with the compile dims only (vals may
 * then be NULL). *src is fresh. Returns 0 or -1 (err). */
int task_render(const Task *t, const int64_t *vals, int shape, int reference, char **src, EvoErr *err);

/* ---- compile settings ------------------------------------------------- */
const char *const *task_compile_options(const Task *t, int *n); /* owned by t */
int task_fast_math(const Task *t);        /* 0 or 1 */
int task_lineinfo(const Task *t);         /* 0 or 1 */
/* 1 when "compile": {"arch_specific": true}: compile for the device's
 * arch-specific target (sm_90a on a compute capability 9.0 GPU, see
 * device_nvrtc_target), so the source may use wgmma and other features
 * that exist on that architecture alone. */
int task_arch_specific(const Task *t);
int task_max_spill_bytes(const Task *t);  /* -1 when absent: no limit */
/* compile.max_stack_bytes: the most stack frame (local memory: arrays the
 * compiler could not keep in registers) a kernel of the task may use;
 * -1 when absent: no limit */
int task_max_stack_bytes(const Task *t);

/* A stable 64-bit hash of a buffer name (FNV-1a), the buffers' seed_salt. */
uint64_t task_seed_salt(const char *name);

#endif

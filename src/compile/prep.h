/*
 * prep: everything a candidate needs before the GPU sees it, with no GPU:
 * check its configuration against the task's constraints, render its
 * source for every shape (compile-time dims can make the sources differ),
 * compile each distinct source once with NVRTC (in parallel, through the
 * compile cache), resolve its launch plans, and apply the static gate:
 *   invalid        a constraint fails (nothing is compiled)
 *   compile_error  NVRTC rejects a source (the log is kept)
 *   resource       a kernel needs more shared memory or threads than the
 *                  device allows, or spills more than the task permits
 * Used by `evoeng check`, `evoeng bench` and the run's evaluator.
 */
#ifndef EVO_PREP_H
#define EVO_PREP_H

#include <stdint.h>

#include "compile/nvrtc.h"
#include "compile/pool.h"
#include "device.h"
#include "store/store.h"
#include "task/plan.h"
#include "task/task.h"

typedef struct PrepCompile PrepCompile;   /* a compilation in flight (prep.c) */

/* One distinct rendered source and its compilation. */
typedef struct PrepUnit {
    char          *source;
    char           hash[65];  /* sha256 of source once compiled ("" before; prep_compile_record) */
    CompileResult  res;
    char           target[24];/* the NVRTC target it was compiled for (a copy: the DeviceInfo may go first) */
    PrepCompile   *job;       /* queued or running compilation, NULL when none */
    int            state;     /* PREP_UNIT_* */
} PrepUnit;

#define PREP_UNIT_RENDERED 0   /* source only */
#define PREP_UNIT_QUEUED   1   /* compilation submitted (prep_unit_submit) */
#define PREP_UNIT_DONE     2   /* res filled (prep_unit_wait) */

typedef struct PrepInput {
    const int64_t *vals;           /* params (task_nparams) */
    const char    *custom_source;  /* a kernel replacing the task's template, or NULL */
} PrepInput;

typedef struct Prepared {
    char        status[16];  /* "" when it may go to the GPU, else invalid/compile_error/resource */
    char       *error;       /* one line when status is set */
    PrepUnit   *units;       /* distinct candidate sources */
    int         nunits;
    int        *shape_unit;  /* per shape: index into units */
    Plan       *plans;       /* per shape (task_nshapes), resolved; NULL when invalid */
    int         nplans;
    KernelResources maxres;  /* per-field maximum over every kernel of every unit */
    double      compile_ms;  /* NVRTC wall time, summed over units (0 on cache hits) */
    const char *file;        /* NVRTC program name of its units (borrowed) */
} Prepared;

/* The reference kernels, compiled once per distinct compile-dims shape. */
typedef struct PrepRef {
    PrepUnit *units;
    int       nunits;
    int      *shape_unit;
    int       nshapes;
} PrepRef;

/* Step one of preparing a candidate, with no compilation: check in's
 * configuration against the constraints, resolve its plan and render its
 * source for every shape, one PrepUnit per distinct source (res not yet
 * filled). *p is overwritten (release with prep_free). Returns 0 with
 * p->status "invalid" when a constraint or a plan fails, 0 with status ""
 * when it may be compiled, or -1 when the check itself errs (err). */
int prep_render(const Task *t, const DeviceInfo *dev, const PrepInput *in, Prepared *p, EvoErr *err);

/* The source prep_render renders for one shape of in (shape 0: the
 * benchmark shape, the text a candidate's source_hash names), with no
 * constraint check: *src gets a fresh string. The same text from the same
 * task files on every host, so rank 0 of an MPI run renders what its
 * agents compiled instead of receiving it. Returns 0, or -1 with err (a
 * parameter or file name the template cannot take). */
int prep_render_source(const Task *t, const PrepInput *in, int shape, char **src, EvoErr *err);

/* Staged compilation, one unit at a time, so a caller can gate a
 * candidate's benchmark shape while its other units (or other candidates)
 * compile.
 *
 * prep_unit_submit queues the NVRTC compilation of unit u of a rendered p
 * (status "") on pool's queue of `level` (POOL_NOW, POOL_NEXT, POOL_SPEC:
 * pool.h) and returns at once; a unit already queued at a lower priority
 * is promoted to level, one queued higher or done is left alone. Returns
 * 0, or -1 when the pool refuses (err).
 *
 * prep_unit_wait blocks until unit u's compilation (submitted, or
 * submitted now when it was not) has finished, then takes its result:
 * compile_ms and maxres grow, and a failed compilation sets p->status to
 * "compile_error" with the first error line of the log. Returns 0 (look
 * at p->status), or -1 when NVRTC could not run at all (err). Not to be
 * called from a task of the same pool.
 *
 * prep_static_gate applies the static gate of shape s (its unit done):
 * spills over the task's limit, threads, shared memory and registers over
 * the device's, a missing entry point. It sets p->status ("resource",
 * "compile_error") and keeps the first failure. */
int prep_unit_submit(Pool *pool, const Task *t, const DeviceInfo *dev, Prepared *p, int u, int level,
                     EvoErr *err);

/* prep_unit_cancel takes a queued unit that no thread has started back
 * off the pool (it is RENDERED again); a running or finished one is left
 * as it is. */
/* 1 when prep_unit_wait of unit u would not wait: its compilation has
 * finished (or was taken in); 0 while queued or running, or never
 * submitted. Never blocks. */
int prep_unit_ready(Prepared *p, int u);
void prep_unit_cancel(Prepared *p, int u);
int prep_unit_wait(Pool *pool, Prepared *p, int u, EvoErr *err);
void prep_static_gate(const Task *t, const DeviceInfo *dev, Prepared *p, int s);

/* The compile cache key unit u of a rendered p (status "") would be
 * compiled under: nvrtc_request_key of the request the run submits.
 * Compiles nothing. Returns 0, or -1 (err). */
int prep_unit_key(const Task *t, const DeviceInfo *dev, Prepared *p, int u, char key[65], EvoErr *err);

/* The whole compile log of p's first unit that failed to compile (its
 * error lines, the warnings, ptxas's report), or NULL when none failed.
 * Borrowed from p. */
const char *prep_failure_log(const Prepared *p);

/* The name entry (a task entry: "k<128, 64>", "ns::k", "k") has in unit
 * u's module: its lowered name once u compiled, else entry itself. The
 * plans' candidate launches are rewritten to these names when their unit
 * is waited for (prep_unit_wait, prep_many), so a worker loads them with
 * cuModuleGetFunction as they are. */
const char *prep_unit_entry(const PrepUnit *u, const char *entry);

/* Rewrite plan's reference launches (shape `shape`) to the lowered names
 * of the reference unit that shape uses. Idempotent. */
void prep_ref_lower(const PrepRef *ref, Plan *plan, int shape);

/* Prepare n candidates: out[i] for in[i]. jobs = compile threads (0: one
 * per core). Returns 0 (individual failures are in out[i].status), or -1
 * when the work could not run at all (err). */
int prep_many(const Task *t, const DeviceInfo *dev, const PrepInput *in, Prepared *out, int n, int jobs,
              EvoErr *err);
/* 1 while a compilation of one of p's units is queued or running (so
 * prep_free would wait for it), 0 otherwise. Never blocks. */
int prep_busy(Prepared *p);

/* Release p, first waiting for any compilation of its units still in
 * flight. */
void prep_free(Prepared *p);

/* Compile the task's reference for every shape. Returns 0, or -1 with err
 * (a reference that does not compile is the task's fault: the message
 * includes the head of the NVRTC log). *out is filled either way: release
 * it with prep_ref_free. */
int prep_reference(const Task *t, const DeviceInfo *dev, PrepRef *out, int jobs, EvoErr *err);
void prep_ref_free(PrepRef *r);

/* Fill a store CompileRecord from a compiled unit (strings are copied;
 * its arch is u->target, the NVRTC target the unit was compiled for). */
void prep_compile_record(const PrepUnit *u, CompileRecord *out);

#endif

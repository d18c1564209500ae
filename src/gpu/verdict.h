/*
 * verdict: what the gate concludes: the status of an evaluation (shared
 * with timing and the worker's replies), the gate's options and its
 * report, and the report's forms on the worker pipe and for people.
 */
#ifndef EVO_GPU_VERDICT_H
#define EVO_GPU_VERDICT_H

#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "gpu/cuda_api.h"
#include "util.h"

/* The outcome of evaluating a candidate. Names in gate_status_name(). */
typedef enum EvalStatus {
    EVAL_OK = 0,        /* correct (and timed, when timing was asked) */
    EVAL_INCORRECT,     /* ran, but the gate rejected the outputs */
    EVAL_CRASHED,       /* the kernel faulted (sticky CUDA error such as
                           CUDA_ERROR_ILLEGAL_ADDRESS) or the worker died */
    EVAL_TIMEOUT,       /* the request ran past its deadline; worker killed */
    EVAL_LAUNCH_ERROR,  /* the launch was refused (bad configuration) */
    EVAL_RESOURCE,      /* out of registers / shared memory / device memory */
    EVAL_COMPILE_ERROR, /* NVRTC failed or the cubin does not load */
    EVAL_INVALID,       /* the plan or candidate is unusable (missing entry,
                           too few CTAs, broken reference) */
    EVAL_NSTATUS
} EvalStatus;

/* The statuses' names, by EvalStatus. */
extern const char *const gate_status_names[EVAL_NSTATUS];
/* "ok", "incorrect", ... ; "?" when out of range. */
const char *gate_status_name(EvalStatus s);
/* Reverse lookup; -1 when unknown. */
int gate_status_parse(const char *name);
/* The status a failing CUresult maps to (sticky -> crashed, out of
 * resources/memory -> resource, else launch_error). */
EvalStatus gate_status_from_cuda(CUresult r);

typedef struct GateOptions {
    int       nseeds;     /* >= 1; default 3 */
    uint64_t  seeds[16];  /* used when nseeds > 0 and seeds_given */
    int       seeds_given;
} GateOptions;

/* Defaults: 3 seeds (1, 2, 3). */
void gate_options_default(GateOptions *o);

typedef struct GateReport {
    EvalStatus status;
    char     check[24];      /* the failed check ("mismatch", ...), "" when ok */
    char     error[768];     /* human-readable reason, "" when ok */
    char     cuda_error[48]; /* CUDA_ERROR_* when a driver call failed */
    char     shape[160];     /* where it failed (or the last shape checked) */
    char     buffer[64];
    uint64_t seed;
    int      run;            /* 1 or 2: which candidate run failed */
    double   max_abs, max_rel;  /* worst over everything checked */
    int64_t  first_bad;
    uint64_t nbad;
    double   got, want;
    double   cand_ms;        /* one run of the candidate launch plan (first seed) */
    double   ref_ms;         /* one run of the reference launch plan (0 if cached) */
    int      seeds_run;      /* (profile, seed) variants that passed */
    int      fatal;          /* the worker's context is unusable: replace it */
    char     profile[32];    /* the input profile of the failure ("" when ok) */
    int      profiles;       /* input profiles the gate ran (every seed of each) */
} GateReport;

/* The report as JSON (new reference; gate_json holds an array of them),
 * and back (r zeroed first). A report that does not read (a value of the
 * wrong type, no status...) returns -1 with r->status EVAL_INVALID and
 * r->error naming the path. */
json_t *gate_report_to_json(const GateReport *r);
int     gate_report_from_json(const json_t *j, GateReport *r);
/* One line: "incorrect: mismatch in O (shape 'B=1', seed 2, run 1): 17
 * bad of 4096, first at 12: got 1.5 want 1.25; max abs 0.3 rel 0.2". */
void    gate_report_format(const GateReport *r, char *buf, size_t cap);

#endif

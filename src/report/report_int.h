/*
 * report_int: what the files of the report share and nothing outside it
 * uses: the gathered run (Report) and its per-candidate facts, which
 * report.c fills and html.c and plots.c write out. Types only.
 */
#ifndef EVO_REPORT_INT_H
#define EVO_REPORT_INT_H

#include <jansson.h>

#include "store/store.h"

/* How a candidate shows on the convergence plots. */
typedef enum PointKind {
    PK_BASELINE = 0, PK_ACCEPTED, PK_REVERTED, PK_FAILED
} PointKind;

typedef struct RCand {
    const CandidateRecord *c;  /* into Report.cands */
    json_t   *params;          /* params_json parsed (an object), or NULL */
    double    t_s;             /* decided_at - run start, seconds; NaN when unknown */
    PointKind kind;
    int       valid;           /* status ok, gated on every shape, latency known */
} RCand;

typedef struct StatusCount {
    char    status[32];
    int64_t n;
} StatusCount;

typedef struct Report {
    RunRecord        run;
    const char      *db_path;
    CandidateRecord *cands;    /* every candidate of the run, by id */
    RCand           *rc;       /* parallel to cands */
    int              ncand;
    int              nvalid;       /* gated on every shape and timed */
    int              nok;          /* status ok */
    GenerationRecord *gens;
    int              ngen;
    LlmModeStats    *llm;
    int              nllm;
    StatusCount     *fails;    /* candidates with status other than ok, by status */
    int              nfails;
    CandidateRecord *top;      /* survivors by latency, at most top_n */
    int              ntop;
    CandidateRecord *chain;    /* lineage of the best: chain[0] the root .. chain[n-1] the best */
    int              nchain;
    int              base;     /* index of the baseline in cands; -1 none */
    int              best;     /* index of the fastest survivor in cands; -1 none */
    json_t          *config;   /* runs.config_json parsed; NULL if absent */
    json_t          *device;   /* runs.device_json parsed; NULL if absent */
    json_t          *base_params; /* the baseline's params (borrowed from rc[base]); NULL none */
    int              top_n;
} Report;

#endif

/*
 * run_config: what evolve_run() is given (EvolveConfig) and what it
 * reports (EvolveSummary). Types only; see evolve.h.
 */
#ifndef EVO_SEARCH_RUN_CONFIG_H
#define EVO_SEARCH_RUN_CONFIG_H

#include <stdint.h>

#include "search/child.h"

typedef struct LlmOp LlmOp;   /* llm/llmop.h */

typedef struct EvolveConfig {
    int         generations;      /* after generation 0 */
    int         population;
    int         children;
    uint64_t    seed;
    const char *strategy;         /* evolve | model | random | exhaustive */
    double      time_limit_s;     /* 0: none */
    double      revert_threshold; /* 0.02 */
    int         quiet, json;
    const char *config_json;      /* stored in runs.config_json */
    const char *task_path;
    const char *baseline_source;  /* user kernel for the baseline, or NULL */
    const char *device_name, *device_arch, *device_json, *nvrtc_version, *driver_version;
    volatile int *stop;           /* set asynchronously (SIGINT): finish the current candidate and stop */
    int         stop_after;       /* tests: stop (as if killed) after this many commits; 0: never */
    LlmOp      *llm;              /* the LLM operator (borrowed), or NULL: none */
    double      llm_rate;         /* fraction of each generation's children asked of the LLM */
    int         no_warm_start;    /* generation 0: no seeds from earlier runs of the task on the device */
    int         no_diversity;     /* tests, benchmarks: no niches, adaptive strength or immigrants */
    int         sync;             /* generation-synchronous, seed-deterministic mode (else steady) */
    int         in_flight;        /* steady: children kept in flight; 0: sized from the lanes and slots */
} EvolveConfig;

typedef struct EvolveSummary {
    int64_t run_id;
    int64_t best_id;
    double  best_latency_us, baseline_latency_us;
    int     evaluated, valid, reverted, failed, generations_done;
    int     interrupted;          /* stopped early by *stop or the time limit */
    int     time_limited;         /* of which by the time limit (run status time_limit) */
    int     llm_requests;         /* LLM requests recorded by this call */
    int     llm_children;         /* LLM children evaluated by this call */
    int     llm_accepted;         /* of which accepted */
    double  wall_ms, eval_ms;
    int     space_exhausted;      /* a generation found no unevaluated valid configuration left */
    int     ahead_judged;         /* speculative children judged through stage A ahead of their generation */
    int     ahead_used;           /* of which the generation proposed (their stage A was taken over) */
    int     warm_seeded;          /* generation 0 members seeded from earlier runs */
    char    warm_runs[128];       /* those runs' ids, "3, 5" */
    /* the pipeline (steady mode; the sync mode fills what applies) */
    int     in_flight;            /* the window: children kept in flight */
    int     dropped;              /* children proposed and dropped unjudged (at the time limit or a stop) */
    double  held_s;               /* time-limited: seconds before the limit that the flights began to
                                     taper off with the time left (steady.c); 0: they never did */
    int     slots;                /* GPU slots */
    double  slot_busy_s[8];       /* per slot (the first 8): seconds inside gate, time and compare */
    double  slot_idle_s;          /* summed over slots: waiting with nothing ready to judge */
    double  cpu_s;                /* CPU seconds of this process (NVRTC included) during the run */
    double  nvrtc_cpu_s;          /* of which in NVRTC */
    double  nvrtc_wall_s;         /* wall seconds inside NVRTC, summed over lanes (lane time less this: the
                                     lanes' own overhead: helper round trips, cache files) */
    int     nvrtc_units;          /* NVRTC compilations during the run */
    int     cache_hits;           /* compile cache hits during the run */
    EvalPipeStats pipe;           /* the evaluator's figures (pipe_stats), deltas over the run */
} EvolveSummary;

#endif

/*
 * gpueval_state: the state the parts of gpueval share (gpueval.c opens the
 * evaluator and queues compilations, gpueval_judge.c gates, times and
 * compares), and the helpers over it. Internal to gpueval: nothing outside
 * gpu/gpueval*.c includes it.
 */
#ifndef EVO_GPUEVAL_STATE_H
#define EVO_GPUEVAL_STATE_H

#include <pthread.h>

#include "compile/pool.h"
#include "compile/prep.h"
#include "gpu/gate.h"
#include "gpu/gpueval_opts.h"
#include "gpu/worker.h"
#include "search/child.h"

/* One GPU: its worker process and what it keeps loaded. */
typedef struct Slot {
    Worker    *worker;     /* one request at a time: only the slot's GPU thread talks to it */
    DeviceInfo dev;
    int       *ref_ids;    /* worker module id per reference unit */
    double     scale;      /* latency normalisation to slot 0 (gpueval_calibrate) */
    int        dead;       /* dropped from the run: its worker could not go on */
    int       *unload;     /* modules released by other threads, unloaded by the slot's (under lock) */
    int        nunload, capunload;
    int       *warm;       /* per shape: the worker spawn whose resident state holds it, 0: none */
} Slot;

typedef struct GpuEval GpuEval;
struct GpuEval {
    Task          *task;
    GpuEvalOptions opt;
    Slot          *slots;
    int            nslots, alive;
    pthread_mutex_t lock;      /* slots' dead/alive, parents' module loads */
    Pool          *pool;       /* compile threads: children's units compile here while the GPU works */
    PrepRef        ref;
};

typedef struct Priv {
    Prepared  prep;
    int      *ids;             /* worker module id per (slot, unit): [slot * nunits + unit], -1 until loaded */
    int       nslots;
    double   *gate_ms;         /* per shape: its gate request's time, 0 until gated (watchdog.h) */
    double   *parent_gate_ms;  /* per shape: the parent's, copied at stage A; NULL: no parent measured */
    double    time_ms;         /* its time or compare request's, 0 until timed */
} Priv;


/* Unload what other threads released on slot sl (on the thread about to
 * send sl's worker a request). */
void ge_slot_flush(GpuEval *g, Slot *sl);

/* The slot a child is judged on, its pending unloads done. */
Slot *ge_slot_of(GpuEval *g, const Child *c);

/* A worker request on slot sl failed at the orchestrator. With other GPUs
 * alive the slot is dropped and EVAL_RETRY returned; the last one: -1. */
int ge_slot_failed(GpuEval *g, Slot *sl, EvoErr *err);

/* *dst = a copy of s (NULL: NULL), the old value freed. */
void ge_set_str(char **dst, const char *s);

/* Take a failure of the static steps (p->status) into the child's record. */
void ge_take_prep_status(Child *c, const Prepared *p);

/* The shapes a stage gates: [*s0, *s1): the benchmark shape (stage 1),
 * every other shape (stage 2). */
void ge_stage_shapes(const Prepared *p, int stage, int *s0, int *s1);

/* The module id of shape s's unit on slot sl (-1: not loaded). */
int *ge_mod_id(GpuEval *g, Priv *pv, const Slot *sl, int s);

/* Wait for the unit of shape s and load it into slot sl's worker (once),
 * under the evaluator's lock when shared (a parent). Returns 0 with *st
 * (EVAL_OK or the load's failure; a failed compile leaves pv->prep.status
 * set), -1 on an orchestrator failure. */
int ge_unit_ready(GpuEval *g, Slot *sl, Priv *pv, int s, int shared, EvalStatus *st, char *msg, size_t cap,
                  EvoErr *err);

#endif

/*
 * gpueval_opts: the options of the GPU evaluator (gpueval.h), apart so that
 * the state gpueval's files share (gpueval_state.h) holds them without
 * including the evaluator's own header.
 */
#ifndef EVO_GPUEVAL_OPTS_H
#define EVO_GPUEVAL_OPTS_H

#include "gpu/bench.h"
#include "gpu/gate.h"

typedef struct GpuEvalOptions {
    int          jobs;      /* compile threads, 0: one per core */
    GateOptions  gate;
    BenchOptions bench;
    int          verbose;
    int          gate_only; /* evaluate: the correctness gate only, no timing (sweeps) */
    const int   *devices;   /* CUDA ordinals, one worker each, or (ndevices 0): */
    int          ndevices;
    int          count;     /* the first count GPUs (-1: all; 0: the first alone) */
} GpuEvalOptions;

#endif

/*
 * gpueval_judge: the judging steps of gpueval_ops on a GPU: the correctness
 * gate shape by shape, the timing of the benchmark shape, the calibration of
 * several GPUs on the baseline and the A/B against the parent. Each takes
 * the GpuEval as ctx and has the contract of its EvaluatorOps member
 * (search/child.h). Internal to gpueval.
 */
#ifndef EVO_GPUEVAL_JUDGE_H
#define EVO_GPUEVAL_JUDGE_H

#include "gpu/gpueval_state.h"

/* EvaluatorOps.gate: the static gate and the correctness gate of a stage. */
int ge_gate(void *ctx, Child *c, int stage, EvoErr *err);

/* EvaluatorOps.calibrate: the latency scale of every GPU to GPU 0. */
int ge_calibrate(void *ctx, Child *base, EvoErr *err);

/* EvaluatorOps.time: the benchmark shape's latency and launch metrics. */
int ge_time(void *ctx, Child *c, EvoErr *err);

/* EvaluatorOps.compare: the A/B of kid against parent on kid's GPU. */
int ge_compare(void *ctx, Child *parent, Child *kid, double *ratio, double *spread, EvoErr *err);

#endif

/*
 * gpueval: the real Evaluator of search/child.h. It prepares children with prep
 * (constraints, rendering, parallel NVRTC compilation, static gate), then
 * sends them to a GPU worker (worker.h): the correctness gate on every
 * shape with several seeds, timing of the benchmark shape, launch
 * metrics, and the interleaved A/B comparison with the parent. The
 * orchestrator never touches the GPU itself.
 */
#ifndef EVO_GPUEVAL_H
#define EVO_GPUEVAL_H

#include "gpu/gpueval_opts.h"
#include "gpu/worker.h"
#include "search/evolve.h"

typedef struct GpuEval GpuEval;

/* Start a worker on every GPU of opt->devices (or the first opt->count,
 * or all; GPU 0 when none is asked for), compile
 * the task's reference and load it into each. GPUs of different
 * architectures are refused.
 * Returns 0, or -1 with err: no driver or device ("no CUDA device: ..."),
 * a reference that does not compile. *nogpu is set to 1 when the failure
 * is the absence of a GPU (the caller's exit code differs). */
int gpueval_open(GpuEval **out, Task *task, const GpuEvalOptions *opt, int *nogpu, EvoErr *err);
void gpueval_close(GpuEval **g);

/* The device the worker found. */
const DeviceInfo *gpueval_device(const GpuEval *g);

/* The Evaluator vtable for evolve_run(); its context is the GpuEval. */
extern const EvaluatorOps gpueval_ops;

/* The options it was opened with (after their defaults were applied). */
const GpuEvalOptions *gpueval_options(const GpuEval *g);

/* The worker of the first GPU, for bench. */
Worker *gpueval_worker(GpuEval *g);

/* The number of GPUs (slots), and the device of one (NULL when out of
 * range). */
int gpueval_slots(const GpuEval *g);
const DeviceInfo *gpueval_slot_device(const GpuEval *g, int slot);

#endif

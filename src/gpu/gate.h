/*
 * gate: the correctness gate, built so that a wrong kernel cannot pass.
 *
 * For every plan (correctness shapes and the benchmark shape), every input
 * profile of the plan and every seed (>= 3), on the worker's resident
 * state (resident.h):
 *   1. the inputs are the seed's pristine copies, generated once on the
 *      device from (seed, buffer.seed_salt) and copied into a working set;
 *      outputs are filled with a NaN sentinel (0xFFFF for f16/bf16,
 *      0x7FFFFFFF for f32, GATE_SENTINEL_I32 for i32); scratch is zeroed;
 *   2. the candidate runs on working set A, then again on the fresh
 *      working set B (fresh sentinel, fresh copies of the inputs);
 *   3. the reference outputs were computed once per (shape, seed) and are
 *      kept on the device, hashed; nothing of them is ever freed unscrubbed;
 *   4. on the device, both sets' inputs are compared exactly with the
 *      pristine copies (a kernel that writes its inputs fails
 *      `inputs_modified`), and the outputs with the reference;
 *   5. afterwards the resident inputs and references and the red zones
 *      around every working buffer are re-hashed: a kernel that wrote
 *      outside its buffers fails `resident_modified` or `out_of_bounds`.
 * Checks, in order: `min_ctas` (largest launch too small), inputs, run 1
 * vs the reference (`unwritten`, `nan`, `zero_output`, `mismatch`), run 2
 * vs the reference (`stale`: the second run differs, e.g. state kept
 * between runs), run 2 vs run 1 within twice the tolerance
 * (`nondeterministic`: each run may sit on either side of the reference),
 * then the red zones and the resident state. The two runs are compared
 * within tolerance, not bitwise, because float atomics (split-K, split-KV)
 * legitimately reorder sums.
 *
 * An element passes when |got - ref| <= atol + rtol * |ref|. Any NaN/Inf
 * in an output fails. An output whose reference is far from zero
 * (max|ref| > 10 * atol) while the output is ~0 everywhere
 * (max|got| <= atol) fails `zero_output`.
 *
 * The host-side math (generation, sentinels, comparison, half conversions:
 * gen.h) is pure and unit-tested on the CPU, and is the mirror of the
 * device kernels (devkern.h) that the GPU tests compare with it; the
 * statuses and the report are verdict.h; gate_run() is the device part
 * and runs inside the worker.
 */
#ifndef EVO_GATE_H
#define EVO_GATE_H

#include "gpu/cuda_api.h"
#include "gpu/gen.h"
#include "gpu/verdict.h"
#include "task/plan.h"
#include "util.h"

/* ---- device part (worker only) ---------------------------------------- */

typedef struct Resident Resident;   /* resident.h */

/* Run the gate of one plan on the worker's resident state: candidate
 * module cand against reference module ref (worker module id ref_id, part
 * of the resident key), for every seed of opt. The pristine inputs and
 * the reference outputs come from the plan's bay (made on first use); the
 * candidate runs on working set A, then again on the fresh set B; every
 * comparison runs on the device and only summaries are read back. After
 * the runs, the resident state and the red zones are re-hashed: a
 * candidate that wrote outside its buffers fails `resident_modified` or
 * `out_of_bounds`. Fills *rep. Returns 0 when a verdict was reached
 * (rep->status says which, rep->fatal whether the context died), -1 only
 * for an internal failure (err). */
int gate_run(CudaCtx *c, Resident *res, const Plan *plan, CUmodule cand, CUmodule ref, int ref_id,
             const GateOptions *opt, GateReport *rep, EvoErr *err);

#endif

/*
 * replay: search strategies replayed on the CPU against the stored ground
 * truth of one exhaustive run (issue 12, the search-quality benchmark).
 *
 * The truth is every candidate that a `--strategy exhaustive` run
 * committed: its params key, status and latency. The replay evaluator
 * (an EvaluatorOps) answers from it: a configuration that failed there
 * fails here at the benchmark-shape gate with the same status; an ok one
 * passes both stages, its latency is the stored one, and an A/B ratio is
 * child latency / parent latency from the store. A configuration the
 * truth does not hold (the exhaustive run saw another device's limits)
 * is "invalid" and does not count as an evaluation. So evolve_run runs
 * unchanged, with many seeds in seconds, and strategies are compared on
 * the same measurements.
 *
 * The task is rebuilt from the truth run itself (runs.task_json with the
 * dims of runs.config_json), and validity uses the canned profile of the
 * run's architecture (device_profile).
 */
#ifndef EVO_REPLAY_H
#define EVO_REPLAY_H

#include <stdint.h>

#include "device.h"
#include "search/evolve.h"
#include "task/task.h"
#include "util.h"

typedef struct ReplayTruth ReplayTruth;

/* Load the truth from the store at path: run run_id, or with run_id 0 the
 * latest run whose strategy is exhaustive. task_path, when not NULL,
 * loads the task from that spec instead of the run's stored text (whose
 * template path may not exist on this machine); the run's dims apply
 * either way. A stored key is read in that task's terms: a knob the run
 * did not have yet takes the task's default, and a key naming a knob the
 * task no longer has, or a value it no longer allows, is left out. *out is a fresh handle
 * (replay_truth_free). Returns 0, or -1 with err (no such run, no ok
 * candidate, the task does not load). */
int replay_truth_load(ReplayTruth **out, const char *path, int64_t run_id, const char *task_path, EvoErr *err);
void replay_truth_free(ReplayTruth **t);

/* The truth's task and device (owned by the truth), its run id, the
 * number of configurations it holds (the size of the space), and the best
 * ok latency with its params key. */
Task             *replay_truth_task(ReplayTruth *t);
const DeviceInfo *replay_truth_device(const ReplayTruth *t);
int64_t           replay_truth_run(const ReplayTruth *t);
int               replay_truth_size(const ReplayTruth *t);
double            replay_truth_best(const ReplayTruth *t, const char **key);

/* The evaluator; its ctx is a ReplayTruth. */
extern const EvaluatorOps replay_eval_ops;

typedef struct ReplayResult {
    int     n;          /* evaluations made (configurations of the truth) */
    double *trace;      /* trace[i]: best fully gated latency / truth best after i + 1 evaluations */
    int     to_target;  /* evaluations until within 2% of the truth best; -1: never within the budget */
} ReplayResult;

/* Replay one strategy (evolve | model | random) with one seed, population
 * 8 and 8 children per generation, until `budget` evaluations or the
 * space is exhausted, in a scratch store at scratch_db (replaced).
 * Returns 0 with *res filled (replay_result_free), or -1 with err. */
int replay_run(ReplayTruth *t, const char *strategy, uint64_t seed, int budget, const char *scratch_db,
               ReplayResult *res, EvoErr *err);
void replay_result_free(ReplayResult *r);

/* The ratio after `evals` evaluations (the last one when the run made
 * fewer; INFINITY when it made none). */
double replay_ratio_at(const ReplayResult *r, int evals);

#endif

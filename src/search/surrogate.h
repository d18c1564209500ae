/*
 * surrogate: a random-forest model of a task's parameter space that learns
 * from every candidate measured so far and ranks proposed configurations,
 * so that the GPU measures the most promising ones (issue 12; in the
 * manner of SMAC and of Kernel Tuner's Bayesian optimisation).
 *
 * Why a forest. The knobs are discrete (a few values each), they interact
 * strongly (a tile size is good only with the right warp count and
 * pipeline depth) and the space has holes (configurations that fail). A
 * regression tree splits on "this param's value index <= k" and so models
 * interactions and cliffs without a kernel function or a distance between
 * configurations; a bagged set of trees is cheap to fit (milliseconds for
 * thousands of rows), needs no tuning, and the disagreement between its
 * trees is an uncertainty, which the acquisition needs to balance
 * exploitation and exploration. A Gaussian process would need a kernel
 * over mixed ordinal/categorical knobs and O(n^3) work; no packaged C
 * library fits, so the model is written here and kept small.
 *
 * The model, in plain words:
 *  - Features: for each param, the rank of its value among the param's
 *    allowed values sorted ascending (for a list given in ascending order,
 *    as task specs give them, the rank is the index in the list). Nothing
 *    depends on a particular task.
 *  - Regression forest: on the rows whose status is ok, the target is
 *    log(latency_us), so effects are multiplicative and errors relative.
 *    Each tree is grown on a bootstrap sample of those rows; at each node a
 *    random share of the params is tried, and the split "rank <= k" that
 *    most reduces the squared error is taken, until a node is pure, too
 *    small to split into two leaves of min_leaf rows, or max_depth deep. A
 *    leaf predicts the mean of its rows. The prediction is the mean over
 *    trees; the spread is the standard deviation of the tree predictions.
 *  - Failure classifier: the same kind of forest over every row (ok and
 *    failed), target 1 for a failure (invalid, compile_error, resource,
 *    incorrect, crashed, timeout, launch_error) and 0 for ok; with 0/1
 *    targets the squared-error split is the Gini split, and the mean over
 *    trees of the leaf failure rates is p_fail.
 *  - Acquisition: expected improvement in log latency below the best seen,
 *    discounted by the chance that the configuration fails (see
 *    surrogate_score).
 * Fitting is deterministic for a seed (each tree draws from its own
 * generator seeded by rng_mix(seed, tree)).
 */
#ifndef EVO_SURROGATE_H
#define EVO_SURROGATE_H

#include <stdint.h>

#include "task/task.h"
#include "util.h"

typedef struct Surrogate Surrogate;

/* What happened to a measured configuration. Every kind but OK counts as a
 * failure for the classifier. */
typedef enum SurrogateStatus {
    SURR_OK = 0,
    SURR_INVALID,
    SURR_COMPILE_ERROR,
    SURR_RESOURCE,
    SURR_INCORRECT,
    SURR_CRASHED,
    SURR_TIMEOUT,
    SURR_LAUNCH_ERROR,
    SURR_NSTATUS
} SurrogateStatus;

typedef struct SurrogateOptions {
    int    ntrees;        /* trees per forest; default 32 */
    int    min_leaf;      /* fewest (bootstrap) rows in a leaf; default 2 */
    int    max_depth;     /* deepest node; default 24 */
    double feature_frac;  /* share of the params tried at each split, (0, 1]; default 0.8 */
} SurrogateOptions;

/* How surrogate_rank spends its exploration picks. */
typedef enum SurrogateExplore {
    SURR_EXPLORE_UNCERTAIN = 0, /* the largest stddev * (1 - p_fail) */
    SURR_EXPLORE_RANDOM         /* uniformly among the candidates not yet picked */
} SurrogateExplore;

typedef struct SurrogatePick {
    double           xi;       /* EI margin in log latency (0.01 asks for ~1% better); >= 0 */
    double           epsilon;  /* share of the k picks made for exploration, [0, 1] */
    SurrogateExplore explore;  /* how those are chosen */
    uint64_t         seed;     /* for SURR_EXPLORE_RANDOM */
} SurrogatePick;

/* The status for a store/evaluator status string ("ok", "invalid",
 * "compile_error", "resource", "incorrect", "crashed", "timeout",
 * "launch_error"), or -1 when the name is unknown. */
int surrogate_status_from_name(const char *name);
/* The name of a status ("ok", ...), or "?" when out of range. */
const char *surrogate_status_name(SurrogateStatus st);

/* Fill o with the defaults listed in SurrogateOptions. */
void surrogate_options_default(SurrogateOptions *o);

/* Open an empty model over a space of nparams params, param i having
 * nvalues[i] (1..65535) allowed values values[i][0..nvalues[i]-1]
 * (copied). opt may be NULL for the defaults. *out is a fresh handle
 * (surrogate_close) or NULL on failure. Returns 0, or -1 with err for
 * nparams < 1, a value count out of range, a repeated value or an option
 * out of range. */
int surrogate_open(Surrogate **out, int nparams, const int *nvalues, const int64_t *const *values,
                   const SurrogateOptions *opt, EvoErr *err);

/* The same over a task's params (task_param_nvalues/task_param_value).
 * t is only read during the call. */
int surrogate_open_task(Surrogate **out, const Task *t, const SurrogateOptions *opt, EvoErr *err);

/* Release the model and set *s to NULL; safe on NULL. */
void surrogate_close(Surrogate **s);

/* Record one measured configuration: vals holds nparams actual values (as
 * in a task configuration, not indices). For SURR_OK, latency_us is the
 * measured latency (finite, > 0); for a failure it is ignored. The row is
 * used by the next surrogate_fit. Returns 0, or -1 with err for a value
 * not in its param's list, a bad status, or a bad latency on an ok row. */
int surrogate_add(Surrogate *s, const int64_t *vals, double latency_us, SurrogateStatus status, EvoErr *err);

/* Rows recorded in all, and rows with status ok. */
int surrogate_nobs(const Surrogate *s);
int surrogate_nok(const Surrogate *s);

/* log(latency_us) of the fastest ok row recorded, or INFINITY when none:
 * the usual best_log_latency for surrogate_score. */
double surrogate_best_log(const Surrogate *s);

/* Fit both forests on every row recorded so far, replacing the previous
 * fit. The same rows, options and seed give the same model. Returns 0, or
 * -1 with err when no row has been recorded. With no ok row the
 * regression forest stays empty (see surrogate_predict). */
int surrogate_fit(Surrogate *s, uint64_t seed, EvoErr *err);

/* Predict a configuration (nparams actual values) with the last fit:
 * *mean_log the mean over trees of the predicted log(latency_us), *stddev
 * the standard deviation across trees, *p_fail the failure probability in
 * [0, 1]. Any output pointer may be NULL. With no ok row in the fit,
 * *mean_log and *stddev are NAN. Returns 0, or -1 with err when the model
 * was never fitted or a value is not in its param's list. */
int surrogate_predict(const Surrogate *s, const int64_t *vals, double *mean_log, double *stddev,
                      double *p_fail, EvoErr *err);

/* The acquisition value of a configuration (higher is better):
 *
 *   d     = best_log - xi - mean_log
 *   EI    = d * Phi(d / stddev) + stddev * phi(d / stddev)   (stddev > 0)
 *         = max(d, 0)                                         (stddev = 0)
 *   score = EI * (1 - p_fail)
 *
 * Phi and phi are the standard normal CDF and density: EI is the expected
 * amount by which the log latency falls below best_log - xi if the
 * prediction is a normal N(mean_log, stddev^2). A score of 0.05 is thus
 * roughly "expect 5% faster". With no ok row in the fit, or best_log
 * infinite, score = 1 - p_fail. Returns the score, or -1 (with err) when
 * surrogate_predict fails. */
double surrogate_score(const Surrogate *s, const int64_t *vals, double best_log, double xi, EvoErr *err);

/* Rank ncands candidate configurations (cands: ncands rows of nparams
 * values) and write the indices of up to k picks to out (room for k).
 * round(epsilon * k) picks are exploration (pick->explore), the rest
 * exploitation: the highest surrogate_score (ties: lower mean_log, then
 * lower index). Exploitation picks come first in out, best first, then
 * the exploration picks; no index appears twice. pick may be NULL for
 * {xi 0.01, epsilon 0.25, uncertain, seed 0}. Returns the number of picks
 * (min(k, ncands)), or -1 with err when a candidate cannot be predicted
 * (its index is named) or an argument is out of range. */
int surrogate_rank(const Surrogate *s, const int64_t *cands, int ncands, double best_log,
                   const SurrogatePick *pick, int k, int *out, EvoErr *err);

#endif

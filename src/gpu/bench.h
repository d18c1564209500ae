/*
 * bench: timing of a launch plan and interleaved A/B comparison, plus
 * launch metrics (CTAs, registers, shared memory, occupancy, waves,
 * achieved throughput).
 *
 * Warm timing: calibrate a batch size so one sample (a batch of
 * back-to-back runs of the whole launch plan between two CUDA events)
 * lasts >= min_sample_ms (0.5 ms); capture the batch as a CUDA graph
 * (graph mode, the default) so that a sample is one graph replay and
 * measures the kernels, not the host's launches (the way
 * bench/compare_sdpa.py times its contenders); warm up; take `samples`
 * (>= 20) samples; report median, p10, p90, mean, CV, MAD per run. With
 * graph = 0, or where a launch plan cannot be captured, the batch is
 * launched from the host as before.
 * Hold (the default): before each sample the stream waits on a
 * host-mapped word (cuStreamWaitValue32) that the host sets only once
 * the start event, the batch and the end event are all queued, so the
 * host's launch latency (cuGraphLaunch, or the launches themselves) is
 * not inside the events. Without it the GPU reaches the start event at
 * once and idles until the launch arrives. A driver without stream
 * memory operations times without the hold. EVOENG_TIMING_HOLD=0 turns
 * it off (to compare the two). EVOENG_SAMPLE_MS (0.05-1000, default 0.5)
 * sets the least length of a sample: on a power-capped GPU a long burst
 * runs at lower clocks than a short one (bench/burst_study.sh).
 * Cold timing: before every run, flush L2 by writing 2x L2 bytes with
 * cuMemsetD32Async; only the run itself sits between the events.
 *
 * A/B compare (parent A, child B): `pairs` (default 15) pairs, the order
 * within each pair counterbalanced (bench_pair_b_first: each profile
 * alternates, from a side drawn from the seed); each member is one
 * sample as above; ratio per pair = B/A. Reported: median ratio,
 * p10..p90 and CV of the ratios. Pairs come in rounds and are pooled:
 * while the median ratio's 95% half-width (bench_ratio_halfwidth) is
 * above noise_threshold (0.5%), a profile gets another round, up to
 * `retries` rounds in all (5); if it never settles, `noisy` is set and
 * every pair taken is reported. The driver's clock
 * attribute is static, so throttling is detected through this noise, not
 * read directly (NVML is not used).
 *
 * Input profiles (plan.h): a request times the plan's timing profiles
 * (task_time_profiles chooses them), each on its own working set of
 * the bay. bench_time is called once per profile (the worker takes 25 /
 * n samples a profile, at least 10). bench_compare_multi interleaves the
 * profiles within one comparison: every round is one pair of each
 * unsettled profile, A_p1 B_p1 A_p2 B_p2 ... (warm timing: each pair
 * after one untimed run of its first side, so that the L2 holds that
 * profile's buffers, not the last one's, when the pair starts),
 * max(5, pairs / n) rounds an attempt, so n profiles cost about
 * what one did. Each profile is judged settled on its own; an attempt
 * redoes only the unsettled ones. The aggregates that cross to the
 * caller: the ratio is the profile whose median ratio is the largest
 * (a loss on any profile cannot hide behind the others: the 2% rule
 * reads this), the latencies are geometric means over the profiles (a
 * ranking that weighs each profile alike); every profile's figures are
 * in prof[].
 *
 * The statistics are pure functions (CPU-tested); bench_time and
 * bench_compare_multi run inside the worker. The JSON forms are in
 * bench_json.c.
 */
#ifndef EVO_BENCH_H
#define EVO_BENCH_H

#include <stdint.h>

#include <jansson.h>

#include "gpu/cuda_api.h"
#include "gpu/gate.h"
#include "task/plan.h"
#include "util.h"

typedef struct BenchStats {
    int    n;
    double median, mean, min, max, p10, p90;
    double cv;   /* stddev / mean */
    double mad;  /* median absolute deviation */
} BenchStats;

/* Statistics of x[0..n) (not modified). Percentiles interpolate linearly
 * between order statistics. n == 0 gives all zeros. */
void bench_stats(const double *x, int n, BenchStats *out);

/* The p-quantile (0 <= p <= 1) of x[0..n) (not modified), interpolated
 * the same way as bench_stats. NaN when n == 0. */
double bench_percentile(const double *x, int n, double p);

typedef struct BenchOptions {
    int      warmup;          /* warm-up batches (default 3) */
    int      samples;         /* timed samples (default 25, at least 20 is wise) */
    double   min_sample_ms;   /* batch calibration target (default 0.5) */
    int      cold;            /* 1: flush L2 before each run, time runs singly */
    int      graph;           /* 1 (default): a sample replays a CUDA graph of the batch; 0: host launches */
    int      hold;            /* 1 (default): the stream waits until a sample is fully queued (see above) */
    int      shared;          /* A/B: 1 (default) both sides on the same buffers; 0: each on its own */
    int      pairs;           /* A/B pairs (default 15) */
    int      retries;         /* A/B: rounds of `pairs` pairs at most, pooled (default 5) */
    double   noise_threshold; /* A/B: the 95% half-width of the median ratio to reach (default 0.005) */
    uint64_t seed;            /* input seed and A/B order seed (default 1) */
} BenchOptions;

/* The defaults above, with EVOENG_SAMPLE_MS and EVOENG_TIMING_HOLD applied
 * where they are set and valid (bench_env_check reports the others). */
void bench_options_default(BenchOptions *o);
/* 0 when the timing variables of the environment (and the watchdog's,
 * EVOENG_WATCHDOG_S: watchdog.h) are unset or valid;
 * -1 with err naming the variable, its value and what it expects. */
int bench_env_check(EvoErr *err);
/* BenchOptions as JSON (new reference), and back: the defaults where a
 * key is absent (j NULL: all). Returns 0, or -1 with err naming the path
 * of a malformed value. */
json_t *bench_options_to_json(const BenchOptions *o);
int     bench_options_from_json(const json_t *j, BenchOptions *o, EvoErr *err);

#define BENCH_MAX_LAUNCHES 8
#define BENCH_MIN_PAIRS    5   /* A/B pairs a profile gets at least, however many profiles share `pairs` */
#define BENCH_MIN_SAMPLES  10  /* timing samples a profile gets at least */

/* One input profile's figures in a timing (ms) or an A/B (ms: B's, the
 * child's; a_ms: A's; ratio: B/A per pair). */
typedef struct ProfileStat {
    char       name[32];
    BenchStats ms;
    BenchStats a_ms;
    BenchStats ratio;
    int        attempts;
    int        noisy;
    double     tflops;        /* from ms.median and the plan's flops */
} ProfileStat;

typedef struct LaunchMetrics {
    char     entry[96];
    uint64_t ctas;
    unsigned threads;       /* per CTA */
    int      registers;     /* per thread */
    int      static_smem;   /* bytes */
    unsigned dynamic_smem;  /* bytes */
    int      local_bytes;   /* per thread (spills, stack) */
    int      occupancy;     /* resident CTAs per SM */
    double   waves;         /* ctas / (SMs * occupancy) */
} LaunchMetrics;

typedef struct BenchResult {
    EvalStatus status;
    char       error[512];
    char       cuda_error[48];
    int        fatal;
    BenchStats ms;           /* per run of the launch plan */
    int        batch;        /* runs per sample (1 when cold) */
    int        cold;
    int        graph;        /* 1 when samples were CUDA-graph replays */
    int        hold;         /* 1 when each sample was held until fully queued */
    LaunchMetrics launches[BENCH_MAX_LAUNCHES];
    int        nlaunches;
    uint64_t   total_ctas;
    double     tflops, gbps;          /* achieved, from plan flops/bytes and the median */
    double     pct_peak_flops, pct_peak_bw;
    int        nprof;                 /* profiles timed; ms is their geometric mean */
    ProfileStat prof[PLAN_MAX_PROFILES];
} BenchResult;

typedef struct CompareResult {
    EvalStatus status;
    char       error[512];
    char       cuda_error[48];
    int        fatal;
    BenchStats ratio;        /* of B/A per pair; several profiles: the profile with the largest median */
    BenchStats a_ms, b_ms;   /* per run; several profiles: geometric means */
    int        pairs;        /* per profile */
    int        attempts;     /* the most any profile took */
    int        noisy;        /* some profile never settled */
    int        batch;        /* runs per sample, both sides */
    int        batch_a, batch_b; /* each side's own calibration */
    int        graph;        /* 1 when samples were CUDA-graph replays */
    int        hold;         /* 1 when each sample was held until fully queued */
    int        nprof;        /* profiles compared */
    int        worst;        /* index into prof of the largest median ratio (the `ratio` above) */
    ProfileStat prof[PLAN_MAX_PROFILES];
} CompareResult;

/* The results as JSON (new reference; metrics_json holds a BenchResult's),
 * and back (r zeroed first). A result that does not read (a value of the
 * wrong type, no status, an array too long...) returns -1 with r->status
 * EVAL_INVALID and r->error naming the path. */
json_t *bench_result_to_json(const BenchResult *r);
int     bench_result_from_json(const json_t *j, BenchResult *r);
json_t *bench_compare_to_json(const CompareResult *r);
int     bench_compare_from_json(const json_t *j, CompareResult *r);
json_t *bench_stats_to_json(const BenchStats *s);
/* The per-profile figures a candidate's metrics_json holds (its
 * "profiles": a BenchResult's, with an A/B's ratios where it had one)
 * into out[PLAN_MAX_PROFILES]; returns how many (0: none recorded, as in
 * stores written before input profiles). */
int     bench_metrics_profiles(const char *metrics_json, ProfileStat *out);

/* The 95% half-width of the median of the per-pair ratios in *ratio,
 * relative to it: 1.96 x 1.2533 sigma / sqrt(n), sigma = (p90 - p10) /
 * 2.5631. INFINITY with fewer than 2 ratios. */
double bench_ratio_halfwidth(const BenchStats *ratio);
/* Is an A/B's median ratio known well enough? (half-width <= threshold) */
int bench_settled(const BenchStats *ratio, double threshold);

/* The geometric mean, field by field, of n statistics (n, the count, is
 * the smallest; cv the largest); *out = s[0] when n is 1, zeros when 0. */
void bench_stats_geomean(const BenchStats *s, int n, BenchStats *out);
/* Fill r's aggregates from r->prof[0..nprof): ms as bench_stats_geomean
 * of the profiles' ms (BenchResult), or ratio from the profile with the
 * largest median ratio and a_ms, b_ms as geometric means, worst, the
 * most attempts, noisy if any is (CompareResult). */
void bench_result_aggregate(BenchResult *r);
void bench_compare_aggregate(CompareResult *r);
/* The pairs (A/B rounds) and timing samples each of n profiles gets. */
int bench_pairs_per_profile(const BenchOptions *o, int n);
int bench_samples_per_profile(const BenchOptions *o, int n);
/* The order of pair `pair` (0, 1, ...) of profile k in a comparison
 * seeded with seed: 1 when B's sample goes first. Each profile alternates
 * from a side drawn from (seed, k), so every two consecutive pairs of a
 * profile put each side first once, whatever the seed. Pure. */
int bench_pair_b_first(uint64_t seed, int k, int pair);

/* Fill achieved tflops/gbps and their share of the device peaks from the
 * median time, and each profile's tflops from its median. */
void bench_fill_throughput(BenchResult *r, const Plan *plan, const DeviceInfo *dev);

/* ---- device part (worker only) ---------------------------------------- */

/* Launch metrics of prepared launches cl (registers etc. from
 * cuFuncGetAttribute, occupancy from cuOccupancyMaxActiveBlocksPerMulti-
 * processor). Fills r->launches, nlaunches, total_ctas. 0 or -1 (err). */
int bench_metrics(CudaCtx *c, const CudaLaunches *cl, BenchResult *r, EvoErr *err);

/* Time the prepared launches cl on cp (buffers already initialized).
 * known_batch > 0: runs per sample from an earlier calibration (the
 * worker caches them per module and shape); 0: calibrate. Fills r->ms,
 * batch (the calibrated one), cold and status (ok, or the CUDA failure
 * with fatal). Returns 0 when r says what happened, -1 on internal
 * failure. */
int bench_time(CudaCtx *c, const CudaLaunches *cl, const BenchOptions *o, int known_batch, BenchResult *r,
               EvoErr *err);

/* Interleaved A/B over n input profiles at once (n >= 1): a[k], b[k] are
 * the two sides' prepared launches on profile k's inputs, names[k] its
 * name. known[0], known[1]: as known_batch above for each side (known
 * may be NULL). The batch is calibrated on profile 0, both sides and
 * every profile sample the larger one; r->batch_a and r->batch_b give
 * each side's own calibration. Each profile gets bench_pairs_per_profile
 * pairs an attempt, interleaved (see above). Fills r->prof[0..n) and the
 * aggregates. Returns 0 when r says what happened, -1 on internal
 * failure. */
int bench_compare_multi(CudaCtx *c, int n, const CudaLaunches *const *a, const CudaLaunches *const *b,
                        const char *const *names, const BenchOptions *o, const int *known, CompareResult *r,
                        EvoErr *err);

#endif

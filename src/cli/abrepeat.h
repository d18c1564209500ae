/*
 * abrepeat: the statistics of `evoeng bench --repeat N`, N independent
 * interleaved A/B comparisons of two configurations (the same one twice
 * for an A/A test of the timing). Pure functions, CPU-tested.
 */
#ifndef EVO_ABREPEAT_H
#define EVO_ABREPEAT_H

typedef struct AbRepeatStats {
    int    n;          /* finite ratios summarized */
    int    failed;     /* non-finite ratios (NaN, inf): left out of the figures below */
    double median;     /* of the ratios */
    double min, max;   /* of the ratios */
    double p95_dev;    /* 95th percentile of |ratio - 1| */
    double max_dev;    /* largest |ratio - 1| */
    int    reverts;    /* ratios evolve_should_revert() reverts at `threshold`, non-finite ones included */
} AbRepeatStats;

/* Summarize ratio[0..n) (B/A medians of n comparisons; not modified).
 * Percentiles interpolate like bench_stats. `reverts` counts what the
 * run's revert rule would do with each ratio at `threshold` (0.02 by
 * default): in an A/A test every one of them is a false revert. With no
 * finite ratio the figures are NaN and n is 0. */
void abrepeat_stats(const double *ratio, int n, double threshold, AbRepeatStats *out);

/* 1 when an A/A summary meets issue 11's bar: p95 |ratio - 1| <=
 * p95_limit (0.005), no revert and no failed comparison. */
int abrepeat_aa_pass(const AbRepeatStats *s, double p95_limit);

#endif

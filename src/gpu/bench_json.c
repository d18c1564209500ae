/*
 * bench_json: the JSON forms of the timing records that cross the worker
 * pipe (and go into metrics_json): BenchOptions, BenchStats, BenchResult,
 * CompareResult, LaunchMetrics and each input profile's ProfileStat, each
 * described once in a field table (util.h) that writes and reads it.
 * See bench.h.
 */
#include "gpu/bench.h"

#include <stddef.h>
#include <stdio.h>
#include <string.h>

/* ---- the tables -------------------------------------------------------- */

static const Field stats_fields[] = {
    FJ(BenchStats, n, F_I32),     FJ(BenchStats, median, F_REAL), FJ(BenchStats, mean, F_REAL),
    FJ(BenchStats, min, F_REAL),  FJ(BenchStats, max, F_REAL),    FJ(BenchStats, p10, F_REAL),
    FJ(BenchStats, p90, F_REAL),  FJ(BenchStats, cv, F_REAL),     FJ(BenchStats, mad, F_REAL),
};

static const Field options_fields[] = {
    FJ(BenchOptions, warmup, F_I32),  FJ(BenchOptions, samples, F_I32), FJ(BenchOptions, min_sample_ms, F_REAL),
    FJ(BenchOptions, cold, F_BOOL),   FJ(BenchOptions, graph, F_BOOL),  FJ(BenchOptions, hold, F_BOOL),
    FJ(BenchOptions, shared, F_BOOL), FJ(BenchOptions, pairs, F_I32),   FJ(BenchOptions, retries, F_I32),
    FJ(BenchOptions, noise_threshold, F_REAL), FJ(BenchOptions, seed, F_U64),
};

/* A profile's A/B figures are written where it has a ratio. */
static int has_ratio(const void *rec)
{
    return ((const ProfileStat *)rec)->ratio.n != 0;
}

/* ProfileStat, once: its A/B figures (a_ms, ratio, attempts, noisy) are
 * written when `ab` says so: always in an A/B's result, where the profile
 * has a ratio in a timing's (metrics_json). */
#define PF_AB(m, ty, ab) {.key = #m, .type = ty, .off = offsetof(ProfileStat, m), .sub = stats_fields,            \
                          .nsub = (ty) == F_OBJ ? NFIELDS(stats_fields) : 0, .when = ab}
#define PROFILE_FIELDS(ab)                                                                                       \
    FJ_CHARS(ProfileStat, name), FJ_OBJ(ProfileStat, ms, stats_fields), FJ(ProfileStat, tflops, F_REAL),        \
    PF_AB(a_ms, F_OBJ, ab), PF_AB(ratio, F_OBJ, ab), PF_AB(attempts, F_I32, ab), PF_AB(noisy, F_I32, ab)
static const Field profile_fields[] = {PROFILE_FIELDS(has_ratio)};
static const Field ab_profile_fields[] = {PROFILE_FIELDS(NULL)};

static const Field launch_fields[] = {
    FJ_CHARS(LaunchMetrics, entry),        FJ(LaunchMetrics, ctas, F_U64),       FJ(LaunchMetrics, threads, F_U32),
    FJ(LaunchMetrics, registers, F_I32),   FJ(LaunchMetrics, static_smem, F_I32),
    FJ(LaunchMetrics, dynamic_smem, F_U32), FJ(LaunchMetrics, local_bytes, F_I32),
    FJ(LaunchMetrics, occupancy, F_I32),   FJ(LaunchMetrics, waves, F_REAL),
};

/* status, error, cuda_error and fatal head both results; prof[] ends them. */
#define RESULT_HEAD(T)                                                                                           \
    {.key = "status", .type = F_NAME, .off = offsetof(T, status), .req = 1, .names = gate_status_names,        \
     .max = EVAL_NSTATUS},                                                                                     \
    FJ_CHARS(T, error), FJ_CHARS(T, cuda_error), FJ(T, fatal, F_BOOL)
#define RESULT_PROFILES(T, tab)                                                                                  \
    {.key = "profiles", .type = F_ARR, .off = offsetof(T, prof), .size = sizeof(ProfileStat), .sub = tab,      \
     .nsub = NFIELDS(tab), .elem = F_OBJ, .count = offsetof(T, nprof), .max = PLAN_MAX_PROFILES}

static const Field result_fields[] = {
    RESULT_HEAD(BenchResult),
    FJ_OBJ(BenchResult, ms, stats_fields),  FJ(BenchResult, batch, F_I32), FJ(BenchResult, cold, F_BOOL),
    FJ(BenchResult, graph, F_BOOL),         FJ(BenchResult, hold, F_BOOL),
    FJ_ARR(BenchResult, launches, nlaunches, launch_fields),
    FJ(BenchResult, total_ctas, F_U64),     FJ(BenchResult, tflops, F_REAL), FJ(BenchResult, gbps, F_REAL),
    FJ(BenchResult, pct_peak_flops, F_REAL), FJ(BenchResult, pct_peak_bw, F_REAL),
    RESULT_PROFILES(BenchResult, profile_fields),
};

static const Field compare_fields[] = {
    RESULT_HEAD(CompareResult),
    FJ_OBJ(CompareResult, ratio, stats_fields), FJ_OBJ(CompareResult, a_ms, stats_fields),
    FJ_OBJ(CompareResult, b_ms, stats_fields),  FJ(CompareResult, pairs, F_I32),
    FJ(CompareResult, attempts, F_I32),         FJ(CompareResult, noisy, F_BOOL),
    FJ(CompareResult, batch, F_I32),            FJ(CompareResult, batch_a, F_I32),
    FJ(CompareResult, batch_b, F_I32),          FJ(CompareResult, graph, F_BOOL),
    FJ(CompareResult, hold, F_BOOL),            FJ(CompareResult, worst, F_I32),
    RESULT_PROFILES(CompareResult, ab_profile_fields),
};

/* ---- the named forms ----------------------------------------------------- */

json_t *bench_options_to_json(const BenchOptions *o)
{
    return fld_to_json(options_fields, NFIELDS(options_fields), o);
}

int bench_options_from_json(const json_t *j, BenchOptions *o, EvoErr *err)
{
    bench_options_default(o);
    o->cold = 0;
    return j ? fld_from_json(options_fields, NFIELDS(options_fields), j, o, err) : 0;
}

json_t *bench_stats_to_json(const BenchStats *s)
{
    return fld_to_json(stats_fields, NFIELDS(stats_fields), s);
}

/* Read a result with table f into rec (size bytes, zeroed first). One
 * that does not read is EVAL_INVALID with the reason in error. */
static int result_read(const Field *f, int n, const json_t *j, void *rec, size_t size, EvalStatus *st, char *error,
                       size_t cap, const char *what)
{
    EvoErr e;
    memset(rec, 0, size);
    if (fld_from_json(f, n, j, rec, &e) == 0)
        return 0;
    *st = EVAL_INVALID;
    snprintf(error, cap, "worker reply: %s: %s", what, e.msg);
    return -1;
}

json_t *bench_result_to_json(const BenchResult *r)
{
    return fld_to_json(result_fields, NFIELDS(result_fields), r);
}

int bench_result_from_json(const json_t *j, BenchResult *r)
{
    return result_read(result_fields, NFIELDS(result_fields), j, r, sizeof(*r), &r->status, r->error,
                       sizeof(r->error), "timing result");
}

json_t *bench_compare_to_json(const CompareResult *r)
{
    return fld_to_json(compare_fields, NFIELDS(compare_fields), r);
}

int bench_compare_from_json(const json_t *j, CompareResult *r)
{
    if (result_read(compare_fields, NFIELDS(compare_fields), j, r, sizeof(*r), &r->status, r->error,
                    sizeof(r->error), "A/B result"))
        return -1;
    if (r->worst < 0 || r->worst >= (r->nprof > 0 ? r->nprof : 1))
        r->worst = 0;
    return 0;
}

int bench_metrics_profiles(const char *metrics_json, ProfileStat *out)
{
    json_t *m = metrics_json ? json_loads(metrics_json, 0, NULL) : NULL;
    BenchResult *r = xcalloc(1, sizeof(*r));
    const Field *pf = &result_fields[NFIELDS(result_fields) - 1];   /* "profiles" alone */
    int n = json_is_object(m) && fld_from_json(pf, 1, m, r, NULL) == 0 ? r->nprof : 0;
    memcpy(out, r->prof, (size_t)n * sizeof(*out));
    free(r);
    json_decref(m);
    return n;
}

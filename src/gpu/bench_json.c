/*
 * bench_json: the JSON forms of the timing records that cross the worker
 * pipe (and go into metrics_json): BenchOptions, BenchStats, BenchResult,
 * CompareResult, and each input profile's ProfileStat, described once in
 * a field table. See bench.h.
 */
#include "gpu/bench.h"

#include <stddef.h>
#include <string.h>

#include "gpu/proto.h"

/* ---- ProfileStat: one field table ------------------------------------- */

enum { PF_STR, PF_STATS, PF_INT, PF_REAL };
static const struct {
    const char *key;
    int         type;
    size_t      off;
    int         ab;     /* only in an A/B's record */
} profile_fields[] = {
    {"name", PF_STR, offsetof(ProfileStat, name), 0},
    {"ms", PF_STATS, offsetof(ProfileStat, ms), 0},
    {"tflops", PF_REAL, offsetof(ProfileStat, tflops), 0},
    {"a_ms", PF_STATS, offsetof(ProfileStat, a_ms), 1},
    {"ratio", PF_STATS, offsetof(ProfileStat, ratio), 1},
    {"attempts", PF_INT, offsetof(ProfileStat, attempts), 1},
    {"noisy", PF_INT, offsetof(ProfileStat, noisy), 1},
};

/* n records as a JSON array (new reference); the A/B fields where a
 * record has a ratio (ab: always). */
static json_t *profiles_to_json(const ProfileStat *p, int n, int ab)
{
    json_t *arr = json_array();
    for (int k = 0; k < n; k++) {
        json_t *o = json_object();
        const char *base = (const char *)&p[k];
        for (size_t f = 0; f < EVO_ARRAY_LEN(profile_fields); f++) {
            const void *at = base + profile_fields[f].off;
            json_t *v = NULL;
            if (profile_fields[f].ab && !ab && p[k].ratio.n == 0)
                continue;
            switch (profile_fields[f].type) {
            case PF_STR: v = json_string((const char *)at); break;
            case PF_STATS: v = bench_stats_to_json((const BenchStats *)at); break;
            case PF_INT: v = json_integer(*(const int *)at); break;
            default: v = json_real(*(const double *)at); break;
            }
            json_object_set_new(o, profile_fields[f].key, v);
        }
        json_array_append_new(arr, o);
    }
    return arr;
}

/* The records of a JSON array into out (at most PLAN_MAX_PROFILES);
 * returns how many. Missing fields are zero. */
static int profiles_from_json(const json_t *arr, ProfileStat *out)
{
    int n = 0;
    for (size_t k = 0; json_is_array(arr) && k < json_array_size(arr) && n < PLAN_MAX_PROFILES; k++, n++) {
        const json_t *o = json_array_get(arr, k);
        char *base = (char *)&out[n];
        memset(&out[n], 0, sizeof(out[n]));
        for (size_t f = 0; f < EVO_ARRAY_LEN(profile_fields); f++) {
            void *at = base + profile_fields[f].off;
            const char *key = profile_fields[f].key;
            switch (profile_fields[f].type) {
            case PF_STR: proto_copy_str(o, key, (char *)at, sizeof(out[n].name)); break;
            case PF_STATS: bench_stats_from_json(json_object_get(o, key), (BenchStats *)at); break;
            case PF_INT: *(int *)at = (int)proto_get_int(o, key, 0); break;
            default: *(double *)at = proto_get_num(o, key, 0); break;
            }
        }
    }
    return n;
}

/* ---- options, statistics, results ------------------------------------- */

json_t *bench_options_to_json(const BenchOptions *o)
{
    return json_pack("{s:i, s:i, s:f, s:b, s:b, s:b, s:b, s:i, s:i, s:f, s:I, s:I}", "warmup", o->warmup,
                     "samples", o->samples, "min_sample_ms", o->min_sample_ms, "cold", o->cold, "graph", o->graph,
                     "hold", o->hold, "shared", o->shared, "pairs", o->pairs, "retries", o->retries,
                     "noise_threshold", o->noise_threshold, "seed", (json_int_t)o->seed, "profiles",
                     (json_int_t)o->profiles);
}

void bench_options_from_json(const json_t *j, BenchOptions *o)
{
    bench_options_default(o);
    o->warmup = (int)proto_get_int(j, "warmup", o->warmup);
    o->samples = (int)proto_get_int(j, "samples", o->samples);
    o->min_sample_ms = proto_get_num(j, "min_sample_ms", o->min_sample_ms);
    o->cold = (int)proto_get_int(j, "cold", 0);
    o->graph = (int)proto_get_int(j, "graph", o->graph);
    o->hold = (int)proto_get_int(j, "hold", o->hold);
    o->shared = (int)proto_get_int(j, "shared", o->shared);
    o->pairs = (int)proto_get_int(j, "pairs", o->pairs);
    o->retries = (int)proto_get_int(j, "retries", o->retries);
    o->noise_threshold = proto_get_num(j, "noise_threshold", o->noise_threshold);
    o->seed = (uint64_t)proto_get_int(j, "seed", (long long)o->seed);
    o->profiles = (unsigned)proto_get_int(j, "profiles", 0);
}

json_t *bench_stats_to_json(const BenchStats *s)
{
    return json_pack("{s:i, s:f, s:f, s:f, s:f, s:f, s:f, s:f, s:f}", "n", s->n, "median", s->median, "mean",
                     s->mean, "min", s->min, "max", s->max, "p10", s->p10, "p90", s->p90, "cv", s->cv, "mad",
                     s->mad);
}

void bench_stats_from_json(const json_t *j, BenchStats *s)
{
    memset(s, 0, sizeof(*s));
    s->n = (int)proto_get_int(j, "n", 0);
    s->median = proto_get_num(j, "median", 0);
    s->mean = proto_get_num(j, "mean", 0);
    s->min = proto_get_num(j, "min", 0);
    s->max = proto_get_num(j, "max", 0);
    s->p10 = proto_get_num(j, "p10", 0);
    s->p90 = proto_get_num(j, "p90", 0);
    s->cv = proto_get_num(j, "cv", 0);
    s->mad = proto_get_num(j, "mad", 0);
}

static void status_to_json(json_t *o, EvalStatus st, const char *error, const char *cuda_error, int fatal)
{
    json_object_set_new(o, "status", json_string(gate_status_name(st)));
    json_object_set_new(o, "error", json_string(error));
    json_object_set_new(o, "cuda_error", json_string(cuda_error));
    json_object_set_new(o, "fatal", json_boolean(fatal));
}

static EvalStatus status_from_json(const json_t *j)
{
    int st = gate_status_parse(proto_get_str(j, "status", ""));
    return st < 0 ? EVAL_INVALID : (EvalStatus)st;
}

json_t *bench_result_to_json(const BenchResult *r)
{
    json_t *o = json_object(), *ls = json_array();
    status_to_json(o, r->status, r->error, r->cuda_error, r->fatal);
    json_object_set_new(o, "ms", bench_stats_to_json(&r->ms));
    json_object_set_new(o, "batch", json_integer(r->batch));
    json_object_set_new(o, "cold", json_boolean(r->cold));
    json_object_set_new(o, "graph", json_boolean(r->graph));
    json_object_set_new(o, "hold", json_boolean(r->hold));
    for (int i = 0; i < r->nlaunches && i < BENCH_MAX_LAUNCHES; i++) {
        const LaunchMetrics *m = &r->launches[i];
        json_array_append_new(ls, json_pack("{s:s, s:I, s:i, s:i, s:i, s:i, s:i, s:i, s:f}", "entry", m->entry,
                                            "ctas", (json_int_t)m->ctas, "threads", (int)m->threads,
                                            "registers", m->registers, "static_smem", m->static_smem,
                                            "dynamic_smem", (int)m->dynamic_smem, "local_bytes", m->local_bytes,
                                            "occupancy", m->occupancy, "waves", m->waves));
    }
    json_object_set_new(o, "launches", ls);
    json_object_set_new(o, "total_ctas", json_integer((json_int_t)r->total_ctas));
    json_object_set_new(o, "tflops", json_real(r->tflops));
    json_object_set_new(o, "gbps", json_real(r->gbps));
    json_object_set_new(o, "pct_peak_flops", json_real(r->pct_peak_flops));
    json_object_set_new(o, "pct_peak_bw", json_real(r->pct_peak_bw));
    json_object_set_new(o, "profiles", profiles_to_json(r->prof, r->nprof, 0));
    return o;
}

void bench_result_from_json(const json_t *j, BenchResult *r)
{
    const json_t *ls = json_object_get(j, "launches");
    memset(r, 0, sizeof(*r));
    r->status = status_from_json(j);
    proto_copy_str(j, "error", r->error, sizeof(r->error));
    proto_copy_str(j, "cuda_error", r->cuda_error, sizeof(r->cuda_error));
    r->fatal = (int)proto_get_int(j, "fatal", 0);
    bench_stats_from_json(json_object_get(j, "ms"), &r->ms);
    r->batch = (int)proto_get_int(j, "batch", 0);
    r->cold = (int)proto_get_int(j, "cold", 0);
    r->graph = (int)proto_get_int(j, "graph", 0);
    r->hold = (int)proto_get_int(j, "hold", 0);
    for (size_t i = 0; json_is_array(ls) && i < json_array_size(ls) && i < BENCH_MAX_LAUNCHES; i++) {
        const json_t *jm = json_array_get(ls, i);
        LaunchMetrics *m = &r->launches[i];
        proto_copy_str(jm, "entry", m->entry, sizeof(m->entry));
        m->ctas = (uint64_t)proto_get_int(jm, "ctas", 0);
        m->threads = (unsigned)proto_get_int(jm, "threads", 0);
        m->registers = (int)proto_get_int(jm, "registers", 0);
        m->static_smem = (int)proto_get_int(jm, "static_smem", 0);
        m->dynamic_smem = (unsigned)proto_get_int(jm, "dynamic_smem", 0);
        m->local_bytes = (int)proto_get_int(jm, "local_bytes", 0);
        m->occupancy = (int)proto_get_int(jm, "occupancy", 0);
        m->waves = proto_get_num(jm, "waves", 0);
        r->nlaunches = (int)i + 1;
    }
    r->total_ctas = (uint64_t)proto_get_int(j, "total_ctas", 0);
    r->tflops = proto_get_num(j, "tflops", 0);
    r->gbps = proto_get_num(j, "gbps", 0);
    r->pct_peak_flops = proto_get_num(j, "pct_peak_flops", 0);
    r->pct_peak_bw = proto_get_num(j, "pct_peak_bw", 0);
    r->nprof = profiles_from_json(json_object_get(j, "profiles"), r->prof);
}

json_t *bench_compare_to_json(const CompareResult *r)
{
    json_t *o = json_object();
    status_to_json(o, r->status, r->error, r->cuda_error, r->fatal);
    json_object_set_new(o, "ratio", bench_stats_to_json(&r->ratio));
    json_object_set_new(o, "a_ms", bench_stats_to_json(&r->a_ms));
    json_object_set_new(o, "b_ms", bench_stats_to_json(&r->b_ms));
    json_object_set_new(o, "pairs", json_integer(r->pairs));
    json_object_set_new(o, "attempts", json_integer(r->attempts));
    json_object_set_new(o, "noisy", json_boolean(r->noisy));
    json_object_set_new(o, "batch", json_integer(r->batch));
    json_object_set_new(o, "batch_a", json_integer(r->batch_a));
    json_object_set_new(o, "batch_b", json_integer(r->batch_b));
    json_object_set_new(o, "graph", json_boolean(r->graph));
    json_object_set_new(o, "hold", json_boolean(r->hold));
    json_object_set_new(o, "worst", json_integer(r->worst));
    json_object_set_new(o, "profiles", profiles_to_json(r->prof, r->nprof, 1));
    return o;
}

void bench_compare_from_json(const json_t *j, CompareResult *r)
{
    memset(r, 0, sizeof(*r));
    r->status = status_from_json(j);
    proto_copy_str(j, "error", r->error, sizeof(r->error));
    proto_copy_str(j, "cuda_error", r->cuda_error, sizeof(r->cuda_error));
    r->fatal = (int)proto_get_int(j, "fatal", 0);
    bench_stats_from_json(json_object_get(j, "ratio"), &r->ratio);
    bench_stats_from_json(json_object_get(j, "a_ms"), &r->a_ms);
    bench_stats_from_json(json_object_get(j, "b_ms"), &r->b_ms);
    r->pairs = (int)proto_get_int(j, "pairs", 0);
    r->attempts = (int)proto_get_int(j, "attempts", 0);
    r->noisy = (int)proto_get_int(j, "noisy", 0);
    r->batch = (int)proto_get_int(j, "batch", 0);
    r->batch_a = (int)proto_get_int(j, "batch_a", 0);
    r->batch_b = (int)proto_get_int(j, "batch_b", 0);
    r->graph = (int)proto_get_int(j, "graph", 0);
    r->hold = (int)proto_get_int(j, "hold", 0);
    r->worst = (int)proto_get_int(j, "worst", 0);
    r->nprof = profiles_from_json(json_object_get(j, "profiles"), r->prof);
    if (r->worst < 0 || r->worst >= (r->nprof > 0 ? r->nprof : 1))
        r->worst = 0;
}


int bench_metrics_profiles(const char *metrics_json, ProfileStat *out)
{
    json_t *m = metrics_json ? json_loads(metrics_json, 0, NULL) : NULL;
    int n = profiles_from_json(json_object_get(m, "profiles"), out);
    json_decref(m);
    return n;
}

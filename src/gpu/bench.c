/*
 * bench: statistics, warm/cold timing, interleaved A/B and launch metrics.
 * See bench.h.
 */
#include "bench.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proto.h"
#include "watchdog.h"

/* ---- statistics ------------------------------------------------------- */

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double pct_sorted(const double *s, int n, double p)
{
    double pos = p * (n - 1);
    int lo = (int)floor(pos);
    int hi = lo + 1 < n ? lo + 1 : lo;
    return s[lo] + (s[hi] - s[lo]) * (pos - lo);
}

void bench_stats(const double *x, int n, BenchStats *out)
{
    double *s, *dev, sum = 0, sq = 0;
    memset(out, 0, sizeof(*out));
    if (n <= 0)
        return;
    s = xmalloc((size_t)n * sizeof(*s));
    dev = xmalloc((size_t)n * sizeof(*dev));
    memcpy(s, x, (size_t)n * sizeof(*s));
    qsort(s, (size_t)n, sizeof(*s), cmp_double);
    for (int i = 0; i < n; i++)
        sum += s[i];
    out->n = n;
    out->mean = sum / n;
    for (int i = 0; i < n; i++)
        sq += (s[i] - out->mean) * (s[i] - out->mean);
    out->cv = n > 1 && out->mean != 0 ? sqrt(sq / (n - 1)) / fabs(out->mean) : 0;
    out->min = s[0];
    out->max = s[n - 1];
    out->median = pct_sorted(s, n, 0.5);
    out->p10 = pct_sorted(s, n, 0.1);
    out->p90 = pct_sorted(s, n, 0.9);
    for (int i = 0; i < n; i++)
        dev[i] = fabs(s[i] - out->median);
    qsort(dev, (size_t)n, sizeof(*dev), cmp_double);
    out->mad = pct_sorted(dev, n, 0.5);
    free(s);
    free(dev);
}

double bench_percentile(const double *x, int n, double p)
{
    if (n <= 0)
        return NAN;
    double *s = xmalloc((size_t)n * sizeof(*s));
    memcpy(s, x, (size_t)n * sizeof(*s));
    qsort(s, (size_t)n, sizeof(*s), cmp_double);
    double v = pct_sorted(s, n, p);
    free(s);
    return v;
}

int bench_settled(const BenchStats *ratio, double threshold)
{
    double half = (ratio->p90 - ratio->p10) / 2;
    double rel = ratio->median != 0 ? half / fabs(ratio->median) : INFINITY;
    return ratio->n > 0 && rel <= threshold && ratio->cv <= threshold;
}

/* EVOENG_SAMPLE_MS as a number of ms in [0.05, 1000]: 1 and *ms, 0 when
 * unset or empty, -1 when set to anything else. */
static int env_sample_ms(double *ms)
{
    const char *v = getenv("EVOENG_SAMPLE_MS");
    char *end;
    if (!v || !*v)
        return 0;
    *ms = strtod(v, &end);
    return *end == '\0' && *ms >= 0.05 && *ms <= 1000 ? 1 : -1;
}

/* EVOENG_TIMING_HOLD: 1 and *off = 1 for "0", 1 and *off = 0 for "1", 0
 * when unset or empty, -1 for anything else. */
static int env_hold_off(int *off)
{
    const char *v = getenv("EVOENG_TIMING_HOLD");
    if (!v || !*v)
        return 0;
    *off = strcmp(v, "0") == 0;
    return *off || strcmp(v, "1") == 0 ? 1 : -1;
}

int bench_env_check(EvoErr *err)
{
    double ms;
    int off;
    if (env_sample_ms(&ms) < 0)
        return err_set(err, "EVOENG_SAMPLE_MS='%s': expected the least length of a timing sample in ms, "
                            "from 0.05 to 1000 (default 0.5)", getenv("EVOENG_SAMPLE_MS"));
    if (env_hold_off(&off) < 0)
        return err_set(err, "EVOENG_TIMING_HOLD='%s': expected 0 (time without the hold) or 1 (the default)",
                       getenv("EVOENG_TIMING_HOLD"));
    return watchdog_env_check(err);
}

void bench_options_default(BenchOptions *o)
{
    double ms;
    int off = 0;
    memset(o, 0, sizeof(*o));
    o->warmup = 3;
    o->samples = 25;
    o->min_sample_ms = env_sample_ms(&ms) > 0 ? ms : 0.5;
    o->graph = 1;
    o->hold = !(env_hold_off(&off) != 0 && off);   /* only "0" turns it off */
    o->shared = 1;
    o->pairs = 15;
    o->retries = 3;
    o->noise_threshold = 0.01;
    o->seed = 1;
}

json_t *bench_options_to_json(const BenchOptions *o)
{
    return json_pack("{s:i, s:i, s:f, s:b, s:b, s:b, s:b, s:i, s:i, s:f, s:I}", "warmup", o->warmup, "samples",
                     o->samples, "min_sample_ms", o->min_sample_ms, "cold", o->cold, "graph", o->graph, "hold",
                     o->hold, "shared", o->shared, "pairs", o->pairs, "retries", o->retries, "noise_threshold",
                     o->noise_threshold, "seed", (json_int_t)o->seed);
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
}

void bench_fill_throughput(BenchResult *r, const Plan *plan, const DeviceInfo *dev)
{
    double s = r->ms.median / 1e3;
    if (s <= 0)
        return;
    r->tflops = plan->flops / s / 1e12;
    r->gbps = plan->bytes / s / 1e9;
    r->pct_peak_flops = dev && dev->peak_tflops_fp16 > 0 ? 100.0 * r->tflops / dev->peak_tflops_fp16 : 0;
    r->pct_peak_bw = dev && dev->peak_gbps > 0 ? 100.0 * r->gbps / dev->peak_gbps : 0;
}

/* ---- device part ------------------------------------------------------ */

int bench_metrics(CudaCtx *c, const CudaLaunches *cl, BenchResult *r, EvoErr *err)
{
    CudaApi *api = c->api;
    r->nlaunches = 0;
    r->total_ctas = 0;
    for (int i = 0; i < cl->n; i++) {
        const PlanLaunch *l = &cl->l[i];
        LaunchMetrics m;
        int threads = (int)(l->block[0] * l->block[1] * l->block[2]);
        memset(&m, 0, sizeof(m));
        snprintf(m.entry, sizeof(m.entry), "%s", l->entry);
        m.ctas = (uint64_t)l->grid[0] * l->grid[1] * l->grid[2];
        m.threads = (unsigned)threads;
        m.dynamic_smem = l->smem;
        EVO_CU(api, api->cuFuncGetAttribute(&m.registers, CU_FUNC_ATTRIBUTE_NUM_REGS, cl->fn[i]), err);
        EVO_CU(api, api->cuFuncGetAttribute(&m.static_smem, CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES, cl->fn[i]), err);
        EVO_CU(api, api->cuFuncGetAttribute(&m.local_bytes, CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES, cl->fn[i]), err);
        EVO_CU(api, api->cuOccupancyMaxActiveBlocksPerMultiprocessor(&m.occupancy, cl->fn[i], threads, l->smem),
               err);
        if (m.occupancy > 0 && c->info.sm_count > 0)
            m.waves = (double)m.ctas / ((double)c->info.sm_count * m.occupancy);
        r->total_ctas += m.ctas;
        if (r->nlaunches < BENCH_MAX_LAUNCHES)
            r->launches[r->nlaunches++] = m;
    }
    return 0;
fail:
    return -1;
}

/* Timing machinery shared by bench_time and bench_compare. */
typedef struct Timer {
    CudaCtx    *c;
    CUevent     e0, e1;
    CUdeviceptr flush;     /* cold mode: 2x L2 bytes */
    size_t      flush_words;
    volatile uint32_t *hold;  /* host-mapped word the stream waits on; NULL: no hold */
    CUdeviceptr hold_dev;
    uint32_t    hold_seq;     /* the value that releases the current sample */
    CUresult    cu;        /* last failure */
    EvoErr      err;
} Timer;

/* One side being timed: its launches and, in graph mode, the captured
 * batch. */
typedef struct Runner {
    const CudaLaunches *cl;
    CUgraphExec         exec;    /* NULL: launch from the host */
    int                 batch;   /* runs per sample */
} Runner;

/* The hold's word: pinned, mapped host memory. Without the driver's entry
 * points, or when they fail, timing goes on without the hold. */
static void timer_hold_open(Timer *t)
{
    CudaApi *api = t->c->api;
    void *p = NULL;
    if (!api->cuMemHostAlloc || !api->cuMemFreeHost || !api->cuMemHostGetDevicePointer ||
        !api->cuStreamWaitValue32)
        return;
    if (api->cuMemHostAlloc(&p, 64, CU_MEMHOSTALLOC_DEVICEMAP | CU_MEMHOSTALLOC_PORTABLE) != CUDA_SUCCESS)
        return;
    if (api->cuMemHostGetDevicePointer(&t->hold_dev, p, 0) != CUDA_SUCCESS) {
        api->cuMemFreeHost(p);
        return;
    }
    t->hold = p;
    *t->hold = 0;
}

/* Release the stream held by timer_hold_wait (NULL-safe, idempotent). */
static void timer_hold_release(Timer *t)
{
    if (t->hold && *t->hold != t->hold_seq) {
        __atomic_thread_fence(__ATOMIC_SEQ_CST);
        *t->hold = t->hold_seq;
        __atomic_thread_fence(__ATOMIC_SEQ_CST);
    }
}

/* Queue a wait for the next release. A driver that refuses it (no stream
 * memory operations) loses the hold for good; that is not an error. */
static void timer_hold_wait(Timer *t)
{
    if (!t->hold)
        return;
    uint32_t next = t->hold_seq + 1;
    if (next == 0) {   /* wrapped: start again from 1 (nothing waits now) */
        *t->hold = 0;
        next = 1;
    }
    if (t->c->api->cuStreamWaitValue32(t->c->stream, t->hold_dev, next, CU_STREAM_WAIT_VALUE_GEQ) !=
        CUDA_SUCCESS) {
        t->c->api->cuMemFreeHost((void *)t->hold);
        t->hold = NULL;
        return;
    }
    t->hold_seq = next;
}

static int timer_open(Timer *t, CudaCtx *c, int cold, int hold)
{
    CudaApi *api = c->api;
    memset(t, 0, sizeof(*t));
    t->c = c;
    if (hold)
        timer_hold_open(t);
    if ((t->cu = api->cuEventCreate(&t->e0, CU_EVENT_DEFAULT)) != CUDA_SUCCESS ||
        (t->cu = api->cuEventCreate(&t->e1, CU_EVENT_DEFAULT)) != CUDA_SUCCESS)
        return cuda_check(api, t->cu, "cuEventCreate", &t->err);
    if (cold) {
        size_t bytes = (size_t)(c->info.l2_bytes > 0 ? c->info.l2_bytes : (64ll << 20)) * 2;
        t->flush_words = bytes / 4;
        if ((t->cu = api->cuMemAlloc(&t->flush, bytes)) != CUDA_SUCCESS)
            return cuda_check(api, t->cu, "cuMemAlloc(L2 flush buffer)", &t->err);
    }
    return 0;
}

static void timer_close(Timer *t)
{
    CudaApi *api = t->c->api;
    if (t->e0)
        api->cuEventDestroy(t->e0);
    if (t->e1)
        api->cuEventDestroy(t->e1);
    if (t->flush)
        api->cuMemFree(t->flush);
    if (t->hold) {
        timer_hold_release(t);
        api->cuMemFreeHost((void *)t->hold);
    }
}

static void runner_close(Timer *t, Runner *r)
{
    if (r->exec)
        t->c->api->cuGraphExecDestroy(r->exec);
    r->exec = NULL;
}

/* Capture r->batch back-to-back runs of the launch plan into a graph. */
static int runner_capture(Timer *t, Runner *r)
{
    CudaApi *api = t->c->api;
    CUstream s = t->c->stream;
    CUgraph g = NULL;
    CUresult end;
    if ((t->cu = api->cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL)) != CUDA_SUCCESS)
        return cuda_check(api, t->cu, "cuStreamBeginCapture", &t->err);
    for (int i = 0; i < r->batch && t->cu == CUDA_SUCCESS; i++)
        cuda_launches_run(t->c, r->cl, &t->cu, &t->err);
    end = api->cuStreamEndCapture(s, &g);
    if (t->cu != CUDA_SUCCESS)
        goto fail;
    if ((t->cu = end) != CUDA_SUCCESS) {
        cuda_check(api, t->cu, "cuStreamEndCapture", &t->err);
        goto fail;
    }
    if ((t->cu = api->cuGraphInstantiateWithFlags(&r->exec, g, 0)) != CUDA_SUCCESS) {
        cuda_check(api, t->cu, "cuGraphInstantiateWithFlags", &t->err);
        goto fail;
    }
    api->cuGraphDestroy(g);
    return 0;
fail:
    if (g)
        api->cuGraphDestroy(g);
    r->exec = NULL;
    return -1;
}

/* Queue one sample of r: (cold: an L2 flush,) the start event, `batch`
 * back-to-back runs (cold: 1), the end event. 0, or -1 with
 * t->cu and t->err. */
static int timer_enqueue(Timer *t, const Runner *r, int cold, int batch)
{
    CudaApi *api = t->c->api;
    CUstream s = t->c->stream;
    if (cold && (t->cu = api->cuMemsetD32Async(t->flush, 0x5a5a5a5au, t->flush_words, s)) != CUDA_SUCCESS)
        return cuda_check(api, t->cu, "cuMemsetD32Async(L2 flush)", &t->err);
    if ((t->cu = api->cuEventRecord(t->e0, s)) != CUDA_SUCCESS)
        return cuda_check(api, t->cu, "cuEventRecord", &t->err);
    if (r->exec && !cold) {
        if ((t->cu = api->cuGraphLaunch(r->exec, s)) != CUDA_SUCCESS)
            return cuda_check(api, t->cu, "cuGraphLaunch", &t->err);
    } else {
        for (int i = 0; i < batch; i++)
            if (cuda_launches_run(t->c, r->cl, &t->cu, &t->err) != 0)
                return -1;
    }
    if ((t->cu = api->cuEventRecord(t->e1, s)) != CUDA_SUCCESS)
        return cuda_check(api, t->cu, "cuEventRecord", &t->err);
    return 0;
}

/* One sample of r, held until it is fully queued (see bench.h); *ms gets
 * the time per run. */
static int timer_sample(Timer *t, const Runner *r, int cold, double *ms)
{
    CudaApi *api = t->c->api;
    int batch = cold ? 1 : r->batch;
    float f = 0;
    timer_hold_wait(t);
    int rc = timer_enqueue(t, r, cold, batch);
    timer_hold_release(t);
    if (rc != 0)
        return -1;
    if ((t->cu = api->cuEventSynchronize(t->e1)) != CUDA_SUCCESS)
        return cuda_check(api, t->cu, "cuEventSynchronize", &t->err);
    if ((t->cu = api->EventElapsedTime(&f, t->e0, t->e1)) != CUDA_SUCCESS)
        return cuda_check(api, t->cu, "cuEventElapsedTime", &t->err);
    *ms = (double)f / batch;
    return 0;
}

/* Size the batch so a sample lasts >= min_sample_ms: from the first runs
 * (loads, caches), then timed single runs. Sets r->batch. */
static int timer_calibrate(Timer *t, Runner *r, const BenchOptions *o, int known)
{
    double ms = 0, best = INFINITY;
    r->batch = known > 0 ? known : 1;
    if (o->cold || known > 0)
        return 0;
    for (int i = 0; i < 3; i++) {
        if (timer_sample(t, r, 0, &ms) != 0)
            return -1;
        if (i > 0 && ms < best)
            best = ms;
    }
    if (best > 0 && isfinite(best)) {
        double want = ceil(o->min_sample_ms / best);
        r->batch = want < 1 ? 1 : want > 100000 ? 100000 : (int)want;
    }
    return 0;
}

/* Make r ready to sample with `batch` runs per sample: capture the graph
 * (graph mode), then warm up. A graph that cannot be captured falls back
 * to launches from the host. */
static int runner_ready(Timer *t, Runner *r, int batch, const BenchOptions *o)
{
    double ms;
    r->batch = o->cold ? 1 : batch;
    if (o->graph && !o->cold && runner_capture(t, r) != 0) {
        if (cuda_error_is_sticky(t->cu))
            return -1;
        t->cu = CUDA_SUCCESS;   /* not capturable: time launches from the host */
    }
    for (int i = 0; i < (o->warmup > 0 ? o->warmup : 1); i++)
        if (timer_sample(t, r, o->cold, &ms) != 0)
            return -1;
    return 0;
}

static void fail_status(EvalStatus *st, char *error, size_t ecap, char *cuda_error, size_t ccap, int *fatal,
                        const Timer *t)
{
    *st = t->cu == CUDA_SUCCESS ? EVAL_INVALID : gate_status_from_cuda(t->cu);
    *fatal = cuda_error_is_sticky(t->cu);
    snprintf(error, ecap, "%s", t->err.msg);
    snprintf(cuda_error, ccap, "%s", t->cu == CUDA_SUCCESS ? "" : cuda_error_name(t->c->api, t->cu));
}

int bench_time(CudaCtx *c, const CudaLaunches *cl, const BenchOptions *o, int known_batch, BenchResult *r,
               EvoErr *err)
{
    Timer t;
    Runner run = {cl, NULL, 1};
    int n = o->samples > 0 ? o->samples : 25;
    double *x = xcalloc((size_t)n, sizeof(*x));
    (void)err;
    r->status = EVAL_OK;
    r->cold = o->cold;
    if (timer_open(&t, c, o->cold, o->hold) != 0 || timer_calibrate(&t, &run, o, known_batch) != 0 ||
        runner_ready(&t, &run, run.batch, o) != 0)
        goto fail;
    for (int i = 0; i < n; i++)
        if (timer_sample(&t, &run, o->cold, &x[i]) != 0)
            goto fail;
    bench_stats(x, n, &r->ms);
    r->batch = run.batch;
    r->graph = run.exec != NULL;
    r->hold = t.hold != NULL;
    runner_close(&t, &run);
    timer_close(&t);
    free(x);
    return 0;
fail:
    fail_status(&r->status, r->error, sizeof(r->error), r->cuda_error, sizeof(r->cuda_error), &r->fatal, &t);
    runner_close(&t, &run);
    timer_close(&t);
    free(x);
    return 0;
}

int bench_compare(CudaCtx *c, const CudaLaunches *a, const CudaLaunches *b, const BenchOptions *o,
                  const int *known, CompareResult *r, EvoErr *err)
{
    Timer t;
    Runner ra_ = {a, NULL, 1}, rb_ = {b, NULL, 1};
    int pairs = o->pairs > 0 ? o->pairs : 15, tries = o->retries > 0 ? o->retries : 1;
    double *ra = xcalloc((size_t)pairs, sizeof(double)), *ta = xcalloc((size_t)pairs, sizeof(double));
    double *tb = xcalloc((size_t)pairs, sizeof(double));
    uint64_t rng = o->seed * 0x9E3779B97F4A7C15ull + 0x1234567ull;
    double best = INFINITY;
    (void)err;
    memset(r, 0, sizeof(*r));
    r->status = EVAL_OK;
    r->pairs = pairs;
    if (timer_open(&t, c, o->cold, o->hold) != 0 || timer_calibrate(&t, &ra_, o, known ? known[0] : 0) != 0 ||
        timer_calibrate(&t, &rb_, o, known ? known[1] : 0) != 0)
        goto fail;
    r->batch_a = ra_.batch;
    r->batch_b = rb_.batch;
    /* the same batch for both, so that each sample covers a similar span */
    {
        int m = ra_.batch > rb_.batch ? ra_.batch : rb_.batch;
        if (runner_ready(&t, &ra_, m, o) != 0 || runner_ready(&t, &rb_, m, o) != 0)
            goto fail;
    }
    for (int attempt = 0; attempt < tries; attempt++) {
        BenchStats rs, as, bs;
        for (int p = 0; p < pairs; p++) {
            rng ^= rng << 13;
            rng ^= rng >> 7;
            rng ^= rng << 17;
            int b_first = (int)(rng >> 63);
            const Runner *first = b_first ? &rb_ : &ra_, *second = b_first ? &ra_ : &rb_;
            double *tf = b_first ? &tb[p] : &ta[p], *ts = b_first ? &ta[p] : &tb[p];
            if (timer_sample(&t, first, o->cold, tf) != 0 || timer_sample(&t, second, o->cold, ts) != 0)
                goto fail;
            ra[p] = ta[p] > 0 ? tb[p] / ta[p] : INFINITY;
        }
        bench_stats(ra, pairs, &rs);
        bench_stats(ta, pairs, &as);
        bench_stats(tb, pairs, &bs);
        r->attempts = attempt + 1;
        double spread = rs.median != 0 ? (rs.p90 - rs.p10) / 2 / fabs(rs.median) : INFINITY;
        if (spread < best) {
            best = spread;
            r->ratio = rs;
            r->a_ms = as;
            r->b_ms = bs;
        }
        if (bench_settled(&rs, o->noise_threshold)) {
            r->ratio = rs;
            r->a_ms = as;
            r->b_ms = bs;
            r->noisy = 0;
            break;
        }
        r->noisy = 1;
    }
    r->batch = ra_.batch;
    r->graph = ra_.exec != NULL && rb_.exec != NULL;
    r->hold = t.hold != NULL;
    runner_close(&t, &ra_);
    runner_close(&t, &rb_);
    timer_close(&t);
    free(ra);
    free(ta);
    free(tb);
    return 0;
fail:
    fail_status(&r->status, r->error, sizeof(r->error), r->cuda_error, sizeof(r->cuda_error), &r->fatal, &t);
    runner_close(&t, &ra_);
    runner_close(&t, &rb_);
    timer_close(&t);
    free(ra);
    free(ta);
    free(tb);
    return 0;
}

/*
 * cmd_check: `evoeng check TASK [--arch sm_90] [--sample N]`. Validates a
 * task spec, measures its parameter space before and after constraints
 * (exactly, by enumerating the valid configurations with task_space, or
 * when that is too large by sampling), then compiles the default
 * configuration and N random valid ones (drawn uniformly from the
 * enumerated set, else by rejection sampling) plus the reference in
 * parallel and prints a table. No GPU is needed.
 * With --gpu, the gate sweep fills the same per-configuration results
 * (CheckRow), so text and --json (one object, README.md "JSON output")
 * come from one path whether or not the GPU ran; with --json every
 * progress line goes to stderr.
 */
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <pthread.h>
#include <string.h>

#include "cli/commands.h"
#include "cli/runctx.h"
#include "compile/clog.h"
#include "compile/prep.h"
#include "device.h"
#include "gpu/gpueval.h"
#include "msg.h"
#include "search/evolve.h"
#include "search/ops.h"
#include "task/task_space.h"

/* Count the valid configurations of a space too large to enumerate:
 * exhaustively up to a limit, else by sampling. *exact says which. */
static double count_valid(const Task *t, const DeviceInfo *dev, uint64_t seed, int *exact, EvoErr *err)
{
    double total = task_space_size(t);
    int np = task_nparams(t);
    int64_t *v = xcalloc((size_t)np + 1, sizeof(int64_t));
    double valid = 0;
    if (total <= 2e6) {
        *exact = 1;
        for (double idx = 0; idx < total; idx++) {
            double rest = idx;
            for (int i = np - 1; i >= 0; i--) {
                int nv = task_param_nvalues(t, i);
                v[i] = task_param_value(t, i, (int)fmod(rest, nv));
                rest = floor(rest / nv);
            }
            int ok = task_check(t, v, dev, NULL, err);
            if (ok < 0) {
                free(v);
                return -1;
            }
            valid += ok;
        }
    } else {
        *exact = 0;
        Rng rng;
        rng_seed(&rng, seed);
        int samples = 200000, hits = 0;
        for (int s = 0; s < samples; s++) {
            ops_random(t, &rng, v);
            int ok = task_check(t, v, dev, NULL, err);
            if (ok < 0) {
                free(v);
                return -1;
            }
            hits += ok;
        }
        valid = total * hits / samples;
    }
    free(v);
    return valid;
}

/* Rows 1.. of vals (stride np + 1) and keys: up to `want` distinct valid
 * configurations other than row 0 (the default or --params one, already
 * filled, key included), drawn uniformly from the enumerated space, or
 * when space is NULL by rejection sampling, whose shortfall is a warning
 * with the estimated valid fraction frac. Returns the rows filled, row 0
 * included. */
static int pick_samples(const Settings *s, const Task *t, const DeviceInfo *dev, const TaskSpace *space,
                        double frac, int64_t *vals, char **keys)
{
    int np = task_nparams(t), want = s->sample, n = 1;
    Rng rng;
    rng_seed(&rng, s->seed);
    if (space) {
        size_t *idx = xcalloc((size_t)want + 1, sizeof(size_t));
        size_t got = task_space_sample(space, &rng, vals, (size_t)want, idx);
        for (size_t i = 0; i < got; i++, n++) {
            int64_t *v = vals + (size_t)n * (size_t)(np + 1);
            memcpy(v, task_space_config(space, idx[i]), (size_t)np * sizeof(int64_t));
            keys[n] = ops_params_key(t, v, NULL);
        }
        free(idx);
        if ((int)got < want)
            fprintf(s->json ? stderr : stdout, "  sample       all %zu other valid configurations (--sample %d asks "
                    "for more than the space holds)\n", got, want);
        return n;
    }
    /* Rejection sampling: enough attempts for spaces where well under 1% of
     * the configurations are valid. */
    long attempts = 200L * (want + 1) + 2000000;
    for (long attempt = 0; n <= want && attempt < attempts; attempt++) {
        int64_t *v = vals + (size_t)n * (size_t)(np + 1);
        EvoErr err;
        ops_random(t, &rng, v);
        if (task_check(t, v, dev, NULL, &err) != 1)
            continue;
        char *k = ops_params_key(t, v, NULL);
        int dup = 0;
        for (int i = 0; i < n; i++)
            dup |= strcmp(keys[i], k) == 0;
        if (dup) {
            free(k);
            continue;
        }
        keys[n++] = k;
    }
    if (n - 1 < want)
        warnf("--sample %d: found only %d valid configurations in %ld random draws (the space is too large to "
              "enumerate; about %.3g%% of it is valid)", want, n - 1, attempts, 100.0 * frac);
    return n;
}

/* The GPU gate result of one configuration: status "" when not gated. */
typedef struct GateRow {
    char  status[32];
    char *error;
} GateRow;

/* --gpu: every configuration that passed the static checks goes through
 * the correctness gate on the GPU (all shapes, s->seeds seeds), no timing,
 * spread over the GPUs of --gpus (one thread per GPU). */
typedef struct Sweep {
    const Settings *s;
    Task           *t;
    GpuEval        *ge;
    const int64_t  *vals;
    int             stride, n, next;
    char          **keys;
    const Prepared *out;
    GateRow        *rows;             /* per configuration: the gate's verdict */
    int             ok, bad, skipped, done, failed;
    int            *retry, nretry;    /* configurations whose GPU was lost */
    const char     *source;           /* --source text in place of the template, or NULL */
    EvoErr          err;
    double          t0;
    pthread_mutex_t lock;
} Sweep;

typedef struct SweepThread {
    Sweep    *sw;
    int       slot;
    pthread_t tid;
} SweepThread;

/* The next configuration to gate, or -1. */
static int sweep_take(Sweep *sw)
{
    int i = -1;
    pthread_mutex_lock(&sw->lock);
    if (sw->failed)
        i = -1;
    else if (sw->nretry > 0)
        i = sw->retry[--sw->nretry];
    else if (sw->next < sw->n)
        i = sw->next++;
    pthread_mutex_unlock(&sw->lock);
    return i;
}

static void *sweep_thread(void *arg)
{
    SweepThread *th = arg;
    Sweep *sw = th->sw;
    Task *t = sw->t;
    for (int i; (i = sweep_take(sw)) >= 0;) {
        if (sw->out[i].status[0]) {
            pthread_mutex_lock(&sw->lock);
            sw->skipped++;
            pthread_mutex_unlock(&sw->lock);
            continue;
        }
        Child c;
        EvoErr err;
        evolve_child_init(&c, task_nparams(t));
        memcpy(c.vals, sw->vals + (size_t)i * (size_t)sw->stride, (size_t)task_nparams(t) * sizeof(int64_t));
        c.op = "check";
        c.custom_source = sw->source;
        c.params_key = xstrdup(sw->keys[i]);
        c.gpu = th->slot;
        int rc = evolve_evaluate(&gpueval_ops, sw->ge, &c, &err);
        pthread_mutex_lock(&sw->lock);
        if (rc == EVAL_RETRY) {
            sw->retry[sw->nretry++] = i;
            pthread_mutex_unlock(&sw->lock);
            evolve_child_clear(&c, &gpueval_ops, sw->ge);
            break;                     /* this GPU is gone */
        }
        if (rc) {
            if (!sw->failed)
                sw->err = err;
            sw->failed = 1;
        } else {
            snprintf(sw->rows[i].status, sizeof(sw->rows[i].status), "%s", c.rec.status);
            sw->rows[i].error = c.rec.error ? xstrdup(c.rec.error) : NULL;
            if (strcmp(c.rec.status, "ok") == 0) {
                sw->ok++;
            } else {
                sw->bad++;
                if (!sw->s->json)
                    printf("  %-3d %s: %s\n      %s\n", i, c.rec.status, c.rec.error ? c.rec.error : "",
                           sw->keys[i]);
            }
        }
        sw->done++;
        if (rc == 0 && sw->done % 20 == 0 && sw->done < sw->n) {
            /* progress: stdout in text, stderr with --json */
            fprintf(sw->s->json ? stderr : stdout, "  ... %d/%d: %d passed, %d failed, %.0f s\n", sw->done, sw->n,
                    sw->ok, sw->bad, (time_now_ms() - sw->t0) / 1000.0);
            fflush(sw->s->json ? stderr : stdout);
        }
        pthread_mutex_unlock(&sw->lock);
        evolve_child_clear(&c, &gpueval_ops, sw->ge);
    }
    return NULL;
}

/* The sweep's summary, for the text and the JSON. */
typedef struct SweepSum {
    char   device[128];
    int    gpus, shapes, seeds, passed, failed, not_run;
    double wall_s;
} SweepSum;

/* Gate each configuration on the GPU into rows[0..n). Returns the number
 * that fail, or -1 when no GPU is usable or the sweep failed (printed). */
static int gpu_sweep(const Settings *s, Task *t, const int64_t *vals, int stride, char **keys,
                     const Prepared *out, int n, GateRow *rows, SweepSum *sum, const char *source)
{
    EvoErr err;
    GpuEval *ge = NULL;
    GpuEvalOptions go = {.jobs = s->jobs, .gate_only = 1, .devices = s->gpus, .ndevices = s->ngpus,
                         .count = s->gpus_count};
    gate_options_default(&go.gate);
    go.gate.nseeds = s->seeds;
    bench_options_default(&go.bench);
    int nogpu = 0;
    if (gpueval_open(&ge, t, &go, &nogpu, &err)) {
        errorf("--gpu: %s", err.msg);
        return -1;
    }
    int nslots = gpueval_slots(ge);
    snprintf(sum->device, sizeof(sum->device), "%s", gpueval_device(ge)->name);
    sum->gpus = nslots;
    sum->shapes = task_nshapes(t);
    sum->seeds = s->seeds;
    if (!s->json)
        printf("\n  correctness gate on %s (%d GPU%s): %d shapes x %d seeds x %d input profile%s each\n",
               sum->device, nslots, nslots == 1 ? "" : "s", sum->shapes, s->seeds, task_nprofiles(t),
               task_nprofiles(t) == 1 ? "" : "s");
    Sweep sw = {.s = s, .t = t, .ge = ge, .vals = vals, .stride = stride, .n = n, .keys = keys, .out = out,
                .rows = rows, .t0 = time_now_ms(), .source = source};
    sw.retry = xcalloc((size_t)n + 1, sizeof(int));
    pthread_mutex_init(&sw.lock, NULL);
    SweepThread *th = xcalloc((size_t)nslots, sizeof(*th));
    int started = 0;
    for (int w = 0; w < nslots; w++) {
        th[w] = (SweepThread){.sw = &sw, .slot = w};
        if (pthread_create(&th[w].tid, NULL, sweep_thread, &th[w]) != 0)
            break;
        started++;
    }
    for (int w = 0; w < started; w++)
        pthread_join(th[w].tid, NULL);
    pthread_mutex_destroy(&sw.lock);
    free(th);
    int rc = sw.bad;
    if (sw.failed || started == 0 || sw.nretry > 0) {
        errorf("%s", sw.failed ? sw.err.msg : started == 0 ? "pthread_create failed" : "every GPU was lost");
        rc = -1;
    } else {
        sum->passed = sw.ok;
        sum->failed = sw.bad;
        sum->not_run = sw.skipped;
        sum->wall_s = (time_now_ms() - sw.t0) / 1000.0;
        if (!s->json)
            printf("  gate: %d passed, %d failed, %d not run (failed the static checks) in %.1f s\n", sw.ok, sw.bad,
                   sw.skipped, sum->wall_s);
    }
    free(sw.retry);
    gpueval_close(&ge);
    return rc;
}

/* ---- failures ------------------------------------------------------------ */

/* "N of M configurations failed" with the first error of each kind
 * (status) and how many had it, as errors; with -v every failed
 * configuration's error lines too. Returns N. */
static int failure_summary(char **keys, const Prepared *out, const GateRow *gate, int n)
{
    const char *kinds[32];
    int first[32], count[32], nkinds = 0, failed = 0;
    for (int i = 0; i < n; i++) {
        const char *st = out[i].status[0] ? out[i].status
                       : gate && gate[i].status[0] && strcmp(gate[i].status, "ok") != 0 ? gate[i].status : NULL;
        if (!st)
            continue;
        failed++;
        int k = 0;
        while (k < nkinds && strcmp(kinds[k], st) != 0)
            k++;
        if (k == nkinds && nkinds < (int)EVO_ARRAY_LEN(kinds)) {
            kinds[nkinds] = st;
            first[nkinds] = i;
            count[nkinds++] = 0;
        }
        if (k < nkinds)
            count[k]++;
    }
    if (failed == 0)
        return 0;
    errorf("%d of %d configurations failed", failed, n);
    for (int k = 0; k < nkinds; k++) {
        int i = first[k];
        const char *e = out[i].status[0] ? out[i].error : gate[i].error;
        errorf("  %s (%d): the first, #%d %s: %s", kinds[k], count[k], i, keys[i], e ? e : "");
    }
    for (int i = 0; i < n && msg_verbosity >= 2; i++) {
        char *lines = clog_errors(prep_failure_log(&out[i]), 20);
        if (lines)
            notef("#%d %s: the compiler's errors:\n%s", i, keys[i], lines);
        free(lines);
    }
    return failed;
}

/* ---- --json ----------------------------------------------------------- */

/* The compile figures of the table's footer. */
typedef struct CheckCompile {
    int    configurations, sources, compiled, threads;
    double wall_s;
} CheckCompile;

/* {"task", "path", "target", "params": [{"name", "values"}], "shapes": [...]} */
static json_t *check_json_head(const Task *t, const DeviceInfo *dev)
{
    json_t *params = json_array(), *shapes = json_array();
    for (int i = 0; i < task_nparams(t); i++) {
        json_t *v = json_array();
        for (int k = 0; k < task_param_nvalues(t, i); k++)
            json_array_append_new(v, json_integer((json_int_t)task_param_value(t, i, k)));
        json_array_append_new(params, json_pack("{s:s, s:o}", "name", task_param_name(t, i), "values", v));
    }
    for (int sh = 0; sh < task_nshapes(t); sh++) {
        char *l = task_shape_label(t, sh);
        json_array_append_new(shapes, json_pack("{s:s, s:b}", "label", l, "benchmark", sh == 0));
        free(l);
    }
    json_t *profiles = json_array();
    for (int k = 0; k < task_nprofiles(t); k++)
        json_array_append_new(profiles, json_pack("{s:s, s:b, s:s}", "name", task_profile_name(t, k), "timing",
                                                  task_profile_timing(t, k), "description",
                                                  task_profile_description(t, k)));
    return json_pack("{s:s, s:s, s:s, s:o, s:o, s:o}", "task", task_name(t), "path", task_path(t), "target",
                     dev->name, "params", params, "shapes", shapes, "profiles", profiles);
}

/* The rest: one row per configuration (with its GPU gate verdict when the
 * sweep ran: gate rows, else NULL), the compile figures, the sweep's. */
static void check_json_tail(json_t *doc, const Settings *s, char **keys, const Prepared *out, int n,
                            const CheckCompile *cc, const GateRow *gate, const SweepSum *sum, EvoExit rc)
{
    json_t *rows = json_array();
    for (int i = 0; i < n; i++) {
        const Prepared *p = &out[i];
        int hit = p->nunits > 0;
        for (int u = 0; u < p->nunits; u++)
            hit &= p->units[u].res.cache_hit;
        json_t *o = json_pack("{s:i, s:s, s:s, s:s, s:i, s:i, s:i, s:f, s:b}", "index", i, "role",
                              i > 0 ? "sample" : s->params ? "params" : "default", "params", keys[i], "status",
                              p->status[0] ? p->status : "ok", "registers", p->maxres.registers, "smem",
                              p->maxres.smem, "spills", p->maxres.spill_stores + p->maxres.spill_loads,
                              "compile_ms", p->compile_ms, "cached", hit);
        json_object_set_new(o, "error", p->status[0] && p->error ? json_string(p->error) : json_null());
        json_t *g = json_null();
        if (gate && gate[i].status[0])
            g = json_pack("{s:s, s:o}", "status", gate[i].status, "error",
                          gate[i].error ? json_string(gate[i].error) : json_null());
        else if (gate)
            g = json_pack("{s:s, s:n}", "status", "not_run", "error");
        json_object_set_new(o, "gate", g);
        json_array_append_new(rows, o);
    }
    json_object_set_new(doc, "configurations", rows);
    json_object_set_new(doc, "compile", json_pack("{s:i, s:i, s:i, s:i, s:f, s:i}", "configurations",
                                                  cc->configurations, "sources", cc->sources, "compiled",
                                                  cc->compiled, "cached", cc->sources - cc->compiled, "wall_s",
                                                  cc->wall_s, "threads", cc->threads));
    json_object_set_new(doc, "gpu", sum ? json_pack("{s:s, s:i, s:i, s:i, s:i, s:i, s:i, s:f}", "device",
                                                    sum->device, "gpus", sum->gpus, "shapes", sum->shapes, "seeds",
                                                    sum->seeds, "passed", sum->passed, "failed", sum->failed,
                                                    "not_run", sum->not_run, "wall_s", sum->wall_s)
                                        : json_null());
    json_object_set_new(doc, "ok", json_boolean(rc == EVO_EXIT_OK));
}

/* The size of the space: into the --json document, or a text line. */
static void put_space(json_t *doc, double total, double valid, int exact)
{
    if (doc)
        json_object_set_new(doc, "space", json_pack("{s:f, s:f, s:b}", "total", total, "valid", valid, "exact", exact));
    else
        printf("  space        %.0f configurations, %s%.0f valid after constraints (%.3g%%)\n", total,
               exact ? "" : "about ", valid, total > 0 ? 100.0 * valid / total : 0.0);
}

/* A warning when --params breaks a constraint on the target. */
static void warn_params(const Settings *s, const Task *t, const DeviceInfo *dev, const int64_t *vals)
{
    EvoErr err;
    char *why = NULL;
    if (s->params && task_check(t, vals, dev, &why, &err) == 0)
        warnf("--params %s breaks a constraint on %s: %s", s->params, dev->name, why ? why : "?");
    free(why);
}

/* check_open: the task, the --arch profile and the --source file; the
 * cache directory set. Returns EVO_EXIT_OK, or the exit code after an
 * error message (nothing is left open). */
static EvoExit check_open(const Settings *s, Task **t, DeviceInfo *dev, char **source)
{
    EvoErr err;
    EvoExit rc = runctx_load_task(s, t);
    if (rc != EVO_EXIT_OK)
        return rc;
    if (device_profile(s->arch ? s->arch : "sm_90", dev, &err)) {
        errorf("--arch: %s", err.msg);
        task_free(t);
        return EVO_EXIT_USAGE;
    }
    if (s->gpu && bench_env_check(&err)) {
        errorf("%s", err.msg);
        task_free(t);
        return EVO_EXIT_USAGE;
    }
    runctx_set_cache(s);
    if (s->source && file_read(s->source, source, NULL, &err)) {
        errorf("--source: %s", err.msg);
        task_free(t);
        return EVO_EXIT_USAGE;
    }
    return EVO_EXIT_OK;
}

/* The text head: the task, the target, its params, shapes and profiles. */
static void print_head(const Settings *s, const Task *t, const DeviceInfo *dev, const char *source)
{
    int np = task_nparams(t);
    printf("task %s: %s\n", task_name(t), task_path(t));
    if (source)
        printf("  source       %s (in place of the template)\n", s->source);
    printf("  target       %s\n", dev->name);
    printf("  params       %d:", np);
    for (int i = 0; i < np; i++)
        printf(" %s(%d)", task_param_name(t, i), task_param_nvalues(t, i));
    printf("\n  shapes       %d (benchmark + %d correctness)\n", task_nshapes(t), task_nshapes(t) - 1);
    for (int sh = 0; sh < task_nshapes(t); sh++) {
        char *l = task_shape_label(t, sh);
        printf("               %s%s\n", l, sh == 0 ? "  (benchmark)" : "");
        free(l);
    }
    printf("  profiles     %d input profile%s, gated on each:", task_nprofiles(t), task_nprofiles(t) == 1 ? "" : "s");
    for (int k = 0; k < task_nprofiles(t); k++)
        printf(" %s%s", task_profile_name(t, k), task_profile_timing(t, k) ? "" : " (gate only)");
    printf("\n");
}

/* The text table: one row a configuration, then the compile summary. */
static void print_table(const Settings *s, char **keys, const Prepared *out, int n, int sources, int compiles,
                        double wall)
{
    printf("\n  %-3s %5s %6s %6s %9s %14s  %s\n", "#", "regs", "smem", "spills", "compile", "status", "params");
    for (int i = 0; i < n; i++) {
        const Prepared *p = &out[i];
        const char *st = p->status[0] ? p->status : "ok";
        char cms[32];
        int hit = p->nunits > 0;
        for (int u = 0; u < p->nunits; u++)
            hit &= p->units[u].res.cache_hit;
        if (hit)
            snprintf(cms, sizeof(cms), "cached");
        else
            snprintf(cms, sizeof(cms), "%.0f ms", p->compile_ms);
        printf("  %-3d %5d %6d %6d %9s %14s  %s%s\n", i, p->maxres.registers, p->maxres.smem,
               p->maxres.spill_stores + p->maxres.spill_loads, cms, st, keys[i],
               i == 0 ? (s->params ? "  (--params)" : "  (default)") : "");
        if (p->status[0])
            printf("      %s\n", p->error ? p->error : "");
    }
    printf("\n  %d configurations + the reference: %d sources, %d compiled by NVRTC, %d from the cache, "
           "%.1f s wall on %d threads\n", n, sources, compiles, sources - compiles, wall / 1000.0,
           s->jobs ? s->jobs : device_cores());
}

EvoExit cmd_check(const Settings *s)
{
    EvoErr err;
    Task *t = NULL;
    DeviceInfo dev;
    char *source = NULL;   /* --source: a kernel file compiled in place of the template */
    EvoExit rc = check_open(s, &t, &dev, &source);
    if (rc != EVO_EXIT_OK)
        return rc;

    int np = task_nparams(t);
    json_t *doc = s->json ? check_json_head(t, &dev) : NULL;
    if (!s->json)
        print_head(s, t, &dev, source);
    TaskSpace space;
    int exact = 1, enumerated = task_space_enumerate(t, &dev, 0, &space, &err);
    double valid = enumerated == 0 ? (double)space.count
                 : enumerated == TASK_SPACE_TOO_LARGE ? count_valid(t, &dev, s->seed, &exact, &err) : -1;
    if (valid < 0) {
        errorf("%s", err.msg);
        json_decref(doc);
        free(source);
        task_free(&t);
        return EVO_EXIT_TASK;
    }
    double total = task_space_size(t);
    put_space(doc, total, valid, exact);

    /* The default plus up to `sample` distinct random valid configurations. */
    int want = 1 + s->sample;
    int64_t *vals = xcalloc((size_t)want * (size_t)(np + 1), sizeof(int64_t));
    char **keys = xcalloc((size_t)want, sizeof(char *));
    if (task_params_parse(t, s->params ? s->params : "", vals, &err)) {
        errorf("--params: %s", err.msg);
        json_decref(doc);
        task_space_free(&space);
        free(vals);
        free(keys);
        free(source);
        task_free(&t);
        return EVO_EXIT_USAGE;
    }
    warn_params(s, t, &dev, vals);
    keys[0] = ops_params_key(t, vals, NULL);
    int n = pick_samples(s, t, &dev, enumerated == 0 ? &space : NULL, total > 0 ? valid / total : 0, vals, keys);
    task_space_free(&space);

    PrepInput *in = xcalloc((size_t)n, sizeof(*in));
    Prepared *out = xcalloc((size_t)n, sizeof(*out));
    GateRow *gate = xcalloc((size_t)n, sizeof(*gate));
    SweepSum sum = {0};
    int swept = 0;
    for (int i = 0; i < n; i++) {
        in[i].vals = vals + (size_t)i * (size_t)(np + 1);
        in[i].custom_source = source;
    }
    int before = nvrtc_compile_count();
    double t0 = time_now_ms();
    PrepRef ref;
    if (prep_reference(t, &dev, &ref, s->jobs, &err)) {
        errorf("%s", err.msg);
        rc = EVO_EXIT_TASK;
        prep_ref_free(&ref);   /* what compiled, and the failed unit's log */
        goto out;
    }
    if (prep_many(t, &dev, in, out, n, s->jobs, &err)) {
        errorf("%s", err.msg);
        rc = EVO_EXIT_FAIL;
        prep_ref_free(&ref);
        goto out;
    }
    double wall = time_now_ms() - t0;
    int compiles = nvrtc_compile_count() - before;
    int sources = ref.nunits;
    for (int i = 0; i < n; i++)
        sources += out[i].nunits;

    if (!s->json)
        print_table(s, keys, out, n, sources, compiles, wall);
    if (out[0].status[0]) {
        errorf("the %s configuration fails: %s: %s", s->params ? "--params" : "default", out[0].status,
               out[0].error ? out[0].error : "");
        rc = EVO_EXIT_FAIL;
    }
    if (s->gpu) {
        int bad = gpu_sweep(s, t, vals, np + 1, keys, out, n, gate, &sum, source);
        swept = bad >= 0;
        if (bad < 0)
            rc = EVO_EXIT_NO_GPU;
    }
    if (rc != EVO_EXIT_NO_GPU && failure_summary(keys, out, swept ? gate : NULL, n) > 0)
        rc = EVO_EXIT_FAIL;
    if (doc) {
        CheckCompile cc = {.configurations = n, .sources = sources, .compiled = compiles,
                           .wall_s = wall / 1000.0, .threads = s->jobs ? s->jobs : device_cores()};
        check_json_tail(doc, s, keys, out, n, &cc, swept ? gate : NULL, swept ? &sum : NULL, rc);
        out_json_doc(json_incref(doc));
    }
    prep_ref_free(&ref);
out:
    json_decref(doc);
    for (int i = 0; i < n; i++) {
        prep_free(&out[i]);
        free(keys[i]);
        free(gate[i].error);
    }
    free(gate);
    free(in);
    free(out);
    free(keys);
    free(vals);
    free(source);
    task_free(&t);
    return rc;
}

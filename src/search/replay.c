/*
 * replay: the truth of an exhaustive run, an evaluator that answers from
 * it, and one strategy's replay. See replay.h.
 */
#include "search/replay.h"

#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "search/ops.h"

typedef struct Truth {
    char  *key;
    char  *status;     /* "ok" or the failure */
    double latency_us; /* ok: the stored latency */
} Truth;

struct ReplayTruth {
    Truth     *rows;   /* sorted by key */
    int        n;
    Task      *task;
    DeviceInfo dev;
    int64_t    run_id;
    double     best;
    const char *best_key;
};

static int by_key(const void *a, const void *b)
{
    return strcmp(((const Truth *)a)->key, ((const Truth *)b)->key);
}

static const Truth *find(const ReplayTruth *t, const char *key)
{
    Truth probe = {.key = (char *)key};
    return bsearch(&probe, t->rows, (size_t)t->n, sizeof(Truth), by_key);
}

/* The truth run: run_id, or the latest exhaustive one. */
static int truth_run(Store *st, int64_t run_id, RunRecord *r, EvoErr *err)
{
    if (run_id)
        return store_run_get(st, run_id, r, err) == 1 ? 0 : err_set(err, "no run %lld", (long long)run_id);
    for (int64_t id = 1;; id++) {   /* runs are numbered from 1; the latest exhaustive wins */
        RunRecord x;
        int got = store_run_get(st, id, &x, err);
        if (got < 0)
            return -1;
        if (got == 0)
            break;
        if (x.strategy && strcmp(x.strategy, "exhaustive") == 0) {
            if (run_id)
                run_record_free(r);
            *r = x;
            run_id = id;
        } else {
            run_record_free(&x);
        }
    }
    return run_id ? 0 : err_set(err, "no exhaustive run in the store");
}

/* The run's task as it was loaded: its spec text with the dims of its
 * configuration. */
static int truth_task(const RunRecord *r, const char *task_path, Task **task, EvoErr *err)
{
    if (task_path ? task_load(task_path, task, err)
                  : !r->task_json || task_load_text(r->task_json, strlen(r->task_json), r->task_path, task, err))
        return err_prefix(err, "run %lld: its task", (long long)r->id);
    json_t *cfg = r->config_json ? json_loads(r->config_json, 0, NULL) : NULL;
    json_t *dims = json_object_get(cfg, "dims");
    const char *name;
    json_t *v;
    int rc = 0;
    json_object_foreach(dims, name, v)
        if (rc == 0 && task_set_dim(*task, name, json_integer_value(v), err))
            rc = err_prefix(err, "run %lld: dim %s", (long long)r->id, name);
    json_decref(cfg);
    return rc;
}

/* A truth's key in the task's terms (task_params_parse): a knob its run
 * did not have yet (added to the template since) takes its default, which
 * is what the template did before the knob existed, and the knobs come in
 * the task's order. NULL for a key that names a knob the task no longer
 * has or a value it no longer allows; a key of an outside kernel (with
 * "@hash") as it is. */
static char *truth_key(const Task *t, const char *key)
{
    if (strchr(key, '@'))
        return xstrdup(key);
    int64_t *vals = xcalloc((size_t)task_nparams(t) + 1, sizeof(int64_t));
    EvoErr e;
    char *out = task_params_parse(t, key, vals, &e) == 0 ? ops_params_key(t, vals, NULL) : NULL;
    free(vals);
    return out;
}

int replay_truth_load(ReplayTruth **out, const char *path, int64_t run_id, const char *task_path, EvoErr *err)
{
    *out = NULL;
    Store *st = NULL;
    RunRecord r = {0};
    CandidateRecord *l = NULL;
    int nl = 0, rc = -1;
    ReplayTruth *t = xcalloc(1, sizeof(*t));
    t->best = INFINITY;
    if (store_open(&st, path, err) || truth_run(st, run_id, &r, err) || truth_task(&r, task_path, &t->task, err) ||
        device_profile(r.device_arch ? r.device_arch : "sm_90", &t->dev, err) ||
        store_candidate_list(st, r.id, STORE_ALL_BY_ID, 0, &l, &nl, err))
        goto out;
    t->run_id = r.id;
    t->rows = xcalloc((size_t)nl + 1, sizeof(Truth));
    for (int i = 0; i < nl; i++) {
        char *key = l[i].status && strcmp(l[i].status, "invalid") != 0 && l[i].params_key
                        ? truth_key(t->task, l[i].params_key)
                        : NULL;
        if (!key)
            continue;
        Truth *x = &t->rows[t->n++];
        x->key = key;
        x->status = xstrdup(l[i].status);
        x->latency_us = l[i].latency_us;
    }
    qsort(t->rows, (size_t)t->n, sizeof(Truth), by_key);
    for (int i = 0; i < t->n; i++)
        if (strcmp(t->rows[i].status, "ok") == 0 && t->rows[i].latency_us > 0 && t->rows[i].latency_us < t->best) {
            t->best = t->rows[i].latency_us;
            t->best_key = t->rows[i].key;
        }
    if (!t->best_key) {
        err_set(err, "%s: run %lld has no ok candidate", path, (long long)r.id);
        goto out;
    }
    *out = t;
    t = NULL;
    rc = 0;
out:
    store_candidates_free(l, nl);
    run_record_free(&r);
    store_close(&st);
    replay_truth_free(&t);
    return rc;
}

void replay_truth_free(ReplayTruth **tp)
{
    ReplayTruth *t = *tp;
    if (!t)
        return;
    for (int i = 0; i < t->n; i++) {
        free(t->rows[i].key);
        free(t->rows[i].status);
    }
    free(t->rows);
    task_free(&t->task);
    free(t);
    *tp = NULL;
}

Task *replay_truth_task(ReplayTruth *t) { return t->task; }
const DeviceInfo *replay_truth_device(const ReplayTruth *t) { return &t->dev; }
int64_t replay_truth_run(const ReplayTruth *t) { return t->run_id; }
int replay_truth_size(const ReplayTruth *t) { return t->n; }

double replay_truth_best(const ReplayTruth *t, const char **key)
{
    if (key)
        *key = t->best_key;
    return t->best;
}

/* ---- the evaluator ---------------------------------------------------- */

static char mark;   /* a non-NULL priv: release() is called */

static void set_failure(Child *c, const char *status, const char *msg)
{
    free(c->rec.status);
    c->rec.status = xstrdup(status);
    free(c->rec.error);
    c->rec.error = xstrdup(msg);
}

static int r_submit(void *ctx, Child *c, int stage, EvoErr *err)
{
    (void)err;
    ReplayTruth *t = ctx;
    if (c->rec.status || stage != 1 || c->priv)
        return 0;
    c->priv = &mark;
    const Truth *x = find(t, c->params_key);
    if (!x)
        set_failure(c, "invalid", "not in the exhaustive run (the replay's space is the truth's)");
    return 0;
}

static int r_gate(void *ctx, Child *c, int stage, EvoErr *err)
{
    (void)err;
    ReplayTruth *t = ctx;
    if (c->rec.status)
        return 0;
    const Truth *x = find(t, c->params_key);
    c->rec.gate_stage = stage == 1 ? GATE_STAGE_BENCH : GATE_STAGE_FULL;
    if (stage == 1 && x && strcmp(x->status, "ok") != 0)
        set_failure(c, x->status, "as in the exhaustive run");
    return 0;
}

static void fill(const Truth *x, Child *c)
{
    free(c->rec.status);
    c->rec.status = xstrdup("ok");
    c->rec.latency_us = x->latency_us;
    c->rec.p90_us = x->latency_us;
}

static int r_time(void *ctx, Child *c, EvoErr *err)
{
    ReplayTruth *t = ctx;
    if (c->rec.status)
        return 0;
    const Truth *x = find(t, c->params_key);
    if (!x)
        return err_set(err, "replay: %s is not in the truth", c->params_key);
    fill(x, c);
    return 0;
}

static int r_compare(void *ctx, Child *parent, Child *kid, double *ratio, double *spread, EvoErr *err)
{
    ReplayTruth *t = ctx;
    *ratio = *spread = NAN;
    if (kid->rec.status)
        return 0;
    const Truth *x = find(t, kid->params_key), *p = find(t, parent->params_key);
    if (!x || !p || strcmp(p->status, "ok") != 0)
        return err_set(err, "replay: no measurement of %s", !x ? kid->params_key : parent->params_key);
    *ratio = x->latency_us / p->latency_us;
    *spread = 0;
    fill(x, kid);
    return 0;
}

static void r_release(void *ctx, Child *kid)
{
    (void)ctx;
    kid->priv = NULL;
}

const EvaluatorOps replay_eval_ops = {
    .name = "replay", .submit = r_submit, .gate = r_gate, .time = r_time, .compare = r_compare, .release = r_release,
};

/* ---- one replay -------------------------------------------------------- */

int replay_run(ReplayTruth *t, const char *strategy, uint64_t seed, int budget, const char *scratch_db,
               ReplayResult *res, EvoErr *err)
{
    memset(res, 0, sizeof(*res));
    res->to_target = -1;
    unlink(scratch_db);
    char *wal = xasprintf("%s-wal", scratch_db), *shm = xasprintf("%s-shm", scratch_db);
    unlink(wal);
    unlink(shm);
    Store *st = NULL;
    if (store_open(&st, scratch_db, err)) {
        free(wal);
        free(shm);
        return -1;
    }
    volatile int stop = 0;
    EvolveConfig c = {
        .generations = budget / 8 + 8, .population = 8, .children = 8, .seed = seed, .strategy = strategy,
        .revert_threshold = 0.02, .quiet = 1, .config_json = "{}", .stop = &stop, .stop_after = budget,
        .sync = 1,
    };
    EvolveSummary sum;
    CandidateRecord *l = NULL;
    int nl = 0, rc = -1;
    if (evolve_run(st, t->task, &t->dev, &replay_eval_ops, t, &c, 0, &sum, err) ||
        store_candidate_list(st, sum.run_id, STORE_ALL_BY_ID, 0, &l, &nl, err))
        goto out;
    res->trace = xcalloc((size_t)nl + 1, sizeof(double));
    double best = INFINITY;
    for (int i = 0; i < nl; i++) {
        if (!find(t, l[i].params_key))
            continue;   /* not a configuration of the truth: costs nothing there */
        int survivor = strcmp(l[i].status, "ok") == 0 &&
                       (strcmp(l[i].decision, "accepted") == 0 || strcmp(l[i].decision, "baseline") == 0);
        if (survivor && l[i].latency_us < best)
            best = l[i].latency_us;
        res->trace[res->n++] = best / t->best;
        if (res->to_target < 0 && best <= t->best * 1.02)
            res->to_target = res->n;
    }
    rc = 0;
out:
    store_candidates_free(l, nl);
    store_close(&st);
    unlink(scratch_db);
    unlink(wal);
    unlink(shm);
    free(wal);
    free(shm);
    return rc;
}

void replay_result_free(ReplayResult *r)
{
    free(r->trace);
    memset(r, 0, sizeof(*r));
}

double replay_ratio_at(const ReplayResult *r, int evals)
{
    if (r->n == 0)
        return INFINITY;
    if (evals > r->n)
        evals = r->n;
    return r->trace[evals < 1 ? 0 : evals - 1];
}

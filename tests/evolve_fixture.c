/* The shared fixture of the evolutionary loop's unit tests
 * (test_evolve.c, test_evolve_runs.c): the task and device they run on, a
 * synthetic latency model with planted compile and gate failures, stores
 * in the test's temporary directory and readers of what a run committed. */
#include "evolve_fixture.h"
#include "testhelp.h"
#include "msg.h"

#include <math.h>
#include <stdlib.h>

char tmpdir[256];
Task *task;
DeviceInfo dev;

int64_t pval(const Child *c, const char *name)
{
    return c->vals[task_param_index(task, name)];
}

/* Latency model: best at BLOCK=256, UNROLL=4, SPLITS=1. */
double model_us(const Child *c)
{
    double b = (double)pval(c, "BLOCK"), u = (double)pval(c, "UNROLL"), s = (double)pval(c, "SPLITS");
    return 10.0 + fabs(log2(b / 256.0)) * 2.0 + (4.0 / u) + (s - 1) * 1.5;
}

const char *compile_error(const Child *c)
{
    return pval(c, "BLOCK") == 64 && pval(c, "UNROLL") == 4 ? "synthetic compile error" : NULL;
}

/* BLOCK=512, UNROLL=2 fails the gate at the benchmark shape; SPLITS=2 with
 * UNROLL=1 passes it and fails on another shape (stage B). */
const char *gate_error(const Child *c, int stage)
{
    if (stage == 1 && pval(c, "BLOCK") == 512 && pval(c, "UNROLL") == 2)
        return "mismatch: max abs err 0.5";
    if (stage == 2 && pval(c, "SPLITS") == 2 && pval(c, "UNROLL") == 1)
        return "mismatch on another shape";
    return NULL;
}

FakeEval *fake_new(void)
{
    return fake_eval_new(model_us, compile_error, gate_error);
}

EvolveConfig config(const char *strategy, int gens)
{
    EvolveConfig c = {0};
    c.generations = gens;
    c.population = 4;
    c.children = 4;
    c.seed = 11;
    c.strategy = strategy;
    c.revert_threshold = 0.02;
    c.quiet = 1;
    c.config_json = "{}";
    return c;
}

Store *fresh_store(const char *name)
{
    char *p = xasprintf("%s/%s", tmpdir, name);
    Store *s = NULL;
    EvoErr err;
    if (store_open(&s, p, &err))
        fprintf(stderr, "%s\n", err.msg);
    free(p);
    return s;
}

static int by_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* row(c) of every candidate of a run, each followed by "|": in commit
 * order, or sorted. */
char *rows_of(Store *s, int64_t run, char *(*row)(const CandidateRecord *c), int sorted)
{
    CandidateRecord *l;
    int n;
    EvoErr err;
    store_candidate_list(s, run, STORE_ALL_BY_ID, 0, &l, &n, &err);
    char **r = xcalloc((size_t)n + 1, sizeof(char *));
    for (int i = 0; i < n; i++)
        r[i] = row(&l[i]);
    if (sorted)
        qsort(r, (size_t)n, sizeof(char *), by_str);
    StrBuf sb = {0};
    for (int i = 0; i < n; i++) {
        sb_printf(&sb, "%s|", r[i]);
        free(r[i]);
    }
    free(r);
    store_candidates_free(l, n);
    return sb_take(&sb);
}

static char *key_row(const CandidateRecord *c)
{
    return xstrdup(c->params_key);
}

static char *gen_key_row(const CandidateRecord *c)
{
    return xasprintf("%06lld %s", (long long)c->generation, c->params_key);
}

/* All params keys of a run in commit order, joined. */
char *keys_of(Store *s, int64_t run)
{
    return rows_of(s, run, key_row, 0);
}

/* Each generation's params keys, sorted within the generation: a run
 * stopped in the middle of a generation commits its children in another
 * order (those judged before the stop first, stage B last in each part),
 * but the same ones. */
char *keys_by_generation(Store *s, int64_t run)
{
    return rows_of(s, run, gen_key_row, 1);
}

/* Make tests/data/<file> the task of the tests that follow; returns the
 * one it replaces, for restore_task(). */
Task *swap_task(const char *file)
{
    Task *t2 = NULL, *saved = task;
    EvoErr err;
    char *p = xasprintf("%s/tests/data/%s", getenv("EVO_SOURCE_ROOT"), file);
    CHECK_MSG(task_load(p, &t2, &err) == 0, "%s", err.msg);
    free(p);
    task = t2 ? t2 : saved;
    return saved;
}

void restore_task(Task *saved)
{
    if (task != saved)
        task_free(&task);
    task = saved;
}

int evx_setup(const char *name)
{
    if (fake_eval_setup(name, "good_task.json", tmpdir, sizeof(tmpdir), &task))
        return 1;
    EvoErr err;
    if (device_profile("sm_90", &dev, &err)) {
        fprintf(stderr, "device_profile: %s\n", err.msg);
        fake_eval_teardown(tmpdir, &task);
        return 1;
    }
    return 0;
}

void evx_teardown(void)
{
    fake_eval_teardown(tmpdir, &task);
}

/* Unit tests for the evolutionary loop without a GPU: a synthetic
 * evaluator stands in for compile, gate and timing. Covers selection,
 * operators, dedup, the revert decision, determinism, exhaustive search
 * and resume bookkeeping. */
#include "testhelp.h"
#include "evolve.h"
#include "ops.h"
#include "device.h"
#include "fake_eval.h"
#include "nvrtc.h"
#include "cli/out.h"

#include <math.h>
#include <stdlib.h>
#include <unistd.h>

static char tmpdir[256];
static Task *task;
static DeviceInfo dev;

/* ---- a synthetic evaluator (fake_eval.h) ------------------------------ */

static int64_t pval(const Child *c, const char *name)
{
    return c->vals[task_param_index(task, name)];
}

/* Latency model: best at BLOCK=256, UNROLL=4, SPLITS=1. */
static double model_us(const Child *c)
{
    double b = (double)pval(c, "BLOCK"), u = (double)pval(c, "UNROLL"), s = (double)pval(c, "SPLITS");
    return 10.0 + fabs(log2(b / 256.0)) * 2.0 + (4.0 / u) + (s - 1) * 1.5;
}

static const char *compile_error(const Child *c)
{
    return pval(c, "BLOCK") == 64 && pval(c, "UNROLL") == 4 ? "synthetic compile error" : NULL;
}

/* BLOCK=512, UNROLL=2 fails the gate at the benchmark shape; SPLITS=2 with
 * UNROLL=1 passes it and fails on another shape (stage B). */
static const char *gate_error(const Child *c, int stage)
{
    if (stage == 1 && pval(c, "BLOCK") == 512 && pval(c, "UNROLL") == 2)
        return "mismatch: max abs err 0.5";
    if (stage == 2 && pval(c, "SPLITS") == 2 && pval(c, "UNROLL") == 1)
        return "mismatch on another shape";
    return NULL;
}

static FakeEval *fake_new(void)
{
    return fake_eval_new(model_us, compile_error, gate_error);
}

static EvolveConfig config(const char *strategy, int gens)
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

static Store *fresh_store(const char *name)
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
static char *rows_of(Store *s, int64_t run, char *(*row)(const CandidateRecord *c), int sorted)
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
static char *keys_of(Store *s, int64_t run)
{
    return rows_of(s, run, key_row, 0);
}

/* Each generation's params keys, sorted within the generation: a run
 * stopped in the middle of a generation commits its children in another
 * order (those judged before the stop first, stage B last in each part),
 * but the same ones. */
static char *keys_by_generation(Store *s, int64_t run)
{
    return rows_of(s, run, gen_key_row, 1);
}

/* Make tests/data/<file> the task of the tests that follow; returns the
 * one it replaces, for restore_task(). */
static Task *swap_task(const char *file)
{
    Task *t2 = NULL, *saved = task;
    EvoErr err;
    char *p = xasprintf("%s/tests/data/%s", getenv("EVO_SOURCE_ROOT"), file);
    CHECK_MSG(task_load(p, &t2, &err) == 0, "%s", err.msg);
    free(p);
    task = t2 ? t2 : saved;
    return saved;
}

static void restore_task(Task *saved)
{
    if (task != saved)
        task_free(&task);
    task = saved;
}

/* ---- tests ----------------------------------------------------------- */

static void test_revert_rule(void)
{
    CHECK(evolve_should_revert(1.021, 0.02));
    CHECK(!evolve_should_revert(1.02, 0.02));
    CHECK(!evolve_should_revert(1.019, 0.02));
    CHECK(!evolve_should_revert(0.7, 0.02));
    CHECK(evolve_should_revert(NAN, 0.02));
    CHECK(evolve_should_revert(1.06, 0.05));
    CHECK(!evolve_should_revert(1.04, 0.05));
}

static void test_tournament(void)
{
    Rng r;
    rng_seed(&r, 5);
    int hist[8] = {0};
    for (int i = 0; i < 80000; i++)
        hist[evolve_tournament(&r, 8, 3)]++;
    /* P(best of 3 draws = 0) = 1 - (7/8)^3 = 0.33; decreasing in rank. */
    CHECK_NEAR(hist[0] / 80000.0, 1 - pow(7.0 / 8, 3), 0.01);
    for (int i = 1; i < 8; i++)
        CHECK(hist[i] < hist[i - 1]);
}

static void test_operators(void)
{
    Rng r;
    rng_seed(&r, 9);
    int np = task_nparams(task);
    int64_t a[8], b[8], out[8];
    task_defaults(task, a);
    for (int i = 0; i < np; i++)
        b[i] = task_param_value(task, i, task_param_nvalues(task, i) - 1);
    for (int it = 0; it < 2000; it++) {
        CHECK(ops_find("mutate")->propose(task, &r, a, NULL, out) == 0);
        int changed = 0;
        for (int i = 0; i < np; i++) {
            if (out[i] == a[i])
                continue;
            changed++;
            int ka = task_param_find(task, i, a[i]), ko = task_param_find(task, i, out[i]);
            CHECK(ko >= 0 && abs(ka - ko) == 1);   /* a neighbouring value */
        }
        CHECK(changed >= 1 && changed <= 2);
        CHECK(ops_find("reset")->propose(task, &r, a, NULL, out) == 0);
        changed = 0;
        for (int i = 0; i < np; i++)
            changed += out[i] != a[i];
        CHECK(changed == 1);
        CHECK(ops_find("crossover")->propose(task, &r, a, b, out) == 0);
        for (int i = 0; i < np; i++)
            CHECK(out[i] == a[i] || out[i] == b[i]);
    }
    CHECK(ops_find("nonsense") == NULL);
    int picks[3] = {0};
    for (int i = 0; i < 10000; i++) {
        const Operator *o = ops_pick(&r, 1);
        picks[o == ops_find("mutate") ? 0 : o == ops_find("reset") ? 1 : 2]++;
    }
    CHECK(picks[0] > picks[2] && picks[2] > picks[1]);
    for (int i = 0; i < 1000; i++)
        CHECK(ops_pick(&r, 0)->nparents == 1);
    char *k = ops_params_key(task, a, NULL);
    CHECK_STR(k, "BLOCK=128,UNROLL=2,SPLITS=1");
    free(k);
}

static void test_run_bookkeeping(void)
{
    Store *s = fresh_store("run.db");
    FakeEval *f = fake_new();
    EvolveConfig c = config("evolve", 6);
    EvolveSummary sum;
    EvoErr err;
    CHECK_MSG(evolve_run(s, task, &dev, &fake_eval_ops, f, &c, 0, &sum, &err) == 0, "%s", err.msg);
    CHECK(sum.run_id > 0);
    /* 16 valid configurations: the run may use them all up and stop early */
    CHECK(sum.generations_done == 7 || (sum.space_exhausted && sum.generations_done < 7));
    CHECK(f->double_eval == 0);
    CHECK(sum.best_latency_us <= sum.baseline_latency_us);
    CHECK(sum.best_latency_us <= 12.0 + 1e-9);   /* the model's valid optimum is 12.0 */

    CandidateRecord *l;
    int n;
    store_candidate_list(s, sum.run_id, STORE_ALL_BY_ID, 0, &l, &n, &err);
    CHECK(n == sum.evaluated);
    int baselines = 0, reverted = 0, failed = 0;
    for (int i = 0; i < n; i++) {
        for (int j = 0; j < i; j++)
            CHECK_MSG(strcmp(l[i].params_key, l[j].params_key) != 0, "duplicate %s", l[i].params_key);
        if (strcmp(l[i].decision, "baseline") == 0)
            baselines++;
        if (strcmp(l[i].decision, "reverted") == 0) {
            reverted++;
            CHECK(l[i].ratio_to_parent > 1.02);
        }
        if (strcmp(l[i].decision, "accepted") == 0 && l[i].parent_id)
            CHECK(l[i].ratio_to_parent <= 1.02);
        if (strcmp(l[i].status, "ok") != 0) {
            failed++;
            CHECK_STR(l[i].decision, "failed");
            CHECK(l[i].error != NULL);
        }
        /* A parent is always the baseline or an accepted candidate. */
        if (l[i].parent_id) {
            CandidateRecord p;
            CHECK(store_candidate_get(s, l[i].parent_id, &p, &err) == 1);
            CHECK_MSG(strcmp(p.decision, "baseline") == 0 || strcmp(p.decision, "accepted") == 0,
                      "candidate %lld has a %s parent", (long long)l[i].id, p.decision);
            CHECK(p.generation < l[i].generation);
            candidate_record_free(&p);
        }
        if (strcmp(l[i].status, "ok") == 0)
            CHECK_NEAR(l[i].speedup, sum.baseline_latency_us / l[i].latency_us, 1e-9);
    }
    CHECK(baselines == 1);
    CHECK(reverted > 0);   /* the model has slower neighbours: some must be reverted */
    CHECK(failed > 0);     /* and planted failures */
    store_candidates_free(l, n);

    GenerationRecord *g;
    int ng;
    store_generation_list(s, sum.run_id, &g, &ng, &err);
    CHECK(ng == sum.generations_done);
    for (int i = 0; i < ng; i++) {
        CHECK(g[i].generation == i);
        if (i > 0)
            CHECK(g[i].best_latency_us <= g[i - 1].best_latency_us);  /* elitist */
        free(g[i].finished_at);
    }
    free(g);
    RunRecord r;
    CHECK(store_run_get(s, sum.run_id, &r, &err) == 1);
    CHECK_STR(r.status, "completed");
    CHECK(r.generations_done == sum.generations_done);
    run_record_free(&r);
    store_close(&s);
    fake_eval_free(f);
}

static void test_determinism(void)
{
    Store *s1 = fresh_store("det1.db"), *s2 = fresh_store("det2.db");
    FakeEval *f1 = fake_new(), *f2 = fake_new();
    EvolveConfig c = config("evolve", 4);
    EvolveSummary a, b;
    EvoErr err;
    CHECK(evolve_run(s1, task, &dev, &fake_eval_ops, f1, &c, 0, &a, &err) == 0);
    CHECK(evolve_run(s2, task, &dev, &fake_eval_ops, f2, &c, 0, &b, &err) == 0);
    char *k1 = keys_of(s1, a.run_id), *k2 = keys_of(s2, b.run_id);
    CHECK_STR(k1, k2);
    free(k1);
    free(k2);
    /* Another seed proposes something else. */
    Store *s3 = fresh_store("det3.db");
    FakeEval *f3 = fake_new();
    c.seed = 12345;
    EvolveSummary d;
    CHECK(evolve_run(s3, task, &dev, &fake_eval_ops, f3, &c, 0, &d, &err) == 0);
    char *k3 = keys_of(s3, d.run_id);
    k1 = keys_of(s1, a.run_id);
    CHECK(strcmp(k1, k3) != 0);
    free(k1);
    free(k3);
    store_close(&s1);
    store_close(&s2);
    store_close(&s3);
    fake_eval_free(f1);
    fake_eval_free(f2);
    fake_eval_free(f3);
}

static void resume_strategy(const char *strategy, int gens, int kmax, int kstep)
{
    /* The reference: an uninterrupted run. */
    char rname[64];
    snprintf(rname, sizeof(rname), "resume_ref_%s_%d.db", strategy, gens);
    Store *ref = fresh_store(rname);
    FakeEval *fr = fake_new();
    EvolveConfig c = config(strategy, gens);
    EvolveSummary rs;
    EvoErr err;
    CHECK(evolve_run(ref, task, &dev, &fake_eval_ops, fr, &c, 0, &rs, &err) == 0);
    char *want = keys_of(ref, rs.run_id);

    /* Stopped after k commits (as if killed), at several points, then resumed. */
    for (int k = 1; k <= kmax; k += kstep) {
        char name[64];
        snprintf(name, sizeof(name), "resume_%s_%d_%d.db", strategy, gens, k);
        Store *s = fresh_store(name);
        FakeEval *f = fake_new();
        volatile int stop = 0;
        EvolveConfig c1 = c;
        c1.stop = &stop;
        c1.stop_after = k;
        EvolveSummary s1;
        CHECK(evolve_run(s, task, &dev, &fake_eval_ops, f, &c1, 0, &s1, &err) == 0);
        CHECK(s1.interrupted);
        RunRecord r;
        CHECK(store_run_get(s, s1.run_id, &r, &err) == 1);
        CHECK_STR(r.status, "interrupted");
        run_record_free(&r);
        /* What the stop left gated but uncommitted (children between
         * stage A and stage B) is lost, as after kill -9, and judged again. */
        char *committed = keys_of(s, s1.run_id);
        int inflight = f->nseen;
        for (int i = 0; i < f->nseen; i++)
            if (strstr(committed, f->seen[i]))
                inflight--;
        EvolveSummary s2;
        CHECK_MSG(evolve_run(s, task, &dev, &fake_eval_ops, f, &c, s1.run_id, &s2, &err) == 0, "%s", err.msg);
        CHECK(!s2.interrupted);
        CHECK(s2.run_id == s1.run_id);
        CHECK_MSG(f->double_eval == inflight, "k=%d: %d candidates evaluated twice, %d were in flight", k,
                  f->double_eval, inflight);
        for (int i = 0; i < f->nseen; i++)
            for (int j = 0; j < i; j++)
                if (strcmp(f->seen[i], f->seen[j]) == 0)
                    CHECK_MSG(!strstr(committed, f->seen[i]), "k=%d: committed %s was judged again", k,
                              f->seen[i]);
        free(committed);
        char *got = keys_of(s, s1.run_id);
        CHECK_STR(got, want);
        free(got);
        CHECK(f->evaluates == fr->evaluates + inflight);
        store_close(&s);
        fake_eval_free(f);
    }
    free(want);
    store_close(&ref);
    fake_eval_free(fr);
}

/* Resume proposes what the killed run would have: the evolve strategy
 * (with its niches, widening and immigrants) and the model strategy. */
static void test_resume(void)
{
    resume_strategy("evolve", 5, 13, 3);
    resume_strategy("model", 5, 13, 3);
    /* the larger space: many generations of niches, widening, immigrants
     * and model fits before and after the stop */
    Task *saved = swap_task("search_task.json");
    resume_strategy("evolve", 12, 50, 14);
    resume_strategy("model", 12, 50, 14);
    restore_task(saved);
}

static void test_exhaustive(void)
{
    Store *s = fresh_store("exh.db");
    FakeEval *f = fake_new();
    EvolveConfig c = config("exhaustive", 0);
    EvolveSummary sum;
    EvoErr err;
    CHECK_MSG(evolve_run(s, task, &dev, &fake_eval_ops, f, &c, 0, &sum, &err) == 0, "%s", err.msg);
    /* Count the valid space by brute force. */
    int valid = 0;
    double best = INFINITY;
    Child probe;
    memset(&probe, 0, sizeof(probe));
    int np = task_nparams(task);
    int64_t v[8];
    int idx[8] = {0};
    for (;;) {
        for (int i = 0; i < np; i++)
            v[i] = task_param_value(task, i, idx[i]);
        if (task_check(task, v, &dev, NULL, &err) == 1) {
            valid++;
            probe.vals = v;
            int planted = v[0] == 512 && v[1] == 2;   /* fake_evaluate's incorrect config */
            if (!planted && !(v[0] == 64 && v[1] == 4) && model_us(&probe) < best)
                best = model_us(&probe);
        }
        int i = np - 1;
        while (i >= 0 && ++idx[i] == task_param_nvalues(task, i))
            idx[i--] = 0;
        if (i < 0)
            break;
    }
    CHECK_MSG(sum.evaluated == valid, "evaluated %d, valid space %d", sum.evaluated, valid);
    CHECK(f->double_eval == 0);
    CHECK_NEAR(sum.best_latency_us, best, 1e-9);   /* the model's optimum over the valid space */
    store_close(&s);
    fake_eval_free(f);
}

static void test_bad_baseline(void)
{
    /* A baseline that fails stops the run with a clear message. */
    Store *s = fresh_store("badbase.db");
    FakeEval *f = fake_new();
    EvolveConfig c = config("evolve", 2);
    c.baseline_source = "extern \"C\" __global__ void scale_main() {}";
    /* The fake evaluator fails BLOCK=512/UNROLL=2: make that the default. */
    Task *t2 = NULL;
    EvoErr err;
    char *p = xasprintf("%s/tests/data/good_task.json", getenv("EVO_SOURCE_ROOT"));
    CHECK(task_load(p, &t2, &err) == 0);
    free(p);
    Task *saved = task;
    task = t2;
    int64_t vals[8];
    task_defaults(t2, vals);
    EvolveSummary sum;
    int rc = evolve_run(s, t2, &dev, &fake_eval_ops, f, &c, 0, &sum, &err);
    CHECK(rc == 0);   /* the default (BLOCK=128) is fine even with a custom source */
    RunRecord r;
    CHECK(store_run_get(s, sum.run_id, &r, &err) == 1);
    CandidateRecord b;
    CHECK(store_candidate_get(s, r.baseline_id, &b, &err) == 1);
    CHECK_CONTAINS(b.params_key, "@");   /* a custom source is part of the identity */
    candidate_record_free(&b);
    run_record_free(&r);
    task = saved;
    task_free(&t2);
    store_close(&s);
    fake_eval_free(f);
}

/* Staged evaluation: stage B (the other shapes) only for children that
 * would be accepted and for parent-less ones; a child that passes the
 * benchmark shape and fails another is never accepted nor a parent; a
 * child's latency comes from its A/B (no timing request with a parent). */
static void test_staged(void)
{
    Store *s = fresh_store("staged.db");
    FakeEval *f = fake_new();
    EvolveConfig c = config("evolve", 8);
    EvolveSummary sum;
    EvoErr err;
    CHECK_MSG(evolve_run(s, task, &dev, &fake_eval_ops, f, &c, 0, &sum, &err) == 0, "%s", err.msg);
    CandidateRecord *l;
    int n;
    CHECK(store_candidate_list(s, sum.run_id, STORE_ALL_BY_ID, 0, &l, &n, &err) == 0);
    int parentless = 0, stage_b = 0, reverted = 0, late_fail = 0;
    for (int i = 0; i < n; i++) {
        if (l[i].parent_id == 0)
            parentless++;
        if (strcmp(l[i].decision, "reverted") == 0)
            reverted++;
        if (strcmp(l[i].decision, "accepted") == 0 || strcmp(l[i].decision, "baseline") == 0)
            stage_b++;
        if (l[i].error && strstr(l[i].error, "another shape")) {
            late_fail++;
            CHECK_STR(l[i].decision, "failed");
            /* it was compared first and would have been accepted, or needed the full gate */
            CHECK(l[i].parent_id == 0 || l[i].ratio_to_parent <= 1.02 || strcmp(l[i].operator, "random") == 0);
        }
        for (int j = 0; j < n; j++)
            if (l[j].parent_id == l[i].id || l[j].parent2_id == l[i].id)
                CHECK_MSG(strcmp(l[i].status, "ok") == 0 && strcmp(l[i].decision, "reverted") != 0,
                          "candidate %lld (%s, %s) is a parent", (long long)l[i].id, l[i].status, l[i].decision);
    }
    CHECK(late_fail > 0);
    CHECK(reverted > 0);
    /* Stage-B gates: the accepted, the stage-B failures, nothing for the reverted. */
    CHECK_MSG(f->gates[2] == stage_b + late_fail, "stage-B gates %d, accepted+baseline %d, late failures %d",
              f->gates[2], stage_b, late_fail);
    CHECK(f->gates[2] < f->gates[1]);
    /* Every child decided at stage A (reverted, or failed there) is dropped:
     * what was queued ahead for its stage B is cancelled. */
    CHECK_MSG(f->drops == f->gates[1] - f->gates[2], "%d drops, %d stage-A and %d stage-B gates", f->drops,
              f->gates[1], f->gates[2]);
    /* Timing requests only for parent-less candidates; the rest from the A/B. */
    CHECK_MSG(f->times <= parentless, "%d timing requests for %d parent-less candidates", f->times, parentless);
    CHECK(f->compares > 0);
    store_candidates_free(l, n);
    store_close(&s);
    fake_eval_free(f);
}

/* A candidate as "key decision status parent gate_stage ratio generation". */
static char *verdict_row(const CandidateRecord *c)
{
    return xasprintf("%s %s %s %lld %lld %.6f %lld", c->params_key, c->decision, c->status, (long long)c->parent_id,
                     (long long)c->gate_stage, isnan(c->ratio_to_parent) ? 0.0 : c->ratio_to_parent,
                     (long long)c->generation);
}

static char *verdicts_of(Store *s, int64_t run)
{
    return rows_of(s, run, verdict_row, 0);
}

/* Judging ahead: while stage B waits for its compilations (compile_us),
 * the next generation's speculative children with a committed parent go
 * through stage A, and the generation takes over those it proposes. The
 * run commits exactly what it commits without (same proposals, same
 * verdicts, same parents), and some stage As were taken over. */
static void test_judge_ahead(void)
{
    Task *saved = swap_task("search_task.json");
    Store *s1 = fresh_store("ahead_off.db"), *s2 = fresh_store("ahead_on.db");
    FakeEval *f1 = fake_new(), *f2 = fake_new();
    f1->compile_us = f2->compile_us = 50000;
    EvolveConfig c = config("evolve", 12);
    c.population = c.children = 8;
    EvolveSummary a, b;
    EvoErr err;
    nvrtc_set_cache_dir(NULL);
    CHECK_MSG(evolve_run(s1, task, &dev, &fake_eval_ops, f1, &c, 0, &a, &err) == 0, "%s", err.msg);
    char *dir = xasprintf("%s/aheadcache", tmpdir);
    nvrtc_set_cache_dir(dir);
    CHECK_MSG(evolve_run(s2, task, &dev, &fake_eval_ops, f2, &c, 0, &b, &err) == 0, "%s", err.msg);
    nvrtc_set_cache_dir(NULL);
    free(dir);
    char *v1 = verdicts_of(s1, a.run_id), *v2 = verdicts_of(s2, b.run_id);
    CHECK_STR(v1, v2);
    CHECK(a.ahead_judged == 0 && a.ahead_used == 0);
    CHECK_MSG(b.ahead_judged > 0 && b.ahead_used > 0 && b.ahead_used <= b.ahead_judged,
              "%d judged ahead, %d taken over", b.ahead_judged, b.ahead_used);
    /* a child taken over is not judged again: stage-A gates are the run's
     * plus the speculative ones that were not taken over */
    CHECK_MSG(f2->gates[1] == f1->gates[1] + b.ahead_judged - b.ahead_used, "stage-A gates %d and %d, ahead %d/%d",
              f1->gates[1], f2->gates[1], b.ahead_judged, b.ahead_used);
    CHECK(b.evaluated == a.evaluated);
    free(v1);
    free(v2);
    store_close(&s1);
    store_close(&s2);
    fake_eval_free(f1);
    fake_eval_free(f2);
    restore_task(saved);
}

/* Speculation (the next generation's units compiled during stage B) only
 * queues work: the run proposes and commits exactly what it does without. */
static void test_speculation(void)
{
    Store *s1 = fresh_store("spec_off.db"), *s2 = fresh_store("spec_on.db");
    FakeEval *f1 = fake_new(), *f2 = fake_new();
    EvolveConfig c = config("evolve", 8);
    EvolveSummary a, b;
    EvoErr err;
    nvrtc_set_cache_dir(NULL);
    CHECK(evolve_run(s1, task, &dev, &fake_eval_ops, f1, &c, 0, &a, &err) == 0);
    char *dir = xasprintf("%s/speccache", tmpdir);
    nvrtc_set_cache_dir(dir);
    CHECK(evolve_run(s2, task, &dev, &fake_eval_ops, f2, &c, 0, &b, &err) == 0);
    nvrtc_set_cache_dir(NULL);
    free(dir);
    char *k1 = keys_of(s1, a.run_id), *k2 = keys_of(s2, b.run_id);
    CHECK_STR(k1, k2);
    CHECK(f1->evaluates == f2->evaluates);
    /* speculative children are submitted as stage 0 (no look-ahead) */
    CHECK_MSG(f2->submits[0] > 0 && f1->submits[0] == 0, "speculative submits: %d with, %d without",
              f2->submits[0], f1->submits[0]);
    CHECK(f2->submits[1] == f1->submits[1]);
    free(k1);
    free(k2);
    store_close(&s1);
    store_close(&s2);
    fake_eval_free(f1);
    fake_eval_free(f2);
}

/* Several slots (GPUs): children are judged concurrently, one per slot,
 * and the run commits exactly what one slot commits, in the same order;
 * a slot lost mid-run hands its child to another, nothing is lost or
 * committed twice. */
static void test_slots(void)
{
    /* a space large enough for full generations of 8: work for every slot */
    Task *saved = swap_task("search_task.json");
    Store *s1 = fresh_store("slots1.db"), *s3 = fresh_store("slots3.db"), *sd = fresh_store("slotsd.db");
    FakeEval *f1 = fake_new(), *f3 = fake_new(), *fd = fake_new();
    f3->nslots = 3;
    f3->delay_us = fd->delay_us = 2000;
    fd->nslots = 2;
    fd->die_slot = 1;
    fd->die_after = 7;
    EvolveConfig c = config("evolve", 8);
    c.population = c.children = 8;
    EvolveSummary a, b, d;
    EvoErr err;
    CHECK(evolve_run(s1, task, &dev, &fake_eval_ops, f1, &c, 0, &a, &err) == 0);
    CHECK_MSG(evolve_run(s3, task, &dev, &fake_eval_ops, f3, &c, 0, &b, &err) == 0, "%s", err.msg);
    CHECK_MSG(evolve_run(sd, task, &dev, &fake_eval_ops, fd, &c, 0, &d, &err) == 0, "%s", err.msg);
    char *k1 = keys_of(s1, a.run_id), *k3 = keys_of(s3, b.run_id), *kd = keys_of(sd, d.run_id);
    CHECK_STR(k3, k1);
    CHECK_STR(kd, k1);
    CHECK(a.evaluated == b.evaluated && a.evaluated == d.evaluated);
    for (int w = 0; w < 3; w++)
        CHECK_MSG(f3->per_slot[w] > 0, "slot %d judged nothing", w);
    CHECK(f3->calibrations == 1);
    CHECK(f1->calibrations == 0);   /* one slot: nothing to normalise */
    CHECK_MSG(fd->per_slot[1] > 0 && fd->per_slot[0] > fd->per_slot[1], "slot 0 %d, lost slot 1 %d",
              fd->per_slot[0], fd->per_slot[1]);
    free(k1);
    free(k3);
    free(kd);
    store_close(&s1);
    store_close(&s3);
    store_close(&sd);
    fake_eval_free(f1);
    fake_eval_free(f3);
    fake_eval_free(fd);
    restore_task(saved);
}

/* Every generation is full until the valid space is used up, and the run
 * says so: the unit-test space has 16 valid configurations, and 10
 * generations of 4 children ask for more (the old proposer gave up after
 * 64 attempts per slot and left generations short). */
static void test_full_generations(void)
{
    const char *strategies[] = {"evolve", "model"};
    for (int k = 0; k < 2; k++) {
        Store *s = fresh_store(k ? "full_model.db" : "full.db");
        FakeEval *f = fake_new();
        EvolveConfig c = config(strategies[k], 10);
        EvolveSummary sum;
        EvoErr err;
        CHECK_MSG(evolve_run(s, task, &dev, &fake_eval_ops, f, &c, 0, &sum, &err) == 0, "%s", err.msg);
        CHECK(sum.space_exhausted);
        CHECK(f->double_eval == 0);
        GenerationRecord *g;
        int ng;
        store_generation_list(s, sum.run_id, &g, &ng, &err);
        CHECK(ng == sum.generations_done && ng < 11);
        int total = 0;
        for (int i = 0; i < ng; i++) {
            total += (int)g[i].evaluated;
            if (i > 0 && i < ng - 1)
                CHECK_MSG(g[i].evaluated == c.children, "%s: generation %d evaluated %lld", strategies[k], i,
                          (long long)g[i].evaluated);
            free(g[i].finished_at);
        }
        free(g);
        /* baseline + every other valid configuration: 16 (test_exhaustive counts them) */
        CHECK_MSG(sum.evaluated == 16, "%s: evaluated %d of 16 valid", strategies[k], sum.evaluated);
        store_close(&s);
        fake_eval_free(f);
    }
}

/* A deceptive landscape on the larger test space (tests/data/search_task.json):
 * MODE=0 is a wide bowl with its floor at A=B=2 (+5 us); MODE=1 holds the
 * global optimum at A=B=6 (+0) but is worse than MODE=0 wherever MODE=0 is
 * good, so a MODE flip from the MODE=0 optimum is always reverted. */
static double deceptive_us(const Child *c)
{
    double a = (double)pval(c, "A"), b = (double)pval(c, "B");
    double g = pval(c, "MODE") ? fabs(a - 6) + fabs(b - 6) : 5 + 0.5 * (fabs(a - 2) + fabs(b - 2));
    return model_us(c) + g;
}

/* Run c into a fresh store `name` with evaluator f: v gets the best
 * candidate's params, *evaluated the run's count; returns its latency. */
static double run_best(Task *t, const char *name, FakeEval *f, const EvolveConfig *c, int64_t *v, int *evaluated)
{
    Store *s = fresh_store(name);
    EvolveSummary sum;
    EvoErr err;
    CandidateRecord b;
    double lat = NAN;
    CHECK_MSG(evolve_run(s, t, &dev, &fake_eval_ops, f, c, 0, &sum, &err) == 0, "%s", err.msg);
    CHECK(store_candidate_get(s, sum.best_id, &b, &err) == 1);
    CHECK(task_params_parse(t, b.params_json, v, &err) == 0);
    lat = b.latency_us;
    *evaluated = sum.evaluated;
    candidate_record_free(&b);
    store_close(&s);
    return lat;
}

/* How many of nseeds runs of `strategy` reach the global basin (MODE=1 and
 * better than any MODE=0 configuration), diversity on or off. */
static int deceptive_wins(Task *t, const char *strategy, int no_diversity, int nseeds)
{
    int wins = 0, evaluated;
    for (int k = 0; k < nseeds; k++) {
        char name[64];
        snprintf(name, sizeof(name), "decept_%s_%d_%d.db", strategy, no_diversity, k);
        FakeEval *f = fake_eval_new(deceptive_us, compile_error, gate_error);
        EvolveConfig c = config(strategy, 30);
        c.seed = 100 + (uint64_t)k;
        c.no_diversity = no_diversity;
        int64_t v[8];
        double lat = run_best(t, name, f, &c, v, &evaluated);
        if (v[task_param_index(t, "MODE")] == 1 && lat < 11.0 + 5.0)
            wins++;
        fake_eval_free(f);
    }
    return wins;
}

static void test_deceptive(void)
{
    Task *saved = swap_task("search_task.json");
    int old = deceptive_wins(task, "evolve", 1, 6), evo = deceptive_wins(task, "evolve", 0, 6),
        mod = deceptive_wins(task, "model", 0, 6);
    fprintf(stderr, "     global basin reached: plain evolve %d/6, evolve %d/6, model %d/6\n", old, evo, mod);
    CHECK(evo >= 5 && evo > old);
    CHECK(mod >= 5);
    restore_task(saved);
}

/* Coupled knobs (tests/data/coupled_task.json): ROWS must equal CONS, as
 * BLOCK_M = 64 * CONSUMERS on the attention WS path, and each step of CONS
 * takes 2 us off. A move of either alone is refused by the constraints
 * unless the other follows it (repair_move in src/search/propose.c). */
static double coupled_us(const Child *c)
{
    return model_us(c) + 2.0 * (double)(4 - pval(c, "CONS"));
}

/* Of nseeds short runs from the baseline (CONS=1) alone, with no random
 * members or immigrants, how many reach CONS=4 (three coupled steps). */
static int coupled_wins(int nseeds, int *evals)
{
    int wins = 0, evaluated;
    *evals = 0;
    for (int k = 0; k < nseeds; k++) {
        char name[64];
        snprintf(name, sizeof(name), "coupled_%d.db", k);
        FakeEval *f = fake_eval_new(coupled_us, NULL, NULL);
        EvolveConfig c = config("evolve", 4);
        c.population = 1;
        c.children = 3;
        c.no_diversity = 1;
        c.seed = 300 + (uint64_t)k;
        int64_t v[16];
        run_best(task, name, f, &c, v, &evaluated);
        wins += v[task_param_index(task, "CONS")] == 4;
        *evals += evaluated;
        fake_eval_free(f);
    }
    return wins;
}

static void test_coupled_moves(void)
{
    Task *saved = swap_task("coupled_task.json");
    int evals = 0, wins = coupled_wins(8, &evals);
    fprintf(stderr, "     coupled knobs: CONS=4 reached in %d of 8 runs (%d evaluations)\n", wins, evals);
    CHECK(wins >= 6);
    restore_task(saved);
}

/* Warm starts: a second run of the task on the same device and store starts
 * from the first run's best; --no-warm-start and another device do not. */
static void test_warm_start(void)
{
    Store *s = fresh_store("warm.db");
    FakeEval *f = fake_new();
    EvolveConfig c = config("evolve", 3);
    c.device_name = "FakeGPU";
    EvolveSummary a, b, d, e;
    EvoErr err;
    CHECK_MSG(evolve_run(s, task, &dev, &fake_eval_ops, f, &c, 0, &a, &err) == 0, "%s", err.msg);
    CHECK(a.warm_seeded == 0);
    CandidateRecord best;
    CHECK(store_candidate_get(s, a.best_id, &best, &err) == 1);
    c.seed = 99;
    CHECK_MSG(evolve_run(s, task, &dev, &fake_eval_ops, f, &c, 0, &b, &err) == 0, "%s", err.msg);
    CHECK(b.warm_seeded >= 1 && b.warm_seeded <= 2);   /* at most half of P - 1 = 3 */
    CHECK_STR(b.warm_runs, "1");
    CandidateRecord *l;
    int n, seeded_best = 0, nwarm = 0, gen0 = 0;
    store_candidate_list(s, b.run_id, STORE_ALL_BY_ID, 0, &l, &n, &err);
    for (int i = 0; i < n; i++) {
        gen0 += l[i].generation == 0;
        if (strcmp(l[i].operator, "warm") != 0)
            continue;
        nwarm++;
        CHECK(l[i].generation == 0 && l[i].parent_id == 0 && l[i].parent2_id > 0);
        CHECK(l[i].rationale && strstr(l[i].rationale, "warm start from run 1 candidate"));
        if (strcmp(l[i].params_key, best.params_key) == 0 && strcmp(l[i].decision, "accepted") == 0)
            seeded_best = 1;
    }
    store_candidates_free(l, n);
    /* what the run says it seeded is what generation 0 holds, and the
     * generation is full (a seed that is the baseline's configuration is
     * not one) */
    CHECK_MSG(nwarm == b.warm_seeded, "%d warm members, %d reported", nwarm, b.warm_seeded);
    CHECK_MSG(gen0 == c.population, "generation 0 has %d members of %d", gen0, c.population);
    /* the first run's best is seeded unless it is the baseline itself */
    CHECK(seeded_best || strcmp(best.decision, "baseline") == 0);
    GenerationRecord *g;
    int ng;
    store_generation_list(s, b.run_id, &g, &ng, &err);
    CHECK(ng > 0 && g[0].best_latency_us <= best.latency_us + 1e-9);
    for (int i = 0; i < ng; i++)
        free(g[i].finished_at);
    free(g);
    candidate_record_free(&best);
    c.no_warm_start = 1;
    CHECK(evolve_run(s, task, &dev, &fake_eval_ops, f, &c, 0, &d, &err) == 0);
    CHECK(d.warm_seeded == 0);
    c.no_warm_start = 0;
    c.device_name = "OtherGPU";
    CHECK(evolve_run(s, task, &dev, &fake_eval_ops, f, &c, 0, &e, &err) == 0);
    CHECK(e.warm_seeded == 0);
    store_close(&s);
    fake_eval_free(f);
}

/* Resume of a warm-started run seeds and proposes what the run that was
 * not stopped did. */
static void test_warm_resume(void)
{
    Store *a = fresh_store("warm_res_a.db"), *b = fresh_store("warm_res_b.db");
    FakeEval *f = fake_new();
    EvolveConfig c = config("evolve", 3);
    c.device_name = "FakeGPU";
    EvolveSummary s0, s1, s2, s3;
    EvoErr err;
    CHECK(evolve_run(a, task, &dev, &fake_eval_ops, f, &c, 0, &s0, &err) == 0);
    CHECK(evolve_run(b, task, &dev, &fake_eval_ops, f, &c, 0, &s0, &err) == 0);
    c.seed = 7;
    CHECK(evolve_run(a, task, &dev, &fake_eval_ops, f, &c, 0, &s1, &err) == 0);
    CHECK(s1.warm_seeded > 0);
    volatile int stop = 0;
    EvolveConfig c2 = c;
    c2.stop = &stop;
    c2.stop_after = 1;   /* right after the baseline: generation 0 is proposed on resume */
    CHECK(evolve_run(b, task, &dev, &fake_eval_ops, f, &c2, 0, &s2, &err) == 0);
    CHECK(s2.interrupted);
    CHECK_MSG(evolve_run(b, task, &dev, &fake_eval_ops, f, &c, s2.run_id, &s3, &err) == 0, "%s", err.msg);
    CHECK_MSG(s2.generations_done == 0 && s3.warm_seeded == s1.warm_seeded,
              "stopped after %d generations, %d evaluated; %d seeded on resume, %d without a stop",
              s2.generations_done, s2.evaluated, s3.warm_seeded, s1.warm_seeded);
    char *ka = keys_of(a, s1.run_id), *kb = keys_of(b, s3.run_id);
    CHECK_STR(kb, ka);
    free(ka);
    free(kb);
    store_close(&a);
    store_close(&b);
    fake_eval_free(f);
}

/* A run stopped by the time limit is recorded as time_limit (not
 * interrupted, which is for a signal), and resume continues it to the run
 * an unlimited one makes; with a new time limit it stops again as time_limit. */
static void test_time_limit_resume(void)
{
    Store *ref = fresh_store("tl_ref.db");
    FakeEval *fr = fake_new();
    EvolveConfig c = config("evolve", 4);
    EvolveSummary rs;
    EvoErr err;
    CHECK(evolve_run(ref, task, &dev, &fake_eval_ops, fr, &c, 0, &rs, &err) == 0);
    char *want = keys_by_generation(ref, rs.run_id);
    CHECK(fr->evaluates >= 10);

    /* Each gate takes 20 ms: the unlimited run needs well over 150 ms. */
    Store *s = fresh_store("tl.db");
    FakeEval *f = fake_new();
    f->delay_us = 20000;
    EvolveConfig c1 = c;
    c1.time_limit_s = 0.15;
    EvolveSummary s1;
    CHECK_MSG(evolve_run(s, task, &dev, &fake_eval_ops, f, &c1, 0, &s1, &err) == 0, "%s", err.msg);
    CHECK_MSG(s1.interrupted && s1.time_limited, "interrupted %d time_limited %d, %d evaluated, %.0f ms", s1.interrupted, s1.time_limited, s1.evaluated, s1.wall_ms);
    RunRecord r;
    CHECK(store_run_get(s, s1.run_id, &r, &err) == 1);
    CHECK_STR(r.status, "time_limit");
    CHECK(r.finished_at != NULL);
    run_record_free(&r);
    /* resumed with a new time limit: stopped again, still time_limit */
    EvolveConfig c2 = c1;
    c2.time_limit_s = 0.05;
    EvolveSummary s2;
    CHECK_MSG(evolve_run(s, task, &dev, &fake_eval_ops, f, &c2, s1.run_id, &s2, &err) == 0, "%s", err.msg);
    CHECK(s2.time_limited && s2.run_id == s1.run_id);
    CHECK(store_run_get(s, s1.run_id, &r, &err) == 1);
    CHECK_STR(r.status, "time_limit");
    run_record_free(&r);
    /* resumed without a limit: it completes as the unlimited run did */
    f->delay_us = 0;
    EvolveSummary s3;
    CHECK_MSG(evolve_run(s, task, &dev, &fake_eval_ops, f, &c, s1.run_id, &s3, &err) == 0, "%s", err.msg);
    CHECK(!s3.interrupted && !s3.time_limited && s3.run_id == s1.run_id);
    CHECK(store_run_get(s, s1.run_id, &r, &err) == 1);
    CHECK_STR(r.status, "completed");
    run_record_free(&r);
    char *got = keys_by_generation(s, s1.run_id);
    CHECK_STR(got, want);
    free(got);
    free(want);

    /* a signal with a time limit configured (not reached): interrupted */
    Store *s4 = fresh_store("tl_sig.db");
    volatile int stop = 0;
    EvolveConfig c4 = c;
    c4.time_limit_s = 1000;
    c4.stop = &stop;
    c4.stop_after = 3;
    EvolveSummary s5;
    CHECK_MSG(evolve_run(s4, task, &dev, &fake_eval_ops, f, &c4, 0, &s5, &err) == 0, "%s", err.msg);
    CHECK(s5.interrupted && !s5.time_limited);
    CHECK(store_run_get(s4, s5.run_id, &r, &err) == 1);
    CHECK_STR(r.status, "interrupted");
    run_record_free(&r);
    store_close(&s4);
    store_close(&s);
    store_close(&ref);
    fake_eval_free(f);
    fake_eval_free(fr);
}

/* The generation lines of a run (stdout) fit the width: cut to COLUMNS=50
 * (stdout is not a terminal here), whole with --wide (issue 14). */
static char *run_lines(int wide)
{
    char *path = xasprintf("%s/progress_%d.txt", tmpdir, wide);
    fflush(stdout);
    int saved = dup(STDOUT_FILENO);
    FILE *f = fopen(path, "w");
    dup2(fileno(f), STDOUT_FILENO);
    setenv("COLUMNS", "50", 1);
    out_init(wide);
    Store *s = fresh_store(wide ? "progress_wide.db" : "progress.db");
    FakeEval *fe = fake_new();
    EvolveConfig c = config("evolve", 2);
    c.quiet = 0;
    EvolveSummary sum;
    EvoErr err;
    CHECK(evolve_run(s, task, &dev, &fake_eval_ops, fe, &c, 0, &sum, &err) == 0);
    fflush(stdout);
    dup2(saved, STDOUT_FILENO);
    close(saved);
    fclose(f);
    unsetenv("COLUMNS");
    out_init(1);
    store_close(&s);
    fake_eval_free(fe);
    char *text = NULL;
    CHECK(file_read(path, &text, NULL, &err) == 0);
    free(path);
    return text;
}

static void test_progress_width(void)
{
    char *cut = run_lines(0), *whole = run_lines(1);
    int gens = 0, longest = 0;
    for (char *l = cut; l && *l;) {
        char *nl = strchr(l, '\n');
        int len = nl ? (int)(nl - l) : (int)strlen(l);
        if (strncmp(l, "gen ", 4) == 0) {
            gens++;
            CHECK_MSG(len == 50 && strncmp(l + 47, "...", 3) == 0, "%.*s", len, l);
        }
        l = nl ? nl + 1 : l + len;
    }
    CHECK(gens == 3);
    for (char *l = whole; l && (l = strstr(l, "gen ")); l++) {
        char *nl = strchr(l, '\n');
        int len = nl ? (int)(nl - l) : (int)strlen(l);
        longest = len > longest ? len : longest;
    }
    CHECK_MSG(longest > 100 && strstr(whole, "eta ") && !strstr(whole, "..."), "longest %d", longest);
    free(cut);
    free(whole);
}

int main(void)
{
    if (fake_eval_setup("evolve", "good_task.json", tmpdir, sizeof(tmpdir), &task))
        return 1;
    EvoErr err;
    device_profile("sm_90", &dev, &err);
    RUN(test_revert_rule);
    RUN(test_tournament);
    RUN(test_operators);
    RUN(test_run_bookkeeping);
    RUN(test_determinism);
    RUN(test_resume);
    RUN(test_exhaustive);
    RUN(test_bad_baseline);
    RUN(test_staged);
    RUN(test_speculation);
    RUN(test_judge_ahead);
    RUN(test_slots);
    RUN(test_full_generations);
    RUN(test_deceptive);
    RUN(test_coupled_moves);
    RUN(test_warm_start);
    RUN(test_warm_resume);
    RUN(test_time_limit_resume);
    RUN(test_progress_width);
    fake_eval_teardown(tmpdir, &task);
    return test_report();
}

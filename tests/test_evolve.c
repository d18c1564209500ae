/* Unit tests for the evolutionary loop without a GPU: a synthetic
 * evaluator (evolve_fixture.h) stands in for compile, gate and timing.
 * Covers selection, operators, dedup, the revert decision, determinism,
 * exhaustive search, resume bookkeeping, the staged gate, speculation and
 * GPU slots; whole runs (full generations, search quality, warm starts,
 * time limits, progress lines) are in test_evolve_runs.c. */
#include "testhelp.h"
#include "evolve_fixture.h"
#include "search/ops.h"
#include "device.h"
#include "compile/nvrtc.h"
#include "msg.h"
#include "search/loop.h"
#include "search/population.h"
#include "store_fixture.h"

#include <math.h>
#include <stdlib.h>
#include <unistd.h>

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
    c.sync = 1;   /* the mode that promises it */
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
    c.sync = 1;   /* exact resume is the synchronous mode's promise (test_steady.c: the steady mode's) */
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
static void staged(int sync);

static void test_staged(void)
{
    for (int sync = 0; sync <= 1; sync++)
        staged(sync);
}

static void staged(int sync)
{
    Store *s = fresh_store(sync ? "staged_sync.db" : "staged.db");
    FakeEval *f = fake_new();
    EvolveConfig c = config("evolve", 8);
    c.sync = sync;
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
        if (l[i].gate_stage == GATE_STAGE_FULL)
            stage_b++;
        if (strcmp(l[i].decision, "accepted") == 0 || strcmp(l[i].decision, "baseline") == 0)
            CHECK(l[i].gate_stage == GATE_STAGE_FULL);
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
    /* Stage-B gates: the accepted, the stage-B failures, the reverted that
     * need the full gate (random immigrants), nothing for the others. */
    CHECK_MSG(f->gates[2] == stage_b, "stage-B gates %d, candidates gated on every shape %d (late failures %d)",
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
    c.sync = 1;   /* judging ahead is the synchronous mode's */
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
    c.sync = 1;   /* speculation is the synchronous mode's */
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
    c.sync = 1;   /* the same commits in the same order: the synchronous mode's promise */
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
/* Every generation after the first has one "neighbour" child (room
 * allowing): the fastest survivor of the generations before it, one param
 * moved one value step (and any coupled knob the constraints require).
 * In the synchronous mode that parent is the population's best. */
static void test_neighbour(void)
{
    Task *saved = swap_task("search_task.json");
    Store *s = fresh_store("neighbour.db");
    FakeEval *f = fake_new();
    EvolveConfig c = config("evolve", 6);
    c.children = 6;
    c.sync = 1;
    EvolveSummary sum;
    EvoErr err;
    CHECK_MSG(s && evolve_run(s, task, &dev, &fake_eval_ops, f, &c, 0, &sum, &err) == 0, "%s", err.msg);
    CandidateRecord *l = NULL;
    int n = 0, np = task_nparams(task), seen = 0;
    store_candidate_list(s, sum.run_id, STORE_ALL_BY_ID, 0, &l, &n, &err);
    int64_t *a = xcalloc((size_t)np, sizeof(int64_t)), *b = xcalloc((size_t)np, sizeof(int64_t));
    for (int i = 0; i < n; i++) {
        if (!l[i].operator || strcmp(l[i].operator, "neighbour") != 0)
            continue;
        seen++;
        double best = INFINITY;   /* the fastest survivor of earlier generations */
        int64_t best_id = 0;
        for (int j = 0; j < n; j++)
            if (l[j].generation < l[i].generation && strcmp(l[j].status, "ok") == 0 && l[j].gate_stage == 2 &&
                (strcmp(l[j].decision, "accepted") == 0 || strcmp(l[j].decision, "baseline") == 0) &&
                l[j].latency_us < best) {
                best = l[j].latency_us;
                best_id = l[j].id;
            }
        CHECK_MSG(l[i].parent_id == best_id, "neighbour %lld: parent %lld, the best was %lld", (long long)l[i].id,
                  (long long)l[i].parent_id, (long long)best_id);
        int k = 0;
        while (k < n && l[k].id != l[i].parent_id)
            k++;
        if (k == n || task_params_parse(task, l[i].params_json, a, &err) ||
            task_params_parse(task, l[k].params_json, b, &err)) {
            CHECK(0);
            continue;
        }
        int one_step = 0;
        for (int p = 0; p < np; p++) {
            int d = task_param_find(task, p, a[p]) - task_param_find(task, p, b[p]);
            one_step |= d == 1 || d == -1;
        }
        CHECK_MSG(one_step, "neighbour %lld moves no param by one step", (long long)l[i].id);
    }
    CHECK_MSG(seen >= 3, "%d neighbour children in 6 generations", seen);
    free(a);
    free(b);
    store_candidates_free(l, n);
    fake_eval_free(f);
    store_close(&s);
    restore_task(saved);
}

/* loop_survivors keeps the survivors in memory and merges in those
 * committed since: after each batch of commits (latencies with ties,
 * reverted and stage-A-only rows that never survive, params that do not
 * parse) it must list what the store's query lists, in its order, with
 * the same parsed params. */
static void test_survivors(void)
{
    Store *s = fresh_store("surv.db");
    if (!s)
        return;
    Loop L = {.st = s, .task = task, .np = task_nparams(task)};
    L.run.id = fixture_run(s, "t", "t.json", "{}", "{}", 1);
    static const char *const decisions[] = {"accepted", "reverted", "accepted", "baseline", "accepted"};
    static const double lat[] = {7.0, 5.0, 6.0, 5.0, 9.5, 6.0, 7.0};
    EvoErr err;
    int batches = 0, compared = 0;
    for (int i = 0; i < 70; i++) {
        CandidateRecord r;
        candidate_record_init(&r);
        r.run_id = L.run.id;
        r.generation = i / 7;
        r.params_json = i % 11 == 5 ? xstrdup("{\"BLOCK\": \"x\"}")
                                    : xasprintf("{\"BLOCK\":%d,\"UNROLL\":%d}", 64 << (i % 4), 1 << (i % 3));
        r.params_key = xasprintf("k%d", i);
        r.operator = xstrdup("mutate");
        r.status = xstrdup("ok");
        r.decision = xstrdup(decisions[i % 5]);
        r.gate_stage = i % 6 == 4 ? GATE_STAGE_BENCH : GATE_STAGE_FULL;
        r.latency_us = lat[i % 7];
        CHECK_MSG(store_candidate_insert(s, &r, NULL, NULL, &err) == 0, "%s", err.msg);
        candidate_record_free(&r);
        if (i % 9 != 8 && i != 69)
            continue;
        batches++;
        const LoopSurvivors *S = NULL;
        CandidateRecord *want = NULL;
        int nw = 0;
        CHECK_MSG(loop_survivors(&L, &S, &err) == 0, "%s", err.msg);
        CHECK(store_candidate_list(s, L.run.id, STORE_SURVIVORS_BY_LATENCY, 0, &want, &nw, &err) == 0);
        CHECK_MSG(S && S->n == nw, "%d survivors in memory, %d in the store", S ? S->n : -1, nw);
        char *ok = NULL;
        int64_t *v = loop_parse_all(&L, want, nw, &ok);
        for (int k = 0; S && k < nw && k < S->n; k++, compared++) {
            CHECK_MSG(S->rec[k].id == want[k].id, "survivor %d: id %lld, the store's %lld", k,
                      (long long)S->rec[k].id, (long long)want[k].id);
            CHECK(S->ok[k] == ok[k]);
            CHECK(memcmp(S->vals + (size_t)k * (size_t)L.np, v + (size_t)k * (size_t)L.np,
                         (size_t)L.np * sizeof(int64_t)) == 0);
            CHECK_STR(S->rec[k].params_json, want[k].params_json);
        }
        free(v);
        free(ok);
        store_candidates_free(want, nw);
    }
    CHECK(batches == 8 && compared > 100);
    /* the population is made of copies: freeing it leaves the cache whole */
    CandidateRecord *pop = NULL;
    int npop = 0;
    EvolveConfig c = config("evolve", 6);
    L.cfg = &c;
    CHECK(loop_load_population(&L, 100, &pop, &npop, &err) == 0 && npop == c.population);
    CHECK(npop > 0 && pop[0].id == L.surv.rec[0].id && pop[0].params_json != L.surv.rec[0].params_json);
    store_candidates_free(pop, npop);
    CHECK(L.surv.rec[0].params_json && L.surv.rec[0].params_json[0] == '{');
    loop_survivors_free(&L);
    store_close(&s);
}

int main(void)
{
    if (evx_setup("evolve"))
        return 1;
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
    RUN(test_survivors);
    RUN(test_neighbour);
    evx_teardown();
    return test_report();
}

/* Unit tests for the steady-state loop (src/search/steady.c), the default
 * mode of `run`, with the synthetic evaluator of evolve_fixture.h: whole
 * runs on one and several slots, what it guarantees about commits (no key
 * twice, parents before children, every generation's row), stops and
 * resumes, time limits, a lost slot and the exhaustive strategy. The
 * generation-synchronous mode is test_evolve.c's. */
#include "testhelp.h"
#include "evolve_fixture.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ---- what every steady run must hold ----------------------------------- */

/* Checks on run `run` of s: no params key committed twice; every parent
 * committed before its child, in an earlier generation, and a survivor
 * (ok, baseline or accepted, gated on every shape); every generation that
 * has candidates has its row, with the count of its candidates (the
 * baseline apart). Returns how many candidates. */
static int check_run(Store *s, int64_t run, const char *what)
{
    CandidateRecord *l = NULL;
    int n = 0;
    EvoErr err;
    CHECK(store_candidate_list(s, run, STORE_ALL_BY_ID, 0, &l, &n, &err) == 0);
    for (int i = 0; i < n; i++) {
        for (int j = 0; j < i; j++)
            CHECK_MSG(strcmp(l[i].params_key, l[j].params_key) != 0, "%s: %s committed twice", what,
                      l[i].params_key);
        for (int p = 0; p < 2; p++) {
            int64_t pid = p ? l[i].parent2_id : l[i].parent_id;
            if (!pid)
                continue;
            int found = 0;
            for (int j = 0; j < i; j++) {
                if (l[j].id != pid)
                    continue;
                found = 1;
                /* (the baseline, generation 0, is also the reference of generation 0's exhaustive
                 * or niche children) */
                CHECK_MSG(l[j].generation < l[i].generation || l[j].id == l[0].id,
                          "%s: candidate %lld (gen %lld) has parent %lld of gen %lld",
                          what, (long long)l[i].id, (long long)l[i].generation, (long long)pid,
                          (long long)l[j].generation);
                CHECK_MSG(strcmp(l[j].status, "ok") == 0 && l[j].gate_stage == GATE_STAGE_FULL &&
                              strcmp(l[j].decision, "reverted") != 0 && strcmp(l[j].decision, "failed") != 0,
                          "%s: parent %lld (%s, %s, gate %lld) is no survivor", what, (long long)pid, l[j].status,
                          l[j].decision, (long long)l[j].gate_stage);
            }
            CHECK_MSG(found, "%s: candidate %lld's parent %lld was not committed before it", what,
                      (long long)l[i].id, (long long)pid);
        }
    }
    GenerationRecord *g = NULL;
    int ng = 0;
    CHECK(store_generation_list(s, run, &g, &ng, &err) == 0);
    RunRecord r;
    CHECK(store_run_get(s, run, &r, &err) == 1);
    int64_t maxgen = -1;
    for (int i = 0; i < n; i++)
        if (l[i].generation > maxgen && l[i].id != r.baseline_id)
            maxgen = l[i].generation;
    for (int64_t gen = 0; gen <= maxgen; gen++) {
        int count = 0, row = -1;
        for (int i = 0; i < n; i++)
            count += l[i].generation == gen && l[i].id != r.baseline_id;
        for (int k = 0; k < ng; k++)
            if (g[k].generation == gen)
                row = k;
        if (count == 0)
            continue;
        CHECK_MSG(row >= 0, "%s: generation %lld has %d candidates and no row", what, (long long)gen, count);
        if (row >= 0)
            CHECK_MSG(g[row].evaluated == count, "%s: generation %lld's row counts %lld, the store %d", what,
                      (long long)gen, (long long)g[row].evaluated, count);
    }
    CHECK_MSG(r.generations_done >= maxgen + 1, "%s: generations_done %lld, last generation %lld", what,
              (long long)r.generations_done, (long long)maxgen);
    run_record_free(&r);
    for (int k = 0; k < ng; k++)
        free(g[k].finished_at);
    free(g);
    store_candidates_free(l, n);
    return n;
}

/* ---- tests ------------------------------------------------------------- */

/* A whole run on three slots: every generation full, every slot used, the
 * commits as check_run wants, the summary's pipeline figures set. */
static void test_steady_run(void)
{
    Task *saved = swap_task("search_task.json");
    Store *s = fresh_store("steady.db");
    FakeEval *f = fake_new();
    f->nslots = 3;
    f->delay_us = 1000;
    EvolveConfig c = config("evolve", 10);
    c.population = c.children = 8;
    EvolveSummary sum;
    EvoErr err;
    CHECK_MSG(evolve_run(s, task, &dev, &fake_eval_ops, f, &c, 0, &sum, &err) == 0, "%s", err.msg);
    CHECK(!sum.interrupted && !sum.space_exhausted);
    CHECK_MSG(sum.generations_done == 11, "%d generations done", sum.generations_done);
    /* the baseline, 7 random members, 10 generations of 8 */
    CHECK_MSG(sum.evaluated == 1 + 7 + 10 * 8, "%d evaluated", sum.evaluated);
    CHECK(check_run(s, sum.run_id, "3 slots") == sum.evaluated);
    CHECK(f->double_eval == 0);
    for (int w = 0; w < 3; w++)
        CHECK_MSG(f->per_slot[w] > 0, "slot %d judged nothing", w);
    CHECK(f->calibrations == 1);
    /* the window: 2 compile lanes a slot (the fake has none) x 2 + 4 a slot */
    CHECK_MSG(sum.in_flight == 2 * 6 + 12 && sum.slots == 3, "window %d, %d slots", sum.in_flight, sum.slots);
    CHECK(sum.slot_busy_s[0] > 0 && sum.slot_busy_s[1] > 0 && sum.slot_busy_s[2] > 0);
    CHECK(isfinite(sum.best_latency_us) && sum.best_latency_us <= sum.baseline_latency_us);
    store_close(&s);
    fake_eval_free(f);
    restore_task(saved);
}

/* Stopped (as if killed) after k commits, then resumed to the end: no key
 * committed twice, no committed key judged again, the run completed with
 * every generation's row; only the children in flight at the stop are
 * lost (and may be proposed again). */
static void test_steady_resume(void)
{
    Task *saved = swap_task("search_task.json");
    static const int ks[] = {1, 6, 13, 40};
    for (size_t i = 0; i < sizeof(ks) / sizeof(ks[0]); i++) {
        char name[64];
        snprintf(name, sizeof(name), "steady_resume_%d.db", ks[i]);
        Store *s = fresh_store(name);
        FakeEval *f = fake_new();
        f->nslots = 2;
        volatile int stop = 0;
        EvolveConfig c = config("evolve", 8);
        c.population = c.children = 6;
        EvolveConfig c1 = c;
        c1.stop = &stop;
        c1.stop_after = ks[i];
        EvolveSummary s1, s2;
        EvoErr err;
        CHECK_MSG(evolve_run(s, task, &dev, &fake_eval_ops, f, &c1, 0, &s1, &err) == 0, "%s", err.msg);
        CHECK(s1.interrupted);
        RunRecord r;
        CHECK(store_run_get(s, s1.run_id, &r, &err) == 1);
        CHECK_STR(r.status, "interrupted");
        run_record_free(&r);
        char *committed = keys_of(s, s1.run_id);
        int nseen = f->nseen;
        CHECK_MSG(evolve_run(s, task, &dev, &fake_eval_ops, f, &c, s1.run_id, &s2, &err) == 0, "%s", err.msg);
        CHECK(!s2.interrupted && s2.run_id == s1.run_id);
        CHECK(store_run_get(s, s1.run_id, &r, &err) == 1);
        CHECK_STR(r.status, "completed");
        CHECK_MSG(r.generations_done == 9, "k=%d: generations_done %lld", ks[i], (long long)r.generations_done);
        run_record_free(&r);
        /* the waves the stop cut short were refilled: as many as a run never stopped */
        int total = s1.evaluated + s2.evaluated;
        CHECK_MSG(total == 1 + 5 + 8 * 6, "k=%d: %d + %d evaluated", ks[i], s1.evaluated, s2.evaluated);
        /* what was committed before the stop is never judged again */
        for (int a = nseen; a < f->nseen; a++)
            CHECK_MSG(!strstr(committed, f->seen[a]), "k=%d: committed %s was judged again", ks[i], f->seen[a]);
        free(committed);
        check_run(s, s1.run_id, name);
        store_close(&s);
        fake_eval_free(f);
    }
    restore_task(saved);
}

/* A refill after a stop: the random strategy draws a generation's
 * children from the generation's seed alone, so the refill of a wave the
 * stop cut short draws first the children that wave already committed.
 * Each is a duplicate and the next draw takes its place: the wave ends
 * full. (One slot, slow stage A: the stop after the first child of
 * generation 0 lands while the second runs, and its stage B and the third
 * are dropped.) */
static void test_steady_refill(void)
{
    Task *saved = swap_task("search_task.json");
    Store *s = fresh_store("steady_refill.db");
    FakeEval *f = fake_new();
    f->delay_us = 50000;
    volatile int stop = 0;
    EvolveConfig c = config("random", 1);
    EvolveConfig c1 = c;
    c1.stop = &stop;
    c1.stop_after = 2;   /* the baseline and one child */
    EvolveSummary s1, s2;
    EvoErr err;
    CHECK_MSG(evolve_run(s, task, &dev, &fake_eval_ops, f, &c1, 0, &s1, &err) == 0, "%s", err.msg);
    CHECK(s1.interrupted);
    char *committed = keys_of(s, s1.run_id);
    int nseen = f->nseen;
    f->delay_us = 0;
    CHECK_MSG(evolve_run(s, task, &dev, &fake_eval_ops, f, &c, s1.run_id, &s2, &err) == 0, "%s", err.msg);
    CHECK(!s2.interrupted);
    /* the baseline, 3 random members, one generation of 4 */
    CHECK_MSG(s1.evaluated + s2.evaluated == 1 + 3 + 4, "%d + %d evaluated", s1.evaluated, s2.evaluated);
    for (int a = nseen; a < f->nseen; a++)
        CHECK_MSG(!strstr(committed, f->seen[a]), "committed %s was judged again", f->seen[a]);
    free(committed);
    check_run(s, s1.run_id, "refill");
    store_close(&s);
    fake_eval_free(f);
    restore_task(saved);
}

/* A time limit stops the run (time_limit); a resume without one completes
 * it, with as many children as a run never stopped; nothing is committed
 * twice. */
static void test_steady_time_limit(void)
{
    Task *saved = swap_task("search_task.json");
    Store *s = fresh_store("steady_tl.db");
    FakeEval *f = fake_new();
    f->delay_us = 20000;
    EvolveConfig c = config("evolve", 6);
    EvolveConfig c1 = c;
    c1.time_limit_s = 0.25;
    EvolveSummary s1, s2;
    EvoErr err;
    double t0 = time_now_ms();
    CHECK_MSG(evolve_run(s, task, &dev, &fake_eval_ops, f, &c1, 0, &s1, &err) == 0, "%s", err.msg);
    double took = time_now_ms() - t0;
    CHECK(s1.interrupted && s1.time_limited);
    /* at the limit only the children already past stage A finish */
    CHECK_MSG(took < 2000, "stopping at a 0.25 s limit took %.0f ms", took);
    RunRecord r;
    CHECK(store_run_get(s, s1.run_id, &r, &err) == 1);
    CHECK_STR(r.status, "time_limit");
    run_record_free(&r);
    f->delay_us = 0;
    CHECK_MSG(evolve_run(s, task, &dev, &fake_eval_ops, f, &c, s1.run_id, &s2, &err) == 0, "%s", err.msg);
    CHECK(!s2.interrupted);
    CHECK(store_run_get(s, s1.run_id, &r, &err) == 1);
    CHECK_STR(r.status, "completed");
    run_record_free(&r);
    /* the baseline, 3 random members, 6 generations of 4 */
    CHECK_MSG(s1.evaluated + s2.evaluated == 1 + 3 + 6 * 4, "%d + %d evaluated", s1.evaluated, s2.evaluated);
    check_run(s, s1.run_id, "time limit");
    store_close(&s);
    fake_eval_free(f);
    restore_task(saved);
}

/* A time-limited run holds a wave back while the children in flight
 * would take it to its limit (steady.c, deadline_near), wave by wave: the
 * flights taper off with the time left, and few children are dropped
 * unjudged at the limit. Without the hold about the whole window (40
 * here) is; with a hold that once lifted refills the window, tens are. */
static void test_steady_deadline(void)
{
    Task *saved = swap_task("search_task.json");
    Store *s = fresh_store("steady_deadline.db");
    FakeEval *f = fake_new();
    f->nslots = 2;
    f->delay_us = 40000;   /* a stage A: about 50 commits a second over both slots */
    f->unit_us = 100000;   /* a benchmark unit's build */
    EvolveConfig c = config("evolve", 100000);
    c.time_limit_s = 8;    /* the rate is sampled after the first 40 commits, for 4 s at least */
    c.in_flight = 40;      /* about 0.8 s of judging */
    EvolveSummary sum;
    EvoErr err;
    CHECK_MSG(evolve_run(s, task, &dev, &fake_eval_ops, f, &c, 0, &sum, &err) == 0, "%s", err.msg);
    CHECK(sum.interrupted && sum.time_limited);
    CHECK_MSG(sum.in_flight == 40, "window %d", sum.in_flight);
    CHECK_MSG(sum.held_s > 0 && sum.held_s < 3, "the taper began %.2f s before the limit", sum.held_s);
    CHECK_MSG(sum.dropped < 8, "%d of a window of %d dropped unjudged at the limit", sum.dropped, sum.in_flight);
    CHECK_MSG(sum.evaluated > 80, "%d evaluated in 8 s", sum.evaluated);
    check_run(s, sum.run_id, "deadline");
    store_close(&s);
    fake_eval_free(f);
    restore_task(saved);
}

/* A slot lost mid-run hands its child to another: the run completes,
 * nothing judged twice. */
static void test_steady_slot_lost(void)
{
    Task *saved = swap_task("search_task.json");
    Store *s = fresh_store("steady_lost.db");
    FakeEval *f = fake_new();
    f->nslots = 2;
    f->delay_us = 1000;
    f->die_slot = 1;
    f->die_after = 7;
    EvolveConfig c = config("evolve", 6);
    EvolveSummary sum;
    EvoErr err;
    CHECK_MSG(evolve_run(s, task, &dev, &fake_eval_ops, f, &c, 0, &sum, &err) == 0, "%s", err.msg);
    CHECK(!sum.interrupted && sum.generations_done == 7);
    /* the child on the slot when it was lost is judged again elsewhere */
    CHECK_MSG(f->double_eval <= 1, "%d judged twice", f->double_eval);
    CHECK_MSG(f->per_slot[1] > 0 && f->per_slot[0] > f->per_slot[1], "slot 0 %d, lost slot 1 %d", f->per_slot[0],
              f->per_slot[1]);
    check_run(s, sum.run_id, "slot lost");
    store_close(&s);
    fake_eval_free(f);
    restore_task(saved);
}

/* The exhaustive strategy in the steady mode: the whole valid space, each
 * configuration once. */
static void test_steady_exhaustive(void)
{
    Store *s = fresh_store("steady_exh.db");
    FakeEval *f = fake_new();
    f->nslots = 2;
    EvolveConfig c = config("exhaustive", 0);
    EvolveSummary sum;
    EvoErr err;
    CHECK_MSG(evolve_run(s, task, &dev, &fake_eval_ops, f, &c, 0, &sum, &err) == 0, "%s", err.msg);
    int valid = 0, np = task_nparams(task), idx[8] = {0};
    int64_t v[8];
    for (;;) {
        for (int i = 0; i < np; i++)
            v[i] = task_param_value(task, i, idx[i]);
        valid += task_check(task, v, &dev, NULL, &err) == 1;
        int i = np - 1;
        while (i >= 0 && ++idx[i] == task_param_nvalues(task, i))
            idx[i--] = 0;
        if (i < 0)
            break;
    }
    CHECK_MSG(sum.evaluated == valid, "evaluated %d, valid space %d", sum.evaluated, valid);
    CHECK(f->double_eval == 0);
    check_run(s, sum.run_id, "exhaustive");
    store_close(&s);
    fake_eval_free(f);
}

/* What bounded a run (evolve_bound): the GPU slots at 90% busy or more,
 * else the compile threads at 90% or more, else neither, or unknown
 * without compile figures; the first 8 slots only; the cores' cap from
 * the CPU seconds a candidate. */
static void test_bound(void)
{
    EvolveSummary m;
    EvolveLoad l;
    memset(&m, 0, sizeof(m));
    m.wall_ms = 10000;
    m.slots = 2;
    m.slot_busy_s[0] = 9.5;
    m.slot_busy_s[1] = 8.5;   /* mean 0.90: the GPUs */
    m.pipe.lanes = 32;
    m.pipe.compile_busy_s = 32 * 9.8;
    m.evaluated = 100;
    m.cpu_s = 85;
    CHECK(evolve_bound(&m, 32, &l) == EVOLVE_BOUND_GPUS);
    CHECK_MSG(fabs(l.cap_per_min - 32 * 60.0 * 100 / 85) < 1e-9, "cap %f", l.cap_per_min);
    CHECK_MSG(fabs(l.slots_busy - 0.9) < 1e-12 && fabs(l.compile_busy - 0.98) < 1e-12, "busy %f %f", l.slots_busy,
              l.compile_busy);
    m.slot_busy_s[1] = 8.4;   /* mean 0.895: the compile threads */
    CHECK(evolve_bound(&m, 32, NULL) == EVOLVE_BOUND_COMPILE);
    CHECK(strcmp(evolve_bound_name(EVOLVE_BOUND_COMPILE), "compile") == 0);
    m.pipe.compile_busy_s = 32 * 8.9;   /* 0.89: neither */
    CHECK(evolve_bound(&m, 32, &l) == EVOLVE_BOUND_NEITHER);
    CHECK(strcmp(evolve_bound_name(EVOLVE_BOUND_NEITHER), "neither") == 0);
    m.pipe.lanes = 0;   /* no compile figures (MPI's rank 0, a fake evaluator) */
    CHECK(evolve_bound(&m, 32, &l) == EVOLVE_BOUND_UNKNOWN && l.cap_per_min == 0 && l.compile_busy == 0);
    CHECK(strcmp(evolve_bound_name(EVOLVE_BOUND_UNKNOWN), "unknown") == 0);
    /* 12 slots: the summary has the first 8, all busy */
    m.slots = 12;
    for (int i = 0; i < 8; i++)
        m.slot_busy_s[i] = 9.6;
    CHECK(evolve_bound(&m, 32, NULL) == EVOLVE_BOUND_GPUS);
    CHECK(strcmp(evolve_bound_name(EVOLVE_BOUND_GPUS), "gpus") == 0);
    /* no wall time, no candidates: neither, and no cap */
    m.wall_ms = 0;
    m.evaluated = 0;
    CHECK(evolve_bound(&m, 32, &l) == EVOLVE_BOUND_NEITHER && l.cap_per_min == 0 && l.slots_busy == 0);
}

int main(void)
{
    if (evx_setup("evolve_steady"))
        return 1;
    RUN(test_steady_run);
    RUN(test_steady_resume);
    RUN(test_steady_refill);
    RUN(test_steady_time_limit);
    RUN(test_steady_deadline);
    RUN(test_steady_slot_lost);
    RUN(test_steady_exhaustive);
    RUN(test_bound);
    evx_teardown();
    return test_report();
}

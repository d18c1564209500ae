/* Unit tests of whole runs of the evolutionary loop without a GPU
 * (evolve_fixture.h): every generation full, search quality on deceptive
 * and coupled spaces, warm starts, resume after a time limit, and the
 * progress line's width. */
#include "testhelp.h"
#include "evolve_fixture.h"
#include "search/ops.h"
#include "device.h"
#include "compile/nvrtc.h"
#include "msg.h"

#include <math.h>
#include <stdlib.h>
#include <unistd.h>

/* ---- tests ----------------------------------------------------------- */

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
        c.sync = 1;   /* the mechanisms, reproducibly (test_steady.c: the steady mode) */
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
static int coupled_wins(const char *tag, int nseeds, int *evals)
{
    int wins = 0, evaluated;
    *evals = 0;
    for (int k = 0; k < nseeds; k++) {
        char name[64];
        snprintf(name, sizeof(name), "%s_%d.db", tag, k);
        FakeEval *f = fake_eval_new(coupled_us, NULL, NULL);
        EvolveConfig c = config("evolve", 4);
        c.sync = 1;   /* the mechanisms, reproducibly */
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

/* 8 short runs on the task in tests/data/NAME_task.json reach CONS=4 in
 * at least 6 */
static void check_coupled(const char *name, const char *what)
{
    char file[64];
    snprintf(file, sizeof(file), "%s_task.json", name);
    Task *saved = swap_task(file);
    int evals = 0, wins = coupled_wins(name, 8, &evals);
    fprintf(stderr, "     %s: CONS=4 reached in %d of 8 runs (%d evaluations)\n", what, wins, evals);
    CHECK(wins >= 6);
    restore_task(saved);
}

static void test_coupled_moves(void)
{
    check_coupled("coupled", "coupled knobs");
}

/* Three coupled knobs (tests/data/coupled3_task.json): ROWS and COLS must
 * both equal CONS, as a move of the attention WS path from 3 consumers
 * with 128-key tiles to 256 keys needs CONSUMERS and BLOCK_M to follow it.
 * One more param following a move (repair_move) never makes such a move
 * valid; the nearest valid configuration that keeps it (repair_wide in
 * src/search/propose.c) does. */
static void test_coupled3_moves(void)
{
    check_coupled("coupled3", "three coupled knobs");
}

/* A sparse space: the attention task (templates/attention), about 1 valid
 * configuration in 800,000 raw ones. Random members and immigrants come
 * from its enumerated valid configurations (random_valid in
 * src/search/propose.c) once 64 random draws have missed, so every
 * generation is full and every candidate valid; random draws alone
 * (20,000 a proposal) rarely found one and spent most of a run there. */
static double sparse_us(const Child *c)
{
    return 10.0 + (pval(c, "WS") ? 0.0 : 3.0) + (pval(c, "BLOCK_N") == 128 ? 0.0 : 1.0) +
           0.5 * (double)pval(c, "STAGES");
}

static void test_sparse_space(void)
{
    Task *saved = swap_task("../../templates/attention/task.json");
    const char *strategies[] = {"evolve", "model"};
    for (int k = 0; k < 2; k++) {
        Store *s = fresh_store(k ? "sparse_model.db" : "sparse.db");
        FakeEval *f = fake_eval_new(sparse_us, NULL, NULL);
        EvolveConfig c = config(strategies[k], 4);
        c.population = c.children = 8;
        EvolveSummary sum;
        EvoErr err;
        double t0 = time_now_ms();
        CHECK_MSG(evolve_run(s, task, &dev, &fake_eval_ops, f, &c, 0, &sum, &err) == 0, "%s", err.msg);
        fprintf(stderr, "     attention space, %s: %d evaluated in %.2f s\n", strategies[k], sum.evaluated,
                (time_now_ms() - t0) / 1000.0);
        GenerationRecord *g;
        int ng;
        store_generation_list(s, sum.run_id, &g, &ng, &err);
        CHECK(ng == 5);
        for (int i = 0; i < ng; i++) {
            if (i > 0)
                CHECK_MSG(g[i].evaluated == c.children, "%s: generation %d evaluated %lld of %d", strategies[k], i,
                          (long long)g[i].evaluated, c.children);
            free(g[i].finished_at);
        }
        free(g);
        CandidateRecord *cs;
        int nc;
        CHECK(store_candidate_list(s, sum.run_id, STORE_ALL_BY_ID, 0, &cs, &nc, &err) == 0);
        CHECK(nc == sum.evaluated);
        int64_t v[64];
        for (int i = 0; i < nc; i++) {
            CHECK(task_params_parse(task, cs[i].params_json, v, &err) == 0);
            CHECK_MSG(task_check(task, v, &dev, NULL, &err) == 1, "%s: candidate %lld is not valid", strategies[k],
                      (long long)cs[i].id);
        }
        store_candidates_free(cs, nc);
        store_close(&s);
        fake_eval_free(f);
    }
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

static char *warm_row(const CandidateRecord *c)
{
    return xstrdup(strcmp(c->operator, "warm") == 0 ? c->params_key : "");
}

/* Resume of a warm-started run seeds what the run that was not stopped
 * did, and commits no key twice; in the generation-synchronous mode
 * (sync) it proposes the same in the same order. That order is --sync's
 * promise only: the steady mode proposes from the population as it stands
 * when a slot frees, which depends on timing (under CI's load the last
 * generation came out in another order). */
static void warm_resume(int sync)
{
    Store *a = fresh_store(sync ? "warm_res_a.db" : "warm_st_a.db");
    Store *b = fresh_store(sync ? "warm_res_b.db" : "warm_st_b.db");
    FakeEval *f = fake_new();
    EvolveConfig c = config("evolve", 3);
    c.device_name = "FakeGPU";
    c.sync = sync;
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
    char *wa = rows_of(a, s1.run_id, warm_row, 1), *wb = rows_of(b, s3.run_id, warm_row, 1);
    CHECK_STR(wb, wa);   /* the same warm members */
    free(wa);
    free(wb);
    CandidateRecord *l;
    int n, dup = 0;
    store_candidate_list(b, s3.run_id, STORE_ALL_BY_ID, 0, &l, &n, &err);
    for (int i = 0; i < n; i++)
        for (int j = 0; j < i; j++)
            dup += strcmp(l[i].params_key, l[j].params_key) == 0;
    store_candidates_free(l, n);
    CHECK_MSG(dup == 0, "%d keys committed twice", dup);
    if (sync) {
        char *ka = keys_of(a, s1.run_id), *kb = keys_of(b, s3.run_id);
        CHECK_STR(kb, ka);
        free(ka);
        free(kb);
    }
    store_close(&a);
    store_close(&b);
    fake_eval_free(f);
}

static void test_warm_resume(void)
{
    warm_resume(1);
}

static void test_warm_resume_steady(void)
{
    warm_resume(0);
}

/* A run stopped by the time limit is recorded as time_limit (not
 * interrupted, which is for a signal), and resume continues it to the run
 * an unlimited one makes; with a new time limit it stops again as time_limit. */
static void test_time_limit_resume(void)
{
    Store *ref = fresh_store("tl_ref.db");
    FakeEval *fr = fake_new();
    EvolveConfig c = config("evolve", 4);
    c.sync = 1;   /* the same keys per generation after resumes: the synchronous mode's promise */
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
    if (evx_setup("evolve_runs"))
        return 1;
    RUN(test_full_generations);
    RUN(test_deceptive);
    RUN(test_coupled_moves);
    RUN(test_coupled3_moves);
    RUN(test_sparse_space);
    RUN(test_warm_start);
    RUN(test_warm_resume);
    RUN(test_warm_resume_steady);
    RUN(test_time_limit_resume);
    RUN(test_progress_width);
    evx_teardown();
    return test_report();
}

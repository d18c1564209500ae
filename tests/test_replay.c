/* Unit tests for the search-quality replay (src/search/replay.h,
 * bench/search_replay.c): a synthetic exhaustive run is made here with the
 * fake evaluator on tests/data/search_task.json (2,048 valid
 * configurations, a deceptive landscape, planted failures), then every
 * strategy is replayed against it. Nothing is hard-coded: the expected
 * figures come from the synthetic run itself. */
#include "testdata.h"
#include "testhelp.h"
#include "device.h"
#include "search/evolve.h"
#include "fake_eval.h"
#include "search/replay.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char tmpdir[256];
static Task *task;

static int64_t pval(const Child *c, const char *name)
{
    return c->vals[task_param_index(task, name)];
}

/* A deceptive landscape (as in test_evolve) with interactions. */
static double landscape_us(const Child *c)
{
    double b = (double)pval(c, "BLOCK"), u = (double)pval(c, "UNROLL"), s = (double)pval(c, "SPLITS");
    double a = (double)pval(c, "A"), bb = (double)pval(c, "B");
    double g = pval(c, "MODE") ? fabs(a - 6) + fabs(bb - 6) : 5 + 0.5 * (fabs(a - 2) + fabs(bb - 2));
    return 10.0 + fabs(log2(b / 256.0)) * 2.0 + 4.0 / u + (s - 1) * 1.5 * (a > 3 ? 1 : -0.2) + g;
}

static const char *compile_error(const Child *c)
{
    return pval(c, "A") == 7 && pval(c, "B") == 0 ? "synthetic compile error" : NULL;
}

static const char *gate_error(const Child *c, int stage)
{
    return stage == 1 && pval(c, "BLOCK") == 512 && pval(c, "A") == 1 ? "mismatch" : NULL;
}

/* The synthetic truth: an exhaustive run of the fake evaluator. */
static char *make_truth(int *valid, double *best)
{
    char *path = xasprintf("%s/truth.db", tmpdir);
    Store *s = NULL;
    EvoErr err;
    CHECK(store_open(&s, path, &err) == 0);
    FakeEval *f = fake_eval_new(landscape_us, compile_error, gate_error);
    DeviceInfo dev;
    device_profile("sm_90", &dev, &err);
    EvolveConfig c = {.population = 8, .children = 64, .seed = 1, .strategy = "exhaustive",
                      .revert_threshold = 0.02, .quiet = 1, .config_json = "{\"dims\":{}}",
                      .device_arch = "sm_90", .device_name = "FakeGPU"};
    EvolveSummary sum;
    CHECK_MSG(evolve_run(s, task, &dev, &fake_eval_ops, f, &c, 0, &sum, &err) == 0, "%s", err.msg);
    *valid = sum.evaluated;
    *best = sum.best_latency_us;
    store_close(&s);
    fake_eval_free(f);
    return path;
}

static void test_replay(void)
{
    int valid = 0;
    double best = 0;
    char *truth_db = make_truth(&valid, &best);
    EvoErr err;
    ReplayTruth *t = NULL;
    CHECK_MSG(replay_truth_load(&t, truth_db, 0, NULL, &err) == 0, "%s", err.msg);
    if (!t) {
        free(truth_db);
        return;
    }
    CHECK(replay_truth_size(t) == valid);
    CHECK_NEAR(replay_truth_best(t, NULL), best, 1e-9);
    const char *strategies[] = {"evolve", "model", "random"};
    char *scratch = xasprintf("%s/scratch.db", tmpdir);
    int budget = valid / 4;
    for (int k = 0; k < 3; k++) {
        for (uint64_t seed = 1; seed <= 2; seed++) {
            ReplayResult r;
            CHECK_MSG(replay_run(t, strategies[k], seed, budget, scratch, &r, &err) == 0, "%s", err.msg);
            CHECK_MSG(r.n >= budget - 8 && r.n <= budget + 1, "%s: %d evaluations, budget %d", strategies[k], r.n,
                      budget);
            for (int i = 1; i < r.n; i++)
                CHECK(r.trace[i] <= r.trace[i - 1]);
            CHECK(r.n == 0 || r.trace[r.n - 1] >= 1.0 - 1e-12);
            if (r.to_target > 0)
                CHECK(r.trace[r.to_target - 1] <= 1.02 && (r.to_target == 1 || r.trace[r.to_target - 2] > 1.02));
            if (strcmp(strategies[k], "random") != 0)
                CHECK_MSG(r.to_target > 0, "%s seed %d did not come within 2%% in %d evaluations", strategies[k],
                          (int)seed, budget);
            CHECK(replay_ratio_at(&r, 1 << 30) == r.trace[r.n - 1]);
            replay_result_free(&r);
        }
    }
    /* Random with the whole space as budget sees every configuration: it
     * ends at the exhaustive best. */
    ReplayResult all;
    CHECK(replay_run(t, "random", 3, valid + 8, scratch, &all, &err) == 0);
    CHECK(all.n == valid);
    CHECK_NEAR(all.trace[all.n - 1], 1.0, 1e-12);
    replay_result_free(&all);
    replay_truth_free(&t);

    /* The tool end to end: markdown tables and a CSV. */
    const char *build = getenv("EVO_BUILD_ROOT");
    if (build) {
        char *out = xasprintf("%s/replay.txt", tmpdir), *csv = xasprintf("%s/replay.csv", tmpdir);
        char *cmd = xasprintf("'%s/bench/search_replay' '%s' --seeds 3 --budget 0.25 --csv '%s' --scratch '%s' > '%s'",
                              build, truth_db, csv, tmpdir, out);
        CHECK(system(cmd) == 0);
        char *text = NULL;
        CHECK(file_read(out, &text, NULL, &err) == 0);
        if (text) {
            CHECK_CONTAINS(text, "| evolve |");
            CHECK_CONTAINS(text, "| model |");
            CHECK_CONTAINS(text, "| random |");
            CHECK_CONTAINS(text, "convergence");
        }
        free(text);
        char *ctext = NULL;
        CHECK(file_read(csv, &ctext, NULL, &err) == 0);
        if (ctext)
            CHECK_CONTAINS(ctext, "strategy,seed,evaluations,ratio\nevolve,1,1,");
        free(ctext);
        free(cmd);
        free(out);
        free(csv);
    }
    /* A knob added to the template after the truth was measured: the
     * truth's keys take its default, so the space and the best are the
     * same, and a replay starts from the baseline (which it would not
     * find in the truth otherwise). */
    char *newer = test_source_path("tests/data/search_task_newknob.json");
    ReplayTruth *tn = NULL;
    CHECK_MSG(replay_truth_load(&tn, truth_db, 0, newer, &err) == 0, "%s", err.msg);
    if (tn) {
        CHECK(replay_truth_size(tn) == valid);
        const char *key = NULL;
        CHECK_NEAR(replay_truth_best(tn, &key), best, 1e-9);
        CHECK(key && strstr(key, ",NEWKNOB=0") != NULL);
        ReplayResult r;
        CHECK_MSG(replay_run(tn, "evolve", 1, valid / 4, scratch, &r, &err) == 0, "%s", err.msg);
        CHECK(r.n > 0);
        replay_result_free(&r);
        replay_truth_free(&tn);
    }
    free(newer);
    free(scratch);
    free(truth_db);
}

int main(void)
{
    if (fake_eval_setup("replay", "search_task.json", tmpdir, sizeof(tmpdir), &task))
        return 1;
    RUN(test_replay);
    fake_eval_teardown(tmpdir, &task);
    return test_report();
}

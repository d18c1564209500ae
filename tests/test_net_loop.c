/*
 * test_net_loop: the evolutionary loop with the LLM operator, against
 * tests/llm_stub.py on 127.0.0.1 serving tests/data/llm_loop/scenarios.json,
 * with a synthetic evaluator instead of the GPU. The scripted answers, in
 * order: a faster variant (accepted), one that does not compile, one that
 * fails the gate, a slower one (reverted), no code block, a renamed entry
 * point, 429 then a fast variant, 500 twice, two answers past the
 * timeout, truncated JSON, a huge reply and one that echoes the auth
 * headers. Checks the recorded requests, the candidates they made and
 * their links, the budget, kernel inheritance by parameter mutations, the
 * prompts, the per-mode statistics, resume, and that the API key appears
 * neither in the database file nor on stderr. Also `evoeng run --llm`
 * without a key.
 */
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "search/evolve.h"
#include "fake_eval.h"
#include "llm/llmop.h"
#include "msg.h"
#include "search/ops.h"
#include "testhelp.h"
#include "stub.h"

#define KEY "sk-loop-SECRET-9876"

static char tmpdir[256];
static Task *task;
static DeviceInfo dev;

/* ---- the stub --------------------------------------------------------- */


/* ---- a synthetic evaluator -------------------------------------------- *
 * Latency = a model of the params (best at BLOCK=256, UNROLL=4, SPLITS=1)
 * times the kernel's "FAKE:FACTOR=x" marker (1 for the template). A kernel
 * with "#error" fails to compile; one with "FAKE:INCORRECT" fails the gate. */

static int64_t pval(const Child *c, const char *name)
{
    return c->vals[task_param_index(task, name)];
}

static double model_us(const Child *c)
{
    double b = (double)pval(c, "BLOCK"), u = (double)pval(c, "UNROLL"), s = (double)pval(c, "SPLITS");
    double f = 1.0;
    const char *m = c->custom_source ? strstr(c->custom_source, "FAKE:FACTOR=") : NULL;
    if (m)
        f = atof(m + 12);
    return (10.0 + fabs(log2(b / 256.0)) * 2.0 + (4.0 / u) + (s - 1) * 1.5) * f;
}

static const char *compile_error(const Child *c)
{
    return c->custom_source && strstr(c->custom_source, "#error") ? "fake nvrtc: #error deliberate" : NULL;
}

static const char *gate_error(const Child *c, int stage)
{
    return stage == 1 && c->custom_source && strstr(c->custom_source, "FAKE:INCORRECT")
               ? "fake gate: mismatch at Y[101]"
               : NULL;
}

/* ---- helpers ---------------------------------------------------------- */

static EvolveConfig loop_config(int gens, LlmOp *op)
{
    EvolveConfig c = {0};
    c.generations = gens;
    c.population = 4;
    c.children = 4;
    c.seed = 7;
    c.strategy = "evolve";
    c.revert_threshold = 0.02;
    c.quiet = 1;
    c.config_json = "{}";
    c.llm = op;
    c.llm_rate = 0.5;
    c.sync = 1;   /* the stub answers in request order: generation by generation (test_steady: the default) */
    return c;
}

static int open_op(const Stub *s, int max_requests, LlmOp **op)
{
    LlmOpConfig c;
    llmop_config_defaults(&c);
    c.mode = PROMPT_FULL;
    c.llm.provider = "openai";
    char url[160];
    snprintf(url, sizeof url, "%s/v1", s->url);   /* an OpenAI-style base URL */
    c.llm.url = url;
    c.llm.model = "stub-model";
    c.llm.concurrency = 1;          /* answers map to requests in order */
    c.llm.max_requests = max_requests;
    c.llm.max_retries = 1;
    c.llm.timeout_s = 1.0;
    c.llm.connect_timeout_s = 2;
    c.llm.backoff_base_s = 0.05;
    c.llm.max_reply_bytes = 64 * 1024;
    char *dir = xasprintf("%s/prompts", getenv("EVO_SOURCE_ROOT"));
    c.prompts_dir = dir;
    EvoErr err;
    int rc = llmop_open(op, &c, &err);
    if (rc)
        fprintf(stderr, "llmop_open: %s\n", err.msg);
    free(dir);   /* llmop_open copied the directory */
    return rc;
}

/* 1 when the file at path (if it exists) holds needle. */
static int file_holds(const char *path, const char *needle)
{
    char *data = NULL;
    size_t len = 0;
    EvoErr err;
    if (file_read(path, &data, &len, &err))
        return 0;
    int found = memmem(data, len, needle, strlen(needle)) != NULL;
    free(data);
    return found;
}

/* ---- tests ------------------------------------------------------------ */

static void test_loop(void)
{
    Stub stub;
    CHECK(stub_start(&stub, "tests/data/llm_loop/scenarios.json", "loop", KEY) == 0);
    LlmOp *op = NULL;
    CHECK(open_op(&stub, 12, &op) == 0);
    if (!op) {
        stub_stop(&stub);
        return;
    }
    char *dbp = xasprintf("%s/loop.db", tmpdir);
    Store *st = NULL;
    EvoErr err;
    CHECK(store_open(&st, dbp, &err) == 0);
    FakeEval *f = fake_eval_new(model_us, compile_error, gate_error);
    EvolveConfig c = loop_config(7, op);
    EvolveSummary sum;

    /* Capture stderr for the key check. */
    char *errp = xasprintf("%s/stderr.txt", tmpdir);
    fflush(stderr);
    int saved = dup(2), fd = open(errp, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    dup2(fd, 2);
    close(fd);
    double t0 = time_now_ms();
    int rc = evolve_run(st, task, &dev, &fake_eval_ops, f, &c, 0, &sum, &err);
    double wall = time_now_ms() - t0;
    fflush(stderr);
    dup2(saved, 2);
    close(saved);
    CHECK_MSG(rc == 0, "%s", err.msg);
    CHECK(sum.generations_done == 8);
    CHECK(!sum.interrupted);
    CHECK(f->double_eval == 0);
    CHECK(sum.llm_requests == 12);
    CHECK(sum.llm_children == 5);
    CHECK(sum.llm_accepted == 2);
    CHECK_MSG(wall < 25000, "the loop took %.0f ms", wall);

    /* Every request, in order, with its status. */
    static const char *const want[] = {"ok",          "ok", "ok",       "ok",         "no_code",   "missing_entry",
                                       "ok",          "http_error", "timeout", "bad_json", "too_large", "no_code"};
    LlmRequestRecord *rq = NULL;
    int nr = 0;
    CHECK(store_llm_request_list(st, sum.run_id, &rq, &nr, &err) == 0);
    CHECK_MSG(nr == 12, "%d requests recorded", nr);
    for (int i = 0; i < nr && i < 12; i++) {
        CHECK_STR(rq[i].status, want[i]);
        CHECK_STR(rq[i].mode, "full");
        CHECK_STR(rq[i].provider, "openai");
        CHECK_STR(rq[i].model, "stub-model");
        CHECK(rq[i].generation == 1 + i / 2);   /* 2 of 4 children per generation; budget spent in gen 6 */
        CHECK(rq[i].parent_id > 0);
        CHECK(rq[i].prompt && strstr(rq[i].prompt, "scale_main(const float *X"));
        CHECK(rq[i].attempts >= 1);
        if (strcmp(want[i], "ok") != 0)
            CHECK(rq[i].candidate_id == 0 && rq[i].error && *rq[i].error);
    }
    if (nr == 12) {
        CHECK(rq[6].attempts == 2);            /* 429, then the answer */
        CHECK(rq[7].attempts == 2 && rq[7].http_status == 500);
        CHECK(rq[8].attempts == 2);
        CHECK(rq[0].input_tokens == 123 && rq[0].output_tokens == 456);
        CHECK(rq[0].latency_ms > 0);
        CHECK_CONTAINS(rq[5].error, "scale_main");   /* the missing entry is named */
        /* I2 and I3 in full mode; the compile error of request 2 (gen 1)
         * shows in the insights of request 3 (gen 2). */
        CHECK_CONTAINS(rq[2].prompt, "Best solutions so far");
        CHECK_CONTAINS(rq[2].prompt, "Measurements of the current kernel");
        CHECK_CONTAINS(rq[2].prompt, "compile_error");
        CHECK_CONTAINS(rq[2].prompt, "BLOCK: one of {64, 128, 256, 512}");
        CHECK_CONTAINS(rq[4].prompt, "Rationale A");   /* A is among the best by then */

        /* The candidates the usable answers made. */
        static const int made[] = {0, 1, 2, 3, 6};
        static const char *const status[] = {"ok", "compile_error", "incorrect", "ok", "ok"};
        static const char *const decision[] = {"accepted", "failed", "failed", "reverted", "accepted"};
        static const char *const why[] = {"Rationale A", "Rationale B", "Rationale C", "Rationale D", "Rationale G"};
        for (int k = 0; k < 5; k++) {
            LlmRequestRecord *r = &rq[made[k]];
            CandidateRecord cand;
            CHECK(r->candidate_id > 0);
            if (r->candidate_id <= 0 || store_candidate_get(st, r->candidate_id, &cand, &err) != 1)
                continue;
            CHECK_STR(cand.operator, "llm");
            CHECK_STR(cand.status, status[k]);
            CHECK_STR(cand.decision, decision[k]);
            CHECK(cand.llm_request_id == r->id);
            CHECK(cand.parent_id == r->parent_id);
            CHECK(cand.generation == r->generation);
            CHECK_CONTAINS(cand.rationale, why[k]);
            CHECK_CONTAINS(cand.params_key, "@");
            char *kern = store_kernel_get(st, cand.params_key, &err);
            CHECK(kern && strstr(kern, "FAKE:FACTOR=") && !strstr(kern, "```"));
            free(kern);
            candidate_record_free(&cand);
        }
    }

    /* Parameter mutations of an LLM child keep its kernel. */
    CandidateRecord *all = NULL;
    int na = 0, inherited = 0;
    CHECK(store_candidate_list(st, sum.run_id, STORE_ALL_BY_ID, 0, &all, &na, &err) == 0);
    for (int i = 0; i < na; i++) {
        if (strcmp(all[i].operator, "llm") == 0 || !strchr(all[i].params_key, '@'))
            continue;
        char *kern = store_kernel_get(st, all[i].params_key, &err);
        CHECK(kern != NULL);
        if (kern && (strstr(kern, "variant A") || strstr(kern, "variant G")))
            inherited++;
        free(kern);
    }
    CHECK_MSG(inherited > 0, "no parametric child renders an LLM kernel");
    store_candidates_free(all, na);
    /* Generation 7: the budget is spent, so its 4 children are parametric. */
    GenerationRecord *g = NULL;
    int ng = 0;
    CHECK(store_generation_list(st, sum.run_id, &g, &ng, &err) == 0);
    CHECK(ng == 8);
    for (int i = 0; i < ng; i++)
        free(g[i].finished_at);
    free(g);

    /* Per-mode statistics (evoeng status). */
    LlmModeStats *ms = NULL;
    int nms = 0;
    CHECK(store_llm_mode_stats(st, sum.run_id, &ms, &nms, &err) == 0);
    CHECK(nms == 1);
    if (nms == 1) {
        CHECK_STR(ms[0].mode, "full");
        CHECK(ms[0].requests == 12);
        CHECK(ms[0].children == 5);
        CHECK(ms[0].valid == 3);
        CHECK(ms[0].accepted == 2);
        CHECK_NEAR(ms[0].validity_rate, 0.25, 1e-3);
        CHECK_NEAR(ms[0].acceptance_rate, 0.167, 1e-3);
        CHECK(ms[0].best_speedup > 2.0);
    }
    free(ms);
    store_llm_requests_free(rq, nr);
    store_close(&st);
    llmop_close(&op);
    stub_stop(&stub);

    /* The key: nowhere in the database files, nor on stderr (which did get
     * the warnings about failed requests). */
    char *wal = xasprintf("%s-wal", dbp);
    CHECK(!file_holds(dbp, KEY));
    CHECK(!file_holds(wal, KEY));
    CHECK(file_holds(dbp, "Rationale A"));   /* the check can see text */
    CHECK(file_holds(errp, "http_error"));
    CHECK(file_holds(errp, "missing_entry"));
    CHECK(!file_holds(errp, KEY));
    free(wal);
    free(errp);
    free(dbp);
    fake_eval_free(f);
}

static void test_resume(void)
{
    Stub stub;
    CHECK(stub_start(&stub, "tests/data/llm_loop/scenarios.json", "resume", KEY) == 0);
    LlmOp *op = NULL;
    CHECK(open_op(&stub, 0, &op) == 0);
    if (!op) {
        stub_stop(&stub);
        return;
    }
    char *dbp = xasprintf("%s/resume.db", tmpdir);
    Store *st = NULL;
    EvoErr err;
    CHECK(store_open(&st, dbp, &err) == 0);
    FakeEval *f = fake_eval_new(model_us, compile_error, gate_error);
    volatile int stop = 0;
    EvolveConfig c = loop_config(3, op);
    c.stop = &stop;
    c.stop_after = 7;   /* gen 0 commits 4, gen 1 two parametric, then the first LLM child */
    EvolveSummary s1, s2;
    CHECK_MSG(evolve_run(st, task, &dev, &fake_eval_ops, f, &c, 0, &s1, &err) == 0, "%s", err.msg);
    CHECK(s1.interrupted);
    c.stop = NULL;
    c.stop_after = 0;
    CHECK_MSG(evolve_run(st, task, &dev, &fake_eval_ops, f, &c, s1.run_id, &s2, &err) == 0, "%s", err.msg);
    CHECK(!s2.interrupted);
    CHECK(s2.generations_done == 4);
    CHECK(f->double_eval == 0);
    LlmRequestRecord *rq = NULL;
    int nr = 0, linked = 0;
    CHECK(store_llm_request_list(st, s1.run_id, &rq, &nr, &err) == 0);
    int per_gen[8] = {0};
    for (int i = 0; i < nr; i++) {
        /* No usable answer is left without its candidate. */
        CHECK(strcmp(rq[i].status, "ok") != 0 || rq[i].candidate_id > 0);
        if (strcmp(rq[i].status, "interrupted") != 0 && rq[i].generation < 8)
            per_gen[rq[i].generation]++;
        linked += rq[i].candidate_id > 0;
    }
    for (int gen = 1; gen <= 3; gen++)
        CHECK_MSG(per_gen[gen] == 2, "generation %d: %d requests", gen, per_gen[gen]);
    CHECK(linked >= 1);
    store_llm_requests_free(rq, nr);
    store_close(&st);
    llmop_close(&op);
    stub_stop(&stub);
    free(dbp);
    fake_eval_free(f);
}

/* `evoeng run --llm openai` with no key in the environment is a usage
 * error naming the variables. */
static void test_cli_no_key(void)
{
    const char *evoeng = getenv("EVOENG");
    if (!evoeng) {
        fprintf(stderr, "EVOENG not set: skipping the command-line check\n");
        return;
    }
    char *out = xasprintf("%s/cli_err.txt", tmpdir);
    char *cmd = xasprintf("env -u EVOENG_API_KEY -u OPENAI_API_KEY -u ANTHROPIC_API_KEY '%s' run --llm openai "
                          "--llm-model m --db '%s/cli.db' 2>'%s' >/dev/null",
                          evoeng, tmpdir, out);
    int st = system(cmd);
    CHECK(WIFEXITED(st) && WEXITSTATUS(st) == EVO_EXIT_USAGE);
    CHECK(file_holds(out, "EVOENG_API_KEY"));
    CHECK(file_holds(out, "OPENAI_API_KEY"));
    free(cmd);
    cmd = xasprintf("env -u EVOENG_API_KEY -u ANTHROPIC_API_KEY '%s' run --llm anthropic --db '%s/cli.db' "
                    "2>'%s' >/dev/null",
                    evoeng, tmpdir, out);
    st = system(cmd);
    CHECK(WIFEXITED(st) && WEXITSTATUS(st) == EVO_EXIT_USAGE);
    CHECK(file_holds(out, "ANTHROPIC_API_KEY"));
    free(cmd);
    free(out);
}

int main(void)
{
    const char *root = getenv("EVO_SOURCE_ROOT");
    if (!root) {
        fprintf(stderr, "EVO_SOURCE_ROOT is not set\n");
        return 1;
    }
    snprintf(tmpdir, sizeof(tmpdir), "/tmp/evo_test_net_loop_XXXXXX");
    if (!mkdtemp(tmpdir))
        return 1;
    setenv("EVOENG_API_KEY", KEY, 1);
    EvoErr err;
    char *p = xasprintf("%s/tests/data/good_task.json", root);
    if (task_load(p, &task, &err)) {
        fprintf(stderr, "%s\n", err.msg);
        return 1;
    }
    free(p);
    device_profile("sm_90", &dev, &err);
    RUN(test_loop);
    RUN(test_resume);
    RUN(test_cli_no_key);
    task_free(&task);
    char *cmd = xasprintf("rm -rf '%s'", tmpdir);
    if (system(cmd) != 0)
        fprintf(stderr, "cleanup failed\n");
    free(cmd);
    return test_report();
}

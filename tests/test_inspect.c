/* Unit tests for issue 14's pieces below the commands: store_open_readonly
 * (a missing store creates nothing; nothing can write through it),
 * store_run_list (counts and the best survivor per run), the time_limit
 * run status, the --json objects of a run and a candidate row
 * (store_run_json, store_candidate_json; issue 36), and msg.h's out_*
 * (lines cut to a width, UTF-8 aware; the width rules for a stream that
 * is not a terminal). The commands themselves are
 * tested end to end by test_json_cli.py. */
#include "testhelp.h"
#include "store_fixture.h"

#include <math.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <jansson.h>

#include "msg.h"
#include "store/store.h"

static char tmpdir[256];

static int64_t add_run(Store *s, const char *task)
{
    return fixture_run(s, task, "t.json", "{\"dims\":{\"N\":1024,\"M\":3}}", "{\"dims\":{\"N\":4096}}", 1);
}

static int64_t add_cand(Store *s, int64_t run, const char *key, const char *status, const char *decision,
                        double lat, int64_t stage)
{
    CandidateRecord c;
    candidate_record_init(&c);
    c.run_id = run;
    c.generation = 0;
    c.operator = xstrdup("mutate");
    c.params_json = xstrdup("{}");
    c.params_key = xstrdup(key);
    c.status = xstrdup(status);
    c.decision = xstrdup(decision);
    c.latency_us = lat;
    c.speedup = 10.0 / lat;
    c.gate_stage = stage;
    EvoErr err;
    CHECK_MSG(store_candidate_insert(s, &c, NULL, NULL, &err) == 0, "%s", err.msg);
    int64_t id = c.id;
    candidate_record_free(&c);
    return id;
}

static void test_readonly_missing(void)
{
    char *dir = xasprintf("%s/not/there", tmpdir);
    char *p = xasprintf("%s/x.db", dir);
    Store *s = NULL;
    EvoErr err;
    CHECK(store_open_readonly(&s, p, &err) != 0 && s == NULL);
    CHECK_CONTAINS(err.msg, p);
    CHECK_CONTAINS(err.msg, "no population store");
    struct stat sb;
    char *top = xasprintf("%s/not", tmpdir);
    CHECK(stat(top, &sb) != 0);          /* no directory made */
    CHECK(store_open_readonly(&s, tmpdir, &err) != 0);   /* a directory */
    CHECK_CONTAINS(err.msg, "not a regular file");
    free(top);
    free(p);
    free(dir);
}

static void test_readonly_reads_only(void)
{
    char *p = xasprintf("%s/ro.db", tmpdir);
    Store *s = NULL;
    EvoErr err;
    CHECK(store_open(&s, p, &err) == 0);
    int64_t run = add_run(s, "scale");
    store_close(&s);
    CHECK_MSG(store_open_readonly(&s, p, &err) == 0, "%s", err.msg);
    RunRecord r;
    CHECK(store_run_get(s, 0, &r, &err) == 1 && r.id == run);
    run_record_free(&r);
    int64_t before = run;
    CHECK(store_run_insert(s, &(RunRecord){.task_name = "x", .task_path = "x", .task_json = "{}",
                                           .config_json = "{}", .strategy = "evolve", .started_at = "now",
                                           .evoeng_version = "0", .status = "running"},
                           &err) != 0);
    CHECK_CONTAINS(err.msg, "readonly");
    store_close(&s);
    CHECK(store_open(&s, p, &err) == 0);
    CHECK(store_run_get(s, 0, &r, &err) == 1 && r.id == before);   /* nothing was written */
    run_record_free(&r);
    store_close(&s);
    /* no -wal or -shm left next to the store */
    char *wal = xasprintf("%s-wal", p), *shm = xasprintf("%s-shm", p);
    CHECK(access(wal, F_OK) != 0 && access(shm, F_OK) != 0);
    free(wal);
    free(shm);
    free(p);
}

/* A new store tmpdir/name, opened for writing. */
static Store *new_store(const char *name)
{
    char *p = xasprintf("%s/%s", tmpdir, name);
    Store *s = NULL;
    EvoErr err;
    CHECK_MSG(store_open(&s, p, &err) == 0, "%s", err.msg);
    free(p);
    return s;
}

static void test_run_list(void)
{
    Store *s = new_store("list.db");
    EvoErr err;
    RunSummary *l = NULL;
    int n = -1;
    CHECK(store_run_list(s, &l, &n, &err) == 0 && n == 0);
    store_run_list_free(l, n);
    int64_t r1 = add_run(s, "scale"), r2 = add_run(s, "softmax");
    int64_t b = add_cand(s, r1, "a", "ok", "baseline", 10.0, GATE_STAGE_FULL);
    add_cand(s, r1, "b", "ok", "accepted", 8.0, GATE_STAGE_FULL);
    add_cand(s, r1, "c", "ok", "accepted", 5.0, GATE_STAGE_BENCH);     /* faster, but stage A only */
    add_cand(s, r1, "d", "incorrect", "failed", NAN, GATE_STAGE_BENCH);
    int64_t best = b + 1;
    RunRecord r;
    CHECK(store_run_get(s, r1, &r, &err) == 1);
    free(r.status);
    r.status = xstrdup("time_limit");          /* schema 5 takes it */
    CHECK_MSG(store_run_update(s, &r, &err) == 0, "%s", err.msg);
    free(r.status);
    r.status = xstrdup("stopped");             /* not a status */
    CHECK(store_run_update(s, &r, &err) != 0);
    run_record_free(&r);
    CHECK(store_run_list(s, &l, &n, &err) == 0 && n == 2);
    if (n == 2) {
        CHECK(l[0].run.id == r1 && l[1].run.id == r2);
        CHECK_STR(l[0].run.status, "time_limit");
        CHECK_STR(l[1].run.task_name, "softmax");
        CHECK(l[0].candidates == 4 && l[1].candidates == 0);
        CHECK(l[0].best_id == best);
        CHECK_NEAR(l[0].best_latency_us, 8.0, 1e-12);
        CHECK_NEAR(l[0].best_speedup, 10.0 / 8.0, 1e-12);
        CHECK(l[1].best_id == 0 && isnan(l[1].best_latency_us) && isnan(l[1].best_speedup));
    }
    store_run_list_free(l, n);
    store_close(&s);
}

/* The keys of object o in order, space-separated (fresh string). */
static char *keys_of(json_t *o)
{
    StrBuf sb = {0};
    const char *k;
    json_t *v;
    json_object_foreach(o, k, v) {
        sb_printf(&sb, "%s%s", sb.len ? " " : "", k);
    }
    return sb_take(&sb);
}

/* store_run_json, store_candidate_json: the --json objects of the rows, as
 * the tables of the store state them (names, order, omissions, detail). */
static void test_row_json(void)
{
    Store *s = new_store("json.db");
    EvoErr err;
    int64_t run = add_run(s, "scale");
    int64_t id = add_cand(s, run, "k1", "ok", "accepted", 8.0, GATE_STAGE_FULL);
    RunRecord r;
    CandidateRecord c;
    CHECK(store_run_get(s, run, &r, &err) == 1 && store_candidate_get(s, id, &c, &err) == 1);
    json_t *o = store_run_json(&r);
    char *k = keys_of(o);
    CHECK_STR(k, "id task task_path status strategy seed generations_done started_at finished_at device "
                 "nvrtc_version driver_version evoeng_version baseline_id config");
    CHECK(json_integer_value(json_object_get(o, "id")) == run);
    CHECK_STR(json_string_value(json_object_get(o, "task")), "scale");
    CHECK(json_is_null(json_object_get(json_object_get(o, "device"), "name")));
    CHECK(json_integer_value(json_object_get(json_object_get(json_object_get(o, "config"), "dims"), "N")) == 4096);
    free(k);
    json_decref(o);
    o = store_candidate_json(&c, 0);
    k = keys_of(o);
    /* NULL metrics left out; params_key, compile_id, llm_request_id never printed */
    CHECK_STR(k, "id run generation operator status decision gate_stage params latency_us speedup");
    CHECK_STR(json_string_value(json_object_get(o, "gate_stage")), "full");
    CHECK(json_is_object(json_object_get(o, "params")) && json_integer_value(json_object_get(o, "run")) == run);
    free(k);
    json_decref(o);
    o = store_candidate_json(&c, 1);
    k = keys_of(o);
    CHECK_STR(k, "id run generation operator status decision gate_stage params latency_us speedup created_at "
                 "decided_at");
    free(k);
    json_decref(o);
    /* run --json's per-generation event: the row in print order, without
     * failed, wall_ms and finished_at; a generation with no valid child
     * (NaN best) prints null, not a broken object */
    GenerationRecord g = {.run_id = run, .generation = 3, .evaluated = 8, .valid = 7, .accepted = 2, .reverted = 5,
                          .failed = 1, .best_id = id, .best_latency_us = 8.0, .wall_ms = 12.5};
    o = store_generation_json(&g);
    k = keys_of(o);
    CHECK_STR(k, "run generation evaluated valid accepted reverted best_id best_latency_us");
    CHECK(json_integer_value(json_object_get(o, "run")) == run && json_integer_value(json_object_get(o, "valid")) == 7);
    free(k);
    json_decref(o);
    g.best_latency_us = NAN;
    o = store_generation_json(&g);
    CHECK(o && json_is_null(json_object_get(o, "best_latency_us")));
    json_decref(o);
    candidate_record_free(&c);
    run_record_free(&r);
    store_close(&s);
}

static void test_out_fit(void)
{
    char *t;
    CHECK_STR(t = out_fit("hello world", 8), "hello...");
    free(t);
    CHECK_STR(t = out_fit("hello world", 11), "hello world");
    free(t);
    CHECK_STR(t = out_fit("hello world", 0), "hello world");
    free(t);
    /* UTF-8: é and ö are one column each and never split */
    CHECK_STR(t = out_fit("h\xc3\xa9llo w\xc3\xb6rld", 8), "h\xc3\xa9llo...");
    free(t);
    CHECK_STR(t = out_fit("h\xc3\xa9llo w\xc3\xb6rld", 11), "h\xc3\xa9llo w\xc3\xb6rld");
    free(t);
    CHECK_STR(t = out_fit("abcdef", 2), "..");
    free(t);
}

static void test_out_width(void)
{
    int fd[2];
    CHECK(pipe(fd) == 0);                  /* not a terminal */
    unsetenv("COLUMNS");
    CHECK(out_width_for(fd[1], 0) == 0);   /* a pipe without COLUMNS: never cut */
    setenv("COLUMNS", "80", 1);
    CHECK(out_width_for(fd[1], 0) == 80);
    CHECK(out_width_for(fd[1], 1) == 0);   /* --wide */
    setenv("COLUMNS", "5", 1);
    CHECK(out_width_for(fd[1], 0) == 20);  /* at least 20 */
    setenv("COLUMNS", "wide", 1);
    CHECK(out_width_for(fd[1], 0) == 0);   /* not a number: ignored */
    unsetenv("COLUMNS");
    close(fd[0]);
    close(fd[1]);
}

int main(void)
{
    snprintf(tmpdir, sizeof(tmpdir), "/tmp/evo_test_inspect_XXXXXX");
    if (!mkdtemp(tmpdir))
        return 1;
    RUN(test_readonly_missing);
    RUN(test_readonly_reads_only);
    RUN(test_run_list);
    RUN(test_row_json);
    RUN(test_out_fit);
    RUN(test_out_width);
    char *cmd = xasprintf("rm -rf '%s'", tmpdir);
    if (system(cmd) != 0)
        fprintf(stderr, "could not remove %s\n", tmpdir);
    free(cmd);
    return test_report();
}

/* Unit tests for store: create, migrate, reopen, refuse foreign, corrupt
 * and newer databases, candidate round trips, views, gate stages (issue
 * 11): the version 4 migration of an older store, and survivors, bests and
 * views that only ever hold candidates gated on every shape. */
#include "testhelp.h"
#include "store_fixture.h"
#include "store/store.h"
#include "store/store_schema.h"

#include <math.h>
#include <sqlite3.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

static char tmpdir[256];

static char *tmp_path(const char *name)
{
    return xasprintf("%s/%s", tmpdir, name);
}

static int64_t add_run(Store *s)
{
    return fixture_run(s, "attention", "templates/attention/task.json", "{}", "{\"generations\":20}", 7);
}

/* A new store under tmpdir with one run: *path is a fresh string. */
static Store *open_with_run(const char *name, char **path, int64_t *run)
{
    Store *s = NULL;
    EvoErr err;
    *path = tmp_path(name);
    CHECK_MSG(store_open(&s, *path, &err) == 0, "%s", err.msg);
    *run = s ? add_run(s) : 0;
    return s;
}

static void test_create_reopen(void)
{
    char *p = tmp_path("sub/dir/pop.db");
    Store *s = NULL;
    EvoErr err;
    CHECK_MSG(store_open(&s, p, &err) == 0, "%s", err.msg);
    CHECK(store_schema_version(s) == store_schema_latest());
    CHECK(store_schema_latest() >= 2);
    int64_t run = add_run(s);
    CHECK(run > 0);
    store_close(&s);
    CHECK(s == NULL);

    CHECK_MSG(store_open(&s, p, &err) == 0, "%s", err.msg);
    RunRecord r;
    CHECK(store_run_get(s, 0, &r, &err) == 1);
    CHECK(r.id == run);
    CHECK_STR(r.status, "running");
    CHECK_STR(r.strategy, "evolve");
    CHECK(r.seed == 7);
    CHECK(r.started_at != NULL);
    free(r.status);
    r.status = xstrdup("completed");
    r.generations_done = 3;
    CHECK(store_run_update(s, &r, &err) == 0);
    run_record_free(&r);
    CHECK(store_run_get(s, run, &r, &err) == 1);
    CHECK_STR(r.status, "completed");
    CHECK(r.generations_done == 3);
    run_record_free(&r);
    CHECK(store_run_get(s, 999, &r, &err) == 0);
    store_close(&s);
    free(p);
}

static void test_candidates(void)
{
    char *p = tmp_path("cand.db");
    Store *s = NULL;
    EvoErr err;
    CHECK(store_open(&s, p, &err) == 0);
    int64_t run = add_run(s);

    CandidateRecord base;
    candidate_record_init(&base);
    base.run_id = run;
    base.generation = 0;
    base.operator = xstrdup("baseline");
    base.params_json = xstrdup("{\"BLOCK_M\":64}");
    base.params_key = xstrdup("BLOCK_M=64");
    base.source_hash = xstrdup("abc123");
    base.status = xstrdup("ok");
    base.decision = xstrdup("baseline");
    base.latency_us = 20.0;
    base.speedup = 1.0;
    base.ctas = 256;
    CompileRecord comp;
    compile_record_init(&comp);
    comp.cache_key = xstrdup("key1");
    comp.arch = xstrdup("sm_90");
    comp.options = xstrdup("-std=c++17");
    comp.ok = 1;
    comp.registers = 96;
    CHECK_MSG(store_candidate_insert(s, &base, "__global__ void k(){}", &comp, &err) == 0, "%s", err.msg);
    CHECK(base.id > 0);
    CHECK(base.compile_id == comp.id && comp.id > 0);

    CandidateRecord child;
    candidate_record_init(&child);
    child.run_id = run;
    child.generation = 1;
    child.parent_id = base.id;
    child.operator = xstrdup("mutate");
    child.params_json = xstrdup("{\"BLOCK_M\":128}");
    child.params_key = xstrdup("BLOCK_M=128");
    child.source_hash = xstrdup("abc123");  /* same source: deduplicated */
    child.status = xstrdup("ok");
    child.decision = xstrdup("accepted");
    child.latency_us = 10.0;
    child.speedup = 2.0;
    child.ratio_to_parent = 0.5;
    CompileRecord comp2;
    compile_record_init(&comp2);
    comp2.cache_key = xstrdup("key1");      /* same compile: reuses the row */
    comp2.arch = xstrdup("sm_90");
    comp2.options = xstrdup("-std=c++17");
    comp2.ok = 1;
    CHECK(store_candidate_insert(s, &child, "__global__ void k(){}", &comp2, &err) == 0);
    CHECK(comp2.id == comp.id);

    CandidateRecord bad;
    candidate_record_init(&bad);
    bad.run_id = run;
    bad.generation = 1;
    bad.parent_id = base.id;
    bad.operator = xstrdup("mutate");
    bad.params_json = xstrdup("{}");
    bad.params_key = xstrdup("X");
    bad.status = xstrdup("no_such_status");
    bad.decision = xstrdup("failed");
    CHECK(store_candidate_insert(s, &bad, NULL, NULL, &err) != 0);  /* CHECK constraint */
    CHECK(bad.id == 0);
    free(bad.status);
    bad.status = xstrdup("crashed");
    bad.error = xstrdup("CUDA_ERROR_ILLEGAL_ADDRESS");
    CHECK(store_candidate_insert(s, &bad, NULL, NULL, &err) == 0);

    CandidateRecord got;
    CHECK(store_candidate_get(s, child.id, &got, &err) == 1);
    CHECK_STR(got.operator, "mutate");
    CHECK(got.parent_id == base.id);
    CHECK(got.parent2_id == 0);
    CHECK(got.latency_us == 10.0);
    CHECK(isnan(got.cv));
    CHECK(got.ctas == -1);
    CHECK(got.compile_id == comp.id);
    candidate_record_free(&got);

    CHECK(store_candidate_find(s, run, "BLOCK_M=128", &err) == child.id);
    CHECK(store_candidate_find(s, run, "BLOCK_M=32", &err) == 0);

    CandidateRecord *list;
    int n;
    CHECK(store_candidate_list(s, run, STORE_SURVIVORS_BY_LATENCY, 0, &list, &n, &err) == 0);
    CHECK(n == 2);
    if (n == 2)
        CHECK(list[0].id == child.id && list[1].id == base.id);
    store_candidates_free(list, n);
    CHECK(store_candidate_list(s, run, STORE_ALL_BY_ID, 0, &list, &n, &err) == 0);
    CHECK(n == 3);
    store_candidates_free(list, n);

    char *src = store_source_get(s, "abc123", &err);
    CHECK_STR(src, "__global__ void k(){}");
    free(src);

    /* The views a user queries in the sqlite3 shell. */
    sqlite3 *db;
    CHECK(sqlite3_open(p, &db) == SQLITE_OK);
    sqlite3_stmt *st;
    CHECK(sqlite3_prepare_v2(db, "SELECT candidate_id FROM best_per_run WHERE run_id = ?", -1, &st, NULL) == SQLITE_OK);
    sqlite3_bind_int64(st, 1, run);
    CHECK(sqlite3_step(st) == SQLITE_ROW && sqlite3_column_int64(st, 0) == child.id);
    sqlite3_finalize(st);
    CHECK(sqlite3_prepare_v2(db, "SELECT count(*), max(depth) FROM lineage WHERE candidate_id = ?", -1, &st, NULL) == SQLITE_OK);
    sqlite3_bind_int64(st, 1, child.id);
    CHECK(sqlite3_step(st) == SQLITE_ROW && sqlite3_column_int(st, 0) == 2 && sqlite3_column_int(st, 1) == 1);
    sqlite3_finalize(st);
    sqlite3_close(db);

    GenerationRecord g = {.run_id = run, .generation = 1, .best_id = child.id, .best_latency_us = 10.0,
                          .evaluated = 2, .valid = 1, .accepted = 1, .reverted = 0, .failed = 1, .wall_ms = 5};
    CHECK(store_generation_put(s, &g, &err) == 0);
    g.evaluated = 3;
    CHECK(store_generation_put(s, &g, &err) == 0);  /* replaces */
    GenerationRecord *gl;
    CHECK(store_generation_list(s, run, &gl, &n, &err) == 0);
    CHECK(n == 1 && gl[0].evaluated == 3);
    for (int i = 0; i < n; i++)
        free(gl[i].finished_at);
    free(gl);

    candidate_record_free(&base);
    candidate_record_free(&child);
    candidate_record_free(&bad);
    compile_record_free(&comp);
    compile_record_free(&comp2);
    store_close(&s);
    free(p);
}

static void write_file(const char *p, const char *data, size_t n)
{
    FILE *f = fopen(p, "wb");
    fwrite(data, 1, n, f);
    fclose(f);
}

static int file_size(const char *p)
{
    struct stat sb;
    return stat(p, &sb) == 0 ? (int)sb.st_size : -1;
}

static void test_refuse_foreign(void)
{
    EvoErr err;
    Store *s = NULL;
    /* Not SQLite at all. */
    char *p = tmp_path("garbage.db");
    char junk[4096];
    for (size_t i = 0; i < sizeof(junk); i++)
        junk[i] = (char)(i * 7 + 3);
    write_file(p, junk, sizeof(junk));
    CHECK(store_open(&s, p, &err) != 0);
    CHECK(s == NULL);
    CHECK_CONTAINS(err.msg, "not an evoeng database");
    CHECK(file_size(p) == (int)sizeof(junk));
    free(p);

    /* A SQLite database of another program. */
    p = tmp_path("foreign.db");
    sqlite3 *db;
    sqlite3_open(p, &db);
    sqlite3_exec(db, "CREATE TABLE accounts(id INTEGER, name TEXT); INSERT INTO accounts VALUES (1,'x');",
                 NULL, NULL, NULL);
    sqlite3_close(db);
    int before = file_size(p);
    CHECK(store_open(&s, p, &err) != 0);
    CHECK_CONTAINS(err.msg, "not an evoeng database");
    CHECK(file_size(p) == before);
    sqlite3_open(p, &db);
    sqlite3_stmt *st;
    sqlite3_prepare_v2(db, "PRAGMA user_version", -1, &st, NULL);
    CHECK(sqlite3_step(st) == SQLITE_ROW && sqlite3_column_int(st, 0) == 0);
    sqlite3_finalize(st);
    sqlite3_close(db);
    free(p);

    /* Written by a newer evoeng. */
    p = tmp_path("newer.db");
    CHECK(store_open(&s, p, &err) == 0);
    store_close(&s);
    sqlite3_open(p, &db);
    char sql[64];
    snprintf(sql, sizeof(sql), "PRAGMA user_version = %d", store_schema_latest() + 5);
    sqlite3_exec(db, sql, NULL, NULL, NULL);
    sqlite3_close(db);
    CHECK(store_open(&s, p, &err) != 0);
    CHECK_CONTAINS(err.msg, "newer evoeng");
    sqlite3_open(p, &db);
    sqlite3_prepare_v2(db, "PRAGMA user_version", -1, &st, NULL);
    CHECK(sqlite3_step(st) == SQLITE_ROW && sqlite3_column_int(st, 0) == store_schema_latest() + 5);
    sqlite3_finalize(st);
    sqlite3_close(db);
    free(p);

    /* A truncated evoeng database. */
    p = tmp_path("trunc.db");
    CHECK(store_open(&s, p, &err) == 0);
    store_close(&s);
    char *data;
    size_t len;
    CHECK(file_read(p, &data, &len, &err) == 0);
    memset(data, 'Z', 100);  /* clobber the header */
    write_file(p, data, len);
    free(data);
    CHECK(store_open(&s, p, &err) != 0);
    CHECK_CONTAINS(err.msg, "not an evoeng database");
    free(p);
}

static void test_migrate_from_v1(void)
{
    /* Build a version-1 database by hand, as an older evoeng wrote it. */
    char *p = tmp_path("v1.db");
    sqlite3 *db;
    CHECK(sqlite3_open(p, &db) == SQLITE_OK);
    CHECK(sqlite3_exec(db, store_migrations[0], NULL, NULL, NULL) == SQLITE_OK);
    CHECK(sqlite3_exec(db, "PRAGMA application_id = 1163284293; PRAGMA user_version = 1;"
                           "INSERT INTO runs (task_name, task_path, task_json, config_json, evoeng_version,"
                           " seed, strategy, started_at) VALUES ('t','p','{}','{}','0.0.1',1,'evolve','now');",
                       NULL, NULL, NULL) == SQLITE_OK);
    sqlite3_close(db);

    Store *s = NULL;
    EvoErr err;
    CHECK_MSG(store_open(&s, p, &err) == 0, "%s", err.msg);
    CHECK(store_schema_version(s) == store_schema_latest());
    RunRecord r;
    CHECK(store_run_get(s, 0, &r, &err) == 1);
    CHECK_STR(r.task_name, "t");
    run_record_free(&r);
    LlmRequestRecord q;
    llm_request_record_init(&q);
    q.run_id = 1;
    q.mode = xstrdup("full");
    q.provider = xstrdup("openai");
    q.prompt = xstrdup("p");
    q.status = xstrdup("ok");
    CHECK_MSG(store_llm_request_insert(s, &q, &err) == 0, "%s", err.msg);  /* table from migration 2 */
    CHECK(q.id > 0);
    llm_request_record_free(&q);
    store_close(&s);
    free(p);
}

/* ---- gate stages (issue 11) ------------------------------------------- */

/* A candidate of run (not inserted); stage -1 leaves it to the store. */
static void cand_fill(CandidateRecord *c, int64_t run, int64_t parent, const char *key, const char *status,
                      const char *decision, double latency_us, int64_t stage)
{
    candidate_record_init(c);
    c->run_id = run;
    c->generation = parent ? 1 : 0;
    c->parent_id = parent;
    c->operator = xstrdup(parent ? "mutate" : "baseline");
    c->params_json = xstrdup("{}");
    c->params_key = xstrdup(key);
    c->status = xstrdup(status);
    c->decision = xstrdup(decision);
    c->latency_us = latency_us;
    c->speedup = isnan(latency_us) ? NAN : 20.0 / latency_us;
    c->gate_stage = stage;
}

/* Insert a candidate made by cand_fill. Returns its id. */
static int64_t add_cand(Store *s, int64_t run, int64_t parent, const char *key, const char *status,
                        const char *decision, double latency_us, int64_t stage)
{
    CandidateRecord c;
    cand_fill(&c, run, parent, key, status, decision, latency_us, stage);
    EvoErr err;
    CHECK_MSG(store_candidate_insert(s, &c, NULL, NULL, &err) == 0, "%s", err.msg);
    int64_t id = c.id;
    candidate_record_free(&c);
    return id;
}

static int64_t stage_of(Store *s, int64_t id)
{
    CandidateRecord c;
    EvoErr err;
    int64_t stage = -99;
    if (store_candidate_get(s, id, &c, &err) == 1)
        stage = c.gate_stage;
    candidate_record_free(&c);
    return stage;
}

/* One integer from a query with one bound id (-1 when no row). */
static int64_t query_int(const char *path, const char *sql, int64_t arg)
{
    sqlite3 *db;
    sqlite3_stmt *st = NULL;
    int64_t v = -1;
    CHECK(sqlite3_open(path, &db) == SQLITE_OK);
    CHECK_MSG(sqlite3_prepare_v2(db, sql, -1, &st, NULL) == SQLITE_OK, "%s: %s", sql, sqlite3_errmsg(db));
    if (sqlite3_bind_parameter_count(st) > 0)
        sqlite3_bind_int64(st, 1, arg);
    if (sqlite3_step(st) == SQLITE_ROW && sqlite3_column_type(st, 0) != SQLITE_NULL)
        v = sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    sqlite3_close(db);
    return v;
}

static void test_gate_stage_roundtrip(void)
{
    char *p;
    int64_t run;
    Store *s = open_with_run("stage.db", &p, &run);
    EvoErr err;
    int64_t base = add_cand(s, run, 0, "base", "ok", "baseline", 20.0, GATE_STAGE_FULL);
    /* Stated stages are kept, whatever the status says. */
    int64_t a = add_cand(s, run, base, "a", "ok", "reverted", 19.0, GATE_STAGE_BENCH);
    int64_t b = add_cand(s, run, base, "b", "incorrect", "failed", NAN, GATE_STAGE_BENCH);
    int64_t c = add_cand(s, run, base, "c", "compile_error", "failed", NAN, GATE_STAGE_NONE);
    CHECK(stage_of(s, base) == GATE_STAGE_FULL);
    CHECK(stage_of(s, a) == GATE_STAGE_BENCH);
    CHECK(stage_of(s, b) == GATE_STAGE_BENCH);
    CHECK(stage_of(s, c) == GATE_STAGE_NONE);
    /* Not stated (-1 from candidate_record_init): derived from the status. */
    CHECK(stage_of(s, add_cand(s, run, base, "d", "ok", "accepted", 15.0, -1)) == GATE_STAGE_FULL);
    CHECK(stage_of(s, add_cand(s, run, base, "e", "timeout", "failed", NAN, -1)) == GATE_STAGE_BENCH);
    CHECK(stage_of(s, add_cand(s, run, base, "f", "invalid", "failed", NAN, -1)) == GATE_STAGE_NONE);
    /* Out of range: the CHECK constraint refuses it. */
    CandidateRecord bad;
    cand_fill(&bad, run, base, "g", "ok", "accepted", 12.0, 3);
    CHECK(store_candidate_insert(s, &bad, NULL, NULL, &err) != 0);
    CHECK(bad.id == 0);
    candidate_record_free(&bad);
    CHECK_STR(gate_stage_name(GATE_STAGE_NONE), "none");
    CHECK_STR(gate_stage_name(GATE_STAGE_BENCH), "bench");
    CHECK_STR(gate_stage_name(GATE_STAGE_FULL), "full");
    CHECK_STR(gate_stage_name(7), "?");
    store_close(&s);
    free(p);
}

static void test_survivors_need_full_gate(void)
{
    char *p;
    int64_t run;
    Store *s = open_with_run("surv.db", &p, &run);
    EvoErr err;
    int64_t base = add_cand(s, run, 0, "base", "ok", "baseline", 20.0, GATE_STAGE_FULL);
    /* Faster than anything, accepted, status ok, but gated on the
     * benchmark shape only: never a survivor, parent or best. */
    int64_t fast = add_cand(s, run, base, "fast", "ok", "accepted", 5.0, GATE_STAGE_BENCH);
    int64_t full = add_cand(s, run, base, "full", "ok", "accepted", 10.0, GATE_STAGE_FULL);
    add_cand(s, run, base, "never", "ok", "accepted", 1.0, GATE_STAGE_NONE);

    CandidateRecord *list;
    int n;
    CHECK(store_candidate_list(s, run, STORE_SURVIVORS_BY_LATENCY, 0, &list, &n, &err) == 0);
    CHECK(n == 2);
    if (n == 2)
        CHECK(list[0].id == full && list[1].id == base);
    for (int i = 0; i < n; i++)
        CHECK(list[i].gate_stage == GATE_STAGE_FULL && list[i].id != fast);
    store_candidates_free(list, n);
    CHECK(store_candidate_list(s, 0, STORE_SURVIVORS_BY_LATENCY, 1, &list, &n, &err) == 0);  /* every run */
    CHECK(n == 1 && list[0].id == full);
    store_candidates_free(list, n);
    CHECK(store_candidate_list(s, run, STORE_ALL_BY_ID, 0, &list, &n, &err) == 0);
    CHECK(n == 4);  /* all of them are still listed */
    store_candidates_free(list, n);
    store_close(&s);

    CHECK(query_int(p, "SELECT candidate_id FROM best_per_run WHERE run_id = ?", run) == full);
    CHECK(query_int(p, "SELECT count(*) FROM survivors WHERE gate_stage <> 2", 0) == 0);
    CHECK(query_int(p, "SELECT count(*) FROM survivors WHERE run_id = ?", run) == 2);
    CHECK(query_int(p, "SELECT gate_stage FROM lineage WHERE candidate_id = ? AND depth = 0", fast) == 1);
    free(p);
}

/* A store written by an older evoeng (schema version 3, no gate_stage)
 * holding candidates of every status: opening it migrates to version 4,
 * backfills gate_stage and recreates the views. */
static void test_migrate_gate_stage(void)
{
    char *p = tmp_path("v3.db");
    sqlite3 *db;
    CHECK(sqlite3_open(p, &db) == SQLITE_OK);
    for (int v = 0; v < 3; v++)
        CHECK(sqlite3_exec(db, store_migrations[v], NULL, NULL, NULL) == SQLITE_OK);
    static const char *const rows[][3] = {
        /* status, decision, latency_us: ids 1..10 in this order */
        {"ok", "baseline", "20"},     {"ok", "accepted", "10"},  {"ok", "reverted", "19"},
        {"incorrect", "failed", NULL}, {"crashed", "failed", NULL}, {"timeout", "failed", NULL},
        {"launch_error", "failed", NULL}, {"resource", "failed", NULL}, {"compile_error", "failed", NULL},
        {"invalid", "failed", NULL},
    };
    static const int64_t want[] = {2, 2, 2, 1, 1, 1, 1, 0, 0, 0};
    CHECK(sqlite3_exec(db, "PRAGMA application_id = 1163284293; PRAGMA user_version = 3;"
                           "INSERT INTO runs (task_name, task_path, task_json, config_json, evoeng_version,"
                           " seed, strategy, started_at) VALUES ('t','p','{}','{}','0.0.3',1,'evolve','now');",
                       NULL, NULL, NULL) == SQLITE_OK);
    for (size_t i = 0; i < EVO_ARRAY_LEN(rows); i++) {
        char *sql = xasprintf("INSERT INTO candidates (run_id, generation, parent_id, operator, params_json,"
                              " params_key, status, decision, latency_us, speedup, created_at, decided_at)"
                              " VALUES (1, %d, %s, 'mutate', '{}', 'k%zu', '%s', '%s', %s, %s, 'now', 'now')",
                              i ? 1 : 0, i ? "1" : "NULL", i, rows[i][0], rows[i][1],
                              rows[i][2] ? rows[i][2] : "NULL", rows[i][2] ? "1.5" : "NULL");
        CHECK_MSG(sqlite3_exec(db, sql, NULL, NULL, NULL) == SQLITE_OK, "%s", sqlite3_errmsg(db));
        free(sql);
    }
    CHECK(sqlite3_exec(db, "INSERT INTO llm_requests (run_id, mode, provider, prompt, status, candidate_id,"
                           " created_at) VALUES (1, 'full', 'openai', 'p', 'ok', 4, 'now')",
                       NULL, NULL, NULL) == SQLITE_OK);
    sqlite3_close(db);

    Store *s = NULL;
    EvoErr err;
    CHECK_MSG(store_open(&s, p, &err) == 0, "%s", err.msg);
    CHECK(store_schema_version(s) == store_schema_latest());
    CHECK(store_schema_latest() >= 4);
    for (size_t i = 0; i < EVO_ARRAY_LEN(rows); i++)
        CHECK_MSG(stage_of(s, (int64_t)i + 1) == want[i], "%s: gate_stage %lld, expected %lld", rows[i][0],
                  (long long)stage_of(s, (int64_t)i + 1), (long long)want[i]);
    CandidateRecord *list;
    int n;
    CHECK(store_candidate_list(s, 1, STORE_SURVIVORS_BY_LATENCY, 0, &list, &n, &err) == 0);
    CHECK(n == 2 && list[0].id == 2 && list[1].id == 1);
    store_candidates_free(list, n);
    /* A new candidate after the migration: faster, stage A only. */
    int64_t fast = add_cand(s, 1, 1, "fast", "ok", "accepted", 2.0, GATE_STAGE_BENCH);
    store_close(&s);

    CHECK(query_int(p, "SELECT candidate_id FROM best_per_run WHERE run_id = ?", 1) == 2);
    CHECK(query_int(p, "SELECT count(*) FROM survivors WHERE id = ?", fast) == 0);
    CHECK(query_int(p, "SELECT count(*) FROM lineage WHERE candidate_id = ? AND gate_stage = 2", fast) == 1);
    /* The LLM child (#4, incorrect) has a stage but no full-gate speedup. */
    CHECK(query_int(p, "SELECT best_speedup IS NULL FROM llm_mode_stats WHERE run_id = ?", 1) == 1);
    CHECK(query_int(p, "SELECT count(*) FROM run_counts WHERE run_id = ?", 1) == 10);
    /* The column keeps its constraint after the ALTER TABLE. */
    CHECK(sqlite3_open(p, &db) == SQLITE_OK);
    CHECK(sqlite3_exec(db, "UPDATE candidates SET gate_stage = 5 WHERE id = 1", NULL, NULL, NULL) != SQLITE_OK);
    sqlite3_close(db);
    free(p);
}

int main(void)
{
    snprintf(tmpdir, sizeof(tmpdir), "/tmp/evo_test_store_XXXXXX");
    if (!mkdtemp(tmpdir)) {
        perror("mkdtemp");
        return 1;
    }
    RUN(test_create_reopen);
    RUN(test_candidates);
    RUN(test_refuse_foreign);
    RUN(test_migrate_from_v1);
    RUN(test_gate_stage_roundtrip);
    RUN(test_survivors_need_full_gate);
    RUN(test_migrate_gate_stage);
    char *cmd = xasprintf("rm -rf '%s'", tmpdir);
    if (system(cmd) != 0)
        fprintf(stderr, "cleanup failed\n");
    free(cmd);
    return test_report();
}

/*
 * Unit tests for the store as data (issue 35, items 8, 9 and 11): every
 * column read tolerates a NULL or a value of the wrong type with an error
 * that names the table, the row and the column; reading commands never
 * create or change a file (an empty one, a foreign one, an older store);
 * a locked store and an unreadable one are told apart from a file that is
 * not a database; one process at a time per run, the second told who
 * holds it.
 */
#include "testhelp.h"
#include "store_fixture.h"
#include "testdata.h"
#include "store/store.h"

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
    return fixture_run(s, "t", "t.json", "{}", "{}", 1);
}

static void sql(const char *path, const char *text)
{
    sqlite3 *db = NULL;
    CHECK(sqlite3_open(path, &db) == SQLITE_OK);
    char *msg = NULL;
    CHECK_MSG(sqlite3_exec(db, text, NULL, NULL, &msg) == SQLITE_OK, "%s: %s", text, msg ? msg : "");
    sqlite3_free(msg);
    sqlite3_close(db);
}

/* A store with one run and one candidate, then `edit` run on it with the
 * schema's constraints out of the way (as a crafted file would have). */
static char *crafted(const char *name, const char *edit)
{
    char *p = tmp_path(name);
    Store *s = NULL;
    EvoErr err;
    CHECK_MSG(store_open(&s, p, &err) == 0, "%s", err.msg);
    int64_t run = add_run(s);
    CandidateRecord c;
    candidate_record_init(&c);
    c.run_id = run;
    c.generation = 0;
    c.operator = xstrdup("baseline");
    c.params_json = xstrdup("{}");
    c.params_key = xstrdup("k");
    c.status = xstrdup("ok");
    c.decision = xstrdup("baseline");
    c.gate_stage = GATE_STAGE_FULL;
    c.latency_us = 5;
    CHECK_MSG(store_candidate_insert(s, &c, NULL, NULL, &err) == 0, "%s", err.msg);
    candidate_record_free(&c);
    store_close(&s);
    char *text = xasprintf("PRAGMA writable_schema = ON; PRAGMA ignore_check_constraints = ON; "
                           "UPDATE sqlite_master SET sql = replace(sql, 'NOT NULL', '') WHERE type = 'table'; "
                           "PRAGMA writable_schema = OFF;");
    sql(p, text);
    free(text);
    sql(p, edit);
    return p;
}

/* A store made by crafted(edit), read through reader: refused with want
 * in the message, nothing half-read handed back. */
static void expect_refused(const char *name, const char *edit, const char *want, int candidates)
{
    char *p = crafted(name, edit);
    Store *s = NULL;
    EvoErr err;
    CHECK_MSG(store_open_readonly(&s, p, &err) == 0, "%s", err.msg);
    if (candidates) {
        CandidateRecord c;
        CHECK(store_candidate_get(s, 1, &c, &err) == -1);
        CHECK_CONTAINS(err.msg, want);
        CandidateRecord *list = NULL;
        int n = -1;
        CHECK(store_candidate_list(s, 1, STORE_ALL_BY_ID, 0, &list, &n, &err) == -1 && n == 0);
    } else {
        RunRecord r;
        CHECK(store_run_get(s, 0, &r, &err) == -1);
        CHECK_CONTAINS(err.msg, want);
        CHECK(r.task_name == NULL && r.status == NULL);
        RunSummary *list = NULL;
        int n = -1;
        CHECK(store_run_list(s, &list, &n, &err) == -1 && n == 0 && list == NULL);
    }
    CHECK_CONTAINS(err.msg, want);
    store_close(&s);
    free(p);
}

static void test_null_and_types(void)
{
    static const struct {
        const char *edit, *want;
        int candidates;
    } cases[] = {
        {"UPDATE runs SET status = NULL", "runs row 1: column status holds NULL where text is expected", 0},
        {"UPDATE runs SET task_json = NULL", "column task_json holds NULL", 0},
        {"UPDATE runs SET seed = 'seven'", "column seed holds text where an integer is expected", 0},
        {"UPDATE runs SET generations_done = 2.5", "column generations_done holds a real number", 0},
        {"UPDATE runs SET config_json = x'00ff'", "column config_json holds a blob where text is expected", 0},
        {"UPDATE runs SET strategy = NULL", "column strategy holds NULL", 0},
        {"UPDATE candidates SET status = NULL", "column status holds NULL", 1},
        {"UPDATE candidates SET latency_us = 'fast'", "column latency_us holds text where a number is expected", 1},
        {"UPDATE candidates SET params_json = x'01'", "column params_json holds a blob", 1},
        {"UPDATE candidates SET parent_id = 'x'", "column parent_id holds text where an integer", 1},
    };
    for (size_t i = 0; i < EVO_ARRAY_LEN(cases); i++) {
        char name[32];
        snprintf(name, sizeof(name), "crafted%zu.db", i);
        expect_refused(name, cases[i].edit, cases[i].want, cases[i].candidates);
    }
    /* a NULL source text and a NULL kernel: errors, not a crash */
    char *p = crafted("src.db", "INSERT INTO sources (hash, text, bytes, created_at) VALUES ('h', NULL, 0, 'x'); "
                                "INSERT INTO kernels (key, hash, text, origin, created_at) VALUES ('kk', 'h', NULL, 'llm', 'x')");
    Store *s = NULL;
    EvoErr err = {{0}};
    CHECK(store_open_readonly(&s, p, &err) == 0);
    CHECK(store_source_get(s, "h", &err) == NULL);
    CHECK(store_kernel_get(s, "x@kk", &err) == NULL);
    CHECK_CONTAINS(err.msg, "is NULL");
    store_close(&s);
    free(p);
}

static int same_file(const char *a, const char *b)
{
    char *x = NULL, *y = NULL;
    size_t nx = 0, ny = 0;
    EvoErr err;
    int same = file_read(a, &x, &nx, &err) == 0 && file_read(b, &y, &ny, &err) == 0 && nx == ny &&
               memcmp(x, y, nx) == 0;
    free(x);
    free(y);
    return same;
}

static int exists(const char *p)
{
    struct stat st;
    return stat(p, &st) == 0;
}

static void test_readonly_unchanged(void)
{
    EvoErr err;
    Store *s = NULL;
    /* an empty file: refused, still empty, nothing beside it */
    char *p = tmp_path("empty.db");
    FILE *f = fopen(p, "w");
    if (f)
        fclose(f);
    CHECK(store_open_readonly(&s, p, &err) == -1);
    CHECK_CONTAINS(err.msg, "an empty file, not a population store");
    struct stat st;
    CHECK(stat(p, &st) == 0 && st.st_size == 0);
    char *wal = xasprintf("%s-wal", p), *shm = xasprintf("%s-shm", p);
    CHECK(!exists(wal) && !exists(shm));
    free(wal);
    free(shm);
    free(p);
    /* text, a foreign database: refused, byte for byte unchanged */
    p = tmp_path("text.db");
    f = fopen(p, "w");
    if (f) {
        fputs("hello, not a database\n", f);
        fclose(f);
    }
    CHECK(store_open_readonly(&s, p, &err) == -1);
    CHECK_CONTAINS(err.msg, "not an evoeng database (not an SQLite file)");
    free(p);
    p = tmp_path("foreign.db");
    sql(p, "CREATE TABLE t(x); INSERT INTO t VALUES (1)");
    char *copy = tmp_path("foreign.copy");
    char *cmd = xasprintf("cp '%s' '%s'", p, copy);
    CHECK(system(cmd) == 0);
    free(cmd);
    CHECK(store_open_readonly(&s, p, &err) == -1);
    CHECK_CONTAINS(err.msg, "not an evoeng database");
    CHECK(same_file(p, copy));
    free(copy);
    free(p);
    /* a store of schema 3: read through a copy migrated in memory */
    p = tmp_path("v0.db");
    sql(p, "PRAGMA application_id = 1163284293");
    copy = tmp_path("v0.copy");
    cmd = xasprintf("cp '%s' '%s'", p, copy);
    CHECK(system(cmd) == 0);
    free(cmd);
    CHECK_MSG(store_open_readonly(&s, p, &err) == 0, "%s", err.msg);
    CHECK(store_schema_version(s) == store_schema_latest());
    RunRecord r;
    CHECK(store_run_get(s, 0, &r, &err) == 0);
    store_close(&s);
    CHECK(same_file(p, copy));
    wal = xasprintf("%s-wal", p);
    CHECK(!exists(wal));
    free(wal);
    free(copy);
    free(p);
}

static void test_locked_and_unreadable(void)
{
    EvoErr err;
    Store *s = NULL;
    char *p = tmp_path("locked.db");
    CHECK(store_open(&s, p, &err) == 0);
    store_close(&s);
    /* another connection holds an exclusive lock */
    sqlite3 *db = NULL;
    sqlite3_open(p, &db);
    CHECK(sqlite3_exec(db, "PRAGMA locking_mode = EXCLUSIVE; BEGIN EXCLUSIVE;", NULL, NULL, NULL) == SQLITE_OK);
    double t0 = time_now_ms();
    CHECK(store_open(&s, p, &err) == -1);
    CHECK_CONTAINS(err.msg, "locked by another process");
    CHECK(strstr(err.msg, "not an evoeng database") == NULL);
    CHECK(time_now_ms() - t0 < 30000);
    sqlite3_exec(db, "COMMIT", NULL, NULL, NULL);
    sqlite3_close(db);
    free(p);
    /* SQLite cannot open its -wal file (here a directory stands in the
     * way, which stops root too): not "not an evoeng database" */
    p = tmp_path("noshm.db");
    CHECK(store_open(&s, p, &err) == 0);
    add_run(s);
    store_close(&s);
    char *shm = xasprintf("%s-wal", p);
    CHECK(mkdir(shm, 0755) == 0);
    CHECK(store_open(&s, p, &err) == -1);
    CHECK_CONTAINS(err.msg, "cannot read the store");
    CHECK(strstr(err.msg, "not an evoeng database") == NULL);
    CHECK(store_open_readonly(&s, p, &err) == -1);
    CHECK(strstr(err.msg, "not an evoeng database") == NULL);
    rmdir(shm);
    free(shm);
    free(p);
    /* a directory this user may not write (root may write anywhere) */
    if (geteuid() != 0) {
        char *dir = tmp_path("ro");
        CHECK(mkdir(dir, 0755) == 0);
        p = tmp_path("ro/pop.db");
        CHECK(store_open(&s, p, &err) == 0);
        add_run(s);
        store_close(&s);
        CHECK(chmod(dir, 0555) == 0);
        CHECK(store_open(&s, p, &err) == -1);
        CHECK(strstr(err.msg, "not an evoeng database") == NULL);
        CHECK_CONTAINS(err.msg, "must be writable");
        chmod(dir, 0755);
        free(p);
        free(dir);
    }
}

static void test_run_lock(void)
{
    EvoErr err;
    Store *a = NULL, *b = NULL;
    char *p = tmp_path("lock.db");
    CHECK(store_open(&a, p, &err) == 0 && store_open(&b, p, &err) == 0);
    int64_t run = add_run(a);                       /* a holds run 1 */
    CHECK(store_lock_run(b, run, &err) == -1);
    char pid[32];
    snprintf(pid, sizeof(pid), "pid %ld host ", (long)getpid());
    CHECK_CONTAINS(err.msg, "run 1 is in use by another process: ");
    CHECK_CONTAINS(err.msg, pid);
    CHECK_CONTAINS(err.msg, " since 20");
    CHECK(store_lock_run(a, run, &err) == 0);       /* taking one's own again is fine */
    char *lock = xasprintf("%s.run1.lock", p);
    CHECK(exists(lock));
    store_close(&a);                                /* released, and the file removed */
    CHECK(!exists(lock));
    CHECK_MSG(store_lock_run(b, run, &err) == 0, "%s", err.msg);
    store_close(&b);
    CHECK(!exists(lock));
    free(lock);
    free(p);
}

int main(void)
{
    snprintf(tmpdir, sizeof(tmpdir), "/tmp/evo_test_trust_XXXXXX");
    if (!mkdtemp(tmpdir)) {
        perror("mkdtemp");
        return 1;
    }
    RUN(test_null_and_types);
    RUN(test_readonly_unchanged);
    RUN(test_locked_and_unreadable);
    RUN(test_run_lock);
    if (test_rmtree(tmpdir) != 0)
        fprintf(stderr, "cleanup failed\n");
    return test_report();
}

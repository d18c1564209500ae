/*
 * store: opening a store (identity checks, pragmas, migrations keyed on
 * PRAGMA user_version, all in one transaction) and the runs table. See
 * store.h for the contract; candidates.c and requests.c hold the rest.
 */
#include "store/store.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <jansson.h>

#include "config.h"
#include "store/rows.h"
#include "store/store_schema.h"

/* 'EVOE': marks the file as an evoeng database. */
#define EVO_APPLICATION_ID 0x45564f45

/* The --json run object (docs/json-output.md) in the order it prints,
 * then the columns it never prints. */
static const Field run_fields[] = {
    FLDJ(RunRecord, task_name, F_TEXT, .req = 1, .jkey = "task"), FLDR(RunRecord, task_path, F_TEXT),
    FLDR(RunRecord, status, F_TEXT),           FLDR(RunRecord, strategy, F_TEXT),
    FLDR(RunRecord, seed, F_INT),              FLDR(RunRecord, generations_done, F_INT),
    FLDR(RunRecord, started_at, F_TEXT),       FLD(RunRecord, finished_at, F_TEXT),
    FLDJ(RunRecord, device_name, F_TEXT, .jkey = "device.name"),
    FLDJ(RunRecord, device_arch, F_TEXT, .jkey = "device.arch"),
    FLD(RunRecord, nvrtc_version, F_TEXT),     FLD(RunRecord, driver_version, F_TEXT),
    FLDR(RunRecord, evoeng_version, F_TEXT),   FLD(RunRecord, baseline_id, F_ID),
    FLDJ(RunRecord, config_json, F_TEXT, .req = 1, .jkey = "config", .put = fld_put_json_text, .show = FLD_OMIT),
    /* not in --json */
    FLDJ(RunRecord, task_json, F_TEXT, .req = 1, .show = FLD_HIDE),
    FLDJ(RunRecord, device_json, F_TEXT, .show = FLD_HIDE),
};

/* ---- open and migrate ------------------------------------------------ */

int store_schema_latest(void)
{
    return store_migration_count;
}

const char *store_path(const Store *s)
{
    return s->path;
}

static int pragma_int(Store *s, const char *pragma, int *out, EvoErr *err)
{
    char *sql = xasprintf("PRAGMA %s", pragma);
    sqlite3_stmt *st = NULL;
    int rc = sdb_prepare(s, sql, &st, err);
    free(sql);
    if (rc)
        return -1;
    if (sqlite3_step(st) == SQLITE_ROW)
        *out = sqlite3_column_int(st, 0);
    else
        rc = sdb_fail(s, err, pragma);
    sqlite3_finalize(st);
    return rc;
}

int store_schema_version(Store *s)
{
    int v = -1;
    pragma_int(s, "user_version", &v, NULL);
    return v;
}

/* Why the first read of a store failed, in words: a file that is not a
 * database, one another process holds locked, or one SQLite cannot open
 * for a reason of its own (its directory not writable, I/O) are told
 * apart. Returns -1. */
static int first_read_failed(Store *s, EvoErr *err)
{
    int code = sqlite3_extended_errcode(s->db) & 0xff;
    const char *msg = sqlite3_errmsg(s->db);
    if (code == SQLITE_NOTADB || code == SQLITE_CORRUPT)
        return err_set(err, "%s: not an evoeng database (%s)", s->path, msg);
    if (code == SQLITE_BUSY || code == SQLITE_LOCKED)
        return err_set(err, "%s: locked by another process (%s): another evoeng, or a sqlite3 shell, holds it; try "
                       "again once it is done", s->path, msg);
    if (code == SQLITE_CANTOPEN || code == SQLITE_READONLY || code == SQLITE_IOERR || code == SQLITE_PERM)
        return err_set(err, "%s: cannot read the store (%s): SQLite needs to write its -wal and -shm files beside it, "
                       "so the store and its directory must be writable", s->path, msg);
    return err_set(err, "%s: cannot read the store (%s)", s->path, msg);
}

/* Refuse files that are not ours before anything is written to them. */
static int check_identity(Store *s, EvoErr *err)
{
    int objects = 0, app = 0, ver = 0;
    sqlite3_stmt *st = NULL;
    /* SELECT count(*) FROM sqlite_master: also the first read, which fails
     * with SQLITE_NOTADB on a file that is not a database. */
    if (sqlite3_prepare_v2(s->db, "SELECT count(*) FROM sqlite_master", -1, &st, NULL) != SQLITE_OK ||
        sqlite3_step(st) != SQLITE_ROW) {
        first_read_failed(s, err);
        sqlite3_finalize(st);
        return -1;
    }
    objects = sqlite3_column_int(st, 0);
    sqlite3_finalize(st);
    if (pragma_int(s, "application_id", &app, err) || pragma_int(s, "user_version", &ver, err))
        return -1;
    if (app != 0 && app != EVO_APPLICATION_ID)
        return err_set(err, "%s: not an evoeng database (application_id 0x%08x belongs to another program)",
                       s->path, (unsigned)app);
    if (app == 0 && objects > 0)
        return err_set(err, "%s: not an evoeng database (it holds %d tables or indexes of another program); "
                       "choose another file with --db", s->path, objects);
    if (ver > store_migration_count)
        return err_set(err, "%s: written by a newer evoeng (schema version %d; this build knows up to %d); "
                       "upgrade evoeng or use another --db", s->path, ver, store_migration_count);
    if (ver < 0)
        return err_set(err, "%s: not an evoeng database (schema version %d)", s->path, ver);
    return 0;
}

/* PRAGMA foreign_key_check: 0 when it reports no row. */
static int fk_check(Store *s, EvoErr *err)
{
    sqlite3_stmt *st = NULL;
    if (sdb_prepare(s, "PRAGMA foreign_key_check", &st, err))
        return -1;
    int rc = sqlite3_step(st);
    int bad = rc == SQLITE_ROW;
    const char *table = bad ? (const char *)sqlite3_column_text(st, 0) : NULL;
    if (bad)
        err_set(err, "%s: migration left a broken foreign key in table %s", s->path, table ? table : "?");
    else if (rc != SQLITE_DONE)
        sdb_fail(s, err, "PRAGMA foreign_key_check");
    sqlite3_finalize(st);
    return bad || rc != SQLITE_DONE ? -1 : 0;
}

static int migrate(Store *s, EvoErr *err)
{
    int ver = store_schema_version(s);
    if (ver >= store_migration_count)
        return 0;
    /* Foreign keys off while migrating (a no-op inside a transaction, so
     * before BEGIN): a step that rebuilds a parent table (005) must not
     * cascade its DROP into the children. They are checked before COMMIT. */
    if (sdb_exec(s, "PRAGMA foreign_keys = OFF", err))
        return -1;
    if (sdb_exec(s, "BEGIN IMMEDIATE", err))
        goto fk_on;
    /* Re-read inside the write lock: another process may have migrated. */
    ver = store_schema_version(s);
    for (int v = ver; v < store_migration_count; v++) {
        if (sdb_exec(s, store_migrations[v], err)) {
            err_prefix(err, "migration %d", v + 1);
            goto fail;
        }
    }
    char pragmas[128];
    snprintf(pragmas, sizeof(pragmas), "PRAGMA application_id = %d; PRAGMA user_version = %d;",
             EVO_APPLICATION_ID, store_migration_count);
    if (sdb_exec(s, pragmas, err) || fk_check(s, err) || sdb_exec(s, "COMMIT", err))
        goto fail;
    return sdb_exec(s, "PRAGMA foreign_keys = ON", err);
fail:
    sqlite3_exec(s->db, "ROLLBACK", NULL, NULL, NULL);
fk_on:
    sqlite3_exec(s->db, "PRAGMA foreign_keys = ON", NULL, NULL, NULL);
    return -1;
}

/* A store is data from anywhere: its schema's views and triggers may not
 * call functions with side effects, it cannot be made inconsistent through
 * writable_schema, and no value read from it is longer than STORE_VALUE_MAX
 * (sqlite3_column_* then fails, and fld_read says so). */
static void harden(sqlite3 *db)
{
    sqlite3_db_config(db, SQLITE_DBCONFIG_TRUSTED_SCHEMA, 0, (int *)NULL);
    sqlite3_db_config(db, SQLITE_DBCONFIG_DEFENSIVE, 1, (int *)NULL);
    sqlite3_limit(db, SQLITE_LIMIT_LENGTH, STORE_VALUE_MAX);
    sqlite3_limit(db, SQLITE_LIMIT_ATTACHED, 0);
}

/* Open path with the given SQLite flags and check it is ours. Then, with
 * SQLITE_OPEN_READWRITE: set the pragmas and migrate; with
 * SQLITE_OPEN_READONLY: require the latest schema. create: make the parent
 * directory when absent. */
static int open_flags(Store **out, const char *path, int flags, int create, EvoErr *err)
{
    *out = NULL;
    Store *s = xcalloc(1, sizeof(*s));
    s->path = xstrdup(path);
    char *dir = path_dirname(path);
    struct stat sb;
    int rc = 0;
    if (create && stat(dir, &sb) != 0)
        rc = file_mkdirs(dir, err);
    free(dir);
    if (rc)
        goto fail;
    if (sqlite3_open_v2(path, &s->db, flags, NULL) != SQLITE_OK) {
        err_set(err, "%s: sqlite3_open_v2: %s", path, s->db ? sqlite3_errmsg(s->db) : "out of memory");
        goto fail;
    }
    harden(s->db);
    sqlite3_busy_timeout(s->db, 10000);
    if (check_identity(s, err))
        goto fail;
    if (sdb_exec(s, "PRAGMA journal_mode = WAL; PRAGMA foreign_keys = ON; PRAGMA synchronous = NORMAL;", err) ||
        migrate(s, err))
        goto fail;
    *out = s;
    return 0;
fail:
    store_close(&s);
    return -1;
}

int store_open(Store **out, const char *path, EvoErr *err)
{
    return open_flags(out, path, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, 1, err);
}

/* An older store for reading: the file's content copied into memory
 * (sqlite3_backup) and migrated there; the file is never written. */
static int migrate_in_memory(Store *s, EvoErr *err)
{
    sqlite3 *mem = NULL;
    if (sqlite3_open_v2(":memory:", &mem, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, NULL) != SQLITE_OK) {
        sqlite3_close_v2(mem);
        return err_set(err, "%s: sqlite3_open_v2(:memory:) failed", s->path);
    }
    harden(mem);
    sqlite3_backup *b = sqlite3_backup_init(mem, "main", s->db, "main");
    int rc = b ? sqlite3_backup_step(b, -1) : SQLITE_ERROR;
    sqlite3_backup_finish(b);
    if (rc != SQLITE_DONE) {
        err_set(err, "%s: copying an older store into memory to read it: %s", s->path, sqlite3_errmsg(mem));
        sqlite3_close_v2(mem);
        return -1;
    }
    sqlite3_close_v2(s->db);
    s->db = mem;
    return migrate(s, err);
}

/* The first bytes of every SQLite file. */
static const char sqlite_magic[16] = "SQLite format 3";

int store_open_readonly(Store **out, const char *path, EvoErr *err)
{
    *out = NULL;
    struct stat sb;
    if (stat(path, &sb) != 0)
        return err_set(err, "%s: no population store there (stat: %s); check --db, or create one with "
                       "'evoeng run'", path, strerror(errno));
    if (!S_ISREG(sb.st_mode))
        return err_set(err, "%s: not a population store (not a regular file)", path);
    if (sb.st_size == 0)
        return err_set(err, "%s: an empty file, not a population store (reading commands never write a store; "
                       "'evoeng run --db %s' would make one)", path, path);
    char head[16] = {0};
    FILE *f = fopen(path, "rb");
    size_t got = f ? fread(head, 1, sizeof(head), f) : 0;
    if (f)
        fclose(f);
    if (got != sizeof(head) || memcmp(head, sqlite_magic, sizeof(head)) != 0)
        return err_set(err, "%s: not an evoeng database (not an SQLite file)", path);
    /* Writable: opened without SQLITE_OPEN_CREATE, then PRAGMA query_only,
     * so no statement can write (a read-only connection to a WAL database
     * would leave -wal and -shm files behind, where a writable one removes
     * what it made on close). Not writable (a read-only mount, another
     * user's): SQLITE_OPEN_READONLY. A -wal file that was there before is
     * left as it was: no checkpoint into the store on close. */
    int flags = access(path, W_OK) == 0 ? SQLITE_OPEN_READWRITE : SQLITE_OPEN_READONLY;
    char *wal = xasprintf("%s-wal", path);
    int had_wal = access(wal, F_OK) == 0;
    free(wal);
    Store *s = xcalloc(1, sizeof(*s));
    s->path = xstrdup(path);
    if (sqlite3_open_v2(path, &s->db, flags, NULL) != SQLITE_OK) {
        err_set(err, "%s: sqlite3_open_v2: %s", path, s->db ? sqlite3_errmsg(s->db) : "out of memory");
        goto fail;
    }
    harden(s->db);
    sqlite3_busy_timeout(s->db, 10000);
    if (had_wal)
        sqlite3_db_config(s->db, SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE, 1, (int *)NULL);
    if (sdb_exec(s, "PRAGMA query_only = ON", err) || check_identity(s, err))
        goto fail;
    if (store_schema_version(s) < store_migration_count &&
        (migrate_in_memory(s, err) || sdb_exec(s, "PRAGMA query_only = ON", err)))
        goto fail;
    if (sdb_exec(s, "PRAGMA foreign_keys = ON", err))
        goto fail;
    *out = s;
    return 0;
fail:
    store_close(&s);
    return -1;
}

void store_close(Store **ps)
{
    Store *s = *ps;
    if (!s)
        return;
    store_unlock_runs(s);
    if (s->db)
        sqlite3_close_v2(s->db);
    free(s->path);
    free(s);
    *ps = NULL;
}

void run_record_free(RunRecord *r)
{
    fld_free(run_fields, NFIELDS(run_fields), r);
    r->id = 0;
}

/* ---- runs ------------------------------------------------------------ */

json_t *store_run_json(const RunRecord *r)
{
    return fld_row_json(r->id, run_fields, NFIELDS(run_fields), r, 0);
}

int store_run_insert(Store *s, RunRecord *r, EvoErr *err)
{
    if (!r->started_at)
        r->started_at = time_iso8601();
    if (!r->evoeng_version)
        r->evoeng_version = xstrdup(EVO_VERSION);
    if (!r->status)
        r->status = xstrdup("running");
    if (r->generations_done < 0)
        r->generations_done = 0;
    if (sdb_insert(s, "runs", run_fields, NFIELDS(run_fields), r, &r->id, err))
        return -1;
    return store_lock_run(s, r->id, err);
}

int store_run_get(Store *s, int64_t id, RunRecord *r, EvoErr *err)
{
    memset(r, 0, sizeof(*r));
    if (id == 0) {
        /* SELECT max(id) FROM runs */
        sqlite3_stmt *st = NULL;
        if (sdb_prepare(s, "SELECT max(id) FROM runs", &st, err))
            return -1;
        if (sqlite3_step(st) == SQLITE_ROW)
            id = sqlite3_column_int64(st, 0);
        sqlite3_finalize(st);
        if (id == 0)
            return 0;
    }
    return sdb_select_by_id(s, "runs", run_fields, NFIELDS(run_fields), id, r, &r->id, err);
}

int store_run_update(Store *s, const RunRecord *r, EvoErr *err)
{
    /* UPDATE runs SET status=?, generations_done=?, baseline_id=?, finished_at=? WHERE id=? */
    sqlite3_stmt *st = NULL;
    if (sdb_prepare(s, "UPDATE runs SET status = ?, generations_done = ?, baseline_id = ?, "
                   "finished_at = ? WHERE id = ?", &st, err))
        return -1;
    sqlite3_bind_text(st, 1, r->status ? r->status : "running", -1, SQLITE_TRANSIENT);
    sqlite3_bind_int64(st, 2, r->generations_done < 0 ? 0 : r->generations_done);
    if (r->baseline_id > 0)
        sqlite3_bind_int64(st, 3, r->baseline_id);
    else
        sqlite3_bind_null(st, 3);
    if (r->finished_at)
        sqlite3_bind_text(st, 4, r->finished_at, -1, SQLITE_TRANSIENT);
    else
        sqlite3_bind_null(st, 4);
    sqlite3_bind_int64(st, 5, r->id);
    int rc = sqlite3_step(st) == SQLITE_DONE ? 0 : sdb_fail(s, err, "UPDATE runs");
    sqlite3_finalize(st);
    return rc;
}

/* SELECT id, <run columns>, (SELECT count(*) FROM candidates c WHERE
 *        c.run_id = runs.id), b.candidate_id, b.latency_us, b.speedup
 * FROM runs LEFT JOIN best_per_run b ON b.run_id = runs.id ORDER BY runs.id */
int store_run_list(Store *s, RunSummary **out, int *n, EvoErr *err)
{
    *out = NULL;
    *n = 0;
    sqlite3_stmt *st = NULL;
    int nf = NFIELDS(run_fields);
    if (sdb_prepare_select(s, 1, run_fields, nf, &st, err,
                           ", (SELECT count(*) FROM candidates c WHERE c.run_id = runs.id), b.candidate_id, "
                           "b.latency_us, b.speedup FROM runs LEFT JOIN best_per_run b ON b.run_id = runs.id "
                           "ORDER BY runs.id"))
        return -1;
    RunSummary *l = NULL;
    int cap = 0, rc, bad = 0;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        if (*n == cap) {
            cap = cap ? 2 * cap : 8;
            l = xrealloc(l, (size_t)cap * sizeof(*l));
        }
        RunSummary *r = &l[(*n)++];
        memset(r, 0, sizeof(*r));
        r->run.id = sqlite3_column_int64(st, 0);
        if (fld_read(s, st, 1, run_fields, nf, &r->run, "runs", err) < 0) {
            (*n)--;
            bad = 1;
            break;
        }
        r->candidates = sqlite3_column_int64(st, 1 + nf);
        r->best_id = sqlite3_column_int64(st, 2 + nf);
        r->best_latency_us = sqlite3_column_type(st, 3 + nf) == SQLITE_NULL ? NAN : sqlite3_column_double(st, 3 + nf);
        r->best_speedup = sqlite3_column_type(st, 4 + nf) == SQLITE_NULL ? NAN : sqlite3_column_double(st, 4 + nf);
    }
    if (rc != SQLITE_DONE) {
        if (!bad)
            sdb_fail(s, err, "SELECT FROM runs");
        sqlite3_finalize(st);
        store_run_list_free(l, *n);
        *n = 0;
        return -1;
    }
    sqlite3_finalize(st);
    *out = l;
    return 0;
}

void store_run_list_free(RunSummary *list, int n)
{
    for (int i = 0; i < n; i++)
        run_record_free(&list[i].run);
    free(list);
}

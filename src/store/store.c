/*
 * store: opening a store (identity checks, pragmas, migrations keyed on
 * PRAGMA user_version, all in one transaction) and the runs table. See
 * store.h for the contract; candidates.c and requests.c hold the rest.
 */
#include "store_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "config.h"
#include "store_schema.h"

/* 'EVOE': marks the file as an evoeng database. */
#define EVO_APPLICATION_ID 0x45564f45

static const Field run_fields[] = {
    FLD(RunRecord, task_name, F_TEXT), FLD(RunRecord, task_path, F_TEXT),
    FLD(RunRecord, task_json, F_TEXT), FLD(RunRecord, config_json, F_TEXT),
    FLD(RunRecord, device_name, F_TEXT), FLD(RunRecord, device_arch, F_TEXT),
    FLD(RunRecord, device_json, F_TEXT), FLD(RunRecord, nvrtc_version, F_TEXT),
    FLD(RunRecord, driver_version, F_TEXT), FLD(RunRecord, evoeng_version, F_TEXT),
    FLD(RunRecord, seed, F_INT), FLD(RunRecord, strategy, F_TEXT),
    FLD(RunRecord, status, F_TEXT), FLD(RunRecord, generations_done, F_INT),
    FLD(RunRecord, baseline_id, F_ID), FLD(RunRecord, started_at, F_TEXT),
    FLD(RunRecord, finished_at, F_TEXT),
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

/* Refuse files that are not ours before anything is written to them. */
static int check_identity(Store *s, EvoErr *err)
{
    int objects = 0, app = 0, ver = 0;
    sqlite3_stmt *st = NULL;
    /* SELECT count(*) FROM sqlite_master: also the first read, which fails
     * with SQLITE_NOTADB on a file that is not a database. */
    if (sqlite3_prepare_v2(s->db, "SELECT count(*) FROM sqlite_master", -1, &st, NULL) != SQLITE_OK ||
        sqlite3_step(st) != SQLITE_ROW) {
        err_set(err, "%s: not an evoeng database (%s)", s->path, sqlite3_errmsg(s->db));
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
    return 0;
}

static int migrate(Store *s, EvoErr *err)
{
    int ver = store_schema_version(s);
    if (ver >= store_migration_count)
        return 0;
    if (sdb_exec(s, "BEGIN IMMEDIATE", err))
        return -1;
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
    if (sdb_exec(s, pragmas, err) || sdb_exec(s, "COMMIT", err))
        goto fail;
    return 0;
fail:
    sqlite3_exec(s->db, "ROLLBACK", NULL, NULL, NULL);
    return -1;
}

int store_open(Store **out, const char *path, EvoErr *err)
{
    *out = NULL;
    Store *s = xcalloc(1, sizeof(*s));
    s->path = xstrdup(path);
    char *dir = path_dirname(path);
    struct stat sb;
    int rc = 0;
    if (stat(dir, &sb) != 0)
        rc = file_mkdirs(dir, err);
    free(dir);
    if (rc)
        goto fail;
    if (sqlite3_open_v2(path, &s->db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, NULL) != SQLITE_OK) {
        err_set(err, "%s: sqlite3_open_v2: %s", path, s->db ? sqlite3_errmsg(s->db) : "out of memory");
        goto fail;
    }
    sqlite3_busy_timeout(s->db, 10000);
    if (check_identity(s, err))
        goto fail;
    if (sdb_exec(s, "PRAGMA journal_mode = WAL; PRAGMA foreign_keys = ON; PRAGMA synchronous = NORMAL;", err))
        goto fail;
    if (migrate(s, err))
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
    return sdb_insert(s, "runs", run_fields, NFIELDS(run_fields), r, &r->id, err);
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

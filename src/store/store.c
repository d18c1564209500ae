/*
 * store: SQLite persistence for runs, candidates, sources, compiles,
 * generations and LLM requests. See store.h for the contract.
 *
 * Rows map to structs through field tables (column name, type, offset), so
 * one table drives both the INSERT and the SELECT of a record and the two
 * cannot drift apart. Only column names from these tables are ever pasted
 * into SQL; every value is bound.
 */
#include "store.h"

#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sqlite3.h>
#include <sys/stat.h>

#include "config.h"
#include "store_schema.h"

/* 'EVOE': marks the file as an evoeng database. */
#define EVO_APPLICATION_ID 0x45564f45

struct Store {
    sqlite3 *db;
    char    *path;
};

/* ---- field tables ---------------------------------------------------- */

typedef enum FieldType { F_ID, F_INT, F_REAL, F_TEXT } FieldType;

typedef struct Field {
    const char *col;
    FieldType   type;
    size_t      off;
} Field;

#define FLD(T, name, type) {#name, type, offsetof(T, name)}

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

static const Field compile_fields[] = {
    FLD(CompileRecord, cache_key, F_TEXT), FLD(CompileRecord, source_hash, F_TEXT),
    FLD(CompileRecord, arch, F_TEXT), FLD(CompileRecord, options, F_TEXT),
    FLD(CompileRecord, nvrtc_version, F_TEXT), FLD(CompileRecord, ok, F_INT),
    FLD(CompileRecord, log, F_TEXT), FLD(CompileRecord, registers, F_INT),
    FLD(CompileRecord, smem, F_INT), FLD(CompileRecord, spill_stores, F_INT),
    FLD(CompileRecord, spill_loads, F_INT), FLD(CompileRecord, stack, F_INT),
    FLD(CompileRecord, resources_json, F_TEXT), FLD(CompileRecord, compile_ms, F_REAL),
    FLD(CompileRecord, created_at, F_TEXT),
};

static const Field candidate_fields[] = {
    FLD(CandidateRecord, run_id, F_ID), FLD(CandidateRecord, generation, F_INT),
    FLD(CandidateRecord, parent_id, F_ID), FLD(CandidateRecord, parent2_id, F_ID),
    FLD(CandidateRecord, operator, F_TEXT), FLD(CandidateRecord, params_json, F_TEXT),
    FLD(CandidateRecord, params_key, F_TEXT), FLD(CandidateRecord, source_hash, F_TEXT),
    FLD(CandidateRecord, compile_id, F_ID), FLD(CandidateRecord, status, F_TEXT),
    FLD(CandidateRecord, decision, F_TEXT), FLD(CandidateRecord, error, F_TEXT),
    FLD(CandidateRecord, gate_json, F_TEXT), FLD(CandidateRecord, log, F_TEXT),
    FLD(CandidateRecord, latency_us, F_REAL), FLD(CandidateRecord, p90_us, F_REAL),
    FLD(CandidateRecord, cv, F_REAL), FLD(CandidateRecord, ratio_to_parent, F_REAL),
    FLD(CandidateRecord, ratio_spread, F_REAL), FLD(CandidateRecord, speedup, F_REAL),
    FLD(CandidateRecord, ctas, F_INT), FLD(CandidateRecord, ctas_total, F_INT),
    FLD(CandidateRecord, threads, F_INT), FLD(CandidateRecord, registers, F_INT),
    FLD(CandidateRecord, smem_static, F_INT), FLD(CandidateRecord, smem_dynamic, F_INT),
    FLD(CandidateRecord, occupancy, F_INT), FLD(CandidateRecord, waves, F_REAL),
    FLD(CandidateRecord, tflops, F_REAL), FLD(CandidateRecord, gbps, F_REAL),
    FLD(CandidateRecord, pct_peak_flops, F_REAL), FLD(CandidateRecord, pct_peak_bw, F_REAL),
    FLD(CandidateRecord, metrics_json, F_TEXT), FLD(CandidateRecord, compile_ms, F_REAL),
    FLD(CandidateRecord, gate_ms, F_REAL), FLD(CandidateRecord, time_ms, F_REAL),
    FLD(CandidateRecord, llm_request_id, F_ID), FLD(CandidateRecord, rationale, F_TEXT),
    FLD(CandidateRecord, created_at, F_TEXT), FLD(CandidateRecord, decided_at, F_TEXT),
};

static const Field generation_fields[] = {
    FLD(GenerationRecord, run_id, F_ID), FLD(GenerationRecord, generation, F_INT),
    FLD(GenerationRecord, best_id, F_ID), FLD(GenerationRecord, best_latency_us, F_REAL),
    FLD(GenerationRecord, evaluated, F_INT), FLD(GenerationRecord, valid, F_INT),
    FLD(GenerationRecord, accepted, F_INT), FLD(GenerationRecord, reverted, F_INT),
    FLD(GenerationRecord, failed, F_INT), FLD(GenerationRecord, wall_ms, F_REAL),
    FLD(GenerationRecord, finished_at, F_TEXT),
};

static const Field llm_fields[] = {
    FLD(LlmRequestRecord, run_id, F_ID), FLD(LlmRequestRecord, generation, F_INT),
    FLD(LlmRequestRecord, parent_id, F_ID), FLD(LlmRequestRecord, candidate_id, F_ID),
    FLD(LlmRequestRecord, mode, F_TEXT), FLD(LlmRequestRecord, provider, F_TEXT),
    FLD(LlmRequestRecord, model, F_TEXT), FLD(LlmRequestRecord, url, F_TEXT),
    FLD(LlmRequestRecord, prompt, F_TEXT), FLD(LlmRequestRecord, reply, F_TEXT),
    FLD(LlmRequestRecord, rationale, F_TEXT), FLD(LlmRequestRecord, input_tokens, F_INT),
    FLD(LlmRequestRecord, output_tokens, F_INT), FLD(LlmRequestRecord, latency_ms, F_REAL),
    FLD(LlmRequestRecord, http_status, F_INT), FLD(LlmRequestRecord, attempts, F_INT),
    FLD(LlmRequestRecord, status, F_TEXT), FLD(LlmRequestRecord, error, F_TEXT),
    FLD(LlmRequestRecord, created_at, F_TEXT),
};

#define NFIELDS(t) ((int)EVO_ARRAY_LEN(t))

static void fields_init(const Field *f, int n, void *rec)
{
    for (int i = 0; i < n; i++) {
        char *p = (char *)rec + f[i].off;
        switch (f[i].type) {
        case F_ID:   *(int64_t *)p = 0; break;
        case F_INT:  *(int64_t *)p = -1; break;
        case F_REAL: *(double *)p = NAN; break;
        case F_TEXT: *(char **)p = NULL; break;
        }
    }
}

static void fields_free(const Field *f, int n, void *rec)
{
    for (int i = 0; i < n; i++)
        if (f[i].type == F_TEXT)
            free(*(char **)((char *)rec + f[i].off));
    fields_init(f, n, rec);
}

/* Bind fields to parameters first..first+n-1. */
static int fields_bind(sqlite3_stmt *st, int first, const Field *f, int n, const void *rec)
{
    for (int i = 0; i < n; i++) {
        const char *p = (const char *)rec + f[i].off;
        int k = first + i, rc = SQLITE_OK;
        switch (f[i].type) {
        case F_ID: {
            int64_t v = *(const int64_t *)p;
            rc = v > 0 ? sqlite3_bind_int64(st, k, v) : sqlite3_bind_null(st, k);
            break;
        }
        case F_INT: {
            int64_t v = *(const int64_t *)p;
            rc = v >= 0 ? sqlite3_bind_int64(st, k, v) : sqlite3_bind_null(st, k);
            break;
        }
        case F_REAL: {
            double v = *(const double *)p;
            rc = isfinite(v) ? sqlite3_bind_double(st, k, v) : sqlite3_bind_null(st, k);
            break;
        }
        case F_TEXT: {
            const char *v = *(char *const *)p;
            rc = v ? sqlite3_bind_text(st, k, v, -1, SQLITE_TRANSIENT) : sqlite3_bind_null(st, k);
            break;
        }
        }
        if (rc != SQLITE_OK)
            return rc;
    }
    return SQLITE_OK;
}

/* Read columns first..first+n-1 of the current row into rec. */
static void fields_read(sqlite3_stmt *st, int first, const Field *f, int n, void *rec)
{
    fields_init(f, n, rec);
    for (int i = 0; i < n; i++) {
        char *p = (char *)rec + f[i].off;
        int k = first + i;
        if (sqlite3_column_type(st, k) == SQLITE_NULL)
            continue;
        switch (f[i].type) {
        case F_ID:
        case F_INT:  *(int64_t *)p = sqlite3_column_int64(st, k); break;
        case F_REAL: *(double *)p = sqlite3_column_double(st, k); break;
        case F_TEXT: *(char **)p = xstrdup((const char *)sqlite3_column_text(st, k)); break;
        }
    }
}

/* "a, b, c" and "?, ?, ?" for a field table. */
static char *fields_columns(const Field *f, int n)
{
    StrBuf sb = {0};
    for (int i = 0; i < n; i++)
        sb_printf(&sb, "%s%s", i ? ", " : "", f[i].col);
    return sb_take(&sb);
}

static char *fields_placeholders(int n)
{
    StrBuf sb = {0};
    for (int i = 0; i < n; i++)
        sb_append(&sb, i ? ", ?" : "?");
    return sb_take(&sb);
}

/* ---- statement helpers ----------------------------------------------- */

static int db_fail(Store *s, EvoErr *err, const char *what)
{
    return err_set(err, "%s: %s: %s", store_path(s), what, sqlite3_errmsg(s->db));
}

static int prepare(Store *s, const char *sql, sqlite3_stmt **st, EvoErr *err)
{
    if (sqlite3_prepare_v2(s->db, sql, -1, st, NULL) != SQLITE_OK)
        return db_fail(s, err, "sqlite3_prepare_v2");
    return 0;
}

static int exec_sql(Store *s, const char *sql, EvoErr *err)
{
    char *msg = NULL;
    if (sqlite3_exec(s->db, sql, NULL, NULL, &msg) != SQLITE_OK) {
        err_set(err, "%s: %s", store_path(s), msg ? msg : sqlite3_errmsg(s->db));
        sqlite3_free(msg);
        return -1;
    }
    return 0;
}

/* Insert a record from its field table: INSERT INTO table (cols) VALUES (?...). */
static int insert_fields(Store *s, const char *table, const Field *f, int n, const void *rec,
                         int64_t *id, EvoErr *err)
{
    char *cols = fields_columns(f, n), *ph = fields_placeholders(n);
    char *sql = xasprintf("INSERT INTO %s (%s) VALUES (%s)", table, cols, ph);
    free(cols);
    free(ph);
    sqlite3_stmt *st = NULL;
    int rc = prepare(s, sql, &st, err);
    free(sql);
    if (rc)
        return -1;
    if (fields_bind(st, 1, f, n, rec) != SQLITE_OK || sqlite3_step(st) != SQLITE_DONE) {
        rc = db_fail(s, err, table);
    } else if (id) {
        *id = sqlite3_last_insert_rowid(s->db);
    }
    sqlite3_finalize(st);
    return rc;
}

/* SELECT id, <cols> FROM table WHERE id = ?. Returns 1, 0 or -1. */
static int select_by_id(Store *s, const char *table, const Field *f, int n, int64_t id,
                        void *rec, int64_t *id_out, EvoErr *err)
{
    char *cols = fields_columns(f, n);
    char *sql = xasprintf("SELECT id, %s FROM %s WHERE id = ?", cols, table);
    free(cols);
    sqlite3_stmt *st = NULL;
    int rc = prepare(s, sql, &st, err);
    free(sql);
    if (rc)
        return -1;
    sqlite3_bind_int64(st, 1, id);
    int step = sqlite3_step(st);
    if (step == SQLITE_ROW) {
        *id_out = sqlite3_column_int64(st, 0);
        fields_read(st, 1, f, n, rec);
        rc = 1;
    } else if (step == SQLITE_DONE) {
        rc = 0;
    } else {
        rc = db_fail(s, err, table);
    }
    sqlite3_finalize(st);
    return rc;
}

/* Step st to the end, reading each row into a growing array of records of
 * `size` bytes: column 0 into the int64 at id_off (unless id_off is
 * NO_ID), the field table from the next column. On error, frees what was
 * read with free_one. Finalizes st. Returns 0 or -1 (err names `what`). */
#define NO_ID ((size_t)-1)
static int read_rows(Store *s, sqlite3_stmt *st, const Field *f, int nf, size_t size, size_t id_off,
                     void (*free_one)(void *), const char *what, void **out, int *n, EvoErr *err)
{
    int cap = 0, step;
    char *list = NULL;
    *out = NULL;
    *n = 0;
    while ((step = sqlite3_step(st)) == SQLITE_ROW) {
        if (*n == cap) {
            cap = cap ? cap * 2 : 16;
            list = xrealloc(list, (size_t)cap * size);
        }
        char *rec = list + (size_t)*n * size;
        memset(rec, 0, size);
        int first = 0;
        if (id_off != NO_ID) {
            *(int64_t *)(rec + id_off) = sqlite3_column_int64(st, 0);
            first = 1;
        }
        fields_read(st, first, f, nf, rec);
        (*n)++;
    }
    sqlite3_finalize(st);
    if (step != SQLITE_DONE) {
        for (int i = 0; i < *n; i++)
            free_one(list + (size_t)i * size);
        free(list);
        *n = 0;
        return db_fail(s, err, what);
    }
    *out = list;
    return 0;
}

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
    int rc = prepare(s, sql, &st, err);
    free(sql);
    if (rc)
        return -1;
    if (sqlite3_step(st) == SQLITE_ROW)
        *out = sqlite3_column_int(st, 0);
    else
        rc = db_fail(s, err, pragma);
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
    if (exec_sql(s, "BEGIN IMMEDIATE", err))
        return -1;
    /* Re-read inside the write lock: another process may have migrated. */
    ver = store_schema_version(s);
    for (int v = ver; v < store_migration_count; v++) {
        if (exec_sql(s, store_migrations[v], err)) {
            err_prefix(err, "migration %d", v + 1);
            goto fail;
        }
    }
    char pragmas[128];
    snprintf(pragmas, sizeof(pragmas), "PRAGMA application_id = %d; PRAGMA user_version = %d;",
             EVO_APPLICATION_ID, store_migration_count);
    if (exec_sql(s, pragmas, err) || exec_sql(s, "COMMIT", err))
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
    if (exec_sql(s, "PRAGMA journal_mode = WAL; PRAGMA foreign_keys = ON; PRAGMA synchronous = NORMAL;", err))
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

/* ---- records --------------------------------------------------------- */

void candidate_record_init(CandidateRecord *c)
{
    memset(c, 0, sizeof(*c));
    fields_init(candidate_fields, NFIELDS(candidate_fields), c);
}

void compile_record_init(CompileRecord *c)
{
    memset(c, 0, sizeof(*c));
    fields_init(compile_fields, NFIELDS(compile_fields), c);
}

void llm_request_record_init(LlmRequestRecord *r)
{
    memset(r, 0, sizeof(*r));
    fields_init(llm_fields, NFIELDS(llm_fields), r);
}

void run_record_free(RunRecord *r)
{
    fields_free(run_fields, NFIELDS(run_fields), r);
    r->id = 0;
}

void compile_record_free(CompileRecord *c)
{
    fields_free(compile_fields, NFIELDS(compile_fields), c);
    c->id = 0;
}

void candidate_record_free(CandidateRecord *c)
{
    fields_free(candidate_fields, NFIELDS(candidate_fields), c);
    c->id = 0;
}

void llm_request_record_free(LlmRequestRecord *r)
{
    fields_free(llm_fields, NFIELDS(llm_fields), r);
    r->id = 0;
}

static void free_candidate(void *r)
{
    candidate_record_free(r);
}

static void free_llm_request(void *r)
{
    llm_request_record_free(r);
}

static void free_generation(void *r)
{
    free(((GenerationRecord *)r)->finished_at);
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
    return insert_fields(s, "runs", run_fields, NFIELDS(run_fields), r, &r->id, err);
}

int store_run_get(Store *s, int64_t id, RunRecord *r, EvoErr *err)
{
    memset(r, 0, sizeof(*r));
    if (id == 0) {
        /* SELECT max(id) FROM runs */
        sqlite3_stmt *st = NULL;
        if (prepare(s, "SELECT max(id) FROM runs", &st, err))
            return -1;
        if (sqlite3_step(st) == SQLITE_ROW)
            id = sqlite3_column_int64(st, 0);
        sqlite3_finalize(st);
        if (id == 0)
            return 0;
    }
    return select_by_id(s, "runs", run_fields, NFIELDS(run_fields), id, r, &r->id, err);
}

int store_run_update(Store *s, const RunRecord *r, EvoErr *err)
{
    /* UPDATE runs SET status=?, generations_done=?, baseline_id=?, finished_at=? WHERE id=? */
    sqlite3_stmt *st = NULL;
    if (prepare(s, "UPDATE runs SET status = ?, generations_done = ?, baseline_id = ?, "
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
    int rc = sqlite3_step(st) == SQLITE_DONE ? 0 : db_fail(s, err, "UPDATE runs");
    sqlite3_finalize(st);
    return rc;
}

/* ---- candidates ------------------------------------------------------ */

/* INSERT OR IGNORE INTO sources (hash, text, bytes, created_at) VALUES (?, ?, ?, ?) */
static int source_put(Store *s, const char *hash, const char *text, EvoErr *err)
{
    sqlite3_stmt *st = NULL;
    if (prepare(s, "INSERT OR IGNORE INTO sources (hash, text, bytes, created_at) VALUES (?, ?, ?, ?)",
                &st, err))
        return -1;
    char *now = time_iso8601();
    sqlite3_bind_text(st, 1, hash, -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(st, 2, text, -1, SQLITE_TRANSIENT);
    sqlite3_bind_int64(st, 3, (sqlite3_int64)strlen(text));
    sqlite3_bind_text(st, 4, now, -1, SQLITE_TRANSIENT);
    int rc = sqlite3_step(st) == SQLITE_DONE ? 0 : db_fail(s, err, "INSERT INTO sources");
    sqlite3_finalize(st);
    free(now);
    return rc;
}

/* SELECT id FROM compiles WHERE cache_key = ?, inserting the row first if absent. */
static int compile_put(Store *s, CompileRecord *c, EvoErr *err)
{
    sqlite3_stmt *st = NULL;
    if (prepare(s, "SELECT id FROM compiles WHERE cache_key = ?", &st, err))
        return -1;
    sqlite3_bind_text(st, 1, c->cache_key, -1, SQLITE_TRANSIENT);
    int step = sqlite3_step(st);
    if (step == SQLITE_ROW)
        c->id = sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    if (step == SQLITE_ROW)
        return 0;
    if (step != SQLITE_DONE)
        return db_fail(s, err, "SELECT FROM compiles");
    if (!c->created_at)
        c->created_at = time_iso8601();
    return insert_fields(s, "compiles", compile_fields, NFIELDS(compile_fields), c, &c->id, err);
}

int store_candidate_insert(Store *s, CandidateRecord *c, const char *source_text,
                           CompileRecord *comp, EvoErr *err)
{
    if (exec_sql(s, "BEGIN IMMEDIATE", err))
        return -1;
    if (source_text && c->source_hash && source_put(s, c->source_hash, source_text, err))
        goto fail;
    if (comp && comp->cache_key) {
        if (!comp->source_hash && c->source_hash)
            comp->source_hash = xstrdup(c->source_hash);
        if (compile_put(s, comp, err))
            goto fail;
        c->compile_id = comp->id;
    }
    if (!c->created_at)
        c->created_at = time_iso8601();
    if (!c->decided_at)
        c->decided_at = time_iso8601();
    if (insert_fields(s, "candidates", candidate_fields, NFIELDS(candidate_fields), c, &c->id, err))
        goto fail;
    if (exec_sql(s, "COMMIT", err))
        goto fail;
    return 0;
fail:
    sqlite3_exec(s->db, "ROLLBACK", NULL, NULL, NULL);
    c->id = 0;
    return -1;
}

int store_candidate_get(Store *s, int64_t id, CandidateRecord *c, EvoErr *err)
{
    memset(c, 0, sizeof(*c));
    return select_by_id(s, "candidates", candidate_fields, NFIELDS(candidate_fields), id, c, &c->id, err);
}

int64_t store_candidate_find(Store *s, int64_t run_id, const char *params_key, EvoErr *err)
{
    /* SELECT id FROM candidates WHERE run_id = ? AND params_key = ? ORDER BY id LIMIT 1 */
    sqlite3_stmt *st = NULL;
    if (prepare(s, "SELECT id FROM candidates WHERE run_id = ? AND params_key = ? ORDER BY id LIMIT 1",
                &st, err))
        return -1;
    sqlite3_bind_int64(st, 1, run_id);
    sqlite3_bind_text(st, 2, params_key, -1, SQLITE_TRANSIENT);
    int64_t id = 0;
    int step = sqlite3_step(st);
    if (step == SQLITE_ROW)
        id = sqlite3_column_int64(st, 0);
    else if (step != SQLITE_DONE)
        id = db_fail(s, err, "SELECT FROM candidates");
    sqlite3_finalize(st);
    return id;
}

int store_candidate_list(Store *s, int64_t run_id, StoreOrder order, int limit,
                         CandidateRecord **out, int *n, EvoErr *err)
{
    *out = NULL;
    *n = 0;
    /* SELECT id, <cols> FROM candidates | survivors [WHERE run_id = ?]
     *   ORDER BY id | latency_us, id [LIMIT ?] */
    char *cols = fields_columns(candidate_fields, NFIELDS(candidate_fields));
    char *sql = xasprintf("SELECT id, %s FROM %s WHERE (?1 = 0 OR run_id = ?1) ORDER BY %s LIMIT ?2", cols,
                          order == STORE_SURVIVORS_BY_LATENCY ? "survivors" : "candidates",
                          order == STORE_SURVIVORS_BY_LATENCY ? "latency_us, id" : "id");
    free(cols);
    sqlite3_stmt *st = NULL;
    int rc = prepare(s, sql, &st, err);
    free(sql);
    if (rc)
        return -1;
    sqlite3_bind_int64(st, 1, run_id);
    sqlite3_bind_int64(st, 2, limit > 0 ? limit : -1);
    return read_rows(s, st, candidate_fields, NFIELDS(candidate_fields), sizeof(CandidateRecord),
                     offsetof(CandidateRecord, id), free_candidate, "SELECT FROM candidates", (void **)out, n,
                     err);
}

void store_candidates_free(CandidateRecord *list, int n)
{
    for (int i = 0; i < n; i++)
        candidate_record_free(&list[i]);
    free(list);
}

int store_compile_get(Store *s, int64_t id, CompileRecord *c, EvoErr *err)
{
    memset(c, 0, sizeof(*c));
    return select_by_id(s, "compiles", compile_fields, NFIELDS(compile_fields), id, c, &c->id, err);
}

char *store_source_get(Store *s, const char *hash, EvoErr *err)
{
    /* SELECT text FROM sources WHERE hash = ? */
    sqlite3_stmt *st = NULL;
    if (!hash || prepare(s, "SELECT text FROM sources WHERE hash = ?", &st, err))
        return NULL;
    sqlite3_bind_text(st, 1, hash, -1, SQLITE_TRANSIENT);
    char *text = NULL;
    if (sqlite3_step(st) == SQLITE_ROW)
        text = xstrdup((const char *)sqlite3_column_text(st, 0));
    sqlite3_finalize(st);
    return text;
}

/* ---- generations, counts, LLM requests ------------------------------- */

int store_generation_put(Store *s, const GenerationRecord *g, EvoErr *err)
{
    GenerationRecord copy = *g;
    char *now = NULL;
    if (!copy.finished_at)
        copy.finished_at = now = time_iso8601();
    /* INSERT OR REPLACE INTO generations (<cols>) VALUES (?...) */
    char *cols = fields_columns(generation_fields, NFIELDS(generation_fields));
    char *ph = fields_placeholders(NFIELDS(generation_fields));
    char *sql = xasprintf("INSERT OR REPLACE INTO generations (%s) VALUES (%s)", cols, ph);
    free(cols);
    free(ph);
    sqlite3_stmt *st = NULL;
    int rc = prepare(s, sql, &st, err);
    free(sql);
    if (!rc) {
        if (fields_bind(st, 1, generation_fields, NFIELDS(generation_fields), &copy) != SQLITE_OK ||
            sqlite3_step(st) != SQLITE_DONE)
            rc = db_fail(s, err, "INSERT INTO generations");
        sqlite3_finalize(st);
    }
    free(now);
    return rc;
}

int store_generation_list(Store *s, int64_t run_id, GenerationRecord **out, int *n, EvoErr *err)
{
    *out = NULL;
    *n = 0;
    char *cols = fields_columns(generation_fields, NFIELDS(generation_fields));
    char *sql = xasprintf("SELECT %s FROM generations WHERE run_id = ? ORDER BY generation", cols);
    free(cols);
    sqlite3_stmt *st = NULL;
    int rc = prepare(s, sql, &st, err);
    free(sql);
    if (rc)
        return -1;
    sqlite3_bind_int64(st, 1, run_id);
    return read_rows(s, st, generation_fields, NFIELDS(generation_fields), sizeof(GenerationRecord), NO_ID,
                     free_generation, "SELECT FROM generations", (void **)out, n, err);
}

int store_run_counts(Store *s, int64_t run_id,
                     void (*fn)(void *ctx, const char *status, const char *decision, int64_t n),
                     void *ctx, EvoErr *err)
{
    /* SELECT status, decision, n FROM run_counts WHERE run_id = ? ORDER BY n DESC */
    sqlite3_stmt *st = NULL;
    if (prepare(s, "SELECT status, decision, n FROM run_counts WHERE run_id = ? ORDER BY n DESC, status",
                &st, err))
        return -1;
    sqlite3_bind_int64(st, 1, run_id);
    while (sqlite3_step(st) == SQLITE_ROW)
        fn(ctx, (const char *)sqlite3_column_text(st, 0), (const char *)sqlite3_column_text(st, 1),
           sqlite3_column_int64(st, 2));
    sqlite3_finalize(st);
    return 0;
}

int store_llm_request_insert(Store *s, LlmRequestRecord *r, EvoErr *err)
{
    if (!r->created_at)
        r->created_at = time_iso8601();
    return insert_fields(s, "llm_requests", llm_fields, NFIELDS(llm_fields), r, &r->id, err);
}

int store_llm_request_link(Store *s, int64_t request_id, int64_t candidate_id, EvoErr *err)
{
    /* UPDATE llm_requests SET candidate_id = ? WHERE id = ?; and the reverse link */
    sqlite3_stmt *st = NULL;
    if (prepare(s, "UPDATE llm_requests SET candidate_id = ?1 WHERE id = ?2", &st, err))
        return -1;
    sqlite3_bind_int64(st, 1, candidate_id);
    sqlite3_bind_int64(st, 2, request_id);
    int rc = sqlite3_step(st) == SQLITE_DONE ? 0 : db_fail(s, err, "UPDATE llm_requests");
    sqlite3_finalize(st);
    return rc;
}

/* ---- LLM requests: lists, counts, per-mode statistics, raw kernels ---- */

int store_llm_request_list(Store *s, int64_t run_id, LlmRequestRecord **out, int *n, EvoErr *err)
{
    *out = NULL;
    *n = 0;
    /* SELECT id, <cols> FROM llm_requests WHERE (?1 = 0 OR run_id = ?1) ORDER BY id */
    char *cols = fields_columns(llm_fields, NFIELDS(llm_fields));
    char *sql = xasprintf("SELECT id, %s FROM llm_requests WHERE (?1 = 0 OR run_id = ?1) ORDER BY id", cols);
    free(cols);
    sqlite3_stmt *st = NULL;
    int rc = prepare(s, sql, &st, err);
    free(sql);
    if (rc)
        return -1;
    sqlite3_bind_int64(st, 1, run_id);
    return read_rows(s, st, llm_fields, NFIELDS(llm_fields), sizeof(LlmRequestRecord),
                     offsetof(LlmRequestRecord, id), free_llm_request, "SELECT FROM llm_requests", (void **)out,
                     n, err);
}

void store_llm_requests_free(LlmRequestRecord *list, int n)
{
    for (int i = 0; i < n; i++)
        llm_request_record_free(&list[i]);
    free(list);
}

int store_llm_request_count(Store *s, int64_t run_id, int64_t gen_from, int64_t gen_to, EvoErr *err)
{
    /* SELECT COUNT(*) FROM llm_requests WHERE run_id = ? AND generation BETWEEN ? AND ?
     *   AND status <> 'interrupted' */
    sqlite3_stmt *st = NULL;
    if (prepare(s,
                "SELECT COUNT(*) FROM llm_requests WHERE run_id = ?1 AND generation BETWEEN ?2 AND ?3 "
                "AND status <> 'interrupted'",
                &st, err))
        return -1;
    sqlite3_bind_int64(st, 1, run_id);
    sqlite3_bind_int64(st, 2, gen_from);
    sqlite3_bind_int64(st, 3, gen_to);
    int rc = sqlite3_step(st) == SQLITE_ROW ? (int)sqlite3_column_int64(st, 0) : db_fail(s, err, "SELECT COUNT(*) FROM llm_requests");
    sqlite3_finalize(st);
    return rc;
}

int store_llm_requests_interrupt(Store *s, int64_t run_id, EvoErr *err)
{
    /* UPDATE llm_requests SET status = 'interrupted', error = ...
     *   WHERE run_id = ? AND status = 'ok' AND candidate_id IS NULL */
    sqlite3_stmt *st = NULL;
    if (prepare(s,
                "UPDATE llm_requests SET status = 'interrupted', error = 'the run stopped before the candidate "
                "of this answer was committed; the request is asked again on resume' "
                "WHERE run_id = ?1 AND status = 'ok' AND candidate_id IS NULL",
                &st, err))
        return -1;
    sqlite3_bind_int64(st, 1, run_id);
    int rc = sqlite3_step(st) == SQLITE_DONE ? sqlite3_changes(s->db) : db_fail(s, err, "UPDATE llm_requests");
    sqlite3_finalize(st);
    return rc;
}

int store_llm_mode_stats(Store *s, int64_t run_id, LlmModeStats **out, int *n, EvoErr *err)
{
    *out = NULL;
    *n = 0;
    /* SELECT mode, requests, children, valid, validity_rate, accepted, acceptance_rate,
     *   best_speedup FROM llm_mode_stats WHERE run_id = ? ORDER BY mode */
    sqlite3_stmt *st = NULL;
    if (prepare(s,
                "SELECT mode, requests, children, valid, validity_rate, accepted, acceptance_rate, best_speedup "
                "FROM llm_mode_stats WHERE run_id = ? ORDER BY mode",
                &st, err))
        return -1;
    sqlite3_bind_int64(st, 1, run_id);
    int step;
    LlmModeStats *list = NULL;
    while ((step = sqlite3_step(st)) == SQLITE_ROW) {
        list = xrealloc(list, (size_t)(*n + 1) * sizeof(*list));
        LlmModeStats *m = &list[*n];
        memset(m, 0, sizeof(*m));
        snprintf(m->mode, sizeof(m->mode), "%s", (const char *)sqlite3_column_text(st, 0));
        m->requests = sqlite3_column_int64(st, 1);
        m->children = sqlite3_column_int64(st, 2);
        m->valid = sqlite3_column_int64(st, 3);
        m->validity_rate = sqlite3_column_double(st, 4);
        m->accepted = sqlite3_column_int64(st, 5);
        m->acceptance_rate = sqlite3_column_double(st, 6);
        m->best_speedup = sqlite3_column_type(st, 7) == SQLITE_NULL ? NAN : sqlite3_column_double(st, 7);
        (*n)++;
    }
    sqlite3_finalize(st);
    if (step != SQLITE_DONE) {
        free(list);
        *n = 0;
        return db_fail(s, err, "SELECT FROM llm_mode_stats");
    }
    *out = list;
    return 0;
}

int store_kernel_put(Store *s, const char *text, const char *origin, int64_t llm_request_id, EvoErr *err)
{
    char hex[65], key[17];
    sha256_hex(text, strlen(text), hex);
    memcpy(key, hex, 16);
    key[16] = '\0';
    /* INSERT OR IGNORE INTO kernels (key, hash, text, origin, llm_request_id, created_at)
     *   VALUES (?, ?, ?, ?, ?, ?) */
    sqlite3_stmt *st = NULL;
    if (prepare(s,
                "INSERT OR IGNORE INTO kernels (key, hash, text, origin, llm_request_id, created_at) "
                "VALUES (?, ?, ?, ?, ?, ?)",
                &st, err))
        return -1;
    char *now = time_iso8601();
    sqlite3_bind_text(st, 1, key, -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(st, 2, hex, -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(st, 3, text, -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(st, 4, origin, -1, SQLITE_TRANSIENT);
    if (llm_request_id > 0)
        sqlite3_bind_int64(st, 5, llm_request_id);
    else
        sqlite3_bind_null(st, 5);
    sqlite3_bind_text(st, 6, now, -1, SQLITE_TRANSIENT);
    int rc = sqlite3_step(st) == SQLITE_DONE ? 0 : db_fail(s, err, "INSERT INTO kernels");
    sqlite3_finalize(st);
    free(now);
    return rc;
}

char *store_kernel_get(Store *s, const char *params_key, EvoErr *err)
{
    const char *at = params_key ? strchr(params_key, '@') : NULL;
    if (!at) {
        err_set(err, "%s: params key '%s' names no kernel (no '@')", store_path(s), params_key ? params_key : "");
        return NULL;
    }
    /* SELECT text FROM kernels WHERE key = ? */
    sqlite3_stmt *st = NULL;
    if (prepare(s, "SELECT text FROM kernels WHERE key = ?", &st, err))
        return NULL;
    sqlite3_bind_text(st, 1, at + 1, -1, SQLITE_TRANSIENT);
    char *text = NULL;
    int step = sqlite3_step(st);
    if (step == SQLITE_ROW)
        text = xstrdup((const char *)sqlite3_column_text(st, 0));
    else if (step == SQLITE_DONE)
        err_set(err, "%s: no kernel stored for params key '%s'", store_path(s), params_key);
    else
        db_fail(s, err, "SELECT FROM kernels");
    sqlite3_finalize(st);
    return text;
}

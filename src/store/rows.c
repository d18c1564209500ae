/*
 * rows: the field tables that map a row to a struct, and the statement
 * helpers every file of the store uses (rows.h). One table drives
 * both the INSERT and the SELECT of a record, so the two cannot drift
 * apart.
 */
#include "store/rows.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

void fld_init(const Field *f, int n, void *rec)
{
    for (int i = 0; i < n; i++) {
        char *p = (char *)rec + f[i].off;
        switch (f[i].type) {
        case F_ID:   *(int64_t *)p = 0; break;
        case F_INT:  *(int64_t *)p = -1; break;
        case F_REAL: *(double *)p = NAN; break;
        case F_TEXT: *(char **)p = NULL; break;
        default: break;   /* a store table holds the four SQL types only */
        }
    }
}

void fld_dup_text(const Field *f, int n, void *rec)
{
    for (int i = 0; i < n; i++)
        if (f[i].type == F_TEXT) {
            char **p = (char **)((char *)rec + f[i].off);
            *p = *p ? xstrdup(*p) : NULL;
        }
}

void fld_free(const Field *f, int n, void *rec)
{
    fld_release(f, n, rec);
    fld_init(f, n, rec);
}

/* Bind fields to parameters first..first+n-1. */
int fld_bind(sqlite3_stmt *st, int first, const Field *f, int n, const void *rec)
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
        default: break;
        }
        if (rc != SQLITE_OK)
            return rc;
    }
    return SQLITE_OK;
}

static const char *type_name(int t)
{
    switch (t) {
    case SQLITE_INTEGER: return "an integer";
    case SQLITE_FLOAT:   return "a real number";
    case SQLITE_TEXT:    return "text";
    case SQLITE_BLOB:    return "a blob";
    default:             return "NULL";
    }
}

static int bad_column(Store *s, sqlite3_stmt *st, int first, const char *what, const char *col, int t,
                      const char *want, EvoErr *err)
{
    char row[48] = "";
    if (first == 1 && sqlite3_column_type(st, 0) == SQLITE_INTEGER)
        snprintf(row, sizeof(row), " row %lld", (long long)sqlite3_column_int64(st, 0));
    return err_set(err, "%s: %s%s: column %s holds %s where %s is expected (a damaged or foreign store: evoeng "
                   "reads a store as data and refuses what it cannot trust)", s->path, what, row, col,
                   type_name(t), want);
}

int fld_read(Store *s, sqlite3_stmt *st, int first, const Field *f, int n, void *rec, const char *what, EvoErr *err)
{
    fld_init(f, n, rec);
    for (int i = 0; i < n; i++) {
        char *p = (char *)rec + f[i].off;
        int k = first + i, t = sqlite3_column_type(st, k);
        const char *want = f[i].type == F_TEXT ? "text" : f[i].type == F_REAL ? "a number" : "an integer";
        if (t == SQLITE_NULL) {
            if (f[i].req)
                goto bad;
            continue;
        }
        switch (f[i].type) {
        case F_ID:
        case F_INT:
            if (t != SQLITE_INTEGER)
                goto bad;
            *(int64_t *)p = sqlite3_column_int64(st, k);
            break;
        case F_REAL:
            if (t != SQLITE_INTEGER && t != SQLITE_FLOAT)
                goto bad;
            *(double *)p = sqlite3_column_double(st, k);
            break;
        case F_TEXT: {
            if (t == SQLITE_BLOB)
                goto bad;
            const char *v = (const char *)sqlite3_column_text(st, k);
            if (!v)   /* out of memory, or past SQLITE_LIMIT_LENGTH */
                goto bad;
            *(char **)p = xstrdup(v);
            break;
        }
        default: break;
        }
        continue;
    bad:
        bad_column(s, st, first, what, f[i].key, t, want, err);
        fld_free(f, n, rec);
        return -1;
    }
    return 0;
}

int sdb_col_text(Store *s, sqlite3_stmt *st, int k, const char *what, char **out, EvoErr *err)
{
    *out = NULL;
    int t = sqlite3_column_type(st, k);
    if (t == SQLITE_NULL)
        return 0;
    const char *v = t == SQLITE_BLOB ? NULL : (const char *)sqlite3_column_text(st, k);
    if (!v)
        return bad_column(s, st, 0, what, sqlite3_column_name(st, k), t, "text", err);
    *out = xstrdup(v);
    return 0;
}

/* "a, b, c" and "?, ?, ?" for a field table. */
static char *fld_columns(const Field *f, int n)
{
    StrBuf sb = {0};
    for (int i = 0; i < n; i++)
        sb_printf(&sb, "%s%s", i ? ", " : "", f[i].key);
    return sb_take(&sb);
}

static char *fld_placeholders(int n)
{
    StrBuf sb = {0};
    for (int i = 0; i < n; i++)
        sb_append(&sb, i ? ", ?" : "?");
    return sb_take(&sb);
}

/* ---- statement helpers ----------------------------------------------- */

int sdb_fail(Store *s, EvoErr *err, const char *what)
{
    return err_set(err, "%s: %s: %s", s->path, what, sqlite3_errmsg(s->db));
}

int sdb_prepare(Store *s, const char *sql, sqlite3_stmt **st, EvoErr *err)
{
    if (sqlite3_prepare_v2(s->db, sql, -1, st, NULL) != SQLITE_OK)
        return sdb_fail(s, err, "sqlite3_prepare_v2");
    return 0;
}

int sdb_exec(Store *s, const char *sql, EvoErr *err)
{
    char *msg = NULL;
    if (sqlite3_exec(s->db, sql, NULL, NULL, &msg) != SQLITE_OK) {
        err_set(err, "%s: %s", s->path, msg ? msg : sqlite3_errmsg(s->db));
        sqlite3_free(msg);
        return -1;
    }
    return 0;
}

/* "<verb> table (cols) VALUES (?...)" from a field table. */
static int insert_as(Store *s, const char *verb, const char *table, const Field *f, int n, const void *rec,
                     int64_t *id, EvoErr *err)
{
    char *cols = fld_columns(f, n), *ph = fld_placeholders(n);
    char *sql = xasprintf("%s %s (%s) VALUES (%s)", verb, table, cols, ph);
    free(cols);
    free(ph);
    sqlite3_stmt *st = NULL;
    int rc = sdb_prepare(s, sql, &st, err);
    free(sql);
    if (rc)
        return -1;
    if (fld_bind(st, 1, f, n, rec) != SQLITE_OK || sqlite3_step(st) != SQLITE_DONE) {
        rc = sdb_fail(s, err, table);
    } else if (id) {
        *id = sqlite3_last_insert_rowid(s->db);
    }
    sqlite3_finalize(st);
    return rc;
}

/* INSERT INTO table (cols) VALUES (?...) */
int sdb_insert(Store *s, const char *table, const Field *f, int n, const void *rec, int64_t *id, EvoErr *err)
{
    return insert_as(s, "INSERT INTO", table, f, n, rec, id, err);
}

/* INSERT OR REPLACE INTO table (cols) VALUES (?...) */
int sdb_replace(Store *s, const char *table, const Field *f, int n, const void *rec, EvoErr *err)
{
    return insert_as(s, "INSERT OR REPLACE INTO", table, f, n, rec, NULL, err);
}

/* SELECT [id, ]<cols> <tail> */
int sdb_prepare_select(Store *s, int with_id, const Field *f, int n, sqlite3_stmt **st, EvoErr *err,
                       const char *tail_fmt, ...)
{
    va_list ap;
    va_start(ap, tail_fmt);
    char *tail = xvasprintf(tail_fmt, ap);
    va_end(ap);
    char *cols = fld_columns(f, n);
    char *sql = xasprintf("SELECT %s%s %s", with_id ? "id, " : "", cols, tail);
    free(cols);
    free(tail);
    int rc = sdb_prepare(s, sql, st, err);
    free(sql);
    return rc;
}

/* SELECT id, <cols> FROM table WHERE id = ?. Returns 1, 0 or -1. */
int sdb_select_by_id(Store *s, const char *table, const Field *f, int n, int64_t id,
                     void *rec, int64_t *id_out, EvoErr *err)
{
    sqlite3_stmt *st = NULL;
    if (sdb_prepare_select(s, 1, f, n, &st, err, "FROM %s WHERE id = ?", table))
        return -1;
    sqlite3_bind_int64(st, 1, id);
    int rc;
    int step = sqlite3_step(st);
    if (step == SQLITE_ROW) {
        *id_out = sqlite3_column_int64(st, 0);
        rc = fld_read(s, st, 1, f, n, rec, table, err) < 0 ? -1 : 1;
        if (rc < 0)
            *id_out = 0;
    } else if (step == SQLITE_DONE) {
        rc = 0;
    } else {
        rc = sdb_fail(s, err, table);
    }
    sqlite3_finalize(st);
    return rc;
}

/* Step st to the end, reading each row into a growing array of records of
 * `size` bytes: column 0 into the int64 at id_off (unless id_off is
 * NO_ID), the field table from the next column. On error, frees what was
 * read with free_one. Finalizes st. Returns 0 or -1 (err names `what`). */
int sdb_read_rows(Store *s, sqlite3_stmt *st, const Field *f, int nf, size_t size, size_t id_off,
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
        if (fld_read(s, st, first, f, nf, rec, what, err) < 0)
            break;
        (*n)++;
    }
    if (step != SQLITE_DONE) {
        if (step != SQLITE_ROW)
            sdb_fail(s, err, what);
        sqlite3_finalize(st);
        for (int i = 0; i < *n; i++)
            free_one(list + (size_t)i * size);
        free(list);
        *n = 0;
        return -1;
    }
    sqlite3_finalize(st);
    *out = list;
    return 0;
}

/* ---- --json views ---------------------------------------------------- */

json_t *fld_put_json_text(const void *at)
{
    const char *text = *(char *const *)at;
    if (!text)
        return json_null();
    json_t *v = json_loads(text, JSON_DECODE_ANY, NULL);
    return v ? v : json_string(text);
}

json_t *fld_row_json(int64_t id, const Field *f, int n, const void *rec, int view)
{
    json_t *o = json_pack("{s:I}", "id", (json_int_t)id), *cols = fld_to_json_view(f, n, rec, view);
    json_object_update(o, cols);
    json_decref(cols);
    return o;
}

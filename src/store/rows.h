/*
 * rows: what the files of the store share and nothing outside it uses:
 * the Store handle, field tables that map a row to a struct, and the
 * statement helpers (rows.c). Only column names from field tables are
 * ever pasted into SQL; every value is bound. The bottom of the store:
 * it includes none of its other headers.
 */
#ifndef EVO_STORE_ROWS_H
#define EVO_STORE_ROWS_H

#include <stddef.h>
#include <sqlite3.h>

#include "util.h"

typedef struct Store Store;   /* also in store.h */

struct Store {
    sqlite3 *db;
    char    *path;
    struct RunLock *locks;     /* the run locks this handle holds (lock.c) */
    int      nlocks;
};

/* ---- field tables ---------------------------------------------------- */

/* Field, FieldType (util.h): a store table uses F_ID, F_INT, F_REAL and
 * F_TEXT only; `key` is the column, `req` NOT NULL. */
#define FLD(T, name, ty) {.key = #name, .type = ty, .off = offsetof(T, name)}
#define FLDR(T, name, ty) {.key = #name, .type = ty, .off = offsetof(T, name), .req = 1}
/* A column with more to say, chiefly how --json prints it:
 * FLDJ(T, run_id, F_ID, .req = 1, .jkey = "run", .show = FLD_OMIT). */
#define FLDJ(T, name, ty, ...) {.key = #name, .type = ty, .off = offsetof(T, name), __VA_ARGS__}

/* The --json views of the rows (store.h, "--json views"): a table's order
 * is the order of its object's keys; a column prints under its name, or
 * jkey; FLD_HIDE leaves it out, FLD_OMIT leaves it out when NULL, FLD_MORE
 * keeps it for the detail view (show). */

/* put hook of a text column that holds JSON (params, config, gate,
 * metrics): the value parsed, a string when it does not parse, null for
 * NULL. */
struct json_t *fld_put_json_text(const void *at);
/* {"id": id, then the columns of rec that view prints} (new reference). */
struct json_t *fld_row_json(int64_t id, const Field *f, int n, const void *rec, int view);

/* Set every field of rec to its NULL value (see FieldType). */
void fld_init(const Field *f, int n, void *rec);
/* Replace every text field of rec by a fresh copy of it (rec was copied
 * from a record that keeps its strings). */
void fld_dup_text(const Field *f, int n, void *rec);
/* Free the text fields of rec, then fld_init. */
void fld_free(const Field *f, int n, void *rec);
/* Bind fields to parameters first..first+n-1. Returns a SQLite code. */
int fld_bind(sqlite3_stmt *st, int first, const Field *f, int n, const void *rec);
/* Read columns first..first+n-1 of the current row into rec. A store is
 * data from anywhere: a value of the wrong type (text or a blob where a
 * number belongs, a blob or a number where text does, a real in an
 * integer column) or a NULL in a required field fails with err naming
 * the file, what (the table), the row (column 0 when first is 1) and the
 * column; rec is then freed again (fld_free). Returns 0 or -1. */
int fld_read(Store *s, sqlite3_stmt *st, int first, const Field *f, int n, void *rec, const char *what, EvoErr *err);
/* Column k of the current row as a fresh string: NULL when the column is
 * NULL (*out NULL, 0 returned), -1 with err when it is a blob. */
int sdb_col_text(Store *s, sqlite3_stmt *st, int k, const char *what, char **out, EvoErr *err);

/* ---- statement helpers ----------------------------------------------- */
/* Each returns 0 or -1 with err naming the file, `what` and SQLite's message. */

int sdb_fail(Store *s, EvoErr *err, const char *what);
int sdb_prepare(Store *s, const char *sql, sqlite3_stmt **st, EvoErr *err);
int sdb_exec(Store *s, const char *sql, EvoErr *err);
/* INSERT INTO table (cols) VALUES (?...) from a field table; *id (if
 * non-NULL) gets the new rowid. sdb_replace: INSERT OR REPLACE. */
int sdb_insert(Store *s, const char *table, const Field *f, int n, const void *rec, int64_t *id, EvoErr *err);
int sdb_replace(Store *s, const char *table, const Field *f, int n, const void *rec, EvoErr *err);
/* Prepare "SELECT [id, ]<columns of f> <tail>", tail from tail_fmt (table
 * names and SQL words only: values are bound). */
int sdb_prepare_select(Store *s, int with_id, const Field *f, int n, sqlite3_stmt **st, EvoErr *err,
                       const char *tail_fmt, ...) EVO_PRINTF(7, 8);
/* SELECT id, <cols> FROM table WHERE id = ?. Returns 1 found, 0 not, -1. */
int sdb_select_by_id(Store *s, const char *table, const Field *f, int n, int64_t id, void *rec, int64_t *id_out,
                     EvoErr *err);
/* Step st to the end, reading each row into a growing array of records of
 * `size` bytes: column 0 into the int64 at id_off (unless id_off is
 * NO_ID), the field table from the next column. On error, frees what was
 * read with free_one. Finalizes st. Returns 0 or -1 (err names `what`). */
#define NO_ID ((size_t)-1)
int sdb_read_rows(Store *s, sqlite3_stmt *st, const Field *f, int nf, size_t size, size_t id_off,
                  void (*free_one)(void *), const char *what, void **out, int *n, EvoErr *err);

#endif

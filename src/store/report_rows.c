/*
 * report_rows: read-only queries for the run report (report_rows.h).
 */
#include "store/report_rows.h"

#include "store/rows.h"

int store_run_span(Store *s, int64_t *count, int64_t *min_id, int64_t *max_id, EvoErr *err)
{
    /* SELECT COUNT(*), MIN(id), MAX(id) FROM runs */
    sqlite3_stmt *st = NULL;
    *count = *min_id = *max_id = 0;
    if (sdb_prepare(s, "SELECT COUNT(*), MIN(id), MAX(id) FROM runs", &st, err))
        return -1;
    int rc = 0;
    if (sqlite3_step(st) == SQLITE_ROW) {
        *count = sqlite3_column_int64(st, 0);
        *min_id = sqlite3_column_int64(st, 1);
        *max_id = sqlite3_column_int64(st, 2);
    } else {
        rc = sdb_fail(s, err, "SELECT COUNT(*) FROM runs");
    }
    sqlite3_finalize(st);
    return rc;
}

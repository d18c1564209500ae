/*
 * report_rows: read-only queries of the store that the run report and
 * its command need beyond store.h (kept apart from store.c so the two
 * change independently). Implemented in report_rows.c with the helpers
 * of rows.h.
 */
#ifndef EVO_REPORT_ROWS_H
#define EVO_REPORT_ROWS_H

#include <stdint.h>

#include "store/store.h"

/* How many runs the store holds and the smallest and largest run id
 * (both 0 when there is none). Returns 0 or -1 (err names the query). */
int store_run_span(Store *s, int64_t *count, int64_t *min_id, int64_t *max_id, EvoErr *err);

#endif

/*
 * progress: what a run says while it runs, its time limit, and the close
 * of a generation (its row, its line).
 */
#ifndef EVO_SEARCH_PROGRESS_H
#define EVO_SEARCH_PROGRESS_H

#include "search/loop.h"
#include "util.h"

/* A status line on a terminal (replaced by the next), nothing otherwise. */
void loop_live_line(Loop *L, const char *fmt, ...) EVO_PRINTF(2, 3);
void loop_live_clear(Loop *L);
/* 1 (and the summary marked interrupted) when the time limit or *stop is
 * reached. */
int loop_time_limit_hit(Loop *L);
/* Close generation g (its wall_ms set): its best from the store, its row
 * (replaced if written before), the run's generations_done raised to done
 * (when higher), and its progress line unless total_gens < 0. 0 or -1. */
int loop_generation_close(Loop *L, GenerationRecord *g, int64_t done, int total_gens, EvoErr *err);
/* The events of a generation's proposals: the warm start (generation 0)
 * and the valid space running out (once a run). */
void loop_report_proposals(Loop *L, int64_t gen, int n, int want, int exhausted);
/* A line about the run (not a generation): text, or with --json the
 * object {"run", "event", "count", "runs"?}. Nothing with --quiet. */
void loop_report_event(Loop *L, const char *event, int count, const char *runs, const char *fmt, ...)
    EVO_PRINTF(5, 6);

#endif

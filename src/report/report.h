/*
 * report: the HTML run report (`evoeng report`). One self-contained page
 * per run, with inline SVG plots and no script or network reference:
 * convergence over generations and wall time, the lineage of the best
 * candidate, the top N, per-knob effects, failures by status, LLM rates
 * per mode, and the run's device, configuration and noise figures.
 *
 * Files: report.c (gathering a run from the store), html.c (the page and
 * its tables), plots.c (the SVG plots), svg.c (the plotting helper),
 * format.c (text forms of figures); report_int.h is the gathered run
 * they share.
 */
#ifndef EVO_REPORT_H
#define EVO_REPORT_H

#include <stdint.h>

#include "store/store.h"
#include "util.h"

typedef struct ReportOptions {
    int top_n;                 /* rows of the top table; <= 0: 10 */
} ReportOptions;

/* What a rendered report holds, for the command's own message. */
typedef struct ReportInfo {
    int64_t run_id;            /* the run rendered */
    int     candidates;        /* candidates of the run */
    int     valid;             /* status ok (as `status` counts them) */
    int     fully_gated;       /* of which gated on every shape and timed */
    int64_t best_id;           /* the fastest survivor; 0 when none */
} ReportInfo;

/* Render run run_id of st (0: the most recent run) as one HTML page.
 * On 1, *html is a fresh NUL-terminated string the caller frees and
 * *info (if not NULL) is filled. A run with no valid candidate still
 * renders (its failures, with a note that nothing passed the gate).
 * Returns 1 rendered, 0 no such run (run_id 0: the store holds no run),
 * -1 a store error (err names the call). */
int report_render(Store *st, int64_t run_id, const ReportOptions *o, char **html, ReportInfo *info,
                  EvoErr *err);

#endif

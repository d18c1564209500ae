/*
 * cmd_report: `evoeng report [RUN_ID] [-o FILE] [-n N] [--json]`: write
 * the HTML run report (src/report/report.h) of a run (default: the most
 * recent one) to report-<run>.html in the current directory, to FILE, or
 * to stdout with -o -. Reads the store only: a store that does not exist
 * is an error (exit 4) and nothing is created. With --json, stdout gets
 * one object {"path", "run_id", "bytes", "candidates", "valid", "fully_gated",
 * "best_id"} (best_id null when no candidate passed the gate).
 */
#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/commands.h"
#include "cli/inspect.h"
#include "msg.h"
#include "report/report.h"
#include "store/report_rows.h"
#include "store/store.h"

/* The error for a run that is not there, with what the store does hold. */
static EvoExit no_run(Store *st, int64_t id)
{
    int64_t n, lo, hi;
    EvoErr err;
    if (store_run_span(st, &n, &lo, &hi, &err)) {
        errorf("%s", err.msg);
        return EVO_EXIT_DB;
    }
    if (n == 0)
        errorf("%s holds no run yet: nothing to report (start one with 'evoeng run')", store_path(st));
    else if (id)
        errorf("%s: no run %lld (it holds %lld run%s, ids %lld to %lld)", store_path(st), (long long)id,
               (long long)n, n == 1 ? "" : "s", (long long)lo, (long long)hi);
    else
        errorf("%s: the latest run could not be read", store_path(st));
    return EVO_EXIT_FAIL;
}

static EvoExit write_out(const char *path, const char *html, size_t len, int force)
{
    EvoErr err;
    if (strcmp(path, "-") == 0) {
        if (fwrite(html, 1, len, stdout) != len) {
            errorf("writing the report to standard output: %s", strerror(errno));
            return EVO_EXIT_IO;
        }
        return EVO_EXIT_OK;
    }
    if (file_write_flags(path, html, len, force ? FILE_WRITE_FORCE : 0, &err)) {
        errorf("%s", err.msg);
        return EVO_EXIT_IO;
    }
    return EVO_EXIT_OK;
}

EvoExit cmd_report(const Settings *s)
{
    const char *out = s->output;
    if (s->json && out && strcmp(out, "-") == 0) {
        errorf("report: --json and -o - would both write to standard output: give -o FILE with --json");
        return EVO_EXIT_USAGE;
    }
    EvoExit orc = EVO_EXIT_OK;
    Store *st = inspect_open(s, &orc);   /* read-only: a missing store is exit 4, nothing created */
    if (!st)
        return orc;
    EvoErr err;
    ReportOptions o = {.top_n = s->top_n};
    ReportInfo info;
    char *html = NULL;
    int got = report_render(st, s->id, &o, &html, &info, &err);
    if (got <= 0) {
        EvoExit rc = EVO_EXIT_DB;
        if (got < 0)
            errorf("%s", err.msg);
        else
            rc = no_run(st, s->id);
        store_close(&st);
        return rc;
    }
    store_close(&st);
    char defpath[64];
    if (!out) {
        snprintf(defpath, sizeof(defpath), "report-%lld.html", (long long)info.run_id);
        out = defpath;
    }
    size_t len = strlen(html);
    EvoExit rc = write_out(out, html, len, s->force);
    free(html);
    if (rc != EVO_EXIT_OK)
        return rc;
    if (info.valid == 0)
        warnf("run %lld has no candidate that passed the correctness gate on every shape: the report shows "
              "its %d candidate%s and why they failed",
              (long long)info.run_id, info.candidates, info.candidates == 1 ? "" : "s");
    if (s->json) {
        json_t *j = json_pack("{s:s, s:I, s:I, s:i, s:i, s:i}", "path", out, "run_id", (json_int_t)info.run_id,
                              "bytes", (json_int_t)len, "candidates", info.candidates, "valid", info.valid,
                              "fully_gated", info.fully_gated);
        json_object_set_new(j, "best_id", info.best_id ? json_integer((json_int_t)info.best_id) : json_null());
        out_json_doc(j);
    } else if (strcmp(out, "-") != 0 && msg_verbosity > 0) {
        printf("report: %s (%zu bytes): run %lld, %d candidates, %d valid; open it in a browser\n", out, len,
               (long long)info.run_id, info.candidates, info.valid);
    }
    return EVO_EXIT_OK;
}

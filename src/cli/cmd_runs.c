/*
 * cmd_runs: `evoeng runs [--json] [--wide]`, the runs of a store, oldest
 * first: id, start, status, task, device, benchmark shape, generations
 * done, candidates and the best latency (a candidate gated on every
 * shape). The store is opened read-only (cli/inspect.h).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/commands.h"
#include "cli/inspect.h"
#include "msg.h"

static json_t *runs_json(const RunSummary *l, int n)
{
    json_t *arr = json_array();
    for (int i = 0; i < n; i++) {
        json_t *o = inspect_run_json(&l[i].run);
        json_object_set_new(o, "candidates", json_integer((json_int_t)l[i].candidates));
        json_object_set_new(o, "best", l[i].best_id ? json_pack("{s:I, s:o, s:o}", "id", (json_int_t)l[i].best_id,
                                                                "latency_us", inspect_real_or_null(l[i].best_latency_us),
                                                                "speedup", inspect_real_or_null(l[i].best_speedup))
                                                    : json_null());
        json_array_append_new(arr, o);
    }
    return json_pack("{s:o}", "runs", arr);
}

static void runs_text(const Store *st, const RunSummary *l, int n)
{
    if (n == 0) {
        out_printf("%s: no runs yet (start one with 'evoeng run')\n", store_path(st));
        return;
    }
    out_printf("%4s  %-20s  %-11s  %-10s  %-12s  %4s  %6s  %11s  %7s  %s\n", "run", "started", "status", "task",
               "device", "gens", "cands", "best", "speedup", "shape");
    for (int i = 0; i < n; i++) {
        const RunSummary *r = &l[i];
        char lat[32], spd[32];
        inspect_fmt_us(lat, sizeof(lat), r->best_latency_us);
        if (isnan(r->best_speedup))
            snprintf(spd, sizeof(spd), "-");
        else
            snprintf(spd, sizeof(spd), "%.2fx", r->best_speedup);
        char *shape = inspect_shape_text(&r->run);
        out_printf("%4lld  %-20s  %-11s  %-10s  %-12s  %4lld  %6lld  %11s  %7s  %s\n", (long long)r->run.id,
                   r->run.started_at ? r->run.started_at : "-", r->run.status ? r->run.status : "-",
                   r->run.task_name ? r->run.task_name : "-", r->run.device_name ? r->run.device_name : "-",
                   (long long)r->run.generations_done, (long long)r->candidates, lat, spd, shape);
        free(shape);
    }
}

EvoExit cmd_runs(const Settings *s)
{
    EvoExit rc = EVO_EXIT_OK;
    out_init(s->wide);
    Store *st = inspect_open(s, &rc);
    if (!st)
        return rc;
    RunSummary *l = NULL;
    int n = 0;
    EvoErr err;
    if (store_run_list(st, &l, &n, &err)) {
        errorf("%s", err.msg);
        rc = EVO_EXIT_DB;
    } else if (s->json) {
        inspect_json_print(runs_json(l, n));
    } else {
        runs_text(st, l, n);
    }
    store_run_list_free(l, n);
    store_close(&st);
    return rc;
}

/*
 * progress: what a run says while it runs (status lines, generation
 * lines, events), its time limit, and the close of a generation. See
 * progress.h.
 */
#include "search/progress.h"

#include <jansson.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "msg.h"

/* ---- progress -------------------------------------------------------- */

void loop_live_line(Loop *L, const char *fmt, ...)
{
    if (!L->tty || L->cfg->quiet || L->cfg->json)
        return;
    char buf[160];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof(buf), fmt, ap);
    va_end(ap);
    /* cut to the terminal: a wrapped line would not be redrawn in place */
    char *fit = out_fit(buf, out_width_for(STDERR_FILENO, 0));
    fprintf(stderr, "\r\033[K%s", fit);
    free(fit);
    fflush(stderr);
}

void loop_live_clear(Loop *L)
{
    if (L->tty && !L->cfg->quiet && !L->cfg->json) {
        fputs("\r\033[K", stderr);
        fflush(stderr);
    }
}

static void fmt_dur(char *buf, size_t n, double s)
{
    if (s < 0 || !isfinite(s))
        snprintf(buf, n, "-");
    else if (s < 60)
        snprintf(buf, n, "%.0fs", s);
    else if (s < 3600)
        snprintf(buf, n, "%dm%02ds", (int)s / 60, (int)s % 60);
    else
        snprintf(buf, n, "%dh%02dm", (int)s / 3600, ((int)s % 3600) / 60);
}

static void report_generation(Loop *L, const GenerationRecord *g, int total_gens)
{
    double el = (time_now_ms() - L->t0) / 1000.0;
    double speed = L->base_latency > 0 && g->best_latency_us > 0 ? L->base_latency / g->best_latency_us : NAN;
    int left = total_gens - (int)g->generation;
    double eta = g->generation > 0 ? el / (double)(g->generation + 1) * left : NAN;
    loop_live_clear(L);
    if (L->cfg->json) {
        json_t *o = store_generation_json(g);   /* the row, from the store's table; then what is computed */
        json_object_set_new(o, "speedup", json_real(isnan(speed) ? 0.0 : speed));
        json_object_set_new(o, "elapsed_s", json_real(el));
        char *s = json_dumps(o, JSON_COMPACT);
        printf("%s\n", s);
        free(s);
        json_decref(o);
        fflush(stdout);
        return;
    }
    if (L->cfg->quiet)
        return;
    char e1[16], e2[16];
    fmt_dur(e1, sizeof(e1), el);
    fmt_dur(e2, sizeof(e2), eta);
    out_printf("gen %3lld/%-3d  evaluated %3lld  valid %3lld  accepted %3lld  reverted %3lld  best %8.2f us  "
               "%5.2fx  elapsed %s  eta %s\n",
               (long long)g->generation, total_gens, (long long)g->evaluated, (long long)g->valid,
               (long long)g->accepted, (long long)g->reverted, g->best_latency_us, isnan(speed) ? 0.0 : speed, e1,
               e2);
    fflush(stdout);
}

/* A line about the run (not a generation): text, or with --json the
 * object {"run", "event", "count", "runs"?}. Nothing with --quiet. */
void loop_report_event(Loop *L, const char *event, int count, const char *runs, const char *fmt, ...)
{
    if (L->cfg->quiet)
        return;
    loop_live_clear(L);
    if (L->cfg->json) {
        json_t *o = json_pack("{s:I, s:s, s:i}", "run", (json_int_t)L->run.id, "event", event, "count", count);
        if (runs)
            json_object_set_new(o, "runs", json_string(runs));
        char *txt = json_dumps(o, JSON_COMPACT);
        printf("%s\n", txt);
        free(txt);
        json_decref(o);
    } else {
        va_list ap;
        va_start(ap, fmt);
        vprintf(fmt, ap);
        va_end(ap);
        printf("\n");
    }
    fflush(stdout);
}

void loop_report_proposals(Loop *L, int64_t gen, int n, int want, int exhausted)
{
    if (gen == 0 && L->sum->warm_seeded)
        loop_report_event(L, "warm_start", L->sum->warm_seeded, L->sum->warm_runs,
                          "warm start: %d of generation 0's members seeded from run%s %s (same task, same device)",
                          L->sum->warm_seeded, strchr(L->sum->warm_runs, ',') ? "s" : "", L->sum->warm_runs);
    if (exhausted && !L->sum->space_exhausted) {
        L->sum->space_exhausted = 1;
        loop_report_event(L, "space_exhausted", n, NULL,
                          "gen %3lld: the valid space is exhausted: %d new of %d children asked for, every other "
                          "valid configuration was evaluated", (long long)gen, n, want);
    }
}

/* ---- limits ---------------------------------------------------------- */

int loop_time_limit_hit(Loop *L)
{
    if (L->cfg->stop && *L->cfg->stop) {
        L->sum->interrupted = 1;
        return 1;
    }
    if (L->cfg->time_limit_s > 0 && (time_now_ms() - L->t0) / 1000.0 >= L->cfg->time_limit_s) {
        L->sum->interrupted = 1;
        L->sum->time_limited = 1;
        return 1;
    }
    return 0;
}

/* ---- generations ----------------------------------------------------- */

int loop_generation_close(Loop *L, GenerationRecord *g, int64_t done, int total_gens, EvoErr *err)
{
    /* The generation's best counts everything committed up to now (a
     * resumed generation too), so read it back from the store. */
    CandidateRecord *best = NULL;
    int nb = 0;
    if (store_candidate_list(L->st, L->run.id, STORE_SURVIVORS_BY_LATENCY, 1, &best, &nb, err) == 0 && nb) {
        g->best_id = best[0].id;
        g->best_latency_us = best[0].latency_us;
    }
    store_candidates_free(best, nb);
    if (store_generation_put(L->st, g, err))
        return -1;
    if (done > L->run.generations_done) {
        L->run.generations_done = done;
        if (store_run_update(L->st, &L->run, err))
            return -1;
        L->sum->generations_done = (int)done;
    }
    if (total_gens >= 0)
        report_generation(L, g, total_gens);
    return 0;
}

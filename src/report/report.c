/*
 * report: gathering a run from the store for the HTML report (report.h):
 * its candidates with their parsed params and times, the generations, the
 * survivors (top N), the lineage of the best, failures by status and the
 * LLM statistics. Everything is read through the store's API; the page
 * itself is written by html.c and plots.c.
 */
#include "report/report.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "report/html.h"
#include "report/report_int.h"

/* ---- times ----------------------------------------------------------- */

/* Days since 1970-01-01 of a proleptic Gregorian date (H. Hinnant). */
static int64_t days_from_civil(int64_t y, unsigned m, unsigned d)
{
    y -= m <= 2;
    int64_t era = (y >= 0 ? y : y - 399) / 400;
    unsigned yoe = (unsigned)(y - era * 400);
    unsigned doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
    unsigned doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    return era * 146097 + (int64_t)doe - 719468;
}

/* "2026-11-22T04:10:08Z" (fractions of a second allowed) -> seconds since
 * the epoch; NaN when it does not parse. */
static double iso_seconds(const char *s)
{
    int y, mo, d, h, mi;
    double sec;
    if (!s || sscanf(s, "%d-%d-%dT%d:%d:%lf", &y, &mo, &d, &h, &mi, &sec) != 6 || mo < 1 || mo > 12 || d < 1 ||
        d > 31)
        return NAN;
    return (double)days_from_civil(y, (unsigned)mo, (unsigned)d) * 86400.0 + h * 3600.0 + mi * 60.0 + sec;
}

/* ---- gathering ------------------------------------------------------- */

static const char *const fail_order[] = {"incorrect", "crashed", "timeout", "launch_error",
                                         "resource", "compile_error", "invalid"};

static void count_failures(Report *r)
{
    r->fails = xcalloc(EVO_ARRAY_LEN(fail_order) + 1, sizeof(StatusCount));
    for (int i = 0; i < r->ncand; i++) {
        const char *st = r->cands[i].status ? r->cands[i].status : "?";
        if (strcmp(st, "ok") == 0)
            continue;
        int k = 0;
        while (k < r->nfails && strcmp(r->fails[k].status, st) != 0)
            k++;
        if (k == r->nfails) {
            if (r->nfails == (int)EVO_ARRAY_LEN(fail_order) + 1)
                continue;  /* the CHECK constraint allows no other status */
            snprintf(r->fails[k].status, sizeof(r->fails[k].status), "%s", st);
            r->nfails++;
        }
        r->fails[k].n++;
    }
    /* the fixed order of the schema's statuses, anything else last */
    for (int a = 0; a < r->nfails; a++)
        for (int b = a + 1; b < r->nfails; b++) {
            size_t ra = EVO_ARRAY_LEN(fail_order), rb = ra;
            for (size_t k = 0; k < EVO_ARRAY_LEN(fail_order); k++) {
                if (strcmp(fail_order[k], r->fails[a].status) == 0)
                    ra = k;
                if (strcmp(fail_order[k], r->fails[b].status) == 0)
                    rb = k;
            }
            if (rb < ra) {
                StatusCount t = r->fails[a];
                r->fails[a] = r->fails[b];
                r->fails[b] = t;
            }
        }
}

static void classify(Report *r, double t0)
{
    r->rc = xcalloc((size_t)(r->ncand ? r->ncand : 1), sizeof(RCand));
    r->base = r->best = -1;
    for (int i = 0; i < r->ncand; i++) {
        const CandidateRecord *c = &r->cands[i];
        RCand *x = &r->rc[i];
        x->c = c;
        x->params = c->params_json ? json_loads(c->params_json, 0, NULL) : NULL;
        if (x->params && !json_is_object(x->params)) {
            json_decref(x->params);
            x->params = NULL;
        }
        x->t_s = iso_seconds(c->decided_at ? c->decided_at : c->created_at) - t0;
        int ok = c->status && strcmp(c->status, "ok") == 0;
        const char *d = c->decision ? c->decision : "";
        x->valid = ok && c->gate_stage == GATE_STAGE_FULL && isfinite(c->latency_us);
        if (!ok || strcmp(d, "failed") == 0)
            x->kind = PK_FAILED;
        else if (strcmp(d, "baseline") == 0)
            x->kind = PK_BASELINE;
        else if (strcmp(d, "accepted") == 0)
            x->kind = PK_ACCEPTED;
        else
            x->kind = PK_REVERTED;
        if (x->kind != PK_FAILED && !isfinite(c->latency_us))
            x->kind = PK_FAILED;  /* never timed: nothing to place on a latency axis */
        if (x->valid)
            r->nvalid++;
        r->nok += ok;
        if ((r->run.baseline_id && c->id == r->run.baseline_id) || (r->base < 0 && strcmp(d, "baseline") == 0))
            r->base = i;
        /* the fastest survivor: the best_per_run view's rule */
        int surv = x->valid && (strcmp(d, "baseline") == 0 || strcmp(d, "accepted") == 0);
        if (surv && (r->best < 0 || c->latency_us < r->cands[r->best].latency_us))
            r->best = i;
    }
    if (r->base >= 0)
        r->base_params = r->rc[r->base].params;
}

/* The ancestors of the best, root first. A parent outside this run (or
 * missing) ends the chain; a cycle (a damaged store) is an error. */
static int load_chain(Store *st, Report *r, EvoErr *err)
{
    if (r->best < 0)
        return 0;
    int cap = 8, n = 0;
    CandidateRecord *rev = xcalloc((size_t)cap, sizeof(*rev));
    int64_t id = r->cands[r->best].id;
    int rc = 0;
    while (id && n < 10000) {
        if (n == cap) {
            cap *= 2;
            rev = xrealloc(rev, (size_t)cap * sizeof(*rev));
        }
        for (int i = 0; i < n && rc == 0; i++)
            if (rev[i].id == id)   /* a store is data: a parent link may loop */
                rc = err_set(err, "%s: candidate %lld is its own ancestor (a damaged or foreign store)",
                             store_path(st), (long long)id);
        if (rc)
            break;
        int got = store_candidate_get(st, id, &rev[n], err);
        if (got < 0) {
            rc = -1;
            break;
        }
        if (got == 0)
            break;
        id = rev[n].parent_id;
        n++;
    }
    if (rc) {
        for (int i = 0; i < n; i++)
            candidate_record_free(&rev[i]);
        free(rev);
        return -1;
    }
    for (int i = 0; i < n / 2; i++) {
        CandidateRecord t = rev[i];
        rev[i] = rev[n - 1 - i];
        rev[n - 1 - i] = t;
    }
    r->chain = rev;
    r->nchain = n;
    return 0;
}

static void report_free(Report *r)
{
    for (int i = 0; i < r->ncand && r->rc; i++)
        json_decref(r->rc[i].params);
    free(r->rc);
    store_candidates_free(r->cands, r->ncand);
    store_candidates_free(r->top, r->ntop);
    store_candidates_free(r->chain, r->nchain);
    store_generations_free(r->gens, r->ngen);
    free(r->llm);
    free(r->fails);
    json_decref(r->config);
    json_decref(r->device);
    run_record_free(&r->run);
    memset(r, 0, sizeof(*r));
}

int report_render(Store *st, int64_t run_id, const ReportOptions *o, char **html, ReportInfo *info,
                  EvoErr *err)
{
    Report r;
    memset(&r, 0, sizeof(r));
    *html = NULL;
    r.top_n = o && o->top_n > 0 ? o->top_n : 10;
    r.db_path = store_path(st);
    int got = store_run_get(st, run_id, &r.run, err);
    if (got <= 0)
        return got;
    if (store_candidate_list(st, r.run.id, STORE_ALL_BY_ID, 0, &r.cands, &r.ncand, err) ||
        store_candidate_list(st, r.run.id, STORE_SURVIVORS_BY_LATENCY, r.top_n, &r.top, &r.ntop, err) ||
        store_generation_list(st, r.run.id, &r.gens, &r.ngen, err) ||
        store_llm_mode_stats(st, r.run.id, &r.llm, &r.nllm, err))
        goto fail;
    r.config = r.run.config_json ? json_loads(r.run.config_json, 0, NULL) : NULL;
    r.device = r.run.device_json ? json_loads(r.run.device_json, 0, NULL) : NULL;
    classify(&r, iso_seconds(r.run.started_at));
    count_failures(&r);
    if (load_chain(st, &r, err))
        goto fail;
    StrBuf sb = {0};
    report_html(&sb, &r);
    *html = sb_take(&sb);
    if (info) {
        info->run_id = r.run.id;
        info->candidates = r.ncand;
        info->valid = r.nok;
        info->fully_gated = r.nvalid;
        info->best_id = r.best >= 0 ? r.cands[r.best].id : 0;
    }
    report_free(&r);
    return 1;
fail:
    report_free(&r);
    return -1;
}

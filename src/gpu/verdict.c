/*
 * verdict: the gate's statuses, options and report. See verdict.h.
 */
#include "gpu/verdict.h"

#include <math.h>
#include <stdio.h>
#include <string.h>


/* ---- statuses --------------------------------------------------------- */

const char *const gate_status_names[EVAL_NSTATUS] = {
    "ok", "incorrect", "crashed", "timeout", "launch_error", "resource", "compile_error", "invalid",
};

const char *gate_status_name(EvalStatus s)
{
    return (unsigned)s < EVAL_NSTATUS ? gate_status_names[s] : "?";
}

int gate_status_parse(const char *name)
{
    for (int i = 0; name && i < EVAL_NSTATUS; i++)
        if (strcmp(name, gate_status_names[i]) == 0)
            return i;
    return -1;
}

EvalStatus gate_status_from_cuda(CUresult r)
{
    if (cuda_error_is_sticky(r))
        return EVAL_CRASHED;
    if (r == CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES || r == CUDA_ERROR_OUT_OF_MEMORY)
        return EVAL_RESOURCE;
    return EVAL_LAUNCH_ERROR;
}

/* ---- reports ---------------------------------------------------------- */

void gate_options_default(GateOptions *o)
{
    memset(o, 0, sizeof(*o));
    o->nseeds = 3;
}

/* got and want are written as 0 when not finite; got_nan says got was. */
static json_t *finite_put(const void *at)
{
    double v = *(const double *)at;
    return json_real(isfinite(v) ? v : 0);
}

static int number_get(const json_t *v, void *at)
{
    if (!json_is_number(v))
        return -1;
    *(double *)at = json_number_value(v);
    return 0;
}

static json_t *nan_put(const void *at)
{
    return json_boolean(!isfinite(*(const double *)at));
}

static int nan_get(const json_t *v, void *at)
{
    if (!json_is_boolean(v) && !json_is_integer(v))
        return -1;
    if (json_is_true(v) || (json_is_integer(v) && json_integer_value(v)))
        *(double *)at = NAN;
    return 0;
}

static int has_profile(const void *rec)
{
    return ((const GateReport *)rec)->profile[0] != 0;
}

static int several_profiles(const void *rec)
{
    return ((const GateReport *)rec)->profiles > 1;
}

#define GR_CUSTOM(key_, m, put_, get_) {.key = key_, .type = F_CUSTOM, .off = offsetof(GateReport, m), .put = put_, \
                                        .get = get_}
static const Field report_fields[] = {
    {.key = "status", .type = F_NAME, .off = offsetof(GateReport, status), .req = 1, .names = gate_status_names,
     .max = EVAL_NSTATUS},
    FJ_CHARS(GateReport, check),   FJ_CHARS(GateReport, error),   FJ_CHARS(GateReport, cuda_error),
    FJ_CHARS(GateReport, shape),   FJ_CHARS(GateReport, buffer),  FJ(GateReport, seed, F_U64),
    FJ(GateReport, run, F_I32),    FJ(GateReport, max_abs, F_REAL), FJ(GateReport, max_rel, F_REAL),
    FJ(GateReport, first_bad, F_I64), FJ(GateReport, nbad, F_U64),
    GR_CUSTOM("got", got, finite_put, number_get), GR_CUSTOM("want", want, finite_put, number_get),
    GR_CUSTOM("got_nan", got, nan_put, nan_get),
    FJ(GateReport, cand_ms, F_REAL), FJ(GateReport, ref_ms, F_REAL), FJ(GateReport, seeds_run, F_I32),
    FJ(GateReport, fatal, F_BOOL),
    {.key = "profile", .type = F_CHARS, .off = offsetof(GateReport, profile), .size = sizeof(((GateReport *)0)->profile),
     .when = has_profile},
    {.key = "profiles", .type = F_I32, .off = offsetof(GateReport, profiles), .when = several_profiles},
};

json_t *gate_report_to_json(const GateReport *r)
{
    return fld_to_json(report_fields, NFIELDS(report_fields), r);
}

int gate_report_from_json(const json_t *j, GateReport *r)
{
    EvoErr e;
    memset(r, 0, sizeof(*r));
    r->first_bad = -1;
    r->profiles = 1;
    if (fld_from_json(report_fields, NFIELDS(report_fields), j, r, &e) == 0)
        return 0;
    r->status = EVAL_INVALID;
    snprintf(r->error, sizeof(r->error), "worker reply: gate report: %s", e.msg);
    return -1;
}

void gate_report_format(const GateReport *r, char *buf, size_t cap)
{
    char prof[64] = "";
    if (r->status == EVAL_OK) {
        int np = r->profiles > 1 ? r->profiles : 1, ns = r->seeds_run / np;
        if (np > 1)
            snprintf(prof, sizeof(prof), " x %d profiles", np);
        snprintf(buf, cap, "ok: %d seed%s%s passed (last shape '%s'); max abs err %.3g, max rel err %.3g; "
                 "candidate %.4f ms, reference %.4f ms", ns, ns == 1 ? "" : "s", prof, r->shape, r->max_abs,
                 r->max_rel, r->cand_ms, r->ref_ms);
        return;
    }
    if (r->profile[0] && strcmp(r->profile, "default") != 0)
        snprintf(prof, sizeof(prof), ", profile %s", r->profile);
    if (r->check[0] && r->first_bad >= 0)
        snprintf(buf, cap, "%s: %s in %s (shape '%s'%s, seed %llu, run %d): %llu bad, first at %lld: got %.6g "
                 "want %.6g; max abs err %.3g, max rel err %.3g", gate_status_name(r->status), r->check,
                 r->buffer, r->shape, prof, (unsigned long long)r->seed, r->run, (unsigned long long)r->nbad,
                 (long long)r->first_bad, r->got, r->want, r->max_abs, r->max_rel);
    else
        snprintf(buf, cap, "%s%s%s: %s%s%s (shape '%s'%s, seed %llu)", gate_status_name(r->status),
                 r->check[0] ? ": " : "", r->check, r->error, r->cuda_error[0] ? " " : "", r->cuda_error,
                 r->shape, prof, (unsigned long long)r->seed);
}

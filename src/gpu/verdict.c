/*
 * verdict: the gate's statuses, options and report. See verdict.h.
 */
#include "gpu/verdict.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "gpu/proto.h"

/* ---- statuses --------------------------------------------------------- */

static const char *const status_names[EVAL_NSTATUS] = {
    "ok", "incorrect", "crashed", "timeout", "launch_error", "resource", "compile_error", "invalid",
};

const char *gate_status_name(EvalStatus s)
{
    return (unsigned)s < EVAL_NSTATUS ? status_names[s] : "?";
}

int gate_status_parse(const char *name)
{
    for (int i = 0; name && i < EVAL_NSTATUS; i++)
        if (strcmp(name, status_names[i]) == 0)
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

json_t *gate_report_to_json(const GateReport *r)
{
    json_t *o = json_object();
    json_object_set_new(o, "status", json_string(gate_status_name(r->status)));
    json_object_set_new(o, "check", json_string(r->check));
    json_object_set_new(o, "error", json_string(r->error));
    json_object_set_new(o, "cuda_error", json_string(r->cuda_error));
    json_object_set_new(o, "shape", json_string(r->shape));
    json_object_set_new(o, "buffer", json_string(r->buffer));
    json_object_set_new(o, "seed", json_integer((json_int_t)r->seed));
    json_object_set_new(o, "run", json_integer(r->run));
    json_object_set_new(o, "max_abs", json_real(r->max_abs));
    json_object_set_new(o, "max_rel", json_real(r->max_rel));
    json_object_set_new(o, "first_bad", json_integer(r->first_bad));
    json_object_set_new(o, "nbad", json_integer((json_int_t)r->nbad));
    json_object_set_new(o, "got", json_real(isfinite(r->got) ? r->got : 0));
    json_object_set_new(o, "want", json_real(isfinite(r->want) ? r->want : 0));
    json_object_set_new(o, "got_nan", json_boolean(!isfinite(r->got)));
    json_object_set_new(o, "cand_ms", json_real(r->cand_ms));
    json_object_set_new(o, "ref_ms", json_real(r->ref_ms));
    json_object_set_new(o, "seeds_run", json_integer(r->seeds_run));
    json_object_set_new(o, "fatal", json_boolean(r->fatal));
    if (r->profile[0])
        json_object_set_new(o, "profile", json_string(r->profile));
    if (r->profiles > 1)
        json_object_set_new(o, "profiles", json_integer(r->profiles));
    return o;
}

void gate_report_from_json(const json_t *j, GateReport *r)
{
    int st = gate_status_parse(proto_get_str(j, "status", ""));
    memset(r, 0, sizeof(*r));
    r->status = st < 0 ? EVAL_INVALID : (EvalStatus)st;
    proto_copy_str(j, "check", r->check, sizeof(r->check));
    proto_copy_str(j, "error", r->error, sizeof(r->error));
    proto_copy_str(j, "cuda_error", r->cuda_error, sizeof(r->cuda_error));
    proto_copy_str(j, "shape", r->shape, sizeof(r->shape));
    proto_copy_str(j, "buffer", r->buffer, sizeof(r->buffer));
    r->seed = (uint64_t)proto_get_int(j, "seed", 0);
    r->run = (int)proto_get_int(j, "run", 0);
    r->max_abs = proto_get_num(j, "max_abs", 0);
    r->max_rel = proto_get_num(j, "max_rel", 0);
    r->first_bad = proto_get_int(j, "first_bad", -1);
    r->nbad = (uint64_t)proto_get_int(j, "nbad", 0);
    r->got = proto_get_int(j, "got_nan", 0) ? NAN : proto_get_num(j, "got", 0);
    r->want = proto_get_num(j, "want", 0);
    r->cand_ms = proto_get_num(j, "cand_ms", 0);
    r->ref_ms = proto_get_num(j, "ref_ms", 0);
    r->seeds_run = (int)proto_get_int(j, "seeds_run", 0);
    r->fatal = (int)proto_get_int(j, "fatal", 0);
    proto_copy_str(j, "profile", r->profile, sizeof(r->profile));
    r->profiles = (int)proto_get_int(j, "profiles", 1);
    if (st < 0 && !r->error[0])
        snprintf(r->error, sizeof(r->error), "gate report without a valid status");
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

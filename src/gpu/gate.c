/*
 * gate: the correctness gate's device routine, which runs inside the
 * worker. See gate.h for the checks and their order; the host math
 * (generation, sentinels, comparison) is gen.c, the statuses and the
 * report verdict.c.
 */
#include "gpu/gate.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpu/gen.h"
#include "gpu/resident.h"

/* ---- device routine --------------------------------------------------- */

/* Record a CUDA failure in the report. */
static void rep_cuda(GateReport *rep, CudaCtx *c, CUresult r, const EvoErr *e, const char *what)
{
    rep->status = r == CUDA_SUCCESS ? EVAL_INVALID : gate_status_from_cuda(r);
    rep->fatal = cuda_error_is_sticky(r);
    snprintf(rep->cuda_error, sizeof(rep->cuda_error), "%s", r == CUDA_SUCCESS ? "" : cuda_error_name(c->api, r));
    snprintf(rep->error, sizeof(rep->error), "%s: %s", what, e->msg);
}

static uint64_t launch_ctas(const PlanLaunch *l)
{
    return (uint64_t)l->grid[0] * l->grid[1] * l->grid[2];
}

/* Read element i of a device buffer as a double (for the report). */
static double fetch(CudaCtx *c, CUdeviceptr p, DType t, int64_t i)
{
    unsigned char v[8] = {0};
    if (!p || i < 0 || c->api->cuMemcpyDtoH(v, p + (CUdeviceptr)i * (CUdeviceptr)dtype_size(t),
                                            (size_t)dtype_size(t)) != CUDA_SUCCESS)
        return NAN;
    return gate_load(t, v, 0);
}

/* Turn a compare summary into GateCmp terms and, on failure, the report.
 * Returns 1 when it passes. */
static int judge_compare(CudaCtx *c, const PlanBuffer *b, const DevSum *s, double atol, const char *fail_check,
                         CUdeviceptr got, CUdeviceptr want, GateReport *rep)
{
    double max_abs = devsum_real(s->max_abs), max_rel = devsum_real(s->max_rel);
    double ref_absmax = devsum_real(s->ref_absmax), got_absmax = devsum_real(s->got_absmax);
    const char *check;
    if (max_abs > rep->max_abs)
        rep->max_abs = max_abs;
    if (max_rel > rep->max_rel)
        rep->max_rel = max_rel;
    if (s->nunwritten)
        check = "unwritten";
    else if (s->nnan)
        check = "nan";
    else if (b->count > 0 && ref_absmax > 10 * atol && got_absmax <= atol)
        check = "zero_output";
    else if (s->nmis)
        check = fail_check ? fail_check : "mismatch";
    else
        return 1;
    rep->status = EVAL_INCORRECT;
    snprintf(rep->check, sizeof(rep->check), "%s", check);
    snprintf(rep->buffer, sizeof(rep->buffer), "%s", b->name);
    rep->first_bad = devsum_first_bad(s);
    rep->nbad = s->nbad;
    rep->got = fetch(c, got, b->dtype, rep->first_bad);
    rep->want = fetch(c, want, b->dtype, rep->first_bad);
    snprintf(rep->error, sizeof(rep->error),
             "%s: %llu of %llu elements bad (%llu unwritten, %llu NaN/Inf), max|ref| %.4g, max|got| %.4g, "
             "atol %.3g rtol %.3g", rep->check, (unsigned long long)s->nbad, (unsigned long long)b->count,
             (unsigned long long)s->nunwritten, (unsigned long long)s->nnan, ref_absmax, got_absmax, b->atol, b->rtol);
    return 0;
}

/* Summary slots of one variant (profile, seed): per buffer, 5 of them. */
enum { SUM_IN_A, SUM_IN_B, SUM_RUN1, SUM_RUN2, SUM_RUN21, SUM_PER_BUF };

/* Enqueue variant k's two candidate runs and every comparison of their
 * results. Returns 0 or -1 (err, *cu). */
static int enqueue_variant(CudaCtx *c, Resident *res, const Bay *bay, int k, const Plan *plan, const CudaPlan cp[2],
                        const CudaLaunches cl[2], CUevent e0, CUevent e1, CUdeviceptr sums, int *run, CUresult *cu,
                        EvoErr *err)
{
    DevKern *dk = resident_kern(res);
    for (int set = 0; set < 2; set++) {
        *run = set + 1;
        if (resident_reset(res, bay, set, k, plan, 0, cu, err) != 0)
            return -1;
        if (k == 0 && set == 0 && (*cu = c->api->cuEventRecord(e0, c->stream)) != CUDA_SUCCESS)
            return cuda_check(c->api, *cu, "cuEventRecord", err);
        if (cuda_launches_run(c, &cl[set], cu, err) != 0)
            return -1;
        if (k == 0 && set == 0 && (*cu = c->api->cuEventRecord(e1, c->stream)) != CUDA_SUCCESS)
            return cuda_check(c->api, *cu, "cuEventRecord", err);
    }
    for (int i = 0; i < plan->nbuffers; i++) {
        const PlanBuffer *b = &plan->buffers[i];
        CUdeviceptr slot = sums + (CUdeviceptr)((size_t)(k * plan->nbuffers + i) * SUM_PER_BUF * sizeof(DevSum));
        CUdeviceptr ref = resident_reference(bay, k, i);
        if (!b->for_cand || b->count == 0)
            continue;
        if (b->role == ROLE_INPUT) {
            uint64_t nw = (uint64_t)b->count * (uint64_t)dtype_size(b->dtype) / 2;
            for (int set = 0; set < 2; set++)
                if (devkern_diff(dk, cp[set].dptr[i], resident_pristine(bay, k, i), 0, nw,
                                 slot + (CUdeviceptr)((SUM_IN_A + set) * sizeof(DevSum)), cu, err) != 0)
                    return -1;
        } else if (b->role == ROLE_OUTPUT && ref) {
            if (devkern_compare(dk, cp[0].dptr[i], ref, b->count, b->dtype, b->atol, b->rtol,
                                slot + SUM_RUN1 * sizeof(DevSum), cu, err) != 0 ||
                devkern_compare(dk, cp[1].dptr[i], ref, b->count, b->dtype, b->atol, b->rtol,
                                slot + SUM_RUN2 * sizeof(DevSum), cu, err) != 0 ||
                devkern_compare(dk, cp[1].dptr[i], cp[0].dptr[i], b->count, b->dtype, 2 * b->atol, 2 * b->rtol,
                                slot + SUM_RUN21 * sizeof(DevSum), cu, err) != 0)
                return -1;
        }
    }
    return 0;
}

/* Judge variant k from its summaries, in the gate's order. 1 passes. */
static int judge_variant(CudaCtx *c, const Bay *bay, int k, const Plan *plan, const CudaPlan cp[2], const DevSum *hs,
                      GateReport *rep)
{
    for (int i = 0; i < plan->nbuffers; i++) {
        const PlanBuffer *b = &plan->buffers[i];
        const DevSum *s = hs + (size_t)(k * plan->nbuffers + i) * SUM_PER_BUF;
        if (b->role != ROLE_INPUT || !b->for_cand || b->count == 0)
            continue;
        for (int set = 0; set < 2; set++) {
            const DevSum *d = &s[SUM_IN_A + set];
            if (!d->nbad)
                continue;
            rep->status = EVAL_INCORRECT;
            rep->run = set + 1;
            snprintf(rep->check, sizeof(rep->check), "inputs_modified");
            snprintf(rep->buffer, sizeof(rep->buffer), "%s", b->name);
            rep->first_bad = devsum_first_bad(d) * 2 / dtype_size(b->dtype);
            rep->got = fetch(c, cp[set].dptr[i], b->dtype, rep->first_bad);
            rep->want = fetch(c, resident_pristine(bay, k, i), b->dtype, rep->first_bad);
            rep->nbad = d->nbad;
            snprintf(rep->error, sizeof(rep->error),
                     "the candidate wrote its input '%s' (%llu 16-bit words differ from the pristine copy)", b->name,
                     (unsigned long long)d->nbad);
            return 0;
        }
    }
    for (int pass = 0; pass < 3; pass++)
        for (int i = 0; i < plan->nbuffers; i++) {
            const PlanBuffer *b = &plan->buffers[i];
            const DevSum *s = hs + (size_t)(k * plan->nbuffers + i) * SUM_PER_BUF;
            CUdeviceptr ref = resident_reference(bay, k, i);
            if (b->role != ROLE_OUTPUT || !b->for_cand || b->count == 0 || !ref)
                continue;
            rep->run = pass == 0 ? 1 : 2;
            if (pass == 0 && !judge_compare(c, b, &s[SUM_RUN1], b->atol, NULL, cp[0].dptr[i], ref, rep))
                return 0;
            if (pass == 1 && !judge_compare(c, b, &s[SUM_RUN2], b->atol, "stale", cp[1].dptr[i], ref, rep))
                return 0;
            if (pass == 2 && !judge_compare(c, b, &s[SUM_RUN21], 2 * b->atol, "nondeterministic", cp[1].dptr[i],
                                            cp[0].dptr[i], rep))
                return 0;
        }
    return 1;
}

/* The report names the seed and profile of variant k. */
static void variant_names(GateReport *rep, const Plan *plan, const Bay *bay, int k)
{
    rep->seed = resident_variant_seed(bay, k);
    snprintf(rep->profile, sizeof(rep->profile), "%s", plan_profile_name(plan, resident_variant_profile(bay, k)));
}

/* 1 (rep: invalid, min_ctas) when the plan's largest launch has fewer
 * CTAs than the task requires. */
static int too_few_ctas(const Plan *plan, GateReport *rep)
{
    uint64_t largest = 0;
    for (int i = 0; i < plan->nlaunches; i++)
        if (launch_ctas(&plan->launches[i]) > largest)
            largest = launch_ctas(&plan->launches[i]);
    if (plan->min_ctas > 0 && largest < (uint64_t)plan->min_ctas) {
        rep->status = EVAL_INVALID;
        snprintf(rep->check, sizeof(rep->check), "min_ctas");
        snprintf(rep->error, sizeof(rep->error), "largest launch has %llu CTAs, the task requires at least %d",
                 (unsigned long long)largest, plan->min_ctas);
        return 1;
    }
    return 0;
}

/* The candidate changed resident state or red zones: that verdict. */
static void wrote_outside(GateReport *rep, int resident_bad, int guard_bad, const char *where)
{
    rep->status = EVAL_INCORRECT;
    rep->nbad = 0;
    rep->first_bad = -1;
    snprintf(rep->check, sizeof(rep->check), "%s", resident_bad ? "resident_modified" : "out_of_bounds");
    if (resident_bad)
        snprintf(rep->error, sizeof(rep->error),
                 "the candidate wrote outside its buffers: the resident inputs or reference outputs of %d "
                 "shape%s changed (they are made again)", resident_bad, resident_bad == 1 ? "" : "s");
    else
        snprintf(rep->error, sizeof(rep->error), "the candidate wrote outside its buffers: %d red zone%s changed, "
                 "first %s", guard_bad, guard_bad == 1 ? "" : "s", where);
}

/* EVOENG_GATE_PHASES=1: the host time of each phase of a gate to stderr
 * (where its time goes; the syncs are the verifies' and the summaries').
 * ph[0..6]: the phases' start times; the last one ends now. */
static void phases_print(const GateReport *rep, const Bay *bay, const double *ph)
{
    static int phases = -1;
    if (phases < 0)
        phases = getenv("EVOENG_GATE_PHASES") && strcmp(getenv("EVOENG_GATE_PHASES"), "1") == 0;
    if (phases)
        fprintf(stderr, "gate phases %s (%d variants): verify %.2f, bay %.2f, prepare %.2f, enqueue %.2f, "
                "wait %.2f, judge %.2f, verify %.2f ms\n", rep->shape, resident_nvariants(bay), ph[1] - ph[0],
                ph[2] - ph[1], ph[3] - ph[2], ph[4] - ph[3], ph[5] - ph[4], ph[6] - ph[5], time_now_ms() - ph[6]);
}

int gate_run(CudaCtx *c, Resident *res, const Plan *plan, CUmodule cand, CUmodule ref, int ref_id,
             const GateOptions *opt, GateReport *rep, EvoErr *err)
{
    CudaApi *api = c->api;
    CudaPlan cp[2] = {{0}, {0}};
    CudaLaunches cl[2] = {{0}, {0}};
    CUevent e0 = NULL, e1 = NULL;
    CUresult cu = CUDA_SUCCESS;
    CUdeviceptr sums = 0;
    const DevSum *hs = NULL;
    EvoErr e = {{0}};
    Bay *bay = NULL;
    uint64_t seeds[16];
    int nseeds = opt && opt->nseeds > 0 ? opt->nseeds : 3, resident_bad = 0, guard_bad = 0, brc, nvar;
    char where[160];
    float ms = 0;
    (void)err;

    memset(rep, 0, sizeof(*rep));
    rep->first_bad = -1;
    rep->profiles = plan_nprofiles(plan);
    snprintf(rep->shape, sizeof(rep->shape), "%s", plan->shape_label ? plan->shape_label : "");
    if (nseeds > 16)
        nseeds = 16;
    for (int s = 0; s < nseeds; s++)
        seeds[s] = opt && opt->seeds_given ? opt->seeds[s] : (uint64_t)(s + 1);

    if (too_few_ctas(plan, rep))
        return 0;
    double ph[8] = {time_now_ms()};
    /* whatever an earlier request may have written over is made again;
     * right after another gate's closing verify (the 16 gate shapes of a
     * stage B in a row) nothing can have been, and the verify is skipped */
    if (!resident_verified(res) &&
        resident_verify(res, &resident_bad, &guard_bad, where, sizeof(where), &cu, &e) != 0) {
        rep_cuda(rep, c, cu, &e, "verifying the resident state");
        goto done;
    }
    resident_begin(res);   /* from here the candidate may run: not verified until the closing verify */
    ph[1] = time_now_ms();
    brc = resident_bay_gate(res, plan, ref, ref_id, seeds, nseeds, &bay, rep, &cu, &e);
    ph[2] = time_now_ms();
    if (brc == 1)
        goto done;
    if (brc != 0) {
        rep_cuda(rep, c, cu, &e, "resident state");
        if (cu == CUDA_ERROR_OUT_OF_MEMORY || cu == CUDA_SUCCESS)
            rep->status = EVAL_RESOURCE;
        goto done;
    }
    for (int set = 0; set < 2; set++) {
        resident_plan(bay, set, plan, &cp[set]);
        if (cuda_launches_prepare(c, &cp[set], cand, plan->launches, plan->nlaunches, &cl[set], &cu, &e) != 0) {
            rep_cuda(rep, c, cu, &e, "candidate");
            goto done;
        }
    }
    if ((cu = api->cuEventCreate(&e0, CU_EVENT_DEFAULT)) != CUDA_SUCCESS ||
        (cu = api->cuEventCreate(&e1, CU_EVENT_DEFAULT)) != CUDA_SUCCESS) {
        cuda_check(api, cu, "cuEventCreate", &e);
        rep_cuda(rep, c, cu, &e, "events");
        goto done;
    }
    nvar = resident_nvariants(bay);
    if (resident_sums_reset(res, nvar * plan->nbuffers * SUM_PER_BUF, &sums, &cu, &e) != 0) {
        rep_cuda(rep, c, cu, &e, "summaries");
        goto done;
    }
    ph[3] = time_now_ms();
    /* every variant's runs and comparisons go out at once; one sync */
    for (int k = 0; k < nvar; k++) {
        variant_names(rep, plan, bay, k);
        if (enqueue_variant(c, res, bay, k, plan, cp, cl, e0, e1, sums, &rep->run, &cu, &e) != 0) {
            rep_cuda(rep, c, cu, &e, rep->run == 2 ? "candidate (second run)" : "candidate");
            goto done;
        }
    }
    ph[4] = time_now_ms();
    if (resident_sums_read(res, nvar * plan->nbuffers * SUM_PER_BUF, &hs, &cu, &e) != 0) {
        rep_cuda(rep, c, cu, &e, "candidate");
        goto done;
    }
    ph[5] = time_now_ms();
    if (api->EventElapsedTime(&ms, e0, e1) == CUDA_SUCCESS)
        rep->cand_ms = ms;
    for (int k = 0; k < nvar; k++) {
        variant_names(rep, plan, bay, k);
        if (!judge_variant(c, bay, k, plan, cp, hs, rep))
            goto verify;
        rep->seeds_run++;
    }
    rep->profile[0] = 0;
    rep->status = EVAL_OK;
    rep->run = 0;
    rep->first_bad = -1;
verify:
    ph[6] = time_now_ms();
    /* nothing outside the candidate's own buffers may have changed */
    if (resident_verify(res, &resident_bad, &guard_bad, where, sizeof(where), &cu, &e) != 0) {
        rep_cuda(rep, c, cu, &e, "verifying the resident state");
        goto done;
    }
    phases_print(rep, bay, ph);
    /* writing outside its buffers explains (and outranks) any mismatch it caused */
    if ((rep->status == EVAL_OK || rep->status == EVAL_INCORRECT) && (resident_bad || guard_bad))
        wrote_outside(rep, resident_bad, guard_bad, where);
done:
    if (e0)
        api->cuEventDestroy(e0);
    if (e1)
        api->cuEventDestroy(e1);
    for (int set = 0; set < 2; set++) {
        cuda_launches_free(&cl[set]);
        resident_plan_free(&cp[set]);
    }
    return 0;
}

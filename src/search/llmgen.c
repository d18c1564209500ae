/*
 * llmgen: the LLM's children of a generation: slots, requests, answers
 * turned into children and evaluated under the revert rule. See llmgen.h
 * and evolve.h.
 */
#include "search/llmgen.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "msg.h"
#include "search/judge.h"
#include "search/moves.h"
#include "search/ops.h"
#include "search/progress.h"
#include "search/stages.h"

#define LLM_STREAM 0x6c6c6d2d70617265ULL  /* "llm-pare": the LLM parents' RNG stream */
#define LLM_BATCH 8       /* answers taken (and compiled together) at a time */

/* ---- LLM children ---------------------------------------------------- */

/* How many of generation gen's children slots go to the LLM: llm_rate of
 * them (rounded, at least 1 when the rate is above 0), at most what the
 * request budget leaves after the earlier generations. -1 on error. */
int loop_llm_slots(Loop *L, int64_t gen, int npop, EvoErr *err)
{
    const EvolveConfig *cfg = L->cfg;
    if (!cfg->llm || gen == 0 || npop == 0 || cfg->llm_rate <= 0 || cfg->children <= 0 ||
        strcmp(cfg->strategy, "exhaustive") == 0)
        return 0;
    int n = (int)floor(cfg->children * cfg->llm_rate + 0.5);
    if (n < 1)
        n = 1;
    if (n > cfg->children)
        n = cfg->children;
    int max = llmop_max_requests(cfg->llm);
    if (max > 0) {
        /* steady: every recorded request and those still in flight (later
         * waves may have asked before this one) */
        int used = L->steady ? store_llm_request_count(L->st, L->run.id, 0, INT64_MAX, err)
                             : store_llm_request_count(L->st, L->run.id, 0, gen - 1, err);
        if (used < 0)
            return -1;
        if (L->steady)
            used += llmop_pending(cfg->llm);
        if (n > max - used)
            n = max - used > 0 ? max - used : 0;
    }
    return n;
}

/* Queue the generation's LLM requests. The parents come from their own
 * RNG stream; slots already recorded for this generation (a resumed run)
 * are not asked again. */
int loop_llm_submit_generation(Loop *L, int64_t gen, CandidateRecord *pop, int npop, int slots, EvoErr *err)
{
    int done = store_llm_request_count(L->st, L->run.id, gen, gen, err);
    if (done < 0)
        return -1;
    Rng rng;
    rng_seed(&rng, rng_mix(L->cfg->seed ^ LLM_STREAM, (uint64_t)gen));
    LlmOpContext ctx = {.st = L->st, .task = L->task, .dev = L->dev, .run_id = L->run.id, .generation = gen};
    for (int i = 0; i < slots; i++) {
        int a = evolve_tournament(&rng, npop, 3);
        if (i < done)
            continue;
        if (llmop_submit(L->cfg->llm, &ctx, &pop[a], err))
            return err_prefix(err, "LLM request for candidate %lld", (long long)pop[a].id);
    }
    return 0;
}

int loop_llm_children(Loop *L, int64_t gen, LlmOpAnswer *ans, int n, Child *kids, int64_t *req_ids, EvoErr *err)
{
    int nk = 0, rc = -1;
    for (int i = 0; i < n; i++) {
        const LlmResult *res = ans[i].res;
        LlmRequestRecord rr;
        llmop_request_record(&ans[i], L->run.id, &rr);
        Child c;
        int have = 0;
        loop_child_init(L, &c);
        if (res->status == LLM_OK) {
            CandidateRecord pr;
            int got = store_candidate_get(L->st, ans[i].parent_id, &pr, err);
            if (got == 1 && task_params_parse(L->task, pr.params_json, c.vals, err))
                got = -1;
            candidate_record_free(&pr);
            if (got != 1) {
                if (got == 0)
                    err_set(err, "LLM answer: parent candidate %lld is missing", (long long)ans[i].parent_id);
                loop_child_free(L, &c);
                llm_request_record_free(&rr);
                goto out;
            }
            char hex[65];
            c.own_source = xstrdup(res->code);
            c.custom_source = c.own_source;
            sha256_hex(c.own_source, strlen(c.own_source), hex);
            c.params_key = ops_params_key(L->task, c.vals, hex);
            int state = loop_key_state(L, c.params_key, gen, err);
            if (state < 0) {
                loop_child_free(L, &c);
                llm_request_record_free(&rr);
                goto out;
            }
            if (state != 0 || loop_in_batch(kids, nk, c.params_key)) {
                free(rr.status);
                rr.status = xstrdup("duplicate");
                free(rr.error);
                rr.error = xasprintf("the proposed kernel with the parent's params (%s) was already evaluated "
                                     "in this run", c.params_key);
            } else {
                have = 1;
                c.op = "llm";
                c.parent_id = ans[i].parent_id;
                c.rec.rationale = xstrdup(res->rationale);
            }
        }
        if (!have) {
            loop_live_clear(L);
            warnf("LLM request (generation %lld, parent #%lld) made no child: %s%s%s", (long long)gen,
                  (long long)ans[i].parent_id, rr.status, rr.error ? ": " : "", rr.error ? rr.error : "");
        }
        int src = store_llm_request_insert(L->st, &rr, err);
        if (!src && have)
            src = store_kernel_put(L->st, c.own_source, "llm", rr.id, err);
        if (!src)
            L->sum->llm_requests++;
        if (!src && have) {
            c.rec.llm_request_id = rr.id;
            req_ids[nk] = rr.id;
            kids[nk++] = c;
        } else {
            loop_child_free(L, &c);
        }
        llm_request_record_free(&rr);
        if (src)
            goto out;
    }
    rc = nk;
out:
    for (int i = 0; i < n; i++)
        llm_result_free(&ans[i].res);
    if (rc < 0)
        for (int i = 0; i < nk; i++)
            loop_child_free(L, &kids[i]);
    return rc;
}

/* Turn answers into children, then compile them together and decide each
 * against its parent. */
static int llm_answers(Loop *L, int64_t gen, GenerationRecord *g, LlmOpAnswer *ans, int n, EvoErr *err)
{
    Child *kids = xcalloc((size_t)n + 1, sizeof(Child));
    int64_t *req_ids = xcalloc((size_t)n + 1, sizeof(int64_t));
    int nk = loop_llm_children(L, gen, ans, n, kids, req_ids, err), rc = -1;
    if (nk >= 0) {
        loop_live_line(L, "gen %lld: evaluating %d LLM children", (long long)gen, nk);
        rc = loop_decide_all(L, kids, NULL, nk, g, req_ids, 0, err);
        for (int i = 0; i < nk; i++)
            loop_child_free(L, &kids[i]);
    }
    free(kids);
    free(req_ids);
    return rc;
}

/* Wait for the generation's LLM answers and evaluate them as they come.
 * On *stop or the time limit, what is still in flight is dropped. */
int loop_llm_collect_generation(Loop *L, int64_t gen, GenerationRecord *g, EvoErr *err)
{
    LlmOp *op = L->cfg->llm;
    while (llmop_pending(op) > 0) {
        if (L->sum->interrupted || loop_time_limit_hit(L))
            break;
        loop_live_line(L, "gen %lld: waiting for %d LLM answers", (long long)gen, llmop_pending(op));
        LlmOpAnswer ans[LLM_BATCH];
        int n = llmop_collect(op, 200, ans, LLM_BATCH);
        if (n > 0 && llm_answers(L, gen, g, ans, n, err))
            return -1;
    }
    if (llmop_pending(op) > 0)
        llmop_discard(op);
    return 0;
}


/*
 * evolve: the run (evolve_run) and, in the generation-synchronous mode,
 * its generations. The loop's parts are listed in loop.h.
 */
#include "search/evolve.h"

#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "compile/nvrtc.h"
#include "msg.h"
#include "search/judge.h"
#include "search/llmgen.h"
#include "search/loop.h"
#include "search/moves.h"
#include "search/ops.h"
#include "search/population.h"
#include "search/progress.h"
#include "search/propose.h"
#include "search/stages.h"
#include "search/steady.h"
#include "task/space_index.h"


/* ---- generations ----------------------------------------------------- */

static int run_generation(Loop *L, int64_t gen, int total_gens, EvoErr *err)
{
    double t0 = time_now_ms();
    GenerationRecord g = {.run_id = L->run.id, .generation = gen, .best_latency_us = NAN};
    CandidateRecord *pop = NULL;
    int npop = 0;
    if (gen > 0 && loop_load_population(L, gen, &pop, &npop, err))
        return -1;
    int nllm = loop_llm_slots(L, gen, npop, err);
    if (nllm < 0) {
        store_candidates_free(pop, npop);
        return -1;
    }
    int want = gen == 0 ? L->cfg->population - 1 : L->cfg->children - nllm;
    Child *kids = xcalloc((size_t)want + 1, sizeof(Child));
    int *done = xcalloc((size_t)want + 1, sizeof(int));
    int rc = -1, n = 0;
    /* The LLM requests go out first, to travel while the others compile and run. */
    if (nllm > 0 && loop_llm_submit_generation(L, gen, pop, npop, nllm, err))
        goto out;
    int exhausted = 0;
    n = want > 0 ? loop_propose(L, gen, pop, npop, kids, want, done, &exhausted, err) : 0;
    if (n < 0) {
        n = 0;
        goto out;
    }
    loop_report_proposals(L, gen, n, want, exhausted);
    if (loop_decide_all(L, kids, done, n, &g, NULL, 1, err))
        goto out;
    if (nllm > 0 && !L->sum->interrupted && loop_llm_collect_generation(L, gen, &g, err))
        goto out;
    rc = 0;
out:
    if (rc && L->cfg->llm)
        llmop_discard(L->cfg->llm);
    if (L->cfg->llm && L->sum->interrupted)
        llmop_discard(L->cfg->llm);
    for (int i = 0; i < n; i++)
        loop_child_free(L, &kids[i]);
    free(kids);
    free(done);
    store_candidates_free(pop, npop);
    if (rc == 0 && !L->sum->interrupted) {
        g.wall_ms = time_now_ms() - t0;
        return loop_generation_close(L, &g, gen + 1, total_gens, err);
    }
    return rc;
}

/* ---- the run --------------------------------------------------------- */

/* The summary's pipeline figures: this process's CPU and NVRTC's since the
 * start (cpu0, nv0), the evaluator's compile threads (ps0 at the start). */
static void pipe_figures(Loop *L, double cpu0, const NvrtcStats *nv0, const EvalPipeStats *ps0)
{
    EvolveSummary *s = L->sum;
    NvrtcStats nv;
    nvrtc_stats(&nv);
    nvrtc_stats_add(&nv, nv0, -1);   /* the run's */
    /* this process's CPU and its compile helpers' */
    s->cpu_s = (process_cpu_ms() - cpu0) / 1000.0 + nv.remote_cpu_s;
    if (!s->slots)
        s->slots = L->ev->slots ? L->ev->slots(L->ev_ctx) : 1;
    if (L->ev->pipe_stats) {
        EvalPipeStats p;
        memset(&p, 0, sizeof(p));
        L->ev->pipe_stats(L->ev_ctx, &p);
        s->pipe.lanes = p.lanes;
        s->pipe.compile_busy_s = p.compile_busy_s - ps0->compile_busy_s;
        s->pipe.units_now = p.units_now - ps0->units_now;
        s->pipe.units_next = p.units_next - ps0->units_next;
        s->pipe.units_spec = p.units_spec - ps0->units_spec;
        s->pipe.units_cancelled = p.units_cancelled - ps0->units_cancelled;
        s->pipe.taken_over = p.taken_over - ps0->taken_over;
        /* MPI: the agents compile; their units count as the run's */
        nvrtc_stats_add(&nv, &p.agents, 1);
        nvrtc_stats_add(&nv, &ps0->agents, -1);
    }
    s->nvrtc_cpu_s = nv.cpu_s;
    s->nvrtc_wall_s = nv.wall_s;
    s->nvrtc_units = nv.compiles;
    s->cache_hits = nv.cache_hits;
}

/* Evaluate and commit the baseline, or reload it on resume. */
static int setup_baseline(Loop *L, EvoErr *err)
{
    if (L->run.baseline_id) {
        CandidateRecord r;
        if (store_candidate_get(L->st, L->run.baseline_id, &r, err) != 1)
            return err_set(err, "run %lld: its baseline %lld is missing", (long long)L->run.id,
                           (long long)L->run.baseline_id);
        int rc = loop_child_from_record(L, &r, &L->baseline, err);
        L->base_latency = r.latency_us;
        candidate_record_free(&r);
        if (rc == 0 && L->baseline.own_source)
            L->base_kernel = xstrdup(L->baseline.own_source);
        return rc;
    }
    Child *b = &L->baseline;
    loop_child_init(L, b);
    task_defaults(L->task, b->vals);
    b->op = "baseline";
    if (L->cfg->baseline_source) {
        char hex[65];
        sha256_hex(L->cfg->baseline_source, strlen(L->cfg->baseline_source), hex);
        b->custom_source = L->cfg->baseline_source;
        b->params_key = ops_params_key(L->task, b->vals, hex);
        L->base_kernel = xstrdup(L->cfg->baseline_source);
        if (store_kernel_put(L->st, L->cfg->baseline_source, "source", 0, err))
            return -1;
    } else {
        b->params_key = ops_params_key(L->task, b->vals, NULL);
    }
    GenerationRecord g = {.run_id = L->run.id, .generation = 0};
    loop_live_line(L, "baseline: compiling");
    if (loop_decide_all(L, b, NULL, 1, &g, NULL, 0, err))
        return -1;
    if (!b->rec.id)
        return err_set(err, "the baseline was not evaluated (stopped)");
    if (strcmp(b->rec.status, "ok") != 0)
        return err_set(err, "the baseline (%s) failed: %s%s%s; see 'evoeng show %lld'", b->params_key,
                       b->rec.status, b->rec.error ? ": " : "", b->rec.error ? b->rec.error : "",
                       (long long)b->rec.id);
    L->base_latency = b->rec.latency_us;
    L->run.baseline_id = b->rec.id;
    L->sum->baseline_latency_us = L->base_latency;
    return store_run_update(L->st, &L->run, err);
}

/* The baseline judged (or reloaded) and every slot calibrated on it;
 * meanwhile the valid configurations are enumerated for the first
 * immigrants. 0 or -1. */
static int start_run(Loop *L, EvoErr *err)
{
    const EvaluatorOps *ev = L->ev;
    if (strcmp(L->cfg->strategy, "exhaustive") != 0)
        loop_space_ahead(L);
    if (setup_baseline(L, err))
        return -1;
    double t_base = time_now_ms();
    if (ev->calibrate && ev->slots && ev->slots(L->ev_ctx) > 1 && ev->calibrate(L->ev_ctx, &L->baseline, err))
        return -1;
    if (getenv("EVOENG_STEADY_DEBUG"))
        fprintf(stderr, "dbg start: baseline %.0f ms, calibrate %.0f ms\n", t_base - L->t0, time_now_ms() - t_base);
    L->sum->baseline_latency_us = L->base_latency;
    return 0;
}

static char *dupnull(const char *s)
{
    return s ? xstrdup(s) : NULL;
}

/* The row of a new run: the task, the configuration, the device. */
static void new_run_record(Loop *L)
{
    const EvolveConfig *cfg = L->cfg;
    L->run.task_name = xstrdup(task_name(L->task));
    L->run.task_path = xstrdup(cfg->task_path ? cfg->task_path : task_path(L->task));
    L->run.task_json = xstrdup(task_json(L->task));
    L->run.config_json = xstrdup(cfg->config_json ? cfg->config_json : "{}");
    L->run.device_name = dupnull(cfg->device_name);
    L->run.device_arch = dupnull(cfg->device_arch);
    L->run.device_json = dupnull(cfg->device_json);
    L->run.nvrtc_version = dupnull(cfg->nvrtc_version);
    L->run.driver_version = dupnull(cfg->driver_version);
    L->run.seed = (int64_t)cfg->seed;
    L->run.strategy = xstrdup(cfg->strategy);
    L->run.generations_done = 0;
}

/* What a run keeps for its proposals: the enumerated space and its index,
 * the survivors in memory, the speculative children. */
static void free_lookups(Loop *L)
{
    loop_space_cancel(L);
    space_index_free(&L->sidx);
    task_space_free(&L->space);
    loop_survivors_free(L);
    loop_spec_free(L);
}

int evolve_run(Store *st, Task *task, const DeviceInfo *dev, const EvaluatorOps *ev, void *ev_ctx,
               const EvolveConfig *cfg, int64_t resume_run_id, EvolveSummary *summary, EvoErr *err)
{
    Loop L = {.st = st, .task = task, .dev = dev, .ev = ev, .ev_ctx = ev_ctx, .cfg = cfg, .sum = summary};
    memset(summary, 0, sizeof(*summary));
    summary->best_latency_us = NAN;
    L.np = task_nparams(task);
    L.t0 = time_now_ms();
    L.tty = isatty(STDERR_FILENO);
    L.parent_cap = cfg->population + 1 > PARENT_CACHE ? cfg->population + 1 : PARENT_CACHE;
    L.steady = !cfg->sync;
    L.resumed = resume_run_id != 0;
    double cpu0 = process_cpu_ms();
    NvrtcStats nv0;
    nvrtc_stats(&nv0);
    EvalPipeStats ps0;
    memset(&ps0, 0, sizeof(ps0));
    if (ev->pipe_stats)
        ev->pipe_stats(ev_ctx, &ps0);
    int rc = -1;

    if (resume_run_id) {
        int got = store_run_get(st, resume_run_id, &L.run, err);
        if (got <= 0)
            return got == 0 ? err_set(err, "%s: no run %lld to resume", store_path(st), (long long)resume_run_id) : -1;
        if (strcmp(L.run.task_name, task_name(task)) != 0) {
            err_set(err, "run %lld optimizes task '%s', not '%s'", (long long)L.run.id, L.run.task_name,
                     task_name(task));
            goto out;
        }
        free(L.run.status);
        L.run.status = xstrdup("running");
        free(L.run.finished_at);
        L.run.finished_at = NULL;
        if (store_run_update(st, &L.run, err))
            goto out;
    } else {
        new_run_record(&L);
        if (store_run_insert(st, &L.run, err))
            goto out;
    }
    summary->run_id = L.run.id;
    if (cfg->llm) {
        /* Answers of an earlier call are not this run's to use; answers
         * recorded without a committed child are asked again. */
        llmop_discard(cfg->llm);
        if (resume_run_id && store_llm_requests_interrupt(st, L.run.id, err) < 0)
            goto fail_run;
    }

    if (start_run(&L, err))
        goto fail_run;

    int exhaustive = strcmp(cfg->strategy, "exhaustive") == 0;
    int total = exhaustive ? 1 << 30 : cfg->generations;
    /* The exhaustive cursor restarts at 0 on resume: what was evaluated is
     * skipped as a duplicate, so nothing is done twice. */
    if (L.steady && loop_steady(&L, err))
        goto fail_run;
    for (int64_t gen = L.run.generations_done; !L.steady && gen <= total; gen++) {
        if (loop_time_limit_hit(&L))
            break;
        int64_t before = summary->evaluated;
        if (run_generation(&L, gen, exhaustive ? 0 : total, err))
            goto fail_run;
        if (summary->interrupted || summary->space_exhausted)
            break;
        if (exhaustive && gen > 0 && summary->evaluated == before && L.exh_index >= (int64_t)task_space_size(task))
            break;
    }

    CandidateRecord *best = NULL;
    int nb = 0;
    if (store_candidate_list(st, L.run.id, STORE_SURVIVORS_BY_LATENCY, 1, &best, &nb, err) == 0 && nb) {
        summary->best_id = best[0].id;
        summary->best_latency_us = best[0].latency_us;
    }
    store_candidates_free(best, nb);
    free(L.run.status);
    /* A signal (*stop) is "interrupted"; the time limit alone "time_limit".
     * resume continues either. */
    /* Only *stop and the time limit interrupt a run (stage dispatch stops
     * at the limit too, without loop_time_limit_hit): without a signal it
     * was the limit. */
    int by_signal = cfg->stop && *cfg->stop;
    if (summary->interrupted && !by_signal)
        summary->time_limited = 1;
    L.run.status = xstrdup(!summary->interrupted                  ? "completed"
                           : summary->time_limited && !by_signal ? "time_limit"
                                                                 : "interrupted");
    L.run.finished_at = time_iso8601();
    if (store_run_update(st, &L.run, err))
        goto out;
    rc = 0;
    goto out;

fail_run:
    {
        EvoErr e2;
        free(L.run.status);
        L.run.status = xstrdup(cfg->stop && *cfg->stop ? "interrupted" : "failed");
        free(L.run.finished_at);
        L.run.finished_at = time_iso8601();
        store_run_update(st, &L.run, &e2);
    }
out:
    pipe_figures(&L, cpu0, &nv0, &ps0);
    loop_live_clear(&L);
    summary->wall_ms = time_now_ms() - L.t0;
    if (L.baseline.vals)
        loop_child_free(&L, &L.baseline);
    loop_parents_free(&L);
    free_lookups(&L);
    free(L.base_kernel);
    run_record_free(&L.run);
    return rc;
}

EvolveBound evolve_bound(const EvolveSummary *s, int cores, EvolveLoad *load)
{
    double wall_s = s->wall_ms / 1000.0;
    int n = s->slots < 8 ? s->slots : 8;
    EvolveLoad l = {0};
    double busy_s = 0;
    for (int i = 0; i < n; i++)
        busy_s += s->slot_busy_s[i];
    if (n > 0 && wall_s > 0)
        l.slots_busy = busy_s / (n * wall_s);
    if (s->pipe.lanes > 0 && wall_s > 0)
        l.compile_busy = s->pipe.compile_busy_s / (s->pipe.lanes * wall_s);
    if (cores > 0 && s->evaluated > 0 && s->cpu_s > 0 && s->pipe.lanes > 0)
        l.cap_per_min = cores * 60.0 * s->evaluated / s->cpu_s;
    if (load)
        *load = l;
    if (!(wall_s > 0))
        return EVOLVE_BOUND_NEITHER;
    if (n > 0 && l.slots_busy >= EVOLVE_BOUND_BUSY)
        return EVOLVE_BOUND_GPUS;
    if (s->pipe.lanes <= 0)
        return EVOLVE_BOUND_UNKNOWN;
    return l.compile_busy >= EVOLVE_BOUND_BUSY ? EVOLVE_BOUND_COMPILE : EVOLVE_BOUND_NEITHER;
}

const char *evolve_bound_name(EvolveBound b)
{
    return b == EVOLVE_BOUND_GPUS ? "gpus" : b == EVOLVE_BOUND_COMPILE ? "compile"
         : b == EVOLVE_BOUND_NEITHER ? "neither" : "unknown";
}

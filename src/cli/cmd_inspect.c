/*
 * cmd_inspect: the commands that read the population store and need no
 * GPU: --version, status, top, lineage, show (runs: cli/cmd_runs.c). Output
 * is plain aligned text for people, cut to the terminal width (msg.h, out_printf),
 * or with --json one object per command (README.md, "JSON output"). The
 * store is opened read-only: a missing one is an error (exit 4) and
 * nothing is created. status, top and the best are survivors, so only
 * ever candidates gated on every shape; show says how far a candidate's
 * gate went.
 */
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/commands.h"
#include "cli/inspect.h"
#include "compile/nvrtc.h"
#include "config.h"
#include "gpu/cuda_api.h"
#include "msg.h"
#include "store/store.h"

/* ---- --version ------------------------------------------------------- */

EvoExit cmd_version(const Settings *s)
{
    (void)s;
    printf("evoeng %s\n", EVO_VERSION);
    int nv = nvrtc_version();
    if (nv > 0)
        printf("NVRTC %d.%d (%s)\n", nv / 1000, (nv % 1000) / 10, EVO_CUDA_ROOT);
    else
        printf("NVRTC: unavailable\n");
    CudaApi *api = NULL;
    EvoErr err;
    if (cuda_load(&api, &err) != 0) {
        printf("CUDA driver: not found (%s)\n", err.msg);
        printf("GPU: none (commands that need one exit with code %d)\n", EVO_EXIT_NO_GPU);
        return EVO_EXIT_OK;
    }
    DeviceInfo d;
    if (cuda_query_device(api, 0, &d, &err) != 0) {
        printf("CUDA driver: loaded, but no usable device (%s)\n", err.msg);
        cuda_close(&api);
        return EVO_EXIT_OK;
    }
    printf("CUDA driver %d.%d\n", d.driver_version / 1000, (d.driver_version % 1000) / 10);
    /* every visible GPU, a line each (--gpus picks among them) */
    for (int i = 0; i < (d.device_count > 0 ? d.device_count : 1); i++) {
        if (i > 0 && cuda_query_device(api, i, &d, &err) != 0) {
            printf("GPU %d: unusable (%s)\n", i, err.msg);
            continue;
        }
        printf("GPU %d: %s, %d SMs, compute capability %d.%d (%s), %.1f GiB, %d KiB smem/block opt-in, "
               "L2 %lld MiB\n",
               i, d.name, d.sm_count, d.cc_major, d.cc_minor, d.arch, (double)d.mem_bytes / (1 << 30),
               d.smem_per_block_optin / 1024, d.l2_bytes >> 20);
    }
    cuda_close(&api);
    return EVO_EXIT_OK;
}

typedef struct Counts {
    int64_t total, ok, failed, accepted, reverted, baseline;
    StrBuf  failures;
    json_t *by_status;     /* {"compile_error": 3, ...}: the failed, by status */
} Counts;

static void count_cb(void *ctx, const char *status, const char *decision, int64_t n)
{
    Counts *c = ctx;
    c->total += n;
    if (strcmp(status, "ok") == 0) {
        c->ok += n;
    } else {
        c->failed += n;
        sb_printf(&c->failures, "%s%s %lld", c->failures.len ? ", " : "", status, (long long)n);
        json_t *was = json_object_get(c->by_status, status);
        json_object_set_new(c->by_status, status, json_integer(json_integer_value(was) + (json_int_t)n));
    }
    if (strcmp(decision, "accepted") == 0)
        c->accepted += n;
    else if (strcmp(decision, "reverted") == 0)
        c->reverted += n;
    else if (strcmp(decision, "baseline") == 0)
        c->baseline += n;
}

/* ---- status ---------------------------------------------------------- */

/* Generation 0 of a run warm-started (operator warm; the rationale names
 * the source run): how many were seeded and from which runs. */
typedef struct Warm {
    int       seeded;
    long long runs[32];
    int       nruns;
} Warm;

static void read_warm(Store *st, int64_t run_id, Warm *w)
{
    CandidateRecord *l = NULL;
    int n = 0;
    EvoErr err;
    memset(w, 0, sizeof(*w));
    if (store_candidate_list(st, run_id, STORE_ALL_BY_ID, 0, &l, &n, &err))
        return;
    for (int i = 0; i < n; i++) {
        long long from = 0;
        if (!l[i].operator || strcmp(l[i].operator, "warm") != 0)
            continue;
        w->seeded++;
        if (!l[i].rationale || sscanf(l[i].rationale, "warm start from run %lld", &from) != 1)
            continue;
        int dup = 0;
        for (int k = 0; k < w->nruns; k++)
            dup |= w->runs[k] == from;
        if (!dup && w->nruns < 32)
            w->runs[w->nruns++] = from;
    }
    store_candidates_free(l, n);
}

static json_t *status_json(const RunRecord *r, const Counts *c, const CandidateRecord *best, const Warm *w,
                           const LlmModeStats *ms, int nms)
{
    json_t *o = json_object();
    json_object_set_new(o, "run", inspect_run_json(r));
    json_object_set_new(o, "counts",
                        json_pack("{s:I, s:I, s:I, s:I, s:I, s:I, s:O}", "total", (json_int_t)c->total, "valid",
                                  (json_int_t)c->ok, "failed", (json_int_t)c->failed, "baseline",
                                  (json_int_t)c->baseline, "accepted", (json_int_t)c->accepted, "reverted",
                                  (json_int_t)c->reverted, "failures", c->by_status));
    json_object_set_new(o, "best", best ? inspect_candidate_json(best, 0) : json_null());
    json_t *runs = json_array();
    for (int i = 0; i < w->nruns; i++)
        json_array_append_new(runs, json_integer(w->runs[i]));
    json_object_set_new(o, "warm_start", json_pack("{s:i, s:o}", "seeded", w->seeded, "from_runs", runs));
    json_t *llm = json_array();
    for (int i = 0; i < nms; i++)
        json_array_append_new(llm, json_pack("{s:s, s:I, s:I, s:I, s:I, s:f, s:f, s:o}", "mode", ms[i].mode,
                                             "requests", (json_int_t)ms[i].requests, "children",
                                             (json_int_t)ms[i].children, "valid", (json_int_t)ms[i].valid,
                                             "accepted", (json_int_t)ms[i].accepted, "validity_rate",
                                             ms[i].validity_rate, "acceptance_rate", ms[i].acceptance_rate,
                                             "best_speedup", inspect_real_or_null(ms[i].best_speedup)));
    json_object_set_new(o, "llm", llm);
    return o;
}

static void status_text(const RunRecord *r, const Counts *c, const CandidateRecord *best, const Warm *w,
                        const LlmModeStats *ms, int nms)
{
    char *shape = inspect_shape_text(r);
    out_printf("run %lld: %s (%s)\n", (long long)r->id, r->task_name, r->task_path);
    out_printf("  status       %s, %lld generations done, strategy %s, seed %lld\n", r->status,
               (long long)r->generations_done, r->strategy, (long long)r->seed);
    out_printf("  device       %s (%s), NVRTC %s, driver %s\n", r->device_name ? r->device_name : "-",
               r->device_arch ? r->device_arch : "-", r->nvrtc_version ? r->nvrtc_version : "-",
               r->driver_version ? r->driver_version : "-");
    out_printf("  started      %s%s%s\n", r->started_at, r->finished_at ? ", finished " : "",
               r->finished_at ? r->finished_at : "");
    out_printf("  shape        %s\n", shape);
    out_printf("  config       %s\n", r->config_json);
    out_printf("  candidates   %lld evaluated: %lld valid (baseline %lld, accepted %lld, reverted %lld), %lld "
               "failed%s%s%s\n",
               (long long)c->total, (long long)c->ok, (long long)c->baseline, (long long)c->accepted,
               (long long)c->reverted, (long long)c->failed, c->failures.len ? " (" : "",
               c->failures.len ? c->failures.s : "", c->failures.len ? ")" : "");
    free(shape);
    if (best) {
        char lat[32];
        inspect_fmt_us(lat, sizeof(lat), best->latency_us);
        char *p = inspect_params_compact(best->params_json);
        out_printf("  best         #%lld (generation %lld): %s, %.3fx over the baseline\n", (long long)best->id,
                   (long long)best->generation, lat, isnan(best->speedup) ? 0.0 : best->speedup);
        out_printf("               %s\n", p);
        free(p);
    } else {
        out_printf("  best         none yet\n");
    }
    if (w->seeded) {
        StrBuf runs = {0};
        for (int i = 0; i < w->nruns; i++)
            sb_printf(&runs, "%s%lld", i ? ", " : "", w->runs[i]);
        out_printf("  warm start   %d configurations seeded from run%s %s (operator warm; see 'show')\n", w->seeded,
                   w->nruns > 1 ? "s" : "", w->nruns ? runs.s : "?");
        sb_free(&runs);
    }
    /* The LLM operator, per prompt mode (the llm_mode_stats view). */
    if (nms > 0)
        out_printf("  llm          %-8s %8s %8s %9s %10s %8s\n", "mode", "requests", "children", "validity",
                   "acceptance", "best");
    for (int i = 0; i < nms; i++) {
        char best_s[32];
        if (isnan(ms[i].best_speedup))
            snprintf(best_s, sizeof(best_s), "-");
        else
            snprintf(best_s, sizeof(best_s), "%.2fx", ms[i].best_speedup);
        out_printf("               %-8s %8lld %8lld %8.1f%% %9.1f%% %8s\n", ms[i].mode, (long long)ms[i].requests,
                   (long long)ms[i].children, 100.0 * ms[i].validity_rate, 100.0 * ms[i].acceptance_rate, best_s);
    }
}

EvoExit cmd_status(const Settings *s)
{
    EvoExit rc = EVO_EXIT_OK;
    RunRecord r;
    out_init(s->wide);
    Store *st = inspect_open_run(s, s->id, &r, NULL, &rc);
    if (!st)
        return rc;
    EvoErr err;
    Counts c = {.by_status = json_object()};
    CandidateRecord *best = NULL;
    LlmModeStats *ms = NULL;
    int nbest = 0, nms = 0;
    Warm w;
    if (store_run_counts(st, r.id, count_cb, &c, &err) ||
        store_candidate_list(st, r.id, STORE_SURVIVORS_BY_LATENCY, 1, &best, &nbest, &err) ||
        store_llm_mode_stats(st, r.id, &ms, &nms, &err)) {
        errorf("%s", err.msg);
        rc = EVO_EXIT_DB;
        goto out;
    }
    read_warm(st, r.id, &w);
    if (s->json)
        inspect_json_print(status_json(&r, &c, nbest ? best : NULL, &w, ms, nms));
    else
        status_text(&r, &c, nbest ? best : NULL, &w, ms, nms);
out:
    free(ms);
    store_candidates_free(best, nbest);
    sb_free(&c.failures);
    json_decref(c.by_status);
    run_record_free(&r);
    store_close(&st);
    return rc;
}

/* ---- top ------------------------------------------------------------- */

EvoExit cmd_top(const Settings *s)
{
    EvoExit rc = EVO_EXIT_OK;
    RunRecord r;
    out_init(s->wide);
    Store *st = inspect_open_run(s, s->id, &r, "{\"run\": null, \"task\": null, \"candidates\": []}", &rc);
    if (!st)
        return rc;
    CandidateRecord *list = NULL;
    int n = 0;
    EvoErr err;
    if (store_candidate_list(st, r.id, STORE_SURVIVORS_BY_LATENCY, s->top_n, &list, &n, &err) != 0) {
        errorf("%s", err.msg);
        rc = EVO_EXIT_DB;
    } else if (s->json) {
        json_t *arr = json_array();
        for (int i = 0; i < n; i++)
            json_array_append_new(arr, inspect_candidate_json(&list[i], 0));
        inspect_json_print(json_pack("{s:I, s:s, s:o}", "run", (json_int_t)r.id, "task", r.task_name, "candidates", arr));
    } else {
        out_printf("run %lld (%s): the %d fastest of the baseline and accepted candidates gated on every shape\n",
                   (long long)r.id, r.task_name, n);
        /* a GPU column when the run measured on more than one GPU */
        int *gpu = xcalloc((size_t)n + 1, sizeof(int)), multi = 0;
        for (int i = 0; i < n; i++) {
            json_t *g = inspect_gpu_json(&list[i]);
            gpu[i] = g ? (int)json_integer_value(json_object_get(g, "index")) : -1;
            multi |= gpu[i] > 0;
            json_decref(g);
        }
        /* a latency column per input profile when they were timed on several */
        ProfileStat ps[PLAN_MAX_PROFILES];
        int np = n > 0 ? inspect_profiles(&list[0], ps) : 0;
        StrBuf head = {0};
        for (int k = 0; np > 1 && k < np; k++)
            sb_printf(&head, " %11.11s", ps[k].name);
        out_printf("%6s %4s %-9s %11s%s %8s %6s %5s %5s%s  %s\n", "id", "gen", "operator", "latency",
                   head.s ? head.s : "", "speedup", "CTAs", "occ", "regs", multi ? "  gpu" : "", "params");
        sb_free(&head);
        for (int i = 0; i < n; i++) {
            CandidateRecord *c = &list[i];
            char lat[32], g[16] = "";
            inspect_fmt_us(lat, sizeof(lat), c->latency_us);
            StrBuf cols = {0};
            if (np > 1) {
                ProfileStat mine[PLAN_MAX_PROFILES];
                int nm = inspect_profiles(c, mine);
                for (int k = 0; k < np; k++) {
                    char v[32] = "-";
                    for (int q = 0; q < nm; q++)   /* by name: a candidate may lack one */
                        if (strcmp(mine[q].name, ps[k].name) == 0)
                            inspect_fmt_us(v, sizeof(v), mine[q].ms.median * 1000);
                    sb_printf(&cols, " %11s", v);
                }
            }
            if (multi && gpu[i] >= 0)
                snprintf(g, sizeof(g), "  %3d", gpu[i]);
            else if (multi)
                snprintf(g, sizeof(g), "    -");
            char *p = inspect_params_compact(c->params_json);
            out_printf("%6lld %4lld %-9s %11s%s %7.2fx %6lld %5lld %5lld%s  %s\n", (long long)c->id,
                       (long long)c->generation, c->operator, lat, cols.s ? cols.s : "",
                       isnan(c->speedup) ? 0.0 : c->speedup, (long long)c->ctas, (long long)c->occupancy,
                       (long long)c->registers, g, p);
            sb_free(&cols);
            free(p);
        }
        free(gpu);
    }
    store_candidates_free(list, n);
    run_record_free(&r);
    store_close(&st);
    return rc;
}

/* ---- lineage --------------------------------------------------------- */

/* The candidate of lineage/show: ID, or with --best the best of --run N or
 * of the latest run. 0 with *rc set when there is none. */
static int64_t target_id(const Settings *s, Store *st, EvoExit *rc)
{
    return s->best ? inspect_best_id(st, s->run_id, rc) : s->id;
}

static json_t *lineage_json(const CandidateRecord *chain, int n)
{
    json_t *steps = json_array();
    for (int i = n - 1; i >= 0; i--) {
        json_t *o = inspect_candidate_json(&chain[i], 0);
        json_object_set_new(o, "change", i == n - 1 ? json_null()
                                                    : inspect_params_diff_json(chain[i + 1].params_json,
                                                                               chain[i].params_json));
        json_array_append_new(steps, o);
    }
    return json_pack("{s:I, s:I, s:o}", "candidate", (json_int_t)chain[0].id, "run", (json_int_t)chain[0].run_id,
                     "chain", steps);
}

static void lineage_text(const CandidateRecord *chain, int n)
{
    out_printf("lineage of candidate %lld (run %lld), from the baseline:\n", (long long)chain[0].id,
               (long long)chain[0].run_id);
    out_printf("%6s %4s %-9s %-9s %11s %8s %8s  %s\n", "id", "gen", "operator", "decision", "latency", "speedup",
               "vs par.", "change");
    for (int i = n - 1; i >= 0; i--) {
        const CandidateRecord *c = &chain[i];
        char lat[32], ratio[32];
        inspect_fmt_us(lat, sizeof(lat), c->latency_us);
        if (isnan(c->ratio_to_parent))
            snprintf(ratio, sizeof(ratio), "-");
        else
            snprintf(ratio, sizeof(ratio), "%+.1f%%", (c->ratio_to_parent - 1) * 100);
        char *d = i == n - 1 ? inspect_params_compact(c->params_json)
                             : inspect_params_diff(chain[i + 1].params_json, c->params_json);
        out_printf("%6lld %4lld %-9s %-9s %11s %7.2fx %8s  %s\n", (long long)c->id, (long long)c->generation,
                   c->operator, c->decision, lat, isnan(c->speedup) ? 0.0 : c->speedup, ratio, d);
        free(d);
    }
}

EvoExit cmd_lineage(const Settings *s)
{
    EvoExit rc = EVO_EXIT_OK;
    out_init(s->wide);
    Store *st = inspect_open(s, &rc);
    if (!st)
        return rc;
    EvoErr err;
    CandidateRecord chain[256];
    int n = 0;
    int64_t id = target_id(s, st, &rc);
    while (id && n < (int)EVO_ARRAY_LEN(chain)) {
        for (int i = 0; i < n; i++)
            if (chain[i].id == id) {   /* a store is data: a parent link may loop */
                errorf("%s: candidate %lld is its own ancestor (a damaged or foreign store)", store_path(st),
                       (long long)id);
                rc = EVO_EXIT_DB;
                id = 0;
            }
        if (!id)
            break;
        int got = store_candidate_get(st, id, &chain[n], &err);
        if (got <= 0) {
            if (got < 0)
                errorf("%s", err.msg);
            else
                errorf("%s: no candidate %lld", store_path(st), (long long)id);
            rc = got < 0 ? EVO_EXIT_DB : EVO_EXIT_FAIL;
            break;
        }
        id = chain[n].parent_id;
        n++;
    }
    if (n > 0 && rc == EVO_EXIT_OK) {
        if (s->json)
            inspect_json_print(lineage_json(chain, n));
        else
            lineage_text(chain, n);
    }
    for (int i = 0; i < n; i++)
        candidate_record_free(&chain[i]);
    store_close(&st);
    return rc;
}

/* ---- show ------------------------------------------------------------ */

/* One line a profile, when a candidate was timed on more than the one
 * implicit "default" profile. */
static void show_profiles(const ProfileStat *ps, int n)
{
    if (n == 0 || (n == 1 && strcmp(ps[0].name, "default") == 0))
        return;
    for (int k = 0; k < n; k++) {
        char lat[32], par[32], ab[160] = "";
        inspect_fmt_us(lat, sizeof(lat), ps[k].ms.median * 1000);
        if (ps[k].ratio.n > 0) {
            inspect_fmt_us(par, sizeof(par), ps[k].a_ms.median * 1000);
            snprintf(ab, sizeof(ab), "; vs parent %.4f (p10 %.4f, p90 %.4f; parent %s)%s", ps[k].ratio.median,
                     ps[k].ratio.p10, ps[k].ratio.p90, par, ps[k].noisy ? ", noisy" : "");
        }
        out_printf("  profile      %-10s %s, %.1f TFLOP/s%s\n", ps[k].name, lat, ps[k].tflops, ab);
    }
}

static void show_text(Store *st, const CandidateRecord *c)
{
    EvoErr err;
    char lat[32], p90[32], parents[64] = "";
    inspect_fmt_us(lat, sizeof(lat), c->latency_us);
    inspect_fmt_us(p90, sizeof(p90), c->p90_us);
    if (c->parent_id)
        snprintf(parents, sizeof(parents), ", parent %lld", (long long)c->parent_id);
    if (c->parent2_id)
        snprintf(parents + strlen(parents), sizeof(parents) - strlen(parents), ", second parent %lld",
                 (long long)c->parent2_id);
    out_printf("candidate %lld (run %lld, generation %lld)\n", (long long)c->id, (long long)c->run_id,
               (long long)c->generation);
    out_printf("  operator     %s%s\n", c->operator, parents);
    out_printf("  params       %s\n", c->params_json);
    out_printf("  status       %s, decision %s%s%s\n", c->status, c->decision, c->error ? ": " : "",
               c->error ? c->error : "");
    out_printf("  gate stage   %s: %s%s\n", gate_stage_name(c->gate_stage), gate_stage_explain(c->gate_stage),
               c->gate_stage == GATE_STAGE_FULL ? "" : "; not a survivor, parent or export");
    ProfileStat ps[PLAN_MAX_PROFILES];
    int np = inspect_profiles(c, ps);
    out_printf("  latency      %s median, %s p90, CV %.2f%%%s\n", lat, p90, isnan(c->cv) ? 0.0 : c->cv * 100,
               np > 1 ? " (geometric mean of the profiles below)" : "");
    if (!isnan(c->ratio_to_parent))
        out_printf("  vs parent    %.4f (spread %.4f)%s\n", c->ratio_to_parent, c->ratio_spread,
                   np > 1 ? ", the worst profile's" : "");
    show_profiles(ps, np);
    if (!isnan(c->speedup))
        out_printf("  speedup      %.3fx over the baseline\n", c->speedup);
    if (c->ctas >= 0)
        out_printf("  launch       %lld CTAs (%lld total) x %lld threads, %lld regs, smem %lld static + %lld "
                   "dynamic, occupancy %lld CTAs/SM, %.2f waves\n",
                   (long long)c->ctas, (long long)c->ctas_total, (long long)c->threads, (long long)c->registers,
                   (long long)c->smem_static, (long long)c->smem_dynamic, (long long)c->occupancy, c->waves);
    if (!isnan(c->tflops))
        out_printf("  throughput   %.1f TFLOP/s (%.1f%% of peak), %.0f GB/s (%.1f%% of peak)\n", c->tflops,
                   c->pct_peak_flops, c->gbps, c->pct_peak_bw);
    json_t *gpu = inspect_gpu_json(c);
    if (gpu) {
        const char *name = json_string_value(json_object_get(gpu, "name"));
        const char *uuid = json_string_value(json_object_get(gpu, "uuid"));
        double scale = json_number_value(json_object_get(gpu, "scale"));
        char sc[64] = "";
        if (scale > 0 && scale != 1.0)
            snprintf(sc, sizeof(sc), ", latencies scaled x%.4f to GPU 0's", scale);
        out_printf("  measured on  GPU %lld%s%s%s%s%s%s\n", (long long)json_integer_value(json_object_get(gpu, "index")),
                   name ? " (" : "", name ? name : "", uuid && *uuid ? ", " : "", uuid && *uuid ? uuid : "",
                   name ? ")" : "", sc);
        json_decref(gpu);
    }
    out_printf("  time         compile %.0f ms, gate %.0f ms, timing %.0f ms\n",
               isnan(c->compile_ms) ? 0 : c->compile_ms, isnan(c->gate_ms) ? 0 : c->gate_ms,
               isnan(c->time_ms) ? 0 : c->time_ms);
    out_printf("  source       %s\n", c->source_hash ? c->source_hash : "-");
    if (c->gate_json)
        out_printf("  gate         %s\n", c->gate_json);
    if (c->metrics_json)
        out_printf("  metrics      %s\n", c->metrics_json);
    if (c->rationale)
        out_printf("  rationale    %s\n", c->rationale);
    /* The logs are printed whole: they are read, not scanned. */
    if (c->compile_id) {
        CompileRecord cr;
        if (store_compile_get(st, c->compile_id, &cr, &err) == 1) {
            printf("\n--- compile (%s, %s, %.0f ms) ---\n%s\n", cr.arch, cr.options,
                   isnan(cr.compile_ms) ? 0 : cr.compile_ms, cr.log ? cr.log : "");
            compile_record_free(&cr);
        }
    }
    if (c->log && *c->log)
        printf("\n--- evaluation log ---\n%s\n", c->log);
}

EvoExit cmd_show(const Settings *s)
{
    EvoExit rc = EVO_EXIT_OK;
    out_init(s->wide);
    Store *st = inspect_open(s, &rc);
    if (!st)
        return rc;
    int64_t id = target_id(s, st, &rc);
    if (!id) {
        store_close(&st);
        return rc;
    }
    EvoErr err;
    CandidateRecord c;
    int got = store_candidate_get(st, id, &c, &err);
    if (got <= 0) {
        if (got < 0)
            errorf("%s", err.msg);
        else
            errorf("%s: no candidate %lld", store_path(st), (long long)id);
        store_close(&st);
        return got < 0 ? EVO_EXIT_DB : EVO_EXIT_FAIL;
    }
    if (s->json)
        inspect_json_print(inspect_candidate_json(&c, 1));
    else
        show_text(st, &c);
    candidate_record_free(&c);
    store_close(&st);
    return rc;
}

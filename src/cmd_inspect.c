/*
 * cmd_inspect: the commands that read the population store and need no
 * GPU: --version, status, top, lineage, show. Output is plain aligned
 * text for people (or JSON with --json where it applies: top, show).
 * status, top and the best are survivors, so only ever candidates gated
 * on every shape; show says how far a candidate's gate went.
 */
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "commands.h"
#include "config.h"
#include "cuda_api.h"
#include "nvrtc.h"
#include "store.h"

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
    printf("GPU 0: %s, %d SMs, compute capability %d.%d (%s), %.1f GiB, %d KiB smem/block opt-in, "
           "L2 %lld MiB\n",
           d.name, d.sm_count, d.cc_major, d.cc_minor, d.arch, (double)d.mem_bytes / (1 << 30),
           d.smem_per_block_optin / 1024, d.l2_bytes >> 20);
    cuda_close(&api);
    return EVO_EXIT_OK;
}

/* ---- helpers --------------------------------------------------------- */

static Store *open_store(const Settings *s, EvoExit *rc)
{
    Store *st = NULL;
    EvoErr err;
    if (store_open(&st, s->db, &err) != 0) {
        errorf("%s", err.msg);
        *rc = EVO_EXIT_DB;
        return NULL;
    }
    return st;
}

/* Open the store and load run s->id (0: the latest). Returns the store
 * with *r filled, or NULL with *rc set: an empty store is not an error
 * (it says so and exits 0), a missing run id is. */
static Store *open_run(const Settings *s, RunRecord *r, EvoExit *rc)
{
    Store *st = open_store(s, rc);
    if (!st)
        return NULL;
    EvoErr err;
    int got = store_run_get(st, s->id, r, &err);
    if (got > 0)
        return st;
    if (got < 0)
        errorf("%s", err.msg);
    else if (s->id)
        errorf("%s: no run %lld", store_path(st), (long long)s->id);
    else
        printf("%s: no runs yet (start one with 'evoeng run')\n", store_path(st));
    *rc = got < 0 ? EVO_EXIT_DB : s->id ? EVO_EXIT_FAIL : EVO_EXIT_OK;
    store_close(&st);
    return NULL;
}

static void fmt_us(char *buf, size_t n, double us)
{
    if (isnan(us))
        snprintf(buf, n, "-");
    else if (us < 1000)
        snprintf(buf, n, "%.2f us", us);
    else
        snprintf(buf, n, "%.3f ms", us / 1000);
}

/* {"A":1,"B":2} -> "A=1 B=2" (fresh string). */
static char *params_compact(const char *json)
{
    json_t *o = json ? json_loads(json, 0, NULL) : NULL;
    if (!json_is_object(o)) {
        json_decref(o);
        return xstrdup(json ? json : "-");
    }
    StrBuf sb = {0};
    const char *k;
    json_t *v;
    json_object_foreach(o, k, v) {
        char *t = json_dumps(v, JSON_ENCODE_ANY);
        sb_printf(&sb, "%s%s=%s", sb.len ? " " : "", k, t ? t : "?");
        free(t);
    }
    json_decref(o);
    return sb_take(&sb);
}

/* Put a parsed JSON text under key (as a string if it does not parse). */
static void json_set_text(json_t *o, const char *key, const char *text)
{
    if (!text)
        return;
    json_t *v = json_loads(text, JSON_DECODE_ANY, NULL);
    json_object_set_new(o, key, v ? v : json_string(text));
}

static void json_set_real(json_t *o, const char *key, double v)
{
    if (isfinite(v))
        json_object_set_new(o, key, json_real(v));
}

static void json_set_int(json_t *o, const char *key, int64_t v)
{
    if (v >= 0)
        json_object_set_new(o, key, json_integer((json_int_t)v));
}

/* A candidate as JSON; gate_stage as "none" | "bench" | "full". With
 * full, also the gate and metrics details, logs and dates (show). */
static json_t *candidate_json(const CandidateRecord *c, int full)
{
    json_t *o = json_pack("{s:I, s:I, s:I, s:s, s:s, s:s, s:s}", "id", (json_int_t)c->id, "run",
                          (json_int_t)c->run_id, "generation", (json_int_t)c->generation, "operator",
                          c->operator ? c->operator : "", "status", c->status ? c->status : "", "decision",
                          c->decision ? c->decision : "", "gate_stage", gate_stage_name(c->gate_stage));
    if (c->parent_id)
        json_object_set_new(o, "parent", json_integer((json_int_t)c->parent_id));
    if (c->parent2_id)
        json_object_set_new(o, "parent2", json_integer((json_int_t)c->parent2_id));
    json_set_text(o, "params", c->params_json);
    if (c->error)
        json_object_set_new(o, "error", json_string(c->error));
    json_set_real(o, "latency_us", c->latency_us);
    json_set_real(o, "p90_us", c->p90_us);
    json_set_real(o, "cv", c->cv);
    json_set_real(o, "ratio_to_parent", c->ratio_to_parent);
    json_set_real(o, "speedup", c->speedup);
    json_set_int(o, "ctas", c->ctas);
    json_set_int(o, "threads", c->threads);
    json_set_int(o, "registers", c->registers);
    json_set_int(o, "occupancy", c->occupancy);
    if (!full)
        return o;
    json_set_real(o, "ratio_spread", c->ratio_spread);
    json_set_int(o, "ctas_total", c->ctas_total);
    json_set_int(o, "smem_static", c->smem_static);
    json_set_int(o, "smem_dynamic", c->smem_dynamic);
    json_set_real(o, "waves", c->waves);
    json_set_real(o, "tflops", c->tflops);
    json_set_real(o, "gbps", c->gbps);
    json_set_real(o, "compile_ms", c->compile_ms);
    json_set_real(o, "gate_ms", c->gate_ms);
    json_set_real(o, "time_ms", c->time_ms);
    if (c->source_hash)
        json_object_set_new(o, "source_hash", json_string(c->source_hash));
    json_set_text(o, "gate", c->gate_json);
    json_set_text(o, "metrics", c->metrics_json);
    if (c->rationale)
        json_object_set_new(o, "rationale", json_string(c->rationale));
    if (c->log)
        json_object_set_new(o, "log", json_string(c->log));
    json_object_set_new(o, "created_at", json_string(c->created_at ? c->created_at : ""));
    json_object_set_new(o, "decided_at", json_string(c->decided_at ? c->decided_at : ""));
    return o;
}

/* Print o (indented) and release it. */
static void json_print(json_t *o)
{
    char *txt = json_dumps(o, JSON_INDENT(2));
    printf("%s\n", txt ? txt : "null");
    free(txt);
    json_decref(o);
}

typedef struct Counts {
    int64_t total, ok, failed, accepted, reverted, baseline;
    StrBuf  failures;
} Counts;

static void count_cb(void *ctx, const char *status, const char *decision, int64_t n)
{
    Counts *c = ctx;
    c->total += n;
    if (strcmp(status, "ok") == 0)
        c->ok += n;
    else {
        c->failed += n;
        sb_printf(&c->failures, "%s%s %lld", c->failures.len ? ", " : "", status, (long long)n);
    }
    if (strcmp(decision, "accepted") == 0)
        c->accepted += n;
    else if (strcmp(decision, "reverted") == 0)
        c->reverted += n;
    else if (strcmp(decision, "baseline") == 0)
        c->baseline += n;
}

/* ---- status ---------------------------------------------------------- */

/* "  warm start   N configurations seeded from runs R, ..." when generation
 * 0 of the run was warm-started (operator warm; the rationale names the
 * source run and candidate). */
static void print_warm(Store *st, int64_t run_id)
{
    CandidateRecord *l = NULL;
    int n = 0, seeded = 0;
    EvoErr err;
    if (store_candidate_list(st, run_id, STORE_ALL_BY_ID, 0, &l, &n, &err))
        return;
    StrBuf runs = {0};
    long long seen[32];
    int nseen = 0;
    for (int i = 0; i < n; i++) {
        long long from = 0;
        if (!l[i].operator || strcmp(l[i].operator, "warm") != 0)
            continue;
        seeded++;
        if (!l[i].rationale || sscanf(l[i].rationale, "warm start from run %lld", &from) != 1)
            continue;
        int dup = 0;
        for (int k = 0; k < nseen; k++)
            dup |= seen[k] == from;
        if (!dup && nseen < 32) {
            seen[nseen++] = from;
            sb_printf(&runs, "%s%lld", runs.len ? ", " : "", from);
        }
    }
    if (seeded)
        printf("  warm start   %d configurations seeded from run%s %s (operator warm; see 'show')\n", seeded,
               runs.s && strchr(runs.s, ',') ? "s" : "", runs.s ? runs.s : "?");
    sb_free(&runs);
    store_candidates_free(l, n);
}

EvoExit cmd_status(const Settings *s)
{
    EvoExit rc = EVO_EXIT_OK;
    RunRecord r;
    Store *st = open_run(s, &r, &rc);
    if (!st)
        return rc;
    EvoErr err;
    Counts c = {0};
    store_run_counts(st, r.id, count_cb, &c, &err);
    CandidateRecord *best = NULL;
    int nbest = 0;
    store_candidate_list(st, r.id, STORE_SURVIVORS_BY_LATENCY, 1, &best, &nbest, &err);

    printf("run %lld: %s (%s)\n", (long long)r.id, r.task_name, r.task_path);
    printf("  status       %s, %lld generations done, strategy %s, seed %lld\n", r.status,
           (long long)r.generations_done, r.strategy, (long long)r.seed);
    printf("  device       %s (%s), NVRTC %s, driver %s\n", r.device_name ? r.device_name : "-",
           r.device_arch ? r.device_arch : "-", r.nvrtc_version ? r.nvrtc_version : "-",
           r.driver_version ? r.driver_version : "-");
    printf("  started      %s%s%s\n", r.started_at, r.finished_at ? ", finished " : "",
           r.finished_at ? r.finished_at : "");
    printf("  config       %s\n", r.config_json);
    printf("  candidates   %lld evaluated: %lld valid (baseline %lld, accepted %lld, reverted %lld), %lld failed%s%s%s\n",
           (long long)c.total, (long long)c.ok, (long long)c.baseline, (long long)c.accepted,
           (long long)c.reverted, (long long)c.failed, c.failures.len ? " (" : "",
           c.failures.len ? c.failures.s : "", c.failures.len ? ")" : "");
    if (nbest > 0) {
        char lat[32];
        fmt_us(lat, sizeof(lat), best[0].latency_us);
        char *p = params_compact(best[0].params_json);
        printf("  best         #%lld (generation %lld): %s, %.3fx over the baseline\n", (long long)best[0].id,
               (long long)best[0].generation, lat, isnan(best[0].speedup) ? 0.0 : best[0].speedup);
        printf("               %s\n", p);
        free(p);
    } else {
        printf("  best         none yet\n");
    }
    print_warm(st, r.id);
    /* The LLM operator, per prompt mode (the llm_mode_stats view). */
    LlmModeStats *ms = NULL;
    int nms = 0;
    if (store_llm_mode_stats(st, r.id, &ms, &nms, &err) != 0) {
        errorf("%s", err.msg);
    } else if (nms > 0) {
        printf("  llm          %-8s %8s %8s %9s %10s %8s\n", "mode", "requests", "children", "validity",
               "acceptance", "best");
        for (int i = 0; i < nms; i++) {
            char best_s[32];
            if (isnan(ms[i].best_speedup))
                snprintf(best_s, sizeof(best_s), "-");
            else
                snprintf(best_s, sizeof(best_s), "%.2fx", ms[i].best_speedup);
            printf("               %-8s %8lld %8lld %8.1f%% %9.1f%% %8s\n", ms[i].mode, (long long)ms[i].requests,
                   (long long)ms[i].children, 100.0 * ms[i].validity_rate, 100.0 * ms[i].acceptance_rate, best_s);
        }
    }
    free(ms);
    store_candidates_free(best, nbest);
    sb_free(&c.failures);
    run_record_free(&r);
    store_close(&st);
    return rc;
}

/* ---- top ------------------------------------------------------------- */

EvoExit cmd_top(const Settings *s)
{
    EvoExit rc = EVO_EXIT_OK;
    RunRecord r;
    Store *st = open_run(s, &r, &rc);
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
            json_array_append_new(arr, candidate_json(&list[i], 0));
        json_print(json_pack("{s:I, s:s, s:o}", "run", (json_int_t)r.id, "task", r.task_name, "candidates", arr));
    } else {
        printf("run %lld (%s): the %d fastest of the baseline and accepted candidates gated on every shape\n",
               (long long)r.id, r.task_name, n);
        printf("%6s %4s %-9s %11s %8s %6s %5s %5s  %s\n", "id", "gen", "operator", "latency", "speedup",
               "CTAs", "occ", "regs", "params");
        for (int i = 0; i < n; i++) {
            CandidateRecord *c = &list[i];
            char lat[32];
            fmt_us(lat, sizeof(lat), c->latency_us);
            char *p = params_compact(c->params_json);
            printf("%6lld %4lld %-9s %11s %7.2fx %6lld %5lld %5lld  %s\n", (long long)c->id,
                   (long long)c->generation, c->operator, lat, isnan(c->speedup) ? 0.0 : c->speedup,
                   (long long)c->ctas, (long long)c->occupancy, (long long)c->registers, p);
            free(p);
        }
    }
    store_candidates_free(list, n);
    run_record_free(&r);
    store_close(&st);
    return rc;
}

/* ---- lineage --------------------------------------------------------- */

/* Keys whose values differ between two params JSON objects: "BLOCK_M 64->128". */
static char *params_diff(const char *from, const char *to)
{
    json_t *a = from ? json_loads(from, 0, NULL) : NULL;
    json_t *b = to ? json_loads(to, 0, NULL) : NULL;
    StrBuf sb = {0};
    if (json_is_object(a) && json_is_object(b)) {
        const char *k;
        json_t *v;
        json_object_foreach(b, k, v) {
            json_t *old = json_object_get(a, k);
            if (old && json_equal(old, v))
                continue;
            char *o = old ? json_dumps(old, JSON_ENCODE_ANY) : xstrdup("-");
            char *nw = json_dumps(v, JSON_ENCODE_ANY);
            sb_printf(&sb, "%s%s %s->%s", sb.len ? ", " : "", k, o, nw);
            free(o);
            free(nw);
        }
    }
    json_decref(a);
    json_decref(b);
    if (!sb.len)
        sb_append(&sb, from ? "(no parameter change)" : "");
    return sb_take(&sb);
}

EvoExit cmd_lineage(const Settings *s)
{
    EvoExit rc = EVO_EXIT_OK;
    Store *st = open_store(s, &rc);
    if (!st)
        return rc;
    EvoErr err;
    CandidateRecord chain[256];
    int n = 0;
    int64_t id = s->id;
    while (id && n < (int)EVO_ARRAY_LEN(chain)) {
        int got = store_candidate_get(st, id, &chain[n], &err);
        if (got <= 0) {
            if (got < 0)
                errorf("%s", err.msg);
            else
                errorf("%s: no candidate %lld", store_path(st), (long long)id);
            rc = n == 0 ? EVO_EXIT_FAIL : rc;
            break;
        }
        id = chain[n].parent_id;
        n++;
    }
    if (n > 0) {
        printf("lineage of candidate %lld (run %lld), from the baseline:\n", (long long)s->id,
               (long long)chain[0].run_id);
        printf("%6s %4s %-9s %-9s %11s %8s %8s  %s\n", "id", "gen", "operator", "decision", "latency",
               "speedup", "vs par.", "change");
        for (int i = n - 1; i >= 0; i--) {
            CandidateRecord *c = &chain[i];
            char lat[32], ratio[32];
            fmt_us(lat, sizeof(lat), c->latency_us);
            if (isnan(c->ratio_to_parent))
                snprintf(ratio, sizeof(ratio), "-");
            else
                snprintf(ratio, sizeof(ratio), "%+.1f%%", (c->ratio_to_parent - 1) * 100);
            char *d = i == n - 1 ? params_compact(c->params_json)
                                 : params_diff(chain[i + 1].params_json, c->params_json);
            printf("%6lld %4lld %-9s %-9s %11s %7.2fx %8s  %s\n", (long long)c->id, (long long)c->generation,
                   c->operator, c->decision, lat, isnan(c->speedup) ? 0.0 : c->speedup, ratio, d);
            free(d);
        }
    }
    for (int i = 0; i < n; i++)
        candidate_record_free(&chain[i]);
    store_close(&st);
    return rc;
}

/* ---- show ------------------------------------------------------------ */

EvoExit cmd_show(const Settings *s)
{
    EvoExit rc = EVO_EXIT_OK;
    Store *st = open_store(s, &rc);
    if (!st)
        return rc;
    EvoErr err;
    CandidateRecord c;
    int got = store_candidate_get(st, s->id, &c, &err);
    if (got <= 0) {
        if (got < 0)
            errorf("%s", err.msg);
        else
            errorf("%s: no candidate %lld", store_path(st), (long long)s->id);
        store_close(&st);
        return got < 0 ? EVO_EXIT_DB : EVO_EXIT_FAIL;
    }
    if (s->json) {
        json_print(candidate_json(&c, 1));
        candidate_record_free(&c);
        store_close(&st);
        return rc;
    }
    char lat[32], p90[32];
    fmt_us(lat, sizeof(lat), c.latency_us);
    fmt_us(p90, sizeof(p90), c.p90_us);
    printf("candidate %lld (run %lld, generation %lld)\n", (long long)c.id, (long long)c.run_id,
           (long long)c.generation);
    printf("  operator     %s", c.operator);
    if (c.parent_id)
        printf(", parent %lld", (long long)c.parent_id);
    if (c.parent2_id)
        printf(", second parent %lld", (long long)c.parent2_id);
    printf("\n  params       %s\n", c.params_json);
    printf("  status       %s, decision %s%s%s\n", c.status, c.decision, c.error ? ": " : "",
           c.error ? c.error : "");
    printf("  gate stage   %s: %s%s\n", gate_stage_name(c.gate_stage), gate_stage_explain(c.gate_stage),
           c.gate_stage == GATE_STAGE_FULL ? "" : "; not a survivor, parent or export");
    printf("  latency      %s median, %s p90, CV %.2f%%\n", lat, p90, isnan(c.cv) ? 0.0 : c.cv * 100);
    if (!isnan(c.ratio_to_parent))
        printf("  vs parent    %.4f (spread %.4f)\n", c.ratio_to_parent, c.ratio_spread);
    if (!isnan(c.speedup))
        printf("  speedup      %.3fx over the baseline\n", c.speedup);
    if (c.ctas >= 0)
        printf("  launch       %lld CTAs (%lld total) x %lld threads, %lld regs, smem %lld static + %lld dynamic,"
               " occupancy %lld CTAs/SM, %.2f waves\n",
               (long long)c.ctas, (long long)c.ctas_total, (long long)c.threads, (long long)c.registers,
               (long long)c.smem_static, (long long)c.smem_dynamic, (long long)c.occupancy, c.waves);
    if (!isnan(c.tflops))
        printf("  throughput   %.1f TFLOP/s (%.1f%% of peak), %.0f GB/s (%.1f%% of peak)\n", c.tflops,
               c.pct_peak_flops, c.gbps, c.pct_peak_bw);
    printf("  time         compile %.0f ms, gate %.0f ms, timing %.0f ms\n", isnan(c.compile_ms) ? 0 : c.compile_ms,
           isnan(c.gate_ms) ? 0 : c.gate_ms, isnan(c.time_ms) ? 0 : c.time_ms);
    printf("  source       %s\n", c.source_hash ? c.source_hash : "-");
    if (c.gate_json)
        printf("  gate         %s\n", c.gate_json);
    if (c.metrics_json)
        printf("  metrics      %s\n", c.metrics_json);
    if (c.rationale)
        printf("  rationale    %s\n", c.rationale);
    if (c.compile_id) {
        CompileRecord cr;
        if (store_compile_get(st, c.compile_id, &cr, &err) == 1) {
            printf("\n--- compile (%s, %s, %.0f ms) ---\n%s\n", cr.arch, cr.options,
                   isnan(cr.compile_ms) ? 0 : cr.compile_ms, cr.log ? cr.log : "");
            compile_record_free(&cr);
        }
    }
    if (c.log && *c.log)
        printf("\n--- evaluation log ---\n%s\n", c.log);
    candidate_record_free(&c);
    store_close(&st);
    return rc;
}

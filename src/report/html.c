/*
 * html: the page of the run report (html.h). One self-contained
 * document: inline CSS, inline SVG from plots.c, no script, no external
 * reference. It is written as well-formed XML too (every element closed,
 * no named entities beyond the five of XML), so an XML parser reads it as
 * well as a browser does.
 *
 * Sections: the summary, the run (device, configuration, noise figures),
 * convergence, lineage of the best, the top N, per-knob effects, failures
 * by status, LLM rates per mode.
 */
#include "report/html.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "gpu/bench.h"
#include "report/format.h"
#include "report/plots.h"
#include "report/svg.h"

static const char css[] =
    "body{font-family:'DejaVu Sans',Arial,Helvetica,sans-serif;margin:24px auto;max-width:1180px;color:#222;"
    "background:#fff;font-size:14px;line-height:1.4}\n"
    "h1{font-size:22px;margin:0 0 6px}h2{font-size:18px;margin:28px 0 8px;border-bottom:1px solid #ccc;"
    "padding-bottom:3px}h3{font-size:15px;margin:16px 0 6px}\n"
    "p.summary{font-size:15px;margin:4px 0}p.note{color:#555;font-style:italic}\n"
    "nav a{margin-right:14px;color:#1f5fb0}\n"
    "table{border-collapse:collapse;margin:6px 0 12px}td,th{border:1px solid #ddd;padding:3px 8px;"
    "text-align:left;vertical-align:top}th{background:#f3f5f8}td.num{text-align:right;font-variant-numeric:"
    "tabular-nums}\n"
    "table.kv th{width:190px}code,td.params{font-family:'DejaVu Sans Mono',monospace;font-size:12px}\n"
    "div.cols{display:flex;flex-wrap:wrap;gap:24px}div.knobs{display:flex;flex-wrap:wrap;gap:8px}\n"
    "div.scroll{overflow-x:auto}\n"
    "svg.plot{background:#fff;display:block;margin:6px 0}\n"
    "svg .grid{stroke:#e6e6e6;stroke-width:1}svg .frame{fill:none;stroke:#888}svg .band{stroke:#f2c0b8;"
    "stroke-dasharray:3 3}\n"
    "svg .tick{font-size:11px;fill:#444}svg .axlabel{font-size:12px;fill:#222}svg .legend{font-size:11px;"
    "fill:#333}\n"
    "svg .knobtitle{font-size:12px;font-weight:bold;fill:#222}\n"
    "svg .pt{stroke:#fff;stroke-width:0.8}svg .pt.baseline{fill:#1f5fb0}svg .pt.accepted{fill:#1a9850}"
    "svg .pt.reverted{fill:#f0a030}svg .pt.failed{stroke:#d7301f;stroke-width:2;fill:none}"
    "svg .pt.valid{fill:#5b7fb5;fill-opacity:0.75}svg .pt.kbest{fill:#1a9850}\n"
    "svg .best{fill:none;stroke:#222;stroke-width:2}svg .median{stroke:#c0392b;stroke-width:2.5}\n"
    "svg .bar.failure{fill:#d7301f}svg .bar.validity{fill:#5b7fb5}svg .bar.acceptance{fill:#1a9850}\n"
    "svg .node{fill:#eef3fa;stroke:#5b7fb5}svg .node.bestnode{fill:#e3f4e8;stroke:#1a9850;stroke-width:2}"
    "svg .node.baseline{fill:#e8eef9;stroke:#1f5fb0}\n"
    "svg .nodehead{font-size:13px;font-weight:bold;fill:#222}svg .nodetext{font-size:11px;fill:#333}\n"
    "svg .edge{stroke:#777;stroke-width:1.5;marker-end:url(#arrow)}svg .arrowhead{fill:#777}"
    "svg .ratio{font-size:11px;fill:#b35c00}svg .ratio.faster{fill:#1a7a40}\n"
    "footer{margin-top:32px;color:#777;font-size:12px}\n";

/* ---- small writers --------------------------------------------------- */

static void esc(StrBuf *sb, const char *s)
{
    svg_escape(sb, s ? s : "");
}

static void kv_row(StrBuf *sb, const char *k, const char *v)
{
    sb_append(sb, "<tr><th>");
    esc(sb, k);
    sb_append(sb, "</th><td>");
    esc(sb, v && v[0] ? v : "-");
    sb_append(sb, "</td></tr>\n");
}

static void kv_rowf(StrBuf *sb, const char *k, const char *fmt, ...) EVO_PRINTF(3, 4);
static void kv_rowf(StrBuf *sb, const char *k, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char *v = xvasprintf(fmt, ap);
    va_end(ap);
    kv_row(sb, k, v);
    free(v);
}

static void td(StrBuf *sb, const char *cls, const char *v)
{
    sb_append(sb, cls ? "<td class=\"" : "<td>");
    if (cls) {
        esc(sb, cls);
        sb_append(sb, "\">");
    }
    esc(sb, v && v[0] ? v : "-");
    sb_append(sb, "</td>");
}

/* A number cell: pre, v with prec decimals, post ("x0.917", "1.19x"). */
static void td_num(StrBuf *sb, const char *pre, double v, int prec, const char *post)
{
    char buf[64];
    if (isfinite(v))
        snprintf(buf, sizeof(buf), "%s%.*f%s", pre, prec, v, post);
    else
        snprintf(buf, sizeof(buf), "-");
    td(sb, "num", buf);
}

static void td_int(StrBuf *sb, int64_t v)
{
    char buf[32];
    if (v >= 0)
        snprintf(buf, sizeof(buf), "%lld", (long long)v);
    else
        snprintf(buf, sizeof(buf), "-");
    td(sb, "num", buf);
}

static void td_us(StrBuf *sb, double us)
{
    char buf[32];
    format_us(buf, sizeof(buf), us);
    td(sb, "num", buf);
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* Median and max of the finite v[0..n-1] (sorted in place); NaN if none. */
static double median_of(double *v, int n, double *max)
{
    qsort(v, (size_t)n, sizeof(double), cmp_double);
    *max = n ? v[n - 1] : NAN;
    return n == 0 ? NAN : n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* ---- header ---------------------------------------------------------- */

static void header(StrBuf *sb, const Report *r)
{
    const RunRecord *run = &r->run;
    sb_append(sb, "<header>\n<h1>evoeng run ");
    sb_printf(sb, "%lld: ", (long long)run->id);
    esc(sb, run->task_name);
    if (run->device_name) {
        sb_append(sb, " on ");
        esc(sb, run->device_name);
    }
    sb_append(sb, "</h1>\n<p class=\"summary\">");
    sb_printf(sb,
              "%s, %lld generation%s finished, %d candidates, %d valid, %d of them gated on every shape and timed "
              "(the others were decided on the benchmark shape alone).",
              run->status ? run->status : "?", (long long)run->generations_done,
              run->generations_done == 1 ? "" : "s", r->ncand, r->nok, r->nvalid);
    sb_append(sb, "</p>\n<p class=\"summary\" id=\"best-summary\">");
    if (r->best >= 0) {
        const CandidateRecord *b = &r->cands[r->best];
        char lat[32], base[32];
        format_us(lat, sizeof(lat), b->latency_us);
        format_us(base, sizeof(base), r->base >= 0 ? r->cands[r->base].latency_us : NAN);
        sb_printf(sb, "Best: candidate #%lld, %s", (long long)b->id, lat);
        if (r->base >= 0 && isfinite(r->cands[r->base].latency_us))
            sb_printf(sb, ", %.2fx over the baseline (%s)", r->cands[r->base].latency_us / b->latency_us, base);
        sb_append(sb, ".");
    } else {
        sb_append(sb, "No candidate passed the correctness gate on every shape: this run has no best. "
                      "The failures below say why.");
    }
    sb_append(sb, "</p>\n<nav><a href=\"#run\">run</a><a href=\"#convergence\">convergence</a>"
                  "<a href=\"#lineage\">lineage</a><a href=\"#top\">top</a><a href=\"#knobs\">knobs</a>"
                  "<a href=\"#failures\">failures</a><a href=\"#llm\">LLM</a></nav>\n</header>\n");
}

/* ---- run: device, configuration, noise -------------------------------- */

static void device_table(StrBuf *sb, const Report *r)
{
    const RunRecord *run = &r->run;
    const json_t *d = r->device;
    sb_append(sb, "<div><h3>Device</h3>\n<table class=\"kv\" id=\"device\">\n");
    kv_row(sb, "GPU", run->device_name);
    kv_row(sb, "architecture", run->device_arch);
    if (json_is_object(d)) {
        json_t *v;
        if ((v = json_object_get(d, "sm_count")))
            kv_rowf(sb, "SMs", "%lld", (long long)json_integer_value(v));
        if ((v = json_object_get(d, "clock_khz")))
            kv_rowf(sb, "clock", "%.0f MHz", json_number_value(v) / 1000);
        if ((v = json_object_get(d, "l2_bytes")))
            kv_rowf(sb, "L2", "%.0f MiB", json_number_value(v) / (1 << 20));
        if ((v = json_object_get(d, "smem_per_block_optin")))
            kv_rowf(sb, "shared memory per block", "%.0f KiB (opt-in)", json_number_value(v) / 1024);
        if ((v = json_object_get(d, "peak_tflops_fp16")))
            kv_rowf(sb, "peak fp16 tensor", "%.0f TFLOP/s", json_number_value(v));
        if ((v = json_object_get(d, "peak_gbps")))
            kv_rowf(sb, "peak memory bandwidth", "%.0f GB/s", json_number_value(v));
    }
    kv_row(sb, "CUDA driver", run->driver_version);
    kv_row(sb, "NVRTC", run->nvrtc_version);
    kv_row(sb, "evoeng", run->evoeng_version);
    sb_append(sb, "</table></div>\n");
}

static void config_rows(StrBuf *sb, const char *prefix, const json_t *o)
{
    const char *k;
    json_t *v;
    json_object_foreach((json_t *)o, k, v) {
        /* the run row already shows these */
        if (!prefix[0] && (strcmp(k, "strategy") == 0 || strcmp(k, "task") == 0))
            continue;
        char *name = xasprintf("%s%s", prefix, k);
        if (json_is_object(v) && strcmp(k, "dims") == 0) {
            char *t = format_params_diff(NULL, v, "", " ");
            kv_row(sb, name, t[0] ? t : "(task defaults)");
            free(t);
        } else if (json_is_object(v)) {
            char *p = xasprintf("%s.", name);
            config_rows(sb, p, v);
            free(p);
        } else if (!json_is_null(v)) {
            char *t = format_value_text(v);
            kv_row(sb, name, t);
            free(t);
        }
        free(name);
    }
}

static void config_table(StrBuf *sb, const Report *r)
{
    const RunRecord *run = &r->run;
    sb_append(sb, "<div><h3>Configuration</h3>\n<table class=\"kv\" id=\"config\">\n");
    kv_row(sb, "task", run->task_name);
    kv_row(sb, "task spec", run->task_path);
    kv_row(sb, "status", run->status);
    kv_row(sb, "started", run->started_at);
    kv_row(sb, "finished", run->finished_at);
    kv_row(sb, "strategy", run->strategy);
    if (json_is_object(r->config))
        config_rows(sb, "", r->config);
    sb_append(sb, "</table></div>\n");
}

/* Noise: the spread of the timings and of the A/B ratios the run
 * decided on, and (from metrics_json) the samples, batch and the GPUs'
 * calibration scales. */
static void noise_table(StrBuf *sb, const Report *r)
{
    int n = r->ncand;
    double *cv = xcalloc((size_t)n + 1, sizeof(double)), *sp = xcalloc((size_t)n + 1, sizeof(double));
    double *samples = xcalloc((size_t)n + 1, sizeof(double)), *batch = xcalloc((size_t)n + 1, sizeof(double));
    int ncv = 0, nsp = 0, nsm = 0, nb = 0;
    StrBuf gpus = {0};
    json_t *seen = json_object();
    for (int i = 0; i < n; i++) {
        const CandidateRecord *c = &r->cands[i];
        if (isfinite(c->cv) && isfinite(c->latency_us))
            cv[ncv++] = c->cv;
        if (isfinite(c->ratio_spread))
            sp[nsp++] = c->ratio_spread;
        json_t *m = c->metrics_json ? json_loads(c->metrics_json, 0, NULL) : NULL;
        json_t *ms = json_object_get(m, "ms"), *g = json_object_get(m, "gpu"), *b = json_object_get(m, "batch");
        if (json_is_integer(json_object_get(ms, "n")))
            samples[nsm++] = (double)json_integer_value(json_object_get(ms, "n"));
        if (json_is_integer(b))
            batch[nb++] = (double)json_integer_value(b);
        if (json_is_object(g)) {
            char key[32];
            snprintf(key, sizeof(key), "%lld", (long long)json_integer_value(json_object_get(g, "index")));
            if (!json_object_get(seen, key)) {
                json_object_set_new(seen, key, json_true());
                const char *nm = json_string_value(json_object_get(g, "name"));
                sb_printf(&gpus, "%sGPU %s (%s): x%.4f", gpus.len ? "; " : "", key, nm ? nm : "?",
                          json_number_value(json_object_get(g, "scale")));
            }
        }
        json_decref(m);
    }
    json_decref(seen);
    sb_append(sb, "<div><h3>Noise</h3>\n<table class=\"kv\" id=\"noise\">\n");
    json_t *thr = json_object_get(r->config, "revert_threshold");
    if (thr)
        kv_rowf(sb, "revert threshold", "%.1f%% (a child more than this slower than its parent is reverted)",
                json_number_value(thr) * 100);
    if (r->base >= 0 && isfinite(r->cands[r->base].cv))
        kv_rowf(sb, "baseline timing CV", "%.2f%% (median %.2f us, p90 %.2f us)", r->cands[r->base].cv * 100,
                r->cands[r->base].latency_us, r->cands[r->base].p90_us);
    double mx;
    if (ncv) {
        double med = median_of(cv, ncv, &mx);
        kv_rowf(sb, "timing CV over timed candidates", "median %.2f%%, max %.2f%% (%d candidate%s)", med * 100,
                mx * 100, ncv, ncv == 1 ? "" : "s");
    }
    if (nsp) {
        double med = median_of(sp, nsp, &mx);
        kv_rowf(sb, "A/B ratio spread (p90 - p10)", "median %.2f%%, max %.2f%% (%d comparison%s)", med * 100,
                mx * 100, nsp, nsp == 1 ? "" : "s");
    }
    if (nsm) {
        double med = median_of(samples, nsm, &mx);
        kv_rowf(sb, "timing samples", "median %.0f per candidate", med);
    }
    if (nb) {
        double med = median_of(batch, nb, &mx);
        kv_rowf(sb, "launches per sample (batch)", "median %.0f, max %.0f", med, mx);
    }
    if (gpus.len)
        kv_row(sb, "GPU calibration (latency scale to GPU 0)", gpus.s);
    if (!ncv && !nsp && !nsm && !thr)
        kv_row(sb, "figures", "none recorded");
    sb_append(sb, "</table></div>\n");
    sb_free(&gpus);
    free(cv);
    free(sp);
    free(samples);
    free(batch);
}

/* ---- tables ---------------------------------------------------------- */

static void lineage_table(StrBuf *sb, const Report *r)
{
    if (r->nchain == 0)
        return;
    sb_append(sb, "<table id=\"lineage-table\">\n<tr><th>step</th><th>candidate</th><th>gen</th><th>operator</th>"
                  "<th>changes vs its parent</th><th>time vs parent</th><th>latency</th><th>speedup</th>"
                  "<th>gate</th></tr>\n");
    json_t *prev = NULL;
    for (int i = 0; i < r->nchain; i++) {
        const CandidateRecord *c = &r->chain[i];
        json_t *p = c->params_json ? json_loads(c->params_json, 0, NULL) : NULL;
        char buf[64];
        sb_printf(sb, "<tr><td class=\"num\">%d</td>", i);
        snprintf(buf, sizeof(buf), "#%lld", (long long)c->id);
        td(sb, NULL, buf);
        td_int(sb, c->generation);
        td(sb, NULL, c->operator);
        char *d = i == 0 ? xstrdup("(root)") : format_params_diff(prev, p, " -> ", ", ");
        td(sb, "params", d[0] ? d : "(no parameter change)");
        free(d);
        td_num(sb, "x", c->ratio_to_parent, 3, "");
        td_us(sb, c->latency_us);
        td_num(sb, "", c->speedup, 2, "x");
        td(sb, NULL, gate_stage_name(c->gate_stage));
        sb_append(sb, "</tr>\n");
        json_decref(prev);
        prev = p;
    }
    json_decref(prev);
    sb_append(sb, "</table>\n<p class=\"note\">time vs parent: the interleaved A/B ratio child/parent the run "
                  "decided on (below 1: faster).</p>\n");
}

static void top_table(StrBuf *sb, const Report *r)
{
    if (r->ntop == 0) {
        sb_append(sb, "<p class=\"note\">No survivor: no candidate passed the gate on every shape.</p>\n");
        return;
    }
    /* a latency column per input profile when the run timed several */
    ProfileStat ps[PLAN_MAX_PROFILES];
    int np = bench_metrics_profiles(r->top[0].metrics_json, ps);
    np = np > 1 ? np : 0;
    sb_append(sb, "<table id=\"top-table\">\n<tr><th>rank</th><th>candidate</th><th>gen</th><th>operator</th>"
                  "<th>latency</th>");
    for (int k = 0; k < np; k++) {
        sb_append(sb, "<th class=\"profile\">");
        esc(sb, ps[k].name);
        sb_append(sb, "</th>");
    }
    sb_append(sb, "<th>p90</th><th>speedup</th><th>regs</th><th>occupancy</th>"
                  "<th>TFLOP/s</th><th>parameters that differ from the baseline</th></tr>\n");
    for (int i = 0; i < r->ntop; i++) {
        const CandidateRecord *c = &r->top[i];
        json_t *p = c->params_json ? json_loads(c->params_json, 0, NULL) : NULL;
        char buf[64];
        sb_printf(sb, "<tr><td class=\"num\">%d</td>", i + 1);
        snprintf(buf, sizeof(buf), "#%lld", (long long)c->id);
        td(sb, NULL, buf);
        td_int(sb, c->generation);
        td(sb, NULL, c->operator);
        td_us(sb, c->latency_us);
        if (np) {
            ProfileStat mine[PLAN_MAX_PROFILES];
            int nm = bench_metrics_profiles(c->metrics_json, mine);
            for (int k = 0; k < np; k++) {
                double us = NAN;
                for (int q = 0; q < nm; q++)   /* by name: a candidate may lack one */
                    if (strcmp(mine[q].name, ps[k].name) == 0)
                        us = mine[q].ms.median * 1000;
                td_us(sb, us);
            }
        }
        td_us(sb, c->p90_us);
        td_num(sb, "", c->speedup, 2, "x");
        td_int(sb, c->registers);
        td_int(sb, c->occupancy);
        td_num(sb, "", c->tflops, 1, "");
        int is_base = r->base >= 0 && c->id == r->cands[r->base].id;
        char *d = is_base ? xstrdup("(the baseline)") : format_params_diff(r->base_params, p, " -> ", ", ");
        td(sb, "params", d[0] ? d : "(same as the baseline)");
        free(d);
        sb_append(sb, "</tr>\n");
        json_decref(p);
    }
    sb_append(sb, "</table>\n");
    if (np)
        sb_append(sb, "<p class=\"note\">latency: the geometric mean over the timing input profiles, each "
                      "profile's median in its own column; the A/B ratios the run decided on are each time the "
                      "worst profile's.</p>\n");
}

static void llm_table(StrBuf *sb, const Report *r)
{
    if (r->nllm == 0) {
        sb_append(sb, "<p class=\"note\">This run used no LLM (no --llm or --llm-cmd): no LLM rates.</p>\n");
        return;
    }
    sb_append(sb, "<table id=\"llm-table\">\n<tr><th>mode</th><th>requests</th><th>children</th><th>valid</th>"
                  "<th>accepted</th><th>validity rate</th><th>acceptance rate</th><th>best speedup</th></tr>\n");
    for (int i = 0; i < r->nllm; i++) {
        const LlmModeStats *m = &r->llm[i];
        sb_append(sb, "<tr>");
        td(sb, NULL, m->mode);
        td_int(sb, m->requests);
        td_int(sb, m->children);
        td_int(sb, m->valid);
        td_int(sb, m->accepted);
        td_num(sb, "", m->validity_rate, 3, "");
        td_num(sb, "", m->acceptance_rate, 3, "");
        td_num(sb, "", m->best_speedup, 2, "x");
        sb_append(sb, "</tr>\n");
    }
    sb_append(sb, "</table>\n");
}

/* ---- page ------------------------------------------------------------ */

static void section(StrBuf *sb, const char *id, const char *title)
{
    sb_printf(sb, "<section id=\"%s\">\n<h2>", id);
    esc(sb, title);
    sb_append(sb, "</h2>\n");
}

void report_html(StrBuf *sb, const Report *r)
{
    sb_append(sb, "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\"/>\n"
                  "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\"/>\n<title>");
    sb_printf(sb, "evoeng run %lld: ", (long long)r->run.id);
    esc(sb, r->run.task_name);
    sb_printf(sb, "</title>\n<style>\n%s</style>\n</head>\n<body>\n", css);
    header(sb, r);

    section(sb, "run", "Run");
    sb_append(sb, "<div class=\"cols\">\n");
    device_table(sb, r);
    config_table(sb, r);
    noise_table(sb, r);
    sb_append(sb, "</div>\n</section>\n");

    section(sb, "convergence", "Convergence");
    sb_append(sb, "<p class=\"note\">Every candidate: accepted, reverted and baseline points at their median "
                  "latency on the benchmark shape, failures as crosses in the band above the plot; the line is "
                  "the best so far among candidates gated on every shape. Hover a mark for its details.</p>\n");
    plot_convergence_gen(sb, r);
    plot_convergence_time(sb, r);
    sb_append(sb, "</section>\n");

    section(sb, "lineage", "Lineage of the best candidate");
    sb_append(sb, "<div class=\"scroll\">\n");
    plot_lineage(sb, r);
    sb_append(sb, "</div>\n");
    lineage_table(sb, r);
    sb_append(sb, "</section>\n");

    char title[64];
    snprintf(title, sizeof(title), "Top %d", r->top_n);
    section(sb, "top", title);
    top_table(sb, r);
    sb_append(sb, "</section>\n");

    section(sb, "knobs", "Per-knob effects");
    sb_append(sb, "<p class=\"note\">Latency by parameter value over the valid candidates (passed the gate on "
                  "every shape and timed); the red tick is the median per value. Knobs are ordered by how far "
                  "their medians spread.</p>\n");
    plot_knobs(sb, r);
    sb_append(sb, "</section>\n");

    section(sb, "failures", "Failures by status");
    plot_failures(sb, r);
    sb_append(sb, "</section>\n");

    section(sb, "llm", "LLM rates per mode");
    llm_table(sb, r);
    plot_llm(sb, r);
    sb_append(sb, "</section>\n");

    sb_append(sb, "<footer>Generated by evoeng " EVO_VERSION " from ");
    esc(sb, r->db_path);
    sb_append(sb, ". A self-contained page: no script, nothing loaded from the network.</footer>\n"
                  "</body>\n</html>\n");
}

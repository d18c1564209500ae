/* Unit tests for the run report (src/report/): the SVG helper (escaping,
 * ticks, data-to-pixel mapping, ranges) and report_render on stores
 * built here: a run with accepted, reverted and failed candidates (marks
 * counted per plot, failure counts, hostile text escaped), a run with no
 * valid candidate, an empty run, and run ids that do not exist. The
 * recorded H200 store and a real browser are tested by test_report.py
 * and test_report_browser.py. */
#include "testhelp.h"
#include "report/report.h"
#include "store/report_rows.h"
#include "store/store.h"
#include "report/svg.h"

#include <math.h>
#include <sqlite3.h>
#include <stdlib.h>
#include <unistd.h>

static char tmpdir[256];

static int count_of(const char *hay, const char *needle)
{
    int n = 0;
    for (const char *p = hay; p && (p = strstr(p, needle)); p += strlen(needle))
        n++;
    return n;
}

/* ---- svg ------------------------------------------------------------- */

static void test_escape(void)
{
    StrBuf sb = {0};
    svg_escape(&sb, "<a href=\"x\">&'b'\x01\x7f</a>");
    CHECK_STR(sb.s, "&lt;a href=&quot;x&quot;&gt;&amp;&#39;b&#39;??&lt;/a&gt;");
    sb_clear(&sb);
    svg_escape(&sb, NULL);
    CHECK(sb.len == 0);
    sb_free(&sb);
}

static void test_ticks(void)
{
    double t[32];
    int n = svg_ticks(0, 10, 0, 5, t, 32);
    CHECK(n == 6);
    for (int i = 0; i < n; i++)
        CHECK_NEAR(t[i], 2.0 * i, 1e-12);
    n = svg_ticks(-0.3, 0.71, 0, 4, t, 32);
    CHECK(n >= 3 && n <= 6);
    for (int i = 0; i < n; i++)
        CHECK(t[i] >= -0.3 && t[i] <= 0.71);
    CHECK(svg_ticks(0, 1e-5, 0, 5, t, 32) >= 2);
    /* log: the decades of the range */
    n = svg_ticks(1, 1000, 1, 5, t, 32);
    CHECK(n == 4);
    CHECK_NEAR(t[0], 1, 1e-12);
    CHECK_NEAR(t[3], 1000, 1e-9);
    /* two decades: 1, 2, 5 per decade */
    n = svg_ticks(1, 100, 1, 5, t, 32);
    CHECK(n == 7);
    CHECK_NEAR(t[1], 2, 1e-12);
    /* less than a decade on a log axis falls back to linear ticks */
    n = svg_ticks(9, 11, 1, 5, t, 32);
    CHECK(n >= 3);
    for (int i = 0; i < n; i++)
        CHECK(t[i] >= 9 && t[i] <= 11);
    /* empty or bad ranges */
    CHECK(svg_ticks(5, 5, 0, 5, t, 32) == 0);
    CHECK(svg_ticks(0, 10, 1, 5, t, 32) == 0);
    CHECK(svg_ticks(NAN, 10, 0, 5, t, 32) == 0);
    CHECK(svg_ticks(0, 10, 0, 5, t, 2) == 2);
}

static void test_frame(void)
{
    SvgFrame f;
    svg_frame_init(&f, 400, 300, 50, 20, 10, 30);
    CHECK_NEAR(f.pw, 340, 1e-12);
    CHECK_NEAR(f.ph, 250, 1e-12);
    f.x0 = 0;
    f.x1 = 10;
    f.y0 = 0;
    f.y1 = 100;
    CHECK_NEAR(svg_x(&f, 0), 50, 1e-9);
    CHECK_NEAR(svg_x(&f, 10), 390, 1e-9);
    CHECK_NEAR(svg_y(&f, 0), 270, 1e-9);   /* y grows downwards */
    CHECK_NEAR(svg_y(&f, 100), 20, 1e-9);
    f.ylog = 1;
    f.y0 = 1;
    f.y1 = 100;
    CHECK_NEAR(svg_y(&f, 10), 20 + 125, 1e-9);  /* the middle decade */
    CHECK_NEAR(svg_y(&f, -1), 270, 1e-9);       /* non-positive: the bottom edge */

    double v[] = {NAN, 2, 4, INFINITY};
    f.ylog = 0;
    svg_frame_range(&f, 'y', v, 4);
    CHECK_NEAR(f.y0, 1.9, 1e-12);
    CHECK_NEAR(f.y1, 4.1, 1e-12);
    double one[] = {5};
    svg_frame_range(&f, 'x', one, 1);
    CHECK(f.x0 < 5 && f.x1 > 5);
    svg_frame_range(&f, 'x', NULL, 0);
    CHECK_NEAR(f.x0, 0, 0);
    CHECK_NEAR(f.x1, 1, 0);
    double lg[] = {1, 1000, -3};
    f.ylog = 1;
    svg_frame_range(&f, 'y', lg, 3);
    CHECK(f.y0 > 0 && f.y0 < 1 && f.y1 > 1000);

    char b[32];
    svg_fmt_num(b, sizeof(b), 2500);
    CHECK_STR(b, "2500");
    svg_fmt_num(b, sizeof(b), 15000);
    CHECK_STR(b, "15k");
    svg_fmt_num(b, sizeof(b), 0.5);
    CHECK_STR(b, "0.5");
    svg_fmt_num(b, sizeof(b), NAN);
    CHECK_STR(b, "-");
}

static void test_marks(void)
{
    StrBuf sb = {0};
    SvgFrame f;
    svg_frame_init(&f, 100, 100, 0, 0, 0, 0);
    svg_begin(&sb, "p<1>", 100, 100, "a & b");
    svg_point(&sb, &f, 0.5, 0.5, 3, "pt ok", "s1", "#1 <x>");
    svg_cross(&sb, 10, 10, 4, "pt failed", "s1", NULL);
    double xs[] = {0, 0.5, NAN, 1}, ys[] = {1, 0.5, 0.2, 0};
    svg_step_line(&sb, &f, xs, ys, 4, "best");
    svg_end(&sb);
    CHECK_CONTAINS(sb.s, "<svg id=\"p&lt;1&gt;\"");
    CHECK_CONTAINS(sb.s, "<title>a &amp; b</title>");
    CHECK_CONTAINS(sb.s, "<circle cx=\"50.0\" cy=\"50.0\" r=\"3.0\" class=\"pt ok\" data-series=\"s1\">"
                         "<title>#1 &lt;x&gt;</title></circle>");
    CHECK(count_of(sb.s, "data-series=\"s1\"") == 2);
    /* the NaN point is skipped: M, then two H/V steps */
    CHECK_CONTAINS(sb.s, "d=\"M0.0 0.0H50.0V50.0H100.0V100.0\"");
    CHECK(count_of(sb.s, "<svg") == 1 && count_of(sb.s, "</svg>") == 1);
    sb_free(&sb);
}

/* ---- report_render on built stores ------------------------------------ */

static int64_t add_run(Store *s, const char *task)
{
    RunRecord r = {0};
    r.task_name = xstrdup(task);
    r.task_path = xstrdup("templates/attention/task.json");
    r.task_json = xstrdup("{}");
    r.config_json = xstrdup("{\"generations\":3,\"revert_threshold\":0.02,\"dims\":{\"S\":512}}");
    r.device_name = xstrdup("Test GPU");
    r.device_arch = xstrdup("sm_90");
    r.device_json = xstrdup("{\"sm_count\":132}");
    r.strategy = xstrdup("evolve");
    r.seed = 1;
    r.started_at = xstrdup("2026-11-22T04:10:00Z");
    EvoErr err;
    CHECK_MSG(store_run_insert(s, &r, &err) == 0, "%s", err.msg);
    int64_t id = r.id;
    run_record_free(&r);
    return id;
}

static int64_t add_cand(Store *s, int64_t run, int64_t gen, int64_t parent, const char *params, const char *status,
                        const char *decision, double lat, int64_t stage, const char *error, const char *when)
{
    CandidateRecord c;
    candidate_record_init(&c);
    c.run_id = run;
    c.generation = gen;
    c.parent_id = parent;
    c.operator = xstrdup(parent ? "mutate" : "baseline");
    c.params_json = xstrdup(params);
    c.params_key = xasprintf("k%lld-%s-%g", (long long)gen, params, lat);
    c.status = xstrdup(status);
    c.decision = xstrdup(decision);
    c.latency_us = lat;
    c.ratio_to_parent = parent && isfinite(lat) ? 0.9 : NAN;
    c.speedup = isfinite(lat) ? 10.0 / lat : NAN;
    c.cv = isfinite(lat) ? 0.004 : NAN;
    c.gate_stage = stage;
    c.error = error ? xstrdup(error) : NULL;
    c.created_at = xstrdup(when);
    c.decided_at = xstrdup(when);
    EvoErr err;
    CHECK_MSG(store_candidate_insert(s, &c, NULL, NULL, &err) == 0, "%s", err.msg);
    int64_t id = c.id;
    candidate_record_free(&c);
    return id;
}

static void test_render(void)
{
    char *path = xasprintf("%s/r.db", tmpdir);
    Store *s = NULL;
    EvoErr err;
    CHECK_MSG(store_open(&s, path, &err) == 0, "%s", err.msg);
    int64_t run = add_run(s, "attn<&>");
    int64_t b = add_cand(s, run, 0, 0, "{\"BM\":64,\"W\":4}", "ok", "baseline", 10, 2, NULL, "2026-11-22T04:10:05Z");
    int64_t a = add_cand(s, run, 1, b, "{\"BM\":128,\"W\":4}", "ok", "accepted", 8, 2, NULL, "2026-11-22T04:10:20Z");
    add_cand(s, run, 1, b, "{\"BM\":32,\"W\":4}", "ok", "reverted", 12, 1, NULL, "2026-11-22T04:10:21Z");
    add_cand(s, run, 2, a, "{\"BM\":128,\"W\":8}", "compile_error", "failed", NAN, 0,
             "nvrtc: <script>alert(1)</script> & more", "2026-11-22T04:10:30Z");
    add_cand(s, run, 2, a, "{\"BM\":256,\"W\":4}", "incorrect", "failed", NAN, 1, NULL, "2026-11-22T04:10:31Z");
    add_cand(s, run, 2, a, "{\"BM\":256,\"W\":8}", "incorrect", "failed", NAN, 1, NULL, "2026-11-22T04:10:32Z");
    int64_t best = add_cand(s, run, 3, a, "{\"BM\":128,\"W\":2}", "ok", "accepted", 6, 2, NULL, "2026-11-22T04:10:40Z");
    /* timing details as the evaluator records them (metrics_json), with the GPU that measured it */
    int64_t timed = add_cand(s, run, 3, a, "{\"BM\":64,\"W\":2}", "ok", "reverted", 9, 1, NULL, "2026-11-22T04:10:41Z");
    {
        char *sql = xasprintf("UPDATE candidates SET metrics_json = '{\"ms\":{\"n\":15},\"batch\":40,"
                              "\"gpu\":{\"index\":1,\"name\":\"H200\",\"scale\":0.987}}', ratio_spread = 0.012 "
                              "WHERE id = %lld", (long long)timed);
        char *db = xasprintf("%s/r.db", tmpdir);
        sqlite3 *h = NULL;
        CHECK(sqlite3_open(db, &h) == SQLITE_OK);
        CHECK(sqlite3_exec(h, sql, NULL, NULL, NULL) == SQLITE_OK);
        sqlite3_close(h);
        free(db);
        free(sql);
    }

    char *html = NULL;
    ReportInfo info;
    ReportOptions o = {.top_n = 2};
    CHECK_MSG(report_render(s, 0, &o, &html, &info, &err) == 1, "%s", err.msg);
    CHECK(info.run_id == run);
    CHECK(info.candidates == 8);
    CHECK_MSG(info.valid == 5 && info.fully_gated == 3, "valid %d, fully gated %d", info.valid, info.fully_gated);   /* 3 failed; 2 reverted on the benchmark shape alone */
    CHECK(info.best_id == best);
    CHECK(html && strncmp(html, "<!DOCTYPE html>", 15) == 0);
    /* every candidate is one mark on each convergence plot */
    CHECK(count_of(html, "data-series=\"conv-gen\"") == 8);
    CHECK(count_of(html, "data-series=\"conv-time\"") == 8);
    CHECK(count_of(html, "class=\"pt failed\" data-series=\"conv-gen\"") == 3);
    CHECK(count_of(html, "class=\"pt reverted\" data-series=\"conv-gen\"") == 2);
    /* the noise figures: threshold, CVs, the A/B spread, samples, batch, GPU scale */
    CHECK_CONTAINS(html, "2.0% (a child more than this slower");
    CHECK_CONTAINS(html, "median 0.40%, max 0.40% (5 candidates)");
    CHECK_CONTAINS(html, "median 1.20%, max 1.20% (1 comparison)");
    CHECK_CONTAINS(html, "median 15 per candidate");
    CHECK_CONTAINS(html, "GPU 1 (H200): x0.9870");
    /* lineage: baseline -> #a -> best */
    CHECK(count_of(html, "<g data-series=\"lineage\">") == 3);
    CHECK_CONTAINS(html, "W 4 -&gt; 2");
    /* knobs vary among the valid candidates: BM (64, 128) and W (4, 2) */
    CHECK(count_of(html, "data-series=\"knob-BM\"") == 3);
    CHECK(count_of(html, "data-series=\"knob-W\"") == 3);
    /* failures by status, in the schema's order */
    CHECK_CONTAINS(html, "<title>incorrect: 2</title>");
    CHECK_CONTAINS(html, "<title>compile_error: 1</title>");
    CHECK(strstr(html, "incorrect: 2") < strstr(html, "compile_error: 1"));
    /* top 2 only, with the parameters that differ from the baseline */
    CHECK_CONTAINS(html, "<h2>Top 2</h2>");
    CHECK_CONTAINS(html, "BM 64 -&gt; 128, W 4 -&gt; 2");
    /* stored text cannot inject markup */
    CHECK(strstr(html, "<script") == NULL);
    CHECK_CONTAINS(html, "&lt;script&gt;alert(1)&lt;/script&gt; &amp; more");
    CHECK_CONTAINS(html, "attn&lt;&amp;&gt;");
    CHECK_CONTAINS(html, "no LLM");
    CHECK(strstr(html, "http://") == NULL && strstr(html, "https://") == NULL);
    free(html);

    /* a run whose candidates all failed: it renders, and says so */
    int64_t run2 = add_run(s, "attention");
    add_cand(s, run2, 0, 0, "{\"BM\":64}", "compile_error", "failed", NAN, 0, "ptxas: too many resources",
             "2026-11-22T04:11:00Z");
    CHECK(report_render(s, run2, NULL, &html, &info, &err) == 1);
    CHECK(info.valid == 0 && info.best_id == 0 && info.candidates == 1);
    CHECK_CONTAINS(html, "this run has no best");
    CHECK_CONTAINS(html, "no lineage to show");
    CHECK_CONTAINS(html, "<title>compile_error: 1</title>");
    CHECK(count_of(html, "data-series=\"conv-gen\"") == 1);
    free(html);

    /* a run with no candidate at all */
    int64_t run3 = add_run(s, "attention");
    CHECK(report_render(s, run3, NULL, &html, &info, &err) == 1);
    CHECK(info.candidates == 0);
    CHECK_CONTAINS(html, "nothing to plot");
    free(html);

    /* a run that does not exist */
    html = (char *)"untouched";
    CHECK(report_render(s, 999, NULL, &html, &info, &err) == 0);
    CHECK(html == NULL);
    int64_t n, lo, hi;
    CHECK(store_run_span(s, &n, &lo, &hi, &err) == 0);
    CHECK(n == 3 && lo == run && hi == run3);
    store_close(&s);

    /* an empty store: no latest run */
    char *p2 = xasprintf("%s/empty.db", tmpdir);
    CHECK(store_open(&s, p2, &err) == 0);
    CHECK(report_render(s, 0, NULL, &html, &info, &err) == 0);
    CHECK(store_run_span(s, &n, &lo, &hi, &err) == 0 && n == 0 && lo == 0 && hi == 0);
    store_close(&s);
    free(p2);
    free(path);
}

int main(void)
{
    snprintf(tmpdir, sizeof(tmpdir), "/tmp/evo_test_report_XXXXXX");
    if (!mkdtemp(tmpdir)) {
        perror("mkdtemp");
        return 1;
    }
    RUN(test_escape);
    RUN(test_ticks);
    RUN(test_frame);
    RUN(test_marks);
    RUN(test_render);
    char cmd[300];
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmpdir);
    if (system(cmd) != 0)
        fprintf(stderr, "could not remove %s\n", tmpdir);
    return test_report();
}

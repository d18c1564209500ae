/*
 * plots: the SVG plots of the run report (plots.h). Each writer
 * appends one <svg> (or a short note when there is nothing to plot) built
 * with svg.h. Every candidate mark carries data-series="<plot>" and a
 * <title> with its id and figures, so a reader hovers for details and a
 * test counts the marks.
 */
#include "report/plots.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "report/format.h"
#include "report/svg.h"

static const char *const kind_name[] = {"baseline", "accepted", "reverted", "failed"};

static void note(StrBuf *sb, const char *text)
{
    sb_append(sb, "<p class=\"note\">");
    svg_escape(sb, text);
    sb_append(sb, "</p>\n");
}

/* A legend entry: a mark of class cls and its label at pixel (x, y). */
static double legend_item(StrBuf *sb, double x, double y, const char *cls, int cross, const char *label)
{
    if (cross)
        sb_printf(sb, "<path class=\"%s\" d=\"M%.1f %.1fL%.1f %.1fM%.1f %.1fL%.1f %.1f\"/>\n", cls, x - 4, y - 4,
                  x + 4, y + 4, x - 4, y + 4, x + 4, y - 4);
    else
        sb_printf(sb, "<circle class=\"%s\" cx=\"%.1f\" cy=\"%.1f\" r=\"4\"/>\n", cls, x, y);
    svg_text(sb, x + 8, y + 4, "start", "legend", "%s", label);
    return x + 16 + 7.0 * (double)strlen(label);
}

static void legend_kinds(StrBuf *sb, double x, double y)
{
    x = legend_item(sb, x, y, "pt baseline", 0, "baseline");
    x = legend_item(sb, x, y, "pt accepted", 0, "accepted");
    x = legend_item(sb, x, y, "pt reverted", 0, "reverted");
    x = legend_item(sb, x, y, "pt failed", 1, "failed (top band)");
    sb_printf(sb, "<line class=\"best\" x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\"/>\n", x - 4, y, x + 14, y);
    svg_text(sb, x + 18, y + 4, "start", "legend", "best so far (gated on every shape)");
}

/* Hover text of a candidate. */
static char *cand_title(const Report *r, const RCand *x)
{
    const CandidateRecord *c = x->c;
    char lat[32];
    format_us(lat, sizeof(lat), c->latency_us);
    StrBuf sb = {0};
    sb_printf(&sb, "#%lld gen %lld %s: %s", (long long)c->id, (long long)c->generation,
              c->operator ? c->operator : "?", c->decision ? c->decision : "?");
    if (x->kind == PK_FAILED) {
        sb_printf(&sb, " (%s)", c->status ? c->status : "?");
        if (c->error)
            sb_printf(&sb, ": %.200s", c->error);
    } else {
        sb_printf(&sb, ", %s", lat);
        if (isfinite(c->ratio_to_parent))
            sb_printf(&sb, ", %.3fx its parent's time", c->ratio_to_parent);
        if (isfinite(c->speedup))
            sb_printf(&sb, ", %.2fx over the baseline", c->speedup);
        if (c->gate_stage != GATE_STAGE_FULL)
            sb_printf(&sb, " [gate: %s]", gate_stage_name(c->gate_stage));
    }
    if (c->parent_id && x->params) {
        /* cands are ordered by id: binary search for the parent */
        const json_t *pp = NULL;
        int lo = 0, hi = r->ncand - 1;
        while (lo <= hi) {
            int mid = lo + (hi - lo) / 2;
            if (r->cands[mid].id == c->parent_id) {
                pp = r->rc[mid].params;
                break;
            }
            if (r->cands[mid].id < c->parent_id)
                lo = mid + 1;
            else
                hi = mid - 1;
        }
        if (pp) {
            char *d = format_params_diff(pp, x->params, "->", ", ");
            if (d[0])
                sb_printf(&sb, "; vs #%lld: %s", (long long)c->parent_id, d);
            free(d);
        }
    }
    return sb_take(&sb);
}

/* Set the y axis of f from the latencies of the timed candidates; log
 * when they span more than a factor of 8. */
static void latency_axis(SvgFrame *f, const Report *r, int valid_only)
{
    double *v = xcalloc((size_t)r->ncand + 1, sizeof(double));
    int n = 0;
    double lo = INFINITY, hi = 0;
    for (int i = 0; i < r->ncand; i++) {
        if (r->rc[i].kind == PK_FAILED || (valid_only && !r->rc[i].valid))
            continue;
        double l = r->cands[i].latency_us;
        v[n++] = l;
        if (l > 0 && l < lo)
            lo = l;
        if (l > hi)
            hi = l;
    }
    f->ylog = n > 1 && lo > 0 && hi / lo > 8;
    svg_frame_range(f, 'y', v, n);
    free(v);
}

/* ---- convergence ----------------------------------------------------- */

#define CW 920
#define CH 360

/* Both convergence plots: x of each candidate from xs (NaN: left out,
 * counted in *skipped), best-so-far line from bx/by (nb points). */
static void convergence(StrBuf *sb, const Report *r, const char *id, const char *label, SvgFrame *f,
                        const double *xs, const double *bx, const double *by, int nb, const char *xlabel)
{
    svg_begin(sb, id, CW, CH, label);
    svg_axes(sb, f, xlabel, "latency (us), benchmark shape");
    double band = f->py - 14;
    svg_text(sb, f->px - 5, band + 4, "end", "tick", "failed");
    svg_line(sb, f->px, band, f->px + f->pw, band, "band");
    svg_step_line(sb, f, bx, by, nb, "best");
    int timed = 0;
    for (int i = 0; i < r->ncand; i++)
        timed += isfinite(xs[i]) && r->rc[i].kind != PK_FAILED;
    if (!timed)
        svg_text(sb, f->px + f->pw / 2, f->py + f->ph / 2, "middle", "axlabel",
                 "no candidate was timed: every one failed before timing");
    /* reverted and failed first, so accepted and baseline marks stay on top */
    double rad = r->ncand > 300 ? 3.5 : 4.5;
    for (int pass = 0; pass < 2; pass++)
        for (int i = 0; i < r->ncand; i++) {
            const RCand *x = &r->rc[i];
            if (!isfinite(xs[i]) || (pass == 0) != (x->kind == PK_REVERTED || x->kind == PK_FAILED))
                continue;
            char *t = cand_title(r, x);
            char cls[48];
            snprintf(cls, sizeof(cls), "pt %s", kind_name[x->kind]);
            if (x->kind == PK_FAILED)
                svg_cross(sb, svg_x(f, xs[i]), band, 4, cls, id, t);
            else
                svg_point(sb, f, xs[i], r->cands[i].latency_us, rad, cls, id, t);
            free(t);
        }
    legend_kinds(sb, f->px + 4, CH - 8);
    svg_end(sb);
}

static int is_survivor(const RCand *x)
{
    return x->valid && (x->kind == PK_BASELINE || x->kind == PK_ACCEPTED);
}

void plot_convergence_gen(StrBuf *sb, const Report *r)
{
    if (r->ncand == 0) {
        note(sb, "No candidate was recorded for this run: nothing to plot.");
        return;
    }
    int64_t maxg = 0;
    for (int i = 0; i < r->ncand; i++)
        if (r->cands[i].generation > maxg)
            maxg = r->cands[i].generation;
    if (maxg > 1000000)
        maxg = 1000000;
    int ng = (int)maxg + 1;
    int *count = xcalloc((size_t)ng, sizeof(int)), *seen = xcalloc((size_t)ng, sizeof(int));
    double *best = xcalloc((size_t)ng + 1, sizeof(double)), *bx = xcalloc((size_t)ng + 1, sizeof(double));
    double *xs = xcalloc((size_t)r->ncand, sizeof(double));
    for (int g = 0; g < ng; g++)
        best[g] = INFINITY;
    for (int i = 0; i < r->ncand; i++) {
        int g = (int)(r->cands[i].generation < 0 ? 0 : r->cands[i].generation > maxg ? maxg : r->cands[i].generation);
        count[g]++;
        if (is_survivor(&r->rc[i]) && r->cands[i].latency_us < best[g])
            best[g] = r->cands[i].latency_us;
    }
    for (int i = 0; i < r->ncand; i++) {
        int g = (int)(r->cands[i].generation < 0 ? 0 : r->cands[i].generation > maxg ? maxg : r->cands[i].generation);
        double off = count[g] > 1 ? ((double)seen[g]++ / (count[g] - 1) - 0.5) * 0.5 : 0;
        xs[i] = g + off;
    }
    int nb = 0;
    double run = INFINITY;
    for (int g = 0; g < ng; g++) {
        if (best[g] < run)
            run = best[g];
        bx[nb] = g;
        best[nb++] = isfinite(run) ? run : NAN;
    }
    bx[nb] = maxg + 0.5;
    best[nb] = best[nb - 1];
    nb++;
    SvgFrame f;
    svg_frame_init(&f, CW, CH, 72, 34, 20, 66);
    f.x0 = -0.5;
    f.x1 = maxg + 0.5;
    f.xint = 1;
    latency_axis(&f, r, 0);
    convergence(sb, r, "conv-gen", "latency per generation", &f, xs, bx, best, nb, "generation");
    free(count);
    free(seen);
    free(best);
    free(bx);
    free(xs);
}

void plot_convergence_time(StrBuf *sb, const Report *r)
{
    if (r->ncand == 0)
        return;
    double *xs = xcalloc((size_t)r->ncand, sizeof(double));
    double *bx = xcalloc((size_t)r->ncand + 1, sizeof(double)), *by = xcalloc((size_t)r->ncand + 1, sizeof(double));
    double tmax = 0, run = INFINITY;
    int nb = 0, nt = 0;
    for (int i = 0; i < r->ncand; i++) {
        xs[i] = r->rc[i].t_s;
        if (!isfinite(xs[i]))
            continue;
        nt++;
        if (xs[i] > tmax)
            tmax = xs[i];
        /* candidates are in commit order, so times only grow */
        if (is_survivor(&r->rc[i]) && r->cands[i].latency_us < run) {
            run = r->cands[i].latency_us;
            bx[nb] = xs[i];
            by[nb++] = run;
        }
    }
    if (nt == 0) {
        note(sb, "The candidates carry no usable timestamps: no plot over wall time.");
        free(xs);
        free(bx);
        free(by);
        return;
    }
    if (nb > 0) {
        bx[nb] = tmax;
        by[nb] = by[nb - 1];
        nb++;
    }
    SvgFrame f;
    svg_frame_init(&f, CW, CH, 72, 34, 20, 66);
    double xr[2] = {0, tmax > 0 ? tmax : 1};
    svg_frame_range(&f, 'x', xr, 2);
    latency_axis(&f, r, 0);
    convergence(sb, r, "conv-time", "latency over wall time", &f, xs, bx, by, nb,
                "wall time since the run started (s)");
    if (nt < r->ncand)
        note(sb, "Some candidates carry no usable timestamp and are left out of this plot.");
    free(xs);
    free(bx);
    free(by);
}

/* ---- lineage --------------------------------------------------------- */

void plot_lineage(StrBuf *sb, const Report *r)
{
    if (r->nchain == 0) {
        note(sb, "No candidate passed the gate on every shape: there is no best, and no lineage to show.");
        return;
    }
    const int nw = 168, nh = 62, gap = 54;
    int w = 20 + r->nchain * (nw + gap) - gap, h = nh + 64;
    if (w < 400)
        w = 400;
    svg_begin(sb, "lineage-tree", w, h, "lineage of the best candidate");
    sb_append(sb, "<defs><marker id=\"arrow\" viewBox=\"0 0 10 10\" refX=\"10\" refY=\"5\" markerWidth=\"7\" "
                  "markerHeight=\"7\" orient=\"auto\"><path d=\"M0 0L10 5L0 10z\" class=\"arrowhead\"/></marker>"
                  "</defs>\n");
    for (int i = 0; i < r->nchain; i++) {
        const CandidateRecord *c = &r->chain[i];
        double x = 10 + i * (nw + gap), y = 24;
        char lat[32];
        format_us(lat, sizeof(lat), c->latency_us);
        if (i > 0) {
            double x0 = x - gap, xm = x - gap / 2.0;
            svg_line(sb, x0 + 2, y + nh / 2.0, x - 2, y + nh / 2.0, "edge");
            const char *cls = isfinite(c->ratio_to_parent) && c->ratio_to_parent < 1 ? "ratio faster" : "ratio";
            if (isfinite(c->ratio_to_parent))
                svg_text(sb, xm, y + nh / 2.0 - 6, "middle", cls, "x%.3f", c->ratio_to_parent);
        }
        const json_t *pp = NULL, *mp = NULL;
        json_t *own = c->params_json ? json_loads(c->params_json, 0, NULL) : NULL;
        mp = own;
        json_t *par = i > 0 && r->chain[i - 1].params_json ? json_loads(r->chain[i - 1].params_json, 0, NULL) : NULL;
        pp = par;
        char *diff = i > 0 ? format_params_diff(pp, mp, "->", ", ") : xstrdup("the root of the lineage");
        char *t = xasprintf("#%lld gen %lld %s (%s): %s; %s", (long long)c->id, (long long)c->generation,
                            c->operator ? c->operator : "?", c->decision ? c->decision : "?", lat,
                            diff[0] ? diff : "no parameter change");
        char cls[48];
        snprintf(cls, sizeof(cls), "node %s", i == r->nchain - 1 ? "bestnode" : c->decision ? c->decision : "");
        sb_printf(sb, "<g data-series=\"lineage\">");
        svg_rect(sb, x, y, nw, nh, cls, t);
        svg_text(sb, x + 8, y + 18, "start", "nodehead", "#%lld %s", (long long)c->id, c->operator ? c->operator : "?");
        svg_text(sb, x + 8, y + 36, "start", "nodetext", "gen %lld, %s", (long long)c->generation, lat);
        if (isfinite(c->speedup))
            svg_text(sb, x + 8, y + 53, "start", "nodetext", "%.2fx over the baseline", c->speedup);
        if (c->parent2_id)
            svg_text(sb, x + 8, y + nh + 16, "start", "nodetext", "2nd parent #%lld", (long long)c->parent2_id);
        sb_append(sb, "</g>\n");
        free(t);
        free(diff);
        json_decref(own);
        json_decref(par);
    }
    svg_end(sb);
}

/* ---- per-knob effects ------------------------------------------------ */

typedef struct Knob {
    const char *key;
    char      **vals;          /* distinct value texts, sorted */
    int         nvals;
    double      span;          /* (max - min) / min of the per-value medians */
} Knob;

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* Sort value texts numerically when they all are numbers, else by text. */
static void sort_values(char **v, int n)
{
    int numeric = 1;
    for (int i = 0; i < n && numeric; i++) {
        double d;
        numeric = parse_double(v[i], &d) == 0;
    }
    for (int i = 1; i < n; i++)
        for (int j = i; j > 0; j--) {
            double a = 0, b = 0;
            int less;
            if (numeric) {
                parse_double(v[j], &b);
                parse_double(v[j - 1], &a);
                less = b < a;
            } else {
                less = strcmp(v[j], v[j - 1]) < 0;
            }
            if (!less)
                break;
            char *t = v[j];
            v[j] = v[j - 1];
            v[j - 1] = t;
        }
}

static int value_index(const Knob *k, const char *t)
{
    for (int i = 0; i < k->nvals; i++)
        if (strcmp(k->vals[i], t) == 0)
            return i;
    return -1;
}

/* The median latency of the valid candidates with knob k at value slot v. */
static double slot_median(const Report *r, const Knob *k, int v, int *count)
{
    double *l = xcalloc((size_t)r->ncand + 1, sizeof(double));
    int n = 0;
    for (int i = 0; i < r->ncand; i++) {
        if (!r->rc[i].valid || !r->rc[i].params)
            continue;
        json_t *pv = json_object_get(r->rc[i].params, k->key);
        if (!pv)
            continue;
        char *t = format_value_text(pv);
        if (value_index(k, t) == v)
            l[n++] = r->cands[i].latency_us;
        free(t);
    }
    qsort(l, (size_t)n, sizeof(double), cmp_double);
    double m = n == 0 ? NAN : n % 2 ? l[n / 2] : (l[n / 2 - 1] + l[n / 2]) / 2;
    free(l);
    *count = n;
    return m;
}

static int cmp_knob(const void *a, const void *b)
{
    const Knob *x = a, *y = b;
    if (x->span != y->span)
        return x->span > y->span ? -1 : 1;
    return strcmp(x->key, y->key);
}

static void knob_plot(StrBuf *sb, const Report *r, const Knob *k, const SvgFrame *yf)
{
    const int w = 290, h = 210;
    SvgFrame f;
    svg_frame_init(&f, w, h, 62, 28, 10, 40);
    f.ylog = yf->ylog;
    f.y0 = yf->y0;
    f.y1 = yf->y1;
    f.x0 = -0.5;
    f.x1 = k->nvals - 0.5;
    char id[96], label[160];
    snprintf(id, sizeof(id), "knob-%s", k->key);
    snprintf(label, sizeof(label), "latency by %s", k->key);
    svg_begin(sb, id, w, h, label);
    svg_axes_cat(sb, &f, (const char *const *)k->vals, k->nvals, k->key, "latency (us)");
    svg_text(sb, f.px, 16, "start", "knobtitle", "%s: medians span %.1f%%", k->key, k->span * 100);
    for (int v = 0; v < k->nvals; v++) {
        int n;
        double m = slot_median(r, k, v, &n);
        if (isfinite(m)) {
            char *t = xasprintf("%s=%s: median %.2f us over %d candidate%s", k->key, k->vals[v], m, n, n == 1 ? "" : "s");
            double y = svg_y(&f, m), x = svg_x(&f, v);
            sb_printf(sb, "<path class=\"median\" d=\"M%.1f %.1fH%.1f\"><title>", x - 18, y, x + 18);
            svg_escape(sb, t);
            sb_append(sb, "</title></path>\n");
            free(t);
        }
    }
    for (int i = 0; i < r->ncand; i++) {
        if (!r->rc[i].valid || !r->rc[i].params)
            continue;
        json_t *pv = json_object_get(r->rc[i].params, k->key);
        if (!pv)
            continue;
        char *t = format_value_text(pv);
        int v = value_index(k, t);
        free(t);
        if (v < 0)
            continue;
        /* a fixed jitter from the id, so the page is the same on every render */
        uint64_t hsh = (uint64_t)r->cands[i].id * 0x9E3779B97F4A7C15ull;
        double off = ((double)(hsh >> 40) / (double)(1 << 24) - 0.5) * 0.5;
        char *title = cand_title(r, &r->rc[i]);
        svg_point(sb, &f, v + off, r->cands[i].latency_us, 3.5,
                  i == r->best ? "pt kbest" : "pt valid", id, title);
        free(title);
    }
    svg_end(sb);
}

void plot_knobs(StrBuf *sb, const Report *r)
{
    if (r->nvalid == 0) {
        note(sb, "No candidate passed the gate on every shape: no knob effects to show.");
        return;
    }
    /* keys in the order of the first valid candidate's params */
    const json_t *first = NULL;
    for (int i = 0; i < r->ncand && !first; i++)
        if (r->rc[i].valid && r->rc[i].params)
            first = r->rc[i].params;
    if (!first) {
        note(sb, "The valid candidates carry no parameters.");
        return;
    }
    size_t nk = json_object_size(first);
    Knob *ks = xcalloc(nk + 1, sizeof(Knob));
    int nks = 0;
    StrBuf fixed = {0};
    const char *key;
    json_t *val;
    json_object_foreach((json_t *)first, key, val) {
        Knob k = {key, NULL, 0, 0};
        for (int i = 0; i < r->ncand; i++) {
            json_t *pv = r->rc[i].valid && r->rc[i].params ? json_object_get(r->rc[i].params, key) : NULL;
            if (!pv)
                continue;
            char *t = format_value_text(pv);
            if (value_index(&k, t) < 0) {
                k.vals = xrealloc(k.vals, (size_t)(k.nvals + 1) * sizeof(char *));
                k.vals[k.nvals++] = t;
            } else {
                free(t);
            }
        }
        if (k.nvals < 2) {
            sb_printf(&fixed, "%s%s=%s", fixed.len ? ", " : "", key, k.nvals ? k.vals[0] : "?");
            for (int v = 0; v < k.nvals; v++)
                free(k.vals[v]);
            free(k.vals);
            continue;
        }
        sort_values(k.vals, k.nvals);
        double lo = INFINITY, hi = -INFINITY;
        for (int v = 0; v < k.nvals; v++) {
            int n;
            double m = slot_median(r, &k, v, &n);
            if (isfinite(m)) {
                lo = m < lo ? m : lo;
                hi = m > hi ? m : hi;
            }
        }
        k.span = lo > 0 && hi >= lo ? (hi - lo) / lo : 0;
        ks[nks++] = k;
    }
    qsort(ks, (size_t)nks, sizeof(Knob), cmp_knob);
    SvgFrame yf;
    svg_frame_init(&yf, 10, 10, 0, 0, 0, 0);
    latency_axis(&yf, r, 1);
    if (nks == 0)
        note(sb, "Every valid candidate has the same parameters: no knob varied.");
    sb_append(sb, "<div class=\"knobs\">\n");
    for (int i = 0; i < nks; i++)
        knob_plot(sb, r, &ks[i], &yf);
    sb_append(sb, "</div>\n");
    if (fixed.len) {
        sb_append(sb, "<p class=\"note\">The same in every valid candidate: ");
        svg_escape(sb, fixed.s);
        sb_append(sb, "</p>\n");
    }
    for (int i = 0; i < nks; i++) {
        for (int v = 0; v < ks[i].nvals; v++)
            free(ks[i].vals[v]);
        free(ks[i].vals);
    }
    free(ks);
    sb_free(&fixed);
}

/* ---- bars: failures, LLM rates --------------------------------------- */

void plot_failures(StrBuf *sb, const Report *r)
{
    if (r->nfails == 0) {
        note(sb, r->ncand ? "No candidate failed." : "No candidate was recorded for this run.");
        return;
    }
    int64_t max = 1, total = 0;
    for (int i = 0; i < r->nfails; i++) {
        max = r->fails[i].n > max ? r->fails[i].n : max;
        total += r->fails[i].n;
    }
    const int w = 640, row = 26, left = 120;
    int h = 20 + row * r->nfails + 10;
    char label[96];
    snprintf(label, sizeof(label), "failures by status: %lld of %d candidates", (long long)total, r->ncand);
    svg_begin(sb, "failures-bars", w, h, label);
    for (int i = 0; i < r->nfails; i++) {
        double y = 14 + i * row, bw = (double)(w - left - 70) * (double)r->fails[i].n / (double)max;
        char *t = xasprintf("%s: %lld", r->fails[i].status, (long long)r->fails[i].n);
        svg_text(sb, left - 8, y + 15, "end", "tick", "%s", r->fails[i].status);
        svg_rect(sb, left, y, bw, row - 6, "bar failure", t);
        svg_text(sb, left + bw + 6, y + 15, "start", "tick", "%lld", (long long)r->fails[i].n);
        free(t);
    }
    svg_end(sb);
}

void plot_llm(StrBuf *sb, const Report *r)
{
    if (r->nllm == 0)
        return;
    const int w = 640, left = 70, top = 30, bottom = 40, h = 230;
    SvgFrame f;
    svg_frame_init(&f, w, h, left, top, 20, bottom);
    f.x0 = -0.5;
    f.x1 = r->nllm - 0.5;
    f.y0 = 0;
    f.y1 = 1;
    const char **labels = xcalloc((size_t)r->nllm, sizeof(char *));
    for (int i = 0; i < r->nllm; i++)
        labels[i] = r->llm[i].mode;
    svg_begin(sb, "llm-rates", w, h, "LLM validity and acceptance rates per mode");
    svg_axes_cat(sb, &f, labels, r->nllm, "mode", "rate");
    double slot = f.pw / r->nllm, bw = slot * 0.3;
    for (int i = 0; i < r->nllm; i++) {
        const LlmModeStats *m = &r->llm[i];
        double x = svg_x(&f, i), y0 = svg_y(&f, 0);
        double vr = isfinite(m->validity_rate) ? m->validity_rate : 0;
        double ar = isfinite(m->acceptance_rate) ? m->acceptance_rate : 0;
        char *t1 = xasprintf("%s: validity %.3f (%lld of %lld requests valid)", m->mode, vr, (long long)m->valid,
                             (long long)m->requests);
        char *t2 = xasprintf("%s: acceptance %.3f (%lld of %lld requests accepted)", m->mode, ar,
                             (long long)m->accepted, (long long)m->requests);
        svg_rect(sb, x - bw - 2, svg_y(&f, vr), bw, y0 - svg_y(&f, vr), "bar validity", t1);
        svg_rect(sb, x + 2, svg_y(&f, ar), bw, y0 - svg_y(&f, ar), "bar acceptance", t2);
        free(t1);
        free(t2);
    }
    double lx = f.px + 4;
    sb_printf(sb, "<rect class=\"bar validity\" x=\"%.1f\" y=\"%d\" width=\"10\" height=\"10\"/>\n", lx, 8);
    svg_text(sb, lx + 14, 17, "start", "legend", "validity (compiled and passed the gate)");
    sb_printf(sb, "<rect class=\"bar acceptance\" x=\"%.1f\" y=\"%d\" width=\"10\" height=\"10\"/>\n", lx + 290, 8);
    svg_text(sb, lx + 304, 17, "start", "legend", "acceptance");
    svg_end(sb);
    free(labels);
}

/*
 * svg: a tiny plotting helper for the run report. See svg.h.
 */
#include "report/svg.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- text ------------------------------------------------------------ */

void svg_escape(StrBuf *sb, const char *s)
{
    for (; s && *s; s++) {
        unsigned char c = (unsigned char)*s;
        switch (c) {
        case '&': sb_append(sb, "&amp;"); break;
        case '<': sb_append(sb, "&lt;"); break;
        case '>': sb_append(sb, "&gt;"); break;
        case '"': sb_append(sb, "&quot;"); break;
        case '\'': sb_append(sb, "&#39;"); break;
        default: sb_putc(sb, (c < 0x20 && c != '\t' && c != '\n') || c == 0x7f ? '?' : (char)c);
        }
    }
}

void svg_fmt_num(char *buf, size_t n, double v)
{
    double a = fabs(v);
    if (!isfinite(v))
        snprintf(buf, n, "-");
    else if (a == 0)
        snprintf(buf, n, "0");
    else if (a >= 1e6)
        snprintf(buf, n, "%gM", v / 1e6);
    else if (a >= 1e4)
        snprintf(buf, n, "%gk", v / 1e3);
    else if (a >= 1e-3)
        snprintf(buf, n, "%.4g", v);
    else
        snprintf(buf, n, "%.0e", v);
}

/* ---- document -------------------------------------------------------- */

void svg_begin(StrBuf *sb, const char *id, int width, int height, const char *label)
{
    sb_append(sb, "<svg id=\"");
    svg_escape(sb, id);
    sb_printf(sb, "\" class=\"plot\" width=\"%d\" height=\"%d\" viewBox=\"0 0 %d %d\" role=\"img\" aria-label=\"",
              width, height, width, height);
    svg_escape(sb, label);
    sb_append(sb, "\"><title>");
    svg_escape(sb, label);
    sb_append(sb, "</title>\n");
}

void svg_end(StrBuf *sb)
{
    sb_append(sb, "</svg>\n");
}

/* ---- frame ----------------------------------------------------------- */

void svg_frame_init(SvgFrame *f, int width, int height, int left, int top, int right, int bottom)
{
    memset(f, 0, sizeof(*f));
    f->px = left;
    f->py = top;
    f->pw = width - left - right;
    f->ph = height - top - bottom;
    if (f->pw < 1)
        f->pw = 1;
    if (f->ph < 1)
        f->ph = 1;
    f->x0 = f->y0 = 0;
    f->x1 = f->y1 = 1;
}

void svg_frame_range(SvgFrame *f, char axis, const double *v, int n)
{
    int log = axis == 'x' ? f->xlog : f->ylog;
    double lo = INFINITY, hi = -INFINITY;
    for (int i = 0; i < n; i++) {
        if (!isfinite(v[i]) || (log && v[i] <= 0))
            continue;
        if (v[i] < lo)
            lo = v[i];
        if (v[i] > hi)
            hi = v[i];
    }
    if (log) {
        if (lo > hi) {
            lo = 1;
            hi = 10;
        } else {
            double l = log10(lo), h = log10(hi);
            double pad = h > l ? (h - l) * 0.05 : 0.05;
            if (pad < 0.05)
                pad = 0.05;
            lo = pow(10, l - pad);
            hi = pow(10, h + pad);
        }
    } else if (lo > hi) {
        lo = 0;
        hi = 1;
    } else if (lo == hi) {
        double d = lo != 0 ? fabs(lo) * 0.1 : 1;
        lo -= d;
        hi += d;
    } else {
        double pad = (hi - lo) * 0.05;
        lo -= pad;
        hi += pad;
    }
    if (axis == 'x') {
        f->x0 = lo;
        f->x1 = hi;
    } else {
        f->y0 = lo;
        f->y1 = hi;
    }
}

static double unit(double v, double lo, double hi, int log)
{
    if (log) {
        if (v <= 0)
            return 0;
        return (log10(v) - log10(lo)) / (log10(hi) - log10(lo));
    }
    return hi > lo ? (v - lo) / (hi - lo) : 0.5;
}

double svg_x(const SvgFrame *f, double v)
{
    return f->px + unit(v, f->x0, f->x1, f->xlog) * f->pw;
}

double svg_y(const SvgFrame *f, double v)
{
    return f->py + f->ph - unit(v, f->y0, f->y1, f->ylog) * f->ph;
}

/* ---- ticks ----------------------------------------------------------- */

int svg_ticks(double lo, double hi, int log, int target, double *ticks, int max)
{
    int n = 0;
    if (!(hi > lo) || !isfinite(lo) || !isfinite(hi) || max <= 0)
        return 0;
    if (target < 2)
        target = 2;
    if (log) {
        if (lo <= 0)
            return 0;
        int e0 = (int)floor(log10(lo)), e1 = (int)ceil(log10(hi));
        static const double mult[] = {1, 2, 5};
        int fine = e1 - e0 < 3;
        for (int e = e0; e <= e1 && n < max; e++)
            for (int m = 0; m < (fine ? 3 : 1) && n < max; m++) {
                double t = mult[m] * pow(10, e);
                if (t >= lo * (1 - 1e-9) && t <= hi * (1 + 1e-9))
                    ticks[n++] = t;
            }
        if (n >= 2)
            return n;
        /* less than a decade between ticks: fall through to linear */
        n = 0;
    }
    double raw = (hi - lo) / target;
    double mag = pow(10, floor(log10(raw)));
    double r = raw / mag, step;
    if (r < 1.5)
        step = mag;
    else if (r < 3.5)
        step = 2 * mag;
    else if (r < 7.5)
        step = 5 * mag;
    else
        step = 10 * mag;
    double t = ceil(lo / step - 1e-9) * step;
    for (; t <= hi + step * 1e-9 && n < max; t += step)
        ticks[n++] = fabs(t) < step * 1e-9 ? 0 : t;
    return n;
}

/* ---- axes ------------------------------------------------------------ */

static void axis_y(StrBuf *sb, const SvgFrame *f, const char *ylabel)
{
    double t[32];
    char lab[32];
    int n = svg_ticks(f->y0, f->y1, f->ylog, 5, t, 32);
    for (int i = 0; i < n; i++) {
        double y = svg_y(f, t[i]);
        svg_line(sb, f->px, y, f->px + f->pw, y, "grid");
        svg_fmt_num(lab, sizeof(lab), t[i]);
        svg_text(sb, f->px - 5, y + 4, "end", "tick", "%s", lab);
    }
    if (ylabel) {
        sb_printf(sb, "<text class=\"axlabel\" text-anchor=\"middle\" transform=\"translate(%.1f,%.1f) rotate(-90)\">",
                  f->px - 44, f->py + f->ph / 2);
        svg_escape(sb, ylabel);
        sb_append(sb, "</text>\n");
    }
}

void svg_axes(StrBuf *sb, const SvgFrame *f, const char *xlabel, const char *ylabel)
{
    double t[32];
    char lab[32];
    axis_y(sb, f, ylabel);
    int n = svg_ticks(f->x0, f->x1, f->xlog, 8, t, 32);
    for (int i = 0; i < n; i++) {
        if (f->xint && t[i] != floor(t[i]))
            continue;
        double x = svg_x(f, t[i]);
        svg_line(sb, x, f->py, x, f->py + f->ph, "grid");
        svg_fmt_num(lab, sizeof(lab), t[i]);
        svg_text(sb, x, f->py + f->ph + 16, "middle", "tick", "%s", lab);
    }
    svg_rect(sb, f->px, f->py, f->pw, f->ph, "frame", NULL);
    if (xlabel)
        svg_text(sb, f->px + f->pw / 2, f->py + f->ph + 34, "middle", "axlabel", "%s", xlabel);
}

void svg_axes_cat(StrBuf *sb, const SvgFrame *f, const char *const *labels, int n, const char *xlabel,
                  const char *ylabel)
{
    axis_y(sb, f, ylabel);
    for (int i = 0; i < n; i++)
        svg_text(sb, svg_x(f, i), f->py + f->ph + 16, "middle", "tick", "%s", labels[i]);
    svg_rect(sb, f->px, f->py, f->pw, f->ph, "frame", NULL);
    if (xlabel)
        svg_text(sb, f->px + f->pw / 2, f->py + f->ph + 34, "middle", "axlabel", "%s", xlabel);
}

/* ---- marks ----------------------------------------------------------- */

static void attrs_close(StrBuf *sb, const char *cls, const char *series, const char *title, const char *tag)
{
    sb_append(sb, " class=\"");
    svg_escape(sb, cls);
    sb_append(sb, "\"");
    if (series) {
        sb_append(sb, " data-series=\"");
        svg_escape(sb, series);
        sb_append(sb, "\"");
    }
    if (title) {
        sb_append(sb, "><title>");
        svg_escape(sb, title);
        sb_printf(sb, "</title></%s>\n", tag);
    } else {
        sb_append(sb, "/>\n");
    }
}

void svg_point(StrBuf *sb, const SvgFrame *f, double x, double y, double r, const char *cls, const char *series,
               const char *title)
{
    sb_printf(sb, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"%.1f\"", svg_x(f, x), svg_y(f, y), r);
    attrs_close(sb, cls, series, title, "circle");
}

void svg_cross(StrBuf *sb, double cx, double cy, double r, const char *cls, const char *series, const char *title)
{
    sb_printf(sb, "<path d=\"M%.1f %.1fL%.1f %.1fM%.1f %.1fL%.1f %.1f\"", cx - r, cy - r, cx + r, cy + r, cx - r,
              cy + r, cx + r, cy - r);
    attrs_close(sb, cls, series, title, "path");
}

void svg_step_line(StrBuf *sb, const SvgFrame *f, const double *x, const double *y, int n, const char *cls)
{
    int started = 0;
    for (int i = 0; i < n; i++) {
        if (!isfinite(x[i]) || !isfinite(y[i]))
            continue;
        double px = svg_x(f, x[i]), py = svg_y(f, y[i]);
        if (!started) {
            sb_append(sb, "<path class=\"");
            svg_escape(sb, cls);
            sb_printf(sb, "\" d=\"M%.1f %.1f", px, py);
            started = 1;
        } else {
            sb_printf(sb, "H%.1fV%.1f", px, py);
        }
    }
    if (started)
        sb_append(sb, "\"/>\n");
}

void svg_line(StrBuf *sb, double x1, double y1, double x2, double y2, const char *cls)
{
    sb_printf(sb, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" class=\"", x1, y1, x2, y2);
    svg_escape(sb, cls);
    sb_append(sb, "\"/>\n");
}

void svg_rect(StrBuf *sb, double x, double y, double w, double h, const char *cls, const char *title)
{
    sb_printf(sb, "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\"", x, y, w < 0 ? 0 : w, h < 0 ? 0 : h);
    attrs_close(sb, cls, NULL, title, "rect");
}

void svg_text(StrBuf *sb, double x, double y, const char *anchor, const char *cls, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char *t = xvasprintf(fmt, ap);
    va_end(ap);
    sb_printf(sb, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"%s\" class=\"", x, y, anchor);
    svg_escape(sb, cls);
    sb_append(sb, "\">");
    svg_escape(sb, t);
    sb_append(sb, "</text>\n");
    free(t);
}

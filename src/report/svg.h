/*
 * svg: a tiny plotting helper for the run report (report.h). It appends
 * inline SVG to a StrBuf: a frame that maps data to pixels (linear or
 * log10 on either axis), axes with "nice" ticks and grid lines, points,
 * crosses, step lines, bars and text. Every text that reaches the output
 * goes through svg_escape, so names from the store (task names, params,
 * error messages) cannot break the markup. Hover text is an SVG <title>
 * child, which browsers show without any script.
 *
 * Elements carry a class ("pt accepted", "bar failed") that the page's
 * CSS colours, and points carry data-series so tests can count them.
 */
#ifndef EVO_SVG_H
#define EVO_SVG_H

#include "util.h"

/* Where a plot's data lands: the plot area in pixels inside its <svg>
 * and the data range on each axis. A plain value: fill it with
 * svg_frame_init, then svg_frame_range. */
typedef struct SvgFrame {
    double px, py, pw, ph;     /* plot area: left, top, width, height (px) */
    double x0, x1, y0, y1;     /* data range shown (x0 < x1, y0 < y1) */
    int    xlog, ylog;         /* 1: log10 axis (the range must be > 0) */
    int    xint;               /* 1: x ticks on integers only (generations) */
} SvgFrame;

/* Append XML-escaped text (& < > " '); NULL appends nothing. Control
 * characters other than tab and newline become '?', so the page stays
 * well-formed XML whatever a stored error message holds. */
void svg_escape(StrBuf *sb, const char *s);

/* Open an <svg> of width x height px with id and an accessible label
 * (aria-label and a <title>); svg_end closes it. */
void svg_begin(StrBuf *sb, const char *id, int width, int height, const char *label);
void svg_end(StrBuf *sb);

/* A frame for an svg of width x height with margins left, top, right,
 * bottom (px) around the plot area; ranges 0..1, linear. */
void svg_frame_init(SvgFrame *f, int width, int height, int left, int top, int right, int bottom);
/* Set an axis range ('x' or 'y') from the finite values v[0..n-1] (for a
 * log axis, the positive ones), padded by 5% (linear) or a twentieth of a
 * decade (log); a single value gets a range around it; none gives 0..1
 * (log: 1..10). */
void svg_frame_range(SvgFrame *f, char axis, const double *v, int n);

/* Data to pixels; values out of range map outside the plot area, a
 * non-positive value on a log axis maps to its bottom/left edge. */
double svg_x(const SvgFrame *f, double v);
double svg_y(const SvgFrame *f, double v);

/* Up to max "nice" tick values (1, 2, 5 x 10^k steps) within lo..hi,
 * about target of them; for log, the powers of ten within the range (and
 * 2x, 5x when fewer than three decades would show). Returns the count. */
int svg_ticks(double lo, double hi, int log, int target, double *ticks, int max);

/* A short label for a number: "0.5", "12", "1.5k", "2M", "1e-05". buf
 * gets at most n bytes. */
void svg_fmt_num(char *buf, size_t n, double v);

/* Frame, grid lines, ticks with labels, axis labels (may be NULL). */
void svg_axes(StrBuf *sb, const SvgFrame *f, const char *xlabel, const char *ylabel);
/* Categorical x axis: n labels centred on slots 0..n-1 of the frame's
 * x range (set x0 = -0.5, x1 = n - 0.5), a numeric y axis as svg_axes. */
void svg_axes_cat(StrBuf *sb, const SvgFrame *f, const char *const *labels, int n, const char *xlabel,
                  const char *ylabel);

/* A circle at data (x, y) of radius r px; cls and series are attribute
 * values (series: data-series, may be NULL), title the hover text (may be
 * NULL). */
void svg_point(StrBuf *sb, const SvgFrame *f, double x, double y, double r, const char *cls, const char *series,
               const char *title);
/* An x-shaped marker at pixel (cx, cy), half-size r. */
void svg_cross(StrBuf *sb, double cx, double cy, double r, const char *cls, const char *series, const char *title);
/* A step line through the points (x[i], y[i]) in order: horizontal to the
 * next x, then vertical. Points with a non-finite value are skipped. */
void svg_step_line(StrBuf *sb, const SvgFrame *f, const double *x, const double *y, int n, const char *cls);
/* A straight line in pixels. */
void svg_line(StrBuf *sb, double x1, double y1, double x2, double y2, const char *cls);
/* A rectangle in pixels with a hover title (may be NULL). */
void svg_rect(StrBuf *sb, double x, double y, double w, double h, const char *cls, const char *title);
/* Text at pixel (x, y); anchor "start", "middle" or "end"; the formatted
 * text is escaped. */
void svg_text(StrBuf *sb, double x, double y, const char *anchor, const char *cls, const char *fmt, ...)
    EVO_PRINTF(6, 7);

#endif

/*
 * plots: the SVG plots of the run report. Each writer appends one <svg>
 * (or a short note when there is nothing to plot) for the page (html.c).
 */
#ifndef EVO_REPORT_PLOTS_H
#define EVO_REPORT_PLOTS_H

#include "report/report_int.h"
#include "util.h"

/* Sections of the page; each appends an <svg> or a note. */
void plot_convergence_gen(StrBuf *sb, const Report *r);
void plot_convergence_time(StrBuf *sb, const Report *r);
void plot_lineage(StrBuf *sb, const Report *r);
void plot_knobs(StrBuf *sb, const Report *r);
void plot_failures(StrBuf *sb, const Report *r);
void plot_llm(StrBuf *sb, const Report *r);

#endif

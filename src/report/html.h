/*
 * html: the page of the run report, from the gathered run.
 */
#ifndef EVO_REPORT_HTML_H
#define EVO_REPORT_HTML_H

#include "report/report_int.h"
#include "util.h"

/* The whole page (html.c). */
void report_html(StrBuf *sb, const Report *r);

#endif

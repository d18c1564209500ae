/*
 * format: the text forms of figures and parameters that the report's
 * page and plots share.
 */
#ifndef EVO_REPORT_FORMAT_H
#define EVO_REPORT_FORMAT_H

#include <jansson.h>
#include <stddef.h>

/* "64", "\"abc\"" -> "abc": a parameter value as text (fresh string). */
char *format_value_text(const json_t *v);
/* "K: a -> b, ..." for the keys where params differs from ref (ref NULL:
 * every key "K=v"); fresh string, "" when none differ. */
char *format_params_diff(const json_t *ref, const json_t *params, const char *arrow, const char *sep);
/* "8.97 us", "1.234 ms" into buf; "-" for NaN. */
void format_us(char *buf, size_t n, double us);

#endif

/*
 * init_params: the params `evoeng init` proposes for a kernel file's
 * knobs. See init_params.h.
 */
#include "cli/init_params.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#include "task/template.h"

int init_int_value(const char *s, long long *v)
{
    while (*s == '(' || isspace((unsigned char)*s))
        s++;
    char *end;
    long long x = strtoll(s, &end, 0);
    if (end == s)
        return 0;
    while (*end == 'u' || *end == 'U' || *end == 'l' || *end == 'L' || *end == ')' || isspace((unsigned char)*end))
        end++;
    if (*end)
        return 0;
    *v = x;
    return 1;
}

/* The values around default d: 0/1 for a switch (or a default of 0),
 * d/4 .. 4d for a power of two (at least 1), else d/2, d, 2d. */
static json_t *knob_values(long long d, int is_switch)
{
    json_t *v = json_array();
    if (is_switch || d == 0) {
        json_array_append_new(v, json_integer(0));
        json_array_append_new(v, json_integer(1));
        return v;
    }
    if (d < 0) {
        json_array_append_new(v, json_integer(d));
        return v;
    }
    long long cand[5];
    int n = 0;
    if ((d & (d - 1)) == 0) {
        long long c[5] = {d / 4, d / 2, d, d * 2, d * 4};
        for (int i = 0; i < 5; i++)
            if (c[i] >= 1 && (n == 0 || c[i] != cand[n - 1]))
                cand[n++] = c[i];
    } else {
        long long c[3] = {d / 2, d, d * 2};
        for (int i = 0; i < 3; i++)
            if (c[i] >= 1 && (n == 0 || c[i] != cand[n - 1]))
                cand[n++] = c[i];
    }
    for (int i = 0; i < n; i++)
        json_array_append_new(v, json_integer(cand[i]));
    return v;
}

json_t *init_params(const char *text, const Kscan *sc, json_t *notes)
{
    json_t *params = json_object();
    int n = 0;
    char **knobs = template_knobs(text, &n);
    StrBuf skipped = {0};
    for (int i = 0; i < n; i++) {
        const KscanMacro *m = kscan_macro(sc, knobs[i]);
        long long d;
        if (m && init_int_value(m->value, &d)) {
            json_object_set_new(params, knobs[i], json_pack("{s:o, s:I}", "values",
                                                            knob_values(d, kscan_is_switch(text, knobs[i])),
                                                            "default", (json_int_t)d));
        } else {
            sb_printf(&skipped, "%s%s", skipped.len ? ", " : "", knobs[i]);
        }
        free(knobs[i]);
    }
    free(knobs);
    if (skipped.len)
        json_object_set_new(notes, "_params", json_sprintf("not params (their defaults are no integers; they "
                                                           "follow the params they name): %s", skipped.s));
    sb_free(&skipped);
    return params;
}

/*
 * format: text forms for the report. See format.h.
 */
#include "report/format.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "util.h"

char *format_value_text(const json_t *v)
{
    if (json_is_string(v))
        return xstrdup(json_string_value(v));
    char *t = v ? json_dumps(v, JSON_ENCODE_ANY | JSON_COMPACT) : NULL;
    return t ? t : xstrdup("?");
}

char *format_params_diff(const json_t *ref, const json_t *params, const char *arrow, const char *sep)
{
    StrBuf sb = {0};
    const char *k;
    json_t *v;
    if (!json_is_object(params))
        return xstrdup("");
    json_object_foreach((json_t *)params, k, v) {
        json_t *o = ref ? json_object_get(ref, k) : NULL;
        if (ref && o && json_equal(o, v))
            continue;
        char *nv = format_value_text(v);
        if (ref && o) {
            char *ov = format_value_text(o);
            sb_printf(&sb, "%s%s %s%s%s", sb.len ? sep : "", k, ov, arrow, nv);
            free(ov);
        } else {
            sb_printf(&sb, "%s%s=%s", sb.len ? sep : "", k, nv);
        }
        free(nv);
    }
    /* keys the reference has and params lacks */
    if (ref && json_is_object(ref))
        json_object_foreach((json_t *)ref, k, v) {
            if (!json_object_get(params, k))
                sb_printf(&sb, "%s%s removed", sb.len ? sep : "", k);
        }
    return sb_take(&sb);
}

void format_us(char *buf, size_t n, double us)
{
    if (!isfinite(us))
        snprintf(buf, n, "-");
    else if (us < 1000)
        snprintf(buf, n, "%.2f us", us);
    else
        snprintf(buf, n, "%.3f ms", us / 1000);
}

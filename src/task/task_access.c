/*
 * task_access.c: what a loaded Task tells its readers: names, params and
 * their values, dims and shapes, compile settings; and configurations
 * written as text (task_params_json) and read back (task_params_parse).
 */
#include "task/task.h"

#include <ctype.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "task/task_priv.h"

/* ---- accessors -------------------------------------------------------- */

const char *task_path(const Task *t) { return t->path; }
const char *task_name(const Task *t) { return t->name; }
const char *task_description(const Task *t) { return t->description; }
const char *task_json(const Task *t) { return t->json_text; }
const char *task_template_path(const Task *t) { return t->template_path; }
const char *task_template_text(const Task *t) { return t->template_text; }
const char *task_reference_path(const Task *t) { return t->ref_path; }
const char *task_reference_text(const Task *t) { return t->ref_text; }
int task_nentries(const Task *t) { return t->nentries; }
const char *task_entry(const Task *t, int i) { return i >= 0 && i < t->nentries ? t->entries[i] : NULL; }
int task_nref_entries(const Task *t) { return t->nref_entries; }
const char *task_ref_entry(const Task *t, int i) { return i >= 0 && i < t->nref_entries ? t->ref_entries[i] : NULL; }
const char *const *task_entry_list(const Task *t, int reference, int *n)
{
    *n = reference ? t->nref_entries : t->nentries;
    return (const char *const *)(reference ? t->ref_entries : t->entries);
}

int task_nparams(const Task *t) { return t->nparams; }
const char *task_param_name(const Task *t, int i) { return t->params[i].name; }
int task_param_index(const Task *t, const char *name) { return tl_param_find(t, name); }
int task_param_nvalues(const Task *t, int i) { return t->params[i].nvalues; }
int64_t task_param_value(const Task *t, int i, int k) { return t->params[i].values[k]; }
int task_param_default(const Task *t, int i) { return t->params[i].def; }

int task_param_find(const Task *t, int i, int64_t v)
{
    const TParam *p = &t->params[i];
    int lo = 0, hi = p->nvalues - 1;   /* a binary search through the sorted order */
    while (lo <= hi) {
        int mid = lo + (hi - lo) / 2;
        int64_t x = p->values[p->order[mid]];
        if (x == v)
            return p->order[mid];
        if (x < v)
            lo = mid + 1;
        else
            hi = mid - 1;
    }
    return -1;
}

void task_defaults(const Task *t, int64_t *vals)
{
    for (int i = 0; i < t->nparams; i++)
        vals[i] = t->params[i].values[t->params[i].def];
}

double task_space_size(const Task *t)
{
    double s = 1;
    for (int i = 0; i < t->nparams; i++)
        s *= t->params[i].nvalues;
    return s;
}

int task_ndims(const Task *t) { return t->ndims; }
const char *task_dim_name(const Task *t, int d) { return t->dim_names[d]; }
int task_nshapes(const Task *t) { return 1 + t->nextra; }
int task_ncompile_dims(const Task *t) { return t->ncompile; }
const char *task_compile_dim(const Task *t, int i) { return t->dim_names[t->compile_dims[i]]; }
int task_compile_dim_index(const Task *t, int i) { return t->compile_dims[i]; }

int64_t task_dim_value(const Task *t, int shape, int d)
{
    if (shape > 0 && shape <= t->nextra) {
        size_t k = (size_t)(shape - 1) * (size_t)t->ndims + (size_t)d;
        if (t->extra_set[k])
            return t->extra_vals[k];
    }
    return t->dim_follow[d] >= 0 ? task_dim_value(t, shape, t->dim_follow[d]) : t->dims[d];
}

char *task_shape_label(const Task *t, int shape)
{
    StrBuf sb = {0};
    for (int d = 0; d < t->ndims; d++)
        sb_printf(&sb, "%s%s=%lld", d ? " " : "", t->dim_names[d], (long long)task_dim_value(t, shape, d));
    return sb_take(&sb);
}

const char *const *task_compile_options(const Task *t, int *n)
{
    static const char *const none[] = {NULL};
    if (n)
        *n = t->ncopts;
    return t->copts ? (const char *const *)t->copts : none;
}

int task_fast_math(const Task *t) { return t->fast_math; }
int task_lineinfo(const Task *t) { return t->lineinfo; }
int task_arch_specific(const Task *t) { return t->arch_specific; }
int task_max_spill_bytes(const Task *t) { return t->max_spill; }
int task_max_stack_bytes(const Task *t) { return t->max_stack; }

uint64_t task_seed_salt(const char *name)
{
    uint64_t h = 14695981039346656037ULL; /* FNV-1a 64 offset basis */
    for (const unsigned char *p = (const unsigned char *)name; *p; p++) {
        h ^= *p;
        h *= 1099511628211ULL;
    }
    return h;
}

/* ---- configurations --------------------------------------------------- */

char *task_params_json(const Task *t, const int64_t *vals)
{
    StrBuf sb = {0};
    sb_putc(&sb, '{');
    for (int i = 0; i < t->nparams; i++)
        sb_printf(&sb, "%s\"%s\":%lld", i ? "," : "", t->params[i].name, (long long)vals[i]);
    sb_putc(&sb, '}');
    return sb_take(&sb);
}

static int values_list(const Task *t, int i, char *buf, size_t size)
{
    size_t used = 0;
    buf[0] = 0;
    for (int k = 0; k < t->params[i].nvalues && used < size; k++)
        used += (size_t)snprintf(buf + used, size - used, "%s%lld", k ? ", " : "",
                                 (long long)t->params[i].values[k]);
    return 0;
}

/* Set param `name` to v in vals, marking seen[]. */
static int params_set(const Task *t, const char *name, int64_t v, int64_t *vals, unsigned char *seen, EvoErr *err)
{
    int i = tl_param_find(t, name);
    if (i < 0) {
        const char *names[256];
        char hint[TL_HINT_LEN];
        int n = t->nparams < 256 ? t->nparams : 256;
        for (int k = 0; k < n; k++)
            names[k] = t->params[k].name;
        return err_set(err, "unknown param '%s'%s", name, tl_suggest(hint, sizeof(hint), name, names, n));
    }
    if (seen[i])
        return err_set(err, "param '%s' given twice", name);
    if (task_param_find(t, i, v) < 0) {
        char list[512];
        values_list(t, i, list, sizeof(list));
        return err_set(err, "param '%s': %lld is not one of its values (%s)", name, (long long)v, list);
    }
    seen[i] = 1;
    vals[i] = v;
    return 0;
}

int task_params_parse(const Task *t, const char *text, int64_t *vals, EvoErr *err)
{
    unsigned char *seen = xcalloc((size_t)t->nparams + 1, 1);
    json_t *root = NULL;
    char *copy = NULL;
    int rc = -1;
    task_defaults(t, vals);
    while (isspace((unsigned char)*text))
        text++;
    if (*text == '{') {
        json_error_t je;
        const char *key;
        json_t *v;
        root = json_loads(text, JSON_REJECT_DUPLICATES, &je);
        if (!root) {
            err_set(err, "params: column %d: %s", je.column, je.text);
            goto fail;
        }
        json_object_foreach(root, key, v) {
            if (!json_is_integer(v)) {
                err_set(err, "param '%s': expected an integer, got %s", key, tl_json_type(v));
                goto fail;
            }
            if (params_set(t, key, (int64_t)json_integer_value(v), vals, seen, err) < 0)
                goto fail;
        }
    } else {
        copy = xstrdup(text);
        char *save = NULL;
        for (char *tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
            char *eq = strchr(tok, '=');
            char *k = tok, *v, *end;
            if (!eq) {
                while (isspace((unsigned char)*k))
                    k++;
                if (!*k)
                    continue; /* tolerate "A=1,,B=2" and a trailing comma */
                err_set(err, "params: expected NAME=VALUE, got '%s'", tok);
                goto fail;
            }
            *eq = 0;
            v = eq + 1;
            while (isspace((unsigned char)*k))
                k++;
            for (end = k + strlen(k); end > k && isspace((unsigned char)end[-1]); end--)
                *--end = 0;
            while (isspace((unsigned char)*v))
                v++;
            for (end = v + strlen(v); end > v && isspace((unsigned char)end[-1]); end--)
                *--end = 0;
            long n;
            if (parse_long(v, LONG_MIN, LONG_MAX, &n) < 0) {
                err_set(err, "param '%s': '%s' is not an integer", k, v);
                goto fail;
            }
            if (params_set(t, k, (int64_t)n, vals, seen, err) < 0)
                goto fail;
        }
    }
    rc = 0;
fail:
    if (root)
        json_decref(root);
    free(copy);
    free(seen);
    return rc;
}

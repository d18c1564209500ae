/*
 * task_json.c: the loader's JSON-path helpers and its name checks. Every
 * field is fetched with the JSON path of its node, so that each error can
 * name it ("launch[1].grid[0]: ..."); every expression is parsed where it
 * is read, its variables checked against the names visible there (params,
 * dims, the derived names defined before it, device variables) and bound
 * to slots, so that evaluation never compares names.
 */
#include "task/task_priv.h"

#include <stdarg.h>
#include <stdlib.h>
#include <search.h>
#include <string.h>

#include "task/template.h"

/* ---- JSON-path helpers -------------------------------------------------- */

int tl_err(Loader *L, const char *path, const char *fmt, ...)
{
    char what[1536];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof(what), fmt, ap);
    va_end(ap);
    if (path && *path)
        return err_set(L->err, "%s: %s: %s", L->file, path, what);
    return err_set(L->err, "%s: %s", L->file, what);
}

void tl_subpath(char *buf, const char *path, const char *key)
{
    if (snprintf(buf, PATH_MAX_LEN, "%s%s%s", path, *path ? "." : "", key) >= PATH_MAX_LEN)
        buf[PATH_MAX_LEN - 1] = 0; /* a truncated path is still a useful hint */
}

void tl_idxpath(char *buf, const char *path, int i)
{
    if (snprintf(buf, PATH_MAX_LEN, "%s[%d]", path, i) >= PATH_MAX_LEN)
        buf[PATH_MAX_LEN - 1] = 0;
}

const char *tl_json_type(const json_t *v)
{
    switch (json_typeof(v)) {
    case JSON_OBJECT:  return "an object";
    case JSON_ARRAY:   return "an array";
    case JSON_STRING:  return "a string";
    case JSON_INTEGER: return "an integer";
    case JSON_REAL:    return "a real number";
    case JSON_TRUE:
    case JSON_FALSE:   return "a boolean";
    default:           return "null";
    }
}

/* Reject keys of obj not in allowed (NULL-terminated); keys starting with
 * '_' are comments. */
int tl_check_keys(Loader *L, json_t *obj, const char *path, const char *const *allowed)
{
    const char *key;
    json_t *v;
    int n = 0;
    while (allowed[n])
        n++;
    json_object_foreach(obj, key, v) {
        int ok = key[0] == '_';
        for (int i = 0; !ok && i < n; i++)
            ok = strcmp(key, allowed[i]) == 0;
        if (!ok) {
            char p[PATH_MAX_LEN];
            char hint[TL_HINT_LEN];
            tl_subpath(p, path, key);
            return tl_err(L, p, "unknown field%s", tl_suggest(hint, sizeof(hint), key, allowed, n));
        }
    }
    return 0;
}

/* Fetch obj[key] with a type check. type < 0: any. Absent: *out = NULL,
 * an error only when required. */
int tl_get_field(Loader *L, json_t *obj, const char *path, const char *key, int required,
                 int type, json_t **out)
{
    char p[PATH_MAX_LEN];
    json_t *v = json_object_get(obj, key);
    tl_subpath(p, path, key);
    *out = NULL;
    if (!v) {
        if (required)
            return tl_err(L, p, "missing required field");
        return 0;
    }
    if (type >= 0 && (int)json_typeof(v) != type) {
        const char *want = type == JSON_OBJECT ? "an object" : type == JSON_ARRAY ? "an array" : "a string";
        return tl_err(L, p, "expected %s, got %s", want, tl_json_type(v));
    }
    *out = v;
    return 0;
}

typedef struct RepeatCtx {
    const char *base;
    size_t      size;
    int       (*cmp)(const void *, const void *);
} RepeatCtx;

/* By value, then by index: equal items end up together, in spec order. */
static int repeat_cmp(const void *a, const void *b, void *ctx)
{
    const RepeatCtx *x = ctx;
    int i = *(const int *)a, j = *(const int *)b;
    int r = x->cmp(x->base + (size_t)i * x->size, x->base + (size_t)j * x->size);
    return r ? r : (i > j) - (i < j);
}

int *tl_sort_index(const void *base, int n, size_t size, int (*cmp)(const void *, const void *))
{
    int *idx = xmalloc((size_t)(n > 0 ? n : 1) * sizeof(int));
    for (int i = 0; i < n; i++)
        idx[i] = i;
    RepeatCtx ctx = {base, size, cmp};
    qsort_r(idx, (size_t)n, sizeof(int), repeat_cmp, &ctx);
    return idx;
}

int tl_first_repeat_sorted(const void *base, const int *order, int n, size_t size,
                           int (*cmp)(const void *, const void *))
{
    const char *b = base;
    int best = -1;
    for (int i = 1; i < n; i++) {
        const char *x = b + (size_t)order[i - 1] * size, *y = b + (size_t)order[i] * size;
        /* the second of a run of equal items: the first repeat of that value */
        if (cmp(x, y) == 0 && (i < 2 || cmp(b + (size_t)order[i - 2] * size, x) != 0) &&
            (best < 0 || order[i] < best))
            best = order[i];
    }
    return best;
}

int tl_first_repeat(const void *base, int n, size_t size, int (*cmp)(const void *, const void *))
{
    int *order = tl_sort_index(base, n, size, cmp);
    int k = tl_first_repeat_sorted(base, order, n, size, cmp);
    free(order);
    return k;
}

int tl_cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

int tl_cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

int tl_check_count(Loader *L, const char *p, size_t n, size_t max)
{
    if (n > max)
        return tl_err(L, p, "%zu entries; a spec may hold at most %zu here", n, max);
    return 0;
}

int tl_get_list(Loader *L, json_t *obj, const char *path, const char *key, json_t **out)
{
    char p[PATH_MAX_LEN];
    if (tl_get_field(L, obj, path, key, 1, JSON_ARRAY, out) < 0)
        return -1;
    tl_subpath(p, path, key);
    if (json_array_size(*out) == 0)
        return tl_err(L, p, "empty list");
    return tl_check_count(L, p, json_array_size(*out), TASK_MAX_VALUES);
}

int tl_get_string(Loader *L, json_t *obj, const char *path, const char *key, int required, char **out)
{
    json_t *v;
    if (tl_get_field(L, obj, path, key, required, JSON_STRING, &v) < 0)
        return -1;
    *out = v ? xstrdup(json_string_value(v)) : NULL;
    return 0;
}

int tl_get_bool(Loader *L, json_t *obj, const char *path, const char *key, int *out)
{
    json_t *v;
    char p[PATH_MAX_LEN];
    if (tl_get_field(L, obj, path, key, 0, -1, &v) < 0)
        return -1;
    if (!v)
        return 0;
    if (!json_is_boolean(v)) {
        tl_subpath(p, path, key);
        return tl_err(L, p, "expected a boolean, got %s", tl_json_type(v));
    }
    *out = json_is_true(v);
    return 0;
}

int tl_get_number(Loader *L, json_t *v, const char *p, double *out)
{
    if (!json_is_number(v))
        return tl_err(L, p, "expected a number, got %s", tl_json_type(v));
    *out = json_number_value(v);
    return 0;
}

int tl_get_int(Loader *L, json_t *v, const char *p, int64_t *out)
{
    if (!json_is_integer(v))
        return tl_err(L, p, "expected an integer, got %s", tl_json_type(v));
    *out = (int64_t)json_integer_value(v);
    return 0;
}

/* A list of unique entry names (task_entry_canon), canonical. */
int tl_get_name_list(Loader *L, json_t *obj, const char *path, const char *key, char ***out, int *n)
{
    json_t *arr, *v;
    char p[PATH_MAX_LEN], q[PATH_MAX_LEN];
    size_t i;
    tl_subpath(p, path, key);
    if (tl_get_list(L, obj, path, key, &arr) < 0)
        return -1;
    if (tl_check_count(L, p, json_array_size(arr), TASK_MAX_ITEMS) < 0)
        return -1;
    *out = xcalloc(json_array_size(arr), sizeof(char *));
    json_array_foreach(arr, i, v) {
        tl_idxpath(q, p, (int)i);
        if (!json_is_string(v))
            return tl_err(L, q, "expected a string, got %s", tl_json_type(v));
        char why[512];
        char *s = task_entry_canon(json_string_value(v), why, sizeof(why));
        if (!s)
            return tl_err(L, q, "%s", why);
        (*out)[(*n)++] = s;
    }
    int k = tl_first_repeat(*out, *n, sizeof(char *), tl_cmp_str);
    if (k < 0)
        return 0;
    tl_idxpath(q, p, k);
    return tl_err(L, q, "duplicate entry '%s'", (*out)[k]);
}

/* ---- names and expressions ------------------------------------------- */

const char *tl_suggest(char *buf, size_t size, const char *name, const char *const *cands, int n)
{
    const char *near = expr_closest(name, cands, n);
    buf[0] = 0;
    if (near)
        snprintf(buf, size, " (did you mean '%s'?)", near);
    return buf;
}

int tl_find_name(char *const *names, int n, const char *s)
{
    for (int i = 0; i < n; i++)
        if (strcmp(names[i], s) == 0)
            return i;
    return -1;
}

/* ---- the name index ----------------------------------------------------- */

static int tname_cmp(const void *a, const void *b)
{
    return strcmp(((const TName *)a)->name, ((const TName *)b)->name);
}

static const TName *name_get(const Task *t, const char *s)
{
    TName key = {s, TN_PARAM, 0};
    void *const *r = tfind(&key, &t->names, tname_cmp);
    return r ? *(TName *const *)r : NULL;
}

/* Index of s among the names of kind, or -1: O(log n). */
static int name_find(const Task *t, const char *s, TNameKind kind)
{
    const TName *n = name_get(t, s);
    return n && n->kind == kind ? n->idx : -1;
}

void tl_name_add(Task *t, const char *name, TNameKind kind, int idx)
{
    TName *n = xmalloc(sizeof(*n));
    n->name = name;
    n->kind = kind;
    n->idx = idx;
    TName **slot = tsearch(n, &t->names, tname_cmp);
    if (!slot)
        abort();              /* out of memory (tsearch's only failure) */
    if (*slot != n)
        free(n);              /* already there: tl_check_new_name refuses that first */
}

void tl_names_free(Task *t)
{
    tdestroy(t->names, free);
    t->names = NULL;
}

int tl_dim_index(const Task *t, const char *name, EvoErr *err)
{
    char hint[TL_HINT_LEN];
    int d = name_find(t, name, TN_DIM);
    if (d < 0)
        err_set(err, "unknown dim '%s'%s", name,
                tl_suggest(hint, sizeof(hint), name, (const char *const *)t->dim_names, t->ndims));
    return d;
}

static int device_name_known(const char *s)
{
    for (int i = 0; device_var_names[i]; i++)
        if (strcmp(device_var_names[i], s) == 0)
            return 1;
    return 0;
}

int tl_param_find(const Task *t, const char *s)
{
    return name_find(t, s, TN_PARAM);
}

static int derived_find(const Task *t, const char *s)
{
    return name_find(t, s, TN_DERIVED);
}

int tl_buffer_find(const Task *t, const char *s)
{
    return name_find(t, s, TN_BUFFER);
}

static int dim_find(const Task *t, const char *s)
{
    return name_find(t, s, TN_DIM);
}

/* Every name an expression may see, for suggestions. nderived: how many
 * derived names are visible; with_buffers adds buffer names. */
static const char **visible_names(const Task *t, int nderived, int with_buffers, int *n)
{
    int cap = t->nparams + t->ndims + t->nderived + t->nbufs + 32, k = 0;
    const char **names = xcalloc((size_t)cap, sizeof(*names));
    for (int i = 0; i < t->nparams; i++)
        names[k++] = t->params[i].name;
    for (int i = 0; i < t->ndims; i++)
        names[k++] = t->dim_names[i];
    for (int i = 0; i < nderived; i++)
        names[k++] = t->derived[i].name;
    for (int i = 0; device_var_names[i] && k < cap; i++)
        names[k++] = device_var_names[i];
    if (with_buffers)
        for (int i = 0; i < t->nbufs && k < cap; i++)
            names[k++] = t->bufs[i].name;
    *n = k;
    return names;
}

/* Check the variables of x: each must be a param, a dim, one of the first
 * nderived derived names (SCOPE_ALL: all), or a device variable. */
static int check_vars(Loader *L, const TExpr *x, int nderived, int arg_context)
{
    Task *t = L->t;
    if (nderived == SCOPE_ALL)
        nderived = t->nderived;
    for (int i = 0; i < expr_nvars(x->e); i++) {
        int col;
        const char *v = expr_var(x->e, i, &col);
        if (tl_param_find(t, v) >= 0 || dim_find(t, v) >= 0 || device_name_known(v))
            continue;
        int d = derived_find(t, v);
        if (d >= 0 && d < nderived)
            continue;
        if (d >= 0 && d == nderived)
            return tl_err(L, x->path, "column %d: derived '%s' refers to itself", col, v);
        if (d >= 0)
            return tl_err(L, x->path, "column %d: unknown variable '%s' (derived '%s' is defined later)", col, v, v);
        if (tl_buffer_find(t, v) >= 0)
            return tl_err(L, x->path,
                          "column %d: '%s' is a buffer; a buffer can only be passed alone as a launch argument",
                          col, v);
        int n;
        const char **names = visible_names(t, nderived, arg_context, &n);
        char hint[160];
        tl_suggest(hint, sizeof(hint), v, names, n);
        tl_err(L, x->path, "column %d: unknown %s '%s'%s", col, arg_context ? "buffer or variable" : "variable", v,
               hint);
        free(names);
        return -1;
    }
    return 0;
}

static void bind_slots(const Task *t, Expr *e)
{
    for (int i = 0; i < expr_nvars(e); i++) {
        const char *v = expr_var(e, i, NULL);
        int k, slot = -1;
        if ((k = tl_param_find(t, v)) >= 0)
            slot = SLOT_PARAM << 16 | k;
        else if ((k = dim_find(t, v)) >= 0)
            slot = SLOT_DIM << 16 | k;
        else if ((k = derived_find(t, v)) >= 0)
            slot = SLOT_DERIVED << 16 | k;
        else
            for (k = 0; device_var_names[k] && k < MAX_DEVICE_VARS; k++)
                if (strcmp(device_var_names[k], v) == 0)
                    slot = SLOT_DEVICE << 16 | k;
        expr_set_slot(e, i, slot);
    }
}

/* Parse an expression from a JSON string, integer, real or boolean at path
 * p into *x (which keeps a copy of p), and check its names. */
int tl_parse_texpr(Loader *L, json_t *v, const char *p, int nderived, int arg_context, TExpr *x)
{
    char *text = NULL;
    EvoErr e;
    x->path = xstrdup(p);
    if (json_is_string(v))
        text = xstrdup(json_string_value(v));
    else if (json_is_integer(v))
        text = xasprintf("%lld", (long long)json_integer_value(v));
    else if (json_is_real(v))
        text = xasprintf("%.17g", json_real_value(v));
    else if (json_is_boolean(v))
        text = xstrdup(json_is_true(v) ? "1" : "0");
    else
        return tl_err(L, p, "expected an expression (a string or a number), got %s", tl_json_type(v));
    int rc = expr_parse(text, &x->e, &e);
    free(text);
    if (rc < 0)
        return tl_err(L, p, "%s", e.msg);
    if (check_vars(L, x, nderived, arg_context) < 0)
        return -1;
    bind_slots(L->t, x->e);
    return 0;
}

int tl_opt_texpr(Loader *L, json_t *obj, const char *path, const char *key, TExpr *x)
{
    char p[PATH_MAX_LEN];
    json_t *v = json_object_get(obj, key);
    if (!v)
        return 0;
    tl_subpath(p, path, key);
    return tl_parse_texpr(L, v, p, SCOPE_ALL, 0, x);
}

void tl_texpr_free(TExpr *x)
{
    expr_free(&x->e);
    free(x->path);
    x->path = NULL;
}

/* A name for params, dims, derived and buffers: an identifier, unique
 * among all of them and not a device variable. */
int tl_check_new_name(Loader *L, const char *p, const char *s)
{
    Task *t = L->t;
    if (!template_is_ident(s))
        return tl_err(L, p, "'%s' is not a valid identifier", s);
    static const char *const kinds[] = {"a param", "a dim", "a derived name", "a buffer"};
    const TName *n = name_get(t, s);
    const char *what = n ? kinds[n->kind] : device_name_known(s) ? "a device variable" : NULL;
    if (what)
        return tl_err(L, p, "duplicate name '%s' (already %s)", s, what);
    return 0;
}

/* ---- unfinished specs ------------------------------------------------- */

/* Count the TODO markers under v (at path p): strings and keys holding
 * "TODO", keys starting with '_' (comments) left out. The first one's path
 * and text go to first/what. */
static int todo_walk(json_t *v, const char *p, char *first, char *what, size_t what_size)
{
    int n = 0;
    char q[PATH_MAX_LEN];
    if (json_is_string(v) && strstr(json_string_value(v), "TODO")) {
        if (!first[0] && !what[0]) {
            snprintf(first, PATH_MAX_LEN, "%s", p);
            snprintf(what, what_size, "\"%s\"", json_string_value(v));
        }
        return 1;
    }
    if (json_is_object(v)) {
        const char *k;
        json_t *c;
        json_object_foreach(v, k, c) {
            if (k[0] == '_')
                continue;
            tl_subpath(q, p, k);
            if (strstr(k, "TODO")) {
                if (!what[0]) {
                    snprintf(first, PATH_MAX_LEN, "%s", q);
                    snprintf(what, what_size, "the name '%s'", k);
                }
                n++;
            }
            n += todo_walk(c, q, first, what, what_size);
        }
    } else if (json_is_array(v)) {
        size_t i;
        json_t *c;
        json_array_foreach(v, i, c) {
            tl_idxpath(q, p, (int)i);
            n += todo_walk(c, q, first, what, what_size);
        }
    }
    return n;
}

int tl_check_todo(Loader *L, json_t *root)
{
    char first[PATH_MAX_LEN] = "", what[256] = "";
    int n = todo_walk(root, "", first, what, sizeof(what));
    if (n == 0)
        return 0;
    return tl_err(L, first, "unfinished: %s is a TODO left by `evoeng init` (%d TODO%s in all): fill %s in",
                  what, n, n == 1 ? "" : "s", n == 1 ? "it" : "them");
}

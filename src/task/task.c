/*
 * task: the task spec loader, validator and resolver. See task.h for the
 * contract and templates/README.md for the format.
 *
 * Loading walks the JSON once, field by field, with the JSON path of the
 * current node in a small buffer so that every error can name it. All
 * expressions are parsed at load time (kept as Expr with their path) and
 * their variable references checked against the names visible there;
 * evaluation happens later, per configuration and shape, through an Env
 * whose lookup sees params, dims, derived values and device facts.
 */
#include "task.h"

#include <ctype.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "expr.h"
#include "template.h"

#define PATH_MAX_LEN 384

/* ---- the Task --------------------------------------------------------- */

typedef struct TExpr {
    Expr *e;       /* NULL when absent (optional field) */
    char *path;    /* JSON path, for errors: "launch[1].grid[0]" */
} TExpr;

typedef struct TParam {
    char    *name;
    int64_t *values;
    int      nvalues;
    int      def;      /* index into values */
} TParam;

typedef struct TDerived {
    char *name;
    TExpr x;
} TDerived;

typedef struct TConstraint {
    TExpr x;
    char *why;         /* NULL when not given */
} TConstraint;

typedef struct TBuffer {
    char    *name;
    DType    dtype;
    BufRole  role;
    InitKind init;
    double   a, b;
    double   atol, rtol; /* < 0: the task's tolerance */
    TExpr   *shape;
    int      nshape;
} TBuffer;

/* A tensor_map argument as written: expressions per dimension. */
typedef struct TTmap {
    int   rank, nstrides, nestr;
    TExpr dims[TMAP_MAX_RANK], strides[TMAP_MAX_RANK - 1], box[TMAP_MAX_RANK], estr[TMAP_MAX_RANK];
    int   swizzle, l2, oob_nan;
    char *path;
} TTmap;

typedef struct TArg {
    ArgKind kind;
    int     buffer;    /* ARG_BUFFER, ARG_TMAP */
    TExpr   x;         /* scalars */
    TTmap  *tm;        /* ARG_TMAP */
} TArg;

typedef struct TLaunch {
    char  *entry;
    char  *path;       /* "launch[1]" */
    TExpr  grid[3], block[3], smem, when;
    TArg  *args;
    int    nargs;
} TLaunch;

struct Task {
    char     *path, *dir, *json_text;
    char     *name, *description;
    char     *template_path, *template_text, *ref_path, *ref_text;
    char    **entries, **ref_entries;
    int       nentries, nref_entries;
    TParam   *params;
    int       nparams;
    TDerived *derived;
    int       nderived;
    TConstraint *cons;
    int       ncons;
    char    **dim_names;
    int64_t  *dims;          /* benchmark values */
    int       ndims;
    int      *compile_dims;  /* indices into dims */
    int       ncompile;
    int       nextra;        /* correctness shapes */
    int64_t  *extra_vals;    /* nextra * ndims */
    unsigned char *extra_set;/* nextra * ndims: 1 when that shape sets the dim */
    TBuffer  *bufs;
    int       nbufs;
    TLaunch  *launches, *ref_launches;
    int       nlaunches, nref_launches;
    double    atol, rtol;
    TExpr     flops, bytes, min_ctas;
    char    **copts;
    int       ncopts;
    int       fast_math, lineinfo, max_spill, arch_specific;
};

/* ---- loader helpers --------------------------------------------------- */

typedef struct Loader {
    Task       *t;
    const char *file;
    EvoErr     *err;
} Loader;

static int lerr(Loader *L, const char *path, const char *fmt, ...) EVO_PRINTF(3, 4);

static int lerr(Loader *L, const char *path, const char *fmt, ...)
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

static void subpath(char *buf, const char *path, const char *key)
{
    if (snprintf(buf, PATH_MAX_LEN, "%s%s%s", path, *path ? "." : "", key) >= PATH_MAX_LEN)
        buf[PATH_MAX_LEN - 1] = 0; /* a truncated path is still a useful hint */
}

static void idxpath(char *buf, const char *path, int i)
{
    if (snprintf(buf, PATH_MAX_LEN, "%s[%d]", path, i) >= PATH_MAX_LEN)
        buf[PATH_MAX_LEN - 1] = 0;
}

static const char *json_type_name(const json_t *v)
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

static int is_ident(const char *s)
{
    if (!(isalpha((unsigned char)*s) || *s == '_'))
        return 0;
    for (s++; *s; s++)
        if (!(isalnum((unsigned char)*s) || *s == '_'))
            return 0;
    return 1;
}

/* Reject keys of obj not in allowed (NULL-terminated); keys starting with
 * '_' are comments. */
static int check_keys(Loader *L, json_t *obj, const char *path, const char *const *allowed)
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
            const char *near = expr_closest(key, allowed, n);
            subpath(p, path, key);
            if (near)
                return lerr(L, p, "unknown field (did you mean '%s'?)", near);
            return lerr(L, p, "unknown field");
        }
    }
    return 0;
}

/* Fetch obj[key] with a type check. type < 0: any. Absent: *out = NULL,
 * an error only when required. */
static int get_field(Loader *L, json_t *obj, const char *path, const char *key, int required,
                     int type, json_t **out)
{
    char p[PATH_MAX_LEN];
    json_t *v = json_object_get(obj, key);
    subpath(p, path, key);
    *out = NULL;
    if (!v) {
        if (required)
            return lerr(L, p, "missing required field");
        return 0;
    }
    if (type >= 0 && (int)json_typeof(v) != type) {
        const char *want = type == JSON_OBJECT ? "an object" : type == JSON_ARRAY ? "an array" : "a string";
        return lerr(L, p, "expected %s, got %s", want, json_type_name(v));
    }
    *out = v;
    return 0;
}

static int get_string(Loader *L, json_t *obj, const char *path, const char *key, int required, char **out)
{
    json_t *v;
    if (get_field(L, obj, path, key, required, JSON_STRING, &v) < 0)
        return -1;
    *out = v ? xstrdup(json_string_value(v)) : NULL;
    return 0;
}

static int get_bool(Loader *L, json_t *obj, const char *path, const char *key, int *out)
{
    json_t *v;
    char p[PATH_MAX_LEN];
    if (get_field(L, obj, path, key, 0, -1, &v) < 0)
        return -1;
    if (!v)
        return 0;
    if (!json_is_boolean(v)) {
        subpath(p, path, key);
        return lerr(L, p, "expected a boolean, got %s", json_type_name(v));
    }
    *out = json_is_true(v);
    return 0;
}

static int get_number(Loader *L, json_t *v, const char *p, double *out)
{
    if (!json_is_number(v))
        return lerr(L, p, "expected a number, got %s", json_type_name(v));
    *out = json_number_value(v);
    return 0;
}

static int get_int(Loader *L, json_t *v, const char *p, int64_t *out)
{
    if (!json_is_integer(v))
        return lerr(L, p, "expected an integer, got %s", json_type_name(v));
    *out = (int64_t)json_integer_value(v);
    return 0;
}

/* A list of unique identifier strings (entries). */
static int get_name_list(Loader *L, json_t *obj, const char *path, const char *key, char ***out, int *n)
{
    json_t *arr, *v;
    char p[PATH_MAX_LEN], q[PATH_MAX_LEN];
    size_t i;
    subpath(p, path, key);
    if (get_field(L, obj, path, key, 1, JSON_ARRAY, &arr) < 0)
        return -1;
    if (json_array_size(arr) == 0)
        return lerr(L, p, "empty list");
    *out = xcalloc(json_array_size(arr), sizeof(char *));
    json_array_foreach(arr, i, v) {
        idxpath(q, p, (int)i);
        if (!json_is_string(v))
            return lerr(L, q, "expected a string, got %s", json_type_name(v));
        const char *s = json_string_value(v);
        if (!is_ident(s))
            return lerr(L, q, "'%s' is not a valid C identifier", s);
        for (int k = 0; k < *n; k++)
            if (strcmp((*out)[k], s) == 0)
                return lerr(L, q, "duplicate entry '%s'", s);
        (*out)[(*n)++] = xstrdup(s);
    }
    return 0;
}

/* ---- names and expressions ------------------------------------------- */

/* Scopes for name checks. */
enum { SCOPE_ALL = -1 };

static int find_name(char *const *names, int n, const char *s)
{
    for (int i = 0; i < n; i++)
        if (strcmp(names[i], s) == 0)
            return i;
    return -1;
}

static int device_name_known(const char *s)
{
    for (int i = 0; device_var_names[i]; i++)
        if (strcmp(device_var_names[i], s) == 0)
            return 1;
    return 0;
}

static int param_find(const Task *t, const char *s)
{
    for (int i = 0; i < t->nparams; i++)
        if (strcmp(t->params[i].name, s) == 0)
            return i;
    return -1;
}

static int derived_find(const Task *t, const char *s)
{
    for (int i = 0; i < t->nderived; i++)
        if (strcmp(t->derived[i].name, s) == 0)
            return i;
    return -1;
}

static int buffer_find(const Task *t, const char *s)
{
    for (int i = 0; i < t->nbufs; i++)
        if (strcmp(t->bufs[i].name, s) == 0)
            return i;
    return -1;
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
        if (param_find(t, v) >= 0 || find_name(t->dim_names, t->ndims, v) >= 0 || device_name_known(v))
            continue;
        int d = derived_find(t, v);
        if (d >= 0 && d < nderived)
            continue;
        if (d >= 0 && d == nderived)
            return lerr(L, x->path, "column %d: derived '%s' refers to itself", col, v);
        if (d >= 0)
            return lerr(L, x->path, "column %d: unknown variable '%s' (derived '%s' is defined later)", col, v, v);
        if (buffer_find(t, v) >= 0)
            return lerr(L, x->path, "column %d: '%s' is a buffer; a buffer can only be passed alone as a launch argument",
                        col, v);
        int n;
        const char **names = visible_names(t, nderived, arg_context, &n);
        const char *near = expr_closest(v, names, n);
        char hint[160] = "";
        if (near)
            snprintf(hint, sizeof(hint), " (did you mean '%s'?)", near);
        lerr(L, x->path, "column %d: unknown %s '%s'%s", col, arg_context ? "buffer or variable" : "variable", v,
             hint);
        free(names);
        return -1;
    }
    return 0;
}

/* Variable slots: kind << 16 | index, resolved once at load time so that
 * evaluation never compares names. */
enum { SLOT_PARAM = 1, SLOT_DIM, SLOT_DERIVED, SLOT_DEVICE };
#define MAX_DEVICE_VARS 64

static void bind_slots(const Task *t, Expr *e)
{
    for (int i = 0; i < expr_nvars(e); i++) {
        const char *v = expr_var(e, i, NULL);
        int k, slot = -1;
        if ((k = param_find(t, v)) >= 0)
            slot = SLOT_PARAM << 16 | k;
        else if ((k = find_name(t->dim_names, t->ndims, v)) >= 0)
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
static int parse_texpr(Loader *L, json_t *v, const char *p, int nderived, int arg_context, TExpr *x)
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
        return lerr(L, p, "expected an expression (a string or a number), got %s", json_type_name(v));
    int rc = expr_parse(text, &x->e, &e);
    free(text);
    if (rc < 0)
        return lerr(L, p, "%s", e.msg);
    if (check_vars(L, x, nderived, arg_context) < 0)
        return -1;
    bind_slots(L->t, x->e);
    return 0;
}

static void texpr_free(TExpr *x)
{
    expr_free(&x->e);
    free(x->path);
    x->path = NULL;
}

/* A name for params, dims, derived and buffers: an identifier, unique
 * among all of them and not a device variable. */
static int check_new_name(Loader *L, const char *p, const char *s)
{
    Task *t = L->t;
    if (!is_ident(s))
        return lerr(L, p, "'%s' is not a valid identifier", s);
    const char *what = param_find(t, s) >= 0 ? "a param"
                     : find_name(t->dim_names, t->ndims, s) >= 0 ? "a dim"
                     : derived_find(t, s) >= 0 ? "a derived name"
                     : buffer_find(t, s) >= 0 ? "a buffer"
                     : device_name_known(s) ? "a device variable" : NULL;
    if (what)
        return lerr(L, p, "duplicate name '%s' (already %s)", s, what);
    return 0;
}

/* ---- sections --------------------------------------------------------- */

static int load_params(Loader *L, json_t *root)
{
    Task *t = L->t;
    json_t *obj, *pv;
    const char *key;
    char p[PATH_MAX_LEN], q[PATH_MAX_LEN], r[PATH_MAX_LEN];
    static const char *const keys[] = {"values", "default", NULL};
    if (get_field(L, root, "", "params", 1, JSON_OBJECT, &obj) < 0)
        return -1;
    if (json_object_size(obj) == 0)
        return lerr(L, "params", "no params");
    t->params = xcalloc(json_object_size(obj), sizeof(*t->params));
    json_object_foreach(obj, key, pv) {
        subpath(p, "params", key);
        if (check_new_name(L, p, key) < 0)
            return -1;
        if (!json_is_object(pv))
            return lerr(L, p, "expected an object, got %s", json_type_name(pv));
        if (check_keys(L, pv, p, keys) < 0)
            return -1;
        TParam *pr = &t->params[t->nparams++];
        pr->name = xstrdup(key);
        json_t *vals, *def, *v;
        size_t i;
        if (get_field(L, pv, p, "values", 1, JSON_ARRAY, &vals) < 0)
            return -1;
        subpath(q, p, "values");
        if (json_array_size(vals) == 0)
            return lerr(L, q, "empty list");
        pr->values = xcalloc(json_array_size(vals), sizeof(int64_t));
        json_array_foreach(vals, i, v) {
            idxpath(r, q, (int)i);
            int64_t x = 0;
            if (get_int(L, v, r, &x) < 0)
                return -1;
            for (int k = 0; k < pr->nvalues; k++)
                if (pr->values[k] == x)
                    return lerr(L, r, "duplicate value %lld", (long long)x);
            pr->values[pr->nvalues++] = x;
        }
        if (get_field(L, pv, p, "default", 1, -1, &def) < 0)
            return -1;
        subpath(q, p, "default");
        int64_t d;
        if (get_int(L, def, q, &d) < 0)
            return -1;
        pr->def = -1;
        for (int k = 0; k < pr->nvalues; k++)
            if (pr->values[k] == d)
                pr->def = k;
        if (pr->def < 0)
            return lerr(L, q, "%lld is not one of the values", (long long)d);
    }
    return 0;
}

static int load_dims(Loader *L, json_t *root)
{
    Task *t = L->t;
    json_t *obj, *v, *arr;
    const char *key;
    char p[PATH_MAX_LEN];
    size_t i;
    if (get_field(L, root, "", "dims", 1, JSON_OBJECT, &obj) < 0)
        return -1;
    size_t n = json_object_size(obj);
    t->dim_names = xcalloc(n + 1, sizeof(char *));
    t->dims = xcalloc(n + 1, sizeof(int64_t));
    json_object_foreach(obj, key, v) {
        subpath(p, "dims", key);
        if (check_new_name(L, p, key) < 0)
            return -1;
        if (get_int(L, v, p, &t->dims[t->ndims]) < 0)
            return -1;
        t->dim_names[t->ndims++] = xstrdup(key);
    }
    /* compile_dims */
    if (get_field(L, root, "", "compile_dims", 0, JSON_ARRAY, &arr) < 0)
        return -1;
    if (arr) {
        t->compile_dims = xcalloc(json_array_size(arr) + 1, sizeof(int));
        json_array_foreach(arr, i, v) {
            idxpath(p, "compile_dims", (int)i);
            if (!json_is_string(v))
                return lerr(L, p, "expected a string, got %s", json_type_name(v));
            int d = find_name(t->dim_names, t->ndims, json_string_value(v));
            if (d < 0) {
                const char *near = expr_closest(json_string_value(v), (const char *const *)t->dim_names, t->ndims);
                return lerr(L, p, "unknown dim '%s'%s%s%s", json_string_value(v), near ? " (did you mean '" : "",
                            near ? near : "", near ? "'?)" : "");
            }
            for (int k = 0; k < t->ncompile; k++)
                if (t->compile_dims[k] == d)
                    return lerr(L, p, "duplicate dim '%s'", t->dim_names[d]);
            t->compile_dims[t->ncompile++] = d;
        }
    }
    /* shapes */
    if (get_field(L, root, "", "shapes", 0, JSON_ARRAY, &arr) < 0)
        return -1;
    if (arr) {
        size_t ns = json_array_size(arr);
        t->extra_vals = xcalloc(ns * (size_t)t->ndims + 1, sizeof(int64_t));
        t->extra_set = xcalloc(ns * (size_t)t->ndims + 1, 1);
        json_t *sh;
        json_array_foreach(arr, i, sh) {
            char q[PATH_MAX_LEN];
            idxpath(p, "shapes", (int)i);
            if (!json_is_object(sh))
                return lerr(L, p, "expected an object, got %s", json_type_name(sh));
            json_object_foreach(sh, key, v) {
                subpath(q, p, key);
                if (key[0] == '_')
                    continue;
                int d = find_name(t->dim_names, t->ndims, key);
                if (d < 0) {
                    const char *near = expr_closest(key, (const char *const *)t->dim_names, t->ndims);
                    return lerr(L, q, "unknown dim '%s'%s%s%s", key, near ? " (did you mean '" : "",
                                near ? near : "", near ? "'?)" : "");
                }
                if (get_int(L, v, q, &t->extra_vals[i * (size_t)t->ndims + (size_t)d]) < 0)
                    return -1;
                t->extra_set[i * (size_t)t->ndims + (size_t)d] = 1;
            }
            t->nextra++;
        }
    }
    return 0;
}

static int load_derived(Loader *L, json_t *root)
{
    Task *t = L->t;
    json_t *obj, *v;
    const char *key;
    char p[PATH_MAX_LEN];
    if (get_field(L, root, "", "derived", 0, JSON_OBJECT, &obj) < 0)
        return -1;
    if (!obj)
        return 0;
    t->derived = xcalloc(json_object_size(obj) + 1, sizeof(*t->derived));
    /* names first, so that a reference to a later one can say so */
    json_object_foreach(obj, key, v) {
        subpath(p, "derived", key);
        if (check_new_name(L, p, key) < 0)
            return -1;
        t->derived[t->nderived++].name = xstrdup(key);
    }
    int i = 0;
    json_object_foreach(obj, key, v) {
        subpath(p, "derived", key);
        if (parse_texpr(L, v, p, i, 0, &t->derived[i].x) < 0)
            return -1;
        i++;
    }
    return 0;
}

static int load_constraints(Loader *L, json_t *root)
{
    Task *t = L->t;
    json_t *arr, *v;
    size_t i;
    char p[PATH_MAX_LEN], q[PATH_MAX_LEN];
    static const char *const keys[] = {"expr", "why", NULL};
    if (get_field(L, root, "", "constraints", 0, JSON_ARRAY, &arr) < 0)
        return -1;
    if (!arr)
        return 0;
    t->cons = xcalloc(json_array_size(arr) + 1, sizeof(*t->cons));
    json_array_foreach(arr, i, v) {
        idxpath(p, "constraints", (int)i);
        TConstraint *c = &t->cons[t->ncons++];
        json_t *e = v;
        if (json_is_object(v)) {
            if (check_keys(L, v, p, keys) < 0 || get_field(L, v, p, "expr", 1, -1, &e) < 0 ||
                get_string(L, v, p, "why", 0, &c->why) < 0)
                return -1;
            subpath(q, p, "expr");
            if (parse_texpr(L, e, q, SCOPE_ALL, 0, &c->x) < 0)
                return -1;
            free(c->x.path); /* errors name the constraint, not its expr field */
            c->x.path = xstrdup(p);
        } else if (parse_texpr(L, e, p, SCOPE_ALL, 0, &c->x) < 0) {
            return -1;
        }
    }
    return 0;
}

static int load_init(Loader *L, json_t *init, const char *p, TBuffer *b)
{
    static const char *const keys[] = {"dist", "mean", "std", "low", "high", "value", NULL};
    static const char *const dists[] = {"normal", "uniform", "zero", "const", NULL};
    static const struct { const char *k1, *k2; double d1, d2; } args[] = {
        {"mean", "std", 0, 1}, {"low", "high", -1, 1}, {NULL, NULL, 0, 0}, {"value", NULL, 0, 0},
    };
    char q[PATH_MAX_LEN];
    char *dist = NULL;
    int rc = -1;
    if (!json_is_object(init))
        return lerr(L, p, "expected an object, got %s", json_type_name(init));
    if (check_keys(L, init, p, keys) < 0 || get_string(L, init, p, "dist", 1, &dist) < 0)
        goto fail;
    int k;
    for (k = 0; dists[k]; k++)
        if (strcmp(dists[k], dist) == 0)
            break;
    if (!dists[k]) {
        const char *near = expr_closest(dist, dists, 4);
        subpath(q, p, "dist");
        lerr(L, q, "unknown dist '%s'%s%s%s (known: normal uniform zero const)", dist,
             near ? " (did you mean '" : "", near ? near : "", near ? "'?)" : "");
        goto fail;
    }
    b->init = (InitKind)k; /* same order as InitKind */
    b->a = args[k].d1;
    b->b = args[k].d2;
    const char *const ks[2] = {args[k].k1, args[k].k2};
    double *dst[2] = {&b->a, &b->b};
    for (int j = 0; j < 2; j++) {
        json_t *v;
        if (!ks[j] || !(v = json_object_get(init, ks[j])))
            continue;
        subpath(q, p, ks[j]);
        if (get_number(L, v, q, dst[j]) < 0)
            goto fail;
    }
    if (b->init == INIT_CONST && !json_object_get(init, "value")) {
        lerr(L, p, "dist 'const' needs a 'value'");
        goto fail;
    }
    rc = 0;
fail:
    free(dist);
    return rc;
}

static int load_buffers(Loader *L, json_t *root)
{
    Task *t = L->t;
    json_t *arr, *v, *x;
    size_t i, j;
    char p[PATH_MAX_LEN], q[PATH_MAX_LEN], r[PATH_MAX_LEN];
    static const char *const keys[] = {"name", "dtype", "shape", "role", "init", "atol", "rtol", NULL};
    static const char *const roles[] = {"input", "output", "scratch", NULL};
    if (get_field(L, root, "", "buffers", 1, JSON_ARRAY, &arr) < 0)
        return -1;
    if (json_array_size(arr) == 0)
        return lerr(L, "buffers", "empty list");
    t->bufs = xcalloc(json_array_size(arr), sizeof(*t->bufs));
    json_array_foreach(arr, i, v) {
        char *s = NULL;
        idxpath(p, "buffers", (int)i);
        if (!json_is_object(v))
            return lerr(L, p, "expected an object, got %s", json_type_name(v));
        if (check_keys(L, v, p, keys) < 0 || get_string(L, v, p, "name", 1, &s) < 0)
            return -1;
        subpath(q, p, "name");
        if (check_new_name(L, q, s) < 0) {
            free(s);
            return -1;
        }
        TBuffer *b = &t->bufs[t->nbufs++];
        b->name = s;
        b->atol = b->rtol = -1;
        b->init = INIT_NORMAL;
        b->a = 0;
        b->b = 1;
        if (get_string(L, v, p, "dtype", 1, &s) < 0)
            return -1;
        int dt = dtype_parse(s);
        if (dt < 0) {
            subpath(q, p, "dtype");
            lerr(L, q, "unknown dtype '%s' (known: f16 bf16 f32 i32)", s);
            free(s);
            return -1;
        }
        free(s);
        b->dtype = (DType)dt;
        if (get_string(L, v, p, "role", 1, &s) < 0)
            return -1;
        int k;
        for (k = 0; roles[k]; k++)
            if (strcmp(roles[k], s) == 0)
                break;
        if (!roles[k]) {
            subpath(q, p, "role");
            lerr(L, q, "unknown role '%s' (known: input output scratch)", s);
            free(s);
            return -1;
        }
        free(s);
        b->role = (BufRole)k;
        if (get_field(L, v, p, "shape", 1, JSON_ARRAY, &x) < 0)
            return -1;
        subpath(q, p, "shape");
        if (json_array_size(x) == 0)
            return lerr(L, q, "empty list");
        b->shape = xcalloc(json_array_size(x), sizeof(TExpr));
        json_t *e;
        json_array_foreach(x, j, e) {
            idxpath(r, q, (int)j);
            b->nshape++;
            if (parse_texpr(L, e, r, SCOPE_ALL, 0, &b->shape[j]) < 0)
                return -1;
        }
        if ((x = json_object_get(v, "init"))) {
            subpath(q, p, "init");
            if (b->role != ROLE_INPUT)
                return lerr(L, q, "only inputs have an init");
            if (load_init(L, x, q, b) < 0)
                return -1;
        } else if (b->role != ROLE_INPUT) {
            b->init = INIT_ZERO;
            b->a = b->b = 0;
        }
        const char *tk[2] = {"atol", "rtol"};
        double *td[2] = {&b->atol, &b->rtol};
        for (int m = 0; m < 2; m++) {
            if (!(x = json_object_get(v, tk[m])))
                continue;
            subpath(q, p, tk[m]);
            if (b->role != ROLE_OUTPUT)
                return lerr(L, q, "only outputs have a tolerance");
            if (get_number(L, x, q, td[m]) < 0)
                return -1;
            if (*td[m] < 0)
                return lerr(L, q, "must not be negative");
        }
    }
    return 0;
}

/* A list of 1..max expressions at p into x[]; *n gets the count. */
static int load_exprs(Loader *L, json_t *v, const char *p, int min, int max, TExpr *x, int *n)
{
    char q[PATH_MAX_LEN];
    if (!json_is_array(v) || (int)json_array_size(v) < min || (int)json_array_size(v) > max)
        return lerr(L, p, "expected an array of %d to %d expressions", min, max);
    *n = (int)json_array_size(v);
    for (int i = 0; i < *n; i++) {
        idxpath(q, p, i);
        if (parse_texpr(L, json_array_get(v, (size_t)i), q, SCOPE_ALL, 0, &x[i]) < 0)
            return -1;
    }
    return 0;
}

/* {"tensor_map": {"buffer": NAME, "dims": [..], "box": [..], "strides":
 * [..], "element_strides": [..], "swizzle": S, "l2_promotion": P,
 * "oob_fill": "zero"|"nan"}} */
static int load_tmap(Loader *L, json_t *v, const char *p, TArg *a)
{
    static const char *const keys[] = {"buffer", "dims", "box", "strides", "element_strides", "swizzle",
                                       "l2_promotion", "oob_fill", NULL};
    char q[PATH_MAX_LEN];
    json_t *x;
    int n = 0;
    TTmap *tm = a->tm = xcalloc(1, sizeof(*tm));
    a->kind = ARG_TMAP;
    tm->path = xstrdup(p);
    if (!json_is_object(v))
        return lerr(L, p, "expected an object {\"buffer\", \"dims\", \"box\", ...}");
    if (check_keys(L, v, p, keys) < 0)
        return -1;
    subpath(q, p, "buffer");
    x = json_object_get(v, "buffer");
    if (!json_is_string(x) || (a->buffer = buffer_find(L->t, json_string_value(x))) < 0)
        return lerr(L, q, "expected the name of a buffer");
    subpath(q, p, "dims");
    if (load_exprs(L, json_object_get(v, "dims"), q, 1, TMAP_MAX_RANK, tm->dims, &tm->rank) < 0)
        return -1;
    subpath(q, p, "box");
    if (load_exprs(L, json_object_get(v, "box"), q, tm->rank, tm->rank, tm->box, &n) < 0)
        return -1;
    if ((x = json_object_get(v, "strides"))) {
        subpath(q, p, "strides");
        if (tm->rank < 2)
            return lerr(L, q, "a rank-1 map has no strides");
        if (load_exprs(L, x, q, tm->rank - 1, tm->rank - 1, tm->strides, &tm->nstrides) < 0)
            return -1;
    }
    if ((x = json_object_get(v, "element_strides"))) {
        subpath(q, p, "element_strides");
        if (load_exprs(L, x, q, tm->rank, tm->rank, tm->estr, &tm->nestr) < 0)
            return -1;
    }
    {
        static const char *const oob[] = {"zero", "nan", NULL};
        const char *const *names[3] = {tmap_swizzle_names, tmap_l2_names, oob};
        const char *const what[3] = {"swizzle", "l2_promotion", "oob_fill"};
        int *dst[3] = {&tm->swizzle, &tm->l2, &tm->oob_nan};
        for (int k = 0; k < 3; k++) {
            if (!(x = json_object_get(v, what[k])))
                continue;
            subpath(q, p, what[k]);
            if (!json_is_string(x) || (*dst[k] = tmap_name_index(names[k], json_string_value(x))) < 0)
                return lerr(L, q, "expected one of %s, %s, %s%s%s", names[k][0], names[k][1], names[k][2],
                            names[k][3] ? ", " : "", names[k][3] ? names[k][3] : "");
        }
    }
    return 0;
}

static int load_arg(Loader *L, json_t *v, const char *p, TArg *a)
{
    Task *t = L->t;
    a->buffer = -1;
    if (json_is_object(v) && json_object_get(v, "tensor_map")) {
        char q[PATH_MAX_LEN];
        if (json_object_size(v) != 1)
            return lerr(L, p, "a tensor_map argument is an object with the one key \"tensor_map\"");
        subpath(q, p, "tensor_map");
        return load_tmap(L, json_object_get(v, "tensor_map"), q, a);
    }
    if (json_is_string(v) && (a->buffer = buffer_find(t, json_string_value(v))) >= 0) {
        a->kind = ARG_BUFFER;
        return 0;
    }
    if (json_is_real(v))
        return lerr(L, p, "a bare number argument must be an integer; write {\"f32\": %g} for a float",
                    json_real_value(v));
    if (json_is_object(v)) {
        static const char *const kinds[] = {"i32", "i64", "f32", "f64", NULL};
        static const ArgKind kk[] = {ARG_I32, ARG_I64, ARG_F32, ARG_F64};
        const char *key;
        json_t *e;
        char q[PATH_MAX_LEN];
        if (json_object_size(v) != 1)
            return lerr(L, p, "expected one of {\"i32\": e}, {\"i64\": e}, {\"f32\": e}, {\"f64\": e}, "
                        "{\"tensor_map\": {...}}");
        if (check_keys(L, v, p, kinds) < 0)
            return -1;
        json_object_foreach(v, key, e) {
            for (int k = 0; kinds[k]; k++)
                if (strcmp(kinds[k], key) == 0)
                    a->kind = kk[k];
            subpath(q, p, key);
            if (parse_texpr(L, e, q, SCOPE_ALL, 0, &a->x) < 0)
                return -1;
        }
        return 0;
    }
    a->kind = ARG_I32;
    return parse_texpr(L, v, p, SCOPE_ALL, 1, &a->x);
}

/* Parse a dim list (grid or block): 1 to 3 expressions, missing ones 1. */
static int load_dim3(Loader *L, json_t *l, const char *path, const char *key, TExpr out[3])
{
    json_t *arr, *v;
    size_t i;
    char p[PATH_MAX_LEN], q[PATH_MAX_LEN];
    subpath(p, path, key);
    if (get_field(L, l, path, key, 1, JSON_ARRAY, &arr) < 0)
        return -1;
    if (json_array_size(arr) < 1 || json_array_size(arr) > 3)
        return lerr(L, p, "expected 1 to 3 entries, got %zu", json_array_size(arr));
    json_array_foreach(arr, i, v) {
        idxpath(q, p, (int)i);
        if (parse_texpr(L, v, q, SCOPE_ALL, 0, &out[i]) < 0)
            return -1;
    }
    return 0;
}

static int load_launches(Loader *L, json_t *obj, const char *path, char **entries, int nentries,
                         TLaunch **out, int *nout)
{
    json_t *arr, *l, *v, *x;
    size_t i, j;
    char p[PATH_MAX_LEN], q[PATH_MAX_LEN], r[PATH_MAX_LEN];
    static const char *const keys[] = {"entry", "grid", "block", "smem", "args", "when", NULL};
    if (get_field(L, obj, path, "launch", 1, JSON_ARRAY, &arr) < 0)
        return -1;
    subpath(p, path, "launch");
    if (json_array_size(arr) == 0)
        return lerr(L, p, "empty list");
    *out = xcalloc(json_array_size(arr), sizeof(TLaunch));
    json_array_foreach(arr, i, l) {
        TLaunch *la = &(*out)[(*nout)++];
        idxpath(q, p, (int)i);
        la->path = xstrdup(q);
        if (!json_is_object(l))
            return lerr(L, q, "expected an object, got %s", json_type_name(l));
        if (check_keys(L, l, q, keys) < 0 || get_string(L, l, q, "entry", 1, &la->entry) < 0)
            return -1;
        if (find_name(entries, nentries, la->entry) < 0) {
            subpath(r, q, "entry");
            return lerr(L, r, "'%s' is not declared in %s%sentries", la->entry, path, *path ? "." : "");
        }
        if (load_dim3(L, l, q, "grid", la->grid) < 0 || load_dim3(L, l, q, "block", la->block) < 0)
            return -1;
        if ((v = json_object_get(l, "smem"))) {
            subpath(r, q, "smem");
            if (parse_texpr(L, v, r, SCOPE_ALL, 0, &la->smem) < 0)
                return -1;
        }
        if ((v = json_object_get(l, "when"))) {
            subpath(r, q, "when");
            if (parse_texpr(L, v, r, SCOPE_ALL, 0, &la->when) < 0)
                return -1;
        }
        if (get_field(L, l, q, "args", 1, JSON_ARRAY, &v) < 0)
            return -1;
        subpath(r, q, "args");
        la->args = xcalloc(json_array_size(v) + 1, sizeof(TArg));
        json_array_foreach(v, j, x) {
            char s[PATH_MAX_LEN];
            idxpath(s, r, (int)j);
            la->nargs++;
            if (load_arg(L, x, s, &la->args[j]) < 0)
                return -1;
        }
    }
    return 0;
}

static int load_source(Loader *L, const char *p, const char *rel, char **path, char **text)
{
    EvoErr e;
    *path = path_join(L->t->dir, rel);
    if (file_read(*path, text, NULL, &e) < 0)
        return lerr(L, p, "cannot read '%s': %s", rel, e.msg);
    return 0;
}

static int load_reference(Loader *L, json_t *root)
{
    Task *t = L->t;
    json_t *obj;
    char *src = NULL;
    int rc = -1;
    static const char *const keys[] = {"source", "entries", "launch", NULL};
    if (get_field(L, root, "", "reference", 1, JSON_OBJECT, &obj) < 0 || check_keys(L, obj, "reference", keys) < 0)
        return -1;
    if (get_string(L, obj, "reference", "source", 1, &src) < 0 ||
        get_name_list(L, obj, "reference", "entries", &t->ref_entries, &t->nref_entries) < 0 ||
        load_launches(L, obj, "reference", t->ref_entries, t->nref_entries, &t->ref_launches, &t->nref_launches) < 0 ||
        load_source(L, "reference.source", src, &t->ref_path, &t->ref_text) < 0)
        goto fail;
    rc = 0;
fail:
    free(src);
    return rc;
}

static int load_misc(Loader *L, json_t *root)
{
    Task *t = L->t;
    json_t *obj, *v;
    size_t i;
    char p[PATH_MAX_LEN];
    static const char *const tkeys[] = {"atol", "rtol", NULL};
    static const char *const ckeys[] = {"options", "fast_math", "lineinfo", "max_spill_bytes", "arch_specific", NULL};
    static const char *const gkeys[] = {"min_ctas", NULL};
    t->atol = t->rtol = 1e-2;
    t->max_spill = -1;
    if (get_field(L, root, "", "tolerance", 0, JSON_OBJECT, &obj) < 0)
        return -1;
    if (obj) {
        if (check_keys(L, obj, "tolerance", tkeys) < 0)
            return -1;
        if ((v = json_object_get(obj, "atol")) && get_number(L, v, "tolerance.atol", &t->atol) < 0)
            return -1;
        if ((v = json_object_get(obj, "rtol")) && get_number(L, v, "tolerance.rtol", &t->rtol) < 0)
            return -1;
        if (t->atol < 0 || t->rtol < 0)
            return lerr(L, "tolerance", "must not be negative");
    }
    if ((v = json_object_get(root, "flops")) && parse_texpr(L, v, "flops", SCOPE_ALL, 0, &t->flops) < 0)
        return -1;
    if ((v = json_object_get(root, "bytes")) && parse_texpr(L, v, "bytes", SCOPE_ALL, 0, &t->bytes) < 0)
        return -1;
    if (get_field(L, root, "", "compile", 0, JSON_OBJECT, &obj) < 0)
        return -1;
    if (obj) {
        if (check_keys(L, obj, "compile", ckeys) < 0 || get_bool(L, obj, "compile", "fast_math", &t->fast_math) < 0 ||
            get_bool(L, obj, "compile", "lineinfo", &t->lineinfo) < 0 ||
            get_bool(L, obj, "compile", "arch_specific", &t->arch_specific) < 0)
            return -1;
        if ((v = json_object_get(obj, "max_spill_bytes"))) {
            int64_t m;
            if (get_int(L, v, "compile.max_spill_bytes", &m) < 0)
                return -1;
            if (m < 0 || m > INT_MAX)
                return lerr(L, "compile.max_spill_bytes", "out of range");
            t->max_spill = (int)m;
        }
        json_t *arr;
        if (get_field(L, obj, "compile", "options", 0, JSON_ARRAY, &arr) < 0)
            return -1;
        if (arr) {
            t->copts = xcalloc(json_array_size(arr) + 1, sizeof(char *));
            json_array_foreach(arr, i, v) {
                idxpath(p, "compile.options", (int)i);
                if (!json_is_string(v))
                    return lerr(L, p, "expected a string, got %s", json_type_name(v));
                t->copts[t->ncopts++] = xstrdup(json_string_value(v));
            }
        }
    }
    if (get_field(L, root, "", "gate", 0, JSON_OBJECT, &obj) < 0)
        return -1;
    if (obj) {
        if (check_keys(L, obj, "gate", gkeys) < 0)
            return -1;
        if ((v = json_object_get(obj, "min_ctas")) &&
            parse_texpr(L, v, "gate.min_ctas", SCOPE_ALL, 0, &t->min_ctas) < 0)
            return -1;
    }
    return 0;
}

int task_load(const char *path, Task **out, EvoErr *err)
{
    char *text = NULL;
    size_t len;
    *out = NULL;
    if (file_read(path, &text, &len, err) < 0)
        return -1;
    int rc = task_load_text(text, len, path, out, err);
    free(text);
    return rc;
}

int task_load_text(const char *text, size_t len, const char *path, Task **out, EvoErr *err)
{
    static const char *const keys[] = {
        "name", "description", "template", "entries", "params", "derived", "constraints", "dims",
        "compile_dims", "shapes", "buffers", "launch", "reference", "tolerance", "flops", "bytes",
        "compile", "gate", NULL,
    };
    static const char *const required[] = {
        "name", "template", "entries", "params", "dims", "buffers", "launch", "reference", NULL,
    };
    Task *t = xcalloc(1, sizeof(*t));
    Loader L = {t, path, err};
    json_t *root = NULL;
    json_error_t je;
    char *tpl = NULL;
    *out = NULL;
    t->path = xstrdup(path);
    t->dir = path_dirname(path);
    t->json_text = xstrndup(text, len);
    root = json_loadb(t->json_text, len, JSON_REJECT_DUPLICATES, &je);
    if (!root) {
        err_set(err, "%s:%d:%d: %s", path, je.line, je.column, je.text);
        goto fail;
    }
    if (!json_is_object(root)) {
        lerr(&L, "", "expected a JSON object at the top level, got %s", json_type_name(root));
        goto fail;
    }
    if (check_keys(&L, root, "", keys) < 0)
        goto fail;
    for (int i = 0; required[i]; i++)
        if (!json_object_get(root, required[i])) {
            lerr(&L, required[i], "missing required field");
            goto fail;
        }
    if (get_string(&L, root, "", "name", 1, &t->name) < 0 ||
        get_string(&L, root, "", "description", 0, &t->description) < 0 ||
        get_string(&L, root, "", "template", 1, &tpl) < 0 ||
        get_name_list(&L, root, "", "entries", &t->entries, &t->nentries) < 0 ||
        load_params(&L, root) < 0 || load_dims(&L, root) < 0 || load_derived(&L, root) < 0 ||
        load_constraints(&L, root) < 0 || load_buffers(&L, root) < 0 ||
        load_launches(&L, root, "", t->entries, t->nentries, &t->launches, &t->nlaunches) < 0 ||
        load_reference(&L, root) < 0 || load_misc(&L, root) < 0 ||
        load_source(&L, "template", tpl, &t->template_path, &t->template_text) < 0)
        goto fail;
    if (!t->description)
        t->description = xstrdup("");
    free(tpl);
    json_decref(root);
    *out = t;
    return 0;
fail:
    free(tpl);
    if (root)
        json_decref(root);
    task_free(&t);
    return -1;
}

static void launches_free(TLaunch *l, int n)
{
    for (int i = 0; i < n; i++) {
        free(l[i].entry);
        free(l[i].path);
        for (int k = 0; k < 3; k++) {
            texpr_free(&l[i].grid[k]);
            texpr_free(&l[i].block[k]);
        }
        texpr_free(&l[i].smem);
        texpr_free(&l[i].when);
        for (int k = 0; k < l[i].nargs; k++) {
            TTmap *tm = l[i].args[k].tm;
            texpr_free(&l[i].args[k].x);
            for (int d = 0; tm && d < TMAP_MAX_RANK; d++) {
                texpr_free(&tm->dims[d]);
                texpr_free(&tm->box[d]);
                texpr_free(&tm->estr[d]);
                if (d < TMAP_MAX_RANK - 1)
                    texpr_free(&tm->strides[d]);
            }
            if (tm)
                free(tm->path);
            free(tm);
        }
        free(l[i].args);
    }
    free(l);
}

static void strv_free(char **v, int n)
{
    for (int i = 0; i < n; i++)
        free(v[i]);
    free(v);
}

void task_free(Task **pt)
{
    if (!pt || !*pt)
        return;
    Task *t = *pt;
    free(t->path);
    free(t->dir);
    free(t->json_text);
    free(t->name);
    free(t->description);
    free(t->template_path);
    free(t->template_text);
    free(t->ref_path);
    free(t->ref_text);
    strv_free(t->entries, t->nentries);
    strv_free(t->ref_entries, t->nref_entries);
    for (int i = 0; i < t->nparams; i++) {
        free(t->params[i].name);
        free(t->params[i].values);
    }
    free(t->params);
    for (int i = 0; i < t->nderived; i++) {
        free(t->derived[i].name);
        texpr_free(&t->derived[i].x);
    }
    free(t->derived);
    for (int i = 0; i < t->ncons; i++) {
        texpr_free(&t->cons[i].x);
        free(t->cons[i].why);
    }
    free(t->cons);
    strv_free(t->dim_names, t->ndims);
    free(t->dims);
    free(t->compile_dims);
    free(t->extra_vals);
    free(t->extra_set);
    for (int i = 0; i < t->nbufs; i++) {
        free(t->bufs[i].name);
        for (int k = 0; k < t->bufs[i].nshape; k++)
            texpr_free(&t->bufs[i].shape[k]);
        free(t->bufs[i].shape);
    }
    free(t->bufs);
    launches_free(t->launches, t->nlaunches);
    launches_free(t->ref_launches, t->nref_launches);
    texpr_free(&t->flops);
    texpr_free(&t->bytes);
    texpr_free(&t->min_ctas);
    strv_free(t->copts, t->ncopts);
    free(t);
    *pt = NULL;
}

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

int task_nparams(const Task *t) { return t->nparams; }
const char *task_param_name(const Task *t, int i) { return t->params[i].name; }
int task_param_index(const Task *t, const char *name) { return param_find(t, name); }
int task_param_nvalues(const Task *t, int i) { return t->params[i].nvalues; }
int64_t task_param_value(const Task *t, int i, int k) { return t->params[i].values[k]; }
int task_param_default(const Task *t, int i) { return t->params[i].def; }

int task_param_find(const Task *t, int i, int64_t v)
{
    for (int k = 0; k < t->params[i].nvalues; k++)
        if (t->params[i].values[k] == v)
            return k;
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

int64_t task_dim_value(const Task *t, int shape, int d)
{
    if (shape > 0 && shape <= t->nextra) {
        size_t k = (size_t)(shape - 1) * (size_t)t->ndims + (size_t)d;
        if (t->extra_set[k])
            return t->extra_vals[k];
    }
    return t->dims[d];
}

int task_set_dim(Task *t, const char *name, int64_t v, EvoErr *err)
{
    int d = find_name(t->dim_names, t->ndims, name);
    if (d < 0) {
        const char *near = expr_closest(name, (const char *const *)t->dim_names, t->ndims);
        return err_set(err, "unknown dim '%s'%s%s%s", name, near ? " (did you mean '" : "", near ? near : "",
                       near ? "'?)" : "");
    }
    t->dims[d] = v;
    return 0;
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
    int i = param_find(t, name);
    if (i < 0) {
        const char *names[256];
        int n = t->nparams < 256 ? t->nparams : 256;
        for (int k = 0; k < n; k++)
            names[k] = t->params[k].name;
        const char *near = expr_closest(name, names, n);
        return err_set(err, "unknown param '%s'%s%s%s", name, near ? " (did you mean '" : "", near ? near : "",
                       near ? "'?)" : "");
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
                err_set(err, "param '%s': expected an integer, got %s", key, json_type_name(v));
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

/* ---- evaluation ------------------------------------------------------- */

typedef struct Env {
    const Task       *t;
    const int64_t    *vals;    /* may be NULL (reference rendering) */
    int               shape;
    const DeviceInfo *dev;     /* may be NULL */
    ExprValue        *dvals;   /* derived values: small[] or the heap */
    int               nready;  /* derived values computed so far */
    ExprValue         small[32];
    double            devv[MAX_DEVICE_VARS]; /* device facts by device_var_names index */
} Env;

static int env_lookup(void *ctx, int slot, ExprValue *out)
{
    Env *env = ctx;
    int idx = slot & 0xffff;
    memset(out, 0, sizeof(*out));
    switch (slot < 0 ? 0 : slot >> 16) {
    case SLOT_PARAM:
        if (!env->vals)
            return 0;
        out->i = env->vals[idx];
        return 1;
    case SLOT_DIM:
        out->i = task_dim_value(env->t, env->shape, idx);
        return 1;
    case SLOT_DERIVED:
        if (idx >= env->nready)
            return 0;
        *out = env->dvals[idx];
        return 1;
    case SLOT_DEVICE:
        if (!env->dev)
            return 0;
        out->i = (int64_t)env->devv[idx];
        return 1;
    default:
        return 0;
    }
}

/* Rewrite err as "<file>: <path>: <old message> (shape s: label)". */
static int rt_fail(const Env *env, const char *path, EvoErr *err)
{
    if (err) {
        char old[sizeof(err->msg)];
        char *label = task_shape_label(env->t, env->shape);
        memcpy(old, err->msg, sizeof(old));
        if (snprintf(err->msg, sizeof(err->msg), "%s: %s: %s (shape %d: %s)", env->t->path, path, old, env->shape,
                     label) >= (int)sizeof(err->msg))
            err->msg[sizeof(err->msg) - 1] = 0;
        free(label);
    }
    return -1;
}

static int eval_x(Env *env, const TExpr *x, ExprValue *out, EvoErr *err)
{
    if (expr_eval_slots(x->e, env_lookup, env, out, err) < 0)
        return rt_fail(env, x->path, err);
    return 0;
}

/* Evaluate x as an integer (an integral float is accepted) in [lo, hi]. */
static int eval_int(Env *env, const TExpr *x, int64_t lo, int64_t hi, int64_t *out, EvoErr *err)
{
    ExprValue v;
    char buf[48];
    if (eval_x(env, x, &v, err) < 0)
        return -1;
    if (v.is_float) {
        if (!(v.f == floor(v.f) && v.f >= -9.2e18 && v.f <= 9.2e18)) {
            err_set(err, "expected an integer, got %s", expr_value_str(v, buf, sizeof(buf)));
            return rt_fail(env, x->path, err);
        }
        v.i = (int64_t)v.f;
    }
    if (v.i < lo || v.i > hi) {
        err_set(err, "value %lld is out of range (%lld to %lld)", (long long)v.i, (long long)lo, (long long)hi);
        return rt_fail(env, x->path, err);
    }
    *out = v.i;
    return 0;
}

/* Start an Env for a configuration: device facts are looked up once. */
static void env_open(Env *env, const Task *t, const int64_t *vals, const DeviceInfo *dev)
{
    env->t = t;
    env->vals = vals;
    env->shape = 0;
    env->dev = dev;
    env->nready = 0;
    for (int k = 0; dev && device_var_names[k] && k < MAX_DEVICE_VARS; k++)
        if (!device_var(dev, device_var_names[k], &env->devv[k]))
            env->devv[k] = 0;
    env->dvals = t->nderived <= (int)EVO_ARRAY_LEN(env->small) ? env->small
                                                                : xcalloc((size_t)t->nderived, sizeof(ExprValue));
}

/* Switch the Env to a shape: evaluate the derived names in order. */
static int env_shape(Env *env, int shape, EvoErr *err)
{
    const Task *t = env->t;
    env->shape = shape;
    env->nready = 0;
    for (int i = 0; i < t->nderived; i++) {
        if (eval_x(env, &t->derived[i].x, &env->dvals[i], err) < 0)
            return -1;
        env->nready++;
    }
    return 0;
}

static void env_done(Env *env)
{
    if (env->dvals != env->small)
        free(env->dvals);
    env->dvals = NULL;
}

int task_check(const Task *t, const int64_t *vals, const DeviceInfo *dev, char **why, EvoErr *err)
{
    if (why)
        *why = NULL;
    for (int i = 0; i < t->nparams; i++)
        if (task_param_find(t, i, vals[i]) < 0) {
            if (why)
                *why = xasprintf("param %s = %lld is not one of its values", t->params[i].name, (long long)vals[i]);
            return 0;
        }
    Env env;
    int rc = 0;
    env_open(&env, t, vals, dev);
    for (int s = 0; rc == 0 && s < task_nshapes(t); s++) {
        rc = env_shape(&env, s, err);
        for (int c = 0; rc == 0 && c < t->ncons; c++) {
            ExprValue v;
            const TConstraint *tc = &t->cons[c];
            if (eval_x(&env, &tc->x, &v, err) < 0) {
                rc = -1;
                break;
            }
            if (expr_value_true(v))
                continue;
            if (why) {
                char *ex = expr_explain_slots(tc->x.e, env_lookup, &env);
                char *label = task_shape_label(t, s);
                *why = xasprintf("%s '%s'%s%s%s fails on shape %d (%s)%s%s", tc->x.path, expr_text(tc->x.e),
                                 tc->why ? " (" : "", tc->why ? tc->why : "", tc->why ? ")" : "", s, label,
                                 ex ? ": " : "", ex ? ex : "");
                free(label);
                free(ex);
            }
            rc = 1;
        }
    }
    env_done(&env);
    return rc < 0 ? -1 : rc == 1 ? 0 : 1;
}

/* Evaluate a tensor_map argument and check that it stays inside its
 * buffer and meets the driver's rules (strides multiples of 16 bytes, box
 * at most 256 per dimension, the inner box row a multiple of 16 bytes and
 * within the swizzle span). */
static int resolve_tmap(Env *env, const TTmap *tm, const PlanBuffer *b, PlanTmap *out, EvoErr *err)
{
    int64_t v;
    uint64_t es = (uint64_t)dtype_size(b->dtype), end = es, row;
    memset(out, 0, sizeof(*out));
    out->rank = tm->rank;
    out->swizzle = tm->swizzle;
    out->l2_promotion = tm->l2;
    out->oob_nan = tm->oob_nan;
    for (int d = 0; d < tm->rank; d++) {
        if (eval_int(env, &tm->dims[d], 1, (int64_t)1 << 32, &v, err) < 0)
            return -1;
        out->dims[d] = (uint64_t)v;
        if (eval_int(env, &tm->box[d], 1, 256, &v, err) < 0)
            return -1;
        out->box[d] = (uint32_t)v;
        out->elem_strides[d] = 1;
        if (tm->nestr) {
            if (eval_int(env, &tm->estr[d], 1, 8, &v, err) < 0)
                return -1;
            out->elem_strides[d] = (uint32_t)v;
        }
    }
    for (int d = 1; d < tm->rank; d++) {
        if (tm->nstrides) {
            if (eval_int(env, &tm->strides[d - 1], 16, (int64_t)1 << 40, &v, err) < 0)
                return -1;
            out->strides[d - 1] = (uint64_t)v;
        } else {
            out->strides[d - 1] = (d == 1 ? out->dims[0] * es : out->strides[d - 2] * out->dims[d - 1]);
        }
        if (out->strides[d - 1] % 16) {
            err_set(err, "tensor_map stride %d is %llu bytes: must be a multiple of 16", d - 1,
                    (unsigned long long)out->strides[d - 1]);
            return rt_fail(env, tm->path, err);
        }
    }
    end += (out->dims[0] - 1) * es;
    for (int d = 1; d < tm->rank; d++)
        end += (out->dims[d] - 1) * out->strides[d - 1];
    if (end > b->count * es) {
        err_set(err, "tensor_map reaches byte %llu of buffer '%s', which holds %llu bytes",
                (unsigned long long)end, b->name, (unsigned long long)(b->count * es));
        return rt_fail(env, tm->path, err);
    }
    row = out->box[0] * es;
    if (row % 16 || (out->swizzle && row > (16u << out->swizzle))) {
        err_set(err, "tensor_map box row is %llu bytes: it must be a multiple of 16%s", (unsigned long long)row,
                out->swizzle ? " and at most the swizzle span" : "");
        return rt_fail(env, tm->path, err);
    }
    return 0;
}

static int resolve_launches(Env *env, const TLaunch *ls, int n, Plan *plan, int is_ref, PlanLaunch **out,
                            int *nout, EvoErr *err)
{
    *out = xcalloc((size_t)n + 1, sizeof(PlanLaunch));
    *nout = 0;
    for (int i = 0; i < n; i++) {
        const TLaunch *l = &ls[i];
        if (l->when.e) {
            ExprValue v;
            if (eval_x(env, &l->when, &v, err) < 0)
                return -1;
            if (!expr_value_true(v))
                continue;
        }
        PlanLaunch *pl = &(*out)[(*nout)++];
        pl->entry = xstrdup(l->entry);
        pl->args = xcalloc((size_t)l->nargs + 1, sizeof(PlanArg));
        pl->nargs = l->nargs;
        for (int k = 0; k < 3; k++) {
            int64_t g = 1, b = 1;
            if (l->grid[k].e && eval_int(env, &l->grid[k], 1, UINT_MAX, &g, err) < 0)
                return -1;
            if (l->block[k].e && eval_int(env, &l->block[k], 1, UINT_MAX, &b, err) < 0)
                return -1;
            pl->grid[k] = (unsigned)g;
            pl->block[k] = (unsigned)b;
        }
        int64_t smem = 0;
        if (l->smem.e && eval_int(env, &l->smem, 0, UINT_MAX, &smem, err) < 0)
            return -1;
        pl->smem = (unsigned)smem;
        for (int k = 0; k < l->nargs; k++) {
            const TArg *a = &l->args[k];
            PlanArg *pa = &pl->args[k];
            ExprValue v;
            pa->kind = a->kind;
            pa->buffer = -1;
            switch (a->kind) {
            case ARG_BUFFER:
            case ARG_TMAP:
                pa->buffer = a->buffer;
                if (is_ref)
                    plan->buffers[a->buffer].for_ref = 1;
                else
                    plan->buffers[a->buffer].for_cand = 1;
                if (a->kind == ARG_TMAP && resolve_tmap(env, a->tm, &plan->buffers[a->buffer], &pa->tmap, err) < 0)
                    return -1;
                break;
            case ARG_I32:
                if (eval_int(env, &a->x, INT32_MIN, INT32_MAX, &pa->i, err) < 0)
                    return -1;
                break;
            case ARG_I64:
                if (eval_int(env, &a->x, INT64_MIN, INT64_MAX, &pa->i, err) < 0)
                    return -1;
                break;
            default:
                if (eval_x(env, &a->x, &v, err) < 0)
                    return -1;
                pa->f = expr_value_f(v);
                break;
            }
        }
    }
    return 0;
}

int task_resolve(const Task *t, const int64_t *vals, int shape, const DeviceInfo *dev, Plan *out, EvoErr *err)
{
    Env env = {0};
    memset(out, 0, sizeof(*out));
    if (shape < 0 || shape >= task_nshapes(t))
        return err_set(err, "%s: shape %d does not exist (the task has %d)", t->path, shape, task_nshapes(t));
    env_open(&env, t, vals, dev);
    if (env_shape(&env, shape, err) < 0)
        goto fail;
    out->shape_label = task_shape_label(t, shape);
    out->is_bench = shape == 0;
    out->buffers = xcalloc((size_t)t->nbufs, sizeof(PlanBuffer));
    out->nbuffers = t->nbufs;
    for (int i = 0; i < t->nbufs; i++) {
        const TBuffer *b = &t->bufs[i];
        PlanBuffer *pb = &out->buffers[i];
        uint64_t count = 1;
        pb->name = xstrdup(b->name);
        for (int k = 0; k < b->nshape; k++) {
            int64_t d;
            if (eval_int(&env, &b->shape[k], 0, INT64_MAX, &d, err) < 0)
                goto fail;
            if (__builtin_mul_overflow(count, (uint64_t)d, &count)) {
                err_set(err, "element count overflows");
                rt_fail(&env, b->shape[k].path, err);
                goto fail;
            }
        }
        pb->dtype = b->dtype;
        pb->count = count;
        pb->role = b->role;
        pb->init = b->init;
        pb->a = b->a;
        pb->b = b->b;
        pb->seed_salt = task_seed_salt(b->name);
        pb->atol = b->atol >= 0 ? b->atol : t->atol;
        pb->rtol = b->rtol >= 0 ? b->rtol : t->rtol;
    }
    if (resolve_launches(&env, t->launches, t->nlaunches, out, 0, &out->launches, &out->nlaunches, err) < 0 ||
        resolve_launches(&env, t->ref_launches, t->nref_launches, out, 1, &out->ref_launches, &out->nref_launches,
                         err) < 0)
        goto fail;
    ExprValue v;
    if (t->flops.e) {
        if (eval_x(&env, &t->flops, &v, err) < 0)
            goto fail;
        out->flops = expr_value_f(v);
    }
    if (t->bytes.e) {
        if (eval_x(&env, &t->bytes, &v, err) < 0)
            goto fail;
        out->bytes = expr_value_f(v);
    }
    if (t->min_ctas.e) {
        int64_t m;
        if (eval_int(&env, &t->min_ctas, 0, INT_MAX, &m, err) < 0)
            goto fail;
        out->min_ctas = (int)m;
    }
    env_done(&env);
    return 0;
fail:
    env_done(&env);
    plan_free(out);
    return -1;
}

/* ---- rendering -------------------------------------------------------- */

int task_render(const Task *t, const int64_t *vals, int shape, int reference, char **src, EvoErr *err)
{
    int np = reference ? 0 : t->nparams, n = np + t->ncompile;
    const char **names = xcalloc((size_t)n + 1, sizeof(*names));
    int64_t *values = xcalloc((size_t)n + 1, sizeof(*values));
    int rc;
    *src = NULL;
    if (shape < 0 || shape >= task_nshapes(t)) {
        rc = err_set(err, "%s: shape %d does not exist (the task has %d)", t->path, shape, task_nshapes(t));
        goto done;
    }
    for (int i = 0; i < np; i++) {
        names[i] = t->params[i].name;
        values[i] = vals[i];
    }
    for (int i = 0; i < t->ncompile; i++) {
        names[np + i] = t->dim_names[t->compile_dims[i]];
        values[np + i] = task_dim_value(t, shape, t->compile_dims[i]);
    }
    rc = template_render(reference ? t->ref_text : t->template_text, reference ? t->ref_path : t->template_path,
                         names, values, n, src, err);
done:
    free(names);
    free(values);
    return rc;
}

/*
 * task: the task spec loader. See task.h for the contract and
 * templates/README.md for the format.
 *
 * Loading walks the JSON once, section by section, with the JSON path of
 * the current node in a small buffer so that every error can name it
 * (helpers in task_json.c, launch plans in task_launch.c). All expressions
 * are parsed at load time (kept as Expr with their path) and their
 * variable references checked against the names visible there; evaluation
 * happens later, per configuration and shape (task_resolve.c).
 */
#include "task/task.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "task/confine.h"
#include "task/task_priv.h"
#include "task/template.h"

/* ---- sections --------------------------------------------------------- */

static int load_params(Loader *L, json_t *root)
{
    Task *t = L->t;
    json_t *obj, *pv;
    const char *key;
    char p[PATH_MAX_LEN], q[PATH_MAX_LEN], r[PATH_MAX_LEN];
    static const char *const keys[] = {"values", "default", NULL};
    if (tl_get_field(L, root, "", "params", 1, JSON_OBJECT, &obj) < 0)
        return -1;
    if (json_object_size(obj) == 0)
        return tl_err(L, "params", "no params");
    if (tl_check_count(L, "params", json_object_size(obj), TASK_MAX_ITEMS) < 0)
        return -1;
    t->params = xcalloc(json_object_size(obj), sizeof(*t->params));
    json_object_foreach(obj, key, pv) {
        tl_subpath(p, "params", key);
        if (tl_check_new_name(L, p, key) < 0)
            return -1;
        if (!json_is_object(pv))
            return tl_err(L, p, "expected an object, got %s", tl_json_type(pv));
        if (tl_check_keys(L, pv, p, keys) < 0)
            return -1;
        TParam *pr = &t->params[t->nparams++];
        pr->name = xstrdup(key);
        tl_name_add(t, pr->name, TN_PARAM, t->nparams - 1);
        json_t *vals, *def, *v;
        size_t i;
        if (tl_get_list(L, pv, p, "values", &vals) < 0)
            return -1;
        tl_subpath(q, p, "values");
        pr->values = xcalloc(json_array_size(vals), sizeof(int64_t));
        json_array_foreach(vals, i, v) {
            tl_idxpath(r, q, (int)i);
            int64_t x = 0;
            if (tl_get_int(L, v, r, &x) < 0)
                return -1;
            pr->values[pr->nvalues++] = x;
        }
        pr->order = tl_sort_index(pr->values, pr->nvalues, sizeof(int64_t), tl_cmp_i64);
        int rep = tl_first_repeat_sorted(pr->values, pr->order, pr->nvalues, sizeof(int64_t), tl_cmp_i64);
        if (rep >= 0) {
            tl_idxpath(r, q, rep);
            return tl_err(L, r, "duplicate value %lld", (long long)pr->values[rep]);
        }
        if (tl_get_field(L, pv, p, "default", 1, -1, &def) < 0)
            return -1;
        tl_subpath(q, p, "default");
        int64_t d;
        if (tl_get_int(L, def, q, &d) < 0)
            return -1;
        pr->def = task_param_find(t, t->nparams - 1, d);
        if (pr->def < 0)
            return tl_err(L, q, "%lld is not one of the values", (long long)d);
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
    EvoErr e;
    if (tl_get_field(L, root, "", "dims", 1, JSON_OBJECT, &obj) < 0)
        return -1;
    size_t n = json_object_size(obj);
    if (tl_check_count(L, "dims", n, TASK_MAX_ITEMS) < 0)
        return -1;
    t->dim_names = xcalloc(n + 1, sizeof(char *));
    t->dims = xcalloc(n + 1, sizeof(int64_t));
    t->dim_follow = xcalloc(n + 1, sizeof(int));
    json_object_foreach(obj, key, v) {
        tl_subpath(p, "dims", key);
        if (tl_check_new_name(L, p, key) < 0)
            return -1;
        t->dim_follow[t->ndims] = -1;
        if (json_is_string(v)) {   /* the name of an earlier dim: takes its value (HKV: "H") */
            int d = tl_dim_index(t, json_string_value(v), &e);
            if (d < 0)
                return tl_err(L, p, "%s (a dim's value is an integer or the name of a dim above it)", e.msg);
            t->dim_follow[t->ndims] = d;
            t->dims[t->ndims] = t->dims[d];
        } else if (tl_get_int(L, v, p, &t->dims[t->ndims]) < 0) {
            return -1;
        }
        t->dim_names[t->ndims++] = xstrdup(key);
        tl_name_add(t, t->dim_names[t->ndims - 1], TN_DIM, t->ndims - 1);
    }
    /* compile_dims */
    if (tl_get_field(L, root, "", "compile_dims", 0, JSON_ARRAY, &arr) < 0)
        return -1;
    if (arr) {
        if (tl_check_count(L, "compile_dims", json_array_size(arr), TASK_MAX_ITEMS) < 0)
            return -1;
        t->compile_dims = xcalloc(json_array_size(arr) + 1, sizeof(int));
        unsigned char *seen = xcalloc((size_t)t->ndims + 1, 1);
        json_array_foreach(arr, i, v) {
            tl_idxpath(p, "compile_dims", (int)i);
            if (!json_is_string(v)) {
                free(seen);
                return tl_err(L, p, "expected a string, got %s", tl_json_type(v));
            }
            int d = tl_dim_index(t, json_string_value(v), &e);
            if (d < 0 || seen[d]) {
                free(seen);
                return d < 0 ? tl_err(L, p, "%s", e.msg) : tl_err(L, p, "duplicate dim '%s'", t->dim_names[d]);
            }
            seen[d] = 1;
            t->compile_dims[t->ncompile++] = d;
        }
        free(seen);
    }
    /* shapes */
    if (tl_get_field(L, root, "", "shapes", 0, JSON_ARRAY, &arr) < 0)
        return -1;
    if (arr) {
        size_t ns = json_array_size(arr);
        if (tl_check_count(L, "shapes", ns, TASK_MAX_SHAPES) < 0)
            return -1;
        t->extra_vals = xcalloc(ns * (size_t)t->ndims + 1, sizeof(int64_t));
        t->extra_set = xcalloc(ns * (size_t)t->ndims + 1, 1);
        json_t *sh;
        json_array_foreach(arr, i, sh) {
            char q[PATH_MAX_LEN];
            tl_idxpath(p, "shapes", (int)i);
            if (!json_is_object(sh))
                return tl_err(L, p, "expected an object, got %s", tl_json_type(sh));
            json_object_foreach(sh, key, v) {
                tl_subpath(q, p, key);
                if (key[0] == '_')
                    continue;
                int d = tl_dim_index(t, key, &e);
                if (d < 0)
                    return tl_err(L, q, "%s", e.msg);
                if (tl_get_int(L, v, q, &t->extra_vals[i * (size_t)t->ndims + (size_t)d]) < 0)
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
    if (tl_get_field(L, root, "", "derived", 0, JSON_OBJECT, &obj) < 0)
        return -1;
    if (!obj)
        return 0;
    if (tl_check_count(L, "derived", json_object_size(obj), TASK_MAX_ITEMS) < 0)
        return -1;
    t->derived = xcalloc(json_object_size(obj) + 1, sizeof(*t->derived));
    /* names first, so that a reference to a later one can say so */
    json_object_foreach(obj, key, v) {
        tl_subpath(p, "derived", key);
        if (tl_check_new_name(L, p, key) < 0)
            return -1;
        t->derived[t->nderived++].name = xstrdup(key);
        tl_name_add(t, t->derived[t->nderived - 1].name, TN_DERIVED, t->nderived - 1);
    }
    int i = 0;
    json_object_foreach(obj, key, v) {
        tl_subpath(p, "derived", key);
        if (tl_parse_texpr(L, v, p, i, 0, &t->derived[i].x) < 0)
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
    if (tl_get_field(L, root, "", "constraints", 0, JSON_ARRAY, &arr) < 0)
        return -1;
    if (!arr)
        return 0;
    if (tl_check_count(L, "constraints", json_array_size(arr), TASK_MAX_ITEMS) < 0)
        return -1;
    t->cons = xcalloc(json_array_size(arr) + 1, sizeof(*t->cons));
    json_array_foreach(arr, i, v) {
        tl_idxpath(p, "constraints", (int)i);
        TConstraint *c = &t->cons[t->ncons++];
        json_t *e = v;
        if (json_is_object(v)) {
            if (tl_check_keys(L, v, p, keys) < 0 || tl_get_field(L, v, p, "expr", 1, -1, &e) < 0 ||
                tl_get_string(L, v, p, "why", 0, &c->why) < 0)
                return -1;
            tl_subpath(q, p, "expr");
            if (tl_parse_texpr(L, e, q, SCOPE_ALL, 0, &c->x) < 0)
                return -1;
            free(c->x.path); /* errors name the constraint, not its expr field */
            c->x.path = xstrdup(p);
        } else if (tl_parse_texpr(L, e, p, SCOPE_ALL, 0, &c->x) < 0) {
            return -1;
        }
    }
    return 0;
}

static int load_buffers(Loader *L, json_t *root)
{
    Task *t = L->t;
    json_t *arr, *v, *x;
    size_t i, j;
    char p[PATH_MAX_LEN], q[PATH_MAX_LEN], r[PATH_MAX_LEN];
    static const char *const keys[] = {"name", "dtype", "shape", "role", "init", "atol", "rtol", NULL};
    static const char *const roles[] = {"input", "output", "scratch", NULL};
    if (tl_get_list(L, root, "", "buffers", &arr) < 0)
        return -1;
    if (tl_check_count(L, "buffers", json_array_size(arr), TASK_MAX_ITEMS) < 0)
        return -1;
    t->bufs = xcalloc(json_array_size(arr), sizeof(*t->bufs));
    json_array_foreach(arr, i, v) {
        char *s = NULL;
        tl_idxpath(p, "buffers", (int)i);
        if (!json_is_object(v))
            return tl_err(L, p, "expected an object, got %s", tl_json_type(v));
        if (tl_check_keys(L, v, p, keys) < 0 || tl_get_string(L, v, p, "name", 1, &s) < 0)
            return -1;
        tl_subpath(q, p, "name");
        if (tl_check_new_name(L, q, s) < 0) {
            free(s);
            return -1;
        }
        TBuffer *b = &t->bufs[t->nbufs++];
        b->name = s;
        tl_name_add(t, b->name, TN_BUFFER, t->nbufs - 1);
        b->dtype.dim = b->atol.dim = b->rtol.dim = -1;
        b->init.s.kind = INIT_NORMAL;
        b->init.s.b = 1;
        b->init.row_dim = -1;
        tl_subpath(q, p, "dtype");
        if (tl_get_field(L, v, p, "dtype", 1, -1, &x) < 0 || tl_load_choice(L, x, q, 1, &b->dtype) < 0)
            return -1;
        if (tl_get_string(L, v, p, "role", 1, &s) < 0)
            return -1;
        int k;
        for (k = 0; roles[k]; k++)
            if (strcmp(roles[k], s) == 0)
                break;
        if (!roles[k]) {
            tl_subpath(q, p, "role");
            tl_err(L, q, "unknown role '%s' (known: input output scratch)", s);
            free(s);
            return -1;
        }
        free(s);
        b->role = (BufRole)k;
        if (tl_get_list(L, v, p, "shape", &x) < 0)
            return -1;
        tl_subpath(q, p, "shape");
        b->shape = xcalloc(json_array_size(x), sizeof(TExpr));
        b->shape_src = xcalloc(json_array_size(x), sizeof(char *));
        json_t *e;
        json_array_foreach(x, j, e) {
            tl_idxpath(r, q, (int)j);
            if (json_is_string(e))
                b->shape_src[j] = xstrdup(json_string_value(e));
            b->nshape++;
            if (tl_parse_texpr(L, e, r, SCOPE_ALL, 0, &b->shape[j]) < 0)
                return -1;
        }
        if ((x = json_object_get(v, "init"))) {
            tl_subpath(q, p, "init");
            if (b->role != ROLE_INPUT)
                return tl_err(L, q, "only inputs have an init");
            if (tl_load_init(L, x, q, b, &b->init) < 0)
                return -1;
        } else if (b->role != ROLE_INPUT) {
            b->init.s.kind = INIT_ZERO;
            b->init.s.b = 0;
        }
        const char *tk[2] = {"atol", "rtol"};
        TChoice *td[2] = {&b->atol, &b->rtol};
        for (int m = 0; m < 2; m++) {
            if (!(x = json_object_get(v, tk[m])))
                continue;
            tl_subpath(q, p, tk[m]);
            if (b->role != ROLE_OUTPUT)
                return tl_err(L, q, "only outputs have a tolerance");
            if (tl_load_choice(L, x, q, 0, td[m]) < 0)
                return -1;
        }
    }
    return 0;
}


/* Read a template or reference source, with its local includes inlined
 * (template_expand): *text is the one source that is rendered. */
static int load_source(Loader *L, const char *p, const char *rel, char **path, char **text)
{
    EvoErr e;
    char *raw = NULL;
    *path = path_join(L->t->dir, rel);
    /* inside the spec's directory (or one --allow-path names): confine.h */
    char *real = confine_resolve(L->t->dir, NULL, rel, &e);
    if (!real)
        return tl_err(L, p, "%s", e.msg);
    if (file_read(real, &raw, NULL, &e) < 0) {
        free(real);
        return tl_err(L, p, "cannot read '%s': %s", rel, e.msg);
    }
    char *dir = path_dirname(real);
    int rc = template_expand(raw, rel, dir, text, &e);
    free(dir);
    free(real);
    free(raw);
    if (rc == 0)
        rc = confine_scan_includes(*text, rel, &e);
    if (rc)
        return tl_err(L, p, "%s", e.msg);
    return 0;
}

static int load_reference(Loader *L, json_t *root)
{
    Task *t = L->t;
    json_t *obj;
    char *src = NULL;
    int rc = -1;
    static const char *const keys[] = {"source", "entries", "launch", NULL};
    if (tl_get_field(L, root, "", "reference", 1, JSON_OBJECT, &obj) < 0 ||
        tl_check_keys(L, obj, "reference", keys) < 0)
        return -1;
    if (tl_get_string(L, obj, "reference", "source", 1, &src) < 0 ||
        tl_get_name_list(L, obj, "reference", "entries", &t->ref_entries, &t->nref_entries) < 0 ||
        tl_load_launches(L, obj, "reference", t->ref_entries, t->nref_entries, &t->ref_launches,
                         &t->nref_launches) < 0 ||
        load_source(L, "reference.source", src, &t->ref_path, &t->ref_text) < 0)
        goto fail;
    rc = 0;
fail:
    free(src);
    return rc;
}

/* compile.<key>, a byte count from 0 to INT_MAX, into *out (left as it is
 * when absent); -1 with the error set on a bad value */
static int get_byte_limit(Loader *L, json_t *compile, const char *key, int *out)
{
    json_t *v = json_object_get(compile, key);
    char path[64];
    int64_t m;
    if (!v)
        return 0;
    snprintf(path, sizeof(path), "compile.%s", key);
    if (tl_get_int(L, v, path, &m) < 0)
        return -1;
    if (m < 0 || m > INT_MAX)
        return tl_err(L, path, "out of range");
    *out = (int)m;
    return 0;
}

static int load_misc(Loader *L, json_t *root)
{
    Task *t = L->t;
    json_t *obj, *v;
    size_t i;
    char p[PATH_MAX_LEN];
    static const char *const tkeys[] = {"atol", "rtol", NULL};
    static const char *const ckeys[] = {"options", "fast_math", "lineinfo", "max_spill_bytes", "max_stack_bytes",
                                        "arch_specific", NULL};
    static const char *const gkeys[] = {"min_ctas", NULL};
    t->max_spill = t->max_stack = -1;
    if (tl_get_field(L, root, "", "tolerance", 0, JSON_OBJECT, &obj) < 0)
        return -1;
    if (obj && tl_check_keys(L, obj, "tolerance", tkeys) < 0)
        return -1;
    TChoice *tc[2] = {&t->atol, &t->rtol};
    for (int m = 0; m < 2; m++) {
        json_t *def = json_real(1e-2);
        tl_subpath(p, "tolerance", tkeys[m]);
        v = obj ? json_object_get(obj, tkeys[m]) : NULL;
        int rc = tl_load_choice(L, v ? v : def, p, 0, tc[m]);
        json_decref(def);
        if (rc < 0)
            return -1;
    }
    if (tl_opt_texpr(L, root, "", "flops", &t->flops) < 0 || tl_opt_texpr(L, root, "", "bytes", &t->bytes) < 0)
        return -1;
    if (tl_get_field(L, root, "", "compile", 0, JSON_OBJECT, &obj) < 0)
        return -1;
    if (obj) {
        if (tl_check_keys(L, obj, "compile", ckeys) < 0 ||
            tl_get_bool(L, obj, "compile", "fast_math", &t->fast_math) < 0 ||
            tl_get_bool(L, obj, "compile", "lineinfo", &t->lineinfo) < 0 ||
            tl_get_bool(L, obj, "compile", "arch_specific", &t->arch_specific) < 0)
            return -1;
        if (get_byte_limit(L, obj, "max_spill_bytes", &t->max_spill) < 0 ||
            get_byte_limit(L, obj, "max_stack_bytes", &t->max_stack) < 0)
            return -1;
        json_t *arr;
        if (tl_get_field(L, obj, "compile", "options", 0, JSON_ARRAY, &arr) < 0)
            return -1;
        if (arr) {
            t->copts = xcalloc(json_array_size(arr) + 1, sizeof(char *));
            json_array_foreach(arr, i, v) {
                tl_idxpath(p, "compile.options", (int)i);
                if (!json_is_string(v))
                    return tl_err(L, p, "expected a string, got %s", tl_json_type(v));
                EvoErr e;
                if (confine_check_option(json_string_value(v), &e) < 0)
                    return tl_err(L, p, "%s", e.msg);
                t->copts[t->ncopts++] = xstrdup(json_string_value(v));
            }
        }
    }
    if (tl_get_field(L, root, "", "gate", 0, JSON_OBJECT, &obj) < 0)
        return -1;
    if (obj) {
        if (tl_check_keys(L, obj, "gate", gkeys) < 0)
            return -1;
        if (tl_opt_texpr(L, obj, "gate", "min_ctas", &t->min_ctas) < 0)
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
        "compile_dims", "shapes", "buffers", "profiles", "launch", "reference", "tolerance", "flops", "bytes",
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
        tl_err(&L, "", "expected a JSON object at the top level, got %s", tl_json_type(root));
        goto fail;
    }
    if (tl_check_keys(&L, root, "", keys) < 0 || tl_check_todo(&L, root) < 0)
        goto fail;
    for (int i = 0; required[i]; i++)
        if (!json_object_get(root, required[i])) {
            tl_err(&L, required[i], "missing required field");
            goto fail;
        }
    if (tl_get_string(&L, root, "", "name", 1, &t->name) < 0 ||
        tl_get_string(&L, root, "", "description", 0, &t->description) < 0 ||
        tl_get_string(&L, root, "", "template", 1, &tpl) < 0 ||
        tl_get_name_list(&L, root, "", "entries", &t->entries, &t->nentries) < 0 ||
        load_params(&L, root) < 0 || load_dims(&L, root) < 0 || load_derived(&L, root) < 0 ||
        load_constraints(&L, root) < 0 || load_buffers(&L, root) < 0 || tl_load_profiles(&L, root) < 0 ||
        tl_load_launches(&L, root, "", t->entries, t->nentries, &t->launches, &t->nlaunches) < 0 ||
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
    tl_names_free(t);
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
        free(t->params[i].order);
    }
    free(t->params);
    for (int i = 0; i < t->nderived; i++) {
        free(t->derived[i].name);
        tl_texpr_free(&t->derived[i].x);
    }
    free(t->derived);
    for (int i = 0; i < t->ncons; i++) {
        tl_texpr_free(&t->cons[i].x);
        free(t->cons[i].why);
    }
    free(t->cons);
    strv_free(t->dim_names, t->ndims);
    free(t->dims);
    free(t->dim_follow);
    free(t->compile_dims);
    free(t->extra_vals);
    free(t->extra_set);
    for (int i = 0; i < t->nbufs; i++) {
        free(t->bufs[i].name);
        for (int k = 0; k < t->bufs[i].nshape; k++) {
            tl_texpr_free(&t->bufs[i].shape[k]);
            if (t->bufs[i].shape_src)
                free(t->bufs[i].shape_src[k]);
        }
        free(t->bufs[i].shape);
        free(t->bufs[i].shape_src);
        tl_choice_free(&t->bufs[i].dtype);
        tl_choice_free(&t->bufs[i].atol);
        tl_choice_free(&t->bufs[i].rtol);
    }
    free(t->bufs);
    tl_profiles_free(t);
    tl_launches_free(t->launches, t->nlaunches);
    tl_launches_free(t->ref_launches, t->nref_launches);
    tl_texpr_free(&t->flops);
    tl_texpr_free(&t->bytes);
    tl_texpr_free(&t->min_ctas);
    tl_choice_free(&t->atol);
    tl_choice_free(&t->rtol);
    strv_free(t->copts, t->ncopts);
    free(t);
    *pt = NULL;
}

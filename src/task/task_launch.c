/*
 * task_launch.c: the launch plans of a task spec, as the loader reads
 * them: `launch` and `reference.launch`, each an entry with its grid,
 * block, shared memory, `when` and arguments (buffers, scalars typed
 * {"i32": e} ..., and tensor maps; a typed scalar or a tensor map may
 * carry a `when` of its own, and is passed only where it holds). Everything
 * is kept as expressions; the resolver (task_resolve.c) evaluates them per
 * configuration and shape.
 */
#include "task/task_priv.h"

#include <stdlib.h>
#include <string.h>

/* A list of 1..max expressions at p into x[]; *n gets the count. */
static int load_exprs(Loader *L, json_t *v, const char *p, int min, int max, TExpr *x, int *n)
{
    char q[PATH_MAX_LEN];
    if (!json_is_array(v) || (int)json_array_size(v) < min || (int)json_array_size(v) > max)
        return tl_err(L, p, "expected an array of %d to %d expressions", min, max);
    *n = (int)json_array_size(v);
    for (int i = 0; i < *n; i++) {
        tl_idxpath(q, p, i);
        if (tl_parse_texpr(L, json_array_get(v, (size_t)i), q, SCOPE_ALL, 0, &x[i]) < 0)
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
        return tl_err(L, p, "expected an object {\"buffer\", \"dims\", \"box\", ...}");
    if (tl_check_keys(L, v, p, keys) < 0)
        return -1;
    tl_subpath(q, p, "buffer");
    x = json_object_get(v, "buffer");
    if (!json_is_string(x) || (a->buffer = tl_buffer_find(L->t, json_string_value(x))) < 0)
        return tl_err(L, q, "expected the name of a buffer");
    tl_subpath(q, p, "dims");
    if (load_exprs(L, json_object_get(v, "dims"), q, 1, TMAP_MAX_RANK, tm->dims, &tm->rank) < 0)
        return -1;
    tl_subpath(q, p, "box");
    if (load_exprs(L, json_object_get(v, "box"), q, tm->rank, tm->rank, tm->box, &n) < 0)
        return -1;
    if ((x = json_object_get(v, "strides"))) {
        tl_subpath(q, p, "strides");
        if (tm->rank < 2)
            return tl_err(L, q, "a rank-1 map has no strides");
        if (load_exprs(L, x, q, tm->rank - 1, tm->rank - 1, tm->strides, &tm->nstrides) < 0)
            return -1;
    }
    if ((x = json_object_get(v, "element_strides"))) {
        tl_subpath(q, p, "element_strides");
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
            tl_subpath(q, p, what[k]);
            if (!json_is_string(x) || (*dst[k] = tmap_name_index(names[k], json_string_value(x))) < 0) {
                StrBuf sb = {0};
                for (int i = 0; names[k][i]; i++)   /* each list ends at its NULL */
                    sb_printf(&sb, "%s%s", i ? ", " : "", names[k][i]);
                if (json_is_string(x))
                    tl_err(L, q, "expected one of %s (got \"%.64s\")", sb.s, json_string_value(x));
                else
                    tl_err(L, q, "expected one of %s (got %s)", sb.s, tl_json_type(x));
                sb_free(&sb);
                return -1;
            }
        }
    }
    return 0;
}

static int load_arg(Loader *L, json_t *v, const char *p, TArg *a)
{
    Task *t = L->t;
    a->buffer = -1;
    /* an object's "when" first: the rest is one kind key */
    size_t nkeys = json_is_object(v) ? json_object_size(v) : 0;
    if (nkeys && json_object_get(v, "when")) {
        if (tl_opt_texpr(L, v, p, "when", &a->when) < 0)
            return -1;
        nkeys--;
    }
    if (json_is_object(v) && json_object_get(v, "tensor_map")) {
        char q[PATH_MAX_LEN];
        if (nkeys != 1)
            return tl_err(L, p, "a tensor_map argument is an object with the key \"tensor_map\" (and \"when\")");
        tl_subpath(q, p, "tensor_map");
        return load_tmap(L, json_object_get(v, "tensor_map"), q, a);
    }
    if (json_is_string(v) && (a->buffer = tl_buffer_find(t, json_string_value(v))) >= 0) {
        a->kind = ARG_BUFFER;
        return 0;
    }
    if (json_is_real(v))
        return tl_err(L, p, "a bare number argument must be an integer; write {\"f32\": %g} for a float",
                      json_real_value(v));
    if (json_is_object(v)) {
        static const char *const kinds[] = {"i32", "i64", "f32", "f64", "when", NULL};
        static const ArgKind kk[] = {ARG_I32, ARG_I64, ARG_F32, ARG_F64};
        const char *key;
        json_t *e;
        char q[PATH_MAX_LEN];
        if (nkeys != 1)
            return tl_err(L, p, "expected one of {\"i32\": e}, {\"i64\": e}, {\"f32\": e}, {\"f64\": e}, "
                        "{\"tensor_map\": {...}}, each with an optional \"when\": e");
        if (tl_check_keys(L, v, p, kinds) < 0)
            return -1;
        json_object_foreach(v, key, e) {
            if (strcmp(key, "when") == 0)
                continue;
            for (int k = 0; kinds[k]; k++)
                if (strcmp(kinds[k], key) == 0)
                    a->kind = kk[k];
            tl_subpath(q, p, key);
            if (tl_parse_texpr(L, e, q, SCOPE_ALL, 0, &a->x) < 0)
                return -1;
        }
        return 0;
    }
    a->kind = ARG_I32;
    return tl_parse_texpr(L, v, p, SCOPE_ALL, 1, &a->x);
}

/* Parse a dim list (grid or block): 1 to 3 expressions, missing ones 1. */
static int load_dim3(Loader *L, json_t *l, const char *path, const char *key, TExpr out[3])
{
    json_t *arr, *v;
    size_t i;
    char p[PATH_MAX_LEN], q[PATH_MAX_LEN];
    tl_subpath(p, path, key);
    if (tl_get_field(L, l, path, key, 1, JSON_ARRAY, &arr) < 0)
        return -1;
    if (json_array_size(arr) < 1 || json_array_size(arr) > 3)
        return tl_err(L, p, "expected 1 to 3 entries, got %zu", json_array_size(arr));
    json_array_foreach(arr, i, v) {
        tl_idxpath(q, p, (int)i);
        if (tl_parse_texpr(L, v, q, SCOPE_ALL, 0, &out[i]) < 0)
            return -1;
    }
    return 0;
}

int tl_load_launches(Loader *L, json_t *obj, const char *path, char **entries, int nentries,
                     TLaunch **out, int *nout)
{
    json_t *arr, *l, *v, *x;
    size_t i, j;
    char p[PATH_MAX_LEN], q[PATH_MAX_LEN], r[PATH_MAX_LEN];
    static const char *const keys[] = {"entry", "grid", "block", "smem", "args", "when", NULL};
    if (tl_get_list(L, obj, path, "launch", &arr) < 0)
        return -1;
    tl_subpath(p, path, "launch");
    if (tl_check_count(L, p, json_array_size(arr), TASK_MAX_ITEMS) < 0)
        return -1;
    *out = xcalloc(json_array_size(arr), sizeof(TLaunch));
    json_array_foreach(arr, i, l) {
        TLaunch *la = &(*out)[(*nout)++];
        tl_idxpath(q, p, (int)i);
        la->path = xstrdup(q);
        if (!json_is_object(l))
            return tl_err(L, q, "expected an object, got %s", tl_json_type(l));
        if (tl_check_keys(L, l, q, keys) < 0 || tl_get_string(L, l, q, "entry", 1, &la->entry) < 0)
            return -1;
        char why[512];
        char *canon = task_entry_canon(la->entry, why, sizeof(why));
        tl_subpath(r, q, "entry");
        if (!canon)
            return tl_err(L, r, "%s", why);
        free(la->entry);
        la->entry = canon;
        if (tl_find_name(entries, nentries, la->entry) < 0)
            return tl_err(L, r, "'%s' is not declared in %s%sentries", la->entry, path, *path ? "." : "");
        if (load_dim3(L, l, q, "grid", la->grid) < 0 || load_dim3(L, l, q, "block", la->block) < 0)
            return -1;
        if (tl_opt_texpr(L, l, q, "smem", &la->smem) < 0 || tl_opt_texpr(L, l, q, "when", &la->when) < 0)
            return -1;
        if (tl_get_field(L, l, q, "args", 1, JSON_ARRAY, &v) < 0)
            return -1;
        tl_subpath(r, q, "args");
        if (tl_check_count(L, r, json_array_size(v), TASK_MAX_ITEMS) < 0)
            return -1;
        la->args = xcalloc(json_array_size(v) + 1, sizeof(TArg));
        json_array_foreach(v, j, x) {
            char s[PATH_MAX_LEN];
            tl_idxpath(s, r, (int)j);
            la->nargs++;
            if (load_arg(L, x, s, &la->args[j]) < 0)
                return -1;
        }
    }
    return 0;
}

void tl_launches_free(TLaunch *l, int n)
{
    for (int i = 0; i < n; i++) {
        free(l[i].entry);
        free(l[i].path);
        for (int k = 0; k < 3; k++) {
            tl_texpr_free(&l[i].grid[k]);
            tl_texpr_free(&l[i].block[k]);
        }
        tl_texpr_free(&l[i].smem);
        tl_texpr_free(&l[i].when);
        for (int k = 0; k < l[i].nargs; k++) {
            TTmap *tm = l[i].args[k].tm;
            tl_texpr_free(&l[i].args[k].x);
            tl_texpr_free(&l[i].args[k].when);
            for (int d = 0; tm && d < TMAP_MAX_RANK; d++) {
                tl_texpr_free(&tm->dims[d]);
                tl_texpr_free(&tm->box[d]);
                tl_texpr_free(&tm->estr[d]);
                if (d < TMAP_MAX_RANK - 1)
                    tl_texpr_free(&tm->strides[d]);
            }
            if (tm)
                free(tm->path);
            free(tm);
        }
        free(l[i].args);
    }
    free(l);
}

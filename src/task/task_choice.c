/*
 * task_choice.c: values that a dim picks. A buffer's dtype and the
 * tolerances may be written as one value or as {"dim": NAME, "values":
 * [v0, v1, ...]}: on each shape the dim's value i picks values[i]. The
 * attention task's DTYPE (0 fp16, 1 bf16) picks Q, K, V and O's dtype and
 * the tolerance that goes with it. A dtype's dim must be a compile dim (the
 * kernel is compiled for its dtype); every shape's value, and any --dim
 * given later (task_set_dim, defined here), must pick one of the values.
 */
#include "task/task_priv.h"
#include "task/task.h"

#include <stdlib.h>
#include <string.h>

static int load_value(Loader *L, json_t *v, const char *p, int dtype, double *out)
{
    if (!dtype) {
        if (tl_get_number(L, v, p, out) < 0)
            return -1;
        return *out < 0 ? tl_err(L, p, "must not be negative") : 0;
    }
    if (!json_is_string(v))
        return tl_err(L, p, "expected a dtype name, got %s", tl_json_type(v));
    int dt = dtype_parse(json_string_value(v));
    if (dt < 0)
        return tl_err(L, p, "unknown dtype '%s' (known: f16 bf16 f32 i32)", json_string_value(v));
    *out = dt;
    return 0;
}

int tl_load_choice(Loader *L, json_t *v, const char *p, int dtype, TChoice *out)
{
    static const char *const keys[] = {"dim", "values", NULL};
    char q[PATH_MAX_LEN], r[PATH_MAX_LEN];
    json_t *d, *arr, *x;
    size_t i;
    EvoErr e;
    tl_choice_free(out);
    out->path = xstrdup(p);
    out->dim = -1;
    if (!json_is_object(v)) {
        out->v = xcalloc(1, sizeof(double));
        out->n = 1;
        return load_value(L, v, p, dtype, &out->v[0]);
    }
    if (tl_check_keys(L, v, p, keys) < 0 || tl_get_field(L, v, p, "dim", 1, JSON_STRING, &d) < 0 ||
        tl_get_list(L, v, p, "values", &arr) < 0)
        return -1;
    tl_subpath(q, p, "dim");
    if ((out->dim = tl_dim_index(L->t, json_string_value(d), &e)) < 0)
        return tl_err(L, q, "%s", e.msg);
    if (dtype) {
        int k = 0;
        while (k < L->t->ncompile && L->t->compile_dims[k] != out->dim)
            k++;
        if (k == L->t->ncompile)
            return tl_err(L, q, "'%s' picks a dtype, so it must be one of compile_dims (the kernel is compiled for it)",
                          json_string_value(d));
    }
    tl_subpath(q, p, "values");
    if (tl_check_count(L, q, json_array_size(arr), TASK_MAX_ITEMS) < 0)
        return -1;
    out->v = xcalloc(json_array_size(arr), sizeof(double));
    json_array_foreach(arr, i, x) {
        tl_idxpath(r, q, (int)i);
        if (load_value(L, x, r, dtype, &out->v[out->n++]) < 0)
            return -1;
    }
    /* the shapes as written: a later --dim is checked by task_set_dim */
    for (int s = 0; s < task_nshapes(L->t); s++)
        if (tl_choice_at(L->t, out, s, NULL, L->err) < 0)
            return -1;
    return 0;
}

int tl_choice_at(const Task *t, const TChoice *c, int shape, double *out, EvoErr *err)
{
    if (c->dim < 0) {
        if (out)
            *out = c->v[0];
        return 0;
    }
    int64_t k = task_dim_value(t, shape, c->dim);
    if (k < 0 || k >= c->n) {
        char *label = task_shape_label(t, shape);
        err_set(err, "%s: %s: %s = %lld (shape %s) picks none of its %d values (%s = 0 .. %d)", t->path, c->path,
                t->dim_names[c->dim], (long long)k, label, c->n, t->dim_names[c->dim], c->n - 1);
        free(label);
        return -1;
    }
    if (out)
        *out = c->v[k];
    return 0;
}

void tl_choice_free(TChoice *c)
{
    free(c->v);
    free(c->path);
    memset(c, 0, sizeof(*c));
    c->dim = -1;
}

/* Every choice of t (dtypes, tolerances) on every shape: 0 or -1 (err). */
static int check_choices(const Task *t, EvoErr *err)
{
    for (int s = 0; s < task_nshapes(t); s++) {
        for (int i = 0; i < t->nbufs; i++) {
            const TChoice *c[3] = {&t->bufs[i].dtype, &t->bufs[i].atol, &t->bufs[i].rtol};
            for (int k = 0; k < 3; k++)
                if (c[k]->n && tl_choice_at(t, c[k], s, NULL, err) < 0)
                    return -1;
        }
        if (tl_choice_at(t, &t->atol, s, NULL, err) < 0 || tl_choice_at(t, &t->rtol, s, NULL, err) < 0)
            return -1;
    }
    return 0;
}

/* Here rather than with the other accessors: a dim's new value must pick
 * one of the values of every choice that it selects. */
int task_set_dim(Task *t, const char *name, int64_t v, EvoErr *err)
{
    int d = tl_dim_index(t, name, err);
    if (d < 0)
        return -1;
    int64_t was = t->dims[d];
    int follow = t->dim_follow[d];
    t->dims[d] = v;
    t->dim_follow[d] = -1;             /* set: no longer follows another dim */
    if (check_choices(t, err) < 0) {   /* e.g. DTYPE = 2 of a dtype with 2 values */
        t->dims[d] = was;
        t->dim_follow[d] = follow;
        return -1;
    }
    return 0;
}

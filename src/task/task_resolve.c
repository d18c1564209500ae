/*
 * task_resolve.c: a Task against one configuration and shape. An Env
 * looks up params, dims, derived values and device facts by the slots
 * bound at load time; on it run the constraints (task_check), the buffers
 * and launch plans (task_resolve, with tensor maps checked against their
 * buffers and the driver's rules) and rendering (task_render). A TProbe
 * keeps one Env per shape so that task_space.c can evaluate single derived
 * values and constraints of a partial configuration.
 */
#include "task/task.h"

#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "task/task_priv.h"
#include "task/template.h"

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

/* ---- partial evaluation (task_space.c) ---------------------------------- */

/* One Env per shape over one vals array: each keeps its derived values
 * until they are evaluated again. An Env points into itself (small[]), so
 * the array is never moved. */
struct TProbe {
    int                  nshapes;
    Env                 *envs;
    const unsigned char *pknown, *dknown;  /* tl_probe_known: by param, by derived value */
};

/* A partial evaluation's context: its lookup knows only what is marked. */
typedef struct ProbeView {
    const TProbe *p;
    Env          *env;
} ProbeView;

static int probe_lookup(void *ctx, int slot, ExprValue *out)
{
    const ProbeView *v = ctx;
    int idx = slot & 0xffff;
    switch (slot < 0 ? 0 : slot >> 16) {
    case SLOT_PARAM:
        if (!v->p->pknown[idx])
            return 0;
        break;
    case SLOT_DERIVED:
        if (!v->p->dknown[idx])
            return 0;
        break;
    default:
        break;
    }
    return env_lookup(v->env, slot, out);
}

TProbe *tl_probe_open(const Task *t, const int64_t *vals, const DeviceInfo *dev)
{
    TProbe *p = xcalloc(1, sizeof(*p));
    p->nshapes = task_nshapes(t);
    p->envs = xcalloc((size_t)p->nshapes, sizeof(Env));
    for (int s = 0; s < p->nshapes; s++) {
        Env *env = &p->envs[s];
        env_open(env, t, vals, dev);
        env->shape = s;
        memset(env->dvals, 0, (size_t)t->nderived * sizeof(ExprValue));
        env->nready = t->nderived;  /* the caller evaluates a value before what reads it */
    }
    return p;
}

int tl_probe_derived(TProbe *p, int shape, int d, EvoErr *err)
{
    Env *env = &p->envs[shape];
    return eval_x(env, &env->t->derived[d].x, &env->dvals[d], err) < 0 ? -1 : 0;
}

void tl_probe_derived_copy(TProbe *p, int from, int to, int d)
{
    p->envs[to].dvals[d] = p->envs[from].dvals[d];
}

int tl_probe_constraint(TProbe *p, int shape, int c, EvoErr *err)
{
    Env *env = &p->envs[shape];
    ExprValue v;
    if (eval_x(env, &env->t->cons[c].x, &v, err) < 0)
        return -1;
    return expr_value_true(v);
}

void tl_probe_known(TProbe *p, const unsigned char *params, const unsigned char *derived)
{
    p->pknown = params;
    p->dknown = derived;
}

int tl_probe_excluded(TProbe *p, int shape, int c)
{
    ProbeView v = {p, &p->envs[shape]};
    ExprValue r;
    return expr_eval_partial(v.env->t->cons[c].x.e, probe_lookup, &v, &r) && !expr_value_true(r);
}

void tl_probe_close(TProbe **p)
{
    if (!p || !*p)
        return;
    for (int s = 0; s < (*p)->nshapes; s++)
        env_done(&(*p)->envs[s]);
    free((*p)->envs);
    free(*p);
    *p = NULL;
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
            ExprValue v;
            if (a->when.e) {   /* an argument passed only where its condition holds */
                if (eval_x(env, &a->when, &v, err) < 0)
                    return -1;
                if (!expr_value_true(v))
                    continue;
            }
            PlanArg *pa = &pl->args[pl->nargs++];
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

/* An init with its row length: rows[k] elements per index of the
 * buffer's shape entry k. */
static InitSpec resolve_init(const TInit *ti, const uint64_t *rows)
{
    InitSpec s = ti->s;
    s.row_len = s.rows != ROWS_NONE && ti->row_dim >= 0 ? rows[ti->row_dim] : 1;
    if (s.row_len == 0)
        s.row_len = 1;
    return s;
}

/* 0 when shape exists, else -1 with err. */
static int shape_check(const Task *t, int shape, EvoErr *err)
{
    if (shape < 0 || shape >= task_nshapes(t))
        return err_set(err, "%s: shape %d does not exist (the task has %d)", t->path, shape, task_nshapes(t));
    return 0;
}

int task_resolve(const Task *t, const int64_t *vals, int shape, const DeviceInfo *dev, Plan *out, EvoErr *err)
{
    Env env = {0};
    memset(out, 0, sizeof(*out));
    if (shape_check(t, shape, err) < 0)
        return -1;
    env_open(&env, t, vals, dev);
    if (env_shape(&env, shape, err) < 0)
        goto fail;
    out->shape_label = task_shape_label(t, shape);
    out->is_bench = shape == 0;
    out->buffers = xcalloc((size_t)t->nbufs, sizeof(PlanBuffer));
    out->nbuffers = t->nbufs;
    out->nprofiles = task_nprofiles(t);
    out->profiles = xcalloc((size_t)out->nprofiles, sizeof(PlanProfile));
    for (int k = 0; k < out->nprofiles; k++) {
        out->profiles[k].name = xstrdup(task_profile_name(t, k));
        out->profiles[k].timing = task_profile_timing(t, k);
        out->profiles[k].init = xcalloc((size_t)(t->nbufs > 0 ? t->nbufs : 1), sizeof(InitSpec));
    }
    for (int i = 0; i < t->nbufs; i++) {
        const TBuffer *b = &t->bufs[i];
        PlanBuffer *pb = &out->buffers[i];
        uint64_t count = 1, *rows = xcalloc((size_t)b->nshape + 1, sizeof(uint64_t));
        pb->name = xstrdup(b->name);
        rows[b->nshape] = 1;   /* rows[k]: elements per index of shape entry k */
        for (int k = b->nshape - 1; k >= 0; k--) {
            int64_t d;
            if (eval_int(&env, &b->shape[k], 0, INT64_MAX, &d, err) < 0) {
                free(rows);
                goto fail;
            }
            rows[k] = count;
            if (__builtin_mul_overflow(count, (uint64_t)d, &count)) {
                free(rows);
                err_set(err, "element count overflows");
                rt_fail(&env, b->shape[k].path, err);
                goto fail;
            }
        }
        pb->init = resolve_init(&b->init, rows);
        for (int k = 0; k < out->nprofiles; k++)
            out->profiles[k].init[i] = t->nprofiles ? resolve_init(&t->profiles[k].init[i], rows) : pb->init;
        free(rows);
        double dt;
        if (tl_choice_at(t, &b->dtype, shape, &dt, err) < 0 ||
            tl_choice_at(t, b->atol.n ? &b->atol : &t->atol, shape, &pb->atol, err) < 0 ||
            tl_choice_at(t, b->rtol.n ? &b->rtol : &t->rtol, shape, &pb->rtol, err) < 0)
            goto fail;
        pb->dtype = (DType)dt;
        pb->count = count;
        pb->role = b->role;
        pb->seed_salt = task_seed_salt(b->name);
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
    if ((rc = shape_check(t, shape, err)) < 0)
        goto done;
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

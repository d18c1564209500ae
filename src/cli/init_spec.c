/*
 * init_spec: the starting task spec of a kernel file. See init_spec.h.
 *
 * Layout: types, name resolution (C names to the spec's language), the
 * launcher path (dims, launches, buffers, constraints), the path without a
 * launcher (TODOs), and the assembly. The params are init_params.c's.
 */
#include "cli/init_spec.h"

#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/init_params.h"
#include "compile/cexpr.h"
#include "compile/clex.h"
#include "compile/kfile.h"
#include "compile/kscan.h"
#include "task/expr.h"

/* Benchmark value of a dim the file does not give (said so in "_dims"). */
#define INIT_DIM_GUESS 8

/* ---- types ---------------------------------------------------------------- */

/* The type without qualifiers, pointers and blanks ("const float
 * *__restrict__" -> "float"). Fresh. */
static char *base_type(const char *type)
{
    static const char *const drop[] = {"const", "volatile", "__restrict__", "__restrict", "restrict",
                                       "__grid_constant__", "struct", NULL};
    StrBuf sb = {0};
    const char *p = type;
    while (*p) {
        while (*p == ' ' || *p == '*' || *p == '&')
            p++;
        const char *b = p;
        while (*p && *p != ' ' && *p != '*' && *p != '&')
            p++;
        if (p == b)
            continue;
        int skip = 0;
        for (const char *const *d = drop; *d; d++)
            skip |= strlen(*d) == (size_t)(p - b) && strncmp(*d, b, (size_t)(p - b)) == 0;
        if (!skip)
            sb_printf(&sb, "%s%.*s", sb.len ? " " : "", (int)(p - b), b);
    }
    return sb.len ? sb_take(&sb) : (sb_free(&sb), xstrdup(""));
}

static const char *dtype_of(const char *base)
{
    static const struct {
        const char *c, *dt;
    } map[] = {
        {"float", "f32"}, {"__half", "f16"}, {"half", "f16"}, {"__nv_bfloat16", "bf16"}, {"nv_bfloat16", "bf16"},
        {"int", "i32"}, {"int32_t", "i32"}, {"float4", "f32"}, {"float2", "f32"}, {"__half2", "f16"},
        {"half2", "f16"}, {"__nv_bfloat162", "bf16"},
    };
    for (size_t i = 0; i < EVO_ARRAY_LEN(map); i++)
        if (strcmp(base, map[i].c) == 0)
            return map[i].dt;
    return NULL;
}

/* The kind of a scalar parameter type: 'i' int32, 'l' int64, 'f' float,
 * 'd' double, 0 other. */
static int scalar_kind(const char *base)
{
    static const char *const i32[] = {"int", "int32_t", "unsigned", "unsigned int", "uint32_t", NULL};
    static const char *const i64[] = {"int64_t", "long", "long long", "size_t", "uint64_t", "long int", NULL};
    for (const char *const *w = i32; *w; w++)
        if (strcmp(base, *w) == 0)
            return 'i';
    for (const char *const *w = i64; *w; w++)
        if (strcmp(base, *w) == 0)
            return 'l';
    return strcmp(base, "float") == 0 ? 'f' : strcmp(base, "double") == 0 ? 'd' : 0;
}

static int is_pointer(const KfileParam *p)
{
    return strchr(p->type, '*') != NULL;
}

static int is_const_pointer(const KfileParam *p)
{
    const char *star = strchr(p->type, '*');
    const char *c = strstr(p->type, "const");
    return star && c && c < star;
}

/* ---- names ------------------------------------------------------------------ */

/* What a C name of the file means in the spec: params and dims stay, a
 * kernel's template parameters take their instantiation's arguments,
 * constants and macros are replaced by their translated values. */
typedef struct Names {
    const Kscan         *sc;
    json_t              *params;
    const KscanLauncher *L;       /* its integer parameters are dims */
    const KfileKernel   *k;       /* the kernel whose template parameters are bound, or NULL */
    const KscanKernel   *kk;
    char               **bind;    /* per k->tnames: replacement, or NULL */
    int                  depth;
} Names;

static char *translate(Names *n, const char *c);

static char *resolve(void *ctx, const char *name)
{
    Names *n = ctx;
    if (json_object_get(n->params, name))
        return xstrdup(name);
    if (n->k) {
        /* inside a kernel: its template parameters and constants; the
         * launcher's names are not in scope */
        for (int i = 0; i < n->k->ntparams; i++)
            if (strcmp(n->k->tnames[i], name) == 0)
                return n->bind[i] ? xstrdup(n->bind[i]) : NULL;
        const KscanLocal *l = n->kk ? kscan_local(n->kk->locals, n->kk->nlocals, name) : NULL;
        if (l)
            return translate(n, l->init);
    } else if (n->L) {
        for (int i = 0; i < n->L->sig.nparams; i++) {
            const KfileParam *p = &n->L->sig.params[i];
            if (strcmp(p->name, name) == 0 && !is_pointer(p)) {
                char *b = base_type(p->type);
                int k = scalar_kind(b);
                free(b);
                return k == 'i' || k == 'l' ? xstrdup(name) : NULL;
            }
        }
        const KscanLocal *l = kscan_local(n->L->locals, n->L->nlocals, name);
        if (l && strcmp(l->type, "dim3") != 0)
            return translate(n, l->init);
    }
    const KscanMacro *m = kscan_macro(n->sc, name);
    return m && m->value[0] ? translate(n, m->value) : NULL;
}

/* 1 when e is one name or number (it needs no parentheses). */
static int single(const char *e)
{
    return strspn(e, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.") == strlen(e);
}

/* e as an operand of * or /: in parentheses unless it is single. Fresh. */
static char *operand(const char *e)
{
    return single(e) ? xstrdup(e) : xasprintf("(%s)", e);
}

/* e without parentheses around the whole of it. Fresh. */
static char *unwrap(char *e)
{
    size_t n = strlen(e);
    while (n >= 2 && e[0] == '(' && e[n - 1] == ')') {
        int depth = 0, whole = 1;
        for (size_t i = 0; i < n - 1 && whole; i++) {
            depth += e[i] == '(';
            depth -= e[i] == ')';
            whole = depth > 0;
        }
        if (!whole)
            break;
        memmove(e, e + 1, n - 2);
        e[n - 2] = '\0';
        n -= 2;
    }
    return e;
}

/* c in the spec's language, checked by its parser; NULL when it cannot be. */
static char *translate(Names *n, const char *c)
{
    if (n->depth > 16)
        return NULL;
    n->depth++;
    char *r = cexpr_translate(c, resolve, n);
    n->depth--;
    if (r && n->depth == 0)
        r = unwrap(r);
    Expr *e = NULL;
    EvoErr err;
    if (r && expr_parse(r, &e, &err)) {
        free(r);
        r = NULL;
    }
    expr_free(&e);
    return r;
}

/* 1 when the spec expression e names a param (it varies with the
 * configuration). */
static int names_param(const char *e, json_t *params)
{
    Expr *x = NULL;
    EvoErr err;
    int yes = 0;
    if (expr_parse(e, &x, &err) == 0)
        for (int i = 0; i < expr_nvars(x) && !yes; i++)
            yes = json_object_get(params, expr_var(x, i, NULL)) != NULL;
    expr_free(&x);
    return yes;
}

/* ---- the launcher path ------------------------------------------------------ */

typedef struct Build {
    const char          *text;
    const Kscan         *sc;
    KfileKernel         *ks;
    int                  nk;
    const KscanLauncher *L;
    json_t *params, *dims, *buffers, *launch, *entries, *derived, *constraints, *notes;
} Build;

static const KfileKernel *kernel_named(const Build *b, const char *name)
{
    for (int i = 0; i < b->nk; i++)
        if (strcmp(b->ks[i].name, name) == 0)
            return &b->ks[i];
    /* called unqualified from inside its namespace */
    for (int i = 0; i < b->nk; i++) {
        const char *c = strrchr(b->ks[i].name, ':');
        if (c && strcmp(c + 1, name) == 0)
            return &b->ks[i];
    }
    return NULL;
}

static json_t *todo(const char *fmt, ...) EVO_PRINTF(1, 2);
static json_t *todo(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char *s = xvasprintf(fmt, ap);
    va_end(ap);
    json_t *j = json_string(s);
    free(s);
    return j;
}

/* An expression as the spec holds it: an integer when it is one. */
static json_t *expr_json(const char *e)
{
    long long v;
    char *end;
    v = strtoll(e, &end, 10);
    return *e && !*end ? json_integer(v) : json_string(e);
}

static void add_constraint(Build *b, const char *expr, const char *why)
{
    size_t i;
    json_t *c;
    json_array_foreach(b->constraints, i, c)
        if (strcmp(json_string_value(json_object_get(c, "expr")), expr) == 0)
            return;
    json_array_append_new(b->constraints, json_pack("{s:s, s:s}", "expr", expr, "why", why));
}

/* Dims from an if-guard: each "NAME == 123" (or "123 == NAME") of a
 * conjunction that names a dim without a value yet. */
static void guard_dims(Build *b, const char *guard)
{
    char *g = xstrdup(guard);
    for (char *part = g; part;) {
        char *next = strstr(part, "&&");
        if (next) {
            *next = '\0';
            next += 2;
        }
        for (char *c = part; *c; c++)
            if (*c == '(' || *c == ')')
                *c = ' ';
        char *eq = strstr(part, "==");
        if (eq) {
            *eq = '\0';
            char *lt = clex_trim(part, eq), *rt = clex_trim(eq + 2, eq + 2 + strlen(eq + 2));
            long long v;
            const char *name = init_int_value(rt, &v) ? lt : init_int_value(lt, &v) ? rt : NULL;
            json_t *d = name ? json_object_get(b->dims, name) : NULL;
            if (d && json_is_null(d))
                json_object_set_new(b->dims, name, json_integer(v));
            free(lt);
            free(rt);
        }
        part = next;
    }
    free(g);
}

static void add_str(void *ctx, const char *a, const char *b)
{
    char *s = clex_trim(a, b);
    json_array_append_new(ctx, json_string(s));
    free(s);
}

/* The grid or block of a launch (a dim3 local, dim3(...) or one
 * expression) as 1 to 3 spec expressions; a TODO where one does not
 * translate. */
static json_t *dims3(Names *n, const char *cfg, const char *what)
{
    json_t *parts = json_array();
    const KscanLocal *l = kscan_local(n->L->locals, n->L->nlocals, cfg);
    const char *p = cfg;
    if (l && strcmp(l->type, "dim3") == 0) {
        clex_split_commas(l->init, l->init + strlen(l->init), add_str, parts);
    } else if (strncmp(p, "dim3", 4) == 0 && (p = strpbrk(p, "({")) != NULL) {
        const char *e = cfg + strlen(cfg);
        while (e > p && (e[-1] == ')' || e[-1] == '}' || isspace((unsigned char)e[-1])))
            e--;
        clex_split_commas(p + 1, e, add_str, parts);
    } else {
        json_array_append_new(parts, json_string(cfg));
    }
    json_t *out = json_array();
    size_t i;
    json_t *v;
    json_array_foreach(parts, i, v) {
        char *e = translate(n, json_string_value(v));
        json_array_append_new(out, e ? expr_json(e) : todo("TODO: the %s in the spec's expressions", what));
        free(e);
    }
    json_decref(parts);
    return out;
}

/* A buffer argument: registered once, output when any kernel may write it. */
static void use_buffer(Build *b, const KfileParam *kp, const char *name)
{
    const KfileParam *lp = NULL;
    for (int i = 0; i < b->L->sig.nparams; i++)
        if (strcmp(b->L->sig.params[i].name, name) == 0)
            lp = &b->L->sig.params[i];
    json_t *buf = NULL;
    size_t i;
    json_t *x;
    json_array_foreach(b->buffers, i, x)
        if (strcmp(json_string_value(json_object_get(x, "name")), name) == 0)
            buf = x;
    if (!buf) {
        char *base = base_type(kp->type);
        const char *dt = dtype_of(base);
        if (!dt && lp) {
            free(base);
            base = base_type(lp->type);
            dt = dtype_of(base);
        }
        json_t *shape = json_array();
        const char *k;
        json_t *dv;
        json_object_foreach(b->dims, k, dv)
            json_array_append_new(shape, json_string(k));
        buf = json_pack("{s:s, s:o, s:o, s:s}", "name", name, "dtype",
                        dt ? json_string(dt) : todo("TODO: a dtype (f16 bf16 f32 i32) for %s", base), "shape", shape,
                        "role", "input");
        json_array_append_new(b->buffers, buf);
        free(base);
    }
    if (!is_const_pointer(kp))
        json_object_set_new(buf, "role", json_string("output"));
}

/* One argument of a launch, as kernel parameter kp takes it. */
static json_t *arg_of(Build *b, Names *n, const KfileParam *kp, const char *arg)
{
    if (is_pointer(kp)) {
        for (int i = 0; i < b->L->sig.nparams; i++)
            if (strcmp(b->L->sig.params[i].name, arg) == 0 && is_pointer(&b->L->sig.params[i])) {
                use_buffer(b, kp, arg);
                return json_string(arg);
            }
        return todo("TODO: %s: pass a buffer by its name", arg);
    }
    char *base = base_type(kp->type);
    int kind = scalar_kind(base);
    free(base);
    char *e = kind ? translate(n, arg) : NULL;
    json_t *j = !e ? todo("TODO: %s in the spec's expressions ({\"i32\": e}, {\"f32\": e}, ...)", arg)
              : kind == 'i' ? expr_json(e)
              : json_pack("{s:s}", kind == 'l' ? "i64" : kind == 'f' ? "f32" : "f64", e);
    free(e);
    return j;
}

/* The static shared memory of a kernel in bytes, as a spec expression
 * (NULL when an array's type or bound does not translate); *slack gets the
 * most its alignment padding can add. */
static char *smem_expr(Names *n, const KscanKernel *kk, int *slack)
{
    StrBuf sb = {0};
    *slack = 0;
    for (int i = 0; i < kk->nshared; i++) {
        const KscanShared *a = &kk->shared[i];
        int size = cexpr_sizeof(a->type);
        if (size <= 0)
            goto fail;
        sb_printf(&sb, "%s%d", i ? " + " : "", size);
        for (int d = 0; d < a->ndims; d++) {
            char *e = translate(n, a->dims[d]);
            if (!e)
                goto fail;
            sb_printf(&sb, single(e) ? " * %s" : " * (%s)", e);
            free(e);
        }
        *slack += (a->align > 0 ? a->align : 16) - 1;
    }
    return sb.len ? sb_take(&sb) : (sb_free(&sb), NULL);
fail:
    sb_free(&sb);
    return NULL;
}

/* What a kernel launched with block `threads` (a spec product) must
 * satisfy: its static_asserts, its launch bounds, its shared memory. */
static void kernel_constraints(Build *b, Names *n, const KfileKernel *k, const char *threads, const char *smem_dyn)
{
    const KscanKernel *kk = kscan_kernel(b->sc, k->name);
    if (!kk)
        return;
    for (int i = 0; i < kk->nasserts; i++) {
        char *e = translate(n, kk->asserts[i].cond);
        if (e && names_param(e, b->params)) {
            char *why = kk->asserts[i].msg[0] ? xstrdup(kk->asserts[i].msg)
                                              : xasprintf("static_assert(%s) in %s", kk->asserts[i].cond, k->name);
            add_constraint(b, e, why);
            free(why);
        }
        free(e);
    }
    char *t0 = kk->bounds[0] ? translate(n, kk->bounds[0]) : NULL;
    char *t1 = kk->bounds[1] ? translate(n, kk->bounds[1]) : NULL;
    if (t0 && threads && strcmp(t0, threads) != 0 && (names_param(t0, b->params) || names_param(threads, b->params))) {
        char *p0 = operand(t0);
        char *e = xasprintf("%s <= %s", threads, p0), *why = xasprintf(
            "%s's __launch_bounds__(%s) caps its block: a bigger one fails to launch", k->name, kk->bounds[0]);
        add_constraint(b, e, why);
        free(e);
        free(why);
        free(p0);
    }
    if (t0 && t1 && (names_param(t0, b->params) || names_param(t1, b->params))) {
        char *p0 = operand(t0), *p1 = operand(t1);
        char *e = xasprintf("%s * %s <= MAX_THREADS_PER_SM", p0, p1);
        free(p0);
        free(p1);
        add_constraint(b, e, "__launch_bounds__ asks for more resident threads per SM than an SM holds (the "
                             "register budget per thread it implies is below what any kernel needs)");
        free(e);
    }
    free(t0);
    free(t1);
    int slack = 0;
    char *sm = kk->nshared ? smem_expr(n, kk, &slack) : NULL;
    if (sm && names_param(sm, b->params)) {
        char name[32];
        snprintf(name, sizeof(name), "SMEM_STATIC%s", json_object_size(b->derived) ? "_2" : "");
        for (int i = 3; json_object_get(b->derived, name); i++)
            snprintf(name, sizeof(name), "SMEM_STATIC_%d", i);
        json_object_set_new(b->derived, name, json_string(sm));
        char *e = xasprintf("%s + %d <= SMEM_PER_BLOCK", name, slack), *why = xasprintf(
            "%s's static __shared__ arrays (%s bytes) over the 48 KB a block may declare statically: ptxas refuses "
            "them (\"uses too much shared data\"); %d: the most their alignment adds", k->name, name, slack);
        add_constraint(b, e, why);
        free(e);
        free(why);
        free(sm);
        if (smem_dyn) {
            e = xasprintf("%s + %s <= SMEM_PER_BLOCK_OPTIN", smem_dyn, name);
            add_constraint(b, e, "dynamic plus static shared memory over the device's opt-in limit");
            free(e);
        }
        return;
    }
    free(sm);
    if (smem_dyn && names_param(smem_dyn, b->params)) {
        char *e = xasprintf("%s <= SMEM_PER_BLOCK_OPTIN", smem_dyn);
        add_constraint(b, e, "dynamic shared memory over the device's opt-in limit");
        free(e);
    }
}

/* "a * b" of a block's expressions (a TODO in it: NULL). Fresh. */
static char *threads_of(json_t *block)
{
    StrBuf sb = {0};
    size_t i;
    json_t *v;
    json_array_foreach(block, i, v) {
        char *t = json_is_integer(v) ? xasprintf("%lld", (long long)json_integer_value(v)) : NULL;
        const char *s = t ? t : json_string_value(v);
        if (!s || strstr(s, "TODO")) {
            free(t);
            sb_free(&sb);
            return NULL;
        }
        sb_printf(&sb, single(s) || json_array_size(block) == 1 ? "%s%s" : "%s(%s)", i ? " * " : "", s);
        free(t);
    }
    return sb.len ? sb_take(&sb) : (sb_free(&sb), NULL);
}

/* One launch of the launcher into the plan; an alternative instantiation
 * of a kernel already launched (an else branch) is left out and noted. */
static void launch_one(Build *b, const KscanLaunch *la, StrBuf *left_out)
{
    const KfileKernel *k = kernel_named(b, la->kernel);
    if (!k) {
        sb_printf(left_out, "%s%s (not a kernel of this file)", left_out->len ? ", " : "", la->kernel);
        return;
    }
    Names n = {b->sc, b->params, b->L, NULL, NULL, NULL, 0};
    char **bind = xcalloc((size_t)k->ntparams + 1, sizeof(char *));
    StrBuf entry = {0};
    sb_append(&entry, k->name);
    for (int i = 0; k->is_template && i < k->ntparams; i++) {
        bind[i] = i < la->ntargs ? translate(&n, la->targs[i]) : NULL;
        sb_printf(&entry, "%s%s", i ? ", " : "<", bind[i] ? bind[i] : "TODO_");
        if (!bind[i])
            sb_append(&entry, k->tnames[i]);
    }
    if (k->is_template)
        sb_append(&entry, ">");
    int seen = 0;
    size_t i;
    json_t *x;
    json_array_foreach(b->launch, i, x)
        seen |= strncmp(json_string_value(json_object_get(x, "entry")), k->name, strlen(k->name)) == 0;
    if (seen) {
        sb_printf(left_out, "%s%s (another instantiation)", left_out->len ? ", " : "", entry.s);
        goto done;
    }
    json_array_append_new(b->entries, json_string(entry.s));
    if (la->guard)
        guard_dims(b, la->guard);
    long long v;
    for (int t = 0; t < k->ntparams; t++) {
        json_t *d = json_object_get(b->dims, k->tnames[t]);
        if (bind[t] && d && json_is_null(d) && init_int_value(bind[t], &v))
            json_object_set_new(b->dims, k->tnames[t], json_integer(v));
    }
    json_t *grid = la->config[0] ? dims3(&n, la->config[0], "grid") : json_pack("[s]", "TODO: the grid");
    json_t *block = la->config[1] ? dims3(&n, la->config[1], "block") : json_pack("[s]", "TODO: the block");
    char *smem = la->config[2] && strcmp(la->config[2], "0") != 0 ? translate(&n, la->config[2]) : NULL;
    json_t *args = json_array();
    for (int a = 0; a < la->nargs; a++)
        json_array_append_new(args, a < k->nparams ? arg_of(b, &n, &k->params[a], la->args[a])
                                                    : todo("TODO: %s: the kernel takes fewer arguments", la->args[a]));
    json_t *l = json_pack("{s:s, s:o, s:o}", "entry", entry.s, "grid", grid, "block", block);
    if (smem)
        json_object_set_new(l, "smem", expr_json(smem));
    else if (la->config[2] && strcmp(la->config[2], "0") != 0)
        json_object_set_new(l, "smem", todo("TODO: %s in the spec's expressions", la->config[2]));
    json_object_set_new(l, "args", args);
    json_array_append_new(b->launch, l);
    char *threads = threads_of(block);
    if (threads && names_param(threads, b->params)) {
        char *e = xasprintf("%s <= MAX_THREADS", threads);
        add_constraint(b, e, "threads per block over the device's limit");
        free(e);
    }
    Names kn = {b->sc, b->params, b->L, k, kscan_kernel(b->sc, k->name), bind, 0};
    kernel_constraints(b, &kn, k, threads, smem);
    free(threads);
    free(smem);
done:
    sb_free(&entry);
    for (int t = 0; t < k->ntparams; t++)
        free(bind[t]);
    free(bind);
}

/* The plan of launcher L: dims, entries, launches, buffers, constraints. */
static void from_launcher(Build *b)
{
    for (int i = 0; i < b->L->sig.nparams; i++) {
        const KfileParam *p = &b->L->sig.params[i];
        char *base = base_type(p->type);
        int k = scalar_kind(base);
        if (!is_pointer(p) && (k == 'i' || k == 'l'))
            json_object_set_new(b->dims, p->name, json_null());
        free(base);
    }
    StrBuf left_out = {0}, guessed = {0};
    for (int i = 0; i < b->L->nlaunches; i++)
        launch_one(b, &b->L->launches[i], &left_out);
    const char *k;
    json_t *v;
    json_object_foreach(b->dims, k, v) {
        if (json_is_null(v)) {
            json_object_set_new(b->dims, k, json_integer(INIT_DIM_GUESS));
            sb_printf(&guessed, "%s%s", guessed.len ? ", " : "", k);
        }
    }
    json_object_set_new(b->notes, "_launch",
                        json_sprintf("the plan of %s(), the launcher: its launches in order%s%s", b->L->sig.name,
                                     left_out.len ? "; left out: " : "", left_out.len ? left_out.s : ""));
    if (guessed.len)
        json_object_set_new(b->notes, "_dims", json_sprintf("%s: the file does not say; %d is a guess: set the "
                                                            "benchmark shape (and add correctness shapes)",
                                                            guessed.s, INIT_DIM_GUESS));
    json_object_set_new(b->notes, "_buffers", json_string("one per pointer the launcher passes, shaped by its "
                                                          "integer parameters in order; check each"));
    sb_free(&left_out);
    sb_free(&guessed);
}

/* ---- without a launcher ------------------------------------------------------ */

/* Every kernel as an entry (a template one as k<TODO_S, TODO_D>) with a
 * launch whose grid and block are TODOs; a buffer per pointer parameter, a
 * dim per integer one, each to be completed. */
static void from_kernels(Build *b)
{
    for (int i = 0; i < b->nk; i++) {
        const KfileKernel *k = &b->ks[i];
        StrBuf entry = {0};
        sb_append(&entry, k->name);
        for (int t = 0; k->is_template && t < k->ntparams; t++)
            sb_printf(&entry, "%sTODO_%s", t ? ", " : "<", k->tnames[t]);
        if (k->is_template)
            sb_append(&entry, ">");
        json_t *args = json_array();
        for (int a = 0; a < k->nparams; a++) {
            const KfileParam *p = &k->params[a];
            char *base = base_type(p->type);
            int kind = scalar_kind(base);
            if (is_pointer(p)) {
                int seen = 0;
                size_t bi;
                json_t *x;
                json_array_foreach(b->buffers, bi, x)
                    seen |= strcmp(json_string_value(json_object_get(x, "name")), p->name) == 0;
                const char *dt = dtype_of(base);
                if (!seen)
                    json_array_append_new(b->buffers,
                                          json_pack("{s:s, s:o, s:[s], s:s}", "name", p->name, "dtype",
                                                    dt ? json_string(dt)
                                                       : todo("TODO: a dtype (f16 bf16 f32 i32) for %s", base),
                                                    "shape", "TODO: element count", "role",
                                                    is_const_pointer(p) ? "input" : "output"));
                json_array_append_new(args, json_string(p->name));
            } else if (kind == 'i' || kind == 'l') {
                if (!json_object_get(b->dims, p->name))
                    json_object_set_new(b->dims, p->name, json_string("TODO: the benchmark shape's value"));
                json_array_append_new(args, kind == 'i' ? json_string(p->name) : json_pack("{s:s}", "i64", p->name));
            } else if (kind == 'f' || kind == 'd') {
                json_array_append_new(args, json_pack("{s:o}", kind == 'f' ? "f32" : "f64",
                                                      todo("TODO: an expression for %s", p->name)));
            } else {
                char *t = xasprintf("TODO: %s %s (pass a buffer, {\"i32\": e}, {\"f32\": e} or a tensor_map)",
                                    p->type, p->name);
                json_array_append_new(args, json_string(t));
                free(t);
            }
            free(base);
        }
        json_array_append_new(b->entries, json_string(entry.s));
        json_array_append_new(b->launch, json_pack("{s:s, s:[s], s:[s], s:o}", "entry", entry.s, "grid",
                                                   "TODO: ceil_div(N, THREADS)", "block", "TODO: THREADS", "args",
                                                   args));
        sb_free(&entry);
    }
    if (json_object_size(b->dims) == 0)
        json_object_set_new(b->dims, "TODO_N", json_string("TODO: a problem size"));
    json_object_set_new(b->notes, "_todo_entries",
                        json_string("no host launcher in the file: a template kernel's entry is an instantiation "
                                    "such as k<128, 64>; its arguments may name params or compile_dims (not the "
                                    "template's own parameter names: a macro S would rewrite them)"));
}

/* ---- assembly ---------------------------------------------------------------- */

/* The TODO strings under v, keys starting with '_' left out. */
static int count_todos(json_t *v)
{
    int n = 0;
    if (json_is_string(v))
        return strstr(json_string_value(v), "TODO") != NULL;
    if (json_is_array(v)) {
        size_t i;
        json_t *x;
        json_array_foreach(v, i, x)
            n += count_todos(x);
    } else if (json_is_object(v)) {
        const char *k;
        json_t *x;
        json_object_foreach(v, k, x)
            n += k[0] == '_' ? 0 : count_todos(x) + (strstr(k, "TODO") != NULL);
    }
    return n;
}

/* The launcher to read: the first extern "C" one that launches a kernel of
 * the file, else the first that does. */
static const KscanLauncher *pick_launcher(const Build *b)
{
    const KscanLauncher *first = NULL;
    for (int i = 0; i < b->sc->nlaunchers; i++) {
        const KscanLauncher *l = &b->sc->launchers[i];
        int ours = 0;
        for (int j = 0; j < l->nlaunches; j++)
            ours |= kernel_named(b, l->launches[j].kernel) != NULL;
        if (!ours)
            continue;
        if (l->sig.extern_c)
            return l;
        if (!first)
            first = l;
    }
    return first;
}

int init_spec_build(const char *text, const char *file, const char *tpl, json_t **out, int *ntodo)
{
    *out = NULL;
    *ntodo = 0;
    Kscan sc;
    Build b = {text, &sc, NULL, 0, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL};
    b.nk = kfile_kernels(text, &b.ks);
    if (b.nk == 0) {
        kfile_kernels_free(b.ks, b.nk);
        return 0;
    }
    kscan_file(text, &sc);
    b.notes = json_object();
    b.params = init_params(text, &sc, b.notes);
    b.dims = json_object();
    b.buffers = json_array();
    b.launch = json_array();
    b.entries = json_array();
    b.derived = json_object();
    b.constraints = json_array();
    b.L = pick_launcher(&b);
    if (b.L)
        from_launcher(&b);
    else
        from_kernels(&b);
    if (json_object_size(b.params) == 0)
        json_object_set_new(b.params, "TODO_PARAM", json_pack("{s:[i], s:i, s:s}", "values", 1, "default", 1, "_todo",
                                                              "the file has no #ifndef/#define knob: add one"));
    /* named after the launched kernel defined first in the file */
    const char *e0 = NULL;
    for (int i = 0; i < b.nk && !e0; i++) {
        size_t j;
        json_t *x;
        json_array_foreach(b.entries, j, x)
            if (!e0 && strncmp(json_string_value(x), b.ks[i].name, strlen(b.ks[i].name)) == 0)
                e0 = json_string_value(x);
    }
    if (!e0)
        e0 = json_string_value(json_array_get(b.entries, 0));
    char *name = xstrndup(e0, strcspn(e0, "<"));
    for (char *p = name; *p; p++)
        if (!(isalnum((unsigned char)*p) || *p == '_'))
            *p = '_';
    json_t *root = json_object();
    json_object_set_new(root, "_evoeng_init",
                        json_sprintf("written by `evoeng init %s`: check what it read (the notes below), give the "
                                     "reference (the one TODO: `evoeng check` names what is left), then run "
                                     "`evoeng check` on it", file));
    json_object_update(root, b.notes);
    json_object_set_new(root, "name", json_string(name));
    json_object_set_new(root, "description", json_sprintf("%s from %s", e0, file));
    json_object_set_new(root, "template", json_string(tpl));
    json_object_set_new(root, "entries", b.entries);
    json_object_set_new(root, "params", b.params);
    if (json_object_size(b.derived))
        json_object_set_new(root, "derived", b.derived);
    else
        json_decref(b.derived);
    if (json_array_size(b.constraints))
        json_object_set_new(root, "constraints", b.constraints);
    else
        json_decref(b.constraints);
    json_object_set_new(root, "dims", b.dims);
    json_object_set_new(root, "buffers", b.buffers);
    json_object_set_new(root, "launch", b.launch);
    json_object_set_new(root, "reference",
                        json_pack("{s:s, s:O, s:O}", "source",
                                  "TODO: an obviously correct kernel file that writes the same outputs (a naive one "
                                  "is fine); entries and launch start as this kernel's: make them the reference's",
                                  "entries", b.entries, "launch", b.launch));
    json_object_set_new(root, "tolerance", json_pack("{s:f, s:f}", "atol", 1e-2, "rtol", 1e-2));
    json_decref(b.notes);
    free(name);
    *ntodo = count_todos(root);
    *out = root;
    int nk = b.nk;
    kscan_free(&sc);
    kfile_kernels_free(b.ks, b.nk);
    return nk;
}

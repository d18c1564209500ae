/*
 * task_init.c: the inputs' generators in a task spec: a buffer's "init"
 * and the "profiles" that override them (templates/README.md, "Input
 * profiles"). An init is a distribution (normal, uniform, zero, const,
 * outlier) with an optional per-row scale; a profile is a name, whether
 * timing uses it, and an init per input it changes. Every error names the
 * file and the JSON path:
 *
 *   task.json: profiles[1].inputs.Q.p: must be from 0 to 1, got 1.5
 *
 * A spec without "profiles" has one implicit profile, "default", of the
 * buffers' own inits, timed: it behaves as before profiles existed.
 */
#include "task/task.h"

#include <stdlib.h>
#include <string.h>

#include "task/task_priv.h"

/* ---- one init ----------------------------------------------------------- */

/* The fields each distribution takes, their defaults and where they go. */
typedef struct DistArg {
    const char *key;
    double      def;
    size_t      off;   /* offsetof(InitSpec, ...) */
} DistArg;

#define ARG(k, d, f) {k, d, offsetof(InitSpec, f)}
static const DistArg dist_args[][4] = {
    [INIT_NORMAL] = {ARG("mean", 0, a), ARG("std", 1, b)},
    [INIT_UNIFORM] = {ARG("low", -1, a), ARG("high", 1, b)},
    [INIT_ZERO] = {{0}},
    [INIT_CONST] = {ARG("value", 0, a)},
    [INIT_OUTLIER] = {ARG("mean", 0, a), ARG("std", 1, b), ARG("p", 0.001, p), ARG("outlier_std", 10, c)},
};
static const DistArg row_args[][4] = {
    [ROWS_LOGNORMAL] = {ARG("mean", 0, ra), ARG("std", 1, rb)},
    [ROWS_UNIFORM] = {ARG("low", 0.5, ra), ARG("high", 2, rb)},
};
#undef ARG

static double *field(InitSpec *s, size_t off)
{
    return (double *)((char *)s + off);
}

/* The dist named at obj.dist among names[0..n), or -1 (L->err). */
static int get_dist(Loader *L, json_t *obj, const char *p, const char *const *names, int first, int *out)
{
    char q[PATH_MAX_LEN], hint[TL_HINT_LEN], known[128] = "";
    char *dist = NULL;
    int n = 0;
    if (tl_get_string(L, obj, p, "dist", 1, &dist) < 0)
        return -1;
    while (names[n])
        n++;
    for (int k = first; k < n; k++)
        if (strcmp(names[k], dist) == 0) {
            *out = k;
            free(dist);
            return 0;
        }
    for (int k = first; k < n; k++)
        snprintf(known + strlen(known), sizeof(known) - strlen(known), "%s%s", k > first ? " " : "", names[k]);
    tl_subpath(q, p, "dist");
    tl_err(L, q, "unknown dist '%s'%s (known: %s)", dist, tl_suggest(hint, sizeof(hint), dist, names + first, n - first),
           known);
    free(dist);
    return -1;
}

/* The numbers of obj that args[0..n) name (n <= 4), into s; any other key
 * but those in extra is an error that lists what the dist takes. */
static int get_args(Loader *L, json_t *obj, const char *p, const char *dist, const DistArg *args, int n,
                    const char *const *extra, InitSpec *s)
{
    const char *keys[8];
    int nk = 0;
    keys[nk++] = "dist";
    for (int i = 0; i < n && args[i].key; i++)
        keys[nk++] = args[i].key;
    for (int i = 0; extra && extra[i]; i++)
        keys[nk++] = extra[i];
    keys[nk] = NULL;
    const char *key;
    json_t *v;
    json_object_foreach(obj, key, v) {
        int ok = key[0] == '_';
        for (int i = 0; !ok && i < nk; i++)
            ok = strcmp(key, keys[i]) == 0;
        if (!ok) {
            char q[PATH_MAX_LEN], takes[128] = "";
            for (int i = 1; i < nk; i++)
                snprintf(takes + strlen(takes), sizeof(takes) - strlen(takes), "%s%s", i > 1 ? ", " : "", keys[i]);
            tl_subpath(q, p, key);
            return tl_err(L, q, "dist '%s' takes %s%s", dist, nk > 1 ? "" : "no parameters",
                          nk > 1 ? takes : "");
        }
    }
    for (int i = 0; i < n && args[i].key; i++) {
        char q[PATH_MAX_LEN];
        *field(s, args[i].off) = args[i].def;
        if (!(v = json_object_get(obj, args[i].key)))
            continue;
        tl_subpath(q, p, args[i].key);
        if (tl_get_number(L, v, q, field(s, args[i].off)) < 0)
            return -1;
    }
    return 0;
}

/* at p: a number that must lie in [lo, hi] */
static int in_range(Loader *L, const char *p, const char *key, double v, double lo, double hi)
{
    char q[PATH_MAX_LEN];
    if (v >= lo && v <= hi)
        return 0;
    tl_subpath(q, p, key);
    if (hi > 1e300)
        return tl_err(L, q, "must not be negative, got %g", v);
    return tl_err(L, q, "must be from %g to %g, got %g", lo, hi, v);
}

/* init.row_scale of buffer b at p. */
/* A distribution object at p: its dist among names[first..] into *k and
 * the numbers it takes (args[*k], at most n) into s. */
static int load_dist(Loader *L, json_t *obj, const char *p, const char *const *names, int first,
                     const DistArg (*args)[4], int n, const char *const *extra, int *k, InitSpec *s)
{
    if (!json_is_object(obj))
        return tl_err(L, p, "expected an object, got %s", tl_json_type(obj));
    if (get_dist(L, obj, p, names, first, k) < 0 || get_args(L, obj, p, names[*k], args[*k], n, extra, s) < 0)
        return -1;
    return 0;
}

static int load_row_scale(Loader *L, json_t *rs, const char *p, const TBuffer *b, TInit *out)
{
    static const char *const extra[] = {"dim", NULL};
    char q[PATH_MAX_LEN];
    int k;
    if (load_dist(L, rs, p, row_scale_names, 1, row_args, 2, extra, &k, &out->s) < 0)
        return -1;
    out->s.rows = (RowScale)k;
    if (k == ROWS_LOGNORMAL && in_range(L, p, "std", out->s.rb, 0, 1e308) < 0)
        return -1;
    if (k == ROWS_UNIFORM && !(out->s.ra <= out->s.rb)) {
        tl_subpath(q, p, "low");
        return tl_err(L, q, "must not be above high (%g > %g)", out->s.ra, out->s.rb);
    }
    /* dim: the shape entry that indexes the rows */
    json_t *d = json_object_get(rs, "dim");
    tl_subpath(q, p, "dim");
    if (!d)
        return tl_err(L, q, "missing required field: the entry of %s's shape whose index picks a row's factor",
                      b->name);
    if (!json_is_string(d))
        return tl_err(L, q, "expected a string, got %s", tl_json_type(d));
    StrBuf have = {0};
    for (int i = 0; i < b->nshape; i++) {
        if (b->shape_src[i] && strcmp(b->shape_src[i], json_string_value(d)) == 0) {
            out->row_dim = i;
            sb_free(&have);
            return 0;
        }
        sb_printf(&have, "%s'%s'", i ? " " : "", b->shape_src[i] ? b->shape_src[i] : "?");
    }
    tl_err(L, q, "'%s' is not an entry of %s's shape (%s)", json_string_value(d), b->name, have.s ? have.s : "");
    sb_free(&have);
    return -1;
}

int tl_load_init(Loader *L, json_t *init, const char *p, const TBuffer *b, TInit *out)
{
    static const char *const extra[] = {"row_scale", NULL};
    int k;
    memset(out, 0, sizeof(*out));
    out->row_dim = -1;
    if (load_dist(L, init, p, init_kind_names, 0, dist_args, 4, extra, &k, &out->s) < 0)
        return -1;
    out->s.kind = (InitKind)k;
    if (k == INIT_CONST && !json_object_get(init, "value"))
        return tl_err(L, p, "dist 'const' needs a 'value'");
    if ((k == INIT_NORMAL || k == INIT_OUTLIER) && in_range(L, p, "std", out->s.b, 0, 1e308) < 0)
        return -1;
    if (k == INIT_OUTLIER &&
        (in_range(L, p, "p", out->s.p, 0, 1) < 0 || in_range(L, p, "outlier_std", out->s.c, 0, 1e308) < 0))
        return -1;
    json_t *rs = json_object_get(init, "row_scale");
    if (rs) {
        char q[PATH_MAX_LEN];
        tl_subpath(q, p, "row_scale");
        return load_row_scale(L, rs, q, b, out);
    }
    return 0;
}

/* ---- profiles ----------------------------------------------------------- */

/* profiles[i].name at p: letters, digits, '_' and '-', not a repeat. */
static int profile_name(Loader *L, json_t *v, const char *p, int i, char **out)
{
    Task *t = L->t;
    char q[PATH_MAX_LEN];
    if (tl_get_string(L, v, p, "name", 1, out) < 0)
        return -1;
    tl_subpath(q, p, "name");
    const char *s = *out;
    if (!*s || strlen(s) > 31)
        return tl_err(L, q, "a profile name is 1 to 31 characters");
    for (const char *c = s; *c; c++)
        if (!((*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') || (*c >= '0' && *c <= '9') || *c == '_' ||
              *c == '-'))
            return tl_err(L, q, "'%s': a profile name holds letters, digits, '_' and '-' only", s);
    for (int k = 0; k < i; k++)
        if (strcmp(t->profiles[k].name, s) == 0)
            return tl_err(L, q, "duplicate profile name '%s'", s);
    return 0;
}

/* profiles[i].inputs at p into pr->init (already the buffers' own). */
static int profile_inputs(Loader *L, json_t *obj, const char *p, TProfile *pr)
{
    Task *t = L->t;
    const char *key;
    json_t *v;
    if (!json_is_object(obj))
        return tl_err(L, p, "expected an object, got %s", tl_json_type(obj));
    json_object_foreach(obj, key, v) {
        char q[PATH_MAX_LEN];
        if (key[0] == '_')
            continue;
        tl_subpath(q, p, key);
        int b = tl_buffer_find(t, key);
        if (b < 0) {
            const char *names[64];
            char hint[TL_HINT_LEN];
            int n = 0;
            for (int i = 0; i < t->nbufs && n < 64; i++)
                if (t->bufs[i].role == ROLE_INPUT)
                    names[n++] = t->bufs[i].name;
            return tl_err(L, q, "unknown buffer%s", tl_suggest(hint, sizeof(hint), key, names, n));
        }
        if (t->bufs[b].role != ROLE_INPUT)
            return tl_err(L, q, "buffer '%s' is not an input: only inputs have an init", key);
        if (tl_load_init(L, v, q, &t->bufs[b], &pr->init[b]) < 0)
            return -1;
    }
    return 0;
}

int tl_load_profiles(Loader *L, json_t *root)
{
    static const char *const keys[] = {"name", "description", "timing", "inputs", NULL};
    Task *t = L->t;
    json_t *arr, *v;
    size_t i;
    int timed = 0;
    if (tl_get_field(L, root, "", "profiles", 0, JSON_ARRAY, &arr) < 0)
        return -1;
    if (!arr)
        return 0;
    if (json_array_size(arr) == 0)
        return tl_err(L, "profiles", "empty list (leave \"profiles\" out for one profile of the buffers' inits)");
    if (json_array_size(arr) > PLAN_MAX_PROFILES)
        return tl_err(L, "profiles", "%zu profiles, at most %d", json_array_size(arr), PLAN_MAX_PROFILES);
    t->profiles = xcalloc(json_array_size(arr), sizeof(*t->profiles));
    json_array_foreach(arr, i, v) {
        char p[PATH_MAX_LEN], q[PATH_MAX_LEN];
        tl_idxpath(p, "profiles", (int)i);
        if (!json_is_object(v))
            return tl_err(L, p, "expected an object, got %s", tl_json_type(v));
        TProfile *pr = &t->profiles[t->nprofiles++];
        pr->timing = 1;
        pr->init = xcalloc((size_t)t->nbufs, sizeof(*pr->init));
        for (int b = 0; b < t->nbufs; b++)
            pr->init[b] = t->bufs[b].init;
        if (tl_check_keys(L, v, p, keys) < 0 || profile_name(L, v, p, (int)i, &pr->name) < 0 ||
            tl_get_string(L, v, p, "description", 0, &pr->description) < 0 ||
            tl_get_bool(L, v, p, "timing", &pr->timing) < 0)
            return -1;
        json_t *in = json_object_get(v, "inputs");
        tl_subpath(q, p, "inputs");
        if (in && profile_inputs(L, in, q, pr) < 0)
            return -1;
        timed += pr->timing;
    }
    if (!timed)
        return tl_err(L, "profiles", "no profile has \"timing\": true: timing and the A/B need at least one");
    return 0;
}

void tl_profiles_free(Task *t)
{
    for (int k = 0; k < t->nprofiles; k++) {
        free(t->profiles[k].name);
        free(t->profiles[k].description);
        free(t->profiles[k].init);
    }
    free(t->profiles);
    t->profiles = NULL;
    t->nprofiles = 0;
}

/* ---- accessors ---------------------------------------------------------- */

int task_nprofiles(const Task *t)
{
    return t->nprofiles > 0 ? t->nprofiles : 1;
}

const char *task_profile_name(const Task *t, int k)
{
    return t->nprofiles > 0 && k >= 0 && k < t->nprofiles ? t->profiles[k].name : "default";
}

const char *task_profile_description(const Task *t, int k)
{
    const char *d = t->nprofiles > 0 && k >= 0 && k < t->nprofiles ? t->profiles[k].description : NULL;
    return d ? d : "";
}

int task_profile_timing(const Task *t, int k)
{
    return t->nprofiles > 0 && k >= 0 && k < t->nprofiles ? t->profiles[k].timing : k == 0;
}

int task_profile_find(const Task *t, const char *name, EvoErr *err)
{
    const char *names[PLAN_MAX_PROFILES];
    char hint[TL_HINT_LEN], known[PLAN_MAX_PROFILES * 33] = "";
    int n = task_nprofiles(t);
    for (int k = 0; k < n; k++) {
        names[k] = task_profile_name(t, k);
        if (strcmp(names[k], name) == 0)
            return k;
        snprintf(known + strlen(known), sizeof(known) - strlen(known), "%s%s", k ? " " : "", names[k]);
    }
    err_set(err, "%s: unknown profile '%s'%s (the task's profiles: %s)", t->path, name,
            tl_suggest(hint, sizeof(hint), name, names, n), known);
    return -1;
}

int task_time_profiles(Task *t, const char *names, EvoErr *err)
{
    int want[PLAN_MAX_PROFILES] = {0}, picked = 0;
    char *list = xstrdup(names ? names : ""), *save = NULL;
    int rc = 0;
    for (char *name = strtok_r(list, ",", &save); name && rc == 0; name = strtok_r(NULL, ",", &save)) {
        int k = task_profile_find(t, name, err);
        if (k < 0)
            rc = -1;
        else if (want[k])
            rc = err_set(err, "profile '%s' is named twice", name);
        else
            picked += want[k] = 1;
    }
    free(list);
    if (rc == 0 && picked == 0)
        rc = err_set(err, "no profile named: give one or more of the task's, separated by commas");
    if (rc)
        return -1;
    for (int k = 0; k < t->nprofiles; k++)   /* none: the implicit "default", timed already */
        t->profiles[k].timing = want[k];
    return 0;
}

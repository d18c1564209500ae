/*
 * task_priv.h: the Task as the files of src/task/ share it, never included
 * outside that folder. The loader (task.c, with the JSON-path helpers and
 * the name and expression checks of task_json.c and the launch plans of
 * task_launch.c) builds it; the accessors (task_access.c) and the resolver
 * (task_resolve.c) read it. Functions here carry the tl_ prefix; the public
 * API is task.h.
 */
#ifndef EVO_TASK_PRIV_H
#define EVO_TASK_PRIV_H

#include <jansson.h>

#include "device.h"
#include "task/entry.h"
#include "task/expr.h"
#include "task/plan.h"
#include "util.h"

typedef struct Task Task;   /* also in task.h, whose functions the files here define */

/* Bounds on what a spec may hold (README.md, "Trust model"): a spec is at
 * most FILE_READ_MAX bytes, and nothing in it multiplies past these. */
#define TASK_MAX_ITEMS  4096      /* params, dims, derived, constraints, buffers, entries, launches, args */
#define TASK_MAX_SHAPES 1024      /* correctness shapes */
#define TASK_MAX_VALUES 1000000   /* values of one param (and any other list) */

/* Room for a JSON path such as "launch[1].args[3].tensor_map.box[0]". */
#define PATH_MAX_LEN 384

/* ---- the Task ---------------------------------------------------------- */

typedef struct TExpr {
    Expr *e;       /* NULL when absent (optional field) */
    char *path;    /* JSON path, for errors: "launch[1].grid[0]" */
} TExpr;

typedef struct TParam {
    char    *name;
    int64_t *values;
    int      nvalues;
    int      def;      /* index into values */
    int     *order;    /* indices of values in increasing order: task_param_find in O(log n) */
} TParam;

typedef struct TDerived {
    char *name;
    TExpr x;
} TDerived;

typedef struct TConstraint {
    TExpr x;
    char *why;         /* NULL when not given */
} TConstraint;

/* An input's generator as written: row_len is resolved per shape from
 * the buffer's shape entries after row_dim. */
typedef struct TInit {
    InitSpec s;
    int      row_dim;    /* s.rows: index into the buffer's shape; -1: none */
} TInit;

/* A value a dim picks (task_choice.c): one value (dim -1), or values[i]
 * on a shape where the dim's value is i. */
typedef struct TChoice {
    int     dim;         /* index into dims; -1: one value */
    int     n;           /* values; 0: not given */
    double *v;           /* the values; a dtype's as its DType */
    char   *path;        /* JSON path, for errors: "buffers[0].dtype" */
} TChoice;

typedef struct TBuffer {
    char    *name;
    TChoice  dtype;
    BufRole  role;
    TInit    init;
    TChoice  atol, rtol; /* n == 0: the task's tolerance */
    TExpr   *shape;
    char   **shape_src;  /* [nshape]: each entry as written when a string, else NULL */
    int      nshape;
} TBuffer;

/* An input profile (task_init.c): inits of every buffer, the buffers'
 * own where the profile names none. */
typedef struct TProfile {
    char  *name, *description;
    int    timing;
    TInit *init;         /* [nbufs] */
} TProfile;

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
    TExpr   when;      /* optional: the argument is passed only where it holds */
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
    int      *dim_follow;    /* per dim: the earlier dim whose value it takes where not set, or -1 */
    int       ndims;
    int      *compile_dims;  /* indices into dims */
    int       ncompile;
    int       nextra;        /* correctness shapes */
    int64_t  *extra_vals;    /* nextra * ndims */
    unsigned char *extra_set;/* nextra * ndims: 1 when that shape sets the dim */
    TBuffer  *bufs;
    int       nbufs;
    TProfile *profiles;      /* NULL when the spec has none: one implicit "default" */
    int       nprofiles;
    TLaunch  *launches, *ref_launches;
    int       nlaunches, nref_launches;
    TChoice   atol, rtol;
    TExpr     flops, bytes, min_ctas;
    char    **copts;
    int       ncopts;
    int       fast_math, lineinfo, max_spill, max_stack, arch_specific;
    void     *names;         /* tsearch tree of TName: every param, dim, derived and buffer name */
};

/* One entry of Task.names: lookups and duplicate checks in O(log n). */
typedef enum TNameKind { TN_PARAM, TN_DIM, TN_DERIVED, TN_BUFFER } TNameKind;
typedef struct TName {
    const char *name;        /* the Task's own copy */
    TNameKind   kind;
    int         idx;         /* into params, dim_names, derived or bufs */
} TName;

/* The loader's state: the Task being built, the spec path for messages. */
typedef struct Loader {
    Task       *t;
    const char *file;
    EvoErr     *err;
} Loader;

/* Scopes for name checks: an expression sees the first nderived derived
 * names; SCOPE_ALL sees them all. */
enum { SCOPE_ALL = -1 };

/* Variable slots: kind << 16 | index, resolved once at load time so that
 * evaluation never compares names. */
enum { SLOT_PARAM = 1, SLOT_DIM, SLOT_DERIVED, SLOT_DEVICE };
#define MAX_DEVICE_VARS 64

/* ---- partial evaluation (task_resolve.c) -------------------------------- */

/* A configuration evaluated on every shape one expression at a time, for
 * the exact enumeration of the valid space (task_space.c): each shape's
 * derived values are kept between calls, so a caller that changes a few
 * params re-evaluates only the derived values that read them. The device
 * facts are looked up once, at open. */
typedef struct TProbe TProbe;
/* A probe over vals (read at every evaluation, so the caller may change
 * it in place; kept by reference) and dev (may be NULL, as for
 * task_check). Every derived value starts as integer 0: evaluate derived
 * d with tl_probe_derived before anything that reads it. Fresh; release
 * with tl_probe_close. */
TProbe *tl_probe_open(const Task *t, const int64_t *vals, const DeviceInfo *dev);
/* Evaluate derived value d on shape s and keep it. Returns 0, or -1 with
 * err as task_check reports an evaluation error. */
int tl_probe_derived(TProbe *p, int shape, int d, EvoErr *err);
/* Keep on shape to the value derived value d holds on shape from (for a
 * value that reads no dim in which the two shapes differ). */
void tl_probe_derived_copy(TProbe *p, int from, int to, int d);
/* Constraint c on shape s: 1 true, 0 false, -1 evaluation error (err). */
int tl_probe_constraint(TProbe *p, int shape, int c, EvoErr *err);
/* Mark what is known for tl_probe_excluded: params[i] and derived[d]
 * nonzero for the params assigned and the derived values evaluated (both
 * kept by reference; the caller updates them in place). */
void tl_probe_known(TProbe *p, const unsigned char *params, const unsigned char *derived);
/* 1 when constraint c fails (is false or cannot be evaluated) on shape s
 * whatever values the params not known yet take (expr_eval_partial, e.g.
 * "WS == 0 || WARPS == 4" once WS = 1 and WARPS = 2), else 0. Needs
 * tl_probe_known first. */
int tl_probe_excluded(TProbe *p, int shape, int c);
/* Release a probe and set *p to NULL; safe on NULL. */
void tl_probe_close(TProbe **p);

/* ---- JSON-path helpers (task_json.c) ------------------------------------ */

/* Set L->err to "<file>: <path>: <what>" (or "<file>: <what>" when path is
 * empty). Returns -1. */
int tl_err(Loader *L, const char *path, const char *fmt, ...) EVO_PRINTF(3, 4);
/* buf (PATH_MAX_LEN bytes) = "path.key" or "path[i]"; truncated when long. */
void tl_subpath(char *buf, const char *path, const char *key);
void tl_idxpath(char *buf, const char *path, int i);
/* "an object", "a string", ... for messages. */
const char *tl_json_type(const json_t *v);
/* Reject keys of obj not in allowed (NULL-terminated); keys starting with
 * '_' are comments. Returns 0 or -1 (L->err, with a suggestion). */
int tl_check_keys(Loader *L, json_t *obj, const char *path, const char *const *allowed);
/* Fetch obj[key] with a type check (type < 0: any). Absent: *out = NULL,
 * an error only when required. Returns 0 or -1 (L->err). */
int tl_get_field(Loader *L, json_t *obj, const char *path, const char *key, int required, int type,
                 json_t **out);
/* obj[key]: a required, non-empty array. Returns 0 or -1 (L->err). */
int tl_get_list(Loader *L, json_t *obj, const char *path, const char *key, json_t **out);
/* obj[key] as a fresh string (NULL when absent and not required). */
int tl_get_string(Loader *L, json_t *obj, const char *path, const char *key, int required, char **out);
/* obj[key] as 0 or 1 into *out, left alone when absent. */
int tl_get_bool(Loader *L, json_t *obj, const char *path, const char *key, int *out);
/* v (at JSON path p) as a number or an integer. Returns 0 or -1 (L->err). */
int tl_get_number(Loader *L, json_t *v, const char *p, double *out);
int tl_get_int(Loader *L, json_t *v, const char *p, int64_t *out);
/* obj[key]: a required, non-empty list of unique identifiers; *out is
 * fresh (*n strings) even on failure. */
int tl_get_name_list(Loader *L, json_t *obj, const char *path, const char *key, char ***out, int *n);

/* Refuse a spec that still holds TODO markers (strings or keys holding
 * "TODO", outside '_' comments), as `evoeng init` writes them: the error
 * names the first one's JSON path and the count. Returns 0 or -1. */
int tl_check_todo(Loader *L, json_t *root);

/* ---- names and expressions (task_json.c) -------------------------------- */

/* Room for a suggestion: " (did you mean 'BLOCK_M'?)". */
#define TL_HINT_LEN 1024

/* " (did you mean 'X'?)" for the candidate closest to name (expr_closest
 * over cands[0..n)), or "" when none is close, into buf (size bytes).
 * Returns buf. */
const char *tl_suggest(char *buf, size_t size, const char *name, const char *const *cands, int n);
/* Index of the dim called name, or -1 with err "unknown dim 'X'" and a
 * suggestion. */
int tl_dim_index(const Task *t, const char *name, EvoErr *err);

/* Index of s among names[0..n) / the params / the buffers, or -1. */
int tl_find_name(char *const *names, int n, const char *s);
int tl_param_find(const Task *t, const char *s);
int tl_buffer_find(const Task *t, const char *s);
/* Parse an expression from a JSON string, integer, real or boolean at
 * path p into *x (which keeps a copy of p), check that its names are
 * visible (nderived: how many derived names, or SCOPE_ALL; arg_context:
 * buffers are named in the suggestions) and bind its slots. Returns 0 or
 * -1 (L->err); *x is released with tl_texpr_free either way. */
int tl_parse_texpr(Loader *L, json_t *v, const char *p, int nderived, int arg_context, TExpr *x);
/* obj[key], when present, into *x as an expression at path.key that sees
 * every name (tl_parse_texpr); absent: *x is left alone. */
int tl_opt_texpr(Loader *L, json_t *obj, const char *path, const char *key, TExpr *x);
/* Release x's expression and path; safe on a zeroed TExpr. */
void tl_texpr_free(TExpr *x);
/* The smallest index k whose item equals an earlier one (cmp on items of
 * size bytes), or -1: a sort, O(n log n), so no spec makes it quadratic.
 * tl_cmp_str compares char * items, tl_cmp_i64 int64_t items. */
int tl_first_repeat(const void *base, int n, size_t size, int (*cmp)(const void *, const void *));
/* The indices 0..n-1 sorted by item, ties by index (fresh array), and the
 * first repeat found through such an order. */
int *tl_sort_index(const void *base, int n, size_t size, int (*cmp)(const void *, const void *));
int tl_first_repeat_sorted(const void *base, const int *order, int n, size_t size,
                           int (*cmp)(const void *, const void *));
int tl_cmp_str(const void *a, const void *b);
int tl_cmp_i64(const void *a, const void *b);
/* n entries at path p within max, else -1 with "N entries; at most MAX". */
int tl_check_count(Loader *L, const char *p, size_t n, size_t max);
/* A name for params, dims, derived and buffers: an identifier, unique
 * among all of them and not a device variable. Returns 0 or -1 (L->err). */
int tl_check_new_name(Loader *L, const char *p, const char *s);
/* Enter name (owned by the Task, checked with tl_check_new_name) into
 * t->names as entry idx of its kind. */
void tl_name_add(Task *t, const char *name, TNameKind kind, int idx);
/* Free t->names. */
void tl_names_free(Task *t);

/* ---- inits and profiles (task_init.c) ---------------------------------- */

/* An init object at path p for buffer b (its shape names a row scale's
 * dim) into *out. Returns 0 or -1 (L->err). */
int tl_load_init(Loader *L, json_t *init, const char *p, const TBuffer *b, TInit *out);
/* root.profiles, after the buffers. Returns 0 or -1 (L->err). */
int tl_load_profiles(Loader *L, json_t *root);
void tl_profiles_free(Task *t);

/* ---- values a dim picks (task_choice.c) -------------------------------- */

/* v at path p into *out: one value, or {"dim": NAME, "values": [...]}
 * (dtype: dtype names, and the dim must be a compile dim; else
 * non-negative numbers), checked on every shape as loaded. Returns 0 or
 * -1 (L->err); *out is released with tl_choice_free either way. */
int tl_load_choice(Loader *L, json_t *v, const char *p, int dtype, TChoice *out);
/* c's value on shape into *out (may be NULL: a check only). Returns 0,
 * or -1 with err "<spec>: <path>: DTYPE = 2 (shape ...) picks none of
 * its 2 values ..." when the dim's value indexes no value. */
int tl_choice_at(const Task *t, const TChoice *c, int shape, double *out, EvoErr *err);
/* Release c's values and path and mark it not given; safe on a zeroed one. */
void tl_choice_free(TChoice *c);

/* ---- launch plans (task_launch.c) --------------------------------------- */

/* obj.launch at path ("" or "reference"): the launches of a kernel whose
 * entries are entries[0..nentries). *out (fresh, *nout launches) is kept
 * on failure, for tl_launches_free. Returns 0 or -1 (L->err). */
int tl_load_launches(Loader *L, json_t *obj, const char *path, char **entries, int nentries, TLaunch **out,
                     int *nout);
/* Release n launches and the array l; safe on NULL. */
void tl_launches_free(TLaunch *l, int n);

#endif

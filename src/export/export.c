/*
 * export: nvcc flags for a recorded NVRTC target and options, the launch
 * plan as comments and JSON, and the #undef lines that close a rendered
 * source. See export.h.
 */
#include "export/export.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#include "compile/clex.h"
#include "config.h"
#include "util.h"

/* ---- nvcc flags --------------------------------------------------------- */

/* Recorded NVRTC options that nvcc takes unchanged: exact names, and
 * prefixes (an option that starts with one of them). */
static const char *const keep_exact[] = {
    "--use_fast_math", "-use_fast_math", "-lineinfo", "--generate-line-info", "-G", "--device-debug",
    "--extra-device-vectorization", "-extra-device-vectorization", NULL,
};
static const char *const keep_prefix[] = {
    "-std=", "--std=", "-D", "--define-macro", "-U", "--undefine-macro", "--maxrregcount", "-maxrregcount",
    "--fmad", "-fmad", "--ftz", "-ftz", "--prec-div", "-prec-div", "--prec-sqrt", "-prec-sqrt", NULL,
};
/* Options whose value is a separate token when given bare ("-D", "NAME"). */
static const char *const takes_value[] = {"-D", "-U", "-I", "--define-macro", "--undefine-macro", "--include-path", NULL};

static int in_list(const char *const *list, const char *s, int prefix)
{
    for (int i = 0; list[i]; i++)
        if (prefix ? strncmp(s, list[i], strlen(list[i])) == 0 : strcmp(s, list[i]) == 0)
            return 1;
    return 0;
}

/* An include path option, with the path (or NULL when it is a bare
 * option whose path is the next token). 0 when o is none. */
static int include_opt(const char *o, const char **path)
{
    static const char *const forms[] = {"--include-path=", "-I", NULL};
    for (int i = 0; forms[i]; i++) {
        size_t n = strlen(forms[i]);
        if (strncmp(o, forms[i], n) == 0) {
            *path = o[n] ? o + n : NULL;
            return 1;
        }
    }
    if (strcmp(o, "--include-path") == 0) {
        *path = NULL;
        return 1;
    }
    return 0;
}

static int target_valid(const char *t)
{
    if (!t || strncmp(t, "sm_", 3) != 0 || !isdigit((unsigned char)t[3]))
        return 0;
    const char *p = t + 3;
    while (isdigit((unsigned char)*p))
        p++;
    return *p == 0 || ((*p == 'a' || *p == 'f') && p[1] == 0);
}

char *export_nvcc_flags(const char *target, const char *nvrtc_options)
{
    if (!target_valid(target))
        return NULL;
    StrBuf sb = {0};
    size_t tl = strlen(target);
    if (isalpha((unsigned char)target[tl - 1]))
        sb_printf(&sb, "-gencode=arch=compute_%s,code=%s", target + 3, target);
    else
        sb_printf(&sb, "-arch=%s", target);
    int have_std = 0;
    char *opts = xstrdup(nvrtc_options ? nvrtc_options : "");
    char *save = NULL, *pending = NULL; /* a bare -D/-I waiting for its value */
    for (char *o = strtok_r(opts, " \t\n", &save); o; o = strtok_r(NULL, " \t\n", &save)) {
        const char *path;
        if (pending) { /* the toolkit's own include dir: nvcc has it already */
            if (!(include_opt(pending, &path) && strcmp(o, EVO_CUDA_INCLUDE) == 0))
                sb_printf(&sb, " %s %s", pending, o);
            pending = NULL;
            continue;
        }
        if (in_list(takes_value, o, 0)) {
            pending = o;
            continue;
        }
        if (include_opt(o, &path)) {
            if (strcmp(path, EVO_CUDA_INCLUDE) != 0)
                sb_printf(&sb, " %s", o);
            continue;
        }
        if (in_list(keep_exact, o, 0) || in_list(keep_prefix, o, 1)) {
            if (strncmp(o, "-std", 4) == 0 || strncmp(o, "--std", 5) == 0)
                have_std = 1;
            sb_printf(&sb, " %s", o);
        }
    }
    free(opts);
    if (!have_std)
        sb_append(&sb, " -std=c++17");
    return sb_take(&sb);
}

/* ---- the launch plan ---------------------------------------------------- */

const char *export_role_name(BufRole r)
{
    return r == ROLE_INPUT ? "input" : r == ROLE_OUTPUT ? "output" : "scratch";
}

char *export_launch_lines(const Plan *p)
{
    StrBuf sb = {0};
    for (int i = 0; i < p->nlaunches; i++) {
        const PlanLaunch *l = &p->launches[i];
        sb_printf(&sb, "//   %d. %s<<<dim3(%u, %u, %u), dim3(%u, %u, %u), %u>>>(", i + 1, l->entry, l->grid[0],
                  l->grid[1], l->grid[2], l->block[0], l->block[1], l->block[2], l->smem);
        for (int a = 0; a < l->nargs; a++) {
            const PlanArg *g = &l->args[a];
            if (g->kind == ARG_BUFFER)
                sb_printf(&sb, "%s%s", a ? ", " : "", p->buffers[g->buffer].name);
            else if (g->kind == ARG_TMAP)
                sb_printf(&sb, "%stensor_map(%s)", a ? ", " : "", p->buffers[g->buffer].name);
            else if (g->kind == ARG_F32 || g->kind == ARG_F64)
                sb_printf(&sb, "%s%.9g", a ? ", " : "", g->f);
            else
                sb_printf(&sb, "%s%lld", a ? ", " : "", (long long)g->i);
        }
        sb_append(&sb, ")\n");
        if (l->smem > 48 * 1024)
            sb_printf(&sb, "//      (over 48 KiB of dynamic shared memory: first call cudaFuncSetAttribute(%s, "
                           "cudaFuncAttributeMaxDynamicSharedMemorySize, %u))\n", l->entry, l->smem);
    }
    for (int b = 0; b < p->nbuffers; b++)
        sb_printf(&sb, "//   buffer %s: %s x %llu (%s)\n", p->buffers[b].name, dtype_name(p->buffers[b].dtype),
                  (unsigned long long)p->buffers[b].count, export_role_name(p->buffers[b].role));
    return sb_take(&sb);
}

static json_t *u64_list(const uint64_t *v, int n)
{
    json_t *a = json_array();
    for (int i = 0; i < n; i++)
        json_array_append_new(a, json_integer((json_int_t)v[i]));
    return a;
}

/* A tensor-map argument as the task spec writes it, every field resolved. */
static json_t *tmap_json(const Plan *p, const PlanArg *g)
{
    const PlanTmap *t = &g->tmap;
    uint64_t box[TMAP_MAX_RANK], es[TMAP_MAX_RANK];
    for (int d = 0; d < t->rank; d++) {
        box[d] = t->box[d];
        es[d] = t->elem_strides[d];
    }
    return json_pack("{s:s, s:o, s:o, s:o, s:o, s:s, s:s, s:s}", "buffer", p->buffers[g->buffer].name, "dims",
                     u64_list(t->dims, t->rank), "strides", u64_list(t->strides, t->rank - 1), "box",
                     u64_list(box, t->rank), "element_strides", u64_list(es, t->rank), "swizzle",
                     tmap_swizzle_names[t->swizzle], "l2_promotion", tmap_l2_names[t->l2_promotion], "oob_fill",
                     t->oob_nan ? "nan" : "zero");
}

/* An input's generator as a task spec writes it, with the row length the
 * plan resolved ("row_len", elements per row). */
static json_t *export_init_json(const InitSpec *g)
{
    json_t *o = json_pack("{s:s}", "dist", init_kind_names[g->kind]);
    switch (g->kind) {
    case INIT_UNIFORM:
        json_object_set_new(o, "low", json_real(g->a));
        json_object_set_new(o, "high", json_real(g->b));
        break;
    case INIT_CONST:
        json_object_set_new(o, "value", json_real(g->a));
        break;
    case INIT_ZERO:
        break;
    default:
        json_object_set_new(o, "mean", json_real(g->a));
        json_object_set_new(o, "std", json_real(g->b));
        if (g->kind == INIT_OUTLIER) {
            json_object_set_new(o, "p", json_real(g->p));
            json_object_set_new(o, "outlier_std", json_real(g->c));
        }
    }
    if (g->rows != ROWS_NONE) {
        int logn = g->rows == ROWS_LOGNORMAL;
        json_object_set_new(o, "row_scale", json_pack("{s:s, s:f, s:f, s:I}", "dist", row_scale_names[g->rows],
                                                      logn ? "mean" : "low", g->ra, logn ? "std" : "high", g->rb,
                                                      "row_len", (json_int_t)g->row_len));
    }
    return o;
}

/* "profiles": each with its name, whether timing uses it, and the
 * generator of every input. */
static json_t *profiles_json(const Plan *p)
{
    json_t *arr = json_array();
    for (int k = 0; k < plan_nprofiles(p); k++) {
        json_t *in = json_object();
        for (int b = 0; b < p->nbuffers; b++)
            if (p->buffers[b].role == ROLE_INPUT)
                json_object_set_new(in, p->buffers[b].name, export_init_json(plan_init(p, k, b)));
        json_array_append_new(arr, json_pack("{s:s, s:b, s:o}", "name", plan_profile_name(p, k), "timing",
                                             plan_profile_timing(p, k), "inputs", in));
    }
    return arr;
}

json_t *export_plan_json(const Plan *p)
{
    json_t *bufs = json_array(), *ls = json_array();
    for (int b = 0; b < p->nbuffers; b++) {
        const PlanBuffer *pb = &p->buffers[b];
        json_array_append_new(bufs, json_pack("{s:s, s:s, s:I, s:s, s:b}", "name", pb->name, "dtype",
                                              dtype_name(pb->dtype), "count", (json_int_t)pb->count, "role",
                                              export_role_name(pb->role), "used", pb->for_cand));
    }
    for (int i = 0; i < p->nlaunches; i++) {
        const PlanLaunch *l = &p->launches[i];
        json_t *args = json_array();
        for (int a = 0; a < l->nargs; a++) {
            const PlanArg *g = &l->args[a];
            static const char *const kinds[] = {"buffer", "i32", "i64", "f32", "f64", "tensor_map"};
            json_t *v = g->kind == ARG_TMAP     ? tmap_json(p, g)
                        : g->kind == ARG_BUFFER ? json_string(p->buffers[g->buffer].name)
                        : g->kind == ARG_I32 || g->kind == ARG_I64 ? json_integer(g->i)
                                                                  : json_real(g->f);
            json_array_append_new(args, json_pack("{s:o}", kinds[g->kind], v));
        }
        json_array_append_new(ls, json_pack("{s:s, s:[I,I,I], s:[I,I,I], s:I, s:o}", "entry", l->entry, "grid",
                                            (json_int_t)l->grid[0], (json_int_t)l->grid[1], (json_int_t)l->grid[2],
                                            "block", (json_int_t)l->block[0], (json_int_t)l->block[1],
                                            (json_int_t)l->block[2], "smem", (json_int_t)l->smem, "args", args));
    }
    return json_pack("{s:s, s:f, s:f, s:o, s:o, s:o}", "shape", p->shape_label ? p->shape_label : "", "flops",
                     p->flops, "bytes", p->bytes, "buffers", bufs, "launches", ls, "profiles", profiles_json(p));
}

/* ---- macros ------------------------------------------------------------- */

char *export_undef_lines(const char *src)
{
    StrBuf sb = {0};
    const char *line = src;
    while (line && *line) {
        const char *nl = strchr(line, '\n'), *name, *after;
        size_t n = clex_define_name(line, &name, &after);
        if (n > 0) {
            char *line_undef = xasprintf("#undef %.*s\n", (int)n, name);
            if (!sb.s || !strstr(sb.s, line_undef)) /* '#' only starts a line here */
                sb_append(&sb, line_undef);
            free(line_undef);
        }
        line = nl ? nl + 1 : NULL;
    }
    return sb_take(&sb);
}

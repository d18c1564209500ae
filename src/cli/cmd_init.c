/*
 * cmd_init: `evoeng init KERNEL.cu [-o task.json]`. Reads a kernel file as
 * it is (template kernels, namespaces, host launchers and all), finds its
 * __global__ kernels (compile/kfile.h) and writes a starting task spec:
 *
 *   - entries: every kernel, by its NVRTC name expression ("util::fill");
 *     a template kernel as "k<TODO_S, TODO_D>", its arguments to fill in;
 *   - params: the file's #ifndef/#define knobs with their defaults;
 *   - buffers: one per pointer parameter: const -> input, else output,
 *     dtype from the pointee (float f32, __half f16, __nv_bfloat16 bf16,
 *     int i32), shape TODO;
 *   - dims: one per integer parameter, value TODO; the launch passes it;
 *   - launch: one launch per kernel, grid and block TODO, args in order;
 *   - reference: the kernel itself, the same launch, as a starting point.
 *
 * Every value still to be chosen is a "TODO..." string: task_load refuses
 * the spec with the JSON path of the first one until none is left, so
 * `evoeng check` on the fresh file says what to fill in.
 */
#include <ctype.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "commands.h"
#include "compile/kfile.h"
#include "template.h"

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

static int has_word_in(const char *s, const char *w)
{
    size_t n = strlen(w);
    for (const char *p = strstr(s, w); p; p = strstr(p + 1, w))
        if ((p == s || !(isalnum((unsigned char)p[-1]) || p[-1] == '_')) &&
            !(isalnum((unsigned char)p[n]) || p[n] == '_'))
            return 1;
    return 0;
}

/* The entry a kernel gets: its name, with TODO_<param> template arguments. */
static char *entry_of(const KfileKernel *k)
{
    if (!k->is_template)
        return xstrdup(k->name);
    StrBuf sb = {0};
    sb_printf(&sb, "%s<", k->name);
    for (int i = 0; i < k->ntparams; i++)
        sb_printf(&sb, "%sTODO_%s", i ? ", " : "", k->tnames[i]);
    sb_append(&sb, ">");
    return sb_take(&sb);
}

/* One kernel's launch (args in parameter order); buffers and dims grow. */
static json_t *launch_of(const KfileKernel *k, const char *entry, json_t *buffers, json_t *dims)
{
    json_t *args = json_array();
    for (int i = 0; i < k->nparams; i++) {
        const KfileParam *p = &k->params[i];
        char *base = base_type(p->type);
        if (strchr(p->type, '*')) {
            if (!json_object_get(dims, p->name)) {
                int seen = 0;
                size_t bi;
                json_t *b;
                json_array_foreach(buffers, bi, b)
                    seen |= strcmp(json_string_value(json_object_get(b, "name")), p->name) == 0;
                if (!seen) {
                    const char *dt = dtype_of(base);
                    char *todo = dt ? NULL : xasprintf("TODO: a dtype (f16 bf16 f32 i32) for %s", base);
                    json_array_append_new(buffers, json_pack("{s:s, s:s, s:[s], s:s}", "name", p->name, "dtype",
                                                             dt ? dt : todo, "shape", "TODO: element count",
                                                             "role", has_word_in(p->type, "const") ? "input"
                                                                                                   : "output"));
                    free(todo);
                }
            }
            json_array_append_new(args, json_string(p->name));
        } else if (strcmp(base, "int") == 0 || strcmp(base, "int32_t") == 0 || strcmp(base, "unsigned") == 0 ||
                   strcmp(base, "unsigned int") == 0 || strcmp(base, "uint32_t") == 0) {
            if (!json_object_get(dims, p->name))
                json_object_set_new(dims, p->name, json_string("TODO: the benchmark shape's value"));
            json_array_append_new(args, json_string(p->name));
        } else if (strcmp(base, "int64_t") == 0 || strcmp(base, "long") == 0 || strcmp(base, "long long") == 0 ||
                   strcmp(base, "size_t") == 0) {
            if (!json_object_get(dims, p->name))
                json_object_set_new(dims, p->name, json_string("TODO: the benchmark shape's value"));
            json_array_append_new(args, json_pack("{s:s}", "i64", p->name));
        } else if (strcmp(base, "float") == 0 || strcmp(base, "double") == 0) {
            char *todo = xasprintf("TODO: an expression for %s", p->name);
            json_array_append_new(args, json_pack("{s:s}", base[0] == 'f' ? "f32" : "f64", todo));
            free(todo);
        } else {
            char *todo = xasprintf("TODO: %s %s (pass a buffer, {\"i32\": e}, {\"f32\": e} or a tensor_map)",
                                   p->type, p->name);
            json_array_append_new(args, json_string(todo));
            free(todo);
        }
        free(base);
    }
    return json_pack("{s:s, s:[s], s:[s], s:o}", "entry", entry, "grid", "TODO: ceil_div(N, THREADS)", "block",
                     "TODO: THREADS", "args", args);
}

/* The #ifndef/#define knobs with their integer defaults. */
static json_t *params_of(const char *text)
{
    json_t *params = json_object();
    int n = 0;
    char **knobs = template_knobs(text, &n);
    for (int i = 0; i < n; i++) {
        char *pat = xasprintf("#define %s ", knobs[i]);
        const char *d = strstr(text, pat);
        long v = 0;
        char *end = NULL;
        int ok = d && (v = strtol(d + strlen(pat), &end, 10), end != d + strlen(pat)) &&
                 (*end == '\n' || *end == ' ' || *end == '\r' || *end == '\0');
        if (ok)
            json_object_set_new(params, knobs[i], json_pack("{s:[I], s:I}", "values", (json_int_t)v, "default",
                                                            (json_int_t)v));
        else
            json_object_set_new(params, knobs[i], json_pack("{s:s, s:s}", "values", "TODO: a list of integers",
                                                            "default", "TODO: one of the values"));
        free(pat);
        free(knobs[i]);
    }
    free(knobs);
    if (n == 0)
        json_object_set_new(params, "TODO_PARAM", json_pack("{s:[i], s:i}", "values", 1, "default", 1));
    return params;
}

/* The template path as the spec names it: relative to the spec's folder
 * when the kernel lives there, else absolute. */
static char *template_ref(const char *kernel, const char *out)
{
    char *kabs = path_absolute(kernel);
    if (!out)
        return kabs;
    char *odir0 = path_dirname(out);
    char *odir = path_absolute(odir0);
    char *kdir = path_dirname(kabs);
    char *r = strcmp(odir, kdir) == 0 ? xstrdup(kabs + strlen(kdir) + (kdir[strlen(kdir) - 1] == '/' ? 0 : 1))
                                      : xstrdup(kabs);
    free(odir0);
    free(odir);
    free(kdir);
    free(kabs);
    return r;
}

EvoExit cmd_init(const Settings *s)
{
    EvoErr err;
    char *text = NULL;
    if (!s->source) {
        errorf("init: give the kernel file (see 'evoeng init --help')");
        return EVO_EXIT_USAGE;
    }
    if (file_read(s->source, &text, NULL, &err) < 0) {
        errorf("init: %s", err.msg);
        return EVO_EXIT_FAIL;
    }
    if (s->output && access(s->output, F_OK) == 0) {
        errorf("init: %s exists: not overwriting it (remove it or give another -o)", s->output);
        free(text);
        return EVO_EXIT_FAIL;
    }
    KfileKernel *ks = NULL;
    int nk = kfile_kernels(text, &ks);
    if (nk == 0) {
        errorf("init: %s: no __global__ kernel definition found", s->source);
        free(text);
        return EVO_EXIT_FAIL;
    }
    char *tpl = template_ref(s->source, s->output);
    char *name = xstrdup(ks[0].name);
    for (char *p = name; *p; p++)
        if (!(isalnum((unsigned char)*p) || *p == '_'))
            *p = '_';
    json_t *entries = json_array(), *buffers = json_array(), *dims = json_object(), *launch = json_array();
    for (int i = 0; i < nk; i++) {
        char *e = entry_of(&ks[i]);
        json_array_append_new(entries, json_string(e));
        json_array_append_new(launch, launch_of(&ks[i], e, buffers, dims));
        free(e);
    }
    if (json_object_size(dims) == 0)
        json_object_set_new(dims, "TODO_N", json_string("TODO: a problem size"));
    char *note = xasprintf("written by `evoeng init %s`: replace every TODO (`evoeng check` names the next one), "
                           "keep the launches the benchmark runs, and make the reference an obviously correct "
                           "kernel (it starts as this one)", s->source);
    json_t *root = json_object();
    json_object_set_new(root, "_evoeng_init", json_string(note));
    json_object_set_new(root, "_todo_entries",
                        json_string("a template kernel's entry is an instantiation such as k<128, 64>; its "
                                    "arguments may name params or compile_dims (not the template's own parameter "
                                    "names: a macro S would rewrite them)"));
    json_object_set_new(root, "name", json_string(name));
    json_object_set_new(root, "description", json_string("TODO: one line on what the kernel computes"));
    json_object_set_new(root, "template", json_string(tpl));
    json_object_set_new(root, "entries", entries);
    json_object_set_new(root, "params", params_of(text));
    json_object_set_new(root, "dims", dims);
    json_object_set_new(root, "buffers", buffers);
    json_object_set_new(root, "launch", launch);
    json_object_set_new(root, "reference", json_pack("{s:s, s:O, s:O}", "source", tpl, "entries", entries,
                                                     "launch", launch));
    json_object_set_new(root, "tolerance", json_pack("{s:f, s:f}", "atol", 1e-2, "rtol", 1e-2));
    char *out = json_dumps(root, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
    EvoExit rc = EVO_EXIT_OK;
    if (s->output) {
        StrBuf sb = {0};
        sb_printf(&sb, "%s\n", out);
        if (file_write(s->output, sb.s, sb.len, &err) < 0) {
            errorf("init: %s", err.msg);
            rc = EVO_EXIT_IO;
        } else {
            notef("wrote %s: %d kernel%s; fill in its TODOs, then `evoeng check %s`", s->output, nk,
                  nk == 1 ? "" : "s", s->output);
        }
        sb_free(&sb);
    } else {
        printf("%s\n", out);
    }
    free(out);
    json_decref(root);
    free(note);
    free(name);
    free(tpl);
    kfile_kernels_free(ks, nk);
    free(text);
    return rc;
}

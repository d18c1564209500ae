/*
 * cmd_init: `evoeng init KERNEL.cu [-o task.json] [--json]`. Reads a kernel
 * file as it is (template kernels, namespaces, host launchers and all) and
 * writes the starting task spec that cli/init_spec.h builds from what the
 * file says: with a host launcher, everything but the reference kernel;
 * without one, every open choice a "TODO..." string. task_load refuses a
 * spec with the JSON path of the first TODO until none is left, so
 * `evoeng check` on the fresh file says what to fill in. Never overwrites
 * a file. --json prints what it wrote.
 */
#include <ctype.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/commands.h"
#include "cli/init_spec.h"
#include "msg.h"

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

/* --json: what init wrote, {"path", "bytes", "kernels", "entries", "todos",
 * "params", "constraints"}, and the spec itself as "spec" when it went to
 * stdout. */
static void print_json(const Settings *s, json_t *spec, size_t bytes, int nk, int ntodo)
{
    json_t *o = json_pack("{s:o, s:I, s:i, s:O, s:i, s:i, s:i}", "path",
                          s->output ? json_string(s->output) : json_null(), "bytes", (json_int_t)bytes, "kernels", nk,
                          "entries", json_object_get(spec, "entries"), "todos", ntodo, "params",
                          (int)json_object_size(json_object_get(spec, "params")), "constraints",
                          (int)json_array_size(json_object_get(spec, "constraints")));
    if (!s->output)
        json_object_set(o, "spec", spec);
    out_json_doc(o);
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
    char *tpl = template_ref(s->source, s->output);
    json_t *spec = NULL;
    int ntodo = 0;
    int nk = init_spec_build(text, s->source, tpl, &spec, &ntodo);
    free(tpl);
    free(text);
    if (nk == 0) {
        errorf("init: %s: no __global__ kernel definition found", s->source);
        return EVO_EXIT_FAIL;
    }
    char *out = json_dumps(spec, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
    StrBuf sb = {0};
    sb_printf(&sb, "%s\n", out ? out : "null");
    free(out);
    EvoExit rc = EVO_EXIT_OK;
    if (s->output && file_write(s->output, sb.s, sb.len, &err) < 0) {
        errorf("init: %s", err.msg);
        rc = EVO_EXIT_IO;
    } else if (s->json) {
        print_json(s, spec, sb.len, nk, ntodo);
    } else if (s->output) {
        progressf("wrote %s: %d kernel%s, %d TODO%s left; then `evoeng check %s`", s->output, nk,
                  nk == 1 ? "" : "s", ntodo, ntodo == 1 ? "" : "s", s->output);
    } else {
        fputs(sb.s, stdout);
    }
    sb_free(&sb);
    json_decref(spec);
    return rc;
}

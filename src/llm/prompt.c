/*
 * prompt: placeholder rendering of the prompt files and the assembly of
 * EvoEngineer's three prompt modes (see prompt.h). The formatting of the
 * history (I2) and insights (I3) sections lives here too, so that the
 * evolutionary loop only hands over numbers and strings.
 */
#include <ctype.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "llm/prompt.h"

/* ---- variables -------------------------------------------------------- */

void prompt_vars_set(PromptVars *v, const char *name, const char *value)
{
    for (int i = 0; i < v->n; i++) {
        if (strcmp(v->names[i], name) == 0) {
            free(v->values[i]);
            v->values[i] = xstrdup(value ? value : "");
            return;
        }
    }
    if (v->n == v->cap) {
        v->cap = v->cap ? 2 * v->cap : 16;
        v->names = xrealloc(v->names, (size_t)v->cap * sizeof *v->names);
        v->values = xrealloc(v->values, (size_t)v->cap * sizeof *v->values);
    }
    v->names[v->n] = xstrdup(name);
    v->values[v->n] = xstrdup(value ? value : "");
    v->n++;
}

void prompt_vars_setf(PromptVars *v, const char *name, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char *s = xvasprintf(fmt, ap);
    va_end(ap);
    prompt_vars_set(v, name, s);
    free(s);
}

const char *prompt_vars_get(const PromptVars *v, const char *name)
{
    for (int i = 0; v && i < v->n; i++)
        if (strcmp(v->names[i], name) == 0)
            return v->values[i];
    return NULL;
}

void prompt_vars_free(PromptVars *v)
{
    for (int i = 0; i < v->n; i++) {
        free(v->names[i]);
        free(v->values[i]);
    }
    free(v->names);
    free(v->values);
    memset(v, 0, sizeof *v);
}

void prompt_vars_set_device(PromptVars *v, const DeviceInfo *d)
{
    prompt_vars_set(v, "device_name", d->name);
    prompt_vars_set(v, "device_arch", d->arch);
    prompt_vars_setf(v, "device_sms", "%d", d->sm_count);
    prompt_vars_setf(v, "device_smem_per_block", "%d", d->smem_per_block_optin);
    prompt_vars_setf(v, "device_peak_tflops", "%.0f", d->peak_tflops_fp16);
    prompt_vars_setf(v, "device_peak_gbps", "%.0f", d->peak_gbps);
}

/* ---- rendering -------------------------------------------------------- */

int prompt_render(const char *template_text, const PromptVars *vars, char **out, EvoErr *err)
{
    StrBuf sb = {0};
    const char *p = template_text;
    int line = 1;
    while (*p) {
        if (p[0] != '{' || p[1] != '{') {
            if (*p == '\n')
                line++;
            sb_putc(&sb, *p++);
            continue;
        }
        const char *q = p + 2;
        while (*q == ' ' || *q == '\t')
            q++;
        const char *name = q;
        while (isalnum((unsigned char)*q) || *q == '_')
            q++;
        size_t nl = (size_t)(q - name);
        while (*q == ' ' || *q == '\t')
            q++;
        if (nl == 0 || q[0] != '}' || q[1] != '}') {
            size_t show = strcspn(p, "\n");
            err_set(err, "line %d: malformed placeholder \"%.*s\" (expected {{name}})", line, (int)(show > 40 ? 40 : show), p);
            goto fail;
        }
        char *key = xstrndup(name, nl);
        const char *val = prompt_vars_get(vars, key);
        if (!val) {
            err_set(err, "line %d: unknown placeholder {{%s}}", line, key);
            free(key);
            goto fail;
        }
        free(key);
        sb_append(&sb, val);
        p = q + 2;
    }
    *out = sb_take(&sb);
    return 0;
fail:
    sb_free(&sb);
    return -1;
}

int prompt_render_file(const char *dir, const char *file, const PromptVars *vars, char **out, EvoErr *err)
{
    char *path = path_join(dir, file);
    char *text = NULL;
    int rc = -1;
    if (file_read(path, &text, NULL, err) < 0)
        goto fail;
    if (prompt_render(text, vars, out, err) < 0) {
        err_prefix(err, "%s", path);
        goto fail;
    }
    rc = 0;
fail:
    free(text);
    free(path);
    return rc;
}

int prompt_assemble(const char *dir, PromptMode mode, const PromptVars *vars,
                    char **system, char **user, EvoErr *err)
{
    const char *files[4];
    int nfiles = 0;
    char *sys = NULL, *part = NULL;
    StrBuf sb = {0};

    files[nfiles++] = "task_context.md";
    if (mode == PROMPT_FULL)
        files[nfiles++] = "history.md";
    if (mode == PROMPT_INSIGHT || mode == PROMPT_FULL)
        files[nfiles++] = "insights.md";
    files[nfiles++] = "request.md";

    if (prompt_render_file(dir, "system.md", vars, &sys, err) < 0)
        goto fail;
    for (int i = 0; i < nfiles; i++) {
        if (prompt_render_file(dir, files[i], vars, &part, err) < 0)
            goto fail;
        if (sb.len)
            sb_append(&sb, "\n");
        sb_append(&sb, part);
        if (sb.len && sb.s[sb.len - 1] != '\n')
            sb_putc(&sb, '\n');
        free(part);
        part = NULL;
    }
    *system = sys;
    *user = sb_take(&sb);
    return 0;
fail:
    free(sys);
    free(part);
    sb_free(&sb);
    return -1;
}

/* ---- sections --------------------------------------------------------- */

int prompt_format_history(const char *dir, const PromptHistoryItem *items, int n, char **out, EvoErr *err)
{
    StrBuf sb = {0};
    PromptVars v = {0};
    char *part = NULL;
    if (n == 0) {
        *out = xstrdup("(no earlier solutions yet)\n");
        return 0;
    }
    for (int i = 0; i < n; i++) {
        const PromptHistoryItem *it = &items[i];
        prompt_vars_setf(&v, "rank", "%d", i + 1);
        prompt_vars_set(&v, "label", it->label ? it->label : "n/a");
        if (it->latency_ms > 0)
            prompt_vars_setf(&v, "latency", "%.4f ms", it->latency_ms);
        else
            prompt_vars_set(&v, "latency", "n/a");
        if (it->speedup > 0)
            prompt_vars_setf(&v, "speedup", "%.2fx", it->speedup);
        else
            prompt_vars_set(&v, "speedup", "n/a");
        prompt_vars_set(&v, "rationale", it->rationale && *it->rationale ? it->rationale : "(none recorded)");
        prompt_vars_set(&v, "source", it->source ? it->source : "");
        if (prompt_render_file(dir, "history_item.md", &v, &part, err) < 0)
            goto fail;
        if (sb.len)
            sb_putc(&sb, '\n');
        sb_append(&sb, part);
        free(part);
        part = NULL;
    }
    prompt_vars_free(&v);
    *out = sb_take(&sb);
    return 0;
fail:
    prompt_vars_free(&v);
    sb_free(&sb);
    return -1;
}

void prompt_insights_init(PromptInsights *in)
{
    memset(in, 0, sizeof *in);
    in->ctas = -1;
    in->occupancy = -1;
    in->registers = -1;
    in->spill_bytes = -1;
    in->smem_bytes = -1;
    in->latency_ms = -1;
    in->tflops = -1;
    in->gbps = -1;
}

char *prompt_format_insights(const PromptInsights *in, const DeviceInfo *dev)
{
    StrBuf sb = {0};
    if (in->latency_ms >= 0)
        sb_printf(&sb, "- Latency: %.4f ms\n", in->latency_ms);
    if (in->ctas >= 0) {
        sb_printf(&sb, "- CTAs in the largest launch: %ld", in->ctas);
        if (dev && dev->sm_count > 0) {
            double waves = (double)in->ctas / dev->sm_count;
            sb_printf(&sb, " on %d SMs (%.2f waves)", dev->sm_count, waves);
            if (waves < 1.0)
                sb_append(&sb, ": fewer CTAs than SMs, part of the GPU is idle");
        }
        sb_putc(&sb, '\n');
    }
    if (in->occupancy >= 0) {
        sb_printf(&sb, "- Occupancy: %.0f%%", 100.0 * in->occupancy);
        if (in->occupancy_limiter)
            sb_printf(&sb, ", limited by %s", in->occupancy_limiter);
        sb_putc(&sb, '\n');
    }
    if (in->registers >= 0)
        sb_printf(&sb, "- Registers per thread: %d\n", in->registers);
    if (in->spill_bytes >= 0)
        sb_printf(&sb, "- Register spills: %d bytes%s\n", in->spill_bytes,
                  in->spill_bytes > 0 ? " (spilling: reduce register pressure)" : "");
    if (in->smem_bytes >= 0) {
        sb_printf(&sb, "- Shared memory per CTA: %d bytes", in->smem_bytes);
        if (dev && dev->smem_per_block_optin > 0)
            sb_printf(&sb, " of %d available", dev->smem_per_block_optin);
        sb_putc(&sb, '\n');
    }
    if (in->tflops >= 0) {
        sb_printf(&sb, "- Achieved compute: %.2f TFLOP/s", in->tflops);
        if (dev && dev->peak_tflops_fp16 > 0)
            sb_printf(&sb, " (%.1f%% of the %.0f TFLOP/s fp16 peak)", 100.0 * in->tflops / dev->peak_tflops_fp16,
                      dev->peak_tflops_fp16);
        sb_putc(&sb, '\n');
    }
    if (in->gbps >= 0) {
        sb_printf(&sb, "- Achieved bandwidth: %.1f GB/s", in->gbps);
        if (dev && dev->peak_gbps > 0)
            sb_printf(&sb, " (%.1f%% of the %.0f GB/s peak)", 100.0 * in->gbps / dev->peak_gbps, dev->peak_gbps);
        sb_putc(&sb, '\n');
    }
    if (in->recent_compile_errors && *in->recent_compile_errors)
        sb_printf(&sb, "- Recent compile errors of proposed variants:\n%s\n", in->recent_compile_errors);
    if (in->recent_gate_failures && *in->recent_gate_failures)
        sb_printf(&sb, "- Recent correctness-gate failures of proposed variants:\n%s\n", in->recent_gate_failures);
    if (sb.len == 0)
        sb_append(&sb, "(no measurements yet)\n");
    return sb_take(&sb);
}

/* ---- modes ------------------------------------------------------------ */

static const char *const mode_names[] = {"free", "insight", "full"};

const char *prompt_mode_name(PromptMode m)
{
    return (unsigned)m < EVO_ARRAY_LEN(mode_names) ? mode_names[m] : "?";
}

int prompt_mode_parse(const char *s)
{
    for (size_t i = 0; i < EVO_ARRAY_LEN(mode_names); i++)
        if (strcmp(s, mode_names[i]) == 0)
            return (int)i;
    return -1;
}

/*
 * cmd_export: `evoeng export [ID | --best] [-o FILE] [--format cu|json|harness]`.
 * The command's glue: it picks the candidate, reads it, its run, its
 * compile record and its source from the store, loads the run's task to
 * resolve the benchmark shape's launch plan, and writes one of:
 *   cu       the kernel, parameters baked in (the rendered source as
 *            compiled), behind a provenance header: task, params, device,
 *            latency, speedup, dates, lineage, the nvcc line that builds it
 *            for the NVRTC target it was measured for (export_nvcc_flags)
 *            and the launch plan;
 *   json     the same facts, the source and the plan as JSON;
 *   harness  a standalone program with main() that checks the candidate
 *            against the task's reference and times it (export/harness.c).
 * Only a candidate gated on every shape (gate_stage 2) is exported: any
 * other is refused with EVO_EXIT_FAIL and a message that says why. A
 * harness needs the task file (for the plan and the reference): without it
 * the command fails with EVO_EXIT_TASK and writes nothing.
 */
#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/commands.h"
#include "cli/inspect.h"
#include "cli/runctx.h"
#include "config.h"
#include "export/export.h"
#include "export/harness.h"
#include "msg.h"
#include "store/store.h"
#include "task/task.h"

/* "#1 baseline -> #14 mutate -> #87 crossover" */
static char *lineage_line(Store *st, int64_t id)
{
    int64_t chain[256];
    int n = 0;
    EvoErr err;
    while (id && n < 256) {
        CandidateRecord c;
        if (store_candidate_get(st, id, &c, &err) != 1)
            break;
        chain[n++] = c.id;
        id = c.parent_id;
        candidate_record_free(&c);
    }
    StrBuf sb = {0};
    for (int i = n - 1; i >= 0; i--) {
        CandidateRecord c;
        if (store_candidate_get(st, chain[i], &c, &err) != 1)
            continue;
        sb_printf(&sb, "%s#%lld %s", i == n - 1 ? "" : " -> ", (long long)c.id, c.operator);
        if (!isnan(c.speedup))
            sb_printf(&sb, " (%.2fx)", c.speedup);
        candidate_record_free(&c);
    }
    return sb_take(&sb);
}

/* The run's task from its recorded path (best effort: the task file may
 * have moved), with the run's --dim overrides and its timed profiles (run
 * --profile; best effort too). Returns 0 with *t set, or -1 with err. */
static int load_run_task(const RunRecord *run, Task **t, EvoErr *err)
{
    *t = NULL;
    if (!run->task_path)
        return err_set(err, "the run records no task path");
    char *file = runctx_task_file(run->task_path);
    int lrc = task_load(file, t, err);
    free(file);
    if (lrc)
        return -1;
    json_t *cfg = json_loads(run->config_json ? run->config_json : "{}", 0, NULL);
    const char *k;
    json_t *v;
    json_object_foreach(json_object_get(cfg, "dims"), k, v) task_set_dim(*t, k, json_integer_value(v), err);
    const char *profiles = json_string_value(json_object_get(cfg, "profiles"));
    if (profiles)
        task_time_profiles(*t, profiles, err);
    json_decref(cfg);
    return 0;
}

/* The benchmark shape's plan for params_json (*p is zeroed first; the
 * caller frees it) and, with ref, the reference rendered for that shape.
 * Returns 0, or -1 with err. */
static int resolve_plan(const Task *t, const RunRecord *run, const char *params_json, Plan *p, char **ref,
                        EvoErr *err)
{
    DeviceInfo dev;
    memset(p, 0, sizeof(*p));
    int64_t *vals = xcalloc((size_t)task_nparams(t) + 1, sizeof(int64_t));
    int rc = device_profile(run->device_arch ? run->device_arch : "sm_90", &dev, err) ||
                     task_params_parse(t, params_json, vals, err) || task_resolve(t, vals, 0, &dev, p, err) ||
                     (ref && task_render(t, NULL, 0, 1, ref, err))
                 ? -1
                 : 0;
    free(vals);
    return rc;
}

/* The provenance lines shared by the .cu and the harness. */
static void put_provenance(StrBuf *sb, const CandidateRecord *c, const CandidateRecord *base, const RunRecord *run,
                           const char *lin, const char *now)
{
    sb_printf(sb, "// Exported by evoeng " EVO_VERSION ": candidate %lld of run %lld\n", (long long)c->id,
              (long long)c->run_id);
    sb_printf(sb, "// task:     %s (%s)\n", run->task_name ? run->task_name : "?",
              run->task_path ? run->task_path : "?");
    sb_printf(sb, "// params:   %s\n", c->params_json);
    sb_printf(sb, "// device:   %s (%s), NVRTC %s, driver %s\n", run->device_name ? run->device_name : "?",
              run->device_arch ? run->device_arch : "?", run->nvrtc_version ? run->nvrtc_version : "?",
              run->driver_version ? run->driver_version : "?");
    if (!isnan(c->latency_us))
        sb_printf(sb, "// latency:  %.3f us median, %.3f us p90, CV %.2f%% (benchmark shape, warm L2)\n",
                  c->latency_us, c->p90_us, isnan(c->cv) ? 0 : c->cv * 100);
    if (!isnan(c->speedup))
        sb_printf(sb, "// speedup:  %.3fx over the baseline (candidate %lld, %.3f us)\n", c->speedup,
                  (long long)base->id, base->latency_us);
    sb_printf(sb, "// status:   %s, %s, gated on every shape; evaluated %s; exported %s\n", c->status, c->decision,
              c->decided_at, now);
    sb_printf(sb, "// lineage:  %s\n", lin);
}

/* The file name a build line names: the last component of -o, else dflt. */
static const char *out_name(const char *output, const char *dflt)
{
    if (!output)
        return dflt;
    const char *slash = strrchr(output, '/');
    return slash ? slash + 1 : output;
}

/* Everything one export is made of. */
typedef struct Export {
    CandidateRecord c, base;
    RunRecord       run;
    CompileRecord   comp;
    char           *src, *lin, *now;
    const char     *target;   /* the NVRTC target it was compiled for */
    char           *flags;    /* export_nvcc_flags() for it */
    Task           *task;     /* NULL when the task file cannot be loaded */
    EvoErr          task_err;
} Export;

static char *format_json(const Export *x)
{
    const CandidateRecord *c = &x->c;
    const RunRecord *run = &x->run;
    json_t *o = json_pack("{s:I, s:I, s:s, s:s, s:o, s:s, s:s, s:s, s:s?, s:s?, s:s}", "id", (json_int_t)c->id,
                          "run", (json_int_t)c->run_id, "task", run->task_name ? run->task_name : "", "task_path",
                          run->task_path ? run->task_path : "", "params", json_loads(c->params_json, 0, NULL),
                          "status", c->status, "decision", c->decision, "gate_stage",
                          gate_stage_name(c->gate_stage), "device", run->device_name, "arch", run->device_arch,
                          "lineage", x->lin);
    if (!isnan(c->latency_us))
        json_object_set_new(o, "latency_us", json_real(c->latency_us));
    if (!isnan(c->speedup))
        json_object_set_new(o, "speedup", json_real(c->speedup));
    json_object_set_new(o, "target", json_string(x->target));
    json_object_set_new(o, "nvcc_flags", json_string(x->flags));
    json_object_set_new(o, "source", json_string(x->src));
    Plan p;
    EvoErr perr = x->task_err;
    if (x->task && resolve_plan(x->task, run, c->params_json, &p, NULL, &perr) == 0)
        json_object_set_new(o, "plan", export_plan_json(&p));
    else
        json_object_set_new(o, "plan_error", json_string(perr.msg));
    if (x->task)
        plan_free(&p);
    json_object_set_new(o, "exported_at", json_string(x->now));
    char *txt = json_dumps(o, JSON_INDENT(2));
    json_decref(o);
    char *out = xasprintf("%s\n", txt);
    free(txt);
    return out;
}

static char *format_cu(const Export *x, const char *file)
{
    StrBuf sb = {0};
    Plan p;
    EvoErr perr = x->task_err;
    char *launches;
    if (x->task && resolve_plan(x->task, &x->run, x->c.params_json, &p, NULL, &perr) == 0)
        launches = export_launch_lines(&p);
    else
        launches = xasprintf("//   (not resolved: %s)\n", perr.msg);
    if (x->task)
        plan_free(&p);
    sb_append(&sb, "// ----------------------------------------------------------------------------\n");
    put_provenance(&sb, &x->c, &x->base, &x->run, x->lin, x->now);
    sb_printf(&sb, "// build:    nvcc %s -c %s\n", x->flags, file);
    sb_printf(&sb, "//           (for %s, the NVRTC target it was compiled and measured for)\n", x->target);
    sb_printf(&sb, "// launch plan (benchmark shape), in order:\n%s", launches);
    sb_append(&sb, "// ----------------------------------------------------------------------------\n");
    sb_append(&sb, x->src);
    free(launches);
    return sb_take(&sb);
}

/* The harness, or NULL with err when the plan or the reference cannot be
 * had. */
static char *format_harness(const Export *x, const char *file, EvoErr *err)
{
    Plan p;
    char *ref = NULL, *out = NULL;
    if (!x->task) {
        *err = x->task_err;
        return NULL;
    }
    if (resolve_plan(x->task, &x->run, x->c.params_json, &p, &ref, err) == 0) {
        StrBuf hdr = {0};
        put_provenance(&hdr, &x->c, &x->base, &x->run, x->lin, x->now);
        HarnessSpec h = {.header = hdr.s, .source = x->src, .ref_source = ref, .plan = &p,
                         .nvcc_flags = x->flags, .file = file, .recorded_us = x->c.latency_us};
        harness_render(&h, &out, err);
        sb_free(&hdr);
    }
    plan_free(&p);
    free(ref);
    return out;
}

/* Read candidate id and what goes with it into x. Returns EVO_EXIT_OK or
 * the exit code after an error message. */
static EvoExit export_read(Store *st, const Settings *s, int64_t id, Export *x)
{
    EvoErr err;
    if (store_candidate_get(st, id, &x->c, &err) != 1) {
        errorf("%s: no candidate %lld", s->db, (long long)id);
        return EVO_EXIT_FAIL;
    }
    if (x->c.gate_stage != GATE_STAGE_FULL) {
        errorf("candidate %lld cannot be exported: it was %s (status %s, decision %s); only a candidate "
               "gated on every shape is exported (see 'evoeng show %lld')",
               (long long)id, gate_stage_explain(x->c.gate_stage), x->c.status, x->c.decision, (long long)id);
        return EVO_EXIT_FAIL;
    }
    store_run_get(st, x->c.run_id, &x->run, &err);
    x->src = store_source_get(st, x->c.source_hash, &err);
    if (!x->src) {
        errorf("candidate %lld has no source (status %s: %s)", (long long)id, x->c.status,
               x->c.error ? x->c.error : "");
        return EVO_EXIT_FAIL;
    }
    if (strcmp(x->c.status, "ok") != 0)
        warnf("candidate %lld did not pass: %s: %s", (long long)id, x->c.status, x->c.error ? x->c.error : "");
    if (x->run.baseline_id)
        store_candidate_get(st, x->run.baseline_id, &x->base, &err);
    x->lin = lineage_line(st, id);
    x->now = time_iso8601();
    x->target = x->run.device_arch ? x->run.device_arch : "sm_90";
    int have_comp = x->c.compile_id && store_compile_get(st, x->c.compile_id, &x->comp, &err) == 1;
    if (have_comp && x->comp.arch)
        x->target = x->comp.arch;
    x->flags = export_nvcc_flags(x->target, have_comp ? x->comp.options : NULL);
    if (!x->flags) {
        warnf("candidate %lld: recorded target '%s' is not sm_<NN>[a|f]; the build line assumes sm_90",
              (long long)id, x->target);
        x->target = "sm_90";
        x->flags = export_nvcc_flags(x->target, NULL);
    }
    load_run_task(&x->run, &x->task, &x->task_err);
    return EVO_EXIT_OK;
}

EvoExit cmd_export(const Settings *s)
{
    EvoErr err;
    EvoExit orc = EVO_EXIT_OK;
    Store *st = inspect_open(s, &orc);   /* read-only: a missing store is exit 4, nothing created */
    if (!st)
        return orc;
    Export x;
    memset(&x, 0, sizeof(x));
    compile_record_init(&x.comp);
    char *text = NULL;
    EvoExit rc = EVO_EXIT_OK;
    int64_t id = s->id;
    if (!id) {
        CandidateRecord *best = NULL;
        int n = 0;
        RunRecord run;
        memset(&run, 0, sizeof(run));
        if (store_run_get(st, 0, &run, &err) == 1 &&
            store_candidate_list(st, run.id, STORE_SURVIVORS_BY_LATENCY, 1, &best, &n, &err) == 0 && n)
            id = best[0].id;
        store_candidates_free(best, n);
        run_record_free(&run);
        if (!id) {
            errorf("%s: no candidate to export (no run with a candidate gated on every shape yet)", s->db);
            rc = EVO_EXIT_FAIL;
            goto out;
        }
    }
    if ((rc = export_read(st, s, id, &x)) != EVO_EXIT_OK)
        goto out;

    if (strcmp(s->format, "json") == 0) {
        text = format_json(&x);
    } else if (strcmp(s->format, "harness") == 0) {
        text = format_harness(&x, out_name(s->output, "harness.cu"), &err);
        if (!text) {
            errorf("candidate %lld: cannot write a harness: %s", (long long)id, err.msg);
            rc = EVO_EXIT_TASK;
            goto out;
        }
    } else {
        text = format_cu(&x, out_name(s->output, "FILE.cu"));
    }
    /* -o: written whole or not at all (util.h's file_write: a temporary
     * file, every write checked, fsync, rename); stdout: checked here and
     * at exit (main.c) */
    size_t len = strlen(text);
    if (s->output) {
        if (file_write_flags(s->output, text, len, s->force ? FILE_WRITE_FORCE : 0, &err) < 0) {
            errorf("%s", err.msg);
            rc = EVO_EXIT_IO;
        } else if (!s->quiet && !s->json) {
            fprintf(stderr, "evoeng: wrote candidate %lld to %s\n", (long long)x.c.id, s->output);
        }
    } else if (!s->json && (fwrite(text, 1, len, stdout) != len || fflush(stdout) != 0)) {
        errorf("writing to standard output failed: %s", strerror(errno));   /* --json: the text goes in the document */
        rc = EVO_EXIT_IO;
    }
    if (s->json && rc == EVO_EXIT_OK) {
        /* what was written: {"path", "id", "run", "format", "target", "bytes"}, and
         * the text itself as "content" when no -o was given */
        json_t *o = json_pack("{s:o, s:I, s:I, s:s, s:s, s:I}", "path",
                              s->output ? json_string(s->output) : json_null(), "id", (json_int_t)x.c.id, "run",
                              (json_int_t)x.c.run_id, "format", s->format, "target", x.target, "bytes",
                              (json_int_t)strlen(text));
        if (!s->output)
            json_object_set_new(o, "content", json_string(text));
        out_json_doc(o);
    }
out:
    compile_record_free(&x.comp);
    candidate_record_free(&x.c);
    candidate_record_free(&x.base);
    run_record_free(&x.run);
    task_free(&x.task);
    free(x.src);
    free(x.lin);
    free(x.now);
    free(x.flags);
    free(text);
    store_close(&st);
    return rc;
}

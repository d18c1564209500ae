/*
 * cmd_export: `evoeng export [ID | --best] [-o FILE.cu] [--format cu|json]`.
 * Writes a candidate's kernel, parameters baked in (the rendered source
 * as compiled), behind a provenance header: task, params, device,
 * latency, speedup, dates, lineage, and the launch plan of the benchmark
 * shape. The .cu compiles unchanged with the `nvcc -arch=TARGET -c` line of its header.
 * Only a candidate gated on every shape (gate_stage 2) is exported: any
 * other is refused with EVO_EXIT_FAIL and a message that says why.
 */
#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "commands.h"
#include "config.h"
#include "runctx.h"
#include "store.h"
#include "task.h"

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

/* Resolve the benchmark shape's plan from the run's task file, with the
 * run's --dim overrides (best effort: the task file may have moved).
 * Returns 0 with *p filled, or -1 with err. */
static int resolve_plan(const RunRecord *run, const char *params_json, Plan *p, EvoErr *err)
{
    Task *t = NULL;
    memset(p, 0, sizeof(*p));
    if (!run->task_path)
        return err_set(err, "the run records no task path");
    char *file = runctx_task_file(run->task_path);
    int lrc = task_load(file, &t, err);
    free(file);
    if (lrc)
        return -1;
    json_t *cfg = json_loads(run->config_json ? run->config_json : "{}", 0, NULL);
    const char *k;
    json_t *v;
    json_object_foreach(json_object_get(cfg, "dims"), k, v) task_set_dim(t, k, json_integer_value(v), err);
    json_decref(cfg);
    DeviceInfo dev;
    int64_t *vals = xcalloc((size_t)task_nparams(t) + 1, sizeof(int64_t));
    int rc = device_profile(run->device_arch ? run->device_arch : "sm_90", &dev, err) ||
             task_params_parse(t, params_json, vals, err) || task_resolve(t, vals, 0, &dev, p, err) ? -1 : 0;
    free(vals);
    task_free(&t);
    return rc;
}

static const char *role_name(BufRole r)
{
    return r == ROLE_INPUT ? "input" : r == ROLE_OUTPUT ? "output" : "scratch";
}

/* The launch plan as comment lines. */
static char *launch_lines(const Plan *p)
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
                  (unsigned long long)p->buffers[b].count, role_name(p->buffers[b].role));
    return sb_take(&sb);
}

static json_t *u64_list(const uint64_t *v, int n)
{
    json_t *a = json_array();
    for (int i = 0; i < n; i++)
        json_array_append_new(a, json_integer((json_int_t)v[i]));
    return a;
}

/* A tensor-map argument as the task spec writes it, every field resolved:
 * {"buffer", "dims", "strides" (bytes), "box", "element_strides",
 *  "swizzle", "l2_promotion", "oob_fill"}. */
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

/* The launch plan as JSON: {"shape", "buffers": [...], "launches": [...]}. */
static json_t *plan_json(const Plan *p)
{
    json_t *bufs = json_array(), *ls = json_array();
    for (int b = 0; b < p->nbuffers; b++) {
        const PlanBuffer *pb = &p->buffers[b];
        json_array_append_new(bufs, json_pack("{s:s, s:s, s:I, s:s, s:b}", "name", pb->name, "dtype",
                                              dtype_name(pb->dtype), "count", (json_int_t)pb->count, "role",
                                              role_name(pb->role), "used", pb->for_cand));
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
    return json_pack("{s:s, s:f, s:f, s:o, s:o}", "shape", p->shape_label ? p->shape_label : "", "flops", p->flops,
                     "bytes", p->bytes, "buffers", bufs, "launches", ls);
}

EvoExit cmd_export(const Settings *s)
{
    EvoErr err;
    Store *st = NULL;
    if (store_open(&st, s->db, &err)) {
        errorf("%s", err.msg);
        return EVO_EXIT_DB;
    }
    EvoExit rc = EVO_EXIT_OK;
    CandidateRecord c, base;
    RunRecord run;
    CompileRecord comp;
    compile_record_init(&comp);
    memset(&c, 0, sizeof(c));
    memset(&base, 0, sizeof(base));
    memset(&run, 0, sizeof(run));
    char *src = NULL, *lin = NULL, *launches = NULL, *now = NULL;
    int64_t id = s->id;
    if (!id) {
        CandidateRecord *best = NULL;
        int n = 0;
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
    if (store_candidate_get(st, id, &c, &err) != 1) {
        errorf("%s: no candidate %lld", s->db, (long long)id);
        rc = EVO_EXIT_FAIL;
        goto out;
    }
    if (c.gate_stage != GATE_STAGE_FULL) {
        errorf("candidate %lld cannot be exported: it was %s (status %s, decision %s); only a candidate "
               "gated on every shape is exported (see 'evoeng show %lld')",
               (long long)id, gate_stage_explain(c.gate_stage), c.status, c.decision, (long long)id);
        rc = EVO_EXIT_FAIL;
        goto out;
    }
    store_run_get(st, c.run_id, &run, &err);
    src = store_source_get(st, c.source_hash, &err);
    if (!src) {
        errorf("candidate %lld has no source (status %s: %s)", (long long)id, c.status, c.error ? c.error : "");
        rc = EVO_EXIT_FAIL;
        goto out;
    }
    if (strcmp(c.status, "ok") != 0)
        warnf("candidate %lld did not pass: %s: %s", (long long)id, c.status, c.error ? c.error : "");
    if (run.baseline_id)
        store_candidate_get(st, run.baseline_id, &base, &err);
    lin = lineage_line(st, id);
    now = time_iso8601();
    /* The NVRTC target the candidate was compiled for (sm_90a for a task
     * with arch-specific code): the one to give nvcc. */
    const char *target = run.device_arch ? run.device_arch : "sm_90";
    if (c.compile_id && store_compile_get(st, c.compile_id, &comp, &err) == 1 && comp.arch)
        target = comp.arch;

    FILE *f = s->output ? fopen(s->output, "w") : stdout;
    if (!f) {
        errorf("%s: cannot create: %s", s->output, strerror(errno));
        rc = EVO_EXIT_IO;
        goto out;
    }
    if (strcmp(s->format, "json") == 0) {
        json_t *o = json_pack("{s:I, s:I, s:s, s:s, s:o, s:s, s:s, s:s, s:s?, s:s?, s:s}", "id", (json_int_t)c.id,
                              "run", (json_int_t)c.run_id, "task", run.task_name ? run.task_name : "", "task_path",
                              run.task_path ? run.task_path : "", "params",
                              json_loads(c.params_json, 0, NULL), "status", c.status, "decision",
                              c.decision, "gate_stage", gate_stage_name(c.gate_stage), "device", run.device_name,
                              "arch", run.device_arch, "lineage", lin);
        if (!isnan(c.latency_us))
            json_object_set_new(o, "latency_us", json_real(c.latency_us));
        if (!isnan(c.speedup))
            json_object_set_new(o, "speedup", json_real(c.speedup));
        json_object_set_new(o, "target", json_string(target));
        json_object_set_new(o, "source", json_string(src));
        Plan p;
        EvoErr perr;
        if (resolve_plan(&run, c.params_json, &p, &perr) == 0)
            json_object_set_new(o, "plan", plan_json(&p));
        else
            json_object_set_new(o, "plan_error", json_string(perr.msg));
        plan_free(&p);
        json_object_set_new(o, "exported_at", json_string(now));
        char *txt = json_dumps(o, JSON_INDENT(2));
        fprintf(f, "%s\n", txt);
        free(txt);
        json_decref(o);
    } else {
        Plan p;
        EvoErr perr;
        if (resolve_plan(&run, c.params_json, &p, &perr) == 0)
            launches = launch_lines(&p);
        else
            launches = xasprintf("//   (not resolved: %s)\n", perr.msg);
        plan_free(&p);
        fprintf(f, "// ----------------------------------------------------------------------------\n");
        fprintf(f, "// Exported by evoeng " EVO_VERSION ": candidate %lld of run %lld\n", (long long)c.id, (long long)c.run_id);
        fprintf(f, "// task:     %s (%s)\n", run.task_name ? run.task_name : "?", run.task_path ? run.task_path : "?");
        fprintf(f, "// params:   %s\n", c.params_json);
        fprintf(f, "// device:   %s (%s), NVRTC %s, driver %s\n", run.device_name ? run.device_name : "?",
                run.device_arch ? run.device_arch : "?", run.nvrtc_version ? run.nvrtc_version : "?",
                run.driver_version ? run.driver_version : "?");
        if (!isnan(c.latency_us))
            fprintf(f, "// latency:  %.3f us median, %.3f us p90, CV %.2f%% (benchmark shape, warm L2)\n",
                    c.latency_us, c.p90_us, isnan(c.cv) ? 0 : c.cv * 100);
        if (!isnan(c.speedup))
            fprintf(f, "// speedup:  %.3fx over the baseline (candidate %lld, %.3f us)\n", c.speedup,
                    (long long)base.id, base.latency_us);
        fprintf(f, "// status:   %s, %s, gated on every shape; evaluated %s; exported %s\n", c.status, c.decision,
                c.decided_at, now);
        fprintf(f, "// lineage:  %s\n", lin);
        fprintf(f, "// build:    nvcc -arch=%s -std=c++17 -c (the NVRTC target it was compiled and measured for)\n",
                target);
        fprintf(f, "// launch plan (benchmark shape), in order:\n%s", launches);
        fprintf(f, "// ----------------------------------------------------------------------------\n");
        fputs(src, f);
    }
    if (s->output) {
        if (fclose(f) != 0) {
            errorf("%s: write failed: %s", s->output, strerror(errno));
            rc = EVO_EXIT_IO;
        } else if (!s->quiet) {
            fprintf(stderr, "evoeng: wrote candidate %lld to %s\n", (long long)c.id, s->output);
        }
    }
out:
    compile_record_free(&comp);
    candidate_record_free(&c);
    candidate_record_free(&base);
    run_record_free(&run);
    free(src);
    free(lin);
    free(launches);
    free(now);
    store_close(&st);
    return rc;
}

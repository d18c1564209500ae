/*
 * twins: how much of a search's NVRTC work the compile cache's canonical
 * key saves (canon.h, issue 32), on the CPU. It reads candidates in commit
 * order as `pipe_sim --keys FILE` writes them (generation, params key,
 * operator, decision a line), renders each one's compile units as a run
 * does (the benchmark shape's for every candidate; the other compile
 * shapes' for those that go through the whole gate: generation 0 and the
 * accepted), and counts the units whose source a run had compiled before
 * and those whose cache key (the canonical text's) it had: the rest are
 * NVRTC compiles.
 *
 *   twins [--task PATH] [--dim NAME=V]... [--json] KEYS
 *   twins [--task PATH] EXPORT.json...
 *
 * The second form takes exported kernels (evoeng export --format json) and
 * counts, for each, the one-knob changes that are valid on every shape
 * and have the export's cache key: at the benchmark shape's unit, and at
 * every compile unit (a twin there compiles nothing at all).
 *
 * Candidates are rendered and keyed as a run does it (prep_render, then
 * prep_unit_key: nvrtc_request_key of the request a run submits, NVRTC's
 * predefined names asked of NVRTC), for the sm_90 profile's target;
 * nothing is compiled.
 */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "compile/prep.h"
#include "device.h"
#include "task/task.h"
#include "task/template.h"
#include "util.h"

typedef struct Seen {
    char **v;
    int    n, cap;
} Seen;

/* 1 when k was seen; else remembers it and returns 0. Linear: a run's
 * thousands of keys take well under a second. */
static int seen(Seen *s, const char *k)
{
    for (int i = 0; i < s->n; i++)
        if (strcmp(s->v[i], k) == 0)
            return 1;
    if (s->n == s->cap) {
        s->cap = s->cap ? 2 * s->cap : 1024;
        s->v = xrealloc(s->v, (size_t)s->cap * sizeof(char *));
    }
    s->v[s->n++] = xstrdup(k);
    return 0;
}

typedef struct Count {
    int units, new_source, new_key;
} Count;

/* vals rendered as a run renders them (prep_render: one unit per distinct
 * source); 1 when valid, 0 when a constraint or plan fails, -1 (err). */
static int render(const Task *t, const DeviceInfo *dev, const int64_t *vals, Prepared *p, EvoErr *err)
{
    PrepInput in = {vals, NULL};
    if (prep_render(t, dev, &in, p, err) < 0)
        return -1;
    return p->status[0] == 0;
}

/* Unit u of p: count it in c. */
static int count_unit(const Task *t, const DeviceInfo *dev, Prepared *p, int u, Seen *sources, Seen *keys, Count *c,
                      EvoErr *err)
{
    char hash[65], key[65];
    if (prep_unit_key(t, dev, p, u, key, err) < 0)
        return -1;
    template_hash(p->units[u].source, hash);
    c->units++;
    c->new_source += !seen(sources, hash);
    c->new_key += !seen(keys, key);
    return 0;
}

/* One export: its valid one-knob neighbours and how many are twins. */
static int neighbours(const char *task_path, const char *path, const DeviceInfo *dev, EvoErr *err)
{
    Task *t = NULL;
    json_t *e = json_load_file(path, 0, NULL);
    const char *shape = json_string_value(json_object_get(json_object_get(e, "plan"), "shape"));
    int rc = -1;
    if (!json_is_object(json_object_get(e, "params")) || !shape) {
        err_set(err, "%s: not an export (no params, or no plan.shape)", path);
        goto done;
    }
    if (task_load(task_path, &t, err) < 0)
        goto done;
    /* the benchmark shape: "B=4 H=8 S=512 D=64 ... HKV=8 SQ=512"; HKV and
     * SQ are set only where they are not H and S (as --dim does: set,
     * they would hold on every gate shape too) */
    char dim[16][64];
    long long dv[16], h = -1, sk = -1;
    int nd = 0;
    for (const char *p = shape; *p && nd < 16;) {
        int used = 0;
        if (sscanf(p, " %63[^=]=%lld%n", dim[nd], &dv[nd], &used) != 2) {
            err_set(err, "%s: plan.shape \"%s\": expected NAME=V ...", path, shape);
            goto done;
        }
        h = strcmp(dim[nd], "H") == 0 ? dv[nd] : h;
        sk = strcmp(dim[nd], "S") == 0 ? dv[nd] : sk;
        nd++;
        p += used;
    }
    for (int i = 0; i < nd; i++) {
        if ((strcmp(dim[i], "HKV") == 0 && dv[i] == h) || (strcmp(dim[i], "SQ") == 0 && dv[i] == sk))
            continue;
        if (task_set_dim(t, dim[i], dv[i], err) < 0)
            goto done;
    }
    char *ptext = json_dumps(json_object_get(e, "params"), 0);
    int np = task_nparams(t), valid = 0, twin0 = 0, twin_all = 0, nunits = 0;
    int64_t *vals = xcalloc((size_t)np, sizeof(int64_t)), *nb = xcalloc((size_t)np, sizeof(int64_t));
    Prepared base = {0};
    char (*keys)[65] = NULL, key[65];
    rc = task_params_parse(t, ptext, vals, err);
    if (rc == 0 && render(t, dev, vals, &base, err) != 1)
        rc = err_set(err, "%s: the export's configuration is not valid here", path);
    nunits = rc == 0 ? base.nunits : 0;
    keys = xcalloc((size_t)nunits + 1, 65);
    for (int u = 0; rc == 0 && u < nunits; u++)
        rc = prep_unit_key(t, dev, &base, u, keys[u], err);
    for (int i = 0; rc == 0 && i < np; i++)
        for (int k = 0; rc == 0 && k < task_param_nvalues(t, i); k++) {
            if (task_param_value(t, i, k) == vals[i])
                continue;
            memcpy(nb, vals, (size_t)np * sizeof(int64_t));
            nb[i] = task_param_value(t, i, k);
            Prepared p = {0};
            int ok = render(t, dev, nb, &p, err);
            rc = ok < 0 ? -1 : 0;
            if (ok == 1) {
                valid++;
                int same = 0;   /* units with the export's key, in the export's order (benchmark first) */
                for (int u = 0; rc == 0 && u < p.nunits && u < nunits; u++) {
                    rc = prep_unit_key(t, dev, &p, u, key, err);
                    if (rc < 0 || strcmp(key, keys[u]) != 0)
                        break;
                    same++;
                }
                twin0 += same > 0;
                twin_all += same == nunits && p.nunits == nunits;
            }
            prep_free(&p);
        }
    if (rc == 0)
        printf("%-28s %3d valid one-knob changes: %3d twins at the benchmark unit (%4.1f%%), %3d at every unit of %d\n",
               path, valid, twin0, 100.0 * twin0 / (valid ? valid : 1), twin_all, nunits);
    prep_free(&base);
    free(ptext);
    free(vals);
    free(nb);
    free(keys);
done:
    task_free(&t);
    json_decref(e);
    return rc;
}

int main(int argc, char **argv)
{
    const char *task_path = "templates/attention/task.json", *keys_path = NULL;
    int json = 0;
    Task *t = NULL;
    EvoErr err;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--task") == 0 && i + 1 < argc)
            task_path = argv[++i];
        else if (strcmp(argv[i], "--dim") == 0 && i + 1 < argc)
            i++;   /* applied once the task is loaded */
        else if (strcmp(argv[i], "--json") == 0)
            json = 1;
        else if (argv[i][0] != '-')
            keys_path = keys_path ? keys_path : argv[i];
        else {
            fprintf(stderr, "usage: twins [--task PATH] [--dim NAME=V]... [--json] KEYS\n");
            return 2;
        }
    }
    DeviceInfo dev;
    size_t kl = keys_path ? strlen(keys_path) : 0;
    if (kl > 5 && strcmp(keys_path + kl - 5, ".json") == 0) {   /* exports */
        if (device_profile("sm_90", &dev, &err) < 0)
            return 2;
        for (int i = 1; i < argc; i++) {
            size_t n = strlen(argv[i]);
            if (n > 5 && strcmp(argv[i] + n - 5, ".json") == 0 && neighbours(task_path, argv[i], &dev, &err) < 0) {
                fprintf(stderr, "twins: %s\n", err.msg);
                return 1;
            }
        }
        return 0;
    }
    if (!keys_path || task_load(task_path, &t, &err) < 0 || device_profile("sm_90", &dev, &err) < 0) {
        fprintf(stderr, "twins: %s\n", keys_path ? err.msg : "no KEYS file (pipe_sim --keys FILE writes one)");
        return 2;
    }
    for (int i = 1; i < argc; i++)
        if (strcmp(argv[i], "--dim") == 0 && i + 1 < argc) {
            char name[64];
            long long v;
            if (sscanf(argv[++i], "%63[^=]=%lld", name, &v) != 2 || task_set_dim(t, name, v, &err) < 0) {
                fprintf(stderr, "twins: --dim %s: %s\n", argv[i], err.msg);
                return 2;
            }
        }
    FILE *f = fopen(keys_path, "r");
    if (!f) {
        fprintf(stderr, "twins: %s: cannot open\n", keys_path);
        return 2;
    }
    int64_t *vals = xcalloc((size_t)task_nparams(t), sizeof(int64_t));
    Seen sources = {0}, keys = {0};
    Count a = {0}, b = {0};
    int cands = 0, full = 0;
    char line[8192];
    while (fgets(line, sizeof(line), f)) {
        long long gen;
        char key[4096], op[64], decision[64];
        if (sscanf(line, "%lld %4095s %63s %63s", &gen, key, op, decision) != 4)
            continue;
        Prepared p = {0};
        int rc = task_params_parse(t, key, vals, &err) < 0 ? -1 : render(t, &dev, vals, &p, &err);
        if (rc == 1) {   /* the benchmark shape's unit, then the others for the whole gate */
            cands++;
            int u0 = p.shape_unit[0], whole = gen == 0 || strcmp(decision, "accepted") == 0;
            full += whole;
            rc = count_unit(t, &dev, &p, u0, &sources, &keys, &a, &err) < 0 ? -1 : 1;
            for (int u = 0; rc == 1 && whole && u < p.nunits; u++)
                if (u != u0 && count_unit(t, &dev, &p, u, &sources, &keys, &b, &err) < 0)
                    rc = -1;
        }
        prep_free(&p);
        if (rc < 0) {
            fprintf(stderr, "twins: %s: %s\n", key, err.msg);
            return 1;
        }
    }
    fclose(f);
    int src_all = a.new_source + b.new_source, key_all = a.new_key + b.new_key;
    if (json)
        printf("{\"candidates\": %d, \"full_gate\": %d, \"benchmark_units\": {\"new_sources\": %d, \"new_keys\": %d}, "
               "\"gate_units\": {\"new_sources\": %d, \"new_keys\": %d}}\n",
               cands, full, a.new_source, a.new_key, b.new_source, b.new_key);
    else
        printf("%d candidates (%d through the whole gate); NVRTC compiles keyed on the source / on the canonical "
               "text: benchmark shape %d / %d (%.1f%% fewer), other compile shapes %d / %d (%.1f%% fewer), all %d / "
               "%d (%.1f%% fewer)\n",
               cands, full, a.new_source, a.new_key, 100.0 * (a.new_source - a.new_key) / (a.new_source ? a.new_source : 1),
               b.new_source, b.new_key, 100.0 * (b.new_source - b.new_key) / (b.new_source ? b.new_source : 1), src_all,
               key_all, 100.0 * (src_all - key_all) / (src_all ? src_all : 1));
    free(vals);
    task_free(&t);
    return 0;
}

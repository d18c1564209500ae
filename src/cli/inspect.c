/*
 * inspect: the helpers of the store-reading commands. See inspect.h.
 */
#include "cli/inspect.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "msg.h"

/* ---- opening --------------------------------------------------------- */

Store *inspect_open(const Settings *s, EvoExit *rc)
{
    Store *st = NULL;
    EvoErr err;
    if (store_open_readonly(&st, s->db, &err) != 0) {
        errorf("%s", err.msg);
        *rc = EVO_EXIT_DB;
        return NULL;
    }
    return st;
}

Store *inspect_open_run(const Settings *s, int64_t id, RunRecord *r, const char *empty_json, EvoExit *rc)
{
    Store *st = inspect_open(s, rc);
    if (!st)
        return NULL;
    EvoErr err;
    int got = store_run_get(st, id, r, &err);
    if (got > 0)
        return st;
    if (got < 0)
        errorf("%s", err.msg);
    else if (id)
        errorf("%s: no run %lld", store_path(st), (long long)id);
    else if (s->json)
        printf("%s\n", empty_json ? empty_json : "{\"run\": null}");
    else
        printf("%s: no runs yet (start one with 'evoeng run')\n", store_path(st));
    *rc = got < 0 ? EVO_EXIT_DB : id ? EVO_EXIT_FAIL : EVO_EXIT_OK;
    store_close(&st);
    return NULL;
}

int64_t inspect_best_id(Store *st, int64_t run_id, EvoExit *rc)
{
    EvoErr err;
    RunRecord r;
    int got = store_run_get(st, run_id, &r, &err);
    if (got <= 0) {
        if (got < 0)
            errorf("%s", err.msg);
        else if (run_id)
            errorf("%s: no run %lld", store_path(st), (long long)run_id);
        else
            errorf("%s: no runs yet, so no best candidate", store_path(st));
        *rc = got < 0 ? EVO_EXIT_DB : EVO_EXIT_FAIL;
        return 0;
    }
    CandidateRecord *best = NULL;
    int n = 0;
    int64_t id = 0;
    if (store_candidate_list(st, r.id, STORE_SURVIVORS_BY_LATENCY, 1, &best, &n, &err)) {
        errorf("%s", err.msg);
        *rc = EVO_EXIT_DB;
    } else if (n == 0) {
        errorf("run %lld has no candidate gated on every shape yet, so no best", (long long)r.id);
        *rc = EVO_EXIT_FAIL;
    } else {
        id = best[0].id;
    }
    store_candidates_free(best, n);
    run_record_free(&r);
    return id;
}

/* ---- text ------------------------------------------------------------ */

void inspect_fmt_us(char *buf, size_t n, double us)
{
    if (isnan(us))
        snprintf(buf, n, "-");
    else if (us < 1000)
        snprintf(buf, n, "%.2f us", us);
    else
        snprintf(buf, n, "%.3f ms", us / 1000);
}

/* The members of an object as "K=V K=V" (fresh string; "" when none). */
static char *object_kv(json_t *o)
{
    StrBuf sb = {0};
    const char *k;
    json_t *v;
    json_object_foreach(o, k, v) {
        char *t = json_dumps(v, JSON_ENCODE_ANY);
        sb_printf(&sb, "%s%s=%s", sb.len ? " " : "", k, t ? t : "?");
        free(t);
    }
    return sb_take(&sb);
}

char *inspect_params_compact(const char *json)
{
    json_t *o = json ? json_loads(json, 0, NULL) : NULL;
    char *txt = json_is_object(o) ? object_kv(o) : xstrdup(json ? json : "-");
    json_decref(o);
    return txt;
}

char *inspect_params_diff(const char *from, const char *to)
{
    json_t *d = inspect_params_diff_json(from, to);
    StrBuf sb = {0};
    const char *k;
    json_t *v;
    json_object_foreach(d, k, v) {
        json_t *jo = json_object_get(v, "from");
        char *o = json_is_null(jo) ? xstrdup("-") : json_dumps(jo, JSON_ENCODE_ANY);
        char *nw = json_dumps(json_object_get(v, "to"), JSON_ENCODE_ANY);
        sb_printf(&sb, "%s%s %s->%s", sb.len ? ", " : "", k, o, nw);
        free(o);
        free(nw);
    }
    json_decref(d);
    if (!sb.len)
        sb_append(&sb, from ? "(no parameter change)" : "");
    return sb_take(&sb);
}

json_t *inspect_params_diff_json(const char *from, const char *to)
{
    json_t *a = from ? json_loads(from, 0, NULL) : NULL;
    json_t *b = to ? json_loads(to, 0, NULL) : NULL;
    json_t *d = json_object();
    if (json_is_object(a) && json_is_object(b)) {
        const char *k;
        json_t *v;
        json_object_foreach(b, k, v) {
            json_t *old = json_object_get(a, k);
            if (old && json_equal(old, v))
                continue;
            json_object_set_new(d, k, json_pack("{s:O, s:O}", "from", old ? old : json_null(), "to", v));
        }
    }
    json_decref(a);
    json_decref(b);
    return d;
}

json_t *inspect_shape_json(const RunRecord *r)
{
    json_t *shape = json_object();
    json_t *spec = r->task_json ? json_loads(r->task_json, 0, NULL) : NULL;
    json_t *cfg = r->config_json ? json_loads(r->config_json, 0, NULL) : NULL;
    json_t *dims = json_object_get(spec, "dims");
    if (json_is_object(dims))
        json_object_update(shape, dims);
    dims = json_object_get(cfg, "dims");
    if (json_is_object(dims))
        json_object_update(shape, dims);
    json_decref(spec);
    json_decref(cfg);
    return shape;
}

char *inspect_shape_text(const RunRecord *r)
{
    json_t *shape = inspect_shape_json(r);
    char *txt = object_kv(shape);
    json_decref(shape);
    if (!*txt) {
        free(txt);
        txt = xstrdup("-");
    }
    return txt;
}

/* ---- JSON ------------------------------------------------------------ */

void inspect_set_real(json_t *o, const char *key, double v)
{
    if (isfinite(v))
        json_object_set_new(o, key, json_real(v));
}

json_t *inspect_real_or_null(double v)
{
    return isfinite(v) ? json_real(v) : json_null();
}

json_t *inspect_gpu_json(const CandidateRecord *c)
{
    json_t *m = c->metrics_json ? json_loads(c->metrics_json, 0, NULL) : NULL;
    json_t *g = json_object_get(m, "gpu"), *out = NULL;
    if (json_is_object(g) && json_is_integer(json_object_get(g, "index"))) {
        out = json_object();
        const char *keys[] = {"index", "name", "uuid", "scale"};
        for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++) {
            json_t *v = json_object_get(g, keys[i]);
            if (v)
                json_object_set(out, keys[i], v);
        }
    }
    json_decref(m);
    return out;
}

int inspect_profiles(const CandidateRecord *c, ProfileStat *out)
{
    return bench_metrics_profiles(c->metrics_json, out);
}

json_t *inspect_profiles_json(const CandidateRecord *c)
{
    ProfileStat ps[PLAN_MAX_PROFILES];
    int n = inspect_profiles(c, ps);
    if (n == 0)
        return NULL;
    json_t *arr = json_array();
    for (int k = 0; k < n; k++) {
        json_t *o = json_pack("{s:s}", "name", ps[k].name);
        inspect_set_real(o, "latency_us", ps[k].ms.median * 1000);
        inspect_set_real(o, "p90_us", ps[k].ms.p90 * 1000);
        inspect_set_real(o, "tflops", ps[k].tflops);
        if (ps[k].ratio.n > 0) {
            inspect_set_real(o, "ratio_to_parent", ps[k].ratio.median);
            inspect_set_real(o, "ratio_p10", ps[k].ratio.p10);
            inspect_set_real(o, "ratio_p90", ps[k].ratio.p90);
            inspect_set_real(o, "parent_latency_us", ps[k].a_ms.median * 1000);
            json_object_set_new(o, "noisy", json_boolean(ps[k].noisy));
        }
        json_array_append_new(arr, o);
    }
    return arr;
}

json_t *inspect_candidate_json(const CandidateRecord *c, int full)
{
    json_t *o = store_candidate_json(c, 0);
    json_t *gpu = inspect_gpu_json(c), *profs = inspect_profiles_json(c);
    if (gpu)
        json_object_set_new(o, "gpu", gpu);
    if (profs)
        json_object_set_new(o, "profiles", profs);
    if (full) {   /* the detail after what is computed here, as show has always printed it */
        json_t *more = store_candidate_json(c, 1);
        json_object_update_missing(o, more);
        json_decref(more);
    }
    return o;
}

json_t *inspect_run_json(const RunRecord *r)
{
    json_t *o = store_run_json(r);
    json_object_set_new(o, "shape", inspect_shape_json(r));
    return o;
}

void inspect_json_print(json_t *o)
{
    out_json_doc(o);
}

/*
 * worker_main: the worker process itself (`evoeng __worker IN OUT`): it
 * owns the CUDA context, the loaded modules and the resident evaluation
 * state (resident.h), and answers the orchestrator's requests (worker.h
 * has the protocol). After a sticky CUDA error it replies, marks the reply
 * fatal and exits without touching the context again.
 */
#include "gpu/worker.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpu/cuda_api.h"
#include "gpu/proto.h"
#include "gpu/resident.h"

/* =======================================================================
 * Worker process
 * ======================================================================= */

#define CALIB_CAP 256

typedef struct WMod {
    int      id;
    CUmodule mod;
} WMod;

typedef struct WState {
    CudaApi      *api;
    CudaCtx       ctx;
    int           have_ctx;
    WMod         *mods;
    int           nmods, capmods;
    Resident     *res;     /* resident evaluation state, made on first use */
    char         *calib_key[CALIB_CAP]; /* calibrated batch sizes, FIFO */
    int           calib_batch[CALIB_CAP];
    int           calib_next;
    int           fatal;   /* set by a handler: reply, then exit */
} WState;

static CUmodule wmod_find(WState *s, int id)
{
    for (int i = 0; i < s->nmods; i++)
        if (s->mods[i].id == id)
            return s->mods[i].mod;
    return NULL;
}

static void wmod_drop(WState *s, int id)
{
    for (int i = 0; i < s->nmods; i++)
        if (s->mods[i].id == id) {
            s->api->cuModuleUnload(s->mods[i].mod);
            s->mods[i] = s->mods[--s->nmods];
            return;
        }
}

/* An error reply that also says whether the context is dead. */
static json_t *reply_fatal(int fatal, const char *status, const char *error)
{
    WReply r = {.fatal = fatal, .has_fatal = 1};
    snprintf(r.status, sizeof(r.status), "%s", status);
    snprintf(r.error, sizeof(r.error), "%s", error);
    return wmsg_put(WMSG_REPLY, &r);
}

static json_t *w_hello(WState *s, const json_t *req)
{
    EvoErr e = {{0}};
    WHello q;
    WHelloReply r = {.h.ok = 1};
    if (wmsg_read(WMSG_HELLO, req, &q, &e) != 0)
        return wmsg_error("invalid", "hello: %s", e.msg);
    if (!s->have_ctx) {
        if (!s->api && cuda_load(&s->api, &e) != 0)
            return wmsg_error("invalid", "%s", e.msg);
        if (cuda_context_open(s->api, q.device, &s->ctx, &e) != 0)
            return wmsg_error("invalid", "%s", e.msg);
        s->have_ctx = 1;
    }
    r.device = s->ctx.info;
    return wmsg_put(WMSG_HELLO_REPLY, &r);
}

static json_t *w_load(WState *s, const json_t *req, const ProtoMsg *m)
{
    EvoErr e = {{0}};
    WLoad q;
    WLoadReply out = {.h.ok = 1};
    unsigned char *img;
    CUmodule mod = NULL;
    CUresult r;
    json_t *j;
    if (wmsg_read(WMSG_LOAD, req, &q, &e) != 0)
        return wmsg_error("invalid", "load: %s", e.msg);
    if (!m->bin || m->bin_len == 0) {
        wmsg_free(WMSG_LOAD, &q);
        return wmsg_error("invalid", "%s", "load: no module image attached");
    }
    img = xmalloc(m->bin_len + 1); /* NUL-terminated in case it is PTX */
    memcpy(img, m->bin, m->bin_len);
    img[m->bin_len] = 0;
    r = s->api->cuModuleLoadData(&mod, img);
    free(img);
    if (r != CUDA_SUCCESS) {
        cuda_check(s->api, r, "cuModuleLoadData", &e);
        s->fatal = cuda_error_is_sticky(r);
        wmsg_free(WMSG_LOAD, &q);
        return reply_fatal(s->fatal, "compile_error", e.msg);
    }
    out.functions = xcalloc((size_t)q.nentries + 1, sizeof(*out.functions));
    for (int i = 0; i < q.nentries; i++) {
        const char *name = q.entries[i] ? q.entries[i] : "?";
        WorkerFunc *wf = &out.functions[out.nfunctions++];
        CUfunction f;
        if (!q.entries[i] || (r = s->api->cuModuleGetFunction(&f, mod, name)) != CUDA_SUCCESS) {
            s->api->cuModuleUnload(mod);
            j = wmsg_error("invalid", "load: kernel entry '%s' not found in the module (is it extern \"C\"?)", name);
            goto done;
        }
        snprintf(wf->name, sizeof(wf->name), "%s", name);
        s->api->cuFuncGetAttribute(&wf->registers, CU_FUNC_ATTRIBUTE_NUM_REGS, f);
        s->api->cuFuncGetAttribute(&wf->static_smem, CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES, f);
        s->api->cuFuncGetAttribute(&wf->local_bytes, CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES, f);
        s->api->cuFuncGetAttribute(&wf->max_threads, CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK, f);
    }
    wmod_drop(s, q.module);
    if (s->nmods == s->capmods) {
        s->capmods = s->capmods ? 2 * s->capmods : 16;
        s->mods = xrealloc(s->mods, (size_t)s->capmods * sizeof(*s->mods));
    }
    s->mods[s->nmods].id = q.module;
    s->mods[s->nmods].mod = mod;
    s->nmods++;
    j = wmsg_put(WMSG_LOAD_REPLY, &out);
done:
    free(out.functions);
    wmsg_free(WMSG_LOAD, &q);
    return j;
}

/* The resident state, made on the first request that needs it (it
 * compiles evoeng's own kernels). NULL with err on failure. */
static Resident *resident(WState *s, EvoErr *err)
{
    if (!s->res && resident_open(&s->res, &s->ctx, err) != 0)
        return NULL;
    return s->res;
}

static json_t *w_gate(WState *s, const json_t *req)
{
    EvoErr e = {{0}};
    WGate q;
    GateOptions opt;
    WGateReply out = {.h.ok = 1, .h.has_fatal = 1};
    Resident *res;
    if (wmsg_read(WMSG_GATE, req, &q, &e) != 0)
        return wmsg_error("invalid", "gate: %s", e.msg);
    CUmodule mc = wmod_find(s, q.cand), mr = wmod_find(s, q.ref);
    if (!mc || !mr) {
        wmsg_free(WMSG_GATE, &q);
        return wmsg_error("invalid", "gate: module %s not loaded", !mc ? "cand" : "ref");
    }
    gate_options_default(&opt);
    if (q.nseeds > 0) {
        opt.nseeds = q.nseeds;
        opt.seeds_given = 1;
        memcpy(opt.seeds, q.seeds, sizeof(q.seeds[0]) * (size_t)q.nseeds);
    }
    if (!(res = resident(s, &e))) {
        wmsg_free(WMSG_GATE, &q);
        return wmsg_error("invalid", "%s", e.msg);
    }
    gate_run(&s->ctx, res, &q.plan, mc, mr, q.ref, &opt, &out.report, &e);
    wmsg_free(WMSG_GATE, &q);
    s->fatal = out.h.fatal = out.report.fatal;
    return wmsg_put(WMSG_GATE_REPLY, &out);
}

/* One side of a timing request: its plan and, for every profile timed,
 * its launches on that profile's working set of the bay holding its
 * inputs (two sides with the same inputs share the buffers, so an A/B
 * compares kernels, not allocations). */
typedef struct Side {
    Plan         plan;
    int          have_plan;
    int          n;                         /* profiles timed */
    int          prof[PLAN_MAX_PROFILES];   /* their indices in the plan */
    CudaPlan     cp[PLAN_MAX_PROFILES];
    CudaLaunches cl[PLAN_MAX_PROFILES];
} Side;

static void side_free(Side *sd)
{
    for (int k = 0; k < PLAN_MAX_PROFILES; k++) {
        cuda_launches_free(&sd->cl[k]);
        resident_plan_free(&sd->cp[k]);
    }
    if (sd->have_plan)
        plan_free(&sd->plan);
}

/* The profiles a request times: mask (0: the plan's timing profiles).
 * Returns how many (into prof[]), 0 when mask names none of the plan's. */
static int timed_profiles(const Plan *plan, unsigned mask, int *prof)
{
    int n = 0;
    if (!mask)
        mask = plan_timing_mask(plan);
    for (int k = 0; k < plan_nprofiles(plan) && k < PLAN_MAX_PROFILES; k++)
        if (mask & (1u << k))
            prof[n++] = k;
    return n;
}

/* Set up a side (taking *plan, which is zeroed): for each profile k
 * timed, working set k of its bay (second = 1: set nprofiles + k, a side
 * on buffers of its own). Returns NULL on success, or an error reply. */
static json_t *side_open(WState *s, Side *sd, Plan *plan, int module, int ref, uint64_t seed, unsigned mask,
                         int second)
{
    EvoErr e = {{0}};
    CUresult cu = CUDA_SUCCESS;
    CUmodule m = wmod_find(s, module);
    Resident *res;
    memset(sd, 0, sizeof(*sd));
    sd->plan = *plan;
    sd->have_plan = 1;
    memset(plan, 0, sizeof(*plan));
    if (!m)
        return wmsg_error("invalid", "timing: module %d not loaded", module);
    if (!(sd->n = timed_profiles(&sd->plan, mask, sd->prof)))
        return wmsg_error("invalid", "timing: profiles 0x%x: the plan has %d profile%s", mask,
                           plan_nprofiles(&sd->plan), plan_nprofiles(&sd->plan) == 1 ? "" : "s");
    if (!(res = resident(s, &e)))
        return wmsg_error("invalid", "%s", e.msg);
    for (int k = 0; k < sd->n; k++) {
        Bay *bay = NULL;
        int p = sd->prof[k], set = p + (second ? plan_nprofiles(&sd->plan) : 0);
        if (resident_bay_time(res, &sd->plan, p, seed, &bay, &cu, &e) != 0)
            goto fail;
        resident_plan(bay, set, &sd->plan, &sd->cp[k]);
        if (resident_reset(res, bay, set, resident_variant(bay, p, seed), &sd->plan, ref, &cu, &e) != 0 ||
            cuda_launches_prepare(&s->ctx, &sd->cp[k], m, ref ? sd->plan.ref_launches : sd->plan.launches,
                                  ref ? sd->plan.nref_launches : sd->plan.nlaunches, &sd->cl[k], &cu, &e) != 0)
            goto fail;
    }
    return NULL;
fail:
    s->fatal = cuda_error_is_sticky(cu);
    return reply_fatal(s->fatal, cu == CUDA_SUCCESS ? "invalid" : gate_status_name(gate_status_from_cuda(cu)), e.msg);
}

/* The calibration cache: a side's batch size is measured once per
 * (module, which launches, shape, sample length) and reused, so repeated
 * timings of a parent cost no calibration and sample the same batch. */
static char *calib_key(const Side *sd, int module, int ref, const BenchOptions *o)
{
    return xasprintf("%d|%s|%s|%.6g|%d", module, ref ? "ref" : "cand", sd->plan.shape_label ? sd->plan.shape_label : "",
                     o->min_sample_ms, o->cold);
}

static int calib_get(const WState *s, const char *key)
{
    for (int i = 0; i < CALIB_CAP; i++)
        if (s->calib_key[i] && strcmp(s->calib_key[i], key) == 0)
            return s->calib_batch[i];
    return 0;
}

/* Remember batch under key (takes key). */
static void calib_put(WState *s, char *key, int batch)
{
    if (batch <= 0 || calib_get(s, key) > 0) {
        free(key);
        return;
    }
    free(s->calib_key[s->calib_next]);
    s->calib_key[s->calib_next] = key;
    s->calib_batch[s->calib_next] = batch;
    s->calib_next = (s->calib_next + 1) % CALIB_CAP;
}

/* After a timing request: did a timed kernel write outside its buffers
 * (the resident inputs or references, or a red zone)? Then the timing is
 * not to be trusted either: status incorrect with the reason; the damage
 * is made again on next use. */
static void timing_verify(WState *s, EvalStatus *st, char *error, size_t cap)
{
    EvoErr e = {{0}};
    CUresult cu;
    int rbad = 0, gbad = 0;
    char where[160];
    if (resident_verify(s->res, &rbad, &gbad, where, sizeof(where), &cu, &e) != 0) {
        *st = gate_status_from_cuda(cu);
        s->fatal = cuda_error_is_sticky(cu);
        snprintf(error, cap, "after timing: %s", e.msg);
    } else if (rbad || gbad) {
        *st = EVAL_INCORRECT;
        snprintf(error, cap, "a timed kernel wrote outside its buffers: %s",
                 rbad ? "the resident inputs or reference outputs changed" : where);
    }
}

/* Time each profile of side sd in turn (the batch calibrated once, on
 * the first, and cached), into res->prof[]; res->ms is their geometric
 * mean. */
static void time_profiles(WState *s, Side *sd, const char *key, const BenchOptions *o, BenchResult *res,
                          EvoErr *e)
{
    BenchOptions each = *o;
    each.samples = bench_samples_per_profile(o, sd->n);
    res->nprof = 0;
    for (int k = 0; k < sd->n && res->status == EVAL_OK; k++) {
        BenchResult one;
        memset(&one, 0, sizeof(one));
        if (k > 0)
            each.warmup = 1;
        bench_time(&s->ctx, &sd->cl[k], &each, calib_get(s, key), &one, e);
        calib_put(s, xstrdup(key), one.status == EVAL_OK ? one.batch : 0);
        ProfileStat *ps = &res->prof[res->nprof++];
        snprintf(ps->name, sizeof(ps->name), "%s", plan_profile_name(&sd->plan, sd->prof[k]));
        ps->ms = one.ms;
        res->status = one.status;
        res->fatal = one.fatal;
        snprintf(res->error, sizeof(res->error), "%s", one.error);
        snprintf(res->cuda_error, sizeof(res->cuda_error), "%s", one.cuda_error);
        if (k == 0) {
            res->batch = one.batch;
            res->graph = one.graph;
            res->hold = one.hold;
        }
        res->cold = one.cold;
    }
    bench_result_aggregate(res);
}

static json_t *w_time(WState *s, const json_t *req, int metrics_only)
{
    EvoErr e = {{0}};
    WTime q;
    WTimeReply out = {.h.ok = 1, .h.has_fatal = 1};
    BenchResult *res = &out.result;
    Side sd;
    json_t *bad;
    if (wmsg_read(WMSG_TIME, req, &q, &e))
        return wmsg_error("invalid", "%s: %s", metrics_only ? "metrics" : "time", e.msg);
    BenchOptions *o = &q.bench;
    if (s->res)
        resident_begin(s->res);
    bad = side_open(s, &sd, &q.plan, q.module, q.which_ref, o->seed, metrics_only ? 1u : 0u, 0);
    if (bad) {
        side_free(&sd);
        return bad;
    }
    if (bench_metrics(&s->ctx, &sd.cl[0], res, &e) != 0) {
        side_free(&sd);
        return wmsg_error("launch_error", "%s", e.msg);
    }
    if (!metrics_only) {
        char *key = calib_key(&sd, q.module, q.which_ref, o);
        res->status = EVAL_OK;
        time_profiles(s, &sd, key, o, res, &e);
        free(key);
        if (res->status == EVAL_OK)
            timing_verify(s, &res->status, res->error, sizeof(res->error));
    }
    bench_fill_throughput(res, &sd.plan, &s->ctx.info);
    side_free(&sd);
    s->fatal = out.h.fatal = res->fatal;
    return wmsg_put(WMSG_TIME_REPLY, &out);
}

static json_t *w_compare(WState *s, const json_t *req)
{
    EvoErr e = {{0}};
    WCompare q;
    WCompareReply out = {.h.ok = 1, .h.has_fatal = 1};
    CompareResult *res = &out.result;
    Side a, b;
    json_t *bad;
    if (wmsg_read(WMSG_COMPARE, req, &q, &e))
        return wmsg_error("invalid", "compare: %s", e.msg);
    BenchOptions *o = &q.bench;
    memset(&b, 0, sizeof(b));
    if (s->res)
        resident_begin(s->res);
    /* shared (the default): both sides on profile k's working set of their
     * bay, so the same buffers when their inputs match; else B on a set of
     * its own */
    bad = side_open(s, &a, &q.plan_a, q.module_a, q.which_a, o->seed, 0u, 0);
    if (!bad)
        bad = side_open(s, &b, &q.plan_b, q.module_b, q.which_b, o->seed, 0u, !o->shared);
    if (!bad && (a.n != b.n || memcmp(a.prof, b.prof, sizeof(a.prof)) != 0))
        bad = wmsg_error("invalid", "compare: the two plans time different input profiles");
    if (bad) {
        side_free(&a);
        side_free(&b);
        wmsg_free(WMSG_COMPARE, &q);
        return bad;
    }
    {
        char *ka = calib_key(&a, q.module_a, q.which_a, o);
        char *kb = calib_key(&b, q.module_b, q.which_b, o);
        int known[2] = {calib_get(s, ka), calib_get(s, kb)};
        const CudaLaunches *la[PLAN_MAX_PROFILES], *lb[PLAN_MAX_PROFILES];
        const char *names[PLAN_MAX_PROFILES];
        for (int k = 0; k < a.n; k++) {
            la[k] = &a.cl[k];
            lb[k] = &b.cl[k];
            names[k] = plan_profile_name(&b.plan, b.prof[k]);
        }
        bench_compare_multi(&s->ctx, a.n, la, lb, names, o, known, res, &e);
        calib_put(s, ka, res->status == EVAL_OK ? res->batch_a : 0);
        calib_put(s, kb, res->status == EVAL_OK ? res->batch_b : 0);
    }
    if (res->status == EVAL_OK)
        timing_verify(s, &res->status, res->error, sizeof(res->error));
    side_free(&a);
    side_free(&b);
    s->fatal = out.h.fatal = res->fatal;
    return wmsg_put(WMSG_COMPARE_REPLY, &out);
}

int worker_main(int in_fd, int out_fd)
{
    WState s;
    int code = 0;
    memset(&s, 0, sizeof(s));
    for (;;) {
        ProtoMsg m;
        EvoErr e = {{0}};
        json_t *reply = NULL;
        WReply ok = {.ok = 1};
        int rc = proto_read(in_fd, &m, -1, &e);
        if (rc == PROTO_EOF)
            break;
        if (rc != 0) {
            fprintf(stderr, "evoeng worker: %s\n", e.msg);
            code = 1;
            break;
        }
        if (m.type == PROTO_QUIT) {
            reply = wmsg_put(WMSG_REPLY, &ok);
            proto_write(out_fd, PROTO_REPLY, reply, NULL, 0, &e);
            json_decref(reply);
            proto_msg_free(&m);
            break;
        }
        if (m.type == PROTO_HELLO)
            reply = w_hello(&s, m.json);
        else if (!s.have_ctx)
            reply = wmsg_error("invalid", "%s", "no CUDA context: send hello first");
        else if (m.type == PROTO_LOAD)
            reply = w_load(&s, m.json, &m);
        else if (m.type == PROTO_GATE)
            reply = w_gate(&s, m.json);
        else if (m.type == PROTO_TIME)
            reply = w_time(&s, m.json, 0);
        else if (m.type == PROTO_METRICS)
            reply = w_time(&s, m.json, 1);
        else if (m.type == PROTO_COMPARE)
            reply = w_compare(&s, m.json);
        else if (m.type == PROTO_UNLOAD) {
            WLoad q;
            if (wmsg_read(WMSG_UNLOAD, m.json, &q, &e) == 0)
                wmod_drop(&s, q.module);
            reply = wmsg_put(WMSG_REPLY, &ok);
        } else {
            reply = wmsg_error("invalid", "unknown request type %s", proto_type_name(m.type));
        }
        proto_msg_free(&m);
        if (s.fatal)
            json_object_set_new(reply, "fatal", json_true());
        rc = proto_write(out_fd, PROTO_REPLY, reply, NULL, 0, &e);
        json_decref(reply);
        if (rc != 0 || s.fatal) {
            code = s.fatal ? 1 : 0;
            break;
        }
    }
    /* After a fatal error the context is poisoned: do not touch it. */
    if (!s.fatal && s.have_ctx) {
        resident_close(&s.res);
        for (int i = 0; i < s.nmods; i++)
            s.api->cuModuleUnload(s.mods[i].mod);
        cuda_context_close(&s.ctx);
    }
    free(s.mods);
    for (int i = 0; i < CALIB_CAP; i++)
        free(s.calib_key[i]);
    if (!s.fatal)
        cuda_close(&s.api);
    return code;
}

int worker_dispatch(int argc, char **argv, int *exit_code)
{
    long in_fd, out_fd;
    if (argc < 4 || strcmp(argv[1], "__worker") != 0)
        return 0;
    if (parse_long(argv[2], 0, 1 << 20, &in_fd) != 0 || parse_long(argv[3], 0, 1 << 20, &out_fd) != 0) {
        fprintf(stderr, "evoeng __worker: bad file descriptors '%s' '%s'\n", argv[2], argv[3]);
        *exit_code = 2;
        return 1;
    }
    *exit_code = worker_main((int)in_fd, (int)out_fd);
    return 1;
}

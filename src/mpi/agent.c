/* agent: see agent.h. */
#include "mpi/agent.h"

#include <jansson.h>
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "compile/nvrtc.h"
#include "mpi/mpistat.h"
#include "mpi/wire.h"

typedef struct Mirror {
    int64_t id;
    Child   c;
    int     sent;   /* its compile row (and text) went to rank 0 (they do not change); a
                     * mirror judged only at stage B has none to send */
    int     busy;   /* slot threads serving a request on it, as kid or parent (Agent.lock) */
    int     doomed; /* released while busy: dropped once no slot uses it (main thread) */
} Mirror;

typedef struct SlotThread {
    struct Agent   *a;
    int             slot;
    pthread_t       tid;
    json_t         *req;        /* the request being served, or NULL: idle */
    struct Mirror  *kid, *parent; /* its mirrors, resolved by the main thread */
    double          t_hand;     /* ms: when the main thread handed req over (EVOENG_MPI_DEBUG) */
} SlotThread;

typedef struct Watch {        /* a child's stage whose units rank 0 waits to hear are built */
    int64_t id;
    int     stage;
} Watch;

typedef struct Agent {
    MpiLink            *l;
    const EvaluatorOps *ev;
    void               *ctx;
    int                 nparams;
    Mirror            **m;      /* the mirrors (main thread only) */
    int                 nm, capm;
    SlotThread         *slots;
    int                 nslots;
    pthread_mutex_t     lock;   /* slots[].req, outbox, quit */
    pthread_cond_t      cv;
    char              **outbox; /* replies waiting for the main thread */
    double             *out_t;  /* ms: when each was pushed (EVOENG_MPI_DEBUG) */
    int                 nout, capout;
    int                 quit;
    int                 lost;   /* rank 0's quit said a rank was lost */
    int                 ndoomed; /* (main thread) mirrors marked doomed */
    Watch              *watch;  /* (main thread) stages to announce once built */
    int                 nwatch, capwatch;
    MpiStat            *stat;   /* EVOENG_MPI_DEBUG: where the requests' time goes, or NULL */
    NvrtcStats          nv0;    /* this process's compile figures when it began to serve */
} Agent;

/* ---- mirrors ----------------------------------------------------------- */

static Mirror *mirror_find(Agent *a, int64_t id)
{
    for (int i = 0; i < a->nm; i++)
        if (a->m[i]->id == id)
            return a->m[i];
    return NULL;
}

/* The mirror of the child described by o, made on first sight. */
static Mirror *mirror_get(Agent *a, json_t *o)
{
    int64_t id = (int64_t)json_integer_value(json_object_get(o, "id"));
    Mirror *m = mirror_find(a, id);
    if (m && m->doomed) {   /* released while busy, and sent again since: kept */
        m->doomed = 0;
        a->ndoomed--;
    }
    if (m) {   /* a child committed since it was sent has its id now (logs name a parent by it) */
        int64_t rid = (int64_t)json_integer_value(json_object_get(o, "rid"));
        if (rid)
            m->c.rec.id = rid;
        return m;
    }
    m = xcalloc(1, sizeof(*m));
    evolve_child_init(&m->c, a->nparams);
    if (wire_child_get(o, &m->c, a->nparams, &m->id)) {
        evolve_child_clear(&m->c, NULL, NULL);
        free(m);
        return NULL;
    }
    if (a->nm == a->capm) {
        a->capm = a->capm ? a->capm * 2 : 64;
        a->m = xrealloc(a->m, (size_t)a->capm * sizeof(*a->m));
    }
    a->m[a->nm++] = m;
    return m;
}

/* Watch child id's stage: announce {"op": "ready"} once its units are built. */
static void watch_add(Agent *a, int64_t id, int stage)
{
    for (int i = 0; i < a->nwatch; i++)
        if (a->watch[i].id == id && a->watch[i].stage == stage)
            return;
    if (a->nwatch == a->capwatch) {
        a->capwatch = a->capwatch ? a->capwatch * 2 : 64;
        a->watch = xrealloc(a->watch, (size_t)a->capwatch * sizeof(*a->watch));
    }
    a->watch[a->nwatch++] = (Watch){.id = id, .stage = stage};
}

/* Release mirror id (main thread). One that a slot thread is serving a
 * request on is only marked, and dropped by mirror_sweep once it is idle:
 * its child's units and modules are in use. */
static void mirror_drop(Agent *a, int64_t id)
{
    for (int i = 0; i < a->nwatch; i++)
        if (a->watch[i].id == id)
            a->watch[i--] = a->watch[--a->nwatch];
    for (int i = 0; i < a->nm; i++)
        if (a->m[i]->id == id) {
            Mirror *m = a->m[i];
            pthread_mutex_lock(&a->lock);
            int busy = m->busy;
            pthread_mutex_unlock(&a->lock);
            if (busy) {
                a->ndoomed += !m->doomed;
                m->doomed = 1;
                return;
            }
            a->ndoomed -= m->doomed;
            a->m[i] = a->m[--a->nm];
            evolve_child_clear(&m->c, a->ev, a->ctx);
            free(m);
            return;
        }
}

/* Drop the released mirrors that no slot uses any more (main thread). */
static void mirror_sweep(Agent *a)
{
    for (int i = 0; i < a->nm && a->ndoomed; i++)
        if (a->m[i]->doomed) {
            int64_t id = a->m[i]->id;
            int before = a->nm;
            mirror_drop(a, id);
            if (a->nm < before)
                i--;   /* dropped: slot i holds the last mirror now */
        }
}

/* ---- replies ----------------------------------------------------------- */

/* A reply to request seq: rc, the error, and extra fields of o (taken).
 * Every reply also carries "nv", this agent's compile figures since it
 * began to serve ([compiles, cache hits, CPU s, wall s]), which rank 0
 * adds to its run's NVRTC figures: the agents compile, rank 0 does not. */
static char *reply_text(const Agent *a, json_t *req, int rc, const EvoErr *err, json_t *o)
{
    if (!o)
        o = json_object();
    json_object_set(o, "seq", json_object_get(req, "seq"));
    json_object_set_new(o, "rc", json_integer(rc));
    json_t *t = json_object_get(req, "t_in");   /* EVOENG_MPI_DEBUG: when it came in */
    if (t)
        json_object_set_new(o, "agent_ms", json_real(time_now_ms() - json_real_value(t)));
    if (rc < 0 && rc != EVAL_RETRY)
        json_object_set_new(o, "err", json_string(err->msg));
    NvrtcStats nv;
    nvrtc_stats(&nv);
    json_object_set_new(o, "nv", wire_nv_put(&nv, &a->nv0));
    char *s = json_dumps(o, JSON_COMPACT);
    json_decref(o);
    return s;
}

static void outbox_push(Agent *a, char *s)
{
    pthread_mutex_lock(&a->lock);
    if (a->nout == a->capout) {
        a->capout = a->capout ? a->capout * 2 : 16;
        a->outbox = xrealloc(a->outbox, (size_t)a->capout * sizeof(char *));
        a->out_t = xrealloc(a->out_t, (size_t)a->capout * sizeof(double));
    }
    a->out_t[a->nout] = a->stat ? time_now_ms() : 0;
    a->outbox[a->nout++] = s;
    pthread_mutex_unlock(&a->lock);
}

/* ---- the slot threads: gate, time, compare, calibrate ------------------ */

static json_t *num_json(double v)
{
    return isfinite(v) ? json_real(v) : json_null();
}

/* The A/B of kid against parent; its ratio and spread go into reply o.
 * Returns the evaluator's rc. */
static int compare_into(Agent *a, Child *kid, Child *parent, json_t *o, EvoErr *err)
{
    double ratio = NAN, spread = NAN;
    int rc = a->ev->compare(a->ctx, parent, kid, &ratio, &spread, err);
    json_object_set_new(o, "ratio", num_json(ratio));
    json_object_set_new(o, "spread", num_json(spread));
    return rc;
}

/* The A/B of kid against parent right after kid's stage-A gate passed,
 * as one process's GPU thread runs it: what a compare request's reply
 * would carry ({"rc", "err"?, "ratio", "spread", "res"}), saving rank 0
 * a round trip while the GPU waits. */
static json_t *then_compare(Agent *a, Child *kid, Child *parent)
{
    EvoErr err = {{0}};
    json_t *o = json_object();
    double t0 = time_now_ms();
    int rc = compare_into(a, kid, parent, o, &err);
    mpistat_add(a->stat, "compare", "fused_serve_ms", a->stat ? time_now_ms() - t0 : 0);
    json_object_set_new(o, "rc", json_integer(rc));
    json_object_set_new(o, "res", wire_result_put(kid, WIRE_REC));
    if (rc < 0 && rc != EVAL_RETRY)
        json_object_set_new(o, "err", json_string(err.msg));
    return o;
}

/* Serve one blocking request on slot t->slot; the mirrors it names were
 * resolved by the main thread into kid and parent. The kid's compile row
 * goes with the first reply only (*sent): rank 0 keeps what a reply
 * leaves out. Its source text (tens of kB of JSON) goes too only when
 * the request asks for it ("text"): rank 0 renders it itself
 * (mpitext.h) and knows it by its hash, in the record. */
static char *serve_slow(Agent *a, int slot, json_t *req, Child *kid, Child *parent, int *sent)
{
    const char *op = json_string_value(json_object_get(req, "op"));
    EvoErr err = {{0}};
    json_t *o = json_object();
    int rc;
    double t0 = time_now_ms(), t1 = 0;
    char name[32];
    mpistat_name(req, name, sizeof(name));
    kid->gpu = slot;
    int bad = wire_result_get(json_object_get(req, "res"), kid, &err);
    if (a->stat) {
        mpistat_add(a->stat, name, "res_get_ms", (t1 = time_now_ms()) - t0);
        t0 = t1;
    }
    if (bad) {
        rc = -1;
    } else if (strcmp(op, "gate") == 0) {
        kid->judge_parent = parent;   /* stage A: the watchdog scales with the parent's times */
        rc = a->ev->gate(a->ctx, kid, (int)json_integer_value(json_object_get(req, "stage")), &err);
        kid->judge_parent = NULL;
    } else if (strcmp(op, "time") == 0) {
        rc = a->ev->time(a->ctx, kid, &err);
    } else if (strcmp(op, "compare") == 0) {
        rc = compare_into(a, kid, parent, o, &err);
    } else {   /* calibrate */
        rc = a->ev->calibrate ? a->ev->calibrate(a->ctx, kid, &err) : 0;
    }
    if (a->stat) {
        mpistat_add(a->stat, name, "serve_ms", (t1 = time_now_ms()) - t0);
        t0 = t1;
    }
    int what = WIRE_REC;
    if (!*sent && (kid->comp.cache_key || kid->source_text)) {   /* the first reply that has them */
        what = json_is_true(json_object_get(req, "text")) ? WIRE_TEXT : WIRE_COMP;
        *sent = 1;
    }
    json_object_set_new(o, "res", wire_result_put(kid, what));
    double enc = a->stat ? time_now_ms() - t0 : 0;
    /* "ab": a stage-A gate that names the parent goes on to the A/B
     * when it passed, as loop_stage_a would ask next */
    if (rc == 0 && !kid->rec.status && parent && json_is_true(json_object_get(req, "ab")))
        json_object_set_new(o, "ab", then_compare(a, kid, parent));
    t0 = a->stat ? time_now_ms() : 0;
    char *text = reply_text(a, req, rc, &err, o);
    mpistat_add(a->stat, name, "encode_ms", a->stat ? enc + time_now_ms() - t0 : 0);
    mpistat_add(a->stat, name, "reply_bytes", (double)strlen(text));
    return text;
}

static void *slot_main(void *arg)
{
    SlotThread *t = arg;
    Agent *a = t->a;
    pthread_mutex_lock(&a->lock);
    for (;;) {
        while (!t->req && !a->quit)
            pthread_cond_wait(&a->cv, &a->lock);
        if (!t->req)
            break;
        json_t *req = t->req;
        pthread_mutex_unlock(&a->lock);
        mpistat_add(a->stat, "slot", "handover_ms", a->stat ? time_now_ms() - t->t_hand : 0);
        char *s = serve_slow(a, t->slot, req, &t->kid->c, t->parent ? &t->parent->c : NULL, &t->kid->sent);
        outbox_push(a, s);
        pthread_mutex_lock(&a->lock);
        json_decref(t->req);
        t->req = NULL;
        t->kid->busy--;
        if (t->parent)
            t->parent->busy--;
        t->kid = t->parent = NULL;
    }
    pthread_mutex_unlock(&a->lock);
    return NULL;
}

/* ---- the main thread --------------------------------------------------- */

/* Submit the stages a child has reached on rank 0 to its fresh mirror
 * ("stages": [0|1, 2?]), so a child or parent judged here has its units.
 * A slot of this agent is about to wait for them (a child taken over, a
 * parent for an A/B): they are built before anything else. */
static int adopt(Agent *a, Mirror *m, json_t *stages, EvoErr *err)
{
    size_t i;
    json_t *v;
    json_array_foreach(stages, i, v) {
        int stage = (int)json_integer_value(v);
        if (a->ev->submit(a->ctx, &m->c, stage, err))
            return -1;
        if (a->ev->urge && stage >= 1)
            a->ev->urge(a->ctx, &m->c, stage);
    }
    return 0;
}

/* Handle one request from rank 0. Returns 0, or -1 with err (fatal). */
static int handle(Agent *a, json_t *req, EvoErr *err)
{
    const char *op = json_string_value(json_object_get(req, "op"));
    if (!op)
        return err_set(err, "agent: a request without an op");
    if (strcmp(op, "quit") == 0) {
        a->quit = 1;
        a->lost = json_integer_value(json_object_get(req, "lost")) != 0;
        return 0;
    }
    json_t *kd = json_object_get(req, "kid");
    Mirror *m = kd ? mirror_get(a, kd) : NULL;
    if (kd && !m)
        return err_set(err, "agent: a malformed child in a '%s' request", op);
    if (strcmp(op, "release") == 0 || strcmp(op, "drop") == 0) {
        if (!m)
            return 0;
        if (op[0] == 'r')
            mirror_drop(a, m->id);
        else if (a->ev->drop)
            a->ev->drop(a->ctx, &m->c);
        return 0;
    }
    if (strcmp(op, "adopt") == 0)
        return m ? adopt(a, m, json_object_get(req, "stages"), err) : 0;
    if (!m)
        return err_set(err, "agent: a '%s' request without a child", op);
    if (strcmp(op, "submit") == 0 || strcmp(op, "ready") == 0) {
        EvoErr e = {{0}};
        json_t *o = json_object();
        int stage = (int)json_integer_value(json_object_get(req, "stage")), rc = 0;
        if (op[0] == 's') {
            rc = wire_result_get(json_object_get(req, "res"), &m->c, &e) ? -1
                                                                          : a->ev->submit(a->ctx, &m->c, stage, &e);
            json_object_set_new(o, "res", wire_result_put(&m->c, WIRE_REC));
            if (rc == 0 && stage >= 0 && stage <= 2)
                watch_add(a, m->id, stage == 2 ? 2 : 1);
            if (!json_object_get(req, "seq")) {   /* sent without waiting for a reply */
                json_decref(o);
                if (rc)
                    return err_set(err, "agent: submit: %s", e.msg);
                return 0;
            }
        } else {
            json_object_set_new(o, "ready", json_integer(!a->ev->ready || a->ev->ready(a->ctx, &m->c, stage)));
        }
        outbox_push(a, reply_text(a, req, rc, &e, o));
        return 0;
    }
    if (strcmp(op, "text") == 0) {   /* the source rank 0 did not render as this agent did (mpitext.h) */
        outbox_push(a, reply_text(a, req, 0, NULL, json_pack("{s:s?}", "text", m->c.source_text)));
        return 0;
    }
    /* gate, time, compare, calibrate: on the slot's thread */
    int slot = (int)json_integer_value(json_object_get(req, "slot"));
    if (slot < 0 || slot >= a->nslots)
        return err_set(err, "agent: slot %d out of range (%d local slots)", slot, a->nslots);
    Mirror *pm = NULL;
    json_t *pd = json_object_get(req, "parent");
    if (pd && !(pm = mirror_get(a, pd)))
        return err_set(err, "agent: a malformed parent in a '%s' request", op);
    SlotThread *t = &a->slots[slot];
    pthread_mutex_lock(&a->lock);
    int busy = t->req != NULL;
    if (!busy) {
        t->req = json_incref(req);
        t->kid = m;
        t->parent = pm;
        m->busy++;
        if (pm)
            pm->busy++;
        t->t_hand = a->stat ? time_now_ms() : 0;
        pthread_cond_broadcast(&a->cv);
    }
    pthread_mutex_unlock(&a->lock);
    if (busy)
        return err_set(err, "agent: slot %d got a '%s' request while busy", slot, op);
    return 0;
}

/* Announce the watched stages whose units are built (main thread). */
static void announce(Agent *a)
{
    for (int i = 0; i < a->nwatch; i++) {
        Mirror *m = mirror_find(a, a->watch[i].id);
        if (m && a->ev->ready && !a->ev->ready(a->ctx, &m->c, a->watch[i].stage))
            continue;
        if (m)
            outbox_push(a, xasprintf("{\"op\":\"ready\",\"id\":%lld,\"stage\":%d}", (long long)m->id,
                                     a->watch[i].stage));
        a->watch[i--] = a->watch[--a->nwatch];
    }
}

/* Send what the slot threads and handle() left in the outbox. */
static void flush(Agent *a)
{
    pthread_mutex_lock(&a->lock);
    for (int i = 0; i < a->nout; i++) {
        mpistat_add(a->stat, "outbox", "wait_ms", a->stat ? time_now_ms() - a->out_t[i] : 0);
        mpilink_send(a->l, 0, LINK_TAG_REPLY, a->outbox[i]);
    }
    a->nout = 0;
    pthread_mutex_unlock(&a->lock);
}

/* Receive the next message from rank 0, polling. Returns 1 with *msg, or
 * -1 with err when rank 0 is lost or MPI fails. */
static int next_message(MpiLink *l, Agent *a, char **msg, EvoErr *err)
{
    for (;;) {
        if (a) {
            double t0 = a->stat ? time_now_ms() : 0;
            announce(a);
            mirror_sweep(a);
            mpistat_add(a->stat, "loop", "announce_ms", a->stat ? time_now_ms() - t0 : 0);
            flush(a);
        }
        int src, tag;
        int got = mpilink_poll(l, &src, &tag, msg, err);
        if (got < 0)
            return -1;
        if (got && src == 0 && tag == LINK_TAG_REQ)
            return 1;
        free(*msg);
        *msg = NULL;
        if (mpilink_lost(l, 0, 1))
            return err_set(err, "rank 0 (the orchestrator) is lost: no message for too long");
        if (!got)
            usleep(100);
    }
}

int agent_wait_setup(MpiLink *l, char **setup, EvoErr *err)
{
    *setup = NULL;
    char *msg = NULL;
    if (next_message(l, NULL, &msg, err) < 0)
        return -1;
    json_t *o = json_loads(msg, 0, NULL);
    const char *op = json_string_value(json_object_get(o, "op"));
    int rc = 0;
    if (op && strcmp(op, "setup") == 0)
        *setup = json_dumps(json_object_get(o, "setup"), JSON_COMPACT);
    else if (!op || strcmp(op, "quit") != 0)
        rc = err_set(err, "agent: expected rank 0's setup, got: %.200s", msg);
    json_decref(o);
    free(msg);
    return rc;
}

static void hello(MpiLink *l, json_t *o)
{
    char *s = json_dumps(o, JSON_COMPACT);
    json_decref(o);
    mpilink_send(l, 0, LINK_TAG_REPLY, s);
}

void agent_refuse(MpiLink *l, const char *msg)
{
    EvoErr err;
    hello(l, json_pack("{s:s}", "error", msg));
    char *m = NULL;
    while (next_message(l, NULL, &m, &err) == 1) {   /* until quit, or rank 0 is gone */
        int quit = strstr(m, "\"quit\"") != NULL;
        free(m);
        if (quit)
            break;
    }
}

int agent_serve(MpiLink *l, const EvaluatorOps *ev, void *ctx, int nparams, const char *device_hex, int *abandon,
                EvoErr *err)
{
    Agent a = {.l = l, .ev = ev, .ctx = ctx, .nparams = nparams, .stat = mpistat_new("agent", mpilink_rank(l))};
    a.nslots = ev->slots ? ev->slots(ctx) : 1;
    nvrtc_stats(&a.nv0);
    pthread_mutex_init(&a.lock, NULL);
    pthread_cond_init(&a.cv, NULL);
    a.slots = xcalloc((size_t)a.nslots, sizeof(SlotThread));
    int started = 0, rc = 0;
    for (; started < a.nslots; started++) {
        a.slots[started].a = &a;
        a.slots[started].slot = started;
        if (pthread_create(&a.slots[started].tid, NULL, slot_main, &a.slots[started])) {
            rc = err_set(err, "agent: pthread_create failed");
            break;
        }
    }
    if (rc == 0) {
        /* the compile cache, so that rank 0 knows which agents share one */
        char host[256] = "", *dir = nvrtc_cache_dir(), *cache = NULL;
        if (dir && gethostname(host, sizeof(host) - 1) == 0)
            cache = xasprintf("%s:%s", host, dir);
        hello(l, json_pack("{s:i, s:s, s:i, s:s?}", "slots", a.nslots, "device", device_hex, "lanes",
                           ev->lanes ? ev->lanes(ctx) : 1, "cache", cache));
        free(cache);
        free(dir);
    }
    while (rc == 0 && !a.quit) {
        char *msg = NULL;
        if (next_message(l, &a, &msg, err) < 0) {
            rc = -1;
            break;
        }
        double t0 = a.stat ? time_now_ms() : 0;
        json_t *req = json_loads(msg, 0, NULL);
        char name[32];
        if (a.stat && req) {
            mpistat_add(a.stat, mpistat_name(req, name, sizeof(name)), "decode_ms", time_now_ms() - t0);
            mpistat_add(a.stat, name, "req_bytes", (double)strlen(msg));
            if (json_object_get(req, "seq"))
                json_object_set_new(req, "t_in", json_real(t0));
        }
        free(msg);
        double t1 = a.stat ? time_now_ms() : 0;
        rc = req ? handle(&a, req, err) : err_set(err, "agent: a request that is not JSON");
        if (a.stat && req)
            mpistat_add(a.stat, name, "main_ms", time_now_ms() - t1);
        json_decref(req);
    }
    *abandon = a.lost || rc != 0;
    pthread_mutex_lock(&a.lock);
    a.quit = 1;
    pthread_cond_broadcast(&a.cv);
    pthread_mutex_unlock(&a.lock);
    for (int i = 0; i < started; i++)
        pthread_join(a.slots[i].tid, NULL);
    flush(&a);
    for (int i = 0; i < a.nm; i++) {
        evolve_child_clear(&a.m[i]->c, ev, ctx);
        free(a.m[i]);
    }
    free(a.m);
    free(a.watch);
    free(a.slots);
    free(a.outbox);
    free(a.out_t);
    mpistat_close(&a.stat, NULL);
    pthread_mutex_destroy(&a.lock);
    pthread_cond_destroy(&a.cv);
    return rc;
}

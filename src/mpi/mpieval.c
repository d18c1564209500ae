/* mpieval: see mpieval.h. */
#include "mpi/mpieval.h"

#include <jansson.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "mpi/mpicomm.h"
#include "mpi/mpistat.h"
#include "mpi/wire.h"
#include "msg.h"

/* ---- requests --------------------------------------------------------- */

static double num_or_nan(json_t *v)
{
    return json_is_number(v) ? json_number_value(v) : NAN;
}

/* MChild.on[a] bits: a mirror exists there; stage s was submitted there. */
#define ON_MIRROR  1u
#define ON_STAGE(s) (2u << (s))

/* Under m->lock: make sure agent a has a mirror of c with every stage c
 * was submitted to, up to stage upto (an "adopt" with the missing stages,
 * and the kernel text on first contact), and return c's description for
 * a request. With upto -1 (submit itself) only the description. A parent
 * is only compared against: its benchmark unit (upto 1) is all it needs
 * there, not its gate shapes' units. */
static json_t *child_at(MpiEval *m, int a, const Child *c, int upto)
{
    MChild *mc = c->priv;
    int first = !(mc->on[a] & ON_MIRROR);
    if (upto >= 0) {
        json_t *st = json_array();
        for (int s = 0; s <= upto; s++)
            if (mc->st[s] && !(mc->on[a] & ON_STAGE(s)) && !(s == 0 && mc->st[1])) {
                json_array_append_new(st, json_integer(s));
                mc->on[a] |= ON_STAGE(s);
            }
        if (first || json_array_size(st))
            mpicomm_enqueue(m, a, json_pack("{s:s, s:o, s:o}", "op", "adopt", "kid",
                                    wire_child_put(c, mc->id, m->nparams, first), "stages", st));
        else
            json_decref(st);
        first = 0;
    }
    mc->on[a] |= ON_MIRROR;
    return wire_child_put(c, mc->id, m->nparams, first);
}

/* The times of answered request p (name), asked at t0 (ms). */
static void call_stat(MpiEval *m, const char *name, double t0, const Pending *p)
{
    double now = time_now_ms(), agent = num_or_nan(json_object_get(p->reply, "agent_ms"));
    mpistat_add(m->stat, name, "total_ms", now - t0);
    mpistat_add(m->stat, name, "queued_ms", p->t_sent - t0);        /* waiting for the comm thread */
    mpistat_add(m->stat, name, "wire_agent_ms", p->t_recv - p->t_sent);   /* MPI both ways + the agent */
    mpistat_add(m->stat, name, "wake_ms", now - p->t_recv);         /* reply decoded -> caller running */
    if (isfinite(agent)) {
        mpistat_add(m->stat, name, "agent_ms", agent);              /* received -> reply encoded, at the agent */
        mpistat_add(m->stat, name, "wire_ms", p->t_recv - p->t_sent - agent);
    }
}

/* A reply's rc: 0, -1 with err naming the agent's rank and its message,
 * or EVAL_RETRY. */
static int reply_rc(const json_t *reply, int rank, EvoErr *err)
{
    int rc = (int)json_integer_value(json_object_get(reply, "rc"));
    if (rc == -1)
        err_set(err, "MPI rank %d: %s", rank, json_string_value(json_object_get(reply, "err")));
    return rc;
}

/* Send op about kid (and parent) to agent a and wait for the reply
 * (*reply, the caller decrefs), or only send it (reply NULL). extra: more
 * fields of the request (taken). Returns the reply's rc: 0, -1 with err,
 * or EVAL_RETRY when the agent is lost. */
static int call(MpiEval *m, int a, const char *op, Child *kid, const Child *parent, json_t *extra, json_t **reply,
                EvoErr *err)
{
    json_t *req = extra ? extra : json_object();
    pthread_mutex_lock(&m->lock);
    if (m->ag[a].lost) {
        pthread_mutex_unlock(&m->lock);
        json_decref(req);
        return EVAL_RETRY;
    }
    json_object_set_new(req, "op", json_string(op));
    json_object_set_new(req, "kid", child_at(m, a, kid, strcmp(op, "submit") != 0 ? 2 : -1));
    if (parent)
        json_object_set_new(req, "parent", child_at(m, a, parent, 1));
    if (!reply) {
        mpicomm_enqueue(m, a, req);
        pthread_mutex_unlock(&m->lock);
        return 0;
    }
    json_object_set_new(req, "res", wire_result_put(kid, WIRE_REC));
    if (!m->render || m->ag[a].want_text)   /* its first reply about kid brings kid's source */
        json_object_set_new(req, "text", json_true());
    char name[32];
    mpistat_name(req, name, sizeof(name));
    double t0 = time_now_ms();
    Pending p = {.seq = ++m->seq, .agent = a};
    json_object_set_new(req, "seq", json_integer((json_int_t)p.seq));
    p.next = m->pending;
    m->pending = &p;
    mpicomm_enqueue(m, a, req);
    MChild *mc = kid->priv;
    if (m->render && !m->ag[a].want_text && mc && !mc->txt.rendered && strcmp(op, "gate") == 0) {
        /* kid's source, rendered while the agent gates it */
        double ms = 0;
        pthread_mutex_unlock(&m->lock);
        mpitext_render(&mc->txt, m->render, m->render_ctx, kid, &ms);
        mpistat_add(m->stat, "render", "ms", ms);
        pthread_mutex_lock(&m->lock);
    }
    while (!p.done)
        pthread_cond_wait(&m->cv, &m->lock);
    for (Pending **pp = &m->pending; *pp; pp = &(*pp)->next)
        if (*pp == &p) {
            *pp = p.next;
            break;
        }
    int rank = m->ag[a].rank;
    pthread_mutex_unlock(&m->lock);
    *reply = p.reply;
    if (m->stat && !p.lost)
        call_stat(m, name, t0, &p);
    return p.lost ? EVAL_RETRY : reply_rc(p.reply, rank, err);
}

/* The agent and its local slot of a child's slot; with judge, that
 * agent becomes the child's home (its later submits go there). */
static int slot_agent(MpiEval *m, const Child *c, int judge, json_t **extra)
{
    int s = c->gpu >= 0 && c->gpu < m->nslots ? c->gpu : 0;
    *extra = json_pack("{s:i}", "slot", m->slot_local[s]);
    MChild *mc = c->priv;
    if (judge && mc) {
        pthread_mutex_lock(&m->lock);
        if (mc->home != m->slot_ag[s]) {   /* taken over (me_home's 2): its load moves along */
            m->taken_over++;
            if (mc->home >= 0)
                m->ag[mc->home].load--;
            m->ag[m->slot_ag[s]].load++;
            __atomic_store_n(&mc->home, m->slot_ag[s], __ATOMIC_RELEASE);
        }
        pthread_mutex_unlock(&m->lock);
    }
    return m->slot_ag[s];
}

/* Copy a reply's result into kid, free the reply; returns rc, or -1 with
 * err when the result is malformed. */
static int take(json_t *reply, Child *kid, int rc, EvoErr *err)
{
    if (reply && rc != EVAL_RETRY && wire_result_get(json_object_get(reply, "res"), kid, err))
        rc = -1;
    json_decref(reply);
    return rc;
}

/* Kid's source as agent a has it, which rank 0 does not (mpitext.h):
 * asked for, and from now on sent by a with its first reply about a
 * child. Returns 0, EVAL_RETRY (a is lost) or -1 with err. */
static int fetch_text(MpiEval *m, int a, Child *kid, EvoErr *err)
{
    MChild *mc = kid->priv;
    pthread_mutex_lock(&m->lock);
    int first = m->render && !m->ag[a].want_text, rank = m->ag[a].rank;
    m->ag[a].want_text = 1;
    pthread_mutex_unlock(&m->lock);
    if (first) {
        char *mine = mpitext_describe(&mc->txt);
        warnf("MPI rank %d compiled %s from a source of sha256 %s, rank 0 renders %s: do the task's files "
              "differ between the hosts? The run stores the agents' sources, which rank %d sends from now on",
              rank, kid->params_key ? kid->params_key : "a child", kid->rec.source_hash, mine, rank);
        free(mine);
    }
    json_t *reply = NULL;
    int rc = call(m, a, "text", kid, NULL, NULL, &reply, err);
    if (rc == 0)
        rc = mpitext_take(&mc->txt, kid, json_string_value(json_object_get(reply, "text")), rank, err);
    json_decref(reply);
    return rc;
}

/* take() for a gate, time, compare or calibrate of kid on agent a, then
 * kid's source: rank 0's render when it is the text the agent's hash
 * names, else the agent's (fetch_text). */
static int take_slow(MpiEval *m, int a, json_t *reply, Child *kid, int rc, EvoErr *err)
{
    json_t *res = rc != EVAL_RETRY ? json_object_get(reply, "res") : NULL;
    /* the text is settled below, not copied blindly by take(): held out of res */
    json_t *text = json_incref(json_object_get(res, "text"));
    const char *sent = json_string_value(text);
    json_object_del(res, "text");
    rc = take(reply, kid, rc, err);
    MChild *mc = kid->priv;
    if (rc == 0 && mc) {
        if (!sent)
            mpitext_render(&mc->txt, m->render, m->render_ctx, kid, NULL);
        if (mpitext_settle(&mc->txt, kid, sent))
            rc = fetch_text(m, a, kid, err);
    }
    json_decref(text);
    return rc;
}

/* ---- the Evaluator ---------------------------------------------------- */

static int me_submit(void *ctx, Child *kid, int stage, EvoErr *err)
{
    MpiEval *m = ctx;
    if (kid->rec.status && strcmp(kid->rec.status, "ok") != 0)
        return 0;
    pthread_mutex_lock(&m->lock);
    MChild *mc = kid->priv;
    if (!mc) {
        mc = xcalloc(1, sizeof(*mc));
        mc->id = ++m->next_id;
        mc->on = xcalloc((size_t)m->nag, 1);
        mc->home = -1;
        kid->priv = mc;
        if (m->nlive == m->caplive) {
            m->caplive = m->caplive ? m->caplive * 2 : 64;
            m->live = xrealloc(m->live, (size_t)m->caplive * sizeof(*m->live));
        }
        m->live[m->nlive++] = mc;
    }
    if (mc->home < 0 || m->ag[mc->home].lost) {
        /* the agent with the fewest children per compile thread: each
         * compiles its children on its own host's cores */
        int best = -1;
        for (int a = 0; a < m->nag; a++)
            if (!m->ag[a].lost && (best < 0 || (double)m->ag[a].load / (m->ag[a].lanes > 0 ? m->ag[a].lanes : 1) <
                                                   (double)m->ag[best].load / (m->ag[best].lanes > 0 ? m->ag[best].lanes : 1)))
                best = a;
        if (best >= 0) {
            if (mc->home >= 0)
                m->ag[mc->home].load--;
            m->ag[best].load++;
            __atomic_store_n(&mc->home, best, __ATOMIC_RELEASE);
        }
    }
    int home = mc->home;
    if (home < 0) {
        pthread_mutex_unlock(&m->lock);
        return err_set(err, "submit: every MPI agent is lost");
    }
    if (stage >= 0 && stage <= 3) {
        mc->st[stage > 2 ? 2 : stage] = 1;
        mc->on[home] |= ON_STAGE(stage > 2 ? 2 : stage);
    }
    pthread_mutex_unlock(&m->lock);
    /* stage 1 answers whether the child is valid; queuing its other units
     * (2, 3) answers nothing the loop waits for: sent without a reply */
    if (stage >= 2)
        return call(m, home, "submit", kid, NULL, json_pack("{s:i}", "stage", stage), NULL, err) == EVAL_RETRY
                   ? err_set(err, "submit: every MPI agent is lost")
                   : 0;
    json_t *reply = NULL;
    int rc = call(m, home, "submit", kid, NULL, json_pack("{s:i}", "stage", stage), &reply, err);
    rc = take(reply, kid, rc, err);
    if (rc == EVAL_RETRY)
        return err_set(err, "submit: every MPI agent is lost");
    return rc;
}

/* Send parent pa, about to be compared against on agent a, to the other
 * agents that share its home's compile cache (one host): its benchmark
 * unit is a cache hit there, built at once, so that its other children
 * judged there find it ready. Agents of other hosts get it when one of
 * them is judged there (a compile of their own). */
static void send_parent(MpiEval *m, const Child *pa, int a)
{
    const MChild *pm = pa->priv;
    pthread_mutex_lock(&m->lock);
    int home = pm->home, group = home >= 0 ? m->ag[home].cache_group : -1;
    for (int b = 0; b < m->nag && group >= 0; b++)
        if (b != a && !m->ag[b].lost && m->ag[b].cache_group == group && !(pm->on[b] & ON_MIRROR))
            json_decref(child_at(m, b, pa, 1));
    pthread_mutex_unlock(&m->lock);
}

static int me_gate(void *ctx, Child *kid, int stage, EvoErr *err)
{
    MpiEval *m = ctx;
    json_t *extra, *reply = NULL;
    int a = slot_agent(m, kid, 1, &extra);
    json_object_set_new(extra, "stage", json_integer(stage));
    /* stage A names the parent: the A/B that follows needs its benchmark
     * unit there, so a parent new to that agent is sent now and built
     * while the gate runs (an agent builds what it adopts first), the
     * gate's watchdog scales with the parent's times as in one process,
     * and the agent runs the A/B at once when the gate passes ("ab"):
     * me_compare finds its result, with no round trip in between */
    const Child *pa = stage == 1 && kid->judge_parent && kid->judge_parent->priv ? kid->judge_parent : NULL;
    if (pa) {
        json_object_set_new(extra, "ab", json_true());
        send_parent(m, pa, a);
    }
    int rc = call(m, a, "gate", kid, pa, extra, &reply, err);
    MChild *mc = kid->priv;
    if (mc && pa) {
        json_decref(mc->ab);
        mc->ab = rc == 0 ? json_incref(json_object_get(reply, "ab")) : NULL;
        mc->ab_parent = ((const MChild *)pa->priv)->id;
        mc->ab_slot = kid->gpu;
        mc->ab_rank = m->ag[a].rank;
    }
    return take_slow(m, a, reply, kid, rc, err);
}

static int me_time(void *ctx, Child *kid, EvoErr *err)
{
    MpiEval *m = ctx;
    json_t *extra, *reply = NULL;
    int a = slot_agent(m, kid, 1, &extra);
    int rc = call(m, a, "time", kid, NULL, extra, &reply, err);   /* before reply is read */
    return take_slow(m, a, reply, kid, rc, err);
}

static int me_compare(void *ctx, Child *parent, Child *kid, double *ratio, double *spread, EvoErr *err)
{
    MpiEval *m = ctx;
    json_t *extra, *reply = NULL;
    *ratio = *spread = NAN;
    if (!parent->priv)
        return err_set(err, "compare: the parent was never submitted");
    MChild *mc = kid->priv;
    json_t *ab = mc ? mc->ab : NULL;
    int rc, a;
    if (mc)
        mc->ab = NULL;
    if (ab && mc->ab_parent == ((const MChild *)parent->priv)->id && mc->ab_slot == kid->gpu) {
        /* run by the agent after the stage-A gate (me_gate): its reply is this one */
        mpistat_add(m->stat, "compare", "fused", 1);
        reply = ab;
        a = mc->ab_rank - 1;
        rc = reply_rc(reply, mc->ab_rank, err);
    } else {
        json_decref(ab);
        a = slot_agent(m, kid, 1, &extra);
        rc = call(m, a, "compare", kid, parent, extra, &reply, err);
    }
    if (reply && rc != EVAL_RETRY) {
        *ratio = num_or_nan(json_object_get(reply, "ratio"));
        *spread = num_or_nan(json_object_get(reply, "spread"));
    }
    return take_slow(m, a, reply, kid, rc, err);
}

/* Send op (release, drop) to every agent that holds kid. */
static void to_holders(MpiEval *m, Child *kid, const char *op)
{
    MChild *mc = kid->priv;
    if (!mc)
        return;
    EvoErr err;
    for (int a = 0; a < m->nag; a++)
        if (mc->on[a] & ON_MIRROR)
            call(m, a, op, kid, NULL, NULL, NULL, &err);
}

static void me_release(void *ctx, Child *kid)
{
    MpiEval *m = ctx;
    MChild *mc = kid->priv;
    if (!mc)
        return;
    to_holders(m, kid, "release");
    pthread_mutex_lock(&m->lock);
    for (int i = 0; i < m->nlive; i++)
        if (m->live[i] == mc) {
            m->live[i] = m->live[--m->nlive];
            break;
        }
    if (mc->home >= 0)
        m->ag[mc->home].load--;
    pthread_mutex_unlock(&m->lock);
    json_decref(mc->ab);
    mpitext_free(&mc->txt);
    free(mc->on);
    free(mc);
    kid->priv = NULL;
}

static void me_drop(void *ctx, Child *kid)
{
    to_holders(ctx, kid, "drop");
}

static int me_slots(void *ctx)
{
    MpiEval *m = ctx;
    return m->nslots;
}

/* Whether mc's home announced stage's units built (MChild.ready). */
static int home_built(const MChild *mc, int stage)
{
    return (__atomic_load_n(&mc->ready, __ATOMIC_ACQUIRE) >> (stage == 2 ? 2 : 1)) & 1;
}

/* Built, as the child's home announced it: a lookup (the steady loop asks
 * it under its lock, for every child in flight). */
static int me_ready(void *ctx, Child *kid, int stage)
{
    (void)ctx;
    MChild *mc = kid->priv;
    if (!mc || (kid->rec.status && strcmp(kid->rec.status, "ok") != 0))
        return 1;
    return home_built(mc, stage);
}

/* A slot judges children homed on its agent (1). Another agent would
 * have to compile them again, unless it shares the home's compile cache
 * (one host, one cache folder) and the home has built the stage's units:
 * then they are cache hits there (2). */
static int me_home(void *ctx, const Child *kid, int slot, int stage)
{
    MpiEval *m = ctx;
    const MChild *mc = kid->priv;
    if (!mc || slot < 0 || slot >= m->nslots)
        return 1;
    int home = __atomic_load_n(&mc->home, __ATOMIC_ACQUIRE), here = m->slot_ag[slot];
    if (home == here)
        return 1;
    if (home < 0 || m->ag[home].cache_group < 0 || m->ag[home].cache_group != m->ag[here].cache_group)
        return 0;
    return home_built(mc, stage) ? 2 : 0;
}

static void me_pipe_stats(void *ctx, EvalPipeStats *out)
{
    MpiEval *m = ctx;
    pthread_mutex_lock(&m->lock);
    out->taken_over = m->taken_over;
    for (int a = 0; a < m->nag; a++)
        nvrtc_stats_add(&out->agents, &m->ag[a].nv, 1);
    pthread_mutex_unlock(&m->lock);
}

static int me_lanes(void *ctx)
{
    MpiEval *m = ctx;
    int n = 0;
    for (int a = 0; a < m->nag; a++)
        n += m->ag[a].lanes > 0 ? m->ag[a].lanes : 1;
    return n;
}

static void me_watch(void *ctx, void (*fn)(void *), void *arg)
{
    MpiEval *m = ctx;
    pthread_mutex_lock(&m->lock);
    m->watch_fn = fn;
    m->watch_arg = arg;
    pthread_mutex_unlock(&m->lock);
}

static int me_calibrate(void *ctx, Child *base, EvoErr *err)
{
    MpiEval *m = ctx;
    for (int a = 0; a < m->nag; a++) {
        json_t *reply = NULL;
        if (m->ag[a].nslots < 2)
            continue;
        int rc = call(m, a, "calibrate", base, NULL, json_pack("{s:i}", "slot", 0), &reply, err);
        rc = take_slow(m, a, reply, base, rc, err);
        if (rc == EVAL_RETRY)
            return err_set(err, "calibrate: MPI rank %d is lost", m->ag[a].rank);
        if (rc)
            return -1;
    }
    return 0;
}

const EvaluatorOps mpieval_ops = {
    .name = "mpi", .submit = me_submit, .gate = me_gate, .time = me_time, .compare = me_compare,
    .release = me_release, .slots = me_slots, .calibrate = me_calibrate, .drop = me_drop, .ready = me_ready,
    .lanes = me_lanes, .watch = me_watch, .home = me_home, .pipe_stats = me_pipe_stats,
};

/* ---- open, start, close ------------------------------------------------ */

int mpieval_open(MpiEval **out, MpiLink *l, volatile int *stop, EvoErr *err)
{
    *out = NULL;
    if (mpilink_size(l) < 2 || mpilink_rank(l) != 0)
        return err_set(err, "mpieval_open: needs rank 0 of at least 2 ranks");
    MpiEval *m = xcalloc(1, sizeof(*m));
    m->l = l;
    m->stop = stop;
    m->stat = mpistat_new("rank0", 0);
    m->nag = mpilink_size(l) - 1;
    m->ag = xcalloc((size_t)m->nag, sizeof(*m->ag));
    for (int a = 0; a < m->nag; a++)
        m->ag[a].rank = a + 1;
    pthread_mutex_init(&m->lock, NULL);
    pthread_cond_init(&m->cv, NULL);
    int e = pthread_create(&m->thr, NULL, mpicomm_main, m);
    if (e) {
        mpieval_close(&m);
        return err_set(err, "pthread_create: %s", strerror(e));
    }
    m->thr_started = 1;
    *out = m;
    return 0;
}

int mpieval_start(MpiEval *m, const char *setup_json, int nparams, EvoErr *err)
{
    m->nparams = nparams;
    json_t *setup = json_loads(setup_json, 0, NULL);
    if (!setup)
        return err_set(err, "mpieval_start: the setup is not JSON");
    pthread_mutex_lock(&m->lock);
    for (int a = 0; a < m->nag; a++)
        mpicomm_enqueue(m, a, json_pack("{s:s, s:O}", "op", "setup", "setup", setup));
    json_decref(setup);
    int rc = 0;
    for (int a = 0; a < m->nag && rc == 0; a++) {
        while (!m->ag[a].hello && !m->ag[a].lost)
            pthread_cond_wait(&m->cv, &m->lock);
        if (m->ag[a].lost)
            rc = err_set(err, "MPI rank %d was lost before it said hello", m->ag[a].rank);
        else if (m->ag[a].error)
            rc = err_set(err, "MPI rank %d: %s", m->ag[a].rank, m->ag[a].error);
    }
    if (rc == 0) {
        for (int a = 0; a < m->nag; a++) {
            m->ag[a].first = m->nslots;
            m->nslots += m->ag[a].nslots;
        }
        m->slot_ag = xcalloc((size_t)m->nslots, sizeof(int));
        m->slot_local = xcalloc((size_t)m->nslots, sizeof(int));
        for (int a = 0, s = 0; a < m->nag; a++)
            for (int i = 0; i < m->ag[a].nslots; i++, s++) {
                m->slot_ag[s] = a;
                m->slot_local[s] = i;
            }
        for (int a = 0; a < m->nag; a++) {   /* agents that share a compile cache, once */
            m->ag[a].cache_group = -1;
            for (int b = 0; b <= a && m->ag[a].cache && m->ag[a].cache_group < 0; b++)
                if (m->ag[b].cache && strcmp(m->ag[a].cache, m->ag[b].cache) == 0)
                    m->ag[a].cache_group = b;
        }
    }
    pthread_mutex_unlock(&m->lock);
    return rc;
}

void mpieval_close(MpiEval **mp)
{
    MpiEval *m = *mp;
    if (!m)
        return;
    pthread_mutex_lock(&m->lock);
    for (int a = 0; a < m->nag; a++)   /* after a loss, the agents skip MPI_Finalize */
        if (!m->ag[a].lost)
            mpicomm_enqueue(m, a, json_pack("{s:s, s:i}", "op", "quit", "lost", m->lost_rank));
    m->quit = 1;
    pthread_mutex_unlock(&m->lock);
    if (m->thr_started)
        pthread_join(m->thr, NULL);
    mpistat_close(&m->stat, json_pack("{s:i, s:I}", "agents", m->nag, "taken_over", (json_int_t)m->taken_over));
    for (int a = 0; a < m->nag; a++) {
        free(m->ag[a].error);
        free(m->ag[a].cache);
    }
    free(m->ag);
    free(m->slot_ag);
    free(m->live);
    free(m->slot_local);
    pthread_mutex_destroy(&m->lock);
    pthread_cond_destroy(&m->cv);
    free(m);
    *mp = NULL;
}

void mpieval_set_render(MpiEval *m, MpiRenderFn fn, void *ctx)
{
    m->render = fn;
    m->render_ctx = ctx;
}

int mpieval_agents(const MpiEval *m)
{
    return m->nag;
}

int mpieval_slots(const MpiEval *m)
{
    return m->nslots;
}

int mpieval_agent_slots(const MpiEval *m, int i)
{
    return i >= 0 && i < m->nag ? m->ag[i].nslots : 0;
}

const DeviceInfo *mpieval_agent_device(const MpiEval *m, int i)
{
    return i >= 0 && i < m->nag && m->ag[i].hello && !m->ag[i].error ? &m->ag[i].dev : NULL;
}

int mpieval_lost(const MpiEval *m)
{
    return m->lost_rank;
}

/* mpicomm: see mpicomm.h. */
#include "mpi/mpicomm.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "mpi/wire.h"
#include "msg.h"

/* An agent opening its GPUs (worker start, the reference's compilation)
 * sends nothing: it has this many timeouts to say hello. */
#define STARTUP_FACTOR 10

void mpicomm_enqueue(MpiEval *m, int agent, json_t *o)
{
    OutMsg *q = xcalloc(1, sizeof(*q));
    q->dest = m->ag[agent].rank;
    q->seq = (int64_t)json_integer_value(json_object_get(o, "seq"));
    double t0 = m->stat ? time_now_ms() : 0;
    q->text = json_dumps(o, JSON_COMPACT);
    if (m->stat) {
        char name[32];
        mpistat_name(o, name, sizeof(name));
        mpistat_add(m->stat, name, "encode_ms", time_now_ms() - t0);
        mpistat_add(m->stat, name, "req_bytes", (double)strlen(q->text));
        if (!q->seq)
            mpistat_add(m->stat, name, "unanswered", 1);
    }
    json_decref(o);
    if (m->qtail)
        m->qtail->next = q;
    else
        m->qhead = q;
    m->qtail = q;
}

/* Under m->lock: agent a is gone; fail its requests, stop the run. */
static void agent_lost(MpiEval *m, int a, const char *why)
{
    if (m->ag[a].lost)
        return;
    m->ag[a].lost = 1;
    if (!m->lost_rank)
        m->lost_rank = m->ag[a].rank;
    for (Pending *p = m->pending; p; p = p->next)
        if (p->agent == a && !p->done)
            p->done = p->lost = 1;
    if (m->stop)
        *m->stop = 1;
    errorf("MPI rank %d is lost (%s): the run stops; what was committed is kept (continue with resume)",
           m->ag[a].rank, why);
    pthread_cond_broadcast(&m->cv);
}

/* Under m->lock: a message from rank src. */
static void on_message(MpiEval *m, int src, const char *text)
{
    int a = src - 1;
    if (a < 0 || a >= m->nag)
        return;
    double t0 = m->stat ? time_now_ms() : 0;
    json_t *o = json_loads(text, 0, NULL);
    if (!o)
        return;
    mpistat_add(m->stat, "reply", "decode_ms", time_now_ms() - t0);
    mpistat_add(m->stat, "reply", "bytes", (double)strlen(text));
    json_t *seq = json_object_get(o, "seq");
    const char *op = json_string_value(json_object_get(o, "op"));
    if (!seq && op && strcmp(op, "ready") == 0) {   /* a child's units are built at its home */
        int64_t id = (int64_t)json_integer_value(json_object_get(o, "id"));
        int stage = (int)json_integer_value(json_object_get(o, "stage"));
        for (int i = 0; i < m->nlive; i++)
            if (m->live[i]->id == id && stage >= 0 && stage < 8)
                __atomic_fetch_or(&m->live[i]->ready, 1 << stage, __ATOMIC_RELEASE);
        m->notify = 1;
        json_decref(o);
        return;
    }
    if (!seq) {   /* hello */
        AgentInfo *ai = &m->ag[a];
        const char *e = json_string_value(json_object_get(o, "error"));
        const char *dev = json_string_value(json_object_get(o, "device"));
        ai->nslots = (int)json_integer_value(json_object_get(o, "slots"));
        ai->lanes = (int)json_integer_value(json_object_get(o, "lanes"));
        const char *cache = json_string_value(json_object_get(o, "cache"));
        ai->cache = cache && *cache ? xstrdup(cache) : NULL;
        if (e)
            ai->error = xstrdup(e);
        else if (ai->nslots < 1 || !dev || wire_device_unhex(dev, &ai->dev))
            ai->error = xasprintf("a malformed hello: %.200s", text);
        ai->hello = 1;
        json_decref(o);
        pthread_cond_broadcast(&m->cv);
        return;
    }
    wire_nv_get(o, &m->ag[a].nv);   /* the agent's compile figures */
    for (Pending *p = m->pending; p; p = p->next)
        if (p->seq == (int64_t)json_integer_value(seq) && !p->done) {
            p->reply = o;
            p->done = 1;
            p->t_recv = m->stat ? time_now_ms() : 0;
            pthread_cond_broadcast(&m->cv);
            return;
        }
    json_decref(o);
}

void *mpicomm_main(void *arg)
{
    MpiEval *m = arg;
    EvoErr err;
    pthread_mutex_lock(&m->lock);
    while (!m->quit || m->qhead) {
        while (m->qhead) {
            OutMsg *q = m->qhead;
            m->qhead = q->next;
            if (!m->qhead)
                m->qtail = NULL;
            for (Pending *p = m->pending; m->stat && q->seq && p; p = p->next)
                if (p->seq == q->seq)
                    p->t_sent = time_now_ms();
            mpilink_send(m->l, q->dest, LINK_TAG_REQ, q->text);   /* takes the text */
            free(q);
        }
        pthread_mutex_unlock(&m->lock);
        int src, tag, any = 0;
        char *msg = NULL;
        int got = mpilink_poll(m->l, &src, &tag, &msg, &err);
        pthread_mutex_lock(&m->lock);
        if (got < 0) {
            for (int a = 0; a < m->nag; a++)
                agent_lost(m, a, err.msg);
        } else if (got) {
            any = 1;
            if (tag == LINK_TAG_REPLY)
                on_message(m, src, msg);
            free(msg);
        }
        if (m->notify && m->watch_fn) {   /* the hook takes the loop's lock: not under ours */
            void (*fn)(void *) = m->watch_fn;
            void *fn_arg = m->watch_arg;
            m->notify = 0;
            pthread_mutex_unlock(&m->lock);
            double t0 = m->stat ? time_now_ms() : 0;
            fn(fn_arg);
            mpistat_add(m->stat, "ready_hook", "ms", m->stat ? time_now_ms() - t0 : 0);
            pthread_mutex_lock(&m->lock);
        }
        for (int a = 0; a < m->nag; a++)
            if (!m->ag[a].lost && mpilink_lost(m->l, m->ag[a].rank, m->ag[a].hello ? 1 : STARTUP_FACTOR))
                agent_lost(m, a, "no message or heartbeat within the timeout (EVOENG_MPI_TIMEOUT)");
        if (!any && !m->qhead) {
            pthread_mutex_unlock(&m->lock);
            usleep(50);
            pthread_mutex_lock(&m->lock);
        }
    }
    pthread_mutex_unlock(&m->lock);
    return NULL;
}

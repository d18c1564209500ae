/* link: see link.h. */
#include "mpi/link.h"

#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define TAG_BEAT 3          /* heartbeat, never returned by poll */
#define BEAT_MS  1000.0

typedef struct Out {
    MPI_Request req;
    char       *buf;
    struct Out *next;
} Out;

struct MpiLink {
    int     rank, size;
    int     local_agents;   /* agent ranks on this host (every rank but 0 is one) */
    double  timeout_ms;
    double *heard;          /* per rank: when it was last heard from (ms) */
    double  beat_ms;        /* when the last heartbeats were sent */
    Out    *out;            /* sends in flight */
    char    beat[2];
};

int mpilink_launched(void)
{
    const char *v[] = {"OMPI_COMM_WORLD_SIZE", "PMIX_RANK", "PMI_SIZE"};
    for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++)
        if (getenv(v[i]) && *getenv(v[i]))
            return 1;
    return 0;
}

static int mpi_fail(EvoErr *err, const char *call, int code)
{
    char s[MPI_MAX_ERROR_STRING];
    int n = 0;
    if (MPI_Error_string(code, s, &n) != MPI_SUCCESS)
        snprintf(s, sizeof(s), "error %d", code);
    return err_set(err, "%s: %s", call, s);
}

int mpilink_open(MpiLink **out, double timeout_s, EvoErr *err)
{
    *out = NULL;
    int provided = 0, e = MPI_Init_thread(NULL, NULL, MPI_THREAD_SERIALIZED, &provided);
    if (e != MPI_SUCCESS)
        return err_set(err, "MPI_Init_thread: error %d", e);
    if (provided < MPI_THREAD_SERIALIZED) {
        MPI_Finalize();
        return err_set(err, "MPI_Init_thread: the MPI library gives thread level %d, evoeng needs "
                            "MPI_THREAD_SERIALIZED (%d)", provided, MPI_THREAD_SERIALIZED);
    }
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MpiLink *l = xcalloc(1, sizeof(*l));
    MPI_Comm_rank(MPI_COMM_WORLD, &l->rank);
    MPI_Comm_size(MPI_COMM_WORLD, &l->size);
    /* the ranks on this host, and whether rank 0 is one of them: agents
     * that share a host share its cores (runmpi sizes their pools) */
    MPI_Comm node;
    int nsize = 1, root_here = l->rank == 0, any_root = 0;
    if (MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node) == MPI_SUCCESS) {
        MPI_Comm_size(node, &nsize);
        MPI_Allreduce(&root_here, &any_root, 1, MPI_INT, MPI_MAX, node);
        MPI_Comm_free(&node);
    }
    l->local_agents = nsize - any_root > 0 ? nsize - any_root : 1;
    const char *env = getenv("EVOENG_MPI_TIMEOUT");
    if (env && atof(env) > 0)
        timeout_s = atof(env);
    l->timeout_ms = timeout_s * 1000;
    l->heard = xcalloc((size_t)l->size, sizeof(double));
    double now = time_now_ms();
    for (int i = 0; i < l->size; i++)
        l->heard[i] = now;
    l->beat_ms = 0;
    *out = l;
    return 0;
}

void mpilink_close(MpiLink **lp, int abandon)
{
    MpiLink *l = *lp;
    if (!l)
        return;
    EvoErr err;
    /* let the last sends (the quit requests) complete, a bounded while:
     * after a loss, sends to the lost rank never do */
    double t0 = time_now_ms();
    while (l->out && time_now_ms() - t0 < (abandon ? 1000 : 2000)) {
        int src, tag;
        char *m = NULL;
        if (mpilink_poll(l, &src, &tag, &m, &err) < 0)
            break;
        free(m);
    }
    for (Out *o = l->out, *n; o; o = n) {
        n = o->next;
        if (abandon)
            continue;   /* MPI may still read the buffer: leak it, the process ends */
        MPI_Cancel(&o->req);
        MPI_Request_free(&o->req);
        free(o->buf);
        free(o);
    }
    free(l->heard);
    free(l);
    *lp = NULL;
    if (!abandon)
        MPI_Finalize();
}

int mpilink_rank(const MpiLink *l)
{
    return l->rank;
}

int mpilink_local_agents(const MpiLink *l)
{
    return l->local_agents;
}

int mpilink_size(const MpiLink *l)
{
    return l->size;
}

static void post(MpiLink *l, int dest, int tag, char *buf, int n)
{
    Out *o = xcalloc(1, sizeof(*o));
    o->buf = buf;
    if (MPI_Isend(buf, n, MPI_CHAR, dest, tag, MPI_COMM_WORLD, &o->req) != MPI_SUCCESS) {
        free(buf);
        free(o);
        return;   /* the peer is gone: its silence says so */
    }
    o->next = l->out;
    l->out = o;
}

void mpilink_send(MpiLink *l, int dest, int tag, char *msg)
{
    post(l, dest, tag, msg, (int)strlen(msg) + 1);
}

/* Complete the sends that are done; heartbeats once a second. */
static void progress(MpiLink *l)
{
    for (Out **p = &l->out; *p;) {
        int done = 0;
        if (MPI_Test(&(*p)->req, &done, MPI_STATUS_IGNORE) != MPI_SUCCESS)
            done = 1;   /* a failed send: drop it */
        if (done) {
            Out *o = *p;
            *p = o->next;
            free(o->buf);
            free(o);
        } else {
            p = &(*p)->next;
        }
    }
    double now = time_now_ms();
    if (now - l->beat_ms >= BEAT_MS) {
        l->beat_ms = now;
        for (int r = 0; r < l->size; r++)
            if (r != l->rank && (l->rank == 0 || r == 0))
                post(l, r, TAG_BEAT, xstrdup("b"), 2);
    }
}

int mpilink_poll(MpiLink *l, int *src, int *tag, char **msg, EvoErr *err)
{
    *msg = NULL;
    progress(l);
    for (;;) {
        int flag = 0, n = 0;
        MPI_Status st;
        int e = MPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &flag, &st);
        if (e != MPI_SUCCESS)
            return mpi_fail(err, "MPI_Iprobe", e);
        if (!flag)
            return 0;
        MPI_Get_count(&st, MPI_CHAR, &n);
        char *buf = xmalloc((size_t)n + 1);
        e = MPI_Recv(buf, n, MPI_CHAR, st.MPI_SOURCE, st.MPI_TAG, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        if (e != MPI_SUCCESS) {
            free(buf);
            return mpi_fail(err, "MPI_Recv", e);
        }
        buf[n] = 0;
        if (st.MPI_SOURCE >= 0 && st.MPI_SOURCE < l->size)
            l->heard[st.MPI_SOURCE] = time_now_ms();
        if (st.MPI_TAG == TAG_BEAT) {
            free(buf);
            continue;
        }
        *src = st.MPI_SOURCE;
        *tag = st.MPI_TAG;
        *msg = buf;
        return 1;
    }
}

int mpilink_lost(const MpiLink *l, int peer, double factor)
{
    return time_now_ms() - l->heard[peer] > factor * l->timeout_ms;
}

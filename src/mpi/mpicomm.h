/*
 * mpicomm: rank 0's MPI evaluator (mpieval.h) as two sides share it: the
 * state of the requests in flight, the agents and the children (MpiEval,
 * under its lock), and the communication thread, the one thread of rank 0
 * that calls MPI (link.h): it sends the queued requests, decodes the
 * replies and hands each to the caller that waits for it, records the
 * agents' hellos and ready notices, and declares an agent lost when it
 * falls silent. mpieval.c makes the requests and waits; nothing here calls
 * into it.
 */
#ifndef EVO_MPI_MPICOMM_H
#define EVO_MPI_MPICOMM_H

#include <jansson.h>
#include <pthread.h>
#include <stdint.h>

#include "compile/nvrtc.h"
#include "device.h"
#include "mpi/link.h"
#include "mpi/mpistat.h"
#include "mpi/mpitext.h"

typedef struct MpiEval MpiEval;   /* as mpieval.h names it */

typedef struct Pending {      /* a request waiting for its reply */
    int64_t         seq;
    int             agent;
    int             done, lost;
    json_t         *reply;
    double          t_sent, t_recv;   /* ms: handed to MPI, reply decoded (EVOENG_MPI_DEBUG) */
    struct Pending *next;
} Pending;

typedef struct OutMsg {
    int            dest;
    int64_t        seq;       /* the request's seq, 0: none */
    char          *text;
    struct OutMsg *next;
} OutMsg;

typedef struct AgentInfo {
    int        rank, first, nslots;
    int        lanes;         /* its compile threads (hello) */
    char      *cache;         /* "host:dir" of its compile cache (hello), or NULL: none */
    int        cache_group;   /* the first agent with the same cache, or -1 without one (start) */
    int        load;          /* children homed there, not yet released */
    int        hello, lost;
    int        want_text;     /* its sources differ from rank 0's renders: it sends them (mpitext.h) */
    char      *error;         /* the agent's refusal, or NULL */
    DeviceInfo dev;
    NvrtcStats nv;            /* its compile figures, as its latest reply said ("nv") */
} AgentInfo;

typedef struct MChild {       /* a child's priv on rank 0 */
    int64_t        id;
    int            home;      /* the agent it was submitted to (read unlocked: atomic) */
    int            ready;     /* bit s: its home announced stage s's units built (atomic) */
    int            st[3];     /* the stages submitted */
    unsigned char *on;        /* per agent: it has a mirror there */
    json_t        *ab;        /* the A/B an agent ran right after the stage-A gate (me_gate), or NULL */
    int64_t        ab_parent; /* ... against this parent (its MChild id) */
    int            ab_slot, ab_rank;   /* ... on this slot, of this rank */
    MpiText        txt;       /* its source as rank 0 renders it (slot threads, one at a time) */
} MChild;

struct MpiEval {
    MpiLink        *l;
    int             nparams;
    volatile int   *stop;
    pthread_t       thr;
    int             thr_started;
    pthread_mutex_t lock;      /* everything below */
    pthread_cond_t  cv;
    OutMsg         *qhead, *qtail;
    Pending        *pending;
    int64_t         seq, next_id;
    AgentInfo      *ag;
    int             nag, nslots;
    int            *slot_ag, *slot_local;
    MChild        **live;      /* children submitted and not released, for the ready notices */
    int             nlive, caplive;
    void          (*watch_fn)(void *);   /* the loop's hook: a unit was built */
    void           *watch_arg;
    int             notify;    /* a notice came in: call the hook (outside the lock) */
    int             lost_rank, quit;
    long            taken_over; /* children judged away from their home (me_home's 2) */
    MpiStat        *stat;      /* EVOENG_MPI_DEBUG: where the requests' time goes, or NULL */
    MpiRenderFn     render;    /* renders a child's source at rank 0, or NULL: the agents send it */
    void           *render_ctx;
};

/* Under m->lock: queue request o (taken) for agent `agent` (an index into
 * m->ag); the communication thread sends it. Never blocks. */
void mpicomm_enqueue(MpiEval *m, int agent, json_t *o);

/* The communication thread (pthread_create's start routine; arg: the
 * MpiEval): runs until m->quit is set and the queue is empty. */
void *mpicomm_main(void *arg);

#endif

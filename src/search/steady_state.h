/*
 * steady_state: the state of the steady-state loop that its loop thread
 * (steady.c) and its GPU threads (steady_slots.c) share: the children in
 * flight, the waves, the lock. Types only.
 */
#ifndef EVO_SEARCH_STEADY_STATE_H
#define EVO_SEARCH_STEADY_STATE_H

#include <pthread.h>

#include "search/loop.h"
#include "search/taper.h"

#define F_QUEUED_A 0   /* submitted; waits for its benchmark unit and a free GPU */
#define F_RUNNING  1   /* on a GPU */
#define F_QUEUED_B 2   /* passed stage A; waits for its other units and a free GPU */
#define F_DONE     3   /* decided: the loop thread commits it */

#define POLL_MS    50  /* a waiting thread looks again at least this often */

typedef struct Flight {
    Child    kid;
    Child   *parent;    /* from loop_parent_get, put back at the commit; NULL: none */
    int64_t  wave;
    int64_t  req_id;    /* its LLM request, 0: none */
    int      state;     /* F_* */
    int      stage;     /* what it runs or waits for: 1 (stage A) or 2 (stage B) */
    int      urged;     /* bit s: its stage-s units were moved up for a waiting GPU */
    int      rc;        /* the stage's return code (-1: the run fails with err) */
    EvoErr   err;
} Flight;

typedef struct Wave {
    int64_t          gen;
    int              open;     /* children proposed and not yet committed or dropped */
    int              llm;      /* LLM requests of the wave not yet answered */
    int              closed;   /* its row is written for good */
    int              commits;  /* committed so far */
    int              refill;   /* resume: children a kill cut from it, to propose again */
    double           t0;
    GenerationRecord g;
} Wave;

typedef struct Steady {
    Loop           *L;
    pthread_mutex_t lock;      /* everything below but the waves */
    pthread_cond_t  work;      /* GPU threads: something may be ready, or the end */
    pthread_cond_t  done;      /* the loop thread: a child is decided, a thread ended */
    Flight        **f;         /* in flight, in submission order */
    int             nf, capf;
    int             nslots, running;
    int             draining;  /* 1: no new stage A (time limit); 2: nothing new at all (stop) */
    int             quit;
    int             lost;      /* GPU threads ended by a lost slot */
    double         *busy_s;    /* per slot: inside gate, time and compare */
    double          idle_s;    /* summed over slots: nothing ready to judge */
    double          stage_s[2];/* summed over slots: inside stage A, stage B (the debug line) */
    int             stage_n[2];
    /* the loop thread's own */
    Child         **graves;    /* let go, their compilations still running: released later */
    int             ngraves;
    Wave           *waves;
    int             nwaves;
    int64_t         first_wave, next_wave;
    int             window, proposing, exhausted;
    Taper           taper;     /* when a time-limited run stops proposing */
    int             dropped;   /* children dropped unjudged at the limit or a stop */
    pthread_t      *tids;
} Steady;

#endif

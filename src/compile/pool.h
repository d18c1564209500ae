/*
 * pool: a small fixed-size pthread thread pool. Tasks are plain function
 * pointers with one argument, run in submission order by whichever worker
 * is free. pool_wait() blocks until every task submitted so far has
 * finished and may be called any number of times; pool_close() drains the
 * queue, joins the workers and frees the pool. nvrtc_compile_many() uses
 * it to run independent NVRTC compilations in parallel.
 *
 * Tasks wait in three priority queues (POOL_NOW, POOL_NEXT, POOL_SPEC):
 * the evaluation pipeline puts the compilations a GPU waits for first,
 * the next children's after them and speculative ones last.
 *
 * Thread safety: pool_submit() and pool_wait() may be called from any
 * thread, including from inside a task (submit only: a task that waits on
 * its own pool deadlocks). pool_open()/pool_close() belong to one owner.
 */
#ifndef EVO_POOL_H
#define EVO_POOL_H

#include "util.h"

typedef struct Pool Pool;

/* Start a pool of `threads` workers; 0 means one per usable core
 * (device_cores()), negative is an error. On success *out
 * owns the pool (release with pool_close) and 0 is returned. On failure
 * *out is NULL, err names the failing call (e.g. "pthread_create: ...")
 * and -1 is returned. */
int pool_open(Pool **out, int threads, EvoErr *err);

/* Number of worker threads of an open pool. */
int pool_threads(const Pool *pool);

/* Queue fn(arg) to run once on a worker. The pool does not own arg; it
 * must stay valid until the task has run (e.g. until pool_wait returns).
 * Returns 0, or -1 when the pool is closing. */
int pool_submit(Pool *pool, void (*fn)(void *), void *arg);

/* A caller-owned completion handle for one submitted task. Its fields
 * belong to the pool while the task is queued or running. */
typedef struct PoolJob {
    int done;        /* 1 once the task's fn has returned (read under the pool's lock) */
    int cancelled;   /* 1 when pool_job_cancel took it off the queue: fn never ran */
} PoolJob;

/* Like pool_submit, and job (caller-owned, may be NULL) is marked done
 * once fn(arg) has returned, so pool_job_wait can wait for this task
 * alone. job must stay valid until then. Returns 0, or -1 when the pool
 * is closing (job is then left not done: do not wait on it). */
int pool_submit_job(Pool *pool, PoolJob *job, void (*fn)(void *), void *arg);

/* Priority levels of pool_submit_pri. A free worker takes the oldest
 * task of the highest level queued (POOL_NOW first); a POOL_SPEC task
 * only while fewer than half the workers (at least one) run POOL_SPEC
 * tasks, so the others stay free for the levels above. A running task is
 * never interrupted. */
#define POOL_NOW    0   /* something waits for it now (a GPU, a caller) */
#define POOL_NEXT   1   /* needed soon, in submission order */
#define POOL_SPEC   2   /* speculative: only when nothing else is queued */
#define POOL_LEVELS 3

/* Like pool_submit_job, on the queue of `level` (POOL_NOW, POOL_NEXT or
 * POOL_SPEC; pool_submit and pool_submit_job use POOL_NOW). Returns 0, or
 * -1 when the pool is closing or the level is out of range. */
int pool_submit_pri(Pool *pool, PoolJob *job, void (*fn)(void *), void *arg, int level);

/* Move job's task, while it is still queued at a lower priority than
 * `level`, to the end of level's queue. Does nothing once it runs or has
 * run, or when it is queued at level or above. */
void pool_job_promote(Pool *pool, PoolJob *job, int level);

/* Call fn(arg) after every task that finishes (or is cancelled), on the
 * thread that ran (or cancelled) it, outside the pool's lock: a scheduler
 * waiting for "some compilation finished" sets it. NULL clears it. fn
 * must not call back into the pool's waits. */
void pool_set_hook(Pool *pool, void (*fn)(void *), void *arg);

/* Run the workers' next tasks at nice value `nice` (0..19: lower
 * priority than the process's other threads), so long background work
 * (compilations) never starves latency-bound threads (a GPU's). Linux
 * only; elsewhere, and where refused, nothing changes. */
void pool_set_nice(Pool *pool, int nice);

/* Counters since pool_open: tasks run per level, and the seconds workers
 * spent running tasks (wall time), for utilisation reports. */
typedef struct PoolStats {
    long   ran[POOL_LEVELS];
    long   cancelled;
    double busy_s;
    int    threads;
} PoolStats;
void pool_stats(Pool *pool, PoolStats *out);

/* Take job's task off the queue if no worker has started it: it is then
 * done without running (job->cancelled = 1) and 1 is returned; the
 * caller still owns the task's arg. Returns 0 when it is running or has
 * run (wait for it with pool_job_wait). */
int pool_job_cancel(Pool *pool, PoolJob *job);

/* 1 when the task submitted with job has finished (or was cancelled), 0
 * while it is queued or running; never blocks. */
int pool_job_is_done(Pool *pool, PoolJob *job);

/* Block until the task submitted with job has finished; other tasks may
 * still be queued or running. Returns at once when it already has. Must
 * not be called from a task of the same pool. */
void pool_job_wait(Pool *pool, PoolJob *job);

/* Block until every task submitted before this call (and any they
 * submitted) has finished. Returns at once when nothing is pending.
 * Reusable: submit more afterwards and wait again. */
void pool_wait(Pool *pool);

/* Run every queued task to completion, stop and join the workers, free
 * the pool and set *pool to NULL. Safe on NULL and on *pool == NULL. */
void pool_close(Pool **pool);

#endif

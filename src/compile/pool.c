/*
 * pool: a fixed-size pthread thread pool with a FIFO task queue. See
 * pool.h. One mutex guards the queue and the counters; `work` wakes idle
 * workers, `idle` wakes pool_wait() when the pending count drops to zero.
 * Each priority level is a singly linked list of heap nodes (tasks are
 * few and coarse: whole NVRTC compilations), so there is no capacity to
 * manage.
 */
#include "compile/pool.h"

#include <pthread.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <time.h>
#include <string.h>
#include <unistd.h>

#include "device.h"

typedef struct PoolTask {
    void           (*fn)(void *);
    void            *arg;
    PoolJob         *job;      /* marked done after fn returns, or NULL */
    struct PoolTask *next;
} PoolTask;

/* A FIFO of queued tasks. */
typedef struct PoolQueue {
    PoolTask *head, *tail;
} PoolQueue;

struct Pool {
    pthread_mutex_t lock;
    pthread_cond_t  work;      /* signalled when a task is queued or on close */
    pthread_cond_t  idle;      /* broadcast when pending reaches 0 */
    pthread_cond_t  jobdone;   /* broadcast when a task with a PoolJob finishes */
    PoolQueue       q[POOL_LEVELS];  /* by priority: POOL_NOW first */
    int             bg_running;   /* POOL_SPEC tasks running now */
    int             bg_cap;       /* at most this many at once: the rest stay free for the others */
    void          (*hook)(void *);   /* called after each task (pool_set_hook) */
    int             nice;            /* the workers' nice value (pool_set_nice) */
    void           *hook_arg;
    PoolStats       stats;
    long            pending;   /* queued + running tasks */
    int             closing;   /* 1: no new tasks, workers exit when the queue is empty */
    pthread_t      *tids;      /* nthreads started workers */
    int             nthreads;
};

static void queue_push(PoolQueue *q, PoolTask *t)
{
    t->next = NULL;
    if (q->tail)
        q->tail->next = t;
    else
        q->head = t;
    q->tail = t;
}

/* Unlink the queued task of job from q; NULL when it is not there. */
static PoolTask *queue_take(PoolQueue *q, const PoolJob *job)
{
    PoolTask *prev = NULL;
    for (PoolTask *t = q->head; t; prev = t, t = t->next) {
        if (t->job != job)
            continue;
        if (prev)
            prev->next = t->next;
        else
            q->head = t->next;
        if (q->tail == t)
            q->tail = prev;
        t->next = NULL;
        return t;
    }
    return NULL;
}

/* The next task a free worker may run: the oldest of the highest level
 * queued, a POOL_SPEC one only while fewer than bg_cap of those run. */
static PoolTask *queue_pop(Pool *pool, int *level)
{
    for (int l = 0; l < POOL_LEVELS; l++) {
        PoolQueue *q = &pool->q[l];
        if (!q->head || (l == POOL_SPEC && pool->bg_running >= pool->bg_cap))
            continue;
        PoolTask *t = q->head;
        q->head = t->next;
        if (!q->head)
            q->tail = NULL;
        *level = l;
        return t;
    }
    return NULL;
}

static int queues_empty(const Pool *pool)
{
    for (int l = 0; l < POOL_LEVELS; l++)
        if (pool->q[l].head)
            return 0;
    return 1;
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* After a task finished or was cancelled (lock not held): the hook. */
static void run_hook(Pool *pool)
{
    pthread_mutex_lock(&pool->lock);
    void (*fn)(void *) = pool->hook;
    void *arg = pool->hook_arg;
    pthread_mutex_unlock(&pool->lock);
    if (fn)
        fn(arg);
}

/* Give the calling thread nice value n (Linux: the nice value is per
 * thread). Best effort: a failure leaves it as it was. */
static void thread_nice(int n)
{
#ifdef SYS_gettid
    setpriority(PRIO_PROCESS, (id_t)syscall(SYS_gettid), n);
#else
    (void)n;
#endif
}

static void *pool_worker(void *p)
{
    Pool *pool = p;
    int niced = 0;   /* this thread's nice value */
    pthread_mutex_lock(&pool->lock);
    for (;;) {
        int level = 0;
        PoolTask *t;
        while (!(t = queue_pop(pool, &level)) && !(pool->closing && queues_empty(pool)))
            pthread_cond_wait(&pool->work, &pool->lock);
        if (!t)
            break;                     /* closing and drained */
        int bg = level == POOL_SPEC, want = pool->nice;
        pool->bg_running += bg;
        pthread_mutex_unlock(&pool->lock);
        if (want != niced) {
            thread_nice(want);
            niced = want;
        }

        double t0 = now_s();
        t->fn(t->arg);
        double dt = now_s() - t0;
        PoolJob *job = t->job;
        free(t);

        pthread_mutex_lock(&pool->lock);
        pool->stats.ran[level]++;
        pool->stats.busy_s += dt;
        if (bg) {
            pool->bg_running--;
            pthread_cond_signal(&pool->work);   /* a queued speculative task may start now */
        }
        if (job) {
            job->done = 1;
            pthread_cond_broadcast(&pool->jobdone);
        }
        pthread_mutex_unlock(&pool->lock);
        run_hook(pool);   /* before the task stops counting: pool_wait covers it */
        pthread_mutex_lock(&pool->lock);
        if (--pool->pending == 0)
            pthread_cond_broadcast(&pool->idle);
    }
    pthread_mutex_unlock(&pool->lock);
    return NULL;
}

int pool_open(Pool **out, int threads, EvoErr *err)
{
    *out = NULL;
    if (threads < 0)
        return err_set(err, "pool_open: invalid thread count %d", threads);
    if (threads == 0) {
        threads = device_cores();
    }
    Pool *pool = xcalloc(1, sizeof(*pool));
    pthread_mutex_init(&pool->lock, NULL);
    pthread_cond_init(&pool->work, NULL);
    pthread_cond_init(&pool->idle, NULL);
    pthread_cond_init(&pool->jobdone, NULL);
    pool->tids = xcalloc((size_t)threads, sizeof(pthread_t));
    pool->bg_cap = threads > 1 ? threads / 2 : 1;
    for (int i = 0; i < threads; i++) {
        int rc = pthread_create(&pool->tids[i], NULL, pool_worker, pool);
        if (rc != 0) {
            err_set(err, "pthread_create: %s (worker %d of %d)", strerror(rc), i + 1, threads);
            goto fail;
        }
        pool->nthreads++;
    }
    *out = pool;
    return 0;

fail:
    pool_close(&pool);
    return -1;
}

int pool_threads(const Pool *pool)
{
    return pool->nthreads;
}

int pool_submit(Pool *pool, void (*fn)(void *), void *arg)
{
    return pool_submit_job(pool, NULL, fn, arg);
}

int pool_submit_job(Pool *pool, PoolJob *job, void (*fn)(void *), void *arg)
{
    return pool_submit_pri(pool, job, fn, arg, POOL_NOW);
}

int pool_submit_pri(Pool *pool, PoolJob *job, void (*fn)(void *), void *arg, int level)
{
    if (level < 0 || level >= POOL_LEVELS)
        return -1;
    PoolTask *t = xmalloc(sizeof(*t));
    t->fn = fn;
    t->arg = arg;
    t->job = job;
    pthread_mutex_lock(&pool->lock);
    if (job) {
        job->done = 0;
        job->cancelled = 0;
    }
    if (pool->closing) {
        pthread_mutex_unlock(&pool->lock);
        free(t);
        return -1;
    }
    queue_push(&pool->q[level], t);
    pool->pending++;
    pthread_cond_signal(&pool->work);
    pthread_mutex_unlock(&pool->lock);
    return 0;
}

void pool_job_promote(Pool *pool, PoolJob *job, int level)
{
    if (level < 0 || level >= POOL_LEVELS)
        return;
    pthread_mutex_lock(&pool->lock);
    for (int l = level + 1; l < POOL_LEVELS; l++) {
        PoolTask *t = queue_take(&pool->q[l], job);
        if (t) {
            queue_push(&pool->q[level], t);
            pthread_cond_signal(&pool->work);
            break;
        }
    }
    pthread_mutex_unlock(&pool->lock);
}

int pool_job_cancel(Pool *pool, PoolJob *job)
{
    pthread_mutex_lock(&pool->lock);
    PoolTask *t = NULL;
    for (int l = 0; l < POOL_LEVELS && !t; l++)
        t = queue_take(&pool->q[l], job);
    if (t) {
        free(t);
        job->done = 1;
        job->cancelled = 1;
        pool->stats.cancelled++;
        pthread_cond_broadcast(&pool->jobdone);
        if (--pool->pending == 0)
            pthread_cond_broadcast(&pool->idle);
    }
    pthread_mutex_unlock(&pool->lock);
    if (t)
        run_hook(pool);
    return t != NULL;
}

void pool_set_hook(Pool *pool, void (*fn)(void *), void *arg)
{
    pthread_mutex_lock(&pool->lock);
    pool->hook = fn;
    pool->hook_arg = arg;
    pthread_mutex_unlock(&pool->lock);
}

void pool_set_nice(Pool *pool, int nice)
{
    pthread_mutex_lock(&pool->lock);
    pool->nice = nice;
    pthread_mutex_unlock(&pool->lock);
}

void pool_stats(Pool *pool, PoolStats *out)
{
    pthread_mutex_lock(&pool->lock);
    *out = pool->stats;
    out->threads = pool->nthreads;
    pthread_mutex_unlock(&pool->lock);
}

void pool_wait(Pool *pool)
{
    pthread_mutex_lock(&pool->lock);
    while (pool->pending > 0)
        pthread_cond_wait(&pool->idle, &pool->lock);
    pthread_mutex_unlock(&pool->lock);
}

int pool_job_is_done(Pool *pool, PoolJob *job)
{
    pthread_mutex_lock(&pool->lock);
    int done = job->done;
    pthread_mutex_unlock(&pool->lock);
    return done;
}

void pool_job_wait(Pool *pool, PoolJob *job)
{
    pthread_mutex_lock(&pool->lock);
    while (!job->done)
        pthread_cond_wait(&pool->jobdone, &pool->lock);
    pthread_mutex_unlock(&pool->lock);
}

void pool_close(Pool **pp)
{
    if (!pp || !*pp)
        return;
    Pool *pool = *pp;
    pthread_mutex_lock(&pool->lock);
    pool->closing = 1;
    pthread_cond_broadcast(&pool->work);
    pthread_mutex_unlock(&pool->lock);
    for (int i = 0; i < pool->nthreads; i++)
        pthread_join(pool->tids[i], NULL);
    /* With no workers (pool_open failed before starting any), queued tasks
     * cannot exist: pool_submit is only reachable on an opened pool. */
    pthread_cond_destroy(&pool->jobdone);
    pthread_cond_destroy(&pool->idle);
    pthread_cond_destroy(&pool->work);
    pthread_mutex_destroy(&pool->lock);
    free(pool->tids);
    free(pool);
    *pp = NULL;
}

/*
 * test_pool: the thread pool runs every task exactly once, pool_wait()
 * waits for everything submitted (also by tasks) and can be repeated,
 * pool_close() drains the queue, and bad thread counts are refused;
 * urgent tasks run before background ones, which never take more than
 * half the workers, and a queued task can be promoted or cancelled.
 */
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "compile/pool.h"
#include "testhelp.h"

#define NTASKS 20000

static atomic_int slots[NTASKS];
static atomic_int total;

static void bump(void *arg)
{
    atomic_int *slot = arg;
    atomic_fetch_add(slot, 1);
    atomic_fetch_add(&total, 1);
}

static void nap_bump(void *arg)
{
    struct timespec ts = {0, 200000}; /* 0.2 ms: keeps tasks queued */
    nanosleep(&ts, NULL);
    bump(arg);
}

static void reset(void)
{
    for (int i = 0; i < NTASKS; i++)
        atomic_store(&slots[i], 0);
    atomic_store(&total, 0);
}

static int all_exactly(int want)
{
    for (int i = 0; i < NTASKS; i++)
        if (atomic_load(&slots[i]) != want)
            return 0;
    return 1;
}

static void test_exactly_once(void)
{
    Pool *pool = NULL;
    EvoErr err = {{0}};
    reset();
    CHECK(pool_open(&pool, 4, &err) == 0);
    CHECK(pool && pool_threads(pool) == 4);
    for (int i = 0; i < NTASKS; i++)
        CHECK(pool_submit(pool, bump, &slots[i]) == 0);
    pool_wait(pool);
    CHECK(atomic_load(&total) == NTASKS);
    CHECK(all_exactly(1));
    pool_close(&pool);
    CHECK(pool == NULL);
    CHECK(all_exactly(1));
}

static void test_wait_repeatedly(void)
{
    Pool *pool = NULL;
    reset();
    CHECK(pool_open(&pool, 3, NULL) == 0);
    pool_wait(pool);                 /* nothing pending: returns at once */
    for (int round = 1; round <= 5; round++) {
        for (int i = 0; i < 200; i++)
            pool_submit(pool, nap_bump, &slots[i]);
        pool_wait(pool);
        /* Everything submitted before the wait has finished. */
        CHECK_MSG(atomic_load(&total) == 200 * round, "round %d total %d", round, atomic_load(&total));
        pool_wait(pool);
        CHECK(atomic_load(&total) == 200 * round);
    }
    for (int i = 0; i < 200; i++)
        CHECK(atomic_load(&slots[i]) == 5);
    pool_close(&pool);
}

typedef struct Parent {
    Pool      *pool;
    atomic_int *child_slot;
} Parent;

static void spawn_child(void *arg)
{
    Parent *p = arg;
    struct timespec ts = {0, 1000000};
    nanosleep(&ts, NULL);
    pool_submit(p->pool, nap_bump, p->child_slot);
}

static void test_tasks_submit_tasks(void)
{
    Pool *pool = NULL;
    Parent parents[64];
    reset();
    CHECK(pool_open(&pool, 2, NULL) == 0);
    for (int i = 0; i < 64; i++) {
        parents[i].pool = pool;
        parents[i].child_slot = &slots[i];
        pool_submit(pool, spawn_child, &parents[i]);
    }
    pool_wait(pool);
    CHECK(atomic_load(&total) == 64);
    pool_close(&pool);
}

static void test_close_drains(void)
{
    Pool *pool = NULL;
    reset();
    CHECK(pool_open(&pool, 2, NULL) == 0);
    for (int i = 0; i < 300; i++)
        pool_submit(pool, nap_bump, &slots[i]);
    pool_close(&pool);                /* no wait: close must still run them all */
    CHECK(pool == NULL);
    CHECK(atomic_load(&total) == 300);
    pool_close(&pool);                /* NULL handle: no-op */
    pool_close(NULL);
}

static void test_thread_counts(void)
{
    Pool *pool = NULL;
    EvoErr err = {{0}};
    CHECK(pool_open(&pool, 0, &err) == 0);
    long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
    CHECK(pool && pool_threads(pool) == (ncpu > 0 ? (int)ncpu : 1));
    pool_close(&pool);

    CHECK(pool_open(&pool, -1, &err) == -1);
    CHECK(pool == NULL);
    CHECK_CONTAINS(err.msg, "pool_open");

    reset();
    CHECK(pool_open(&pool, 1, NULL) == 0);
    for (int i = 0; i < 1000; i++)
        pool_submit(pool, bump, &slots[i]);
    pool_wait(pool);
    CHECK(atomic_load(&total) == 1000);
    pool_close(&pool);
}

/* A task that holds its worker until `release` is set (at most ~5 s),
 * then records whether it was released or gave up. */
static atomic_int release, held_done, held_timed_out;

static void held(void *arg)
{
    (void)arg;
    struct timespec ts = {0, 1000000}; /* 1 ms */
    int i = 0;
    while (!atomic_load(&release) && i++ < 5000)
        nanosleep(&ts, NULL);
    atomic_store(&held_timed_out, !atomic_load(&release));
    atomic_store(&held_done, 1);
}

/* pool_job_wait returns when its own task is done, while a later task
 * still runs: had it waited for the whole pool, `held` would have given
 * up (timed out) before release was set, and held_done would read 1. */
static void test_job_wait_own_task(void)
{
    Pool *pool = NULL;
    EvoErr err = {{0}};
    CHECK(pool_open(&pool, 2, &err) == 0);
    reset();
    atomic_store(&release, 0);
    atomic_store(&held_done, 0);
    atomic_store(&held_timed_out, 0);
    PoolJob quick, slow;
    CHECK(pool_submit_job(pool, &slow, held, NULL) == 0);
    CHECK(pool_submit_job(pool, &quick, nap_bump, &slots[0]) == 0);
    pool_job_wait(pool, &quick);
    CHECK(quick.done == 1);
    CHECK(atomic_load(&slots[0]) == 1);
    CHECK(atomic_load(&held_done) == 0);
    atomic_store(&release, 1);
    pool_job_wait(pool, &slow);
    CHECK(atomic_load(&held_done) == 1);
    CHECK(atomic_load(&held_timed_out) == 0);
    pool_job_wait(pool, &quick);   /* already done: returns at once */
    pool_close(&pool);
}

/* Tasks that write their id into `order` as they run. */
static atomic_int order[8], norder;

static void note(void *arg)
{
    atomic_store(&order[atomic_fetch_add(&norder, 1)], (int)(intptr_t)arg);
}

static void hold_start(void)
{
    atomic_store(&release, 0);
    atomic_store(&held_done, 0);
    atomic_store(&held_timed_out, 0);
    atomic_store(&norder, 0);
}

/* Urgent before background; a promoted background task joins the urgent
 * queue; a cancelled one never runs and is done. */
static void test_priorities(void)
{
    Pool *pool = NULL;
    EvoErr err = {{0}};
    CHECK(pool_open(&pool, 1, &err) == 0);
    hold_start();
    PoolJob block, b1, b2, b3, u1;
    CHECK(pool_submit_job(pool, &block, held, NULL) == 0);   /* the only worker is busy */
    CHECK(pool_submit_pri(pool, &b1, note, (void *)1, POOL_SPEC) == 0);
    CHECK(pool_submit_pri(pool, &b2, note, (void *)2, POOL_SPEC) == 0);
    CHECK(pool_submit_pri(pool, &b3, note, (void *)3, POOL_SPEC) == 0);
    CHECK(pool_submit_pri(pool, &u1, note, (void *)4, POOL_NOW) == 0);
    pool_job_promote(pool, &b2, POOL_NOW);
    CHECK(pool_job_cancel(pool, &b3) == 1);
    CHECK(b3.done == 1 && b3.cancelled == 1);
    CHECK(pool_job_cancel(pool, &b3) == 0);   /* no longer queued */
    atomic_store(&release, 1);
    pool_wait(pool);
    CHECK(atomic_load(&held_timed_out) == 0);
    CHECK_MSG(atomic_load(&norder) == 3, "%d tasks ran", atomic_load(&norder));
    CHECK(atomic_load(&order[0]) == 4);   /* urgent first */
    CHECK(atomic_load(&order[1]) == 2);   /* then the promoted one */
    CHECK(atomic_load(&order[2]) == 1);
    CHECK(b1.done && !b1.cancelled && b2.done && u1.done);
    CHECK(pool_job_cancel(pool, &b1) == 0);   /* it ran */
    pool_close(&pool);
}

/* At most half the workers run background tasks: with two workers and one
 * background task running, a second background task waits while an
 * urgent one runs on the free worker. */
static void test_background_cap(void)
{
    Pool *pool = NULL;
    EvoErr err = {{0}};
    CHECK(pool_open(&pool, 2, &err) == 0);
    hold_start();
    PoolJob bg_held, bg2, u;
    CHECK(pool_submit_pri(pool, &bg_held, held, NULL, POOL_SPEC) == 0);
    struct timespec ts = {0, 20000000}; /* 20 ms: the held task has started */
    nanosleep(&ts, NULL);
    CHECK(pool_submit_pri(pool, &bg2, note, (void *)1, POOL_SPEC) == 0);
    nanosleep(&ts, NULL);
    CHECK_MSG(atomic_load(&norder) == 0, "a second background task ran beside the first");
    CHECK(pool_submit_pri(pool, &u, note, (void *)2, POOL_NOW) == 0);
    pool_job_wait(pool, &u);
    CHECK(atomic_load(&order[0]) == 2);
    CHECK(atomic_load(&held_done) == 0);
    atomic_store(&release, 1);
    pool_wait(pool);
    CHECK(atomic_load(&norder) == 2 && atomic_load(&order[1]) == 1);
    CHECK(atomic_load(&held_timed_out) == 0);
    pool_close(&pool);
}

static atomic_int hook_calls;
static void count_hook(void *arg)
{
    (void)arg;
    atomic_fetch_add(&hook_calls, 1);
}

/* Three levels: NOW before NEXT before SPEC, FIFO within a level; a
 * promotion moves a task up, never down; the hook runs once per task
 * that finishes or is cancelled; the stats count tasks per level. */
static void test_levels(void)
{
    Pool *pool = NULL;
    EvoErr err = {{0}};
    CHECK(pool_open(&pool, 1, &err) == 0);
    hold_start();
    atomic_store(&hook_calls, 0);
    pool_set_hook(pool, count_hook, NULL);
    PoolJob block, s1, n1, n2, w1, s2, x;
    CHECK(pool_submit_job(pool, &block, held, NULL) == 0);
    CHECK(pool_submit_pri(pool, &s1, note, (void *)1, POOL_SPEC) == 0);
    CHECK(pool_submit_pri(pool, &n1, note, (void *)2, POOL_NEXT) == 0);
    CHECK(pool_submit_pri(pool, &n2, note, (void *)3, POOL_NEXT) == 0);
    CHECK(pool_submit_pri(pool, &w1, note, (void *)4, POOL_NOW) == 0);
    CHECK(pool_submit_pri(pool, &s2, note, (void *)5, POOL_SPEC) == 0);
    CHECK(pool_submit_pri(pool, &x, note, (void *)6, POOL_LEVELS) == -1);   /* no such level */
    pool_job_promote(pool, &s2, POOL_NEXT);   /* after n1, n2 */
    pool_job_promote(pool, &n2, POOL_SPEC);   /* never down */
    atomic_store(&release, 1);
    pool_wait(pool);
    CHECK_MSG(atomic_load(&norder) == 5, "%d tasks ran", atomic_load(&norder));
    int want[5] = {4, 2, 3, 5, 1};
    for (int i = 0; i < 5; i++)
        CHECK_MSG(atomic_load(&order[i]) == want[i], "task %d ran as %d", atomic_load(&order[i]), i);
    CHECK_MSG(atomic_load(&hook_calls) == 6, "hook called %d times", atomic_load(&hook_calls));
    PoolStats ps;
    pool_stats(pool, &ps);
    CHECK(ps.ran[POOL_NOW] == 2 && ps.ran[POOL_NEXT] == 3 && ps.ran[POOL_SPEC] == 1 && ps.threads == 1);
    CHECK(ps.busy_s > 0);
    pool_set_hook(pool, NULL, NULL);
    pool_close(&pool);
}

int main(void)
{
    RUN(test_exactly_once);
    RUN(test_levels);
    RUN(test_wait_repeatedly);
    RUN(test_tasks_submit_tasks);
    RUN(test_close_drains);
    RUN(test_thread_counts);
    RUN(test_job_wait_own_task);
    RUN(test_priorities);
    RUN(test_background_cap);
    return test_report();
}

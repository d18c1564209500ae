/*
 * test_prep: the staged compilation is safe across threads. Two threads
 * wait for one unit at once (two GPU slots of an MPI agent comparing
 * against one parent), while a third promotes and polls it (the agent's
 * main thread). The unit is taken in once: both waits succeed, and the
 * compile time and the lowered launch names are those of one compilation.
 * Before the lock in prep.c, both waiters freed the job (an MPI agent on
 * a four-GPU host aborted in malloc, issue 32). A unit never submitted,
 * or cancelled, is an error to wait for, not a result.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "compile/pool.h"
#include "compile/prep.h"
#include "device.h"
#include "task/task.h"
#include "testdata.h"
#include "testhelp.h"

typedef struct Waiter {
    Pool     *pool;
    Prepared *p;
    int       u, rc;
    EvoErr    err;
} Waiter;

static void *wait_main(void *arg)
{
    Waiter *w = arg;
    w->rc = prep_unit_wait(w->pool, w->p, w->u, &w->err);
    return NULL;
}

static void test_two_waiters(void)
{
    DeviceInfo dev;
    Task *t = test_task_sm90("kfile", "task.json", &dev);
    CHECK(t != NULL);
    EvoErr err;
    Pool *pool = NULL;
    CHECK_MSG(pool_open(&pool, 2, &err) == 0, "%s", err.msg);
    if (!t || !pool)
        goto out;
    int64_t vals[8];
    task_defaults(t, vals);
    PrepInput in = {.vals = vals};
    for (int iter = 0; iter < 4; iter++) {
        Prepared p;
        CHECK_MSG(prep_render(t, &dev, &in, &p, &err) == 0, "%s", err.msg);
        if (p.status[0]) {
            CHECK_MSG(0, "rendered with status %s", p.status);
            prep_free(&p);
            break;
        }
        int u = p.shape_unit[0];
        CHECK(prep_unit_submit(pool, t, &dev, &p, u, POOL_SPEC, &err) == 0);
        Waiter w[2];
        pthread_t tid[2];
        for (int i = 0; i < 2; i++) {
            w[i] = (Waiter){.pool = pool, .p = &p, .u = u, .rc = -2};
            CHECK(pthread_create(&tid[i], NULL, wait_main, &w[i]) == 0);
        }
        int polls = 0, refused = 0;
        while (!prep_unit_ready(&p, u)) {   /* the main thread's share: promote, poll */
            refused += prep_unit_submit(pool, t, &dev, &p, u, POOL_NOW, &err) != 0;
            (void)prep_busy(&p);
            polls++;
            usleep(50);
        }
        CHECK(refused == 0);
        for (int i = 0; i < 2; i++) {
            pthread_join(tid[i], NULL);
            CHECK_MSG(w[i].rc == 0, "waiter %d: rc %d: %s", i, w[i].rc, w[i].rc ? w[i].err.msg : "");
        }
        CHECK(p.units[u].state == PREP_UNIT_DONE);
        CHECK(p.units[u].res.ok);
        CHECK_MSG(p.compile_ms == p.units[u].res.compile_ms, "compile_ms %.3f, the unit's %.3f: taken in twice?",
                  p.compile_ms, p.units[u].res.compile_ms);
        CHECK(strncmp(p.plans[0].launches[0].entry, "_Z9attn_rowsILi128ELi64EE", 25) == 0);
        CHECK(polls > 0);
        prep_free(&p);
    }
out:
    pool_close(&pool);
    task_free(&t);
}

/* A unit never submitted, or cancelled before it started, is not waited
 * for: prep_unit_wait says so instead of taking in a result that is not
 * there. One compile thread: the first unit runs, the second queues. */
static void test_never_submitted(void)
{
    DeviceInfo dev;
    Task *t = test_task_sm90("kfile", "task.json", &dev);
    CHECK(t != NULL);
    EvoErr err;
    Pool *pool = NULL;
    CHECK_MSG(pool_open(&pool, 1, &err) == 0, "%s", err.msg);
    if (!t || !pool)
        goto out;
    int64_t vals[8];
    task_defaults(t, vals);
    PrepInput in = {.vals = vals};
    Prepared a, b;
    CHECK_MSG(prep_render(t, &dev, &in, &a, &err) == 0, "%s", err.msg);
    CHECK_MSG(prep_render(t, &dev, &in, &b, &err) == 0, "%s", err.msg);
    int u = a.shape_unit[0];
    err.msg[0] = 0;
    CHECK(prep_unit_wait(pool, &b, u, &err) == -1);
    CHECK_CONTAINS(err.msg, "never submitted");
    CHECK(prep_unit_submit(pool, t, &dev, &a, u, POOL_NOW, &err) == 0);
    CHECK(prep_unit_submit(pool, t, &dev, &b, u, POOL_SPEC, &err) == 0);
    prep_unit_cancel(&b, u);   /* queued behind a's, which holds the one thread */
    CHECK(b.units[u].state == PREP_UNIT_RENDERED);
    err.msg[0] = 0;
    CHECK(prep_unit_wait(pool, &b, u, &err) == -1);
    CHECK_CONTAINS(err.msg, "never submitted");
    CHECK_MSG(prep_unit_wait(pool, &a, u, &err) == 0, "%s", err.msg);
    CHECK(a.units[u].state == PREP_UNIT_DONE && a.units[u].res.ok);
    prep_free(&a);
    prep_free(&b);
out:
    pool_close(&pool);
    task_free(&t);
}

int main(void)
{
    RUN(test_two_waiters);
    RUN(test_never_submitted);
    return test_report();
}

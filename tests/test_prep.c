/*
 * test_prep: the staged compilation is safe across threads. Two threads
 * wait for one unit at once (two GPU slots of an MPI agent comparing
 * against one parent), while a third promotes and polls it (the agent's
 * main thread). The unit is taken in once: both waits succeed, and the
 * compile time and the lowered launch names are those of one compilation.
 * Before the lock in prep.c, both waiters freed the job (an MPI agent on
 * a four-GPU host aborted in malloc, issue 32).
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

int main(void)
{
    RUN(test_two_waiters);
    return test_report();
}

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

/* The kfile task at its defaults, sm_90's profile and a compile pool. */
typedef struct Fixture {
    DeviceInfo dev;
    Task      *t;
    Pool      *pool;
    int64_t    vals[8];
    PrepInput  in;
} Fixture;

/* Open f with a pool of `threads`; 0, or -1 after failed checks. */
static int fixture_open(Fixture *f, int threads)
{
    EvoErr err;
    memset(f, 0, sizeof(*f));
    f->t = test_task_sm90("kfile", "task.json", &f->dev);
    CHECK(f->t != NULL);
    CHECK_MSG(pool_open(&f->pool, threads, &err) == 0, "%s", err.msg);
    if (!f->t || !f->pool)
        return -1;
    task_defaults(f->t, f->vals);
    f->in.vals = f->vals;
    return 0;
}

static void fixture_close(Fixture *f)
{
    pool_close(&f->pool);
    task_free(&f->t);
}

/* A fresh rendering of the fixture's configuration; 0, or -1 (checked). */
static int render(Fixture *f, Prepared *p)
{
    EvoErr err;
    if (prep_render(f->t, &f->dev, &f->in, p, &err)) {
        CHECK_MSG(0, "prep_render: %s", err.msg);
        return -1;
    }
    CHECK_MSG(p->status[0] == 0, "rendered with status %s", p->status);
    if (p->status[0]) {
        prep_free(p);
        return -1;
    }
    return 0;
}

static void test_two_waiters(void)
{
    Fixture f;
    if (fixture_open(&f, 2) == 0) {
        EvoErr err;
        for (int iter = 0; iter < 4; iter++) {
            Prepared p;
            if (render(&f, &p))
                break;
            int u = p.shape_unit[0];
            CHECK(prep_unit_submit(f.pool, f.t, &f.dev, &p, u, POOL_SPEC, &err) == 0);
            Waiter w[2];
            pthread_t tid[2];
            for (int i = 0; i < 2; i++) {
                w[i] = (Waiter){.pool = f.pool, .p = &p, .u = u, .rc = -2};
                CHECK(pthread_create(&tid[i], NULL, wait_main, &w[i]) == 0);
            }
            int polls = 0, refused = 0;
            while (!prep_unit_ready(&p, u)) {   /* the main thread's share: promote, poll */
                refused += prep_unit_submit(f.pool, f.t, &f.dev, &p, u, POOL_NOW, &err) != 0;
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
    }
    fixture_close(&f);
}

/* A unit never submitted, or cancelled before it started, is not waited
 * for: prep_unit_wait says so instead of taking in a result that is not
 * there. One compile thread: the first unit runs, the second queues. */
static void test_never_submitted(void)
{
    Fixture f;
    Prepared a, b;
    if (fixture_open(&f, 1) == 0 && render(&f, &a) == 0) {
        if (render(&f, &b) == 0) {
            EvoErr err = {{0}};
            int u = a.shape_unit[0];
            CHECK(prep_unit_wait(f.pool, &b, u, &err) == -1);
            CHECK_CONTAINS(err.msg, "never submitted");
            CHECK(prep_unit_submit(f.pool, f.t, &f.dev, &a, u, POOL_NOW, &err) == 0);
            CHECK(prep_unit_submit(f.pool, f.t, &f.dev, &b, u, POOL_SPEC, &err) == 0);
            prep_unit_cancel(&b, u);   /* queued behind a's, which holds the one thread */
            CHECK(b.units[u].state == PREP_UNIT_RENDERED);
            err.msg[0] = 0;
            CHECK(prep_unit_wait(f.pool, &b, u, &err) == -1);
            CHECK_CONTAINS(err.msg, "never submitted");
            CHECK_MSG(prep_unit_wait(f.pool, &a, u, &err) == 0, "%s", err.msg);
            CHECK(a.units[u].state == PREP_UNIT_DONE && a.units[u].res.ok);
            prep_free(&b);
        }
        prep_free(&a);
    }
    fixture_close(&f);
}

int main(void)
{
    RUN(test_two_waiters);
    RUN(test_never_submitted);
    return test_report();
}

/*
 * steady_slots: the GPU threads of the steady-state loop, one per slot:
 * each takes, whenever it is free, the oldest child whose units are
 * built (stage B first), judges that stage and hands the child back to
 * the loop thread. See steady_slots.h.
 */
#include "search/steady_slots.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "search/judge.h"

typedef struct SlotArg {
    Steady *S;
    int     slot;
} SlotArg;

void steady_wait_ms(pthread_cond_t *cv, pthread_mutex_t *m, int ms)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    ts.tv_nsec += (long)ms * 1000000L;
    ts.tv_sec += ts.tv_nsec / 1000000000L;
    ts.tv_nsec %= 1000000000L;
    pthread_cond_timedwait(cv, m, &ts);
}

/* ---- GPU threads -------------------------------------------------------- */

/* 1: slot judges x at no extra cost; 2: at little (see EvaluatorOps.home) */
static int can_take(const Steady *S, const Flight *x, int slot)
{
    const EvaluatorOps *ev = S->L->ev;
    return !ev->home ? 1 : ev->home(S->L->ev_ctx, &x->kid, slot, x->stage);
}

/* Under S->lock: the job for a free GPU on slot: the oldest child in
 * stage B whose units are built, else the oldest in stage A whose unit
 * is built (none while draining); else, in the same order, one that
 * slot takes at little cost (MPI: built by another agent of its compile
 * cache). NULL when none is ready; then the oldest of each kind that
 * waits has its units moved up (once). */
static Flight *pick(Steady *S, int slot)
{
    const EvaluatorOps *ev = S->L->ev;
    void *ctx = S->L->ev_ctx;
    Flight *a = NULL, *wait_a = NULL, *wait_b = NULL, *other_a = NULL, *other_b = NULL;
    for (int i = 0; i < S->nf; i++) {
        Flight *x = S->f[i];
        int queued_b = x->state == F_QUEUED_B && S->draining < 2, queued_a = x->state == F_QUEUED_A && !S->draining;
        if (!queued_a && !queued_b)
            continue;
        int take = can_take(S, x, slot);
        if (take == 2) {   /* ready where it was built, by can_take's contract */
            if (queued_b && !other_b)
                other_b = x;
            else if (queued_a && !other_a)
                other_a = x;
        } else if (take != 1) {
            continue;
        } else if (!ev->ready || ev->ready(ctx, &x->kid, x->stage)) {
            if (queued_b)
                return x;
            if (!a)
                a = x;
        } else if (queued_b && !wait_b) {
            wait_b = x;
        } else if (queued_a && !wait_a) {
            wait_a = x;
        }
    }
    if (a || other_b || other_a)
        return a ? a : other_b ? other_b : other_a;
    /* nothing ready: what this GPU would take first is built first */
    Flight *w[2] = {wait_b, wait_a};
    for (int k = 0; k < 2; k++)
        if (w[k] && ev->urge && !(w[k]->urged & (1 << w[k]->stage))) {
            w[k]->urged |= 1 << w[k]->stage;
            ev->urge(ctx, &w[k]->kid, w[k]->stage);
        }
    return NULL;
}

static void *slot_main(void *p)
{
    SlotArg *sa = p;
    Steady *S = sa->S;
    Loop *L = S->L;
    int slot = sa->slot;
    free(sa);
    pthread_mutex_lock(&S->lock);
    for (;;) {
        if (S->quit)
            break;
        Flight *j = pick(S, slot);
        if (!j) {
            double t0 = time_now_ms();
            steady_wait_ms(&S->work, &S->lock, POLL_MS);
            S->idle_s += (time_now_ms() - t0) / 1000.0;
            continue;
        }
        j->state = F_RUNNING;
        pthread_mutex_unlock(&S->lock);
        j->kid.gpu = slot;
        int next = 0, stage = j->stage;
        EvoErr err;
        double t0 = time_now_ms();
        int rc = stage == 1 ? loop_stage_a(L, &j->kid, j->parent, &next, &err) : loop_stage_b(L, &j->kid, &err);
        double dt = (time_now_ms() - t0) / 1000.0;
        pthread_mutex_lock(&S->lock);
        S->busy_s[slot] += dt;
        S->stage_s[stage != 1] += dt;
        S->stage_n[stage != 1]++;
        if (rc == EVAL_RETRY) {   /* this slot is gone: another takes the child */
            j->state = stage == 1 ? F_QUEUED_A : F_QUEUED_B;
            S->lost++;
            pthread_cond_broadcast(&S->work);
            break;
        }
        if (rc == 0 && stage == 1 && next) {
            j->stage = 2;
            j->state = F_QUEUED_B;
        } else {
            j->rc = rc;
            if (rc)
                j->err = err;
            j->state = F_DONE;
        }
        pthread_cond_broadcast(&S->work);
        pthread_cond_signal(&S->done);
    }
    S->running--;
    pthread_cond_signal(&S->done);
    pthread_mutex_unlock(&S->lock);
    return NULL;
}

int steady_slots_start(Steady *S, EvoErr *err)
{
    S->tids = xcalloc((size_t)S->nslots, sizeof(pthread_t));
    for (int i = 0; i < S->nslots; i++) {
        SlotArg *a = xmalloc(sizeof(*a));
        a->S = S;
        a->slot = i;
        pthread_mutex_lock(&S->lock);
        S->running++;
        pthread_mutex_unlock(&S->lock);
        int e = pthread_create(&S->tids[i], NULL, slot_main, a);
        if (e) {
            free(a);
            pthread_mutex_lock(&S->lock);
            S->running--;
            pthread_mutex_unlock(&S->lock);
            S->nslots = i;
            return err_set(err, "pthread_create: %s", strerror(e));
        }
    }
    return 0;
}

void steady_slots_stop(Steady *S)
{
    pthread_mutex_lock(&S->lock);
    S->quit = 1;
    pthread_cond_broadcast(&S->work);
    pthread_mutex_unlock(&S->lock);
    for (int i = 0; i < S->nslots; i++)
        pthread_join(S->tids[i], NULL);
    free(S->tids);
    S->tids = NULL;
}

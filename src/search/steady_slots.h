/*
 * steady_slots: the steady-state loop's GPU threads.
 */
#ifndef EVO_SEARCH_STEADY_SLOTS_H
#define EVO_SEARCH_STEADY_SLOTS_H

#include <pthread.h>

#include "search/steady_state.h"

/* Start one GPU thread per slot of S (S->nslots), each counted in
 * S->running until it ends (quit, or its slot lost: S->lost). 0, or -1
 * with err when a thread cannot start (S->nslots is then the number
 * started). */
int steady_slots_start(Steady *S, EvoErr *err);
/* Tell the GPU threads to quit and join them. */
void steady_slots_stop(Steady *S);
/* Wait on cv (m held) for at most ms milliseconds. */
void steady_wait_ms(pthread_cond_t *cv, pthread_mutex_t *m, int ms);

#endif

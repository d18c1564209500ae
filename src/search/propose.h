/*
 * propose: a generation's proposals, by strategy.
 */
#ifndef EVO_SEARCH_PROPOSE_H
#define EVO_SEARCH_PROPOSE_H

#include "search/loop.h"

/* Propose up to want children of generation gen into kids[] (done[i] = 1:
 * already committed); *exhausted (may be NULL) = 1 when fewer because the
 * valid space is exhausted. Returns the count or -1. */
int loop_propose(Loop *L, int64_t gen, CandidateRecord *pop, int npop, Child *kids, int want, int *done,
                 int *exhausted, EvoErr *err);

#endif

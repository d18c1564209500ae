/*
 * warm: generation 0 seeded from earlier runs of the task on the device.
 */
#ifndef EVO_SEARCH_WARM_H
#define EVO_SEARCH_WARM_H

#include "search/loop.h"

/* Generation 0's seeds from earlier runs of the task on the device, into
 * kids[0..) (at most half of want), with done[] as loop_propose; the
 * summary's warm_seeded and warm_runs say how many and from where. The
 * count or -1. */
int loop_warm_propose(Loop *L, Child *kids, int want, int *done, EvoErr *err);

#endif

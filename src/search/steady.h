/*
 * steady: the steady-state loop (the default mode).
 */
#ifndef EVO_SEARCH_STEADY_H
#define EVO_SEARCH_STEADY_H

#include "search/loop.h"

/* The steady-state loop after the baseline: children proposed from the
 * population as it stands, kept in flight up to the window, judged on
 * whichever GPU is free, committed as they are decided; generation g is
 * the g-th wave of proposals. 0 (also when stopped) or -1. */
int loop_steady(Loop *L, EvoErr *err);

#endif

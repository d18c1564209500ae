/*
 * watchdog: how long the orchestrator waits for a worker's reply before it
 * judges the candidate `timeout`, kills the worker and starts a fresh one.
 * A hung kernel (an endless loop an LLM wrote) holds the GPU until then, so
 * the wait follows what the candidate's parent measured on the same request:
 *
 *     deadline = 20 x the parent's time, at least 2 s, at most the ceiling
 *                less the time to kill and reap the worker
 *
 * and is that longest wait when there is no parent measurement (the
 * baseline, check --gpu, bench, a parent judged by an earlier process) and
 * for a worker's first gate of a shape after it started (it builds that
 * shape's inputs and reference outputs first, which the parent's time may
 * not hold). The
 * ceiling is 10 s, or EVOENG_WATCHDOG_S seconds (0.5 to 3600) for a task
 * whose kernels or reference are slow enough to need more.
 */
#ifndef EVO_WATCHDOG_H
#define EVO_WATCHDOG_H

#include "util.h"

#define WATCHDOG_FACTOR     20.0      /* x the parent's time */
#define WATCHDOG_FLOOR_MS   2000.0
#define WATCHDOG_CEILING_MS 10000.0   /* default; EVOENG_WATCHDOG_S overrides */
#define WATCHDOG_REAP_MS    250.0     /* kept from the ceiling for the kill and
                                       * reap (80 ms measured on an H200), at
                                       * most a tenth of it */

/* 0, or -1 with err when EVOENG_WATCHDOG_S is set to anything but a number
 * of seconds from 0.5 to 3600. */
int watchdog_env_check(EvoErr *err);

/* The ceiling in ms: EVOENG_WATCHDOG_S when valid, else 10000. */
double watchdog_ceiling_ms(void);

/* The deadline of a request whose parent took parent_ms on the same
 * request (<= 0 or NaN: unknown): WATCHDOG_FACTOR x parent_ms clamped to
 * [min(WATCHDOG_FLOOR_MS, W), W], or W, where W is the ceiling less
 * min(WATCHDOG_REAP_MS, ceiling / 10): a hung candidate's verdict, kill
 * and reap included, comes within the ceiling. */
double watchdog_ms(double parent_ms);

#endif

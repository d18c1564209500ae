/*
 * watchdog: the deadline of a worker request. See watchdog.h.
 */
#include "gpu/watchdog.h"

#include <math.h>
#include <stdlib.h>

/* EVOENG_WATCHDOG_S in ms: 1 and *ms when valid, 0 when unset, -1 when bad. */
static int env_ceiling(double *ms)
{
    const char *v = getenv("EVOENG_WATCHDOG_S");
    if (!v || !*v)
        return 0;
    char *end;
    double s = strtod(v, &end);
    if (*end || !(s >= 0.5 && s <= 3600))
        return -1;
    *ms = s * 1000.0;
    return 1;
}

int watchdog_env_check(EvoErr *err)
{
    double ms;
    if (env_ceiling(&ms) < 0)
        return err_set(err, "EVOENG_WATCHDOG_S='%s': expected the most seconds a candidate may hold the GPU "
                            "without replying, from 0.5 to 3600 (default 10)", getenv("EVOENG_WATCHDOG_S"));
    return 0;
}

double watchdog_ceiling_ms(void)
{
    double ms;
    return env_ceiling(&ms) > 0 ? ms : WATCHDOG_CEILING_MS;
}

/* The longest wait for a reply: the ceiling less the time to kill and reap
 * the worker, so that the verdict, not only the wait, comes within it. */
static double longest_wait_ms(void)
{
    double ceiling = watchdog_ceiling_ms();
    double reap = WATCHDOG_REAP_MS < ceiling / 10 ? WATCHDOG_REAP_MS : ceiling / 10;
    return ceiling - reap;
}

double watchdog_ms(double parent_ms)
{
    double ceiling = longest_wait_ms();
    if (!(parent_ms > 0))
        return ceiling;
    double floor = WATCHDOG_FLOOR_MS < ceiling ? WATCHDOG_FLOOR_MS : ceiling;
    double t = WATCHDOG_FACTOR * parent_ms;
    return t < floor ? floor : t > ceiling ? ceiling : t;
}

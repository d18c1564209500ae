/*
 * taper: when a time-limited steady-state run stops proposing. See
 * taper.h.
 */
#include "search/taper.h"

#include <string.h>

void taper_init(Taper *tp, int commits, int fill)
{
    memset(tp, 0, sizeof(*tp));
    tp->from = commits + (fill > 0 ? fill : 0);
}

void taper_sample(Taper *tp, double now_ms, int commits)
{
    if (commits < tp->from)
        return;
    int last = (tp->i + TAPER_SAMPLES - 1) % TAPER_SAMPLES;
    if (tp->n > 0 && now_ms - tp->t[last] < TAPER_STEP_MS)
        return;
    tp->t[tp->i] = now_ms;
    tp->c[tp->i] = commits;
    tp->i = (tp->i + 1) % TAPER_SAMPLES;
    if (tp->n < TAPER_SAMPLES)
        tp->n++;
}

int taper_hold(Taper *tp, double left_ms, int in_flight)
{
    if (tp->n < 2)
        return 0;
    int first = (tp->i + TAPER_SAMPLES - tp->n) % TAPER_SAMPLES, last = (tp->i + TAPER_SAMPLES - 1) % TAPER_SAMPLES;
    double span = tp->t[last] - tp->t[first];
    int done = tp->c[last] - tp->c[first];
    if (span < TAPER_MIN_MS || done <= 0)
        return 0;
    int hold = in_flight * span / done >= left_ms;
    if (hold && tp->held_ms == 0)
        tp->held_ms = left_ms > 1e-3 ? left_ms : 1e-3;
    return hold;
}

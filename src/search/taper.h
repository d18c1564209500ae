/*
 * taper: when a time-limited steady-state run (steady.c) stops proposing.
 * The loop samples its commit rate once a second; before each wave it
 * asks whether the children in flight would already take the run to its
 * limit at that rate. A child proposed then would be dropped unjudged at
 * the limit, and its NVRTC units would take cores from the children that
 * can still be judged, so the flights taper off with the time left.
 * Samples start once the run has committed its first window of children:
 * while the pipeline fills (the baseline, generation 0 gated on every
 * shape), commits lag proposals and the rate reads far too low.
 */
#ifndef EVO_SEARCH_TAPER_H
#define EVO_SEARCH_TAPER_H

#define TAPER_SAMPLES  16     /* the ring: the last 15 s of one-second samples */
#define TAPER_STEP_MS  1000.0 /* at most one sample a second */
#define TAPER_MIN_MS   4000.0 /* the span of samples the rate needs at least */

typedef struct Taper {
    double t[TAPER_SAMPLES];  /* sample times, ms */
    int    c[TAPER_SAMPLES];  /* commits at each */
    int    i, n;              /* next slot, samples held */
    int    from;              /* commits from which samples are taken */
    double held_ms;           /* the time left when a wave was first held back (0: never) */
} Taper;

/* Start tp for a run that has `commits` committed now and keeps `fill`
 * children in flight (its window): sampling starts at commits + fill. */
void taper_init(Taper *tp, int commits, int fill);

/* Record the run's commits at time now_ms (ms, any fixed origin): kept
 * when sampling has started and the last sample is TAPER_STEP_MS old. */
void taper_sample(Taper *tp, double now_ms, int commits);

/* Hold the next wave back? 1 when `in_flight` children, at the commit
 * rate of the samples (at least TAPER_MIN_MS of them), take at least
 * left_ms to drain; 0 otherwise, or without enough samples. The first
 * hold sets tp->held_ms to left_ms (at least 1e-3). */
int taper_hold(Taper *tp, double left_ms, int in_flight);

#endif

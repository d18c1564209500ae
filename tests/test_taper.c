/* Unit tests for taper (src/search/taper.c): when a time-limited steady
 * run holds its next wave back. Times in ms, commits counted from 0. */
#include "testhelp.h"

#include "search/taper.h"

/* Samples once a second from t0 to t1 (inclusive) at `rate` commits a
 * second, starting from *commits. */
static void feed(Taper *tp, double t0, double t1, double rate, int *commits)
{
    for (double t = t0; t <= t1 + 1e-9; t += 1000) {
        taper_sample(tp, t, *commits);
        *commits += (int)rate;
    }
}

/* At a steady 20 commits a second, 80 children drain in 4 s: held with
 * 3 s left, not with 5 s; the first hold sets held_ms. */
static void test_steady_rate(void)
{
    Taper tp;
    taper_init(&tp, 0, 0);
    int c = 0;
    feed(&tp, 0, 5000, 20, &c);
    CHECK(!taper_hold(&tp, 5000, 80));
    CHECK(tp.held_ms == 0);
    CHECK(taper_hold(&tp, 3000, 80));
    CHECK_MSG(fabs(tp.held_ms - 3000) < 1e-9, "held_ms %.1f", tp.held_ms);
    CHECK(!taper_hold(&tp, 3000, 50));   /* 2.5 s of flights */
    CHECK(taper_hold(&tp, 1000, 50));
    CHECK_MSG(fabs(tp.held_ms - 3000) < 1e-9, "held_ms moved to %.1f", tp.held_ms);
    CHECK(taper_hold(&tp, -50, 1));      /* past the limit: held; held_ms kept */
}

/* Too few samples (under TAPER_MIN_MS, or one), or none committed: no
 * hold, however many are in flight. */
static void test_too_little(void)
{
    Taper tp;
    taper_init(&tp, 0, 0);
    CHECK(!taper_hold(&tp, 1, 100000));
    int c = 0;
    feed(&tp, 0, 3000, 20, &c);
    CHECK(!taper_hold(&tp, 1, 100000));
    Taper z;
    taper_init(&z, 7, 0);
    for (double t = 0; t <= 8000; t += 1000)
        taper_sample(&z, t, 7);
    CHECK(!taper_hold(&z, 1, 100000));
    /* samples closer than TAPER_STEP_MS are not kept */
    Taper q;
    taper_init(&q, 0, 0);
    for (int k = 0; k < 100; k++)
        taper_sample(&q, k * 50.0, k);
    CHECK_MSG(q.n == 5, "%d samples in 4.95 s", q.n);
}

/* The pipeline's fill: 132 in flight, 2 commits a second for the first
 * 10 s (baseline, generation 0 on every shape), then 19 a second. Read
 * from the start, the rate would hold the run 60 s before a 75 s limit;
 * sampling from the first window's commits, it holds only when 132 at
 * 19 a second (about 7 s) reach the time left. */
static void test_fill_ignored(void)
{
    Taper early, tp;
    taper_init(&early, 0, 0);
    taper_init(&tp, 0, 132);
    int c1 = 0, c2 = 0;
    feed(&early, 0, 10000, 2, &c1);
    feed(&tp, 0, 10000, 2, &c2);
    CHECK(taper_hold(&early, 65000, 132));   /* what reading the fill does */
    CHECK(!taper_hold(&tp, 65000, 132));
    CHECK_MSG(tp.n == 0, "%d samples before the first window was committed", tp.n);
    feed(&tp, 11000, 30000, 19, &c2);
    CHECK(!taper_hold(&tp, 45000, 132));
    CHECK(!taper_hold(&tp, 7500, 132));
    CHECK(taper_hold(&tp, 6500, 132));
}

/* The ring keeps the last TAPER_SAMPLES: after 30 s at 10 a second and
 * 15 s at 40, the rate is 40 (100 in flight: 2.5 s). */
static void test_ring(void)
{
    Taper tp;
    taper_init(&tp, 0, 0);
    int c = 0;
    feed(&tp, 0, 30000, 10, &c);
    feed(&tp, 31000, 46000, 40, &c);
    CHECK(tp.n == TAPER_SAMPLES);
    CHECK(!taper_hold(&tp, 2600, 100));
    CHECK(taper_hold(&tp, 2400, 100));
}

int main(void)
{
    RUN(test_steady_rate);
    RUN(test_too_little);
    RUN(test_fill_ignored);
    RUN(test_ring);
    return test_report();
}

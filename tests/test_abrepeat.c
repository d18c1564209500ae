/* Unit test: the statistics of `evoeng bench --repeat` (abrepeat.h) on
 * arrays whose figures are worked out by hand. */
#include "testhelp.h"
#include "cli/abrepeat.h"

#include <math.h>

static void test_interpolated_p95(void)
{
    /* |ratio - 1| sorted: 0.001 0.002 0.003 0.004; p95 sits at 0.95 * 3 =
     * 2.85 between the 3rd and 4th: 0.003 + 0.85 * 0.001. */
    double r[4] = {0.999, 1.002, 0.997, 1.004};
    AbRepeatStats st;
    abrepeat_stats(r, 4, 0.02, &st);
    CHECK(st.n == 4 && st.failed == 0 && st.reverts == 0);
    CHECK_NEAR(st.median, (0.999 + 1.002) / 2, 1e-12);
    CHECK_NEAR(st.p95_dev, 0.00385, 1e-12);
    CHECK_NEAR(st.max_dev, 0.004, 1e-12);
    CHECK_NEAR(st.min, 0.997, 1e-15);
    CHECK_NEAR(st.max, 1.004, 1e-15);
    CHECK(abrepeat_aa_pass(&st, 0.005));
    CHECK(!abrepeat_aa_pass(&st, 0.003));   /* p95 over the bar */
}

static void test_reverts_and_failures(void)
{
    /* 1 + 0.0011 k, k = 0..20, then a failed comparison (NaN). */
    double r[22];
    for (int k = 0; k <= 20; k++)
        r[k] = 1 + 0.0011 * k;
    r[21] = NAN;
    AbRepeatStats st;
    abrepeat_stats(r, 21, 0.02, &st);
    CHECK(st.n == 21 && st.failed == 0);
    CHECK(st.reverts == 2);                  /* 1.0209 and 1.022 are more than 2% slower */
    CHECK_NEAR(st.median, 1.011, 1e-12);
    CHECK_NEAR(st.p95_dev, 0.0209, 1e-12);  /* 0.95 * 20 = 19: exactly the 20th */
    CHECK_NEAR(st.max_dev, 0.022, 1e-12);
    CHECK(!abrepeat_aa_pass(&st, 0.05));    /* a false revert fails the A/A bar */
    abrepeat_stats(r, 22, 0.02, &st);
    CHECK(st.n == 21 && st.failed == 1);
    CHECK(st.reverts == 3);                  /* the revert rule reverts NaN too */
    CHECK_NEAR(st.median, 1.011, 1e-12);
    abrepeat_stats(r, 21, 0.05, &st);
    CHECK(st.reverts == 0);                  /* the threshold is the caller's */
}

static void test_faster_side_never_reverts(void)
{
    double r[3] = {0.90, 0.95, 0.97};
    AbRepeatStats st;
    abrepeat_stats(r, 3, 0.02, &st);
    CHECK(st.reverts == 0);
    CHECK_NEAR(st.max_dev, 0.10, 1e-12);
    CHECK_NEAR(st.median, 0.95, 1e-15);
}

static void test_empty(void)
{
    AbRepeatStats st;
    abrepeat_stats(NULL, 0, 0.02, &st);
    CHECK(st.n == 0 && st.failed == 0 && st.reverts == 0);
    CHECK(isnan(st.median) && isnan(st.p95_dev));
    CHECK(!abrepeat_aa_pass(&st, 0.005));
}

int main(void)
{
    RUN(test_interpolated_p95);
    RUN(test_reverts_and_failures);
    RUN(test_faster_side_never_reverts);
    RUN(test_empty);
    return test_report();
}

/* Unit tests of the CPU implementations in cpuref.h on cases whose answer
 * is known by hand. */
#include "testhelp.h"
#include "cpuref.h"

static void test_attention_cases(void)
{
    /* S = 1: the only key is the query's own; O = V. */
    double q[4] = {1, 2, 3, 4}, k[4] = {4, 3, 2, 1}, v[4] = {0.5, -1, 2, 7}, o[4];
    cpu_attention(q, k, v, o, 1, 1, 1, 4, 0);
    for (int d = 0; d < 4; d++)
        CHECK_NEAR(o[d], v[d], 1e-15);
    /* Identical keys: uniform weights, O = mean of V over visible keys. */
    enum { S = 5, D = 2 };
    double Q[S * D], K[S * D], V[S * D], O[S * D];
    for (int i = 0; i < S; i++) {
        Q[i * D] = i; Q[i * D + 1] = -i;
        K[i * D] = 1; K[i * D + 1] = 1;
        V[i * D] = i; V[i * D + 1] = 10.0 * i;
    }
    cpu_attention(Q, K, V, O, 1, 1, S, D, 0);
    for (int i = 0; i < S; i++) {
        CHECK_NEAR(O[i * D], 2.0, 1e-12);       /* mean of 0..4 */
        CHECK_NEAR(O[i * D + 1], 20.0, 1e-12);
    }
    cpu_attention(Q, K, V, O, 1, 1, S, D, 1);   /* causal: mean of 0..i */
    for (int i = 0; i < S; i++)
        CHECK_NEAR(O[i * D], i / 2.0, 1e-12);
    /* Two keys, scores 0 and ln 3 * sqrt(D): weights 1/4 and 3/4. */
    double q2[2] = {1, 0}, k2[4] = {0, 0, log(3.0) * sqrt(2.0), 0}, v2[4] = {4, 0, 8, 0}, o2[4];
    double qq[4] = {1, 0, 1, 0};
    (void)q2;
    cpu_attention(qq, k2, v2, o2, 1, 1, 2, 2, 0);
    CHECK_NEAR(o2[0], 0.25 * 4 + 0.75 * 8, 1e-12);
}

static void test_softmax_cases(void)
{
    double x[6] = {0, 0, 0, 1, 2, 3}, y[6];
    cpu_softmax(x, y, 2, 3);
    for (int c = 0; c < 3; c++)
        CHECK_NEAR(y[c], 1.0 / 3, 1e-15);
    double e = exp(1.0), s = 1 + e + e * e;
    CHECK_NEAR(y[3], 1 / s, 1e-15);
    CHECK_NEAR(y[5], e * e / s, 1e-15);
    double big[2] = {1000, 1000}, yb[2];
    cpu_softmax(big, yb, 1, 2);   /* no overflow */
    CHECK_NEAR(yb[0], 0.5, 1e-15);
}

static void test_triad_cases(void)
{
    double b[3] = {1, -2, 0.5}, c[3] = {2, 1, -0.5}, a[3];
    cpu_triad(b, c, a, 3, 3);
    CHECK_NEAR(a[0], 7, 1e-15);
    CHECK_NEAR(a[1], 1, 1e-15);
    CHECK_NEAR(a[2], -1, 1e-15);
}

int main(void)
{
    RUN(test_attention_cases);
    RUN(test_softmax_cases);
    RUN(test_triad_cases);
    return test_report();
}

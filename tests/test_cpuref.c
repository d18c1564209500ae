/* Unit tests of the CPU implementations in cpuref.h on cases whose answer
 * is known by hand, and of the attention task's tolerances against the
 * rounding its kernels do (fp16 and bf16). */
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

/* Grouped-query heads and SQ < S, against a naive loop written out here:
 * query head h reads K/V head h / (H / HKV), and causal query i (of SQ)
 * sees keys j <= i + S - SQ. */
static void test_attention_gqa(void)
{
    enum { B = 2, H = 4, S = 7, D = 3 };
    double q[B * H * S * D], k[B * H * S * D], v[B * H * S * D], o[B * H * S * D], w[S];
    unsigned st = 12345;
    for (int i = 0; i < B * H * S * D; i++) {
        st = st * 1103515245u + 12345u;
        q[i] = (double)(st >> 16 & 1023) / 256.0 - 2;
        k[i] = (double)(st >> 6 & 1023) / 256.0 - 2;
        v[i] = (double)(st >> 3 & 1023) / 64.0 - 8;
    }
    static const int hkvs[3] = {4, 2, 1}, sqs[4] = {7, 1, 3, 5};
    int n_cases = 0;
    for (int a = 0; a < 3; a++)
        for (int c = 0; c < 4; c++)
            for (int causal = 0; causal < 2; causal++) {
                int HKV = hkvs[a], SQ = sqs[c], G = H / HKV;
                cpu_attention_gqa(q, k, v, o, B, H, HKV, SQ, S, D, causal);
                double worst = 0;
                for (int b = 0; b < B; b++)
                    for (int h = 0; h < H; h++)
                        for (int i = 0; i < SQ; i++) {
                            const double *qi = q + (((size_t)b * H + h) * SQ + i) * D;
                            const double *kh = k + ((size_t)b * HKV + h / G) * S * D;
                            const double *vh = v + ((size_t)b * HKV + h / G) * S * D;
                            int last = causal ? S - SQ + i : S - 1;   /* the last key query i sees */
                            double l = 0;
                            for (int j = 0; j <= last; j++) {
                                double x = 0;
                                for (int d = 0; d < D; d++)
                                    x += qi[d] * kh[j * D + d];
                                w[j] = exp(x / sqrt((double)D));   /* |x| < 12: no max needed */
                                l += w[j];
                            }
                            for (int d = 0; d < D; d++) {
                                double want = 0;
                                for (int j = 0; j <= last; j++)
                                    want += w[j] * vh[j * D + d] / l;
                                double e = fabs(o[(((size_t)b * H + h) * SQ + i) * D + d] - want);
                                worst = e > worst || e != e ? e : worst;
                            }
                        }
                CHECK_MSG(worst < 1e-12, "HKV=%d SQ=%d causal=%d: off by %g", HKV, SQ, causal, worst);
                n_cases++;
            }
    CHECK(n_cases == 24);
    /* SQ = 1, causal: the one query is the last position and sees every key,
     * the same as without the mask; with SQ = S causal query 0 sees key 0 only */
    double o1[B * H * D], o2[B * H * D];
    cpu_attention_gqa(q, k, v, o1, B, H, 2, 1, S, D, 1);
    cpu_attention_gqa(q, k, v, o2, B, H, 2, 1, S, D, 0);
    for (int i = 0; i < B * H * D; i++)
        CHECK_NEAR(o1[i], o2[i], 1e-15);
    cpu_attention_gqa(q, k, v, o, 1, 1, 1, S, S, D, 1);
    for (int d = 0; d < D; d++)
        CHECK_NEAR(o[d], v[d], 1e-15);
}

static void test_round_cases(void)
{
    CHECK(cpu_round_bf16(1 + ldexp(1, -8)) == 1);                       /* a tie: to even */
    CHECK(cpu_round_bf16(1 + 3 * ldexp(1, -8)) == 1 + ldexp(1, -6));    /* a tie: to even, up */
    CHECK(cpu_round_bf16(1 + ldexp(1, -8) + ldexp(1, -20)) == 1 + ldexp(1, -7));
    CHECK(cpu_round_bf16(-3.0) == -3.0);
    CHECK(cpu_round_bf16(1e38) == ldexp(75, 120));                       /* 1e38 = 74.98.. * 2^120 */
    CHECK(cpu_round_bf16(ldexp(1.5, -130)) == ldexp(1.5, -130));        /* a subnormal */
    CHECK(cpu_round_f16(1 + ldexp(1, -11)) == 1);
    CHECK(cpu_round_f16(2049) == 2048);
    CHECK(cpu_round_f16(65519) == 65504);
    CHECK(isinf(cpu_round_f16(65520)));
    CHECK(cpu_round_f16(ldexp(3, -26)) == ldexp(1, -24));               /* subnormal step 2^-24, tie to even */
}

/* N(0, std^2), a rare wide component with probability p: the task's
 * normal, large and outlier profiles (xorshift and Box-Muller). */
static double draw(unsigned long long *st, double std, double p)
{
    double u[3];
    for (int i = 0; i < 3; i++) {
        *st ^= *st << 13;
        *st ^= *st >> 7;
        *st ^= *st << 17;
        u[i] = ((double)(*st >> 11) + 0.5) / 9007199254740992.0;
    }
    double z = sqrt(-2 * log(u[0])) * cos(2 * M_PI * u[1]);
    return std * z + (u[2] < p ? 10 * sqrt(-2 * log(u[1])) * sin(2 * M_PI * u[0]) : 0);
}

/* The attention task's tolerances (task.json "tolerance", by DTYPE) hold
 * for what the kernels' rounding does: the tiled model with P and O
 * rounded to the dtype against the exact result rounded to it (as the
 * reference writes O), with inputs in the dtype, on the normal, large
 * (Q, K of std 4), outlier and peaky (query rows scaled by exp(N(0, 1)))
 * profiles, causal and not: at most half the tolerance (task.json's
 * comment quotes the figures). */
static void test_attention_rounding(void)
{
    enum { B = 1, H = 2, S = 300, D = 64, N = B * H * S * D };
    static const struct { const char *name; double (*round)(double); double tol; } dt[2] = {
        {"fp16", cpu_round_f16, 0.01}, {"bf16", cpu_round_bf16, 0.02}};
    double *q = malloc(N * sizeof(double)), *k = malloc(N * sizeof(double)), *v = malloc(N * sizeof(double));
    double *want = malloc(N * sizeof(double)), *got = malloc(N * sizeof(double));
    for (int t = 0; t < 2; t++) {
        double worst = 0;
        for (int prof = 0; prof < 4; prof++)
            for (int causal = 0; causal < 2; causal++) {
                unsigned long long st = 0x9E3779B97F4A7C15ull + (unsigned long long)(prof * 2 + causal);
                double qk = prof == 1 ? 4 : 1, p = prof == 2 ? 0.001 : 0;
                double row = 1;   /* peaky: a factor per query row */
                for (int i = 0; i < N; i++) {
                    if (prof == 3 && i % D == 0)
                        row = exp(draw(&st, 1, 0));
                    q[i] = dt[t].round(draw(&st, qk, p) * row);
                    k[i] = dt[t].round(draw(&st, qk, p));
                    v[i] = dt[t].round(draw(&st, 1, p));
                }
                cpu_attention(q, k, v, want, B, H, S, D, causal);
                cpu_attention_tiled(q, k, v, got, B, H, S, D, causal, 128, dt[t].round);
                for (int i = 0; i < N; i++) {
                    double r = dt[t].round(want[i]), e = fabs(got[i] - r) / (dt[t].tol + dt[t].tol * fabs(r));
                    worst = e > worst || e != e ? e : worst;
                }
            }
        printf("     %s: P and O rounded, worst error %.3f of the tolerance %g + %g |O|\n", dt[t].name, worst,
               dt[t].tol, dt[t].tol);
        CHECK_MSG(worst <= 0.5, "%s: %.3f of the tolerance", dt[t].name, worst);
    }
    free(q);
    free(k);
    free(v);
    free(want);
    free(got);
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
    RUN(test_attention_gqa);
    RUN(test_round_cases);
    RUN(test_attention_rounding);
    RUN(test_softmax_cases);
    RUN(test_triad_cases);
    return test_report();
}

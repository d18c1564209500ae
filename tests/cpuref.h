/*
 * cpuref: plain CPU implementations (double precision) of what the
 * shipped tasks' reference kernels compute. The unit tests check these on
 * hand-checkable cases; the gpu suite (test_gpu_ref.c) checks the
 * reference kernels against them on small shapes, so the gate's notion of
 * "correct" is itself proven.
 */
#ifndef EVO_TESTS_CPUREF_H
#define EVO_TESTS_CPUREF_H

#include <math.h>
#include <stdlib.h>

/* O[b,h,i,:] = softmax_j(Q[b,h,i,:] . K[b,h/G,j,:] / sqrt(D)) V[b,h/G,j,:]
 * with G = H / HKV query heads a K/V head and j <= i + S - SQ when causal
 * (FlashAttention's alignment: the SQ queries are the last of the S
 * positions). Layout [B, H, SQ, D] for Q and O, [B, HKV, S, D] for K, V. */
static inline void cpu_attention_gqa(const double *q, const double *k, const double *v, double *o, int B, int H,
                                     int HKV, int SQ, int S, int D, int causal)
{
    double *p = malloc((size_t)S * sizeof(double));
    double scale = 1.0 / sqrt((double)D);
    for (int bh = 0; bh < B * H; bh++) {
        size_t kv = (size_t)(bh / (H / HKV)) * S * D;   /* b * HKV + h / G */
        const double *Q = q + (size_t)bh * SQ * D, *K = k + kv, *V = v + kv;
        double *O = o + (size_t)bh * SQ * D;
        for (int i = 0; i < SQ; i++) {
            int n = causal ? i + S - SQ + 1 : S;
            double m = -INFINITY, l = 0;
            for (int j = 0; j < n; j++) {
                double s = 0;
                for (int d = 0; d < D; d++)
                    s += Q[(size_t)i * D + d] * K[(size_t)j * D + d];
                p[j] = s * scale;
                if (p[j] > m)
                    m = p[j];
            }
            for (int j = 0; j < n; j++) {
                p[j] = exp(p[j] - m);
                l += p[j];
            }
            for (int d = 0; d < D; d++) {
                double acc = 0;
                for (int j = 0; j < n; j++)
                    acc += p[j] * V[(size_t)j * D + d];
                O[(size_t)i * D + d] = acc / l;
            }
        }
    }
    free(p);
}

/* As cpu_attention_gqa with HKV = H and SQ = S (multi-head, layout [B, H, S, D]). */
static inline void cpu_attention(const double *q, const double *k, const double *v, double *o, int B, int H,
                                 int S, int D, int causal)
{
    cpu_attention_gqa(q, k, v, o, B, H, H, S, S, D, causal);
}

/* x rounded to nearest even with `bits` significant bits, the exponent
 * of frexp at least emin (below it: the subnormals' fixed step) and
 * magnitudes of max or more (0: no limit) to infinity: cpu_round_f16 and
 * cpu_round_bf16 are fp16 and bf16 as the kernels and the gate round. */
static inline double cpu_round_bits(double x, int bits, int emin, double max)
{
    int e;
    if (x == 0 || !isfinite(x))
        return x;
    frexp(x, &e);
    double q = ldexp(1.0, (e < emin ? emin : e) - bits), r = nearbyint(x / q) * q;
    return max > 0 && fabs(r) >= max ? copysign(INFINITY, r) : r;
}

static inline double cpu_round_f16(double x)
{
    return cpu_round_bits(x, 11, -13, 65520);   /* 65520 and up round to inf */
}

static inline double cpu_round_bf16(double x)
{
    return cpu_round_bits(x, 8, -125, 0);       /* fp32's range */
}

/* What a tiled 16-bit kernel computes, in double otherwise: inputs as
 * given (already rounded to the dtype), an online softmax over tiles of
 * `tile` keys (running max, rescaled sum and accumulators), P rounded with
 * round() before P V (as the kernels pack it for the tensor cores), the
 * row sum l over the unrounded P, O rounded at the end. Layout and causal
 * as cpu_attention. The tolerance of the attention task is checked
 * against this model (test_cpuref.c). */
static inline void cpu_attention_tiled(const double *q, const double *k, const double *v, double *o, int B, int H,
                                       int S, int D, int causal, int tile, double (*round)(double))
{
    double *s = malloc((size_t)S * sizeof(double)), *acc = malloc((size_t)D * sizeof(double));
    double scale = 1.0 / sqrt((double)D);
    for (int bh = 0; bh < B * H; bh++) {
        const double *Q = q + (size_t)bh * S * D, *K = k + (size_t)bh * S * D, *V = v + (size_t)bh * S * D;
        for (int i = 0; i < S; i++) {
            int n = causal ? i + 1 : S;
            double m = -INFINITY, l = 0;
            for (int d = 0; d < D; d++)
                acc[d] = 0;
            for (int j0 = 0; j0 < n; j0 += tile) {
                int j1 = j0 + tile < n ? j0 + tile : n;
                double mt = m;
                for (int j = j0; j < j1; j++) {
                    double x = 0;
                    for (int d = 0; d < D; d++)
                        x += Q[(size_t)i * D + d] * K[(size_t)j * D + d];
                    s[j] = x * scale;
                    mt = s[j] > mt ? s[j] : mt;
                }
                double alpha = exp(m - mt);   /* 0 on the first tile */
                l *= alpha;
                for (int d = 0; d < D; d++)
                    acc[d] *= alpha;
                m = mt;
                for (int j = j0; j < j1; j++) {
                    double p = exp(s[j] - m), pr = round(p);
                    l += p;
                    for (int d = 0; d < D; d++)
                        acc[d] += pr * V[(size_t)j * D + d];
                }
            }
            for (int d = 0; d < D; d++)
                o[((size_t)bh * S + i) * D + d] = round(acc[d] / l);
        }
    }
    free(s);
    free(acc);
}

/* Y[r,:] = exp(X[r,:] - max) / sum, rows of `cols` elements. */
static inline void cpu_softmax(const double *x, double *y, int rows, int cols)
{
    for (int r = 0; r < rows; r++) {
        const double *X = x + (size_t)r * cols;
        double *Y = y + (size_t)r * cols;
        double m = -INFINITY, s = 0;
        for (int c = 0; c < cols; c++)
            if (X[c] > m)
                m = X[c];
        for (int c = 0; c < cols; c++)
            s += (Y[c] = exp(X[c] - m));
        for (int c = 0; c < cols; c++)
            Y[c] /= s;
    }
}

/* STREAM triad: A[i] = B[i] + s C[i]. */
static inline void cpu_triad(const double *b, const double *c, double *a, double s, long n)
{
    for (long i = 0; i < n; i++)
        a[i] = b[i] + s * c[i];
}

#endif

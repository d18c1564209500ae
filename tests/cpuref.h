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

/* O[b,h,i,:] = softmax_j(Q[b,h,i,:] . K[b,h,j,:] / sqrt(D)) V[b,h,j,:],
 * j <= i when causal. Layout [B, H, S, D]. */
static inline void cpu_attention(const double *q, const double *k, const double *v, double *o, int B, int H,
                                 int S, int D, int causal)
{
    double *p = malloc((size_t)S * sizeof(double));
    double scale = 1.0 / sqrt((double)D);
    for (int bh = 0; bh < B * H; bh++) {
        const double *Q = q + (size_t)bh * S * D, *K = k + (size_t)bh * S * D, *V = v + (size_t)bh * S * D;
        double *O = o + (size_t)bh * S * D;
        for (int i = 0; i < S; i++) {
            int n = causal ? i + 1 : S;
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

/*
 * reference.cu -- evoeng reference for the attention task: naive, obviously
 * correct fp16 or bf16 attention forward in fp32 arithmetic.
 *
 * Layout [B, H, SQ, D] for Q and O, [B, HKV, S, D] for K and V, fp16
 * (DTYPE 0) or bf16 (DTYPE 1); query head bh (of B*H) reads K/V head
 * bh / G, G = H / HKV.  One CTA per (query row i, b*h pair): grid = [SQ,
 * B*H], any block size (128 in task.json), dynamic shared memory S * 4
 * bytes for the fp32 score row.  Steps: s_j = q_i . k_j * scale for every
 * visible key j (all j when CAUSAL == 0, j <= i + S - SQ when CAUSAL ==
 * 1: the queries are the last SQ of the S positions), row max, p_j = exp(s_j - max), l = sum p_j, then
 * O[i][d] = sum_j p_j V[j][d] / l, one thread per output element d.
 * Every input is widened to fp32 exactly; P stays fp32 (the candidates
 * round it to 16 bits before P V: the task's tolerance allows for that).
 * O is rounded once, to nearest even, to the buffers' dtype: the gate
 * compares it with the candidate's O in that dtype (one dtype per buffer),
 * so the reference's own rounding, half an ulp, is part of the tolerance.
 * D, CAUSAL and DTYPE are compile-time macros (compile dims of the task);
 * S, scale, SQ and G are runtime arguments.  No includes (NVRTC without CUDA headers).
 */

#ifndef D
#define D 64
#endif
#ifndef CAUSAL
#define CAUSAL 0
#endif
#ifndef DTYPE
#define DTYPE 0
#endif

typedef unsigned short ref_u16;

#if DTYPE == 1
/* bf16 is the top half of an fp32 */
static __device__ float ref_h2f(ref_u16 h)
{
    return __uint_as_float((unsigned)h << 16);
}

static __device__ ref_u16 ref_f2h(float f)
{
    ref_u16 h;
    asm("cvt.rn.bf16.f32 %0, %1;" : "=h"(h) : "f"(f));
    return h;
}
#else
static __device__ float ref_h2f(ref_u16 h)
{
    float f;
    asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(h));
    return f;
}

static __device__ ref_u16 ref_f2h(float f)
{
    ref_u16 h;
    asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h) : "f"(f));
    return h;
}
#endif

/* Block-wide reduction (max if is_max, else sum) through red[32]. */
static __device__ float ref_reduce(float v, float *red, int is_max)
{
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    const int nwarps = (blockDim.x + 31) >> 5;
    for (int o = 16; o > 0; o >>= 1) {
        const float w = __shfl_xor_sync(0xffffffffu, v, o);
        v = is_max ? fmaxf(v, w) : v + w;
    }
    __syncthreads();
    if (lane == 0)
        red[warp] = v;
    __syncthreads();
    v = red[0];
    for (int k = 1; k < nwarps; ++k)
        v = is_max ? fmaxf(v, red[k]) : v + red[k];
    return v;
}

extern "C" __global__ void attn_ref(const ref_u16 *Q, const ref_u16 *K, const ref_u16 *V,
                                    ref_u16 *O, int S, float scale, int SQ, int G)
{
    extern __shared__ float ref_p[];
    __shared__ float red[32];
    const int i = blockIdx.x;
    const size_t base = (size_t)(blockIdx.y / G) * S * D;       /* K and V */
    const size_t qrow = (size_t)blockIdx.y * SQ + i;            /* Q and O */
    const ref_u16 *q = Q + qrow * D;
#if CAUSAL
    const int n = i + S - SQ + 1;
#else
    const int n = S;
#endif
    float mx = -3.0e38f;
    for (int j = threadIdx.x; j < n; j += blockDim.x) {
        const ref_u16 *k = K + base + (size_t)j * D;
        float s = 0.f;
        for (int d = 0; d < D; ++d)
            s += ref_h2f(q[d]) * ref_h2f(k[d]);
        s *= scale;
        ref_p[j] = s;
        mx = fmaxf(mx, s);
    }
    mx = ref_reduce(mx, red, 1);
    float sum = 0.f;
    for (int j = threadIdx.x; j < n; j += blockDim.x) {
        const float p = expf(ref_p[j] - mx);
        ref_p[j] = p;
        sum += p;
    }
    sum = ref_reduce(sum, red, 0);   /* its barriers also publish ref_p */
    for (int d = threadIdx.x; d < D; d += blockDim.x) {
        float o = 0.f;
        for (int j = 0; j < n; ++j)
            o += ref_p[j] * ref_h2f(V[base + (size_t)j * D + d]);
        O[qrow * D + d] = ref_f2h(o / sum);
    }
}

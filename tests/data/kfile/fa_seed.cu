// A FlashAttention-style fp16 attention forward kernel of the seed
// project's shape, written for nvcc as people write them and brought into
// evoeng unchanged (tests/test_init_seed.sh): a template<int S, int D>
// kernel, an extern "C" host launcher with dim3 grid and block and
// <<<grid, block, 0, stream>>>, cp.async tile loads, WMMA tensor-core
// products and 9 #define knobs. `evoeng init` reads its launch, its knobs,
// its shared arrays and its static_asserts.
//
//   o[b, h, i, :] = softmax_j(q[b, h, i, :] . k[b, h, j, :] * scale) v[b, h, j, :]
//
// q, k, v, o are [B, H, S, D] fp16, row-major. Two passes over the keys:
// the first finds each row's max and sum, the second adds the normalised
// P V, so the output accumulators stay in WMMA fragments (no rescaling).
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <mma.h>
#include <math.h>
#include <stdio.h>

using namespace nvcuda;

#ifndef BLOCK_M
#define BLOCK_M 64      // query rows per CTA
#endif
#ifndef BLOCK_N
#define BLOCK_N 32      // key rows per tile
#endif
#ifndef WARPS
#define WARPS 4         // warps per CTA; each takes BLOCK_M / WARPS query rows
#endif
#ifndef STAGES
#define STAGES 2        // K/V tiles in flight
#endif
#ifndef PAD
#define PAD 8           // halves of padding per shared row
#endif
#ifndef VEC
#define VEC 8           // halves per copy: 8 is 16 bytes
#endif
#ifndef CP_ASYNC
#define CP_ASYNC 1      // 1: cp.async copies, 0: plain loads and stores
#endif
#ifndef EXP2
#define EXP2 1          // 1: exp2f on scores scaled by log2(e), 0: expf
#endif
#ifndef MIN_BLOCKS
#define MIN_BLOCKS 1    // __launch_bounds__' minimum CTAs per SM
#endif

#if EXP2
#define FA_EXP(x) exp2f(x)
#define FA_LOG2E 1.4426950408889634f
#else
#define FA_EXP(x) expf(x)
#define FA_LOG2E 1.0f
#endif

// One copy of N halves from global to shared memory.
template <int N>
__device__ __forceinline__ void copy_chunk(__half *dst, const __half *src)
{
#if CP_ASYNC
    unsigned s = (unsigned)__cvta_generic_to_shared(dst);
    asm volatile("cp.async.ca.shared.global [%0], [%1], %2;\n" ::"r"(s), "l"(src), "n"(N * 2));
#else
    struct alignas(N * 2) Chunk {
        __half h[N];
    };
    *reinterpret_cast<Chunk *>(dst) = *reinterpret_cast<const Chunk *>(src);
#endif
}

__device__ __forceinline__ void copy_commit()
{
#if CP_ASYNC
    asm volatile("cp.async.commit_group;\n" ::);
#endif
}

template <int N>
__device__ __forceinline__ void copy_wait()
{
#if CP_ASYNC
    asm volatile("cp.async.wait_group %0;\n" ::"n"(N));
#endif
}

// ROWS rows of D halves from src (row stride D) into dst (row stride
// D + PAD); rows at or past `valid` are zeroed.
template <int ROWS, int D>
__device__ __forceinline__ void load_tile(__half (*dst)[D + PAD], const __half *src, int valid)
{
    constexpr int PER_ROW = D / VEC;
    for (int c = threadIdx.x; c < ROWS * PER_ROW; c += WARPS * 32) {
        const int r = c / PER_ROW, col = (c % PER_ROW) * VEC;
        if (r < valid) {
            copy_chunk<VEC>(&dst[r][col], src + (size_t)r * D + col);
        } else {
            for (int e = 0; e < VEC; e++)
                dst[r][col + e] = __float2half(0.0f);
        }
    }
}

// This warp's rows of S = Q K^T for one key tile, into its rows of sS.
template <int D>
__device__ __forceinline__ void scores(const __half (*sQ)[D + PAD], const __half (*sK)[D + PAD],
                                       float (*sS)[BLOCK_N + PAD], int row0)
{
    for (int mt = 0; mt < BLOCK_M / WARPS / 16; mt++) {
        for (int nt = 0; nt < BLOCK_N / 16; nt++) {
            wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc;
            wmma::fill_fragment(acc, 0.0f);
            for (int kk = 0; kk < D / 16; kk++) {
                wmma::fragment<wmma::matrix_a, 16, 16, 16, __half, wmma::row_major> a;
                wmma::fragment<wmma::matrix_b, 16, 16, 16, __half, wmma::col_major> b;
                wmma::load_matrix_sync(a, &sQ[row0 + mt * 16][kk * 16], D + PAD);
                wmma::load_matrix_sync(b, &sK[nt * 16][kk * 16], D + PAD);
                wmma::mma_sync(acc, a, b, acc);
            }
            wmma::store_matrix_sync(&sS[row0 + mt * 16][nt * 16], acc, BLOCK_N + PAD, wmma::mem_row_major);
        }
    }
}

template <int S, int D>
__global__ void __launch_bounds__(WARPS * 32, MIN_BLOCKS)
fa_fwd(const __half *__restrict__ q, const __half *__restrict__ k, const __half *__restrict__ v,
       __half *__restrict__ o, float scale)
{
    static_assert(BLOCK_M % (16 * WARPS) == 0, "each warp takes whole 16-row WMMA tiles of the query block");
    static_assert(BLOCK_N % 16 == 0, "a key tile is whole 16-column WMMA tiles");
    static_assert(D % 16 == 0, "the head dimension is whole WMMA tiles");
    static_assert(PAD % 8 == 0, "WMMA needs shared rows of a multiple of 16 bytes");
    static_assert(VEC >= 2 && VEC <= 8, "cp.async copies 4, 8 or 16 bytes");
    constexpr int ROWS_W = BLOCK_M / WARPS;
    constexpr int MT = ROWS_W / 16, DT = D / 16;
    constexpr int TILES = (S + BLOCK_N - 1) / BLOCK_N;

    __shared__ __align__(32) __half sQ[BLOCK_M][D + PAD];
    __shared__ __align__(32) __half sK[STAGES][BLOCK_N][D + PAD];
    __shared__ __align__(32) __half sV[STAGES][BLOCK_N][D + PAD];
    __shared__ __align__(32) float sS[BLOCK_M][BLOCK_N + PAD];
    __shared__ __align__(32) __half sP[BLOCK_M][BLOCK_N + PAD];
    __shared__ float sM[BLOCK_M], sL[BLOCK_M];

    const int bh = blockIdx.x, m0 = blockIdx.y * BLOCK_M;
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, row0 = warp * ROWS_W;
    const __half *qb = q + (size_t)bh * S * D, *kb = k + (size_t)bh * S * D, *vb = v + (size_t)bh * S * D;
    const float sl2 = scale * FA_LOG2E;

    for (int r = threadIdx.x; r < BLOCK_M; r += WARPS * 32) {
        sM[r] = -INFINITY;
        sL[r] = 0.0f;
    }
    load_tile<BLOCK_M, D>(sQ, qb + (size_t)m0 * D, S - m0);

    // Pass 1: each row's max and sum of exponentials.
    for (int s = 0; s < STAGES - 1; s++) {
        if (s < TILES)
            load_tile<BLOCK_N, D>(sK[s], kb + (size_t)s * BLOCK_N * D, S - s * BLOCK_N);
        copy_commit();
    }
    for (int t = 0; t < TILES; t++) {
        const int next = t + STAGES - 1;
        if (next < TILES)
            load_tile<BLOCK_N, D>(sK[next % STAGES], kb + (size_t)next * BLOCK_N * D, S - next * BLOCK_N);
        copy_commit();
        copy_wait<STAGES - 1>();
        __syncthreads();
        scores<D>(sQ, sK[t % STAGES], sS, row0);
        __syncwarp();
        for (int r = lane; r < ROWS_W; r += 32) {
            float m = sM[row0 + r], l = sL[row0 + r];
            for (int j = 0; j < BLOCK_N && t * BLOCK_N + j < S; j++) {
                const float x = sS[row0 + r][j] * sl2, mn = fmaxf(m, x);
                l = l * FA_EXP(m - mn) + FA_EXP(x - mn);
                m = mn;
            }
            sM[row0 + r] = m;
            sL[row0 + r] = l;
        }
        __syncthreads();
    }

    // Pass 2: O = sum over tiles of softmax(S) V, P normalised as it is made.
    wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc[MT][DT];
    for (int mt = 0; mt < MT; mt++)
        for (int dt = 0; dt < DT; dt++)
            wmma::fill_fragment(acc[mt][dt], 0.0f);
    for (int s = 0; s < STAGES - 1; s++) {
        if (s < TILES) {
            load_tile<BLOCK_N, D>(sK[s], kb + (size_t)s * BLOCK_N * D, S - s * BLOCK_N);
            load_tile<BLOCK_N, D>(sV[s], vb + (size_t)s * BLOCK_N * D, S - s * BLOCK_N);
        }
        copy_commit();
    }
    for (int t = 0; t < TILES; t++) {
        const int next = t + STAGES - 1;
        if (next < TILES) {
            load_tile<BLOCK_N, D>(sK[next % STAGES], kb + (size_t)next * BLOCK_N * D, S - next * BLOCK_N);
            load_tile<BLOCK_N, D>(sV[next % STAGES], vb + (size_t)next * BLOCK_N * D, S - next * BLOCK_N);
        }
        copy_commit();
        copy_wait<STAGES - 1>();
        __syncthreads();
        scores<D>(sQ, sK[t % STAGES], sS, row0);
        __syncwarp();
        for (int e = lane; e < ROWS_W * BLOCK_N; e += 32) {
            const int r = row0 + e / BLOCK_N, j = e % BLOCK_N;
            const float p = t * BLOCK_N + j < S ? FA_EXP(sS[r][j] * sl2 - sM[r]) / sL[r] : 0.0f;
            sP[r][j] = __float2half(p);
        }
        __syncwarp();
        for (int mt = 0; mt < MT; mt++) {
            for (int kt = 0; kt < BLOCK_N / 16; kt++) {
                wmma::fragment<wmma::matrix_a, 16, 16, 16, __half, wmma::row_major> a;
                wmma::load_matrix_sync(a, &sP[row0 + mt * 16][kt * 16], BLOCK_N + PAD);
                for (int dt = 0; dt < DT; dt++) {
                    wmma::fragment<wmma::matrix_b, 16, 16, 16, __half, wmma::row_major> b;
                    wmma::load_matrix_sync(b, &sV[t % STAGES][kt * 16][dt * 16], D + PAD);
                    wmma::mma_sync(acc[mt][dt], a, b, acc[mt][dt]);
                }
            }
        }
        __syncthreads();
    }

    // The output, one 16 x 16 tile at a time through this warp's rows of sS.
    __half *ob = o + (size_t)bh * S * D;
    for (int mt = 0; mt < MT; mt++) {
        for (int dt = 0; dt < DT; dt++) {
            wmma::store_matrix_sync(&sS[row0 + mt * 16][0], acc[mt][dt], BLOCK_N + PAD, wmma::mem_row_major);
            __syncwarp();
            for (int e = lane; e < 256; e += 32) {
                const int r = e / 16, c = e % 16, row = m0 + row0 + mt * 16 + r;
                if (row < S)
                    ob[(size_t)row * D + dt * 16 + c] = __float2half(sS[row0 + mt * 16 + r][c]);
            }
            __syncwarp();
        }
    }
}

extern "C" void fa_forward(const __half *q, const __half *k, const __half *v, __half *o, int B, int H, int S,
                           int D, cudaStream_t stream)
{
    dim3 grid(B * H, (S + BLOCK_M - 1) / BLOCK_M);
    dim3 block(WARPS * 32);
    const float scale = 1.0f / sqrtf((float)D);
    if (S == 512 && D == 64)
        fa_fwd<512, 64><<<grid, block, 0, stream>>>(q, k, v, o, scale);
    else
        fprintf(stderr, "fa_forward: no instantiation for S=%d D=%d\n", S, D);
}

/*
 * attention.cu -- evoeng template: FlashAttention-2-style fp16 attention
 * forward pass, O = softmax(Q K^T * scale [+ causal mask]) V, with tensors
 * in layout [B, H, S, D] (fp16), fp32 softmax statistics and accumulation.
 *
 * Structure: one CTA owns BLOCK_M query rows of one (b, h) pair
 * (grid.x = ceil(S / BLOCK_M), grid.y = B*H, grid.z = SPLITS).  Each of the
 * ATT_WARPS warps owns BLOCK_M / ATT_WARPS rows (MT = 1 or 2 m16 tiles).  K and V
 * tiles of BLOCK_N keys stream through shared memory with cp.async
 * (STAGES-deep ring, separate commit groups for K and V so QK^T starts
 * while V is still in flight), are read with ldmatrix (.trans for V), and
 * both products run on tensor cores with mma.sync m16n8k16 (f16 in, f32
 * accumulate).  The softmax is online (running max m and sum l per row);
 * P stays in registers: the QK^T accumulator layout is the A-operand layout
 * of the PV product.  With SPLITS > 1 each CTA handles a contiguous share of
 * the KV tiles and writes unnormalised fp32 partial O plus (m, l) to
 * scratch; attn_combine merges the splits with log-sum-exp.
 *
 * Only device code; no includes (NVRTC on the worker has no CUDA headers).
 * All PTX used (cp.async, ldmatrix, mma.sync m16n8k16, cvt f16x2) needs
 * sm_80 or newer.
 *
 * Compile-time dims: D (head dim, multiple of 16; 64 or 128 with SWIZZLE)
 * and CAUSAL (0/1: key j visible to query i iff j <= i).
 * Entries:
 *   attn_fwd(Q, K, V, O, Opart, ML, S, scale)
 *       Opart: f32 [SPLITS, B*H, S, D], ML: f32 [SPLITS, B*H, S, 2];
 *       both untouched when SPLITS == 1.
 *   attn_combine(Opart, ML, O, rows)   rows = B*H*S; one thread per 4
 *       output elements: grid = ceil(rows * D / 4 / 128), block = 128.
 *   attn_fwd_ws(tmQ, tmK, tmV, O, S, BH, scale, Q, K, V)   the
 *       warp-specialised sm_90a path (WS = 1; its own section at the end
 *       of this file): tensor maps over Q, K, V ([B*H, S, D], 64 x rows
 *       boxes, 128-byte swizzle) for the TMA loads (LOADS = 0), the raw
 *       pointers for the cp.async loads (LOADS = 1); the pointers come
 *       last so a kernel written for the older (tmQ .. scale) signature
 *       still launches from the same plan (extra parameters are ignored).
 *       With WS = 1 attn_fwd is an empty stub and vice versa.
 *
 * Knobs (all #define, defaults below):
 *   BLOCK_M      query rows per CTA; a multiple of 16 * (warps per CTA)
 *   BLOCK_N      keys per KV tile (multiple of 16)
 *   WARPS        warps per CTA (at D = 64, see WSCALE)
 *   WSCALE       1: use WARPS * D / 64 warps when D > 64, so each warp
 *                keeps fewer rows (registers) at large D; 0: WARPS always
 *   STAGES       K/V smem ring depth (1 = load, wait, compute)
 *   SWIZZLE      0: rows padded by 8 halves; 1: XOR swizzle of 16 B chunks
 *   EXP2         1: exp2 (ex2.approx) with scale*log2(e) folded; 0: expf
 *   CAUSAL_SKIP  1: skip KV tiles that are fully masked, mask only the
 *                tiles that need it; 0: visit all tiles, mask all of them
 *   Q_IN_REGS    1: Q fragments loaded once into registers; 0: re-read
 *                Q from shared memory for every KV tile
 *   SPLITS       KV split factor (grid.z); > 1 needs attn_combine
 *   MIN_BLOCKS   resident CTAs per SM asked of the register allocator at
 *                D = 64; the __launch_bounds__ minimum is scaled by 64 / D
 *                (at least 1), so one value stays spill-free for D = 128
 *   CLUSTER      with SPLITS > 1 on sm_90+: the SPLITS CTAs of one query
 *                block form a thread-block cluster and merge their partial
 *                results through distributed shared memory (no scratch
 *                traffic, no attn_combine launch); 0: scratch + attn_combine
 *   OVERLAP      1 (needs STAGES >= 2): software pipeline, QK^T of the next
 *                tile is issued before the softmax of the current one (two
 *                score buffers in registers)
 *   O_STAGE      1: stage the fp16 output tile through shared memory for
 *                16-byte coalesced stores; 0: store fragments directly
 *   WGMMA        1 (sm_90a, D = 64, one m16 tile per warp, warps in whole
 *                warpgroups, SWIZZLE): both products run as Hopper
 *                warpgroup MMAs (wgmma.mma_async m64nNk16) reading K and V
 *                straight from the swizzled shared tiles through matrix
 *                descriptors (128-byte swizzle; V as the transposed B
 *                operand) with Q and P as register A operands; tiles are
 *                1024-byte aligned.  At D != 64, or compiled for a target
 *                other than sm_90a, the mma.sync path is used.
 *   WS, CONSUMERS, REGSPLIT, PINGPONG, PERSIST, LOADS: the warp-specialised path
 *                (see its section); the other knobs keep their defaults there.
 *
 * Shared memory (dynamic): (BLOCK_M + 2 * STAGES * BLOCK_N) * ROW bytes
 * (+ 1024 with WGMMA, for the alignment), ROW = (D + (SWIZZLE ? 0 : 8)) * 2; with CLUSTER && SPLITS > 1 at least
 * BLOCK_M * ((D + 8) * 4 + 8) bytes (the merge reuses the whole buffer).
 */

#ifndef D
#define D 64
#endif
#ifndef CAUSAL
#define CAUSAL 0
#endif
#ifndef BLOCK_M
#define BLOCK_M 64
#endif
#ifndef BLOCK_N
#define BLOCK_N 128
#endif
#ifndef WARPS
#define WARPS 4
#endif
#ifndef STAGES
#define STAGES 3
#endif
#ifndef SWIZZLE
#define SWIZZLE 1
#endif
#ifndef EXP2
#define EXP2 1
#endif
#ifndef CAUSAL_SKIP
#define CAUSAL_SKIP 1
#endif
#ifndef Q_IN_REGS
#define Q_IN_REGS 1
#endif
#ifndef SPLITS
#define SPLITS 1
#endif
#ifndef MIN_BLOCKS
#define MIN_BLOCKS 1
#endif
#ifndef O_STAGE
#define O_STAGE 1
#endif
#ifndef CLUSTER
#define CLUSTER 0
#endif
#ifndef WSCALE
#define WSCALE 0
#endif
#ifndef OVERLAP
#define OVERLAP 0
#endif
#ifndef WGMMA
#define WGMMA 0
#endif
#ifndef WS
#define WS 0
#endif
#ifndef CONSUMERS
#define CONSUMERS 2
#endif
#ifndef REGSPLIT
#define REGSPLIT 1
#endif
#ifndef PINGPONG
#define PINGPONG 0
#endif
#ifndef PERSIST
#define PERSIST 0
#endif
#ifndef LOADS
#define LOADS 0
#endif

#define ATT_WARPS ((WSCALE && D > 64) ? WARPS * D / 64 : WARPS)
#define ATT_THREADS (ATT_WARPS * 32)
#define ATT_MT (BLOCK_M / (16 * ATT_WARPS))      /* m16 tiles per warp */
#define ATT_ROWH (SWIZZLE ? D : (D + 8))         /* smem row, halves */
#define ATT_ROWB (ATT_ROWH * 2)                  /* smem row, bytes */
#define ATT_KCH (D / 8)                          /* 16 B chunks per row */
#define ATT_NT (BLOCK_N / 8)                     /* n8 tiles per KV tile */
#define ATT_DT (D / 8)                           /* n8 tiles over D */
#define ATT_NEG_INF (-__int_as_float(0x7f800000))
#define ATT_MINB ((MIN_BLOCKS * 64 / D) < 1 ? 1 : (MIN_BLOCKS * 64 / D))
#define ATT_CLUSTER (CLUSTER && SPLITS > 1)
#define ATT_RED_STRIDE (D + 8)                   /* merge buffer row, floats */

#if ATT_CLUSTER && defined(__CUDA_ARCH__) && __CUDA_ARCH__ < 900
#error "CLUSTER needs sm_90 or newer"
#endif

/* The wgmma path: device code at D = 64 only (the smem rows are then
 * exactly one 128-byte swizzle row), compiled for sm_90a.  Any other
 * target falls back to mma.sync: `nvcc -arch=sm_90a` also builds generic
 * compute_90 PTX, and evoeng always compiles WGMMA=1 for sm_90a (the
 * task's compile.arch_specific; its constraints allow WGMMA on CC 9.0 only). */
#if WGMMA && D == 64 && defined(__CUDA_ARCH__) && defined(__CUDA_ARCH_FEAT_SM90_ALL)
#define ATT_WG 1
#else
#define ATT_WG 0
#endif
#if WS && defined(__CUDA_ARCH__) && defined(__CUDA_ARCH_FEAT_SM90_ALL)
#define ATT_WSP 1
#else
#define ATT_WSP 0
#endif

static_assert(D % 16 == 0, "D must be a multiple of 16");
#if !WS
static_assert(!SWIZZLE || D % 64 == 0, "SWIZZLE needs D % 64 == 0");
static_assert(BLOCK_M % (16 * ATT_WARPS) == 0, "BLOCK_M must be a multiple of 16 * warps");
static_assert(BLOCK_N % 16 == 0, "BLOCK_N must be a multiple of 16");
static_assert(STAGES >= 1 && STAGES <= 4, "STAGES in 1..4");
static_assert(SPLITS >= 1, "SPLITS >= 1");
static_assert(!OVERLAP || STAGES >= 2, "OVERLAP needs STAGES >= 2");
static_assert(!ATT_CLUSTER || (SPLITS <= 8 && BLOCK_M % SPLITS == 0), "CLUSTER: SPLITS <= 8 dividing BLOCK_M");
static_assert(!ATT_WG || (ATT_MT == 1 && ATT_WARPS % 4 == 0 && SWIZZLE), "WGMMA: one m16 tile per warp, whole warpgroups, SWIZZLE");
#endif

typedef unsigned int att_u32;
typedef unsigned short att_u16;
typedef unsigned long long att_u64;

/* ---------------------------------------------------------------- PTX */

static __device__ __forceinline__ att_u32 att_smem_addr(const void *p)
{
    att_u32 r;
    asm("{ .reg .u64 a; cvta.to.shared.u64 a, %1; cvt.u32.u64 %0, a; }"
        : "=r"(r) : "l"(p));
    return r;
}

/* 16-byte async copy global -> shared; bytes < 16 zero-fills the rest. */
static __device__ __forceinline__ void att_cp16(att_u32 dst, const void *src, int bytes)
{
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n"
                 :: "r"(dst), "l"(src), "r"(bytes) : "memory");
}

static __device__ __forceinline__ void att_commit(void)
{
    asm volatile("cp.async.commit_group;\n" ::: "memory");
}

template <int N>
static __device__ __forceinline__ void att_wait(void)
{
    asm volatile("cp.async.wait_group %0;\n" :: "n"(N) : "memory");
}

static __device__ __forceinline__ void att_ldsm4(att_u32 a, att_u32 &r0, att_u32 &r1,
                                                 att_u32 &r2, att_u32 &r3)
{
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
                 : "=r"(r0), "=r"(r1), "=r"(r2), "=r"(r3) : "r"(a));
}

#if !ATT_WG   /* the mma.sync path's V loads and MMAs */
static __device__ __forceinline__ void att_ldsm4t(att_u32 a, att_u32 &r0, att_u32 &r1,
                                                  att_u32 &r2, att_u32 &r3)
{
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];\n"
                 : "=r"(r0), "=r"(r1), "=r"(r2), "=r"(r3) : "r"(a));
}

/* c += a (16x16, row) * b (16x8, col); f16 inputs, f32 accumulators. */
static __device__ __forceinline__ void att_mma(float *c, const att_u32 *a, att_u32 b0, att_u32 b1)
{
    asm("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 "
        "{%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
        : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

#endif

/* Pack two floats into f16x2: lo in the low half. */
static __device__ __forceinline__ att_u32 att_pack(float lo, float hi)
{
    att_u32 r;
    asm("cvt.rn.f16x2.f32 %0, %1, %2;\n" : "=r"(r) : "f"(hi), "f"(lo));
    return r;
}

static __device__ __forceinline__ float att_exp(float x)
{
#if EXP2
    float y;
    asm("ex2.approx.ftz.f32 %0, %1;\n" : "=f"(y) : "f"(x));
    return y;
#else
    return expf(x);
#endif
}

/* Barrier after a cp.async wait: the landed tiles are visible to the whole
 * CTA; with WGMMA also to the async proxy that wgmma reads them through. */
static __device__ __forceinline__ void att_sync_tiles(void)
{
#if ATT_WG
    asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
#endif
    __syncthreads();
}

/* Byte offset of 16-byte chunk ch of row r inside a smem tile. */
static __device__ __forceinline__ int att_off(int r, int ch)
{
#if SWIZZLE
    return r * ATT_ROWB + ((ch ^ (r & 7)) << 4);
#else
    return r * ATT_ROWB + (ch << 4);
#endif
}

/* Async load of rows [row0, row0 + NROWS) of a [S, D] matrix into a smem
 * tile; rows >= S are zero-filled (never read from global).  Thread tid
 * always copies chunk tid % KCH of rows tid / KCH + i * RSTEP, so every
 * per-pass offset is a compile-time constant (few live registers). */
template <int NROWS>
static __device__ __forceinline__ void att_load_tile(att_u32 sdst, const att_u16 *g,
                                                     int row0, int S, int tid)
{
    constexpr int RSTEP = ATT_THREADS / ATT_KCH;
    constexpr int PASSES = (NROWS + RSTEP - 1) / RSTEP;
    const int r0 = tid / ATT_KCH, ch = tid % ATT_KCH;
    const int lim = S - row0 - r0;                 /* pass i valid iff i*RSTEP < lim */
    const att_u16 *src0 = g + (size_t)(row0 + r0) * D + ch * 8;
    const att_u32 dst0 = sdst + att_off(r0, ch);
#pragma unroll
    for (int i = 0; i < PASSES; ++i) {
        if (NROWS % RSTEP != 0 && r0 + i * RSTEP >= NROWS)
            break;
        const bool ok = i * RSTEP < lim;
        /* the swizzle repeats every 8 rows: offsets of passes i and i + P
         * differ by a constant (P * RSTEP rows) */
        constexpr int P = (RSTEP % 8 == 0 || !SWIZZLE) ? 1 : (RSTEP % 4 == 0 ? 2 : (RSTEP % 2 == 0 ? 4 : 8));
        const att_u32 dst = (P == 1 ? dst0 : sdst + att_off(r0 + (i % P) * RSTEP, ch))
                            + (i / P) * P * RSTEP * ATT_ROWB;
        att_cp16(dst, ok ? (const void *)(src0 + (size_t)i * RSTEP * D) : (const void *)g, ok ? 16 : 0);
    }
}

#if ATT_WG || ATT_WSP
/* ------------------------------------------------------- Hopper wgmma */

/* Shared-memory matrix descriptor, 128-byte swizzle: start address, the
 * leading and stride byte offsets (16-byte units) and the layout type in
 * bits 62-63.  A K-major operand (K tile: 16 keys' halves contiguous per
 * row) needs only the stride between 8-row groups (1024 bytes); for the
 * MN-major V tile the 8-row groups along K are also 1024 bytes apart and
 * the tile is one 64-wide swizzle atom across N, so both offsets are 1024. */
static __device__ __forceinline__ att_u64 att_desc(att_u32 addr, att_u32 lbo, att_u32 sbo)
{
    return (att_u64)((addr & 0x3FFFFu) >> 4) | ((att_u64)(lbo >> 4) << 16) | ((att_u64)(sbo >> 4) << 32) |
           (1ull << 62);
}

static __device__ __forceinline__ void att_wg_fence(void)
{
    asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
}

static __device__ __forceinline__ void att_wg_commit_wait(void)
{
    asm volatile("wgmma.commit_group.sync.aligned;\n"
                 "wgmma.wait_group.sync.aligned 0;\n" ::: "memory");
}

/* Pin accumulator registers in place around the asynchronous MMAs: nothing
 * reads or moves them between the issue and the wait. */
template <int N>
static __device__ __forceinline__ void att_keep(float *d)
{
#pragma unroll
    for (int i = 0; i < N; ++i)
        asm volatile("" : "+f"(d[i]) :: "memory");
}

/* d[N/2] (+)= A (m64k16, this warp's 16 rows: 4 f16x2 registers, the
 * mma.sync A-fragment layout) * B (k16 x N, smem descriptor); TRANS = 1
 * reads B as MN-major.  The accumulator layout per warp is the mma.sync
 * m16n8 C layout repeated over N / 8 column tiles. */
template <int N, int TRANS> struct AttWg;
template <int TRANS> struct AttWg<32, TRANS> {
    static __device__ __forceinline__ void mma(float *d, const att_u32 *a, att_u64 desc, int accumulate)
    {
        asm volatile(
            "{\n.reg .pred p;\nsetp.ne.b32 p, %21, 0;\n"
            "wgmma.mma_async.sync.aligned.m64n32k16.f32.f16.f16 {"
            "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15}, "
            "{%16, %17, %18, %19}, %20, p, 1, 1, %22;\n}\n"
            : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
              "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15])
            : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(desc), "r"(accumulate), "n"(TRANS));
    }
};
template <int TRANS> struct AttWg<64, TRANS> {
    static __device__ __forceinline__ void mma(float *d, const att_u32 *a, att_u64 desc, int accumulate)
    {
        asm volatile(
            "{\n.reg .pred p;\nsetp.ne.b32 p, %37, 0;\n"
            "wgmma.mma_async.sync.aligned.m64n64k16.f32.f16.f16 {"
            "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15,"
            "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31}, "
            "{%32, %33, %34, %35}, %36, p, 1, 1, %38;\n}\n"
            : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
              "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]),
              "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]),
              "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31])
            : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(desc), "r"(accumulate), "n"(TRANS));
    }
};
template <int TRANS> struct AttWg<128, TRANS> {
    static __device__ __forceinline__ void mma(float *d, const att_u32 *a, att_u64 desc, int accumulate)
    {
        asm volatile(
            "{\n.reg .pred p;\nsetp.ne.b32 p, %69, 0;\n"
            "wgmma.mma_async.sync.aligned.m64n128k16.f32.f16.f16 {"
            "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15,"
            "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31,"
            "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47,"
            "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63}, "
            "{%64, %65, %66, %67}, %68, p, 1, 1, %70;\n}\n"
            : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
              "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]),
              "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]),
              "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]),
              "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]),
              "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]),
              "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]),
              "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63])
            : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(desc), "r"(accumulate), "n"(TRANS));
    }
};
#endif

#if ATT_CLUSTER
static __device__ __forceinline__ void att_cluster_sync(void)
{
    asm volatile("barrier.cluster.arrive.release.aligned;\n"
                 "barrier.cluster.wait.acquire.aligned;\n" ::: "memory");
}

static __device__ __forceinline__ att_u32 att_cluster_rank(void)
{
    att_u32 r;
    asm volatile("mov.u32 %0, %%cluster_ctarank;\n" : "=r"(r));
    return r;
}

/* Address of the same shared location in CTA `rank` of the cluster. */
static __device__ __forceinline__ att_u32 att_mapa(att_u32 a, att_u32 rank)
{
    att_u32 r;
    asm volatile("mapa.shared::cluster.u32 %0, %1, %2;\n" : "=r"(r) : "r"(a), "r"(rank));
    return r;
}
#endif

/* ---------------------------------------------------------------- main */

#if ATT_CLUSTER
#define ATT_CLUSTER_ATTR __cluster_dims__(1, 1, SPLITS)
#else
#define ATT_CLUSTER_ATTR
#endif

extern "C" __global__ void __launch_bounds__(ATT_THREADS, ATT_MINB) ATT_CLUSTER_ATTR
attn_fwd(const att_u16 *__restrict__ Q, const att_u16 *__restrict__ K,
         const att_u16 *__restrict__ V, att_u16 *__restrict__ O,
         float *__restrict__ Opart, float *__restrict__ ML, int S, float scale)
{
#if !WS
    extern __shared__ __align__(128) unsigned char att_smem[];
    const int tid = threadIdx.x, warp = tid >> 5, lane = tid & 31;
    const int g = lane >> 2, t4 = lane & 3;
#if CAUSAL
    const int mblk = gridDim.x - 1 - blockIdx.x;   /* heavy blocks first */
#else
    const int mblk = blockIdx.x;
#endif
    const int m0 = mblk * BLOCK_M;
    const int bh = blockIdx.y;
    const size_t base = (size_t)bh * S * D;
    const att_u16 *Qb = Q + base, *Kb = K + base, *Vb = V + base;

#if ATT_WG
    const att_u32 sQ = (att_smem_addr(att_smem) + 1023u) & ~1023u;   /* swizzle atoms: 1024-byte aligned */
#else
    const att_u32 sQ = att_smem_addr(att_smem);
#endif
    const att_u32 sK = sQ + BLOCK_M * ATT_ROWB;
    const att_u32 sV = sK + STAGES * BLOCK_N * ATT_ROWB;
    const int wrow = warp * ATT_MT * 16;           /* warp's first row in tile */

    /* KV tile range of this CTA (and split). */
#if CAUSAL && CAUSAL_SKIP
    const int kv_end = min(S, m0 + BLOCK_M);
#else
    const int kv_end = S;
#endif
    const int n_tiles = (kv_end + BLOCK_N - 1) / BLOCK_N;
#if SPLITS > 1
    const int per = (n_tiles + SPLITS - 1) / SPLITS;
    const int t_begin = blockIdx.z * per;
    const int t_end = min(n_tiles, t_begin + per);
#else
    const int t_begin = 0, t_end = n_tiles;
#endif

#if EXP2
    const float sl = scale * 1.4426950408889634f;
#else
    const float sl = scale;
#endif

    float acc[ATT_MT][ATT_DT][4];
    float m_run[ATT_MT][2], l_run[ATT_MT][2];
#pragma unroll
    for (int mi = 0; mi < ATT_MT; ++mi) {
#pragma unroll
        for (int dt = 0; dt < ATT_DT; ++dt)
#pragma unroll
            for (int e = 0; e < 4; ++e) acc[mi][dt][e] = 0.f;
        m_run[mi][0] = m_run[mi][1] = ATT_NEG_INF;
        l_run[mi][0] = l_run[mi][1] = 0.f;
    }

    /* Per-lane ldmatrix coordinates. */
    const int q_row = wrow + (lane & 15), q_ch = lane >> 4;
#if !ATT_WG
    const int k_row = (lane & 7) + ((lane >> 4) << 3), k_ch = (lane >> 3) & 1;
    const int v_row = (lane & 7) + (((lane >> 3) & 1) << 3), v_ch = lane >> 4;
#endif
#if Q_IN_REGS
    att_u32 qf[ATT_MT][D / 16][4];
#endif

    /* ---- S = Q K^T (raw fp32 scores) for the K tile at sKs */
#if ATT_WG
    auto qk = [&](float (&sc)[ATT_MT][ATT_NT][4], att_u32 sKs) {
#if Q_IN_REGS
        const att_u32 (&qa)[D / 16][4] = qf[0];
#else
        att_u32 qa[D / 16][4];
#pragma unroll
        for (int kk = 0; kk < D / 16; ++kk)
            att_ldsm4(sQ + att_off(q_row, kk * 2 + q_ch), qa[kk][0], qa[kk][1], qa[kk][2], qa[kk][3]);
#endif
        float *d = &sc[0][0][0];
        /* A 64-key tile runs as two n32 MMAs: a single m64n64k16 here (in
         * the kernel whose PV is the transposed m64n64k16) produced wrong
         * scores on an H200 (driver 13.0, NVRTC 13.0), n32 and n128 do not. */
        constexpr int QN = BLOCK_N == 64 ? 32 : BLOCK_N;
        att_keep<ATT_NT * 4>(d);
        att_wg_fence();
#pragma unroll
        for (int kk = 0; kk < D / 16; ++kk)   /* k16 step: 32 bytes along the swizzled row */
#pragma unroll
            for (int c = 0; c < BLOCK_N / QN; ++c)
                AttWg<QN, 0>::mma(d + c * QN / 2, qa[kk], att_desc(sKs + c * QN * ATT_ROWB + kk * 32, 16, 1024),
                                  kk > 0);
        att_wg_commit_wait();
        att_keep<ATT_NT * 4>(d);
    };
#else
    auto qk = [&](float (&sc)[ATT_MT][ATT_NT][4], att_u32 sKs) {
#pragma unroll
        for (int mi = 0; mi < ATT_MT; ++mi)
#pragma unroll
            for (int nt = 0; nt < ATT_NT; ++nt)
#pragma unroll
                for (int e = 0; e < 4; ++e) sc[mi][nt][e] = 0.f;
#pragma unroll
        for (int kk = 0; kk < D / 16; ++kk) {
#if Q_IN_REGS
#define ATT_QF(mi) qf[mi][kk]
#else
            att_u32 qk4[ATT_MT][4];
#pragma unroll
            for (int mi = 0; mi < ATT_MT; ++mi)
                att_ldsm4(sQ + att_off(q_row + mi * 16, kk * 2 + q_ch),
                          qk4[mi][0], qk4[mi][1], qk4[mi][2], qk4[mi][3]);
#define ATT_QF(mi) qk4[mi]
#endif
#pragma unroll
            for (int jj = 0; jj < BLOCK_N / 16; ++jj) {
                att_u32 b0, b1, b2, b3;
                att_ldsm4(sKs + att_off(jj * 16 + k_row, kk * 2 + k_ch), b0, b1, b2, b3);
#pragma unroll
                for (int mi = 0; mi < ATT_MT; ++mi) {
                    att_mma(sc[mi][2 * jj], ATT_QF(mi), b0, b1);
                    att_mma(sc[mi][2 * jj + 1], ATT_QF(mi), b2, b3);
                }
            }
#undef ATT_QF
        }
    };
#endif

    /* ---- mask, online softmax (P = exp(s*sl - m) in place), rescale acc */
    auto softmax = [&](float (&sc)[ATT_MT][ATT_NT][4], int n0) {
#if CAUSAL && CAUSAL_SKIP
        const bool need_mask = (n0 + BLOCK_N > S) || (n0 + BLOCK_N - 1 > m0);
#elif CAUSAL
        const bool need_mask = true;
#else
        const bool need_mask = n0 + BLOCK_N > S;
#endif
        if (need_mask) {
            /* key n0 + 2*t4 + nt*8 + e is visible iff nt*8 + e < lim */
            const int kbase = n0 + 2 * t4;
#pragma unroll
            for (int mi = 0; mi < ATT_MT; ++mi)
#pragma unroll
                for (int r = 0; r < 2; ++r) {
#if CAUSAL
                    const int lim = min(S, m0 + wrow + mi * 16 + g + 8 * r + 1) - kbase;
#else
                    const int lim = S - kbase;
#endif
#pragma unroll
                    for (int nt = 0; nt < ATT_NT; ++nt)
#pragma unroll
                        for (int e = 0; e < 2; ++e)
                            if (nt * 8 + e >= lim) sc[mi][nt][2 * r + e] = ATT_NEG_INF;
                }
        }
#pragma unroll
        for (int mi = 0; mi < ATT_MT; ++mi) {
#pragma unroll
            for (int r = 0; r < 2; ++r) {
                float mx = ATT_NEG_INF;
#pragma unroll
                for (int nt = 0; nt < ATT_NT; ++nt)
                    mx = fmaxf(mx, fmaxf(sc[mi][nt][2 * r], sc[mi][nt][2 * r + 1]));
                mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 1));
                mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 2));
                const float m_new = fmaxf(m_run[mi][r], mx * sl);
                const float m_use = (m_new == ATT_NEG_INF) ? 0.f : m_new;
                const float alpha = att_exp(m_run[mi][r] - m_use);
                m_run[mi][r] = m_new;
                float sum = 0.f;
#pragma unroll
                for (int nt = 0; nt < ATT_NT; ++nt)
#pragma unroll
                    for (int e = 0; e < 2; ++e) {
                        const float p = att_exp(fmaf(sc[mi][nt][2 * r + e], sl, -m_use));
                        sc[mi][nt][2 * r + e] = p;
                        sum += p;
                    }
                l_run[mi][r] = l_run[mi][r] * alpha + sum;
#pragma unroll
                for (int dt = 0; dt < ATT_DT; ++dt) {
                    acc[mi][dt][2 * r] *= alpha;
                    acc[mi][dt][2 * r + 1] *= alpha;
                }
            }
        }
    };

    /* ---- O += P V for the V tile at sVs (P from the score registers) */
#if ATT_WG
    auto pv = [&](float (&sc)[ATT_MT][ATT_NT][4], att_u32 sVs) {
        att_u32 pa[BLOCK_N / 16][4];
#pragma unroll
        for (int kk = 0; kk < BLOCK_N / 16; ++kk) {
            pa[kk][0] = att_pack(sc[0][2 * kk][0], sc[0][2 * kk][1]);
            pa[kk][1] = att_pack(sc[0][2 * kk][2], sc[0][2 * kk][3]);
            pa[kk][2] = att_pack(sc[0][2 * kk + 1][0], sc[0][2 * kk + 1][1]);
            pa[kk][3] = att_pack(sc[0][2 * kk + 1][2], sc[0][2 * kk + 1][3]);
        }
        float *d = &acc[0][0][0];
        att_keep<ATT_DT * 4>(d);
        att_wg_fence();
#pragma unroll
        for (int kk = 0; kk < BLOCK_N / 16; ++kk)   /* k16 step: 16 rows of V */
            AttWg<D, 1>::mma(d, pa[kk], att_desc(sVs + kk * 16 * ATT_ROWB, 1024, 1024), 1);
        att_wg_commit_wait();
        att_keep<ATT_DT * 4>(d);
    };
#else
    auto pv = [&](float (&sc)[ATT_MT][ATT_NT][4], att_u32 sVs) {
#pragma unroll
        for (int kk = 0; kk < BLOCK_N / 16; ++kk) {
            att_u32 pa[ATT_MT][4];
#pragma unroll
            for (int mi = 0; mi < ATT_MT; ++mi) {
                pa[mi][0] = att_pack(sc[mi][2 * kk][0], sc[mi][2 * kk][1]);
                pa[mi][1] = att_pack(sc[mi][2 * kk][2], sc[mi][2 * kk][3]);
                pa[mi][2] = att_pack(sc[mi][2 * kk + 1][0], sc[mi][2 * kk + 1][1]);
                pa[mi][3] = att_pack(sc[mi][2 * kk + 1][2], sc[mi][2 * kk + 1][3]);
            }
#pragma unroll
            for (int dd = 0; dd < D / 16; ++dd) {
                att_u32 b0, b1, b2, b3;
                att_ldsm4t(sVs + att_off(kk * 16 + v_row, dd * 2 + v_ch), b0, b1, b2, b3);
#pragma unroll
                for (int mi = 0; mi < ATT_MT; ++mi) {
                    att_mma(acc[mi][2 * dd], pa[mi], b0, b1);
                    att_mma(acc[mi][2 * dd + 1], pa[mi], b2, b3);
                }
            }
        }
    };
#endif

    auto load_q = [&]() {
#if Q_IN_REGS
#pragma unroll
        for (int mi = 0; mi < ATT_MT; ++mi)
#pragma unroll
            for (int kk = 0; kk < D / 16; ++kk)
                att_ldsm4(sQ + att_off(q_row + mi * 16, kk * 2 + q_ch),
                          qf[mi][kk][0], qf[mi][kk][1], qf[mi][kk][2], qf[mi][kk][3]);
#endif
    };
    auto kslot = [&](int i) { return sK + (i % STAGES) * BLOCK_N * ATT_ROWB; };
    auto vslot = [&](int i) { return sV + (i % STAGES) * BLOCK_N * ATT_ROWB; };
    auto load_k = [&](int i) {           /* i: tile index relative to t_begin */
        if (t_begin + i < t_end)
            att_load_tile<BLOCK_N>(kslot(i), Kb, (t_begin + i) * BLOCK_N, S, tid);
        att_commit();
    };
    auto load_v = [&](int i) {
        if (t_begin + i < t_end)
            att_load_tile<BLOCK_N>(vslot(i), Vb, (t_begin + i) * BLOCK_N, S, tid);
        att_commit();
    };

    att_load_tile<BLOCK_M>(sQ, Qb, m0, S, tid);
    att_commit();
    const int nit = t_end - t_begin;

#if OVERLAP
    /* Software-pipelined: QK^T of tile i+1 is issued before the softmax
     * and PV of tile i, so tensor-core work overlaps the exponentials.
     * Commit groups: Q, K0, then pairs (K[j+1], V[j]).  Iteration i waits
     * for pair i, then issues K[i+STAGES] (slot of K[i], consumed) and
     * V[i+STAGES-1] (slot of V[i-1], consumed). */
    load_k(0);
#pragma unroll
    for (int j = 0; j < STAGES - 1; ++j) {
        load_k(j + 1);
        load_v(j);
    }
    att_wait<2 * (STAGES - 1)>();              /* Q and K0 */
    att_sync_tiles();
    load_q();
    float sc[ATT_MT][ATT_NT][4], sn[ATT_MT][ATT_NT][4];
    if (nit > 0)
        qk(sc, kslot(0));
    for (int i = 0; i < nit; ++i) {
        att_wait<2 * (STAGES - 2)>();          /* K[i+1] and V[i] */
        att_sync_tiles();                      /* tile i-1 fully consumed */
        load_k(i + STAGES);
        load_v(i + STAGES - 1);
        if (i + 1 < nit)
            qk(sn, kslot(i + 1));
        softmax(sc, (t_begin + i) * BLOCK_N);
        pv(sc, vslot(i));
#pragma unroll
        for (int mi = 0; mi < ATT_MT; ++mi)
#pragma unroll
            for (int nt = 0; nt < ATT_NT; ++nt)
#pragma unroll
                for (int e = 0; e < 4; ++e) sc[mi][nt][e] = sn[mi][nt][e];
    }
#else
    /* Prologue: K/V tiles 0 .. STAGES - 2 (groups K, V per tile). */
#pragma unroll
    for (int j = 0; j < STAGES - 1; ++j) {
        load_k(j);
        load_v(j);
    }
    att_wait<2 * (STAGES - 1)>();              /* Q */
    att_sync_tiles();
    load_q();
    for (int i = 0; i < nit; ++i) {
#if STAGES == 1
        __syncthreads();                       /* previous tile fully consumed */
        load_k(i);
        load_v(i);
        att_wait<1>();                         /* K[i] */
        att_sync_tiles();
#else
        att_wait<2 * STAGES - 3>();            /* K[i] */
        att_sync_tiles();                      /* and tile i-1 fully consumed */
        load_k(i + STAGES - 1);
        load_v(i + STAGES - 1);
#endif
        float sc[ATT_MT][ATT_NT][4];
        qk(sc, kslot(i));
        softmax(sc, (t_begin + i) * BLOCK_N);
#if STAGES == 1
        att_wait<0>();                         /* V[i] */
#else
        att_wait<2 * (STAGES - 1)>();
#endif
        att_sync_tiles();
        pv(sc, vslot(i));
    }
#endif

    /* ---- epilogue */
#pragma unroll
    for (int mi = 0; mi < ATT_MT; ++mi)
#pragma unroll
        for (int r = 0; r < 2; ++r) {
            float l = l_run[mi][r];
            l += __shfl_xor_sync(0xffffffffu, l, 1);
            l += __shfl_xor_sync(0xffffffffu, l, 2);
            l_run[mi][r] = l;
        }

#if SPLITS == 1
#if O_STAGE
    /* Stage through the warp's own Q rows (only this warp ever reads them). */
    __syncwarp();
#pragma unroll
    for (int mi = 0; mi < ATT_MT; ++mi)
#pragma unroll
        for (int r = 0; r < 2; ++r) {
            const float inv = l_run[mi][r] > 0.f ? 1.f / l_run[mi][r] : 0.f;
            const int lr = wrow + mi * 16 + g + 8 * r;
#pragma unroll
            for (int dt = 0; dt < ATT_DT; ++dt) {
                const att_u32 v = att_pack(acc[mi][dt][2 * r] * inv, acc[mi][dt][2 * r + 1] * inv);
                const att_u32 a = sQ + att_off(lr, dt) + t4 * 4;
                asm volatile("st.shared.u32 [%0], %1;\n" :: "r"(a), "r"(v) : "memory");
            }
        }
    __syncwarp();
#pragma unroll
    for (int c = lane; c < ATT_MT * 16 * ATT_KCH; c += 32) {
        const int lr = c / ATT_KCH, ch = c % ATT_KCH;
        const int row = m0 + wrow + lr;
        att_u32 x0, x1, x2, x3;
        asm volatile("ld.shared.v4.u32 {%0,%1,%2,%3}, [%4];\n"
                     : "=r"(x0), "=r"(x1), "=r"(x2), "=r"(x3)
                     : "r"(sQ + att_off(wrow + lr, ch)) : "memory");
        if (row < S) {
            att_u16 *dst = O + base + (size_t)row * D + ch * 8;
            asm volatile("st.global.v4.u32 [%0], {%1,%2,%3,%4};\n"
                         :: "l"(dst), "r"(x0), "r"(x1), "r"(x2), "r"(x3) : "memory");
        }
    }
#else
#pragma unroll
    for (int mi = 0; mi < ATT_MT; ++mi)
#pragma unroll
        for (int r = 0; r < 2; ++r) {
            const int row = m0 + wrow + mi * 16 + g + 8 * r;
            if (row < S) {
                const float inv = l_run[mi][r] > 0.f ? 1.f / l_run[mi][r] : 0.f;
                att_u32 *dst = (att_u32 *)(O + base + (size_t)row * D + 2 * t4);
#pragma unroll
                for (int dt = 0; dt < ATT_DT; ++dt)
                    dst[dt * 4] = att_pack(acc[mi][dt][2 * r] * inv, acc[mi][dt][2 * r + 1] * inv);
            }
        }
#endif
#elif ATT_CLUSTER
    {
        /* Merge the SPLITS partial results of this query block through
         * distributed shared memory: every CTA publishes (m, l) per row and
         * its unnormalised fp32 accumulator; CTA `rank` then reduces rows
         * [rank * RPC, (rank + 1) * RPC) over the cluster and stores O. */
        const att_u32 sML = sQ;                              /* [BLOCK_M][2] f32 */
        const att_u32 sAcc = sQ + BLOCK_M * 8;               /* [BLOCK_M][RED_STRIDE] f32 */
        __syncthreads();                                     /* all smem reads of the loop done */
#pragma unroll
        for (int mi = 0; mi < ATT_MT; ++mi)
#pragma unroll
            for (int r = 0; r < 2; ++r) {
                const int lr = wrow + mi * 16 + g + 8 * r;
                const att_u32 a = sAcc + (lr * ATT_RED_STRIDE + 2 * t4) * 4;
#pragma unroll
                for (int dt = 0; dt < ATT_DT; ++dt)
                    asm volatile("st.shared.v2.f32 [%0], {%1,%2};\n"
                                 :: "r"(a + dt * 32), "f"(acc[mi][dt][2 * r]), "f"(acc[mi][dt][2 * r + 1])
                                 : "memory");
                if (t4 == 0)
                    asm volatile("st.shared.v2.f32 [%0], {%1,%2};\n"
                                 :: "r"(sML + lr * 8), "f"(m_run[mi][r]), "f"(l_run[mi][r]) : "memory");
            }
        att_cluster_sync();
        const int RPC = BLOCK_M / SPLITS;
        const att_u32 rank = att_cluster_rank();
        for (int c = tid; c < RPC * (D / 4); c += ATT_THREADS) {
            const int lr = (int)rank * RPC + c / (D / 4), c4 = c % (D / 4);
            const int row = m0 + lr;
            float mm[SPLITS], ll[SPLITS];
            float mmax = ATT_NEG_INF;
#pragma unroll
            for (int sp = 0; sp < SPLITS; ++sp) {
                asm volatile("ld.shared::cluster.v2.f32 {%0,%1}, [%2];\n"
                             : "=f"(mm[sp]), "=f"(ll[sp]) : "r"(att_mapa(sML + lr * 8, sp)) : "memory");
                mmax = fmaxf(mmax, mm[sp]);
            }
            float L = 0.f, o0 = 0.f, o1 = 0.f, o2 = 0.f, o3 = 0.f;
#pragma unroll
            for (int sp = 0; sp < SPLITS; ++sp) {
                const float w = (mm[sp] == ATT_NEG_INF) ? 0.f : att_exp(mm[sp] - mmax);
                float x0, x1, x2, x3;
                asm volatile("ld.shared::cluster.v4.f32 {%0,%1,%2,%3}, [%4];\n"
                             : "=f"(x0), "=f"(x1), "=f"(x2), "=f"(x3)
                             : "r"(att_mapa(sAcc + (lr * ATT_RED_STRIDE + c4 * 4) * 4, sp)) : "memory");
                L += w * ll[sp];
                o0 += w * x0; o1 += w * x1; o2 += w * x2; o3 += w * x3;
            }
            if (row < S) {
                const float inv = L > 0.f ? 1.f / L : 0.f;
                const att_u32 lo = att_pack(o0 * inv, o1 * inv), hi = att_pack(o2 * inv, o3 * inv);
                *(uint2 *)(O + base + (size_t)row * D + c4 * 4) = make_uint2(lo, hi);
            }
        }
        att_cluster_sync();                                  /* keep smem alive for readers */
    }
#else
    {
        const size_t srow0 = ((size_t)blockIdx.z * gridDim.y + bh) * S;
#pragma unroll
        for (int mi = 0; mi < ATT_MT; ++mi)
#pragma unroll
            for (int r = 0; r < 2; ++r) {
                const int row = m0 + wrow + mi * 16 + g + 8 * r;
                if (row < S) {
                    float *dst = Opart + (srow0 + row) * D + 2 * t4;
#pragma unroll
                    for (int dt = 0; dt < ATT_DT; ++dt)
                        *(float2 *)(dst + dt * 8) = make_float2(acc[mi][dt][2 * r], acc[mi][dt][2 * r + 1]);
                    if (t4 == 0)
                        *(float2 *)(ML + (srow0 + row) * 2) = make_float2(m_run[mi][r], l_run[mi][r]);
                }
            }
    }
#endif
#endif /* !WS */
}

/* ================================================================
 * Warp-specialised Hopper path (WS = 1, sm_90a): FlashAttention-3 style.
 *
 * Block = 1 producer warpgroup + CONSUMERS consumer warpgroups
 * (THREADS = 128 * (CONSUMERS + 1)); BLOCK_M = 64 * CONSUMERS query rows,
 * 64 per consumer warpgroup.  One thread of the producer issues TMA bulk
 * tensor copies (cp.async.bulk.tensor.3d over the [B*H, S, D] tensors, one
 * 64-column 128-byte-swizzled box per 64 head-dim columns) of Q once and of
 * the K and V tiles into a STAGES-deep ring; each slot has a "full"
 * mbarrier (completed by the copy's transaction bytes) and an "empty" one
 * (every consumer thread arrives once it no longer reads the slot), for K
 * and V separately, so K's slot is freed as soon as Q K^T is done.
 * Consumers run both products as wgmma (Q and P as register A operands,
 * K as K-major and V as MN-major smem B operands) with the online softmax
 * in registers.  The key tile is WS_BN (BLOCK_N, or 64 where BLOCK_N = 128
 * would spill at this D; WS_OV likewise).  REGSPLIT = 1 moves registers from the producer to the
 * consumers with setmaxnreg.  OVERLAP = 1 pipelines inside a warpgroup:
 * the Q K^T of tile n and the P V of tile n - 1 are issued together and
 * the softmax of tile n runs while P V is still on the tensor cores.
 * PINGPONG = 1 (with OVERLAP, 2 or 3 consumers) orders the consumer
 * warpgroups' GEMM issues round-robin through named barriers 1..CONSUMERS:
 * a warpgroup issues its Q K^T and P V only in its turn and then passes
 * the turn on, so one warpgroup's softmax runs while another's GEMMs hold
 * the tensor cores.  Every warpgroup takes nt + 1 turns (tiles it skips
 * under the causal mask included), so the turns always pair up.
 * Causal: only the tiles on a warpgroup's diagonal are masked; tiles past a
 * warpgroup's last row are skipped by that warpgroup (it only releases
 * their slots).  Smem: 1024-byte aligned sub-tiles [rows][64] halves with
 * the TMA 128-byte swizzle (16-byte chunk c of row r at chunk c ^ (r & 7)).
 * LOADS = 1 replaces the TMA copies by cp.async: all 128 producer threads
 * copy 16-byte chunks (cp.async.cg) into the same swizzled layout; rows at
 * or past S are zero-filled through the ignore-src predicate, which leaves
 * their source address unread (it may point past the tensor).  Then each
 * thread does cp.async.mbarrier.arrive.noinc on the slot's "full" barrier,
 * an arrival made once that thread's copies have landed: full barriers
 * count 128 arrivals instead of one arrival plus transaction bytes.  noinc
 * was chosen over commit/wait_group + arrive so the producer never waits
 * for its own copies and goes on to the next slot at once, like the TMA
 * producer (it waits for them only before it exits).  cp.async writes
 * through the generic proxy and wgmma reads through the async proxy, so a
 * consumer fences (fence.proxy.async) after waiting on a full K or V
 * barrier (Q is read by ldmatrix: no fence).  A thread's rows are
 * r0 + 16 i, all with the swizzle of row r0, so its copy loop (kept
 * rolled) only steps a source pointer and a smem address: it fits the 24
 * (32 with 3 consumers) registers the producer keeps under REGSPLIT,
 * except in the persistent loop with 2 consumers, which spills at 24:
 * there the producer keeps 32 and the consumers get 232 instead of 240
 * (WS_PREG, WS_CREG).
 * ================================================================ */

#define WS_THREADS (128 * (CONSUMERS + 1))
/* Register budget per consumer thread (task.json's WS_CAP / WS_REG): with
 * REGSPLIT setmaxnreg gives 240 (160 with 3 consumers), else the launch
 * bound's share.  Where a configuration's tile would not fit at this D
 * (e.g. 3 consumers at D = 128) the key tile shrinks to 64 and the
 * overlap (a second score tile live) is dropped, so one configuration
 * stays valid at every head dim. */
#define WS_CAP (REGSPLIT ? (CONSUMERS == 3 ? 160 : 240) \
                         : ((65536 / WS_THREADS / 8 * 8) < 255 ? (65536 / WS_THREADS / 8 * 8) : 255))
#define WS_EST0(bn, ov) (3 * D / 4 + 3 * (bn) / 4 + 20 * (ov) + 8)
#define WS_PS (PERSIST && WS_EST0(64, 0) + D / 8 <= WS_CAP)   /* the persistent loop: ~D/8 more */
#define WS_EST(bn, ov) (WS_EST0(bn, ov) + D / 8 * WS_PS)
#define WS_BN ((BLOCK_N == 128 && WS_EST(128, 0) > WS_CAP) ? 64 : BLOCK_N)
#define WS_OV (OVERLAP && WS_EST(WS_BN, 1) <= WS_CAP)
#define WS_PP (PINGPONG && WS_OV && CONSUMERS >= 2)
#define WS_KV_BYTES (WS_BN * D * 2)            /* one K (or V) tile */
#define WS_FULL (LOADS ? 128 : 1)              /* arrivals on a full barrier */
/* setmaxnreg under REGSPLIT: producer and consumer registers per thread,
 * within the launch's 168 (2 consumers) or 128 (3) per thread.  The
 * persistent cp.async producer (LOADS && WS_PS, 2 consumers) spills at 24
 * and keeps 32; its consumers get 232.  WS_CAP still says 240 there: every
 * such configuration the constraints allow compiles without spills at
 * 232 (ptxas; the persistent term of the estimate is loose by more), and
 * the LOADS twins keep the same key tile and overlap. */
#define WS_PREG ((CONSUMERS == 3 || (LOADS && WS_PS)) ? 32 : 24)
#define WS_CREG (CONSUMERS == 3 ? 160 : (WS_PREG == 32 ? 232 : 240))

struct alignas(64) AttTmap { unsigned long long v[16]; };

#if ATT_WSP
static_assert(BLOCK_M == 64 * CONSUMERS, "WS: 64 query rows per consumer warpgroup");
static_assert(D % 64 == 0, "WS: D must be a multiple of 64");
static_assert(WS_BN == 64 || WS_BN == 128, "WS: WS_BN 64 or 128");

static __device__ __forceinline__ void ws_bar_init(att_u32 bar, int count)
{
    asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" :: "r"(bar), "r"(count) : "memory");
}

static __device__ __forceinline__ void ws_wait(att_u32 bar, att_u32 parity)
{
    att_u32 done;
    do {
        asm volatile("{\n.reg .pred p;\n"
                     "mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n"
                     "selp.u32 %0, 1, 0, p;\n}\n"
                     : "=r"(done) : "r"(bar), "r"(parity) : "memory");
    } while (!done);
}

static __device__ __forceinline__ void ws_arrive(att_u32 bar)
{
    asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];\n" :: "r"(bar) : "memory");
}

static __device__ __forceinline__ void ws_expect(att_u32 bar, att_u32 bytes)
{
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" :: "r"(bar), "r"(bytes) : "memory");
}

/* rows [y, y + box) of head z, columns [x, x + 64), into the swizzled tile at dst */
static __device__ __forceinline__ void ws_tma(att_u32 dst, const AttTmap *map, int x, int y, int z, att_u32 bar)
{
    asm volatile("cp.async.bulk.tensor.3d.shared::cluster.global.mbarrier::complete_tx::bytes"
                 " [%0], [%1, {%2, %3, %4}], [%5];\n"
                 :: "r"(dst), "l"(map), "r"(x), "r"(y), "r"(z), "r"(bar) : "memory");
}

/* Load rows [row0, row0 + ROWS) of head bh of a [B*H, S, D] tensor into the
 * swizzled sub-tiles at dst (D / 64 of them, ROWS * 128 bytes apart) and
 * signal bar when they have landed.  LOADS = 0: thread 0 of the producer
 * issues one TMA box per sub-tile (map) and sets the transaction bytes;
 * rows past S are zero-filled by TMA.  LOADS = 1: producer thread tid
 * (0..127) copies chunk tid % 8 of rows tid / 8 + 16 i of every sub-tile
 * from g with cp.async (rows >= S zero-filled through ignore-src, their
 * source address not read) and arrives on bar through
 * cp.async.mbarrier.arrive.noinc. */
template <int ROWS>
static __device__ __forceinline__ void ws_load(att_u32 dst, const AttTmap *map, const att_u16 *g, int row0,
                                               int bh, int S, att_u32 bar, int tid)
{
#if LOADS
    const int r0 = tid >> 3, ch = tid & 7;
    int lim = S - row0 - r0;                   /* rows left from this pass on */
    const att_u16 *src = g + ((size_t)bh * S + row0 + r0) * D + ch * 8;
    att_u32 d = dst + r0 * 128 + ((ch ^ (r0 & 7)) << 4);
#pragma unroll 1   /* a rolled loop: the producer's few registers */
    for (int i = 0; i < ROWS / 16; ++i, src += 16 * D, d += 2048, lim -= 16) {
#pragma unroll
        for (int c = 0; c < D / 64; ++c)   /* ignore-src: zeros, the source is not read */
            asm volatile("{\n.reg .pred p;\nsetp.le.s32 p, %2, 0;\n"
                         "cp.async.cg.shared.global [%0], [%1], 16, p;\n}\n"
                         :: "r"(d + c * ROWS * 128), "l"(src + c * 64), "r"(lim) : "memory");
    }
    asm volatile("cp.async.mbarrier.arrive.noinc.shared::cta.b64 [%0];\n" :: "r"(bar) : "memory");
    (void)map;
#else
    ws_expect(bar, ROWS * D * 2);
#pragma unroll
    for (int c = 0; c < D / 64; ++c)
        ws_tma(dst + c * ROWS * 128, map, c * 64, row0, bh, bar);
    (void)g;
    (void)S;
    (void)tid;
#endif
}

/* wait for a full K or V slot that wgmma will read */
static __device__ __forceinline__ void ws_wait_full(att_u32 bar, att_u32 parity)
{
    ws_wait(bar, parity);
#if LOADS   /* cp.async wrote it through the generic proxy */
    asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
#endif
}

template <int N>
static __device__ __forceinline__ void ws_keep_r(att_u32 *p)
{
#pragma unroll
    for (int i = 0; i < N; ++i)
        asm volatile("" : "+r"(p[i]) :: "memory");
}

template <int N>
static __device__ __forceinline__ void ws_wg_wait(void)
{
    asm volatile("wgmma.wait_group.sync.aligned %0;\n" :: "n"(N) : "memory");
}

static __device__ __forceinline__ void ws_wg_commit(void)
{
    asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
}
#endif

extern "C" __global__ void __launch_bounds__(WS_THREADS, 1)
attn_fwd_ws(const __grid_constant__ AttTmap tmQ, const __grid_constant__ AttTmap tmK,
            const __grid_constant__ AttTmap tmV, att_u16 *__restrict__ O, int S, int BH, float scale,
            const att_u16 *__restrict__ Q, const att_u16 *__restrict__ K, const att_u16 *__restrict__ V)
{
#if ATT_WSP
    extern __shared__ __align__(128) unsigned char att_smem[];
    const int tid = threadIdx.x, warp = tid >> 5, lane = tid & 31;
    const int wg = tid >> 7;
    /* Tiles (query block m0 of head bh): one per CTA, or with PERSIST the
     * CTA walks tiles blockIdx.x, + gridDim.x, ...; causal tiles go
     * longest first (the last query blocks of every head, then the ones
     * before), non-causal ones head by head (K and V of a head stay in L2). */
    const int nmb = (S + BLOCK_M - 1) / BLOCK_M;
#if WS_PS
    const int ntiles = nmb * BH, tstep = gridDim.x, t0 = blockIdx.x;
#else
    const int ntiles = 1, tstep = 1, t0 = 0;
#endif
    auto coords = [&](int t, int &m0, int &bh) {
#if WS_PS && CAUSAL
        m0 = (nmb - 1 - t / BH) * BLOCK_M;
        bh = t % BH;
#elif WS_PS
        m0 = (t % nmb) * BLOCK_M;
        bh = t / nmb;
#elif CAUSAL
        m0 = (gridDim.x - 1 - blockIdx.x) * BLOCK_M;   /* heavy blocks first */
        bh = blockIdx.y;
#else
        m0 = blockIdx.x * BLOCK_M;
        bh = blockIdx.y;
#endif
        (void)t;
    };
    auto n_kv = [&](int m0) {   /* KV tiles of query block m0 */
#if CAUSAL
        return (min(S, m0 + BLOCK_M) + WS_BN - 1) / WS_BN;
#else
        return (S + WS_BN - 1) / WS_BN;
#endif
        (void)m0;
    };

    const att_u32 sQ = (att_smem_addr(att_smem) + 1023u) & ~1023u;
    const att_u32 sK = sQ + BLOCK_M * D * 2;
    const att_u32 sV = sK + STAGES * WS_KV_BYTES;
    const att_u32 bars = sV + STAGES * WS_KV_BYTES;   /* barQ, fullK[], fullV[], emptyK[], emptyV[], emptyQ */
    const att_u32 barQ = bars;
    auto fullK = [&](int s) { return bars + 8 + 8 * s; };
    auto fullV = [&](int s) { return bars + 8 + 8 * (STAGES + s); };
    auto emptyK = [&](int s) { return bars + 8 + 8 * (2 * STAGES + s); };
    auto emptyV = [&](int s) { return bars + 8 + 8 * (3 * STAGES + s); };
    const att_u32 emptyQ = bars + 8 + 8 * 4 * STAGES;

    if (tid == 0) {
        ws_bar_init(barQ, WS_FULL);
#pragma unroll
        for (int s = 0; s < STAGES; ++s) {
            ws_bar_init(fullK(s), WS_FULL);
            ws_bar_init(fullV(s), WS_FULL);
            ws_bar_init(emptyK(s), 128 * CONSUMERS);
            ws_bar_init(emptyV(s), 128 * CONSUMERS);
        }
        ws_bar_init(emptyQ, 128 * CONSUMERS);
        asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
    }
    __syncthreads();

    if (wg == 0) {
        /* ---------------- producer */
#if REGSPLIT
        asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;\n" :: "n"(WS_PREG));
#endif
        if (LOADS || (warp == 0 && lane == 0)) {   /* cp.async: the whole warpgroup; TMA: one thread */
          int kv = 0;                           /* KV tiles loaded so far: ring slot and phase */
          for (int t = t0, j = 0; t < ntiles; t += tstep, ++j) {
            int m0, bh;
            coords(t, m0, bh);
            const int nt = n_kv(m0);
            ws_wait(emptyQ, (j & 1) ^ 1);       /* the consumers hold the last Q in registers */
            ws_load<BLOCK_M>(sQ, &tmQ, Q, m0, bh, S, barQ, tid);
            for (int n = 0; n < nt; ++n, ++kv) {
                const int s = kv % STAGES;
                const att_u32 ph = (kv / STAGES) & 1;
                ws_wait(emptyK(s), ph ^ 1);
                ws_load<WS_BN>(sK + s * WS_KV_BYTES, &tmK, K, n * WS_BN, bh, S, fullK(s), tid);
                ws_wait(emptyV(s), ph ^ 1);
                ws_load<WS_BN>(sV + s * WS_KV_BYTES, &tmV, V, n * WS_BN, bh, S, fullV(s), tid);
            }
          }
#if LOADS   /* exit with no copy (and its barrier arrival) in flight */
          asm volatile("cp.async.wait_all;\n" ::: "memory");
#endif
        }
        return;
    }

    /* ---------------- consumers */
#if REGSPLIT
    asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;\n" :: "n"(WS_CREG));
#endif
    const int cw = wg - 1;                      /* consumer warpgroup */
    const int wq = warp & 3;                    /* warp in the warpgroup */
    const int g = lane >> 2, t4 = lane & 3;
    const int wrow = cw * 64 + wq * 16;         /* warp's first row in the CTA tile */
    const float sl = scale * 1.4426950408889634f;
#if WS_PP
    if (cw == CONSUMERS - 1)                    /* warpgroup 0 takes the first ping-pong turn */
        asm volatile("bar.arrive 1, 256;\n" ::: "memory");
#endif
    int g0 = 0;                                 /* KV tiles consumed before this tile: ring position */
    for (int t = t0, j = 0; t < ntiles; t += tstep, ++j) {
    int m0, bh;
    coords(t, m0, bh);
    const int nt = n_kv(m0);
    const bool last = t + tstep >= ntiles;
    /* tiles this warpgroup computes (the rest of the CTA's it only releases) */
#if CAUSAL
    const int wg_end = min(S, m0 + cw * 64 + 64);
    const int ntc = min(nt, (wg_end + WS_BN - 1) / WS_BN);
#else
    const int ntc = nt;
#endif

    float acc[D / 2];
    float m_run[2] = {ATT_NEG_INF, ATT_NEG_INF}, l_run[2] = {0.f, 0.f};
#pragma unroll
    for (int i = 0; i < D / 2; ++i) acc[i] = 0.f;

    /* Q fragments (mma.sync A layout per warp) from the swizzled Q tile */
    att_u32 qf[D / 16][4];
    ws_wait(barQ, j & 1);
    {
        const int r = wrow + (lane & 15);
#pragma unroll
        for (int kk = 0; kk < D / 16; ++kk) {
            const int ch = kk * 2 + (lane >> 4);
            const att_u32 a = sQ + (ch >> 3) * BLOCK_M * 128 + r * 128 + (((ch & 7) ^ (r & 7)) << 4);
            att_ldsm4(a, qf[kk][0], qf[kk][1], qf[kk][2], qf[kk][3]);
        }
    }
    ws_arrive(emptyQ);

    /* issue S = Q K^T for the K tile in slot s (no wait) */
    auto qk_issue = [&](float *sc, int s) {
        const att_u32 kb = sK + s * WS_KV_BYTES;
        constexpr int QN = WS_BN == 64 ? 32 : WS_BN;   /* see the WGMMA path's note on n64 */
        att_keep<WS_BN / 2>(sc);
        att_wg_fence();
#pragma unroll
        for (int kk = 0; kk < D / 16; ++kk)
#pragma unroll
            for (int c = 0; c < WS_BN / QN; ++c)
                AttWg<QN, 0>::mma(sc + c * QN / 2, qf[kk],
                                  att_desc(kb + (kk >> 2) * WS_BN * 128 + c * QN * 128 + (kk & 3) * 32, 16, 1024),
                                  kk > 0);
        ws_wg_commit();
    };
    /* issue O += P V for the V tile in slot s (no wait) */
    auto pv_issue = [&](att_u32 (*pa)[4], int s) {
        const att_u32 vb = sV + s * WS_KV_BYTES;
        att_keep<D / 2>(acc);
        att_wg_fence();
#pragma unroll
        for (int kk = 0; kk < WS_BN / 16; ++kk)
#pragma unroll
            for (int c = 0; c < D / 64; ++c)
                AttWg<64, 1>::mma(acc + c * 32, pa[kk], att_desc(vb + c * WS_BN * 128 + kk * 16 * 128, 1024, 1024), 1);
        ws_wg_commit();
    };
    /* mask + online softmax of the raw scores of tile n in place (P = exp);
     * returns the accumulator rescale factors in alpha */
    auto softmax = [&](float *sc, int n, float *alpha) {
        const int n0 = n * WS_BN;
#if CAUSAL
        const bool need_mask = (n0 + WS_BN > S) || (n0 + WS_BN - 1 > m0 + cw * 64);
#else
        const bool need_mask = n0 + WS_BN > S;
#endif
        if (need_mask) {
            const int kbase = n0 + 2 * t4;
#pragma unroll
            for (int r = 0; r < 2; ++r) {
#if CAUSAL
                const int lim = min(S, m0 + wrow + g + 8 * r + 1) - kbase;
#else
                const int lim = S - kbase;
#endif
#pragma unroll
                for (int nt8 = 0; nt8 < WS_BN / 8; ++nt8)
#pragma unroll
                    for (int e = 0; e < 2; ++e)
                        if (nt8 * 8 + e >= lim) sc[nt8 * 4 + 2 * r + e] = ATT_NEG_INF;
            }
        }
#pragma unroll
        for (int r = 0; r < 2; ++r) {
            float mx = ATT_NEG_INF;
#pragma unroll
            for (int nt8 = 0; nt8 < WS_BN / 8; ++nt8)
                mx = fmaxf(mx, fmaxf(sc[nt8 * 4 + 2 * r], sc[nt8 * 4 + 2 * r + 1]));
            mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 1));
            mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 2));
            const float m_new = fmaxf(m_run[r], mx * sl);
            const float m_use = (m_new == ATT_NEG_INF) ? 0.f : m_new;
            alpha[r] = att_exp(m_run[r] - m_use);
            m_run[r] = m_new;
            float sum = 0.f;
#pragma unroll
            for (int nt8 = 0; nt8 < WS_BN / 8; ++nt8)
#pragma unroll
                for (int e = 0; e < 2; ++e) {
                    const float p = att_exp(fmaf(sc[nt8 * 4 + 2 * r + e], sl, -m_use));
                    sc[nt8 * 4 + 2 * r + e] = p;
                    sum += p;
                }
            l_run[r] = l_run[r] * alpha[r] + sum;
        }
    };
    auto rescale = [&](const float *alpha) {
#pragma unroll
        for (int dt = 0; dt < D / 8; ++dt) {
            acc[dt * 4 + 0] *= alpha[0];
            acc[dt * 4 + 1] *= alpha[0];
            acc[dt * 4 + 2] *= alpha[1];
            acc[dt * 4 + 3] *= alpha[1];
        }
    };
    auto pack = [&](const float *sc, att_u32 (*pa)[4]) {
#pragma unroll
        for (int kk = 0; kk < WS_BN / 16; ++kk) {
            pa[kk][0] = att_pack(sc[(2 * kk) * 4 + 0], sc[(2 * kk) * 4 + 1]);
            pa[kk][1] = att_pack(sc[(2 * kk) * 4 + 2], sc[(2 * kk) * 4 + 3]);
            pa[kk][2] = att_pack(sc[(2 * kk + 1) * 4 + 0], sc[(2 * kk + 1) * 4 + 1]);
            pa[kk][3] = att_pack(sc[(2 * kk + 1) * 4 + 2], sc[(2 * kk + 1) * 4 + 3]);
        }
    };

    /* ping-pong turns: bar.sync on this warpgroup's barrier waits for the
     * previous warpgroup's bar.arrive (256 threads: both warpgroups) */
    auto pp_sync = [&]() {
#if WS_PP
        asm volatile("bar.sync %0, 256;\n" :: "r"(1 + cw) : "memory");
#endif
    };
    auto pp_arrive = [&](int round) {   /* the last turn of the last warpgroup passes nothing on */
#if WS_PP
        if (!(cw == CONSUMERS - 1 && round == nt && last))
            asm volatile("bar.arrive %0, 256;\n" :: "r"(1 + (cw + 1) % CONSUMERS) : "memory");
#endif
        (void)round;
        (void)last;
    };

    float sc[WS_BN / 2];
    att_u32 pa[WS_BN / 16][4];
    float alpha[2];
#if WS_OV
    if (ntc > 0) {
        ws_wait_full(fullK(g0 % STAGES), (g0 / STAGES) & 1);
        pp_sync();
        qk_issue(sc, g0 % STAGES);
        pp_arrive(0);
        ws_wg_wait<0>();
        att_keep<WS_BN / 2>(sc);
        ws_arrive(emptyK(g0 % STAGES));
        softmax(sc, 0, alpha);
        pack(sc, pa);
    }
    for (int n = 1; n < ntc; ++n) {
        const int s = (g0 + n) % STAGES, sp = (g0 + n - 1) % STAGES;
        ws_wait_full(fullK(s), ((g0 + n) / STAGES) & 1);
        ws_wait_full(fullV(sp), ((g0 + n - 1) / STAGES) & 1);
        pp_sync();
        qk_issue(sc, s);
        pv_issue(pa, sp);
        pp_arrive(n);
        ws_wg_wait<1>();                        /* Q K^T of tile n done */
        att_keep<WS_BN / 2>(sc);
        ws_arrive(emptyK(s));
        softmax(sc, n, alpha);
        ws_wg_wait<0>();                        /* P V of tile n - 1 done */
        att_keep<D / 2>(acc);
        ws_keep_r<WS_BN / 4>(&pa[0][0]);
        ws_arrive(emptyV(sp));
        rescale(alpha);
        pack(sc, pa);
    }
    if (ntc > 0) {
        const int sp = (g0 + ntc - 1) % STAGES;
        ws_wait_full(fullV(sp), ((g0 + ntc - 1) / STAGES) & 1);
        pp_sync();
        pv_issue(pa, sp);
        pp_arrive(ntc);
        ws_wg_wait<0>();
        att_keep<D / 2>(acc);
        ws_keep_r<WS_BN / 4>(&pa[0][0]);
        ws_arrive(emptyV(sp));
    }
#else
    for (int n = 0; n < ntc; ++n) {
        const int s = (g0 + n) % STAGES;
        const att_u32 ph = ((g0 + n) / STAGES) & 1;
        ws_wait_full(fullK(s), ph);
        qk_issue(sc, s);
        ws_wg_wait<0>();
        att_keep<WS_BN / 2>(sc);
        ws_arrive(emptyK(s));
        softmax(sc, n, alpha);
        rescale(alpha);
        pack(sc, pa);
        ws_wait_full(fullV(s), ph);
        pv_issue(pa, s);
        ws_wg_wait<0>();
        att_keep<D / 2>(acc);
        ws_keep_r<WS_BN / 4>(&pa[0][0]);
        ws_arrive(emptyV(s));
    }
#endif
    /* tiles past this warpgroup's rows (causal): release their slots */
    for (int n = ntc; n < nt; ++n) {
        const int s = (g0 + n) % STAGES;
        const att_u32 ph = ((g0 + n) / STAGES) & 1;
        ws_wait(fullK(s), ph);
        ws_arrive(emptyK(s));
        ws_wait(fullV(s), ph);
        ws_arrive(emptyV(s));
        pp_sync();                              /* keep the ping-pong turns paired */
        pp_arrive(n + 1);
    }

    /* ---- epilogue: normalise, store fp16 rows */
#pragma unroll
    for (int r = 0; r < 2; ++r) {
        float l = l_run[r];
        l += __shfl_xor_sync(0xffffffffu, l, 1);
        l += __shfl_xor_sync(0xffffffffu, l, 2);
        const int row = m0 + wrow + g + 8 * r;
        if (row < S) {
            const float inv = l > 0.f ? 1.f / l : 0.f;
            att_u32 *dst = (att_u32 *)(O + ((size_t)bh * S + row) * D + 2 * t4);
#pragma unroll
            for (int dt = 0; dt < D / 8; ++dt)
                dst[dt * 4] = att_pack(acc[dt * 4 + 2 * r] * inv, acc[dt * 4 + 2 * r + 1] * inv);
        }
    }
    g0 += nt;
    }   /* tiles */
#endif
}


/* ------------------------------------------------------------- combine */

extern "C" __global__ void __launch_bounds__(128)
attn_combine(const float *__restrict__ Opart, const float *__restrict__ ML,
             att_u16 *__restrict__ O, int rows)
{
    const int idx = blockIdx.x * 128 + threadIdx.x;
    const int row = idx / (D / 4), c4 = idx % (D / 4);
    if (row >= rows)
        return;
    float mmax = ATT_NEG_INF;
#pragma unroll
    for (int s = 0; s < SPLITS; ++s)
        mmax = fmaxf(mmax, ML[((size_t)s * rows + row) * 2]);
    float L = 0.f, o0 = 0.f, o1 = 0.f, o2 = 0.f, o3 = 0.f;
#pragma unroll
    for (int s = 0; s < SPLITS; ++s) {
        const float2 ml = *(const float2 *)(ML + ((size_t)s * rows + row) * 2);
        const float w = (ml.x == ATT_NEG_INF) ? 0.f : att_exp(ml.x - mmax);
        const float4 p = *(const float4 *)(Opart + ((size_t)s * rows + row) * D + c4 * 4);
        L += w * ml.y;
        o0 += w * p.x; o1 += w * p.y; o2 += w * p.z; o3 += w * p.w;
    }
    const float inv = L > 0.f ? 1.f / L : 0.f;
    const att_u32 lo = att_pack(o0 * inv, o1 * inv), hi = att_pack(o2 * inv, o3 * inv);
    *(uint2 *)(O + (size_t)row * D + c4 * 4) = make_uint2(lo, hi);
}

/*
 * attention.cu -- evoeng template: FlashAttention-2-style fp16 / bf16
 * attention forward pass, O = softmax(Q K^T * scale [+ causal mask]) V, with
 * Q and O in layout [B, H, SQ, D], K and V in [B, HKV, S, D] (fp16, or
 * bf16 with DTYPE = 1), fp32 softmax statistics and accumulation.  Query
 * head h reads K/V head h / G (G = H / HKV query heads a K/V head: GQA,
 * MQA at HKV = 1); SQ queries (decoding: a few) run against S keys.
 *
 * Structure: one CTA owns BLOCK_M query rows of one (b, h) pair
 * (grid.x = ceil(SQ / BLOCK_M), grid.y = B*H, grid.z = SPLITS; with
 * PACKGQA the rows of a K/V head's G query heads: see the knob).  Each of the
 * ATT_WARPS warps owns BLOCK_M / ATT_WARPS rows (MT = 1 or 2 m16 tiles).  K and V
 * tiles of BLOCK_N keys stream through shared memory with cp.async
 * (STAGES-deep ring, separate commit groups for K and V so QK^T starts
 * while V is still in flight), are read with ldmatrix (.trans for V), and
 * both products run on tensor cores with mma.sync m16n8k16 (f16 or bf16
 * in, f32 accumulate).  The softmax is online (running max m and sum l per row);
 * P stays in registers: the QK^T accumulator layout is the A-operand layout
 * of the PV product.  With SPLITS > 1 each CTA handles a contiguous share of
 * the KV tiles and writes unnormalised fp32 partial O plus (m, l) to
 * scratch; attn_combine merges the splits with log-sum-exp.
 *
 * Only device code, in three files: this one (knobs, helpers, attn_combine),
 * attention_fa2.cuh (attn_fwd, the mma.sync / wgmma kernel) and
 * attention_ws.cuh (attn_fwd_ws, the warp-specialised kernel).  evoeng
 * inlines the two parts where they are included when it loads the task
 * (src/task/template.h, template_expand), with #line directives, so a
 * rendered source, an export or a prompt is still one file.  No other
 * includes (NVRTC on the worker has no CUDA headers).
 * All PTX used (cp.async, ldmatrix, mma.sync m16n8k16, cvt f16x2 / bf16x2)
 * needs sm_80 or newer.
 *
 * Compile-time dims: D (head dim, multiple of 16; 64 or 128 with SWIZZLE),
 * CAUSAL (0/1: key j visible to query i iff j <= i + S - SQ, the
 * FlashAttention convention: the queries are the last SQ positions of the
 * S keys; at SQ = S, j <= i) and DTYPE (0: Q, K, V
 * and O in fp16, 1: in bf16; only the MMAs' input type, the f32 -> 16-bit
 * conversions of P and O and LSUM's ones change, through ATT_T).
 * The runtime dims: S, SQ (1 <= SQ <= S) and G = H / HKV, arguments of
 * every entry (the last two appended, so a kernel written for the older
 * signatures still launches from the same plan: extra parameters are
 * ignored; it is then right only at SQ = S and HKV = H).
 * Entries:
 *   attn_fwd(Q, K, V, O, Opart, ML, S, scale, SQ, G)
 *       Opart: f32 [SPLITS, B*H, SQ, D], ML: f32 [SPLITS, B*H, SQ, 2];
 *       both untouched when SPLITS == 1.
 *   attn_combine(Opart, ML, O, rows)   rows = B*H*SQ; one thread per 4
 *       output elements: grid = ceil(rows * D / 4 / 128), block = 128.
 *   attn_fwd_ws(tmQ, tmK, tmV, O, S, QH, scale, Q, K, V, SQ, G)   the
 *       warp-specialised sm_90a path (WS = 1; its own section at the end
 *       of this file): tensor maps over Q ([QH, M, D]: QH = B*H heads of M
 *       = SQ rows, with PACKGQA B*HKV of G*SQ), K and V ([B*HKV, S, D]),
 *       64 x rows boxes, 128-byte swizzle, for the TMA loads (LOADS = 0),
 *       the raw pointers for the cp.async loads (LOADS = 1).
 *       With WS = 1 attn_fwd is an empty stub and vice versa.
 *
 * Knobs (all #define, defaults below):
 *   BLOCK_M      query rows per CTA; a multiple of 16 * (warps per CTA)
 *   BLOCK_N      keys per KV tile (multiple of 16); 256 on the WS path
 *                only (2 consumers with REGSPLIT, or 1, at D = 64: half the
 *                tiles of 128, so half the waits, maxima and rescales a
 *                row; where it does not fit the tile falls back to 128)
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
 *   O_STAGE      1: 16-byte coalesced output stores: the FA2 path stages
 *                the fp16 tile through shared memory, the WS path
 *                transposes the accumulator pairs across each quad with
 *                shuffles (no shared memory); 0: store 4-byte fragments
 *   WGMMA        1 (sm_90a, D = 64, one m16 tile per warp, warps in whole
 *                warpgroups, SWIZZLE): both products run as Hopper
 *                warpgroup MMAs (wgmma.mma_async m64nNk16) reading K and V
 *                straight from the swizzled shared tiles through matrix
 *                descriptors (128-byte swizzle; V as the transposed B
 *                operand) with Q and P as register A operands; tiles are
 *                1024-byte aligned.  At D != 64, or compiled for a target
 *                other than sm_90a, the mma.sync path is used.
 *   LAZY         (WS path) 1: a warp's running row maxima move only when
 *                one would grow by more than 2^8; until then the softmax
 *                keeps the stale maxima (P <= 2^8) and skips the
 *                accumulator rescale (D / 2 multiplies a thread per key
 *                tile) and its exponentials; 0: every tile rescales
 *   TAIL         (WS path with PERSIST, non-causal, 2 or 3 consumers) 1: when
 *                the query tiles leave a last wave partly full (e.g. 352
 *                tiles of 192 rows on 132 SMs: 2.67 waves, run as 3), the
 *                heads after the last full wave are cut into items of
 *                (CONSUMERS - 1) * 64 rows instead, one warpgroup idle in
 *                each, if that many items fit in one wave (then the last
 *                wave costs about (CONSUMERS - 1) / CONSUMERS of a tile);
 *                otherwise, and with causal masking, the same schedule as 0.
 *                0.945 of TAIL=0 at B4 H8 S2048 D64 with 3 consumers on an
 *                H100 (docs/results/raw/2026-11-25/19_uniform_cw_tail_h100.txt)
 *   LSUM         (WS path) 1: the softmax row sums run on the tensor cores,
 *                a P x ones wgmma (m64n8k16, ones in 512 bytes of shared
 *                memory) after each k16 step of P V, accumulated and
 *                rescaled with O; frees the 64 FADDs a thread per
 *                128-key tile and the final quad shuffles for 8 HGMMAs
 *   DESCADD      (WS path and WGMMA) 1: wgmma descriptors by adding each
 *                step's offset to the tile's descriptor; 0: each built
 *                from its shared-memory address.  Same work; what changes
 *                is the issue schedule (the uniform instructions between
 *                the wgmmas), which the GPU rewards in some configurations
 *                and punishes in others (bench/ws_ab.sh descadd)
 *   PVSPLIT      (WS path without the intra-warpgroup overlap) 1 / 2: a
 *                tile's P V goes to the tensor cores in 2 / 4 chunks of k16
 *                steps, each as soon as its exponentials are packed, while
 *                the warpgroup computes the next chunk's; 0: after the
 *                whole softmax
 *   EARLY        (WS path without the intra-warpgroup overlap) 1: each
 *                full-barrier wait runs under the wgmma before it (V's
 *                under Q K^T, the next K's under P V); 0: just before the
 *                wgmma that reads the slot
 *   STAGGER      (WS path without the intra-warpgroup overlap, 2
 *                consumers) 1: in a CTA's first tile the second consumer
 *                warpgroup issues its first Q K^T only once the first
 *                one's has completed, so one's GEMMs run under the other's
 *                softmax from the start (a one-time offset, not ping-pong
 *                turns); 0: both start together
 *   MAXSKIP      (WS path at 2 consumers with LAZY, without the
 *                intra-warpgroup overlap, PVSPLIT or LSUM) 1: once a row
 *                has a running maximum, a tile's exponentials are taken
 *                against it with no row maxima; a tile where a thread's
 *                sum of a row's P reaches 2^15 brings those rows down by a
 *                power of two (or, where P overflowed, computes the scores
 *                again with mma.sync, K from global memory); 2: the same,
 *                but a tile with keys
 *                to mask (causal diagonal, keys past S) takes LAZY's
 *                softmax, so the fast way has no mask; 0: LAZY's maxima
 *                every tile.  3 and 4 (tests only, outside the search
 *                space): every tile the rescale way / the recompute way
 *   PACKGQA      1: a CTA's rows are the G query heads of one K/V head
 *                one after another (row r: head r / SQ of the group,
 *                query position r % SQ; Q and O of a group are G*SQ
 *                contiguous rows, so only the causal mask sees the
 *                packing), grid.y = B*HKV: for decoding (SQ of 1..16) a
 *                K/V tile is loaded once for the whole group instead of
 *                once per query head, and the M tile is not mostly
 *                padding; 0: one query head a CTA (grid.y = B*H)
 *   OTMA         (WS path without PERSIST) 1: each consumer warp writes
 *                its 16 rows of O into the Q tile's shared memory (Q is in
 *                registers by then) and stores them with one TMA store a
 *                64-column box (the tensor map tmO, one more argument);
 *                0: O_STAGE's stores from registers
 *   WS, CONSUMERS, REGSPLIT, PINGPONG, PERSIST, LOADS, LAZY, TAIL, LSUM, PVSPLIT, EARLY, STAGGER, MAXSKIP: the warp-specialised path
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
#ifndef DTYPE
#define DTYPE 0
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
#ifndef LAZY
#define LAZY 0
#endif
#ifndef TAIL
#define TAIL 0
#endif
#ifndef LSUM
#define LSUM 0
#endif
#ifndef DESCADD
#define DESCADD 0
#endif
#ifndef PVSPLIT
#define PVSPLIT 0
#endif
#ifndef EARLY
#define EARLY 0
#endif
#ifndef STAGGER
#define STAGGER 0
#endif
#ifndef MAXSKIP
#define MAXSKIP 0
#endif
#ifndef PACKGQA
#define PACKGQA 0
#endif
#ifndef OTMA
#define OTMA 0
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
#if DTYPE == 1
#define ATT_T "bf16"                             /* PTX type of Q, K, V, P, O */
#define ATT_ONES 0x3F803F80u                     /* two bf16 1.0 */
#elif DTYPE == 0
#define ATT_T "f16"
#define ATT_ONES 0x3C003C00u                     /* two fp16 1.0 */
#else
#error "DTYPE: 0 (fp16) or 1 (bf16)"
#endif

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

/* c += a (16x16, row) * b (16x8, col); f16 or bf16 inputs, f32 accumulators. */
static __device__ __forceinline__ void att_mma(float *c, const att_u32 *a, att_u32 b0, att_u32 b1)
{
    asm("mma.sync.aligned.m16n8k16.row.col.f32." ATT_T "." ATT_T ".f32 "
        "{%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
        : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

#if !ATT_WG   /* the mma.sync path's transposed V loads */
static __device__ __forceinline__ void att_ldsm4t(att_u32 a, att_u32 &r0, att_u32 &r1,
                                                  att_u32 &r2, att_u32 &r3)
{
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];\n"
                 : "=r"(r0), "=r"(r1), "=r"(r2), "=r"(r3) : "r"(a));
}
#endif

/* Pack two floats into f16x2 (bf16x2): lo in the low half. */
static __device__ __forceinline__ att_u32 att_pack(float lo, float hi)
{
    att_u32 r;
    asm("cvt.rn." ATT_T "x2.f32 %0, %1, %2;\n" : "=r"(r) : "f"(hi), "f"(lo));
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

/* ------------------------------------------ query rows and positions */

/* Query position of row r of a CTA's row space (PACKGQA: G heads of SQ
 * rows one after another).  Causal: position i sees keys j <= i + S - SQ. */
static __device__ __forceinline__ int att_qpos(int r, int SQ)
{
#if PACKGQA
    return r % SQ;
#else
    (void)SQ;
    return r;
#endif
}

/* The least (hi = 0) or greatest (hi = 1) query position of rows [r0, r1)
 * of a row space of M rows (rows at or past M, padding, count as r0's
 * head); without PACKGQA simply r0 or r1 - 1. */
static __device__ __forceinline__ int att_qedge(int r0, int r1, int M, int SQ, int hi)
{
#if PACKGQA
    r1 = max(min(r1, M), r0 + 1);
    if (r0 / SQ != (r1 - 1) / SQ)   /* the rows span two heads or more: every position */
        return hi ? SQ - 1 : 0;
    return (hi ? r1 - 1 : r0) % SQ;
#else
    (void)M;
    (void)SQ;
    return hi ? r1 - 1 : r0;
#endif
}

#if ATT_WG || ATT_WSP
/* ------------------------------------------------------- Hopper wgmma */

/* Shared-memory matrix descriptor: start address, the leading and stride
 * byte offsets (16-byte units) and the layout type in bits 62-63 (0: no
 * swizzle, 1: 128-byte swizzle). */
static __device__ __forceinline__ att_u64 att_desc_layout(att_u32 addr, att_u32 lbo, att_u32 sbo, att_u32 layout)
{
    return (att_u64)((addr & 0x3FFFFu) >> 4) | ((att_u64)(lbo >> 4) << 16) | ((att_u64)(sbo >> 4) << 32) |
           ((att_u64)layout << 62);
}

/* The 128-byte-swizzled tiles' descriptor.  A K-major operand (K tile: 16
 * keys' halves contiguous per row) needs only the stride between 8-row
 * groups (1024 bytes); for the MN-major V tile the 8-row groups along K are
 * also 1024 bytes apart and the tile is one 64-wide swizzle atom across N,
 * so both offsets are 1024. */
static __device__ __forceinline__ att_u64 att_desc(att_u32 addr, att_u32 lbo, att_u32 sbo)
{
    return att_desc_layout(addr, lbo, sbo, 1);
}

/* The descriptor of addr + off from the descriptor d of addr: off (a
 * multiple of 16, addr + off below 256 KB) moves only the start-address
 * field, so the add stays in the low word.  DESCADD = 1 builds each tile's
 * descriptors this way (one uniform add a wgmma, the wgmmas issued back to
 * back); 0 builds each from its address (a mask, a shift and an or a
 * wgmma between the issues: the code from before DESCADD was a knob). */
static __device__ __forceinline__ att_u64 att_desc_add(att_u64 d, att_u32 off)
{
    return ((d >> 32) << 32) | (att_u32)((att_u32)d + (off >> 4));
}

#if DESCADD
#define ATT_DESC(base, d0, off, lbo, sbo) att_desc_add(d0, off)
#else
#define ATT_DESC(base, d0, off, lbo, sbo) att_desc((base) + (off), lbo, sbo)
#endif

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
template <int TRANS> struct AttWg<8, TRANS> {
    static __device__ __forceinline__ void mma(float *d, const att_u32 *a, att_u64 desc, int accumulate)
    {
        asm volatile(
            "{\n.reg .pred p;\nsetp.ne.b32 p, %9, 0;\n"
            "wgmma.mma_async.sync.aligned.m64n8k16.f32." ATT_T "." ATT_T " {%0, %1, %2, %3}, "
            "{%4, %5, %6, %7}, %8, p, 1, 1, %10;\n}\n"
            : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
            : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(desc), "r"(accumulate), "n"(TRANS));
    }
};
template <int TRANS> struct AttWg<32, TRANS> {
    static __device__ __forceinline__ void mma(float *d, const att_u32 *a, att_u64 desc, int accumulate)
    {
        asm volatile(
            "{\n.reg .pred p;\nsetp.ne.b32 p, %21, 0;\n"
            "wgmma.mma_async.sync.aligned.m64n32k16.f32." ATT_T "." ATT_T " {"
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
            "wgmma.mma_async.sync.aligned.m64n64k16.f32." ATT_T "." ATT_T " {"
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
            "wgmma.mma_async.sync.aligned.m64n128k16.f32." ATT_T "." ATT_T " {"
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

#include "attention_fa2.cuh"

#include "attention_ws.cuh"


/* ------------------------------------------------------------- combine */

extern "C" __global__ void __launch_bounds__(128)
attn_combine(const float *__restrict__ Opart, const float *__restrict__ ML,
             att_u16 *__restrict__ O, int rows)
{
    /* A body only where the launch plan runs it (a KV split without the
     * cluster merge): elsewhere NVRTC saves the kernel, 2-7% of a unit. */
#if SPLITS > 1 && !ATT_CLUSTER
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
#endif
}

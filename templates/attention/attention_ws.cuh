/* ================================================================
 * Warp-specialised Hopper path (WS = 1, sm_90a): FlashAttention-3 style.
 *
 * Block = 1 producer warpgroup + CONSUMERS consumer warpgroups
 * (THREADS = 128 * (CONSUMERS + 1)); BLOCK_M = 64 * CONSUMERS query rows,
 * 64 per consumer warpgroup.  One thread of the producer issues TMA bulk
 * tensor copies (cp.async.bulk.tensor.3d over Q [QH, M, D] and K, V
 * [B*HKV, S, D]: attention.cu's header; query head bh reads K/V head
 * bh / G, with PACKGQA bh itself, the CTA's rows its G heads; one
 * 64-column 128-byte-swizzled box per 64 head-dim columns) of Q once and of
 * the K and V tiles into a STAGES-deep ring; each slot has a "full"
 * mbarrier (completed by the copy's transaction bytes) and an "empty" one
 * (every consumer thread arrives once it no longer reads the slot), for K
 * and V separately, so K's slot is freed as soon as Q K^T is done.
 * Consumers run both products as wgmma (Q and P as register A operands,
 * K as K-major and V as MN-major smem B operands) with the online softmax
 * in registers.  The key tile is WS_BN (BLOCK_N, or 128 where BLOCK_N = 256
 * would spill at this D, or 64 where 128 would; WS_OV likewise; at 256
 * keys Q K^T is two n128 wgmmas a k16 step and there is no overlap).  REGSPLIT = 1 moves registers from the producer to the
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
 * barrier (Q is read by ldmatrix: no fence; with TMA loads it is Q that
 * crosses proxies, fenced before emptyQ in the persistent loop).  A thread's rows are
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
/* 256-key tiles: the scores (128 registers) become P in place, chunk by
 * chunk; no second score tile (the overlap) fits beside them (WS_OV) */
#define WS_EST0(bn, ov) ((bn) == 256 ? 3 * D / 4 + (bn) / 2 + 32 : 3 * D / 4 + 3 * (bn) / 4 + 20 * (ov) + 8)
#define WS_PS (PERSIST && WS_EST0(64, 0) + D / 8 <= WS_CAP)   /* the persistent loop: ~D/8 more */
#define WS_EST(bn, ov) (WS_EST0(bn, ov) + D / 8 * WS_PS)
#define WS_BN1 ((BLOCK_N == 256 && WS_EST(256, 0) > WS_CAP) ? 128 : BLOCK_N)
#define WS_BN ((WS_BN1 == 128 && WS_EST(128, 0) > WS_CAP) ? 64 : WS_BN1)
#define WS_OV (OVERLAP && WS_BN <= 128 && WS_EST(WS_BN, 1) <= WS_CAP)
#define WS_PP (PINGPONG && WS_OV && CONSUMERS >= 2)
#define WS_PVC (PVSPLIT == 2 ? 4 : 2)          /* PVSPLIT: P V chunks a tile */
#define WS_MS (MAXSKIP && LAZY && !LSUM && !WS_OV && !PVSPLIT)   /* exponentials without row maxima */
#define WS_MS_TH 32768.f                       /* MAXSKIP: a thread's row sum of P that sends a tile the long way */
#define WS_TL (TAIL && WS_PS && !CAUSAL && CONSUMERS >= 2)   /* the tail of TAIL items */
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
static_assert(WS_BN == 64 || WS_BN == 128 || WS_BN == 256, "WS: WS_BN 64, 128 or 256");

#include "attention_ws_sync.cuh"
#endif

extern "C" __global__ void __launch_bounds__(WS_THREADS, 1)
attn_fwd_ws(const __grid_constant__ AttTmap tmQ, const __grid_constant__ AttTmap tmK,
            const __grid_constant__ AttTmap tmV, att_u16 *__restrict__ O, int S, int BH, float scale,
            const att_u16 *__restrict__ Q, const att_u16 *__restrict__ K, const att_u16 *__restrict__ V,
            int SQ, int G
#if OTMA
            , const __grid_constant__ AttTmap tmO
#endif
            )
{
#if ATT_WSP
    extern __shared__ __align__(128) unsigned char att_smem[];
    const int tid = threadIdx.x, warp = tid >> 5, lane = tid & 31;
    const int wg = tid >> 7;
    /* Tiles (query block m0 of head bh): one per CTA, or with PERSIST the
     * CTA walks tiles blockIdx.x, + gridDim.x, ...; causal tiles go
     * longest first (the last query blocks of every head, then the ones
     * before), non-causal ones head by head (K and V of a head stay in L2). */
    /* BH query heads of M rows each (PACKGQA: B*HKV groups of G heads);
     * query head bh reads K/V head kv_head(bh) */
#if PACKGQA
    const int M = G * SQ;
#else
    const int M = SQ;
#endif
    const int off = S - SQ;                     /* causal: position i sees keys <= i + off */
    (void)off;                                     /* read by the causal mask only */
    auto kv_head = [&](int bh) { return PACKGQA ? bh : bh / G; };
    const int nmb = (M + BLOCK_M - 1) / BLOCK_M;
#if WS_PS
    const int tstep = gridDim.x, t0 = blockIdx.x;
    int ntiles = nmb * BH;
#else
    const int ntiles = 1, tstep = 1, t0 = 0;
#endif
#if WS_TL
    /* TAIL: tiles [0, tf) fill whole waves; the rest of head th (from row
     * tr) and the heads after it become items of TL_R rows (one warpgroup
     * idle), tn0 of them in head th and tnr in each later head, when they
     * fit in one wave; else tf = ntiles and nothing changes */
    constexpr int TL_R = (CONSUMERS - 1) * 64;
    auto tail_items = [&](int tf, int &th, int &tr, int &tn0, int &tnr) {   /* recomputed: fewer live registers */
        th = tf / nmb;
        tr = tf % nmb * BLOCK_M;
        tn0 = (M - tr + TL_R - 1) / TL_R;
        tnr = (M + TL_R - 1) / TL_R;
        return tn0 + (BH - th - 1) * tnr;
    };
    int tf = ntiles / tstep * tstep;
    {
        int th, tr, tn0, tnr;
        const int ni = tail_items(tf, th, tr, tn0, tnr);
        if (tf < ntiles && ni <= tstep)
            ntiles = tf + ni;
        else
            tf = ntiles;
    }
#endif
    /* query block m0 of head bh, its rows (BLOCK_M, or TL_R for a TAIL item) */
    auto coords = [&](int t, int &m0, int &bh, int &rows) {
        rows = BLOCK_M;
#if WS_TL
        if (t >= tf) {
            const int i = t - tf;
            int th, tr, tn0, tnr;
            tail_items(tf, th, tr, tn0, tnr);
            rows = TL_R;
            bh = i < tn0 ? th : th + 1 + (i - tn0) / tnr;
            m0 = i < tn0 ? tr + i * TL_R : (i - tn0) % tnr * TL_R;
            return;
        }
#endif
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
        return (min(S, att_qedge(m0, m0 + BLOCK_M, M, SQ, 1) + 1 + off) + WS_BN - 1) / WS_BN;
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
    static_assert(8 + 8 * 4 * STAGES + 8 <= 128, "WS: the barriers fit below the ones");
#if LSUM
    const att_u32 sOnes = bars + 128;           /* 512 bytes of fp16 (bf16) ones */
#endif

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
#if LSUM   /* written through the generic proxy, read by wgmma through the async one */
    if (tid >= 128 && tid < 256) {
        asm volatile("st.shared.u32 [%0], %1;\n" :: "r"(sOnes + (tid - 128) * 4), "r"(ATT_ONES) : "memory");
        asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
    }
#endif
    __syncthreads();

    if (wg == 0) {
        /* ---------------- producer */
#if REGSPLIT
        asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;\n" :: "n"(WS_PREG));
#endif
        if (LOADS || (warp == 0 && lane == 0)) {   /* cp.async: the whole warpgroup; TMA: one thread */
          int kv = 0;                           /* KV tiles loaded so far: ring slot and phase */
          for (int t = t0, j = 0; t < ntiles; t += tstep, ++j) {
            int m0, bh, rows;
            coords(t, m0, bh, rows);
            (void)rows;
            const int nt = n_kv(m0);
            ws_wait(emptyQ, (j & 1) ^ 1);       /* the consumers hold the last Q in registers */
            ws_load<BLOCK_M>(sQ, &tmQ, Q, m0, bh, M, barQ, tid);
            const int kvh = kv_head(bh);
            for (int n = 0; n < nt; ++n, ++kv) {
                const int s = kv % STAGES;
                const att_u32 ph = (kv / STAGES) & 1;
                ws_wait(emptyK(s), ph ^ 1);
                ws_load<WS_BN>(sK + s * WS_KV_BYTES, &tmK, K, n * WS_BN, kvh, S, fullK(s), tid);
                ws_wait(emptyV(s), ph ^ 1);
                ws_load<WS_BN>(sV + s * WS_KV_BYTES, &tmV, V, n * WS_BN, kvh, S, fullV(s), tid);
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
#if CAUSAL || WS_TL
    /* consumer warpgroup, read from lane 0: the same in every lane (wg is),
     * but the shuffle lets the compiler prove it. The KV tiles a warpgroup
     * computes (ntc) depend on cw here; without the shuffle the KV loop's
     * ring slots became per-thread values (an R2UR before every wgmma
     * descriptor, the softmax and epilogue shuffles behind WARPSYNC
     * .COLLECTIVE fallbacks): 4-6% slower causal, 6% with TAIL (raw 19).
     * Where ntc does not depend on cw the shuffle only costs (1.4% at the
     * seed shape), so those cubins keep the plain value. */
    const int cw = __shfl_sync(0xffffffffu, wg, 0) - 1;
#else
    const int cw = wg - 1;                      /* consumer warpgroup */
#endif
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
    int m0, bh, rows;
    coords(t, m0, bh, rows);
    (void)rows;
    const int nt = n_kv(m0);
    const bool last = t + tstep >= ntiles;
    /* tiles this warpgroup computes (the rest of the CTA's it only releases;
     * a TAIL item's idle warpgroup releases them all) */
#if CAUSAL
    const int wg_end = min(S, att_qedge(m0 + cw * 64, m0 + cw * 64 + 64, M, SQ, 1) + 1 + off);
    const int ntc = min(nt, (wg_end + WS_BN - 1) / WS_BN);
#elif WS_TL
    const int ntc = cw * 64 < rows ? nt : 0;
#else
    const int ntc = nt;
#endif

    float acc[D / 2];
    float m_run[2] = {ATT_NEG_INF, ATT_NEG_INF}, l_run[2] = {0.f, 0.f};
    float lsum[4] = {0.f, 0.f, 0.f, 0.f};       /* LSUM: the row sums, accumulated by P V's group */
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
            const att_u32 a = ws_swz(sQ, BLOCK_M, ch, r);
            att_ldsm4(a, qf[kk][0], qf[kk][1], qf[kk][2], qf[kk][3]);
        }
    }
#if WS_PS && !LOADS
    /* The persistent producer's next TMA load (the async proxy) rewrites
     * the Q tile these ldmatrix reads (the generic proxy) just took: order
     * the reads before it, which the mbarrier alone does not do across
     * proxies. Without this fence some rows were computed with the next
     * tile's Q: 34 to 1,242 wrong outputs in every gate run at B2 H32 HKV8
     * S1024 D128 with OVERLAP and PACKGQA (whose timing exposed it); with
     * cp.async loads (LOADS=1, the generic proxy) it never failed. */
    asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
#endif
    ws_arrive(emptyQ);

#if LSUM
    /* P x ones (k16 x n8 of ones, K-major, no swizzle: 8-row core matrices
     * of 16 bytes, 128 bytes apart along K): every column of the product
     * is the row sum of P, accumulated and rescaled like O */
    const att_u64 od = att_desc_layout(sOnes, 128, 256, 0);
#endif
    /* issue S = Q K^T for the K tile in slot s (no wait) */
    auto qk_issue = [&](float *sc, int s) {
        const att_u32 kb = sK + s * WS_KV_BYTES;
        const att_u64 kd = att_desc(kb, 16, 1024);
        constexpr int QN = WS_BN == 64 ? 32 : 128;     /* see the WGMMA path's note on n64; 256 keys: two n128 */
        att_keep<WS_BN / 2>(sc);
        att_wg_fence();
#pragma unroll
        for (int kk = 0; kk < D / 16; ++kk)
#pragma unroll
            for (int c = 0; c < WS_BN / QN; ++c)
                AttWg<QN, 0>::mma(sc + c * QN / 2, qf[kk],
                                  ATT_DESC(kb, kd, (kk >> 2) * WS_BN * 128 + c * QN * 128 + (kk & 3) * 32, 16, 1024),
                                  kk > 0);
        ws_wg_commit();
    };
    /* issue O += P V for k16 steps [k0, k1) of the V tile in slot s (no wait) */
    auto pv_issue_k = [&](att_u32 (*pa)[4], int s, int k0, int k1) {
        const att_u32 vb = sV + s * WS_KV_BYTES;
        const att_u64 vd = att_desc(vb, 1024, 1024);
        att_keep<D / 2>(acc);
        att_keep<4 * LSUM>(lsum);
        att_wg_fence();
#pragma unroll
        for (int kk = k0; kk < k1; ++kk) {
#pragma unroll
            for (int c = 0; c < D / 64; ++c)
                AttWg<64, 1>::mma(acc + c * 32, pa[kk], ATT_DESC(vb, vd, c * WS_BN * 128 + kk * 16 * 128, 1024, 1024), 1);
#if LSUM
            AttWg<8, 0>::mma(lsum, pa[kk], od, 1);   /* row sums: P x ones */
#endif
        }
        ws_wg_commit();
    };
    auto pv_issue = [&](att_u32 (*pa)[4], int s) { pv_issue_k(pa, s, 0, WS_BN / 16); };
    /* causal / sequence-end mask of tile n's raw scores (only where a key may be out) */
    auto needs_mask = [&](int n) -> bool {
        const int n0 = n * WS_BN;
#if CAUSAL
        return (n0 + WS_BN > S) || (n0 + WS_BN - 1 > att_qedge(m0 + cw * 64, m0 + cw * 64 + 64, M, SQ, 0) + off);
#else
        return n0 + WS_BN > S;
#endif
    };
    auto mask = [&](float *sc, int n) {
        const int n0 = n * WS_BN;
        if (needs_mask(n)) {
            const int kbase = n0 + 2 * t4;
#pragma unroll
            for (int r = 0; r < 2; ++r) {
#if CAUSAL
                const int lim = min(S, att_qpos(m0 + wrow + g + 8 * r, SQ) + off + 1) - kbase;
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
    };
    /* row r's new running maximum from the tile's scores: sets alpha[r] and
     * m_run[r], returns the maximum the exponentials subtract; move: whether
     * it moved (LAZY: see softmax below) */
    /* the largest of m and row r's values of the tile (in every thread of the quad) */
    auto quad_max = [&](const float *sc, int r, float m) -> float {
#pragma unroll
        for (int nt8 = 0; nt8 < WS_BN / 8; ++nt8)
            m = fmaxf(m, fmaxf(sc[nt8 * 4 + 2 * r], sc[nt8 * 4 + 2 * r + 1]));
        m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, 1));
        return fmaxf(m, __shfl_xor_sync(0xffffffffu, m, 2));
    };
    auto row_max = [&](const float *sc, int r, float *alpha, bool &move) -> float {
        const float mx = quad_max(sc, r, ATT_NEG_INF);
        /* LAZY: -inf + 8 is -inf, so a row's first finite maximum moves it */
        move = LAZY ? __any_sync(0xffffffffu, mx * sl > m_run[r] + 8.f) : true;
        const float m_new = move ? fmaxf(m_run[r], mx * sl) : m_run[r];
        const float m_use = (m_new == ATT_NEG_INF) ? 0.f : m_new;
        alpha[r] = move ? att_exp(m_run[r] - m_use) : 1.f;
        m_run[r] = m_new;
        return m_use;
    };
    /* P = exp2(s * sl - m_use) in place for row r's columns of n8 tiles
     * [c0, c1); returns their sum (0 with LSUM: the tensor cores sum) */
    auto row_exp = [&](float *sc, int r, float m_use, int c0, int c1) -> float {
        float sum = 0.f;
#pragma unroll
        for (int nt8 = c0; nt8 < c1; ++nt8)
#pragma unroll
            for (int e = 0; e < 2; ++e) {
                const float p = att_exp(fmaf(sc[nt8 * 4 + 2 * r + e], sl, -m_use));
                sc[nt8 * 4 + 2 * r + e] = p;
                if (!LSUM)
                    sum += p;
            }
        return sum;
    };
    /* mask + online softmax of the raw scores of tile n in place (P = exp);
     * puts the accumulator rescale factors in alpha and returns whether
     * the accumulators need them (LAZY = 0: always).  LAZY = 1: a row's
     * running maximum moves only when one of the 8 rows of the warp that
     * vote with it (same r) would grow by more than 2^8; until then P is
     * exp2 against the stale maximum, so P <= 2^8 (fp16 holds it, the row
     * sums stay far from overflow), alpha is 1 and, where no row of the
     * thread moved, the accumulators are not touched: the normalisation
     * by l at the end is the same ratio.  The first tile of a row always
     * moves it (from -inf).  LAZY = 0 compiles to the cubins from before
     * LAZY was a knob. */
    auto softmax = [&](float *sc, int n, float *alpha) -> bool {
        mask(sc, n);
        bool moved = false;
#pragma unroll
        for (int r = 0; r < 2; ++r) {
            bool move;
            const float m_use = row_max(sc, r, alpha, move);
            moved |= move;
            const float sum = row_exp(sc, r, m_use, 0, WS_BN / 8);
            if (!LSUM)
                l_run[r] = move ? l_run[r] * alpha[r] + sum : l_run[r] + sum;
        }
        return moved;
    };
    auto rescale = [&](const float *alpha) {
#pragma unroll
        for (int dt = 0; dt < D / 8 + LSUM; ++dt) {   /* LSUM: lsum is one more n8 tile */
            float *a = dt < D / 8 ? acc + dt * 4 : lsum;
            a[0] *= alpha[0];
            a[1] *= alpha[0];
            a[2] *= alpha[1];
            a[3] *= alpha[1];
        }
    };
    /* P of k16 steps [k0, k1) as fp16 pairs: the A fragments of P V */
    auto pack_k = [&](const float *sc, att_u32 (*pa)[4], int k0, int k1) {
#pragma unroll
        for (int kk = k0; kk < k1; ++kk) {
            pa[kk][0] = att_pack(sc[(2 * kk) * 4 + 0], sc[(2 * kk) * 4 + 1]);
            pa[kk][1] = att_pack(sc[(2 * kk) * 4 + 2], sc[(2 * kk) * 4 + 3]);
            pa[kk][2] = att_pack(sc[(2 * kk + 1) * 4 + 0], sc[(2 * kk + 1) * 4 + 1]);
            pa[kk][3] = att_pack(sc[(2 * kk + 1) * 4 + 2], sc[(2 * kk + 1) * 4 + 3]);
        }
    };
    auto pack = [&](const float *sc, att_u32 (*pa)[4]) { pack_k(sc, pa, 0, WS_BN / 16); };
#if WS_MS
    /* MAXSKIP's last resort: S = Q K^T of KV tile n again, by this warp
     * alone: mma.sync m16n8k16 from the Q fragments and K read from global
     * memory (the K slot is long released), whose accumulators have the
     * wgmma's layout (rows g, g + 8; columns 2 t4, 2 t4 + 1 of each n8
     * tile); keys past S read as zeros (the mask drops them) */
    auto qk_warp = [&](float *sc, int n) {
        const int n0 = n * WS_BN;
        const att_u16 *kg = K + ((size_t)kv_head(bh) * S + n0) * D + 2 * t4;
#pragma unroll
        for (int i = 0; i < WS_BN / 2; ++i)
            sc[i] = 0.f;
#pragma unroll
        for (int j = 0; j < WS_BN / 8; ++j) {
            const bool in = n0 + j * 8 + g < S;
            const att_u16 *kr = kg + (size_t)(j * 8 + g) * D;
#pragma unroll
            for (int kk = 0; kk < D / 16; ++kk) {
                const att_u32 b0 = in ? *(const att_u32 *)(kr + kk * 16) : 0u;
                const att_u32 b1 = in ? *(const att_u32 *)(kr + kk * 16 + 8) : 0u;
                att_mma(sc + j * 4, qf[kk], b0, b1);
            }
        }
    };
    /* MAXSKIP = 1 (with LAZY): once every row of the warp has a running
     * maximum, the exponentials are taken against it with no row maxima
     * (128 FMNMX a thread a 256-key tile, the quad shuffles, the vote).
     * The P of a tile stay below fp16's 65504 while a thread's sum of a
     * row's P stays below WS_MS_TH = 2^15 (P >= 0), which is the warp's one
     * test.  A tile that fails it (rare: scores 15 or more above a row's
     * maximum in log2 units) goes the long way, warp-uniformly and with no
     * wgmma in it: where every P is finite, each row whose largest P
     * reached 2^8 is brought down by 2^-e, 2^e above that P (exact: a
     * power of two), its maximum moves up by e and the accumulators are
     * rescaled alike; where a sum passed 1e36 (a P may have overflowed;
     * or NaN), the scores are computed again (qk_warp) and take LAZY's
     * softmax.  A row's first tile always takes LAZY's softmax (with
     * MAXSKIP = 2 so does a tile with keys to mask: the causal diagonal,
     * keys past S).  MAXSKIP = 3 / 4 (tests): every tile the rescale /
     * recompute way. */
    auto softmax_ms = [&](float *sc, int n, float *alpha) -> bool {
        /* MAXSKIP = 2: a tile with keys to mask takes LAZY's softmax too,
         * and the fast way has no mask (ptxas if-converts it into 64
         * compares and 128 selects a 256-key tile: fewer instructions,
         * not always faster) */
        if ((MAXSKIP != 2 || !needs_mask(n)) && !__any_sync(0xffffffffu, m_run[0] == ATT_NEG_INF || m_run[1] == ATT_NEG_INF)) {
            if (MAXSKIP != 2)
                mask(sc, n);
            float sum[2];
#pragma unroll
            for (int r = 0; r < 2; ++r)
                sum[r] = row_exp(sc, r, m_run[r], 0, WS_BN / 8);
            if (MAXSKIP <= 2 && !__any_sync(0xffffffffu, !(sum[0] < WS_MS_TH) || !(sum[1] < WS_MS_TH))) {
                l_run[0] += sum[0];
                l_run[1] += sum[1];
                return false;
            }
            if (MAXSKIP != 4 && !__any_sync(0xffffffffu, !(sum[0] <= 1.0e36f) || !(sum[1] <= 1.0e36f))) {
                bool moved = false;
#pragma unroll
                for (int r = 0; r < 2; ++r) {
                    const float mp = quad_max(sc, r, 0.f);   /* the row's largest P */
                    const bool mv = mp >= 256.f;
                    /* mp in [2^E, 2^(E+1)): e = E + 1, a = 2^-e (mp <= sum <= 1e36 < 2^120: a normal) */
                    const int e = mv ? ((__float_as_int(mp) >> 23) & 0xff) - 126 : 0;
                    const float a = __int_as_float((127 - e) << 23);
#pragma unroll
                    for (int i = 0; i < WS_BN / 8; ++i) {
                        sc[i * 4 + 2 * r] *= a;
                        sc[i * 4 + 2 * r + 1] *= a;
                    }
                    alpha[r] = a;
                    m_run[r] += (float)e;
                    l_run[r] = l_run[r] * a + sum[r] * a;
                    moved |= mv;
                }
                return __any_sync(0xffffffffu, moved);
            }
            qk_warp(sc, n);
        }
        return softmax(sc, n, alpha);
    };
#endif

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
    bool mv = true;                             /* the last softmax moved a maximum */
    /* wait for the P V in flight (every wgmma group), pin the registers it
     * wrote and read, and release its V slot s */
    auto pv_release = [&](int s) {
        ws_wg_wait<0>();
        att_keep<D / 2>(acc);
        att_keep<4 * LSUM>(lsum);
        ws_keep_r<WS_BN / 4>(&pa[0][0]);
        ws_arrive(emptyV(s));
    };
#if WS_OV
    if (ntc > 0) {
        ws_wait_full(fullK(g0 % STAGES), (g0 / STAGES) & 1);
        pp_sync();
        qk_issue(sc, g0 % STAGES);
        pp_arrive(0);
        ws_wg_wait<0>();
        att_keep<WS_BN / 2>(sc);
        ws_arrive(emptyK(g0 % STAGES));
        mv = softmax(sc, 0, alpha);
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
        mv = softmax(sc, n, alpha);
        pv_release(sp);                         /* P V of tile n - 1 */
        if (mv)
            rescale(alpha);
        pack(sc, pa);
    }
    if (ntc > 0) {
        const int sp = (g0 + ntc - 1) % STAGES;
        ws_wait_full(fullV(sp), ((g0 + ntc - 1) / STAGES) & 1);
        pp_sync();
        pv_issue(pa, sp);
        pp_arrive(ntc);
        pv_release(sp);
    }
#else
    /* EARLY = 1: each full-barrier wait runs while the wgmma before it is in
     * flight (V's under Q K^T, the next tile's K under P V; the first K's
     * before the loop) instead of just before the wgmma that reads the slot */
#if EARLY
    if (ntc > 0)
        ws_wait_full(fullK(g0 % STAGES), (g0 / STAGES) & 1);
#endif
    /* STAGGER = 1: in the CTA's first tile, warpgroup c issues its first
     * Q K^T only once warpgroup c - 1's has completed (named barrier 1 + c),
     * so their phases start half a step apart: one's GEMMs run under the
     * other's softmax.  A warpgroup without KV tiles passes the turn on. */
    const bool stag = STAGGER && j == 0;
    if (stag && cw > 0)
        asm volatile("bar.sync %0, 256;\n" :: "r"(1 + cw) : "memory");
    if (stag && ntc == 0 && cw + 1 < CONSUMERS)
        asm volatile("bar.arrive %0, 256;\n" :: "r"(2 + cw) : "memory");
    for (int n = 0; n < ntc; ++n) {
        const int s = (g0 + n) % STAGES;
        const att_u32 ph = ((g0 + n) / STAGES) & 1;
#if !EARLY
        ws_wait_full(fullK(s), ph);
#endif
        qk_issue(sc, s);
#if EARLY
        ws_wait_full(fullV(s), ph);
#endif
        ws_wg_wait<0>();
        att_keep<WS_BN / 2>(sc);
        ws_arrive(emptyK(s));
        if (stag && n == 0 && cw + 1 < CONSUMERS)
            asm volatile("bar.arrive %0, 256;\n" :: "r"(2 + cw) : "memory");
#if PVSPLIT
        /* P V in WS_PVC chunks: each chunk's k16 steps go to the tensor
         * cores as soon as its exponentials are packed, while the warpgroup
         * computes the next chunk's (the accumulators are rescaled first,
         * before any of this tile's P V is in flight) */
        mask(sc, n);
        float mu[2];
        mv = false;
#pragma unroll
        for (int r = 0; r < 2; ++r) {
            bool move;
            mu[r] = row_max(sc, r, alpha, move);
            mv |= move;
            if (!LSUM && move)
                l_run[r] *= alpha[r];
        }
        if (mv)
            rescale(alpha);
#if !EARLY
        ws_wait_full(fullV(s), ph);
#endif
#pragma unroll
        for (int c = 0; c < WS_PVC; ++c) {
            constexpr int CW = WS_BN / 8 / WS_PVC;   /* n8 tiles a chunk */
#pragma unroll
            for (int r = 0; r < 2; ++r) {
                const float sum = row_exp(sc, r, mu[r], c * CW, (c + 1) * CW);
                if (!LSUM)
                    l_run[r] += sum;
            }
            pack_k(sc, pa, c * CW / 2, (c + 1) * CW / 2);
            pv_issue_k(pa, s, c * CW / 2, (c + 1) * CW / 2);
        }
#else
#if WS_MS
        mv = softmax_ms(sc, n, alpha);
#else
        mv = softmax(sc, n, alpha);
#endif
        if (mv)
            rescale(alpha);
        pack(sc, pa);
#if !EARLY
        ws_wait_full(fullV(s), ph);
#endif
        pv_issue(pa, s);
#endif
#if EARLY
        if (n + 1 < ntc)
            ws_wait_full(fullK((g0 + n + 1) % STAGES), ((g0 + n + 1) / STAGES) & 1);
#endif
        pv_release(s);
    }
#endif
    /* tiles past this warpgroup's rows (causal), or all of a TAIL item's
     * idle one: release their slots; the idle one takes the first
     * ping-pong turn too, so that every warpgroup takes nt + 1 */
#if WS_TL
    if (ntc == 0) {
        pp_sync();
        pp_arrive(0);
    }
#endif
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
#if LSUM
        const float l = lsum[2 * r];            /* the whole row's sum: every column of P x ones */
        (void)l_run;
#else
        float l = l_run[r];
        l += __shfl_xor_sync(0xffffffffu, l, 1);
        l += __shfl_xor_sync(0xffffffffu, l, 2);
#endif
        const int row = m0 + wrow + g + 8 * r;
#if WS_TL
        const bool mine = row < M && wrow < rows;   /* not past M, nor a TAIL item's idle rows */
#else
        const bool mine = row < M;
#endif
#if OTMA
        /* into the warp's 16 rows of the Q tile (the same swizzled layout;
         * only this warp read those rows, long before), for the TMA store
         * below; every row, the ones past M too: the store clips them */
        const float inv = l > 0.f ? 1.f / l : 0.f;
        {
            const int rr = wrow + g + 8 * r;
#pragma unroll
            for (int dt = 0; dt < D / 8; ++dt)
                asm volatile("st.shared.u32 [%0], %1;\n"
                             :: "r"(ws_swz(sQ, BLOCK_M, dt, rr) + t4 * 4),
                                "r"(att_pack(acc[dt * 4 + 2 * r] * inv, acc[dt * 4 + 2 * r + 1] * inv)) : "memory");
        }
        (void)mine;
#elif O_STAGE
        /* 16-byte stores: per group of four 8-column blocks, a 4x4 transpose
         * of the packed pairs across the quad (two shfl_xor butterflies; a
         * thread keeps the slots whose bit m matches its own) leaves thread
         * t4 with block 4b + t4 whole. Every lane shuffles, whatever its row. */
        const float inv = l > 0.f ? 1.f / l : 0.f;
#pragma unroll
        for (int b = 0; b < D / 32; ++b) {
            att_u32 q[4];
#pragma unroll
            for (int i = 0; i < 4; ++i)
                q[i] = att_pack(acc[(4 * b + i) * 4 + 2 * r] * inv, acc[(4 * b + i) * 4 + 2 * r + 1] * inv);
#pragma unroll
            for (int m = 1; m <= 2; m <<= 1) {
                const bool hi = (t4 & m) != 0;
#pragma unroll
                for (int i = 0; i < 4; ++i) {
                    if (i & m)
                        continue;
                    const att_u32 got = __shfl_xor_sync(0xffffffffu, hi ? q[i] : q[i | m], m);
                    if (hi)
                        q[i] = got;
                    else
                        q[i | m] = got;
                }
            }
            if (mine)
                asm volatile("st.global.v4.u32 [%0], {%1,%2,%3,%4};\n"
                             :: "l"(O + ((size_t)bh * M + row) * D + (4 * b + t4) * 8),
                                "r"(q[0]), "r"(q[1]), "r"(q[2]), "r"(q[3]) : "memory");
        }
#else
        /* 4-byte fragment stores: the code from before O_STAGE was a WS knob
         * (the same cubins), inv inside the row check included */
        if (mine) {
            const float inv = l > 0.f ? 1.f / l : 0.f;
            att_u32 *dst = (att_u32 *)(O + ((size_t)bh * M + row) * D + 2 * t4);
#pragma unroll
            for (int dt = 0; dt < D / 8; ++dt)
                dst[dt * 4] = att_pack(acc[dt * 4 + 2 * r] * inv, acc[dt * 4 + 2 * r + 1] * inv);
        }
#endif
    }
#if OTMA
    /* OTMA: one TMA store a 64-column box of the warp's 16 rows (rows past
     * M clipped by the tensor map), issued by lane 0 once every lane's
     * shared-memory writes are visible to the async proxy; the reads of
     * shared memory complete before the CTA may exit */
    asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
    __syncwarp();
    if (lane == 0) {
#pragma unroll
        for (int c = 0; c < D / 64; ++c)
            asm volatile("cp.async.bulk.tensor.3d.global.shared::cta.bulk_group [%0, {%1, %2, %3}], [%4];\n"
                         :: "l"(&tmO), "r"(c * 64), "r"(m0 + wrow), "r"(bh), "r"(sQ + c * BLOCK_M * 128 + wrow * 128)
                         : "memory");
        asm volatile("cp.async.bulk.commit_group;\n" ::: "memory");
        asm volatile("cp.async.bulk.wait_group.read 0;\n" ::: "memory");
    }
#endif
    g0 += nt;
    }   /* tiles */
#endif
}

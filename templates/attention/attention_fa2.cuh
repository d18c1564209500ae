/* ---------------------------------------------------------------- main */

/* K/V ring slot of tile i: i % STAGES.  On the mma.sync path at D = 64 and
 * STAGES = 3 the loops carry it as a counter s instead: there NVVM's loop
 * optimiser rewrites the modulo of the loop counter (i - 3 * (i / 3))
 * through every shared-memory address of the tile, about 0.2 of the 0.8
 * CPU-s NVRTC spends on the seed configuration; the counter costs it
 * nothing.  Elsewhere (a power of two: a mask; D = 128 and WGMMA, where
 * NVVM spends no more on the modulo) the kernels stay as they were. */
#if (STAGES & (STAGES - 1)) && D == 64 && !ATT_WG
#define ATT_SLOT(i, s) (s)
#else
#define ATT_SLOT(i, s) ((i) % STAGES)
#endif

#if ATT_CLUSTER
#define ATT_CLUSTER_ATTR __cluster_dims__(1, 1, SPLITS)
#else
#define ATT_CLUSTER_ATTR
#endif

extern "C" __global__ void __launch_bounds__(ATT_THREADS, ATT_MINB) ATT_CLUSTER_ATTR
attn_fwd(const att_u16 *__restrict__ Q, const att_u16 *__restrict__ K,
         const att_u16 *__restrict__ V, att_u16 *__restrict__ O,
         float *__restrict__ Opart, float *__restrict__ ML, int S, float scale, int SQ, int G)
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
    const int bh = blockIdx.y;                     /* query head (PACKGQA: K/V head) */
#if PACKGQA
    const int M = G * SQ, kvh = bh;                /* rows: the group's G heads */
#else
    const int M = SQ, kvh = bh / G;
#endif
    const int off = S - SQ;                        /* causal: position i sees keys <= i + off */
    (void)off;                                     /* read by the causal mask only */
    const size_t base = (size_t)bh * M * D, kvbase = (size_t)kvh * S * D;
    const att_u16 *Qb = Q + base, *Kb = K + kvbase, *Vb = V + kvbase;

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
    const int kv_end = min(S, att_qedge(m0, m0 + BLOCK_M, M, SQ, 1) + 1 + off);
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
        const att_u64 kd = att_desc(sKs, 16, 1024);
        att_keep<ATT_NT * 4>(d);
        att_wg_fence();
#pragma unroll
        for (int kk = 0; kk < D / 16; ++kk)   /* k16 step: 32 bytes along the swizzled row */
#pragma unroll
            for (int c = 0; c < BLOCK_N / QN; ++c)
                AttWg<QN, 0>::mma(d + c * QN / 2, qa[kk], ATT_DESC(sKs, kd, c * QN * ATT_ROWB + kk * 32, 16, 1024),
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
        const bool need_mask = (n0 + BLOCK_N > S) || (n0 + BLOCK_N - 1 > att_qedge(m0, m0 + BLOCK_M, M, SQ, 0) + off);
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
                    const int lim = min(S, att_qpos(m0 + wrow + mi * 16 + g + 8 * r, SQ) + off + 1) - kbase;
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
        const att_u64 vd = att_desc(sVs, 1024, 1024);
        att_keep<ATT_DT * 4>(d);
        att_wg_fence();
#pragma unroll
        for (int kk = 0; kk < BLOCK_N / 16; ++kk)   /* k16 step: 16 rows of V */
            AttWg<D, 1>::mma(d, pa[kk], ATT_DESC(sVs, vd, kk * 16 * ATT_ROWB, 1024, 1024), 1);
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
    /* i: tile index relative to t_begin; s: its ring slot (ATT_SLOT) */
    auto kslot = [&](int i, int s) { return sK + ATT_SLOT(i, s) * BLOCK_N * ATT_ROWB; };
    auto vslot = [&](int i, int s) { return sV + ATT_SLOT(i, s) * BLOCK_N * ATT_ROWB; };
    auto load_k = [&](int i, int s) {
        if (t_begin + i < t_end)
            att_load_tile<BLOCK_N>(kslot(i, s), Kb, (t_begin + i) * BLOCK_N, S, tid);
        att_commit();
    };
    auto load_v = [&](int i, int s) {
        if (t_begin + i < t_end)
            att_load_tile<BLOCK_N>(vslot(i, s), Vb, (t_begin + i) * BLOCK_N, S, tid);
        att_commit();
    };

    att_load_tile<BLOCK_M>(sQ, Qb, m0, M, tid);
    att_commit();
    const int nit = t_end - t_begin;

#if OVERLAP
    /* Software-pipelined: QK^T of tile i+1 is issued before the softmax
     * and PV of tile i, so tensor-core work overlaps the exponentials.
     * Commit groups: Q, K0, then pairs (K[j+1], V[j]).  Iteration i waits
     * for pair i, then issues K[i+STAGES] (slot of K[i], consumed) and
     * V[i+STAGES-1] (slot of V[i-1], consumed). */
    load_k(0, 0);
#pragma unroll
    for (int j = 0; j < STAGES - 1; ++j) {
        load_k(j + 1, j + 1);
        load_v(j, j);
    }
    att_wait<2 * (STAGES - 1)>();              /* Q and K0 */
    att_sync_tiles();
    load_q();
    float sc[ATT_MT][ATT_NT][4], sn[ATT_MT][ATT_NT][4];
    if (nit > 0)
        qk(sc, kslot(0, 0));
    for (int i = 0, s = 0; i < nit; ++i) {
        const int s_prev = s == 0 ? STAGES - 1 : s - 1, s_next = s + 1 == STAGES ? 0 : s + 1;
        att_wait<2 * (STAGES - 2)>();          /* K[i+1] and V[i] */
        att_sync_tiles();                      /* tile i-1 fully consumed */
        load_k(i + STAGES, s);
        load_v(i + STAGES - 1, s_prev);
        if (i + 1 < nit)
            qk(sn, kslot(i + 1, s_next));
        softmax(sc, (t_begin + i) * BLOCK_N);
        pv(sc, vslot(i, s));
#pragma unroll
        for (int mi = 0; mi < ATT_MT; ++mi)
#pragma unroll
            for (int nt = 0; nt < ATT_NT; ++nt)
#pragma unroll
                for (int e = 0; e < 4; ++e) sc[mi][nt][e] = sn[mi][nt][e];
        s = s_next;
    }
#else
    /* Prologue: K/V tiles 0 .. STAGES - 2 (groups K, V per tile). */
#pragma unroll
    for (int j = 0; j < STAGES - 1; ++j) {
        load_k(j, j);
        load_v(j, j);
    }
    att_wait<2 * (STAGES - 1)>();              /* Q */
    att_sync_tiles();
    load_q();
    for (int i = 0, s = 0; i < nit; ++i) {
        const int s_prev = s == 0 ? STAGES - 1 : s - 1;   /* the slot of tile i + STAGES - 1 */
        (void)s_prev;
#if STAGES == 1
        __syncthreads();                       /* previous tile fully consumed */
        load_k(i, s);
        load_v(i, s);
        att_wait<1>();                         /* K[i] */
        att_sync_tiles();
#else
        att_wait<2 * STAGES - 3>();            /* K[i] */
        att_sync_tiles();                      /* and tile i-1 fully consumed */
        load_k(i + STAGES - 1, s_prev);
        load_v(i + STAGES - 1, s_prev);
#endif
        float sc[ATT_MT][ATT_NT][4];
        qk(sc, kslot(i, s));
        softmax(sc, (t_begin + i) * BLOCK_N);
#if STAGES == 1
        att_wait<0>();                         /* V[i] */
#else
        att_wait<2 * (STAGES - 1)>();
#endif
        att_sync_tiles();
        pv(sc, vslot(i, s));
        s = s + 1 == STAGES ? 0 : s + 1;
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
        if (row < M) {
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
            if (row < M) {
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
            if (row < M) {
                const float inv = L > 0.f ? 1.f / L : 0.f;
                const att_u32 lo = att_pack(o0 * inv, o1 * inv), hi = att_pack(o2 * inv, o3 * inv);
                *(uint2 *)(O + base + (size_t)row * D + c4 * 4) = make_uint2(lo, hi);
            }
        }
        att_cluster_sync();                                  /* keep smem alive for readers */
    }
#else
    {
        const size_t srow0 = ((size_t)blockIdx.z * gridDim.y + bh) * M;   /* [SPLITS, B*H*SQ] rows either way */
#pragma unroll
        for (int mi = 0; mi < ATT_MT; ++mi)
#pragma unroll
            for (int r = 0; r < 2; ++r) {
                const int row = m0 + wrow + mi * 16 + g + 8 * r;
                if (row < M) {
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

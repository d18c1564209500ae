/* attention_ws_sync.cuh: the warp-specialised path's mbarrier, TMA,
 * cp.async and wgmma-group helpers (included by attention_ws.cuh inside
 * its ATT_WSP block; the WS_* macros come from there). */
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

/* The byte address of 16-byte chunk ch (columns 8 ch .. 8 ch + 7) of row r
 * in a tile of ROWS rows at base, laid out as TMA's 128-byte swizzle puts
 * it: 64-column sub-tiles of ROWS * 128 bytes one after another, row r of
 * a sub-tile at r * 128, its chunks permuted by r % 8 */
static __device__ __forceinline__ att_u32 ws_swz(att_u32 base, int rows, int ch, int r)
{
    return base + (ch >> 3) * rows * 128 + r * 128 + (((ch & 7) ^ (r & 7)) << 4);
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

/*
 * harness: the standalone check-and-time program of `evoeng export
 * --format harness` (see harness.h). The fixed parts of the program are the
 * text constants below; the rest (buffers, tensor maps, the two launch
 * plans) is written from the resolved Plan. The input generator must stay
 * in step with the gate's (src/gpu/devkern.c evo_fill, src/gpu/gate.c
 * gate_seed_key): tests/test_export.c compares the two.
 */
#include "harness.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "export.h"

/* ---- the fixed text of the program -------------------------------------- */

static const char text_device[] =
    "// ==== 3. the gate's input generator ========================================\n"
    "// evoeng's gate fills every input on the device with a counter-based\n"
    "// generator: element i of a buffer depends only on (seed, the buffer's salt,\n"
    "// i). This is evo_fill of evoeng's src/gpu/devkern.c, the same arithmetic.\n"
    "namespace evo_harness {\n"
    "\n"
    "typedef unsigned long long u64;\n"
    "typedef unsigned int u32;\n"
    "typedef unsigned short u16;\n"
    "\n"
    "enum DType { F16 = 0, BF16 = 1, F32 = 2, I32 = 3 };\n"
    "enum Init { NORMAL = 0, UNIFORM = 1, ZERO = 2, CONSTANT = 3 };\n"
    "\n"
    "__host__ __device__ inline u64 mix64(u64 z)\n"
    "{\n"
    "    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;\n"
    "    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;\n"
    "    return z ^ (z >> 31);\n"
    "}\n"
    "\n"
    "// A uniform double in [0, 1) from counter c of stream key.\n"
    "__device__ inline double unit(u64 key, u64 c)\n"
    "{\n"
    "    return (double)(mix64(key + (c + 1) * 0x9E3779B97F4A7C15ull) >> 11) * 0x1.0p-53;\n"
    "}\n"
    "\n"
    "// float -> IEEE half, round to nearest even.\n"
    "__device__ inline u16 f32_to_f16(float f)\n"
    "{\n"
    "    u32 x = __float_as_uint(f), sign = (x >> 16) & 0x8000u, ex = (x >> 23) & 0xffu, mant = x & 0x7fffffu;\n"
    "    u32 h, rem, mid;\n"
    "    if (ex == 0xff)\n"
    "        return (u16)(sign | 0x7c00u | (mant ? 0x200u : 0));\n"
    "    int e = (int)ex - 127 + 15;\n"
    "    if (e >= 31)\n"
    "        return (u16)(sign | 0x7c00u);\n"
    "    if (e <= 0) {\n"
    "        int shift = 14 - e;\n"
    "        if (shift > 24)\n"
    "            return (u16)sign;\n"
    "        mant |= 0x800000u;\n"
    "        h = mant >> shift;\n"
    "        rem = mant & ((1u << shift) - 1);\n"
    "        mid = 1u << (shift - 1);\n"
    "        if (rem > mid || (rem == mid && (h & 1)))\n"
    "            h++;\n"
    "        return (u16)(sign | h);\n"
    "    }\n"
    "    h = ((u32)e << 10) | (mant >> 13);\n"
    "    rem = mant & 0x1fffu;\n"
    "    if (rem > 0x1000u || (rem == 0x1000u && (h & 1)))\n"
    "        h++;\n"
    "    return (u16)(sign | h);\n"
    "}\n"
    "\n"
    "// float -> bfloat16, round to nearest even.\n"
    "__device__ inline u16 f32_to_bf16(float f)\n"
    "{\n"
    "    u32 x = __float_as_uint(f);\n"
    "    if ((x & 0x7f800000u) == 0x7f800000u && (x & 0x7fffffu))\n"
    "        return (u16)((x >> 16) | 0x40u);\n"
    "    x += 0x7fffu + ((x >> 16) & 1u);\n"
    "    return (u16)(x >> 16);\n"
    "}\n"
    "\n"
    "// Fill n elements of dst (dtype) from the distribution init with\n"
    "// parameters a, b (normal: mean, stddev; uniform: low, high; constant: a).\n"
    "__global__ void fill(void *dst, u64 n, int dtype, int init, double a, double b, u64 key)\n"
    "{\n"
    "    for (u64 i = blockIdx.x * (u64)blockDim.x + threadIdx.x; i < n; i += (u64)gridDim.x * blockDim.x) {\n"
    "        double v;\n"
    "        if (init == ZERO) {\n"
    "            v = 0;\n"
    "        } else if (init == CONSTANT) {\n"
    "            v = a;\n"
    "        } else if (init == UNIFORM) {\n"
    "            v = a + (b - a) * unit(key, i);\n"
    "        } else { // NORMAL: Box-Muller over a pair of counters\n"
    "            u64 j = i >> 1;\n"
    "            double u1 = 1.0 - unit(key, 2 * j), u2 = unit(key, 2 * j + 1);\n"
    "            double r = sqrt(-2.0 * log(u1)), th = 6.283185307179586 * u2;\n"
    "            v = a + b * r * ((i & 1) ? sin(th) : cos(th));\n"
    "        }\n"
    "        if (dtype == F16)\n"
    "            ((u16 *)dst)[i] = f32_to_f16((float)v);\n"
    "        else if (dtype == BF16)\n"
    "            ((u16 *)dst)[i] = f32_to_bf16((float)v);\n"
    "        else if (dtype == F32)\n"
    "            ((float *)dst)[i] = (float)v;\n"
    "        else\n"
    "            ((int *)dst)[i] = (int)llround(v);\n"
    "    }\n"
    "}\n"
    "\n"
    "} // namespace evo_harness\n"
    "\n";

static const char text_host_head[] =
    "#include <cuda_runtime.h>\n"
    "\n"
    "#include <algorithm>\n"
    "#include <cmath>\n"
    "#include <cstdio>\n"
    "#include <cstdlib>\n"
    "#include <cstring>\n"
    "#include <vector>\n"
    "\n"
    "namespace evo_harness {\n"
    "\n"
    "// Any CUDA error ends the program with exit code 3 and the call that failed.\n"
    "static void check(cudaError_t e, const char *call, int line)\n"
    "{\n"
    "    if (e != cudaSuccess) {\n"
    "        fprintf(stderr, \"harness line %d: %s: %s (%s)\\n\", line, call, cudaGetErrorName(e),\n"
    "                cudaGetErrorString(e));\n"
    "        exit(3);\n"
    "    }\n"
    "}\n"
    "#define HARNESS_CHECK(call) evo_harness::check((call), #call, __LINE__)\n"
    "\n"
    "enum Role { INPUT, OUTPUT, SCRATCH };\n"
    "\n"
    "struct Buffer {\n"
    "    const char *name;\n"
    "    DType dtype;\n"
    "    size_t count;      // elements\n"
    "    Role role;\n"
    "    Init init;         // inputs: the distribution\n"
    "    double a, b;       // normal: mean, stddev; uniform: low, high; constant: a\n"
    "    u64 salt;          // mixed with the seed: every buffer has its own stream\n"
    "    double atol, rtol; // outputs: an element passes when |got - ref| <= atol + rtol * |ref|\n"
    "    void *cand;        // the candidate's copy on the device\n"
    "    void *ref;         // the reference's copy (an input's is the candidate's: inputs are shared)\n"
    "};\n"
    "\n";

static const char text_tmap[] =
    "// Encode one tiled tensor map (the CUDA driver API; link with -lcuda).\n"
    "static void encode_tmap(CUtensorMap *map, const char *what, CUtensorMapDataType type, void *base,\n"
    "                        cuuint32_t rank, const cuuint64_t *dims, const cuuint64_t *strides,\n"
    "                        const cuuint32_t *box, const cuuint32_t *elem_strides, CUtensorMapSwizzle swizzle,\n"
    "                        CUtensorMapL2promotion l2, CUtensorMapFloatOOBfill oob)\n"
    "{\n"
    "    CUresult r = cuTensorMapEncodeTiled(map, type, rank, base, dims, strides, box, elem_strides,\n"
    "                                        CU_TENSOR_MAP_INTERLEAVE_NONE, swizzle, l2, oob);\n"
    "    if (r != CUDA_SUCCESS) {\n"
    "        const char *name = nullptr;\n"
    "        cuGetErrorName(r, &name);\n"
    "        fprintf(stderr, \"cuTensorMapEncodeTiled (%s): %s\\n\", what, name ? name : \"unknown error\");\n"
    "        exit(3);\n"
    "    }\n"
    "}\n"
    "\n";

static const char text_host_main[] =
    "static size_t dtype_size(DType t)\n"
    "{\n"
    "    return t == F32 || t == I32 ? 4 : 2;\n"
    "}\n"
    "\n"
    "// The stream key of a buffer: gate_seed_key of evoeng's src/gpu/gate.c.\n"
    "static u64 seed_key(u64 seed, u64 salt)\n"
    "{\n"
    "    u64 st = seed * 0xD1B54A32D192ED03ull;\n"
    "    return st ^ mix64(st + 0x9E3779B97F4A7C15ull) ^ (salt * 0x9E3779B97F4A7C15ull + 0x632BE59BD9B4E019ull);\n"
    "}\n"
    "\n"
    "// The gate's \"never written\" patterns: an output element a kernel leaves\n"
    "// alone keeps one and fails the comparison.\n"
    "static bool is_sentinel(DType t, const unsigned char *p, size_t i)\n"
    "{\n"
    "    if (t == F16 || t == BF16)\n"
    "        return ((const u16 *)p)[i] == 0xFFFFu;\n"
    "    return ((const u32 *)p)[i] == (t == F32 ? 0x7FFFFFFFu : 0x7FBADBADu);\n"
    "}\n"
    "\n"
    "static void fill_sentinel(const Buffer &b, void *dst)\n"
    "{\n"
    "    std::vector<unsigned char> host(b.count * dtype_size(b.dtype));\n"
    "    for (size_t i = 0; i < b.count; i++) {\n"
    "        if (b.dtype == F16 || b.dtype == BF16)\n"
    "            ((u16 *)host.data())[i] = 0xFFFFu;\n"
    "        else\n"
    "            ((u32 *)host.data())[i] = b.dtype == F32 ? 0x7FFFFFFFu : 0x7FBADBADu;\n"
    "    }\n"
    "    HARNESS_CHECK(cudaMemcpy(dst, host.data(), host.size(), cudaMemcpyHostToDevice));\n"
    "}\n"
    "\n"
    "static double load(DType t, const unsigned char *p, size_t i)\n"
    "{\n"
    "    u32 x;\n"
    "    float f;\n"
    "    if (t == F32)\n"
    "        return ((const float *)p)[i];\n"
    "    if (t == I32)\n"
    "        return ((const int *)p)[i];\n"
    "    u16 h = ((const u16 *)p)[i];\n"
    "    if (t == BF16) {\n"
    "        x = (u32)h << 16;\n"
    "    } else {\n"
    "        u32 sign = (u32)(h & 0x8000u) << 16, ex = (h >> 10) & 0x1fu, mant = h & 0x3ffu;\n"
    "        if (ex == 0)\n"
    "            return (sign ? -1.0 : 1.0) * std::ldexp((double)mant, -24);\n"
    "        x = ex == 31 ? sign | 0x7f800000u | (mant << 13) : sign | ((ex - 15 + 127) << 23) | (mant << 13);\n"
    "    }\n"
    "    memcpy(&f, &x, 4);\n"
    "    return f;\n"
    "}\n"
    "\n"
    "// Allocate every buffer; fill the inputs from seed, the outputs with the\n"
    "// sentinel, the scratch with zeros (as the gate does).\n"
    "static void setup(u64 seed)\n"
    "{\n"
    "    for (int i = 0; i < NBUF; i++) {\n"
    "        Buffer &b = buf[i];\n"
    "        size_t bytes = std::max<size_t>(b.count * dtype_size(b.dtype), 1);\n"
    "        HARNESS_CHECK(cudaMalloc(&b.cand, bytes));\n"
    "        if (b.role == INPUT) {\n"
    "            b.ref = b.cand;\n"
    "            fill<<<1024, 256>>>(b.cand, b.count, b.dtype, b.init, b.a, b.b, seed_key(seed, b.salt));\n"
    "            HARNESS_CHECK(cudaGetLastError());\n"
    "            continue;\n"
    "        }\n"
    "        HARNESS_CHECK(cudaMalloc(&b.ref, bytes));\n"
    "        if (b.role == OUTPUT) {\n"
    "            fill_sentinel(b, b.cand);\n"
    "            fill_sentinel(b, b.ref);\n"
    "        } else {\n"
    "            HARNESS_CHECK(cudaMemset(b.cand, 0, bytes));\n"
    "            HARNESS_CHECK(cudaMemset(b.ref, 0, bytes));\n"
    "        }\n"
    "    }\n"
    "    HARNESS_CHECK(cudaDeviceSynchronize());\n"
    "}\n"
    "\n"
    "// Compare each output of the candidate with the reference's. Prints one\n"
    "// line per output; returns true when every element passes.\n"
    "static bool compare_outputs()\n"
    "{\n"
    "    bool pass = true;\n"
    "    for (int i = 0; i < NBUF; i++) {\n"
    "        const Buffer &b = buf[i];\n"
    "        if (b.role != OUTPUT)\n"
    "            continue;\n"
    "        size_t bytes = b.count * dtype_size(b.dtype), nbad = 0, unwritten = 0, nonfinite = 0, first = 0;\n"
    "        std::vector<unsigned char> got(bytes), want(bytes);\n"
    "        HARNESS_CHECK(cudaMemcpy(got.data(), b.cand, bytes, cudaMemcpyDeviceToHost));\n"
    "        HARNESS_CHECK(cudaMemcpy(want.data(), b.ref, bytes, cudaMemcpyDeviceToHost));\n"
    "        double max_abs = 0, max_rel = 0;\n"
    "        for (size_t k = 0; k < b.count; k++) {\n"
    "            double g = load(b.dtype, got.data(), k), r = load(b.dtype, want.data(), k);\n"
    "            bool bad;\n"
    "            if (is_sentinel(b.dtype, got.data(), k)) {\n"
    "                unwritten++;\n"
    "                bad = true;\n"
    "            } else if (!std::isfinite(g)) {\n"
    "                nonfinite++;\n"
    "                bad = true;\n"
    "            } else if (!std::isfinite(r)) {\n"
    "                bad = true;\n"
    "            } else {\n"
    "                double d = std::fabs(g - r);\n"
    "                max_abs = std::max(max_abs, d);\n"
    "                if (r != 0)\n"
    "                    max_rel = std::max(max_rel, d / std::fabs(r));\n"
    "                bad = d > b.atol + b.rtol * std::fabs(r);\n"
    "            }\n"
    "            if (bad && nbad++ == 0)\n"
    "                first = k;\n"
    "        }\n"
    "        printf(\"output %s: max abs err %.3g, max rel err %.3g; %zu of %zu elements outside \"\n"
    "               \"atol %g + rtol %g * |ref|\", b.name, max_abs, max_rel, nbad, b.count, b.atol, b.rtol);\n"
    "        if (unwritten)\n"
    "            printf(\" (%zu never written)\", unwritten);\n"
    "        if (nonfinite)\n"
    "            printf(\" (%zu NaN or Inf)\", nonfinite);\n"
    "        printf(\"\\n\");\n"
    "        if (nbad) {\n"
    "            printf(\"  first bad element %zu: got %.6g, reference %.6g\\n\", first,\n"
    "                   load(b.dtype, got.data(), first), load(b.dtype, want.data(), first));\n"
    "            pass = false;\n"
    "        }\n"
    "    }\n"
    "    return pass;\n"
    "}\n"
    "\n"
    "// The median time of one run of the candidate's launch plan: CUDA events\n"
    "// around each of iters runs after warmup runs, on the same buffers (warm L2).\n"
    "static double time_plan(cudaStream_t s, int warmup, int iters)\n"
    "{\n"
    "    for (int i = 0; i < warmup; i++)\n"
    "        run_candidate(s);\n"
    "    std::vector<cudaEvent_t> start(iters), stop(iters);\n"
    "    for (int i = 0; i < iters; i++) {\n"
    "        HARNESS_CHECK(cudaEventCreate(&start[i]));\n"
    "        HARNESS_CHECK(cudaEventCreate(&stop[i]));\n"
    "    }\n"
    "    for (int i = 0; i < iters; i++) {\n"
    "        HARNESS_CHECK(cudaEventRecord(start[i], s));\n"
    "        run_candidate(s);\n"
    "        HARNESS_CHECK(cudaEventRecord(stop[i], s));\n"
    "    }\n"
    "    HARNESS_CHECK(cudaStreamSynchronize(s));\n"
    "    std::vector<double> us(iters);\n"
    "    for (int i = 0; i < iters; i++) {\n"
    "        float ms = 0;\n"
    "        HARNESS_CHECK(cudaEventElapsedTime(&ms, start[i], stop[i]));\n"
    "        us[i] = ms * 1000.0;\n"
    "        HARNESS_CHECK(cudaEventDestroy(start[i]));\n"
    "        HARNESS_CHECK(cudaEventDestroy(stop[i]));\n"
    "    }\n"
    "    std::sort(us.begin(), us.end());\n"
    "    return iters % 2 ? us[iters / 2] : (us[iters / 2 - 1] + us[iters / 2]) / 2;\n"
    "}\n"
    "\n"
    "static bool parse_count(const char *s, long min, long *out)\n"
    "{\n"
    "    char *end = nullptr;\n"
    "    long v = strtol(s, &end, 10);\n"
    "    if (!*s || *end || v < min)\n"
    "        return false;\n"
    "    *out = v;\n"
    "    return true;\n"
    "}\n"
    "\n"
    "static int run(int argc, char **argv)\n"
    "{\n"
    "    long seed = 1, warmup = 20, iters = 200;\n"
    "    for (int i = 1; i < argc; i++) {\n"
    "        long *v = !strcmp(argv[i], \"--seed\") ? &seed : !strcmp(argv[i], \"--warmup\") ? &warmup\n"
    "                  : !strcmp(argv[i], \"--iters\") ? &iters : nullptr;\n"
    "        if (!v || i + 1 >= argc || !parse_count(argv[++i], v == &iters ? 1 : 0, v)) {\n"
    "            fprintf(stderr, \"usage: %s [--seed N] [--warmup N] [--iters N]\\n\", argv[0]);\n"
    "            return 2;\n"
    "        }\n"
    "    }\n"
    "    int dev = 0;\n"
    "    cudaDeviceProp prop;\n"
    "    HARNESS_CHECK(cudaGetDevice(&dev));\n"
    "    HARNESS_CHECK(cudaGetDeviceProperties(&prop, dev));\n"
    "    printf(\"device: %s (sm_%d%d)\\n\", prop.name, prop.major, prop.minor);\n"
    "    printf(\"shape:  %s, inputs from seed %ld\\n\", SHAPE, seed);\n"
    "    cudaStream_t s;\n"
    "    HARNESS_CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));\n"
    "    setup((u64)seed);\n"
    "    make_tensor_maps();\n"
    "    set_smem_limits();\n"
    "    run_reference(s);\n"
    "    HARNESS_CHECK(cudaStreamSynchronize(s));\n"
    "    run_candidate(s);\n"
    "    HARNESS_CHECK(cudaStreamSynchronize(s));\n"
    "    bool pass = compare_outputs();\n"
    "    printf(\"%s\\n\", pass ? \"PASS\" : \"FAIL\");\n"
    "    if (!pass)\n"
    "        return 1;\n"
    "    double us = time_plan(s, (int)warmup, (int)iters);\n"
    "    printf(\"time:   %.3f us median of %ld runs after %ld warm-up runs (CUDA events, warm L2)\\n\", us, iters,\n"
    "           warmup);\n"
    "    if (RECORDED_US > 0)\n"
    "        printf(\"        evoeng measured %.3f us for this candidate\\n\", RECORDED_US);\n"
    "    for (int i = 0; i < NBUF; i++) {\n"
    "        if (buf[i].ref != buf[i].cand)\n"
    "            HARNESS_CHECK(cudaFree(buf[i].ref));\n"
    "        HARNESS_CHECK(cudaFree(buf[i].cand));\n"
    "    }\n"
    "    HARNESS_CHECK(cudaStreamDestroy(s));\n"
    "    return 0;\n"
    "}\n"
    "\n"
    "} // namespace evo_harness\n"
    "\n"
    "int main(int argc, char **argv)\n"
    "{\n"
    "    return evo_harness::run(argc, argv);\n"
    "}\n"
    "#endif // __CUDACC_RTC__\n";


/* ---- generation --------------------------------------------------------- */

static const char *const dtype_enum[] = {"F16", "BF16", "F32", "I32"};
static const char *const init_enum[] = {"NORMAL", "UNIFORM", "ZERO", "CONSTANT"};
static const char *const role_enum[] = {"INPUT", "OUTPUT", "SCRATCH"};
static const char *const tmap_type[] = {"CU_TENSOR_MAP_DATA_TYPE_FLOAT16", "CU_TENSOR_MAP_DATA_TYPE_BFLOAT16",
                                        "CU_TENSOR_MAP_DATA_TYPE_FLOAT32", "CU_TENSOR_MAP_DATA_TYPE_INT32"};
static const char *const tmap_swizzle[] = {"CU_TENSOR_MAP_SWIZZLE_NONE", "CU_TENSOR_MAP_SWIZZLE_32B",
                                           "CU_TENSOR_MAP_SWIZZLE_64B", "CU_TENSOR_MAP_SWIZZLE_128B"};
static const char *const tmap_l2[] = {"CU_TENSOR_MAP_L2_PROMOTION_NONE", "CU_TENSOR_MAP_L2_PROMOTION_L2_64B",
                                      "CU_TENSOR_MAP_L2_PROMOTION_L2_128B", "CU_TENSOR_MAP_L2_PROMOTION_L2_256B"};

/* A floating-point literal for v: "0.125", "1.0", "1e-05"; with f32 the
 * float suffix. Non-finite values use <cmath>'s INFINITY and NAN. */
static void put_real(StrBuf *sb, double v, int f32)
{
    char num[64];
    if (isnan(v)) {
        sb_append(sb, "NAN");
        return;
    }
    if (isinf(v)) {
        sb_append(sb, v < 0 ? "-INFINITY" : "INFINITY");
        return;
    }
    snprintf(num, sizeof(num), f32 ? "%.9g" : "%.17g", v);
    sb_append(sb, num);
    if (!strpbrk(num, ".e"))
        sb_append(sb, ".0");
    if (f32)
        sb_putc(sb, 'f');
}

/* `#line N "file"` naming the line after it, so compiler messages about the
 * harness's own code point at the harness's lines again. */
static void put_line_directive(StrBuf *sb, const char *file)
{
    size_t n = 0;
    for (size_t i = 0; i < sb->len; i++)
        n += sb->s[i] == '\n';
    sb_printf(sb, "#line %zu \"%s\"\n", n + 2, file);
}

static void put_text(StrBuf *sb, const char *text)
{
    sb_append(sb, text);
    if (!*text || text[strlen(text) - 1] != '\n')
        sb_putc(sb, '\n');
}

/* The reference inside namespace evo_ref; its #include lines go above the
 * namespace (a header included inside a namespace breaks), each replaced
 * by a comment so that line numbers stay. */
static void put_reference(StrBuf *sb, const char *ref)
{
    StrBuf body = {0};
    for (const char *line = ref; line && *line;) {
        const char *nl = strchr(line, '\n'), *p = line;
        size_t n = nl ? (size_t)(nl - line) : strlen(line);
        while (*p == ' ' || *p == '\t')
            p++;
        int inc = *p == '#';
        if (inc) {
            p++;
            while (*p == ' ' || *p == '\t')
                p++;
            inc = strncmp(p, "include", 7) == 0;
        }
        if (inc) {
            sb_appendn(sb, line, n);
            sb_putc(sb, '\n');
            sb_append(&body, "// (moved above namespace evo_ref) ");
        }
        sb_appendn(&body, line, n);
        sb_putc(&body, '\n');
        line = nl ? nl + 1 : NULL;
    }
    sb_append(sb, "namespace evo_ref {\n");
    sb_append(sb, body.s ? body.s : "");
    sb_append(sb, "} // namespace evo_ref\n");
    sb_free(&body);
}

/* The kernel's name as the host code spells it. */
static void put_kernel(StrBuf *sb, const char *entry, int reference)
{
    sb_append(sb, reference ? "::evo_ref" : "");
    sb_append(sb, strncmp(entry, "::", 2) == 0 ? "" : "::");
    sb_append(sb, entry);
}

static int has_tmaps(const Plan *p)
{
    for (int r = 0; r < 2; r++)
        for (int i = 0; i < (r ? p->nref_launches : p->nlaunches); i++) {
            const PlanLaunch *l = r ? &p->ref_launches[i] : &p->launches[i];
            for (int a = 0; a < l->nargs; a++)
                if (l->args[a].kind == ARG_TMAP)
                    return 1;
        }
    return 0;
}

static void put_buffers(StrBuf *sb, const Plan *p)
{
    sb_append(sb, "enum BufferIndex {");
    for (int b = 0; b < p->nbuffers; b++)
        sb_printf(sb, "%s BUF_%s", b ? "," : "", p->buffers[b].name);
    sb_append(sb, " };\n\n// name, dtype, count, role, init, a, b, salt, atol, rtol\nstatic Buffer buf[] = {\n");
    for (int b = 0; b < p->nbuffers; b++) {
        const PlanBuffer *pb = &p->buffers[b];
        sb_printf(sb, "    {\"%s\", %s, %llu, %s, %s, ", pb->name, dtype_enum[pb->dtype],
                  (unsigned long long)pb->count, role_enum[pb->role], init_enum[pb->init]);
        put_real(sb, pb->a, 0);
        sb_append(sb, ", ");
        put_real(sb, pb->b, 0);
        sb_printf(sb, ", 0x%016llxull, ", (unsigned long long)pb->seed_salt);
        put_real(sb, pb->atol, 0);
        sb_append(sb, ", ");
        put_real(sb, pb->rtol, 0);
        sb_append(sb, ", nullptr, nullptr},\n");
    }
    sb_append(sb, "};\nstatic const int NBUF = sizeof(buf) / sizeof(buf[0]);\n\n");
}

/* make_tensor_maps(): one encode per tensor-map argument, numbered in the
 * order run_reference() then run_candidate() use them. */
static void put_tmaps(StrBuf *sb, const Plan *p, int ntmaps)
{
    if (!ntmaps) {
        sb_append(sb, "// This plan passes no tensor maps.\nstatic void make_tensor_maps()\n{\n}\n\n");
        return;
    }
    sb_append(sb, text_tmap);
    sb_printf(sb, "// The tensor maps the launches take by value.\nstatic CUtensorMap tmap[%d];\n\n", ntmaps);
    sb_append(sb, "static void make_tensor_maps()\n{\n");
    int k = 0;
    for (int r = 1; r >= 0; r--)
        for (int i = 0; i < (r ? p->nref_launches : p->nlaunches); i++) {
            const PlanLaunch *l = r ? &p->ref_launches[i] : &p->launches[i];
            for (int a = 0; a < l->nargs; a++) {
                const PlanArg *g = &l->args[a];
                const PlanTmap *t = &g->tmap;
                if (g->kind != ARG_TMAP)
                    continue;
                const char *name = p->buffers[g->buffer].name;
                sb_printf(sb, "    // %s launch %d (%s), argument %d: %s\n    {\n        const cuuint64_t dims[] = {",
                          r ? "reference" : "candidate", i + 1, l->entry, a + 1, name);
                for (int d = 0; d < t->rank; d++)
                    sb_printf(sb, "%s%llu", d ? ", " : "", (unsigned long long)t->dims[d]);
                if (t->rank > 1) {
                    sb_append(sb, "};\n        const cuuint64_t strides[] = {");
                    for (int d = 0; d < t->rank - 1; d++)
                        sb_printf(sb, "%s%llu", d ? ", " : "", (unsigned long long)t->strides[d]);
                    sb_append(sb, "}; // bytes, of dims 1..\n");
                } else {
                    sb_append(sb, "};\n        const cuuint64_t *strides = nullptr;\n");
                }
                sb_append(sb, "        const cuuint32_t box[] = {");
                for (int d = 0; d < t->rank; d++)
                    sb_printf(sb, "%s%u", d ? ", " : "", t->box[d]);
                sb_append(sb, "}, elem_strides[] = {");
                for (int d = 0; d < t->rank; d++)
                    sb_printf(sb, "%s%u", d ? ", " : "", t->elem_strides[d] ? t->elem_strides[d] : 1);
                sb_printf(sb, "};\n        encode_tmap(&tmap[%d], \"%s\", %s, buf[BUF_%s].%s, %d, dims, strides, box, "
                              "elem_strides,\n                    %s, %s,\n                    %s);\n    }\n",
                          k++, name, tmap_type[p->buffers[g->buffer].dtype], name,
                          r && p->buffers[g->buffer].role != ROLE_INPUT ? "ref" : "cand", t->rank,
                          tmap_swizzle[t->swizzle & 3], tmap_l2[t->l2_promotion & 3],
                          t->oob_nan ? "CU_TENSOR_MAP_FLOAT_OOB_FILL_NAN_REQUEST_ZERO_FMA"
                                     : "CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE");
            }
        }
    sb_append(sb, "}\n\n");
}

/* set_smem_limits(): the opt-in for each kernel launched with over 48 KiB
 * of dynamic shared memory (its largest launch). */
static void put_smem_limits(StrBuf *sb, const Plan *p)
{
    sb_append(sb, "// Kernels launched with over 48 KiB of dynamic shared memory must opt in.\n"
                  "static void set_smem_limits()\n{\n");
    for (int r = 1; r >= 0; r--) {
        int n = r ? p->nref_launches : p->nlaunches;
        const PlanLaunch *ls = r ? p->ref_launches : p->launches;
        for (int i = 0; i < n; i++) {
            unsigned most = 0;
            int first = 1;
            for (int j = 0; j < n; j++) {
                if (strcmp(ls[j].entry, ls[i].entry) == 0) {
                    first &= j >= i;
                    most = ls[j].smem > most ? ls[j].smem : most;
                }
            }
            if (!first || most <= 48 * 1024)
                continue;
            sb_append(sb, "    HARNESS_CHECK(cudaFuncSetAttribute((const void *)");
            put_kernel(sb, ls[i].entry, r);
            sb_printf(sb, ",\n                                       cudaFuncAttributeMaxDynamicSharedMemorySize, %u));\n",
                      most);
        }
    }
    sb_append(sb, "}\n\n");
}

/* run_reference() or run_candidate(): the launches in order; *tmap_k
 * numbers the tensor maps as put_tmaps() does. */
static void put_plan(StrBuf *sb, const Plan *p, int reference, int *tmap_k)
{
    int n = reference ? p->nref_launches : p->nlaunches;
    const PlanLaunch *ls = reference ? p->ref_launches : p->launches;
    sb_printf(sb, "// The %s's launch plan, in order.\nstatic void run_%s(cudaStream_t s)\n{\n",
              reference ? "reference" : "candidate", reference ? "reference" : "candidate");
    for (int i = 0; i < n; i++) {
        const PlanLaunch *l = &ls[i];
        sb_printf(sb, "    // %d. %s<<<(%u, %u, %u), (%u, %u, %u), %u bytes>>>(", i + 1, l->entry, l->grid[0],
                  l->grid[1], l->grid[2], l->block[0], l->block[1], l->block[2], l->smem);
        for (int a = 0; a < l->nargs; a++) {
            const PlanArg *g = &l->args[a];
            sb_append(sb, a ? ", " : "");
            if (g->kind == ARG_BUFFER || g->kind == ARG_TMAP)
                sb_printf(sb, g->kind == ARG_TMAP ? "tensor_map(%s)" : "%s", p->buffers[g->buffer].name);
            else if (g->kind == ARG_F32 || g->kind == ARG_F64)
                sb_printf(sb, "%.9g", g->f);
            else
                sb_printf(sb, "%lld", (long long)g->i);
        }
        sb_append(sb, ")\n    {\n");
        StrBuf args = {0};
        for (int a = 0; a < l->nargs; a++) {
            const PlanArg *g = &l->args[a];
            sb_append(&args, !a ? "" : a % 4 ? ", " : ",\n                        ");
            switch (g->kind) {
            case ARG_BUFFER:
                sb_printf(&args, "&buf[BUF_%s].%s", p->buffers[g->buffer].name,
                          reference && p->buffers[g->buffer].role != ROLE_INPUT ? "ref" : "cand");
                continue;
            case ARG_TMAP:
                sb_printf(&args, "&tmap[%d]", (*tmap_k)++);
                continue;
            case ARG_I32: sb_printf(sb, "        int arg%d = %lld;\n", a + 1, (long long)g->i); break;
            case ARG_I64: sb_printf(sb, "        long long arg%d = %lldLL;\n", a + 1, (long long)g->i); break;
            case ARG_F32:
            case ARG_F64:
                sb_printf(sb, "        %s arg%d = ", g->kind == ARG_F32 ? "float" : "double", a + 1);
                put_real(sb, g->f, g->kind == ARG_F32);
                sb_append(sb, ";\n");
                break;
            }
            sb_printf(&args, "&arg%d", a + 1);
        }
        if (l->nargs)
            sb_printf(sb, "        void *args[] = {%s};\n", args.s);
        else
            sb_append(sb, "        void **args = nullptr;\n");
        sb_free(&args);
        sb_append(sb, "        HARNESS_CHECK(cudaLaunchKernel((const void *)");
        put_kernel(sb, l->entry, reference);
        sb_printf(sb, ",\n                                       dim3(%u, %u, %u), dim3(%u, %u, %u), args, %u, s));\n    }\n",
                  l->grid[0], l->grid[1],
                  l->grid[2], l->block[0], l->block[1], l->block[2], l->smem);
    }
    sb_append(sb, "}\n\n");
}

/* ---- the harness -------------------------------------------------------- */

static const char *file_name(const HarnessSpec *h)
{
    return h->file && *h->file ? h->file : "harness.cu";
}

/* The program's name: the file's name without ".cu". */
static int stem_len(const char *file)
{
    size_t n = strlen(file);
    return (int)(n > 3 && strcmp(file + n - 3, ".cu") == 0 ? n - 3 : n);
}

char *harness_build_line(const HarnessSpec *h)
{
    const char *file = file_name(h);
    return xasprintf("nvcc %s -O3 -o %.*s %s%s", h->nvcc_flags ? h->nvcc_flags : "-std=c++17", stem_len(file), file,
                     file, h->plan && has_tmaps(h->plan) ? " -lcuda" : "");
}

/* Check what harness_render needs; 0 or -1 with err. */
static int spec_check(const HarnessSpec *h, EvoErr *err)
{
    const Plan *p = h->plan;
    if (!h->source || !h->ref_source)
        return err_set(err, "harness: the %s source is missing", h->source ? "reference" : "candidate");
    if (!p)
        return err_set(err, "harness: the launch plan is not resolved");
    if (p->nlaunches < 1)
        return err_set(err, "harness: the plan has no candidate launch");
    if (strpbrk(file_name(h), "\"\\\n"))
        return err_set(err, "harness: file name '%s' holds a quote, a backslash or a newline", file_name(h));
    for (int r = 0; r < 2; r++)
        for (int i = 0; i < (r ? p->nref_launches : p->nlaunches); i++) {
            const PlanLaunch *l = r ? &p->ref_launches[i] : &p->launches[i];
            for (int a = 0; a < l->nargs; a++) {
                const PlanArg *g = &l->args[a];
                if ((g->kind == ARG_BUFFER || g->kind == ARG_TMAP) && (g->buffer < 0 || g->buffer >= p->nbuffers))
                    return err_set(err, "harness: %s launch %d (%s) argument %d: buffer index %d out of range",
                                   r ? "reference" : "candidate", i + 1, l->entry, a + 1, g->buffer);
            }
            for (int j = 0; r && j < p->nlaunches; j++)
                if (strcmp(l->entry, p->launches[j].entry) == 0)
                    return err_set(err, "harness: the candidate and the reference both have an entry '%s'; two "
                                        "extern \"C\" kernels of one name cannot live in one program", l->entry);
        }
    return 0;
}

int harness_render(const HarnessSpec *h, char **out, EvoErr *err)
{
    *out = NULL;
    if (spec_check(h, err))
        return -1;
    const Plan *p = h->plan;
    const char *file = file_name(h);
    int ntmaps = 0, k = 0;
    for (int r = 0; r < 2; r++)
        for (int i = 0; i < (r ? p->nref_launches : p->nlaunches); i++)
            for (int a = 0; a < (r ? p->ref_launches : p->launches)[i].nargs; a++)
                ntmaps += (r ? p->ref_launches : p->launches)[i].args[a].kind == ARG_TMAP;
    char *build = harness_build_line(h), *undef_cand = export_undef_lines(h->source),
         *undef_ref = export_undef_lines(h->ref_source);
    StrBuf sb = {0};
    sb_append(&sb, "// ----------------------------------------------------------------------------\n"
                   "// evoeng harness: a candidate, its task's reference and a main() that checks and\n"
                   "// times it, standalone.\n");
    if (h->header)
        put_text(&sb, h->header);
    sb_printf(&sb, "// shape:    %s\n", p->shape_label ? p->shape_label : "?");
    sb_printf(&sb, "// build:    %s\n", build);
    sb_printf(&sb, "// run:      ./%.*s [--seed N] [--warmup N] [--iters N]\n", stem_len(file), file);
    sb_append(&sb, "//   fills the inputs as evoeng's gate does (seed 1 unless --seed), runs the task's\n"
                   "//   reference and the candidate's launch plan, compares every output with the\n"
                   "//   task's atol/rtol (prints max abs/rel error, then PASS, or FAIL and exit 1),\n"
                   "//   then times the plan with CUDA events (median of --iters runs, default 200).\n"
                   "//   Exit codes: 0 PASS, 1 FAIL, 2 usage, 3 a CUDA error.\n"
                   "// layout:   1. the candidate's kernel  2. the reference (namespace evo_ref)\n"
                   "//           3. the gate's input generator  4. host code (not seen by NVRTC)\n"
                   "// ----------------------------------------------------------------------------\n\n"
                   "// ==== 1. the candidate's kernel, the source evoeng compiled and measured =====\n");
    put_text(&sb, h->source);
    put_line_directive(&sb, file);
    sb_append(&sb, "// The candidate's macros end here: none of them reaches the code below.\n");
    sb_append(&sb, undef_cand);
    sb_append(&sb, "\n// ==== 2. the task's reference kernel ==========================================\n");
    put_reference(&sb, h->ref_source);
    put_line_directive(&sb, file);
    sb_append(&sb, undef_ref);
    sb_putc(&sb, '\n');
    sb_append(&sb, text_device);
    sb_append(&sb, "#ifndef __CUDACC_RTC__ // the host code: NVRTC compiles the kernels above alone\n"
                   "// ==== 4. host code ============================================================\n");
    if (ntmaps)
        sb_append(&sb, "#include <cuda.h> // cuTensorMapEncodeTiled (link with -lcuda)\n");
    sb_append(&sb, text_host_head);
    sb_append(&sb, "static const char *const SHAPE = \"");
    sb_append(&sb, p->shape_label ? p->shape_label : "?");
    sb_append(&sb, "\";\nstatic const double RECORDED_US = ");
    put_real(&sb, isnan(h->recorded_us) ? -1 : h->recorded_us, 0);
    sb_append(&sb, "; // the latency evoeng measured (-1: none)\n\n");
    put_buffers(&sb, p);
    put_tmaps(&sb, p, ntmaps);
    put_smem_limits(&sb, p);
    put_plan(&sb, p, 1, &k);
    put_plan(&sb, p, 0, &k);
    sb_append(&sb, text_host_main);
    free(build);
    free(undef_cand);
    free(undef_ref);
    *out = sb_take(&sb);
    return 0;
}

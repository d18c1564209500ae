/*
 * gensrc: the gate's input generator as CUDA C++ source, one text for the
 * worker's fill kernel (devkern.c) and for the exported harness
 * (export/harness_text.c). It defines the typedefs u64, u32 and u16,
 * struct GenSpec (an InitSpec of plan.h with its enumerations as ints,
 * laid out as GenArgs below) and the __host__ __device__ inline functions
 * mix64, seed_key, unit, box_muller and gen_value. Element i of a buffer
 * is gen_value(spec, seed_key(seed, salt), i). gate_gen_value (gen.c) is
 * the same arithmetic in C; the unit tests compare the three (test_export
 * --nvcc builds this text for the host, the gpu suite runs it on the
 * device).
 */
#ifndef EVO_GENSRC_H
#define EVO_GENSRC_H

#include <stdint.h>

#include "task/plan.h"

/* The source text, a string literal to put in front of the code that
 * uses it (it needs no header). The arithmetic is gate_gen_value's
 * (gen.c): keep the two in step, down to the order of the operations
 * (a + b * r * t, not a + b * (r * t)). */
#define GEN_SOURCE \
    "typedef unsigned long long u64;\n" \
    "typedef unsigned int u32;\n" \
    "typedef unsigned short u16;\n" \
    "\n" \
    "// An input's distribution (evoeng's InitSpec, src/task/plan.h): kind\n" \
    "// normal (a mean, b stddev), uniform [a, b), zero, const a, or outlier\n" \
    "// (the normal plus, with probability p, a normal of stddev c); rows\n" \
    "// none, lognormal (the log's mean ra and stddev rb) or uniform [ra, rb):\n" \
    "// the factor of each row of row_len elements.\n" \
    "enum { GEN_NORMAL = 0, GEN_UNIFORM = 1, GEN_ZERO = 2, GEN_CONST = 3, GEN_OUTLIER = 4 };\n" \
    "enum { GEN_ROWS_NONE = 0, GEN_ROWS_LOGNORMAL = 1, GEN_ROWS_UNIFORM = 2 };\n" \
    "struct GenSpec {\n" \
    "    int kind, rows;\n" \
    "    double a, b, p, c, ra, rb;\n" \
    "    u64 row_len;\n" \
    "};\n" \
    "\n" \
    "__host__ __device__ inline u64 mix64(u64 z)\n" \
    "{\n" \
    "    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;\n" \
    "    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;\n" \
    "    return z ^ (z >> 31);\n" \
    "}\n" \
    "\n" \
    "// The stream key of a buffer from the seed and the buffer's salt\n" \
    "// (gate_seed_key of evoeng's src/gpu/gate.c).\n" \
    "__host__ __device__ inline u64 seed_key(u64 seed, u64 salt)\n" \
    "{\n" \
    "    u64 st = seed * 0xD1B54A32D192ED03ull;\n" \
    "    return st ^ mix64(st + 0x9E3779B97F4A7C15ull) ^ (salt * 0x9E3779B97F4A7C15ull + 0x632BE59BD9B4E019ull);\n" \
    "}\n" \
    "\n" \
    "// A uniform double in [0, 1) from counter c of stream key.\n" \
    "__host__ __device__ inline double unit(u64 key, u64 c)\n" \
    "{\n" \
    "    return (double)(mix64(key + (c + 1) * 0x9E3779B97F4A7C15ull) >> 11) * 1.1102230246251565404236316680908203125e-16;\n" \
    "}\n" \
    "\n" \
    "// Box-Muller over the counter pair of i: the radius r and the cosine\n" \
    "// (even i) or sine (odd i) t; r * t is a standard normal.\n" \
    "__host__ __device__ inline void box_muller(u64 key, u64 i, double &r, double &t)\n" \
    "{\n" \
    "    u64 j = i >> 1;\n" \
    "    double u1 = 1.0 - unit(key, 2 * j), u2 = unit(key, 2 * j + 1);\n" \
    "    double th = 6.283185307179586 * u2;\n" \
    "    r = sqrt(-2.0 * log(u1));\n" \
    "    t = (i & 1) ? sin(th) : cos(th);\n" \
    "}\n" \
    "\n" \
    "// Element i of the stream key under g. The outlier draws and the row\n" \
    "// factors come from streams of their own (the key xor a constant).\n" \
    "__host__ __device__ inline double gen_value(const GenSpec &g, u64 key, u64 i)\n" \
    "{\n" \
    "    double v, r, t;\n" \
    "    if (g.kind == GEN_ZERO)\n" \
    "        v = 0;\n" \
    "    else if (g.kind == GEN_CONST)\n" \
    "        v = g.a;\n" \
    "    else if (g.kind == GEN_UNIFORM)\n" \
    "        v = g.a + (g.b - g.a) * unit(key, i);\n" \
    "    else {\n" \
    "        box_muller(key, i, r, t);\n" \
    "        v = g.a + g.b * r * t;\n" \
    "        if (g.kind == GEN_OUTLIER && unit(key ^ 0xA0761D6478BD642Full, i) < g.p) {\n" \
    "            box_muller(key ^ 0xE7037ED1A0B428DBull, i, r, t);\n" \
    "            v += g.c * r * t;\n" \
    "        }\n" \
    "    }\n" \
    "    if (g.rows != GEN_ROWS_NONE) {\n" \
    "        u64 row = i / g.row_len, rk = key ^ 0x8EBC6AF09C88C6E3ull;\n" \
    "        if (g.rows == GEN_ROWS_UNIFORM)\n" \
    "            v *= g.ra + (g.rb - g.ra) * unit(rk, row);\n" \
    "        else {\n" \
    "            box_muller(rk, row, r, t);\n" \
    "            v *= exp(g.ra + g.rb * r * t);\n" \
    "        }\n" \
    "    }\n" \
    "    return v;\n" \
    "}\n"

/* struct GenSpec of GEN_SOURCE as the host lays it out, to pass it by
 * value as a kernel argument. */
typedef struct GenArgs {
    int32_t  kind, rows;
    double   a, b, p, c, ra, rb;
    uint64_t row_len;
} GenArgs;

/* The GenArgs of an InitSpec. */
static inline GenArgs gen_args(const InitSpec *s)
{
    GenArgs g = {(int32_t)s->kind, (int32_t)s->rows, s->a, s->b, s->p, s->c, s->ra, s->rb,
                 s->row_len > 0 ? s->row_len : 1};
    return g;
}

#endif

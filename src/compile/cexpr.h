/*
 * cexpr: C expressions as a kernel file writes them (1.0f / sqrtf((float)D),
 * (S + BLOCK_M - 1) / BLOCK_M, sizeof(__half) * BLOCK_M * (D + PAD)) in the
 * task spec's expression language (task/expr.h), for `evoeng init`: casts
 * and literal suffixes dropped, hexadecimal made decimal, sqrtf, fminf,
 * fmaxf, std::min and the like mapped to sqrt, min and max, sizeof of the
 * usual element types replaced by its value, and every other name resolved
 * through the caller. What the spec's language lacks (?:, shifts, bit
 * operators, indexing, member access, other calls) makes the translation
 * fail rather than guess.
 */
#ifndef EVO_CEXPR_H
#define EVO_CEXPR_H

#include <stddef.h>

/* Resolves a name: a fresh replacement in the spec's language, or NULL
 * when the name is unknown (the translation then fails). A replacement of
 * more than one token is put in parentheses by cexpr_translate. */
typedef char *(*CexprName)(void *ctx, const char *name);

/* c in the spec's language: a fresh string, or NULL when c uses what the
 * language lacks or a name that name() does not know. */
char *cexpr_translate(const char *c, CexprName name, void *ctx);

/* 1 when w[0..n) is a word of a C scalar type: int, unsigned, long,
 * float, double, size_t, int64_t, uint32_t, bool, auto, ... */
int cexpr_type_word(const char *w, size_t n);

/* The size in bytes of a C/CUDA element type ("__half" 2, "float4" 16,
 * "unsigned int" 4, "__nv_bfloat16" 2, ...), or 0 when unknown. */
int cexpr_sizeof(const char *type);

#endif

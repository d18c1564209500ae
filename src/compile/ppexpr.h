/*
 * ppexpr: the C preprocessor's tokens, and the arithmetic of #if, for
 * canon.h. A token is an identifier, a pp-number, a punctuator, or a
 * string or character literal, as the text spells it. The arithmetic is
 * C's on 64-bit signed integers; whatever it does not reproduce exactly
 * (unsigned literals, character literals, overflow, division by zero,
 * shifts out of range, the comma operator) is refused, never guessed.
 */
#ifndef EVO_COMPILE_PPEXPR_H
#define EVO_COMPILE_PPEXPR_H

#include <stddef.h>

enum { PP_ID, PP_NUM, PP_PUNCT, PP_STR, PP_CHR, PP_HIDDEN /* a macro name its own expansion left */ };

typedef struct PpTok {
    int   type;
    char *s;      /* fresh text */
} PpTok;

typedef struct PpToks {
    PpTok *v;
    int    n, cap;
} PpToks;

/* Append a token of type with the text s[0..n) (copied). */
void pptoks_push(PpToks *t, int type, const char *s, size_t n);
/* Free every token and the array; t is empty again. */
void pptoks_free(PpToks *t);
/* 1 for a character of an identifier or pp-number: [A-Za-z0-9_$]. */
int pp_is_id(int c);
/* 1 for [0-9]. */
int pp_is_digit(int c);
/* 1 when s[0..n) is a raw string's prefix (R, LR, uR, UR, u8R). */
int pp_raw_prefix(const char *s, size_t n);
/* s[i] opens a string or character literal: the index just after it, or
 * 0 when it does not close on its line (a backslash-newline included). */
size_t pp_skip_quoted(const char *s, size_t i);
/* 1 when t is the punctuator p. */
int pp_is_punct(const PpTok *t, const char *p);
/* Append the tokens of one logical line s (no comments in it) to t.
 * Returns 0, or -1 for a raw string or a literal that does not close. */
int pp_lex(const char *s, PpToks *t);

/* Call fn for each identifier of the logical line s (literals and
 * pp-numbers skipped), with its text s[i..i+n). Returns 0, or -1 like
 * pp_lex. Allocates nothing. */
int pp_idents(const char *s, void (*fn)(void *ctx, const char *id, size_t n), void *ctx);

/* The value of an identifier left after expansion (true and false are
 * handled before): 0 and *v, or -1 to refuse. */
typedef int (*PpIdent)(void *ctx, const PpTok *t, long long *v);

/* t[0..n) as a whole #if expression: 0 and *v, or -1 when it is not one
 * or uses what is refused. */
int pp_eval(const PpTok *t, int n, PpIdent ident, void *ctx, long long *v);

#endif

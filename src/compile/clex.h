/*
 * clex: a small lexer for CUDA C++ source as people write it: it knows
 * comments, strings (raw ones too), character literals, digit separators
 * and preprocessor lines, matches braces, and walks the function
 * definitions at file scope, in namespaces and in extern "C" blocks. Macros
 * are not expanded. Shared by kfile (the device view, kernel signatures)
 * and kscan (launchers, shared arrays, static asserts).
 */
#ifndef EVO_CLEX_H
#define EVO_CLEX_H

#include <stddef.h>

/* 1 for [A-Za-z0-9_]. */
int clex_is_ident(int c);

/* When s[i] starts a comment, a string, a character literal or a
 * preprocessor line, the index just after it (a line comment or a
 * directive stops before its newline); else i. n is strlen(s). */
size_t clex_skip(const char *s, size_t n, size_t i);

/* Index of the '}' matching the '{' at s[i], or n when unbalanced. */
size_t clex_match_brace(const char *s, size_t n, size_t i);

/* s[a..b) without comments, strings and preprocessor lines (each replaced
 * by one space; a string by "S", so extern "C" reads extern S). Fresh. */
char *clex_code_only(const char *s, size_t a, size_t b);

/* 1 when the word w occurs in text as a whole identifier. */
int clex_has_word(const char *text, const char *w);

/* 1 when code (comment- and string-free) calls an identifier that starts
 * with prefix and then an upper-case letter: cudaMalloc(, cuLaunchKernel(. */
int clex_calls_api(const char *code, const char *prefix);

/* 1 when a head (code only: strings read S) says extern "C". */
int clex_has_extern_c(const char *head);

/* A function definition found by clex_walk_functions: its head (code
 * only), where its declaration starts, its '{' and its '}' (indices into
 * the source), the namespace it is in ("a::b", "" at file scope) and
 * whether it sits in an extern "C" { } block. */
typedef void (*ClexFnVisit)(void *ctx, const char *head, size_t decl, size_t brace, size_t end, const char *ns,
                            int extern_c);

/* Call visit for every function definition of src at file scope, in
 * namespaces or in extern "C" blocks, in file order. */
void clex_walk_functions(const char *src, ClexFnVisit visit, void *ctx);

/* s[a..b) trimmed, runs of blanks collapsed to one space. Fresh. */
char *clex_trim(const char *a, const char *b);

/* Split s[a..b) at top-level commas (not inside (), <>, [] or {}); call
 * add(ctx, part_begin, part_end) per part. */
void clex_split_commas(const char *a, const char *b, void (*add)(void *, const char *, const char *), void *ctx);

/* The last identifier of s[a..b) (a declarator's name, array bounds
 * skipped), fresh with *name_at pointing at it, or NULL when the text is
 * one word only (an unnamed parameter: "float *" has none). */
char *clex_last_ident(const char *a, const char *b, const char **name_at);

/* When the line at line is a #define directive ("#define NAME ...", blanks
 * allowed around the '#'), the macro's name: its length, with *name at it
 * and *after just past it (a '(' there: a function-like macro); 0 when the
 * line is no #define. */
size_t clex_define_name(const char *line, const char **name, const char **after);

/* p past its blanks (spaces, tabs, newlines). */
const char *clex_skip_blanks(const char *p);

/* In code-only text: the index of the ')' matching the '(' at s[i], or of
 * the '(' matching the ')' at s[i]; -1 when unbalanced. */
long clex_match_paren(const char *s, size_t i);
long clex_match_paren_back(const char *s, size_t i);

/* The identifier ending just before s[i] (blanks skipped) into out, at
 * most size - 1 characters; "" when there is none. */
void clex_word_before(const char *s, size_t i, char *out, size_t size);

#endif

/*
 * canon: a source's text as its preprocessor will leave it, for the
 * compile cache's key. Two configurations of one template that differ only
 * in a knob the preprocessor drops (it is read only by #if lines whose
 * outcome it does not change) compile to the same cubin; keyed on this
 * text, the second one is a cache hit instead of an NVRTC compile.
 *
 * The text keeps every line that survives the conditionals as it is
 * (comments out), every #line, #pragma, #error and #undef, and the
 * #define lines of the macros that the surviving text reads, directly or
 * through other macros; every other line becomes empty, so line numbers
 * do not move. Conditions are evaluated as C's preprocessor does, with
 * the names the source does not define (__CUDA_ARCH__, the prelude's)
 * asked of the caller. When anything is beyond what this module handles
 * exactly (an #include, a raw string, a # or ## operator in a macro used
 * by a condition, an unsigned literal, a name the caller cannot resolve,
 * ...), there is no canonical text and the caller keys on the source.
 */
#ifndef EVO_COMPILE_CANON_H
#define EVO_COMPILE_CANON_H

/* What the compiler predefines: for a name the source neither defines nor
 * undefines, set *defined, and when it is defined *has_value (1 when it
 * expands to an integer constant, then in *value). Returns 0, or -1 when
 * the answer is unknown (canon_source then returns NULL). */
typedef int (*CanonLookup)(void *ctx, const char *name, int *defined, int *has_value, long long *value);

/* The canonical text of src (a fresh string), or NULL when src uses what
 * this module does not handle exactly, or lookup failed. Thread-safe:
 * only lookup is shared. */
char *canon_source(const char *src, CanonLookup lookup, void *ctx);

#endif

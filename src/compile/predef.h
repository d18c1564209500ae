/*
 * predef: what NVRTC predefines for one set of options (__CUDA_ARCH__,
 * the feature macros of an arch-specific target, the prelude's guards),
 * asked of NVRTC itself with a small probe program and remembered for the
 * process. canon.h's keys use it for the names a source does not define.
 */
#ifndef EVO_COMPILE_PREDEF_H
#define EVO_COMPILE_PREDEF_H

/* The NVRTC options the names are asked for (the exact list a compile
 * uses: the target is among them). */
typedef struct PredefOptions {
    const char *const *v;
    int                n;
} PredefOptions;

/* A CanonLookup (canon.h) with ctx a PredefOptions: whether name is
 * defined under those options and, when it expands to an integer
 * constant, its value. The first question for a name and option list
 * compiles a probe (tens of ms); the answer is kept for the process.
 * Returns 0, or -1 when NVRTC could not answer (not kept). Thread-safe. */
int predef_lookup(void *ctx, const char *name, int *defined, int *has_value, long long *value);

#endif

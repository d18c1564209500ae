/*
 * kscan: what a kernel file says beyond its kernels' signatures, read as it
 * is (no preprocessor, no compiler), for `evoeng init`:
 *
 *   - launchers: host functions that launch kernels with <<<...>>>, their
 *     parameters, their local values (dim3 grid(...), const float scale =
 *     ...), and each launch: the kernel, its template arguments, the
 *     <<<grid, block, smem, stream>>> configuration, the arguments and the
 *     if-condition that guards it (if (S == 512 && D == 64) k<512, 64><<<...);
 *   - per kernel: its __launch_bounds__, its static __shared__ arrays (element
 *     type, bounds, alignment), whether it uses extern __shared__, its
 *     static_asserts and its constexpr/const locals;
 *   - the file's object-like #define macros, and whether a knob is used as
 *     an on/off switch (#if KNOB, if (KNOB), KNOB ? a : b, KNOB && ...).
 *
 * cexpr.h turns the C expressions found here into the spec's language.
 * Everything is as the file spells it: a macro is not expanded unless the
 * caller's name lookup expands it.
 */
#ifndef EVO_KSCAN_H
#define EVO_KSCAN_H

#include "compile/kfile.h"

/* A local value: dim3 grid(B * H, 8) is {"dim3", "grid", "B * H, 8"};
 * const float scale = 1.0f / sqrtf((float)D) is {"const float", "scale",
 * "1.0f / sqrtf((float)D)"}. Code only (strings read S). */
typedef struct KscanLocal {
    char *type;
    char *name;
    char *init;
} KscanLocal;

/* One kernel launch with <<<...>>> in a launcher. */
typedef struct KscanLaunch {
    char  *kernel;     /* the callee as written, no template arguments: "util::fill" */
    char **targs;      /* its template arguments as written ("512", "BLOCK_M") */
    int    ntargs;
    char  *config[4];  /* grid, block, shared memory, stream; NULL where absent */
    char **args;       /* call arguments as written */
    int    nargs;
    char  *guard;      /* the condition of the if right around it, or NULL */
} KscanLaunch;

typedef struct KscanLauncher {
    KfileKernel  sig;        /* name, parameters (and template parameters) */
    KscanLocal  *locals;
    int          nlocals;
    KscanLaunch *launches;   /* in source order */
    int          nlaunches;
} KscanLauncher;

/* A static __shared__ array (or scalar: ndims 0) of a kernel. */
typedef struct KscanShared {
    char  *type;       /* element type, qualifiers and alignment dropped: "__half" */
    char  *name;
    char **dims;       /* bounds as written, outermost first */
    int    ndims;
    int    align;      /* __align__(N) / alignas(N), 0 when not given */
} KscanShared;

typedef struct KscanAssert {
    char *cond;        /* code only */
    char *msg;         /* the message without quotes, "" when none */
} KscanAssert;

typedef struct KscanKernel {
    char        *name;       /* qualified as kfile_kernels names it */
    char        *bounds[2];  /* __launch_bounds__(max threads, min blocks), NULL where absent */
    KscanShared *shared;
    int          nshared;
    int          dyn_shared; /* 1: it declares extern __shared__ memory */
    KscanAssert *asserts;    /* its own static_asserts, then the file-scope ones */
    int          nasserts;
    KscanLocal  *locals;     /* constexpr / const scalar locals */
    int          nlocals;
} KscanKernel;

typedef struct KscanMacro {
    char *name;
    char *value;       /* trimmed; "" for #define X */
} KscanMacro;

typedef struct Kscan {
    KscanLauncher *launchers;   /* host functions with at least one <<<...>>> launch */
    int            nlaunchers;
    KscanKernel   *kernels;     /* every __global__ definition, file order */
    int            nkernels;
    KscanMacro    *macros;      /* object-like #defines; the first definition of a name */
    int            nmacros;
} Kscan;

/* Read src. Never fails: what it cannot read is left out. Release with
 * kscan_free. */
void kscan_file(const char *src, Kscan *out);
void kscan_free(Kscan *k);

/* The kernel named name (as kfile_kernels qualifies it), or NULL. */
const KscanKernel *kscan_kernel(const Kscan *k, const char *name);
/* The object-like macro name, or NULL. */
const KscanMacro *kscan_macro(const Kscan *k, const char *name);
/* The local of l named name, or NULL. */
const KscanLocal *kscan_local(const KscanLocal *l, int n, const char *name);

/* 1 when src uses knob as an on/off condition anywhere: #if KNOB,
 * #elif !KNOB, if (KNOB), KNOB ? a : b, or as an operand of && or ||. */
int kscan_is_switch(const char *src, const char *knob);

#endif

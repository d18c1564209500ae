/*
 * kfile: what lets a real kernel file (written for nvcc) compile under
 * NVRTC unchanged. Three parts, all used by nvrtc_compile() on every
 * compilation:
 *
 *   - the prelude, a header pre-included into every program: what NVRTC
 *     lacks and kernels commonly use (INFINITY, NAN, HUGE_VALF, FLT_MAX,
 *     INT_MAX, M_PI, int64_t and the other <stdint.h> types), each under
 *     #ifndef so a file's own definition still wins;
 *   - header stubs, handed to NVRTC by name: <stdint.h>/<cstdint> with the
 *     types, <math.h>, <cfloat>, <climits>, <cassert> (their macros are in
 *     the prelude; NVRTC has assert built in) and empty host-only headers
 *     (<stdio.h>, <stdlib.h>, <iostream>, <vector>, ...), so that includes
 *     of cuda.h, cuda_runtime.h, mma.h and the C library do not stop the
 *     compile;
 *   - the device view of a source: top-level host functions (an extern "C"
 *     launcher, main, a function whose body launches with <<<...>>> or calls
 *     the CUDA runtime, anything marked __host__ alone) are blanked out,
 *     newlines kept, so NVRTC never sees them and its line numbers still
 *     match the file.
 *
 * Where a compile still fails on host code, kfile_hint() turns the log into
 * the line and the exact guard to add.
 */
#ifndef EVO_KFILE_H
#define EVO_KFILE_H

#include <stddef.h>

/* The prelude's include name, for --pre-include=. */
#define KFILE_PRELUDE "evoeng_prelude.h"

/* Changes whenever the prelude, the stubs or the device-view pass change
 * what NVRTC is given: it is part of the compile cache key. */
#define KFILE_VERSION "kfile-1"

/* The headers to hand to nvrtcCreateProgram: *names and *texts point at
 * static arrays of n entries (the prelude first). Returns n. */
int kfile_headers(const char *const **names, const char *const **texts);

/* The device view of src: a fresh string of the same length and the same
 * newlines, with each top-level host function definition (head and body)
 * replaced by spaces. A definition is host code when its head has neither
 * __global__ nor __device__ nor constexpr, and it is marked __host__, has
 * extern "C" linkage, is main, or its body uses <<<, a CUDA runtime or
 * driver call (cudaXxx(, cuXxx(), std::, or a C library I/O or allocation
 * call (printf to a FILE, malloc, exit, ...). Namespaces and extern "C"
 * blocks are entered; classes, structs and initializers are left alone.
 * Comments, strings and preprocessor lines are never touched. *nremoved
 * (optional) gets the number of functions blanked out. */
char *kfile_device_source(const char *src, int *nremoved);

/* One __global__ function defined in a source, as kfile_kernels finds it. */
typedef struct KfileParam {
    char *type;         /* "const float *__restrict__", blanks collapsed */
    char *name;         /* "q"; "argN" for an unnamed parameter */
} KfileParam;

typedef struct KfileKernel {
    char       *name;       /* qualified by its namespaces: "util::fill" */
    int         line;       /* 1-based line of its __global__ */
    int         extern_c;   /* 1: declared extern "C" */
    int         is_template;
    char      **tnames;     /* template parameter names ("S", "D") */
    int         ntparams;
    KfileParam *params;
    int         nparams;
} KfileKernel;

/* The kernels (__global__ function definitions) of src, in file order,
 * found at file scope, in namespaces and in extern "C" blocks (comments,
 * strings and preprocessor lines are skipped; macros are not expanded).
 * *out is a fresh array (kfile_kernels_free); returns the count. */
int kfile_kernels(const char *src, KfileKernel **out);
void kfile_kernels_free(KfileKernel *k, int n);

/* A function head (code only, as clex_walk_functions gives it) read as a
 * signature into *k: its name as the head spells it (no namespace), extern
 * "C" when the head says so, its template parameter names and its
 * parameters; line 0. Returns 0, or -1 (k empty) when the head has no
 * parameter list or no name. Release with kfile_signature_clear. */
int kfile_signature(const char *head, KfileKernel *k);
void kfile_signature_clear(KfileKernel *k);

/* A one-line hint for a failed compile of the program `name`, from its
 * NVRTC log: when the first error is a missing header or an undefined
 * host API (cudaMalloc, std::..., fprintf) it names the line and the guard:
 *   kernel.cu:12: host-only code NVRTC cannot compile (identifier "cudaMalloc" is undefined):
 *   guard it with #ifndef __CUDACC_RTC__ ... #endif
 * When the first error is in NVRTC's name-expression map (an entry that
 * names no kernel), the hint says that instead. Fresh string, or NULL when
 * the log shows neither. */
char *kfile_hint(const char *log);

#endif

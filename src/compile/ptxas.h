/*
 * ptxas: the resources of each kernel, from the report ptxas -v writes
 * into the NVRTC log (registers, spills, stack, shared and constant
 * memory).
 */
#ifndef EVO_COMPILE_PTXAS_H
#define EVO_COMPILE_PTXAS_H

/* Resource usage of one kernel, from ptxas -v. */
typedef struct KernelResources {
    char  name[128];          /* the function's (mangled or extern "C") name */
    int   registers;
    int   spill_stores;       /* bytes */
    int   spill_loads;        /* bytes */
    int   stack;              /* stack frame bytes */
    int   smem;               /* static shared memory bytes */
    int   cmem;               /* constant bank 0 bytes (params), -1 if not reported */
} KernelResources;

/* Parse ptxas' verbose report (the NVRTC log of a --ptxas-options=-v
 * compile) into one KernelResources per entry function ("Compiling entry
 * function 'X'"), in log order. Device (non-entry) functions are skipped.
 * stack is the larger of "stack frame" and "cumulative stack size"; cmem
 * is cmem[0] or -1 when not reported (NVRTC 13 does not report it). Names
 * longer than 127 bytes are truncated. *out is a fresh array (NULL when
 * none) the caller frees; returns the number of kernels (>= 0). A NULL
 * log gives 0. */
int ptxas_parse_resources(const char *log, KernelResources **out);

/* The index of the last kernel of k[0..n) named name (exact match), or
 * -1. */
int ptxas_find_kernel(const KernelResources *k, int n, const char *name);

#endif

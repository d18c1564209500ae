/*
 * init_spec: the starting task spec `evoeng init` writes for a kernel file,
 * from what the file says (compile/kfile.h, compile/kscan.h):
 *
 *   - with a host launcher (a host function that launches with <<<...>>>):
 *     the kernels it launches, in order, as the plan; their instantiation
 *     (k<512, 64>, template arguments resolved through the launcher's
 *     constants) as entries; grid and block from dim3 locals or inline
 *     expressions; dynamic shared memory from the launch; the arguments in
 *     the spec's language (buffers by name, ints, floats such as
 *     1.0f / sqrtf((float)D)); dims from the launcher's integer parameters
 *     (values from the if-guard of the launch, S == 512, or the template
 *     argument bound to a parameter of the same name; else a guess, said
 *     so in "_dims"); buffers from its pointer parameters (const: input,
 *     shape: the launcher's dims);
 *   - params from the #ifndef/#define knobs, with value lists around each
 *     default: 0/1 for a switch, powers of two for a power-of-two size;
 *   - constraints that rule out what cannot compile or launch: the kernels'
 *     static_asserts, threads per block against MAX_THREADS and the
 *     __launch_bounds__, static shared memory against SMEM_PER_BLOCK (a
 *     derived SMEM_STATIC from the __shared__ arrays), dynamic against the
 *     opt-in limit;
 *   - one TODO: the reference kernel (the one thing a file cannot say).
 *
 * Without a launcher every open choice (grid, block, dims, shapes,
 * template arguments) is a "TODO..." string, as before.
 */
#ifndef EVO_INIT_SPEC_H
#define EVO_INIT_SPEC_H

#include <jansson.h>

/* The spec for the kernel file whose text is text, named file in the
 * messages, whose template path (as the spec names it) is tpl. *out gets a
 * fresh JSON object (key order kept), *ntodo the number of TODO strings in
 * it. Returns the number of kernels found (0: none; *out is then NULL). */
int init_spec_build(const char *text, const char *file, const char *tpl, json_t **out, int *ntodo);

#endif

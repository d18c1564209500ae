/*
 * clog: a compile log read for people. NVRTC's log holds the compiler's
 * error lines ("k.cu(12): error: ..."), ptxas's ("ptxas error   : ...",
 * "ptxas fatal   : ..."), evoeng's own hints ("evoeng: ...") and ptxas's -v
 * resource report. ptxas refuses some programs without a line of its own:
 * under NVRTC a kernel whose static shared memory is over the 48 KB a block
 * may declare gets NVRTC_ERROR_COMPILATION and a log whose only trace is
 * "57344 bytes smem" (nvcc says "uses too much shared data (0xe000 bytes,
 * 0xc000 max)"). clog_silent_cause names that.
 */
#ifndef EVO_CLOG_H
#define EVO_CLOG_H

#include "compile/ptxas.h"

/* The most static shared memory a block may declare, bytes (every
 * architecture evoeng targets). */
#define CLOG_STATIC_SMEM_MAX 49152

/* The error lines of log, in order, at most max of them (max <= 0: all),
 * joined with "\n": compiler and ptxas errors, fatal lines and evoeng's
 * hints; the closing "N errors detected in the compilation of ..." is
 * left out. Fresh string, or NULL when the log has none. */
char *clog_errors(const char *log, int max);

/* Why a compile failed with no error line, from the kernels ptxas reported
 * (ptxas_parse_resources): the first one over CLOG_STATIC_SMEM_MAX,
 *   "ptxas: entry function '_Z1kPf' uses too much shared data (57344 bytes,
 *    0xe000; 49152, 0xc000, max): static __shared__ arrays are limited to
 *    48 KB a block (extern __shared__ memory can opt in to more)";
 * else "NVRTC failed without an error line (ptxas reported N kernels)".
 * Fresh string. */
char *clog_silent_cause(const KernelResources *k, int n);

#endif

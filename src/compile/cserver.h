/*
 * cserver: NVRTC in helper processes. One process does not use a large
 * machine's cores with NVRTC: on a 32-core host, 32 compile threads, 93%
 * busy, used 13 cores (NVRTC serialises part of its work inside a
 * process); two processes used 23. Once cserver_enable() is called, each
 * thread that compiles through cserver_compile() owns a helper process,
 * `evoeng __compile IN OUT`, which compiles into the compile cache; the
 * thread then takes the result from the cache. Where there is no cache
 * directory, no helper can start, or a helper fails, the compilation
 * runs in this process instead: the same result either way.
 */
#ifndef EVO_COMPILE_CSERVER_H
#define EVO_COMPILE_CSERVER_H

#include "compile/nvrtc.h"

/* Turn helper processes on for this process: exe is the evoeng binary to
 * start them from ("/proc/self/exe" in evoeng itself). Call before the
 * first compilation; NULL turns them off. */
void cserver_enable(const char *exe);

/* nvrtc_compile(), in the calling thread's helper process when enabled:
 * the same contract, the same result (from the cache the helper filled).
 * The process's NVRTC counters (nvrtc_stats) count the helpers' work. */
int cserver_compile(const CompileRequest *req, CompileResult *res, EvoErr *err);

/* The hidden `evoeng __compile IN OUT` (main.c calls this first): serve
 * compilations on file descriptors IN and OUT until IN closes. Returns 1
 * with *exit_code set when argv is that command, 0 otherwise. */
int cserver_dispatch(int argc, char **argv, int *exit_code);

#endif

/*
 * spawn: start an evoeng helper process that speaks over a pair of pipes.
 * Both helpers of evoeng use it: the NVRTC helpers (compile/cserver.c) and
 * the GPU worker (gpu/worker.c); it sits in compile/, the lower of the two
 * stages, so that neither climbs.
 */
#ifndef EVO_COMPILE_SPAWN_H
#define EVO_COMPILE_SPAWN_H

/* Start `exe entry IN OUT`, a helper process that reads requests on file
 * descriptor IN and answers on OUT (the GPU worker, an NVRTC helper):
 * its stdout is its stderr, its signal mask empty, SIGPIPE default. On
 * success *pid, and *to_fd / *from_fd, this side's ends of the pipes
 * (close-on-exec), and 0; -1 with errno when a pipe or fork fails (an
 * exec that fails shows as the child exiting 127). */
int spawn_piped(const char *exe, const char *entry, int *pid, int *to_fd, int *from_fd);

#endif

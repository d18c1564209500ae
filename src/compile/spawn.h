/*
 * spawn: start an evoeng helper process that speaks over a pair of pipes,
 * and move whole buffers over them. Both helpers of evoeng use it: the
 * NVRTC helpers (compile/cserver.c) and the GPU worker (gpu/worker.c,
 * gpu/proto.c); it sits in compile/, the lower of the two stages, so that
 * neither climbs.
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

#include <stddef.h>

#define SPAWN_EOF     1   /* spawn_read_all: the pipe closed before n bytes */
#define SPAWN_TIMEOUT 2   /* spawn_read_all: the deadline passed */

/* Write all n bytes of buf to fd, going on after EINTR. Returns 0, or -1
 * with errno (EIO for a write that wrote nothing). */
int spawn_write_all(int fd, const void *buf, size_t n);
/* Read exactly n bytes from fd into buf before deadline_ms (time_now_ms's
 * clock; < 0: none), going on after EINTR and EAGAIN. Returns 0,
 * SPAWN_EOF, SPAWN_TIMEOUT, or -1 with errno (a failed poll or read). */
int spawn_read_all(int fd, void *buf, size_t n, double deadline_ms);

#endif

/*
 * util: the small things every module needs. The xmalloc family (out of
 * memory aborts the program: that is a deliberate decision, made here and
 * nowhere else), a growable string buffer, an error carrier that names the
 * failing call, whole-file reading, SHA-256 content hashes and clocks.
 */
#ifndef EVO_UTIL_H
#define EVO_UTIL_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#if defined(__GNUC__)
#define EVO_PRINTF(f, a) __attribute__((format(printf, f, a)))
#define EVO_NORETURN __attribute__((noreturn))
#else
#define EVO_PRINTF(f, a)
#define EVO_NORETURN
#endif

#define EVO_ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))

/* ---- memory ---------------------------------------------------------- */

/* Allocate or abort. Out of memory prints "evoeng: out of memory" and
 * calls abort(): no caller checks for NULL. xfree(NULL) is a no-op. */
void *xmalloc(size_t n);
void *xcalloc(size_t count, size_t size);
void *xrealloc(void *p, size_t n);
char *xstrdup(const char *s);
char *xstrndup(const char *s, size_t n);
/* printf into a fresh heap string the caller frees. */
char *xasprintf(const char *fmt, ...) EVO_PRINTF(1, 2);
char *xvasprintf(const char *fmt, va_list ap);

/* ---- errors ---------------------------------------------------------- */

/* An error message carrier. Library functions take an `EvoErr *` (which
 * may be NULL), fill it on failure and return a negative code. The text
 * names the failing call or the place in the input, e.g.
 * "cuModuleLoadData: CUDA_ERROR_INVALID_PTX: ..." */
typedef struct EvoErr {
    char msg[2048];
} EvoErr;

/* Format into err (if not NULL) and return -1, so that callers can write
 * `return err_set(err, "...")`. */
int err_set(EvoErr *err, const char *fmt, ...) EVO_PRINTF(2, 3);
/* Prefix an existing message: "prefix: old message". Returns -1. */
int err_prefix(EvoErr *err, const char *fmt, ...) EVO_PRINTF(2, 3);

/* ---- string buffer --------------------------------------------------- */

/* A growable NUL-terminated string. Zero-initialize (StrBuf sb = {0}) to
 * start; sb_free() releases; sb_take() hands the string to the caller. */
typedef struct StrBuf {
    char  *s;    /* always NUL-terminated once anything was appended */
    size_t len;  /* bytes used, without the NUL */
    size_t cap;  /* bytes allocated */
} StrBuf;

void  sb_append(StrBuf *sb, const char *s);
void  sb_appendn(StrBuf *sb, const char *s, size_t n);
void  sb_printf(StrBuf *sb, const char *fmt, ...) EVO_PRINTF(2, 3);
void  sb_vprintf(StrBuf *sb, const char *fmt, va_list ap);
void  sb_putc(StrBuf *sb, char c);
void  sb_clear(StrBuf *sb);
char *sb_take(StrBuf *sb);   /* returns the string ("" if empty), resets sb */
void  sb_free(StrBuf *sb);
/* s with every occurrence of from (not empty) replaced by to. Fresh string. */
char *str_replace_all(const char *s, const char *from, const char *to);

/* ---- files ----------------------------------------------------------- */

/* The most file_read() reads: a spec, a kernel file, a template part, a
 * prompt, a cache entry (README.md, "Trust model"). */
#define FILE_READ_MAX ((size_t)16 << 20)

/* Read a whole regular file of at most FILE_READ_MAX bytes into a
 * NUL-terminated heap buffer. *len (optional) gets the size. Returns 0,
 * or -1 with err naming the path and why: it cannot be opened, it is not
 * a regular file (a device, a FIFO, a directory: refused without reading
 * or blocking), it is too large. file_read_max: with another limit. */
int file_read(const char *path, char **out, size_t *len, EvoErr *err);
int file_read_max(const char *path, size_t max, char **out, size_t *len, EvoErr *err);

/* file_write_flags: also replace a symbolic link at the target (the link
 * itself; never what it points to). */
#define FILE_WRITE_FORCE 1

/* Write a whole file safely: into a fresh temporary file beside path
 * (O_EXCL, an unpredictable name), every write checked, fsync, then
 * rename over path. Refuses, writing nothing, to replace a directory, a
 * device, a FIFO or a socket, and a symbolic link unless
 * FILE_WRITE_FORCE. On any failure (a full disk, a missing directory)
 * the temporary file is removed and whatever was at path is unchanged.
 * Returns 0, or -1 with err naming path (never the temporary file). */
int file_write(const char *path, const void *data, size_t len, EvoErr *err);
int file_write_flags(const char *path, const void *data, size_t len, int flags, EvoErr *err);
/* Create a directory and its parents (like mkdir -p). */
int file_mkdirs(const char *path, EvoErr *err);
/* Directory part of path ("." if none), as a fresh string. */
char *path_dirname(const char *path);
/* Join dir and rel unless rel is absolute. Fresh string. */
char *path_join(const char *dir, const char *rel);
/* path as an absolute path (symbolic links resolved when it exists, else
 * joined to the current directory), so that it still names the same file
 * from another directory. Fresh string; path itself when the current
 * directory cannot be read. */
char *path_absolute(const char *path);

/* ---- hashing --------------------------------------------------------- */

/* SHA-256 of data, as 64 lowercase hex digits plus NUL in hex[65]. */
void sha256_hex(const void *data, size_t len, char hex[65]);

/* ---- time ------------------------------------------------------------ */

double time_now_ms(void);        /* monotonic clock, milliseconds */
double thread_cpu_ms(void);      /* CPU time of the calling thread, milliseconds */
double process_cpu_ms(void);     /* CPU time of this process (every thread), milliseconds */
/* The cores this process may use: the CPUs of its affinity mask (taskset,
 * cpusets), capped by a cgroup v2 CPU quota (/sys/fs/cgroup/cpu.max, as
 * `docker --cpus` sets), else the online CPUs. At least 1, at most 1024. */
int    cpu_cores(void);
char  *time_iso8601(void);       /* current UTC time, fresh string */

/* ---- numbers --------------------------------------------------------- */

/* Strict parsers: the whole string must be a number in range.
 * Return 0 or -1. */
int parse_long(const char *s, long min, long max, long *out);

/* Start `exe entry IN OUT`, a helper process that reads requests on file
 * descriptor IN and answers on OUT (the GPU worker, an NVRTC helper):
 * its stdout is its stderr, its signal mask empty, SIGPIPE default. On
 * success *pid, and *to_fd / *from_fd, this side's ends of the pipes
 * (close-on-exec), and 0; -1 with errno when a pipe or fork fails (an
 * exec that fails shows as the child exiting 127). */
int spawn_piped(const char *exe, const char *entry, int *pid, int *to_fd, int *from_fd);
int parse_double(const char *s, double *out);

/* ---- random numbers -------------------------------------------------- */

/* xoshiro256** seeded through splitmix64: fast, reproducible, not for
 * secrets. The same seed gives the same sequence on every machine. */
typedef struct Rng {
    uint64_t s[4];
} Rng;

void     rng_seed(Rng *r, uint64_t seed);
uint64_t rng_next(Rng *r);
/* Uniform integer in [0, n) (n > 0), without modulo bias. */
uint64_t rng_below(Rng *r, uint64_t n);
/* Uniform double in [0, 1). */
double   rng_uniform(Rng *r);
/* Mix two 64-bit values into a seed (e.g. run seed and generation). */
uint64_t rng_mix(uint64_t a, uint64_t b);

#endif

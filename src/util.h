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

/* ---- field tables ---------------------------------------------------- */

/* A record that crosses a boundary (a store row, the worker pipe, the MPI
 * wire, --json) is described once, by a table of Fields: one per member,
 * with its key (the JSON key, or the SQL column), its type and its offset.
 * The store binds and reads rows from a table (store/rows.h: F_ID, F_INT,
 * F_REAL and F_TEXT only); fld_to_json and fld_from_json write and read
 * the JSON of any table. */
struct json_t;

typedef enum FieldType {
    F_ID,      /* int64_t; 0 is NULL (SQL) and null (JSON) */
    F_INT,     /* int64_t; a negative value is NULL / null, read back as -1 */
    F_REAL,    /* double; a non-finite value is NULL / null, read back as NaN */
    F_TEXT,    /* owned char *; NULL is NULL / null */
    F_I64,     /* int64_t, every value (JSON only, like the types below) */
    F_I32,     /* int (or an enum stored as one) */
    F_U32,     /* unsigned */
    F_U64,     /* uint64_t (written as the json integer of the same bits) */
    F_BOOL,    /* int, written true / false; read from a boolean or an integer */
    F_CHARS,   /* char[size], NUL-terminated; a longer string is an error */
    F_NAME,    /* int (an enum): written as names[value], 0 <= value < max */
    F_OBJ,     /* a nested struct, described by sub[nsub] */
    F_ARR,     /* an array of elem: inline T[max], or (dyn) an owned T *; the int at
                * `count` says how many (FLD_FIXED: always max) */
    F_CUSTOM   /* written by put, read by get */
} FieldType;

#define FLD_FIXED ((size_t)-1)

/* Field.show: how fld_to_json writes a field (0: always, as its type says).
 * The --json views of the store's rows say in their tables what they
 * print (store/rows.h). */
#define FLD_HIDE 1   /* never: a member that is no part of the JSON (a column --json does not print) */
#define FLD_OMIT 2   /* not when its value is null (F_ID 0, F_INT < 0, F_REAL not finite, F_TEXT NULL) */
#define FLD_MORE 4   /* only in the view FLD_MORE of fld_to_json_view (the detail, e.g. show --json) */

typedef struct Field {
    const char   *key;    /* JSON key, SQL column (pasted into SQL: a constant) */
    const char   *jkey;   /* JSON key where it is not key (a column's name in --json); written only: a dotted
                           * "a.b" puts the member under b of the object a */
    int           show;   /* JSON: FLD_HIDE, FLD_OMIT, FLD_MORE */
    FieldType     type;
    size_t        off;    /* of the member in its record */
    int           req;    /* SQL: NOT NULL; JSON: must be present */
    size_t        size;   /* F_CHARS: the array's size; F_ARR: an element's */
    const struct Field *sub; /* F_OBJ, F_ARR of F_OBJ: the element's table */
    int           nsub;
    FieldType     elem;   /* F_ARR: the elements' type */
    int           dyn;    /* F_ARR: the member is a pointer, allocated by the reader */
    size_t        count;  /* F_ARR: offset of the int count in the record, or FLD_FIXED */
    int           match;  /* F_ARR: the count is read before (its own field), not set: a
                           * length that differs is an error */
    int           max;    /* F_ARR: most elements; F_NAME: how many names */
    const char *const *names;                 /* F_NAME */
    int (*when)(const void *rec);             /* JSON: written only when true (NULL: always) */
    /* F_CUSTOM: the value of the member (new reference); another type: written as put says instead
     * of as the type says (a text column that holds JSON, an enum's name), read as the type says */
    struct json_t *(*put)(const void *at);
    int (*get)(const struct json_t *v, void *at); /* F_CUSTOM: 0, or -1 when v is malformed */
    /* F_CUSTOM, instead of get: 0, or -1 with err continuing the path ("[2].init: why", ": why") */
    int (*read)(const struct json_t *v, void *at, EvoErr *err);
} Field;

#define NFIELDS(t) ((int)EVO_ARRAY_LEN(t))
#define FLD_MEMBER_LEN(T, m) ((int)(sizeof(((T *)0)->m) / sizeof(((T *)0)->m[0])))
/* A member of type `type` under its own name, or under `key`. */
#define FJ(T, m, ty) {.key = #m, .type = ty, .off = offsetof(T, m)}
#define FJK(T, key_, m, ty) {.key = key_, .type = ty, .off = offsetof(T, m)}
/* A char[] member. */
#define FJ_CHARS(T, m) {.key = #m, .type = F_CHARS, .off = offsetof(T, m), .size = sizeof(((T *)0)->m)}
/* A nested struct described by table tab. */
#define FJ_OBJ(T, m, tab) {.key = #m, .type = F_OBJ, .off = offsetof(T, m), .sub = tab, .nsub = NFIELDS(tab)}
/* An inline array of structs (tab), its length in member cnt. */
#define FJ_ARR(T, m, cnt, tab)                                                                                   \
    {.key = #m, .type = F_ARR, .off = offsetof(T, m), .size = sizeof(((T *)0)->m[0]), .sub = tab,               \
     .nsub = NFIELDS(tab), .elem = F_OBJ, .count = offsetof(T, cnt), .max = FLD_MEMBER_LEN(T, m)}

/* rec as a JSON object (new reference): every field in table order, but a
 * field whose `when` is false and those `show` leaves out (FLD_HIDE; a
 * null FLD_OMIT; FLD_MORE unless view has FLD_MORE). fld_to_json: view 0. */
struct json_t *fld_to_json(const Field *f, int n, const void *rec);
struct json_t *fld_to_json_view(const Field *f, int n, const void *rec, int view);

/* Read the JSON object j into rec. A key that is absent leaves its member
 * as it is (the caller sets the defaults first), unless the field is
 * required. j is data from another process or a file: a value of the wrong
 * type, a required key missing, a string or an array too long or a name
 * not known fails with err naming the JSON path ("launches[2].entry: ...").
 * Returns 0 or -1; on -1 the members read so far stay (the caller frees
 * the record as it would any). */
int fld_from_json(const Field *f, int n, const struct json_t *j, void *rec, EvoErr *err);

/* Free what fld_from_json allocated in rec: F_TEXT strings, dyn arrays
 * (and what their elements own), nested records' members; the pointers
 * become NULL. F_CUSTOM members are the caller's. */
void fld_release(const Field *f, int n, void *rec);

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
/* file_write_flags: no fsync of the file or its directory. The write is
 * still atomic for other processes (rename), but after a power loss the
 * file may be empty or torn: only for files whose readers verify them
 * (the compile cache: a sha256 of the cubin in a json written last). */
#define FILE_WRITE_NOSYNC 2

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

/* ---- hashing --------------------------------------------------------- */

/* SHA-256 of data, as 64 lowercase hex digits plus NUL in hex[65]. */
void sha256_hex(const void *data, size_t len, char hex[65]);

/* ---- time ------------------------------------------------------------ */

double time_now_ms(void);        /* monotonic clock, milliseconds */
double thread_cpu_ms(void);      /* CPU time of the calling thread, milliseconds */
double process_cpu_ms(void);     /* CPU time of this process (every thread), milliseconds */
char  *time_iso8601(void);       /* current UTC time, fresh string */

/* ---- numbers --------------------------------------------------------- */

/* Strict parsers: the whole string must be a number in range.
 * Return 0 or -1. */
int parse_long(const char *s, long min, long max, long *out);

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

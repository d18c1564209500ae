/*
 * util: memory, errors, strings, files, SHA-256 and clocks. See util.h.
 */
#include "util.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>

/* ---- memory ---------------------------------------------------------- */

static EVO_NORETURN void oom(void)
{
    fputs("evoeng: out of memory\n", stderr);
    abort();
}

void *xmalloc(size_t n)
{
    void *p = malloc(n ? n : 1);
    if (!p)
        oom();
    return p;
}

void *xcalloc(size_t count, size_t size)
{
    void *p = calloc(count ? count : 1, size ? size : 1);
    if (!p)
        oom();
    return p;
}

void *xrealloc(void *p, size_t n)
{
    p = realloc(p, n ? n : 1);
    if (!p)
        oom();
    return p;
}

char *xstrdup(const char *s)
{
    return xstrndup(s, strlen(s));
}

char *xstrndup(const char *s, size_t n)
{
    char *p = xmalloc(n + 1);
    memcpy(p, s, n);
    p[n] = '\0';
    return p;
}

char *xvasprintf(const char *fmt, va_list ap)
{
    va_list ap2;
    va_copy(ap2, ap);
    int n = vsnprintf(NULL, 0, fmt, ap2);
    va_end(ap2);
    if (n < 0)
        n = 0;
    char *p = xmalloc((size_t)n + 1);
    vsnprintf(p, (size_t)n + 1, fmt, ap);
    return p;
}

char *xasprintf(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char *p = xvasprintf(fmt, ap);
    va_end(ap);
    return p;
}

/* ---- errors ---------------------------------------------------------- */

int err_set(EvoErr *err, const char *fmt, ...)
{
    if (err) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err->msg, sizeof(err->msg), fmt, ap);
        va_end(ap);
    }
    return -1;
}

int err_prefix(EvoErr *err, const char *fmt, ...)
{
    if (err) {
        char pre[1024], old[sizeof(err->msg)];
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(pre, sizeof(pre), fmt, ap);
        va_end(ap);
        memcpy(old, err->msg, sizeof(old));
        snprintf(err->msg, sizeof(err->msg), "%s: %s", pre, old);
    }
    return -1;
}

/* ---- string buffer --------------------------------------------------- */

static void sb_reserve(StrBuf *sb, size_t extra)
{
    if (sb->len + extra + 1 <= sb->cap)
        return;
    size_t cap = sb->cap ? sb->cap : 64;
    while (cap < sb->len + extra + 1)
        cap *= 2;
    sb->s = xrealloc(sb->s, cap);
    sb->cap = cap;
}

void sb_appendn(StrBuf *sb, const char *s, size_t n)
{
    sb_reserve(sb, n);
    memcpy(sb->s + sb->len, s, n);
    sb->len += n;
    sb->s[sb->len] = '\0';
}

void sb_append(StrBuf *sb, const char *s)
{
    sb_appendn(sb, s, strlen(s));
}

void sb_putc(StrBuf *sb, char c)
{
    sb_appendn(sb, &c, 1);
}

void sb_vprintf(StrBuf *sb, const char *fmt, va_list ap)
{
    va_list ap2;
    va_copy(ap2, ap);
    int n = vsnprintf(NULL, 0, fmt, ap2);
    va_end(ap2);
    if (n <= 0)
        return;
    sb_reserve(sb, (size_t)n);
    vsnprintf(sb->s + sb->len, (size_t)n + 1, fmt, ap);
    sb->len += (size_t)n;
}

void sb_printf(StrBuf *sb, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    sb_vprintf(sb, fmt, ap);
    va_end(ap);
}

void sb_clear(StrBuf *sb)
{
    sb->len = 0;
    if (sb->s)
        sb->s[0] = '\0';
}

char *sb_take(StrBuf *sb)
{
    char *s = sb->s ? sb->s : xstrdup("");
    sb->s = NULL;
    sb->len = sb->cap = 0;
    return s;
}

void sb_free(StrBuf *sb)
{
    free(sb->s);
    sb->s = NULL;
    sb->len = sb->cap = 0;
}

char *str_replace_all(const char *s, const char *from, const char *to)
{
    StrBuf sb = {0};
    size_t n = strlen(from);
    const char *p;
    if (n == 0)
        return xstrdup(s);
    while ((p = strstr(s, from))) {
        sb_appendn(&sb, s, (size_t)(p - s));
        sb_append(&sb, to);
        s = p + n;
    }
    sb_append(&sb, s);
    return sb_take(&sb);
}

/* ---- files ----------------------------------------------------------- */

int file_read_max(const char *path, size_t max, char **out, size_t *len, EvoErr *err)
{
    /* O_NONBLOCK: opening a FIFO with no writer must not hang; only a
     * regular file is read (a device such as /dev/zero never ends) */
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
    if (fd < 0)
        return err_set(err, "%s: cannot open: %s", path, strerror(errno));
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        close(fd);
        return err_set(err, "%s: not a regular file: evoeng reads only regular files", path);
    }
    if ((uint64_t)st.st_size > max) {
        close(fd);
        return err_set(err, "%s: too large (%lld bytes; the limit is %zu MiB)", path, (long long)st.st_size,
                       max >> 20);
    }
    StrBuf sb = {0};
    char buf[65536];
    for (;;) {
        ssize_t n = read(fd, buf, sizeof(buf));
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            int e = errno;
            close(fd);
            sb_free(&sb);
            return err_set(err, "%s: read error: %s", path, strerror(e));
        }
        if (n == 0)
            break;
        if (sb.len + (size_t)n > max) {   /* it grew while being read */
            close(fd);
            sb_free(&sb);
            return err_set(err, "%s: too large (over the limit of %zu MiB)", path, max >> 20);
        }
        sb_appendn(&sb, buf, (size_t)n);
    }
    close(fd);
    if (len)
        *len = sb.len;
    *out = sb_take(&sb);
    return 0;
}

int file_read(const char *path, char **out, size_t *len, EvoErr *err)
{
    return file_read_max(path, FILE_READ_MAX, out, len, err);
}

/* Refuse to replace what is at path unless it is absent or a regular file
 * (a symbolic link only with FILE_WRITE_FORCE: the link is replaced, never
 * what it points to). */
static int target_ok(const char *path, int flags, EvoErr *err)
{
    struct stat st;
    if (lstat(path, &st) != 0)
        return errno == ENOENT ? 0 : err_set(err, "%s: cannot write: %s", path, strerror(errno));
    if (S_ISREG(st.st_mode))
        return 0;
    if (S_ISLNK(st.st_mode))
        return flags & FILE_WRITE_FORCE ? 0
               : err_set(err, "%s: a symbolic link: not replacing it (give --force to replace the link itself; "
                         "what it points to is never written)", path);
    const char *what = S_ISDIR(st.st_mode) ? "a directory" : S_ISFIFO(st.st_mode) ? "a FIFO"
                     : S_ISSOCK(st.st_mode) ? "a socket" : "a device";
    return err_set(err, "%s: %s: not replacing it (evoeng writes only regular files)", path, what);
}

/* Create a fresh temporary file beside path (O_EXCL, an unpredictable
 * name); *tmp gets its name. Returns the descriptor or -1 (errno). */
static int temp_beside(const char *path, char **tmp)
{
    for (int tries = 0; tries < 64; tries++) {
        uint64_t r = 0;
        if (getrandom(&r, sizeof(r), 0) != (ssize_t)sizeof(r))
            r = rng_mix((uint64_t)time_now_ms() * 1000003u, (uint64_t)getpid() * 7919u + (uint64_t)tries);
        *tmp = xasprintf("%s.tmp.%016llx", path, (unsigned long long)r);
        int fd = open(*tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0666);
        if (fd >= 0)
            return fd;
        int e = errno;
        free(*tmp);
        *tmp = NULL;
        if (e != EEXIST) {
            errno = e;
            return -1;
        }
    }
    errno = EEXIST;
    return -1;
}

int file_write_flags(const char *path, const void *data, size_t len, int flags, EvoErr *err)
{
    if (target_ok(path, flags, err) < 0)
        return -1;
    char *tmp = NULL;
    int fd = temp_beside(path, &tmp);
    if (fd < 0)
        return err_set(err, "%s: cannot create: %s", path, strerror(errno));
    const char *p = data;
    size_t left = len;
    int e = 0;
    while (left > 0 && !e) {
        ssize_t n = write(fd, p, left);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            e = n < 0 ? errno : EIO;
        else {
            p += n;
            left -= (size_t)n;
        }
    }
    if (!e && !(flags & FILE_WRITE_NOSYNC) && fsync(fd) != 0 && errno != EINVAL)
        e = errno;
    if (close(fd) != 0 && !e)
        e = errno;
    if (!e && rename(tmp, path) != 0)
        e = errno;
    if (e) {
        unlink(tmp);
        free(tmp);
        return err_set(err, "%s: write failed: %s (the file there, if any, is unchanged)", path, strerror(e));
    }
    free(tmp);
    if (flags & FILE_WRITE_NOSYNC)
        return 0;
    char *dir = path_dirname(path);   /* the rename itself reaches the disk */
    int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dfd >= 0) {
        fsync(dfd);
        close(dfd);
    }
    free(dir);
    return 0;
}

int file_write(const char *path, const void *data, size_t len, EvoErr *err)
{
    return file_write_flags(path, data, len, 0, err);
}

int file_mkdirs(const char *path, EvoErr *err)
{
    char *p = xstrdup(path);
    for (char *s = p + 1; *s; s++) {
        if (*s != '/')
            continue;
        *s = '\0';
        if (mkdir(p, 0777) != 0 && errno != EEXIST) {
            err_set(err, "mkdir %s: %s", p, strerror(errno));
            free(p);
            return -1;
        }
        *s = '/';
    }
    int rc = 0;
    if (mkdir(p, 0777) != 0 && errno != EEXIST)
        rc = err_set(err, "mkdir %s: %s", p, strerror(errno));
    free(p);
    return rc;
}

char *path_dirname(const char *path)
{
    const char *slash = strrchr(path, '/');
    if (!slash)
        return xstrdup(".");
    if (slash == path)
        return xstrdup("/");
    return xstrndup(path, (size_t)(slash - path));
}

char *path_join(const char *dir, const char *rel)
{
    if (rel[0] == '/' || !dir || !dir[0] || strcmp(dir, ".") == 0)
        return xstrdup(rel);
    return xasprintf("%s/%s", dir, rel);
}

/* ---- SHA-256 (FIPS 180-4) -------------------------------------------- */

typedef struct Sha256 {
    uint32_t h[8];
    uint64_t bits;
    uint8_t  buf[64];
    size_t   used;
} Sha256;

static const uint32_t sha_k[64] = {
    0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
    0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
    0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
    0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
    0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
    0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
    0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
    0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2,
};

#define ROR(x, n) (((x) >> (n)) | ((x) << (32 - (n))))

static void sha256_block(Sha256 *c, const uint8_t *p)
{
    uint32_t w[64];
    for (int i = 0; i < 16; i++)
        w[i] = (uint32_t)p[4 * i] << 24 | (uint32_t)p[4 * i + 1] << 16 |
               (uint32_t)p[4 * i + 2] << 8 | p[4 * i + 3];
    for (int i = 16; i < 64; i++) {
        uint32_t s0 = ROR(w[i - 15], 7) ^ ROR(w[i - 15], 18) ^ (w[i - 15] >> 3);
        uint32_t s1 = ROR(w[i - 2], 17) ^ ROR(w[i - 2], 19) ^ (w[i - 2] >> 10);
        w[i] = w[i - 16] + s0 + w[i - 7] + s1;
    }
    uint32_t a = c->h[0], b = c->h[1], cc = c->h[2], d = c->h[3];
    uint32_t e = c->h[4], f = c->h[5], g = c->h[6], h = c->h[7];
    for (int i = 0; i < 64; i++) {
        uint32_t t1 = h + (ROR(e, 6) ^ ROR(e, 11) ^ ROR(e, 25)) + ((e & f) ^ (~e & g)) + sha_k[i] + w[i];
        uint32_t t2 = (ROR(a, 2) ^ ROR(a, 13) ^ ROR(a, 22)) + ((a & b) ^ (a & cc) ^ (b & cc));
        h = g; g = f; f = e; e = d + t1;
        d = cc; cc = b; b = a; a = t1 + t2;
    }
    c->h[0] += a; c->h[1] += b; c->h[2] += cc; c->h[3] += d;
    c->h[4] += e; c->h[5] += f; c->h[6] += g; c->h[7] += h;
}

void sha256_hex(const void *data, size_t len, char hex[65])
{
    Sha256 c = {{0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a,
                 0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19}, 0, {0}, 0};
    const uint8_t *p = data;
    c.bits = (uint64_t)len * 8;
    while (len >= 64) {
        sha256_block(&c, p);
        p += 64;
        len -= 64;
    }
    uint8_t tail[128] = {0};
    memcpy(tail, p, len);
    tail[len] = 0x80;
    size_t total = len + 9 <= 64 ? 64 : 128;
    for (int i = 0; i < 8; i++)
        tail[total - 1 - i] = (uint8_t)(c.bits >> (8 * i));
    sha256_block(&c, tail);
    if (total == 128)
        sha256_block(&c, tail + 64);
    for (int i = 0; i < 8; i++)
        snprintf(hex + 8 * i, 9, "%08x", c.h[i]);
}

/* ---- time ------------------------------------------------------------ */

double time_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

double thread_cpu_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

double process_cpu_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

char *time_iso8601(void)
{
    time_t t = time(NULL);
    struct tm tm;
    gmtime_r(&t, &tm);
    char buf[32];
    strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%SZ", &tm);
    return xstrdup(buf);
}

/* ---- numbers --------------------------------------------------------- */

int parse_long(const char *s, long min, long max, long *out)
{
    if (!s || !*s)
        return -1;
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno || *end || v < min || v > max)
        return -1;
    *out = v;
    return 0;
}

int parse_double(const char *s, double *out)
{
    if (!s || !*s)
        return -1;
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (errno || *end || v != v)
        return -1;
    *out = v;
    return 0;
}

/* ---- random numbers -------------------------------------------------- */

static uint64_t splitmix64(uint64_t *x)
{
    uint64_t z = (*x += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

void rng_seed(Rng *r, uint64_t seed)
{
    for (int i = 0; i < 4; i++)
        r->s[i] = splitmix64(&seed);
}

static uint64_t rotl(uint64_t x, int k)
{
    return (x << k) | (x >> (64 - k));
}

uint64_t rng_next(Rng *r)
{
    uint64_t *s = r->s;
    uint64_t out = rotl(s[1] * 5, 7) * 9;
    uint64_t t = s[1] << 17;
    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = rotl(s[3], 45);
    return out;
}

uint64_t rng_below(Rng *r, uint64_t n)
{
    uint64_t limit = UINT64_MAX - UINT64_MAX % n;
    uint64_t x;
    do
        x = rng_next(r);
    while (x >= limit);
    return x % n;
}

double rng_uniform(Rng *r)
{
    return (double)(rng_next(r) >> 11) * (1.0 / 9007199254740992.0);
}

uint64_t rng_mix(uint64_t a, uint64_t b)
{
    uint64_t x = a ^ rotl(b, 32) ^ 0x6a09e667f3bcc909ULL;
    splitmix64(&x);
    return splitmix64(&x) ^ b;
}

/* ---- field tables ---------------------------------------------------- */

static json_t *fld_value(const Field *f, const char *at);

/* f's JSON key. */
#define FLD_KEY(f) ((f)->jkey ? (f)->jkey : (f)->key)

/* o[key] = v (stolen); a dotted key "a.b" sets b of the object o["a"]. */
static void fld_set(json_t *o, const char *key, json_t *v)
{
    const char *dot = strchr(key, '.');
    char head[64];
    if (dot && dot - key < (ptrdiff_t)sizeof(head)) {
        snprintf(head, sizeof(head), "%.*s", (int)(dot - key), key);
        json_t *sub = json_object_get(o, head);
        if (!json_is_object(sub))
            json_object_set_new(o, head, sub = json_object());
        o = sub, key = dot + 1;
    }
    json_object_set_new(o, key, v);
}

/* A table's record as an object. */
json_t *fld_to_json_view(const Field *f, int n, const void *rec, int view)
{
    json_t *o = json_object();
    for (int i = 0; i < n; i++) {
        if ((f[i].show & FLD_HIDE) || (f[i].show & ~view & FLD_MORE) || (f[i].when && !f[i].when(rec)))
            continue;
        json_t *v = fld_value(&f[i], (const char *)rec + f[i].off);
        if ((f[i].show & FLD_OMIT) && json_is_null(v))
            json_decref(v);
        else
            fld_set(o, FLD_KEY(&f[i]), v);
    }
    return o;
}

json_t *fld_to_json(const Field *f, int n, const void *rec)
{
    return fld_to_json_view(f, n, rec, 0);
}

/* The pseudo-field of one element of array f. */
#define FLD_ELEM(f) {.key = (f)->key, .type = (f)->elem, .size = (f)->size, .sub = (f)->sub, .nsub = (f)->nsub}

static json_t *fld_value(const Field *f, const char *at)
{
    if (f->put)
        return f->put(at);
    switch (f->type) {
    case F_ID: return *(const int64_t *)at > 0 ? json_integer(*(const int64_t *)at) : json_null();
    case F_INT: return *(const int64_t *)at >= 0 ? json_integer(*(const int64_t *)at) : json_null();
    case F_REAL: return isfinite(*(const double *)at) ? json_real(*(const double *)at) : json_null();
    case F_TEXT: return *(char *const *)at ? json_string(*(char *const *)at) : json_null();
    case F_I64: return json_integer(*(const int64_t *)at);
    case F_I32: return json_integer(*(const int *)at);
    case F_U32: return json_integer(*(const unsigned *)at);
    case F_U64: return json_integer((json_int_t)*(const uint64_t *)at);
    case F_BOOL: return json_boolean(*(const int *)at);
    case F_CHARS: return json_string(at);
    case F_NAME: {
        int v = *(const int *)at;
        return json_string(v >= 0 && v < f->max ? f->names[v] : "?");
    }
    case F_OBJ: return fld_to_json(f->sub, f->nsub, at);
    case F_ARR: {
        json_t *a = json_array();
        Field e = FLD_ELEM(f);
        const char *base = f->dyn ? *(const char *const *)at : at;
        int c = f->count == FLD_FIXED ? f->max : *(const int *)(at - f->off + f->count);
        c = c < 0 ? 0 : c > f->max && f->max > 0 ? f->max : c;
        for (int k = 0; k < c && base; k++)
            json_array_append_new(a, fld_value(&e, base + (size_t)k * f->size));
        return a;
    }
    case F_CUSTOM: break;   /* put, above */
    }
    return json_null();
}

static int fld_bad(EvoErr *err, const char *path, const char *want, const json_t *v)
{
    static const char *const types[] = {"an object", "an array", "a string", "an integer", "a real number",
                                        "true", "false", "null"};
    return err_set(err, "%s: %s expected, found %s", path, want, v ? types[json_typeof(v)] : "nothing");
}

static int fld_get(const Field *f, const json_t *v, char *rec, char *at, const char *path, EvoErr *err);

/* The elements of array f from v into the member at (of record rec). */
static int fld_get_arr(const Field *f, const json_t *v, char *rec, char *at, const char *path, EvoErr *err)
{
    size_t len = json_array_size(v);
    if (f->max > 0 && len > (size_t)f->max)
        return err_set(err, "%s: %zu elements, at most %d", path, len, f->max);
    int want = f->count == FLD_FIXED ? f->max : f->match ? *(int *)(rec + f->count) : (int)len;
    if (len != (size_t)want)
        return err_set(err, "%s: %zu elements, %d expected", path, len, want);
    char *base = at;
    if (f->dyn) {
        free(*(char **)at);
        base = *(char **)at = xcalloc(len ? len : 1, f->size);
    }
    if (f->count != FLD_FIXED && !f->match)
        *(int *)(rec + f->count) = 0;
    Field e = FLD_ELEM(f);
    for (size_t k = 0; k < len; k++) {
        char p[512];
        snprintf(p, sizeof(p), "%s[%zu]", path, k);
        if (f->count != FLD_FIXED && !f->match)   /* before: the caller frees a half-read element */
            *(int *)(rec + f->count) = (int)k + 1;
        if (fld_get(&e, json_array_get(v, k), base + k * f->size, base + k * f->size, p, err))
            return -1;
    }
    return 0;
}

/* Read value v of field f into the member at (of record rec). */
static int fld_get(const Field *f, const json_t *v, char *rec, char *at, const char *path, EvoErr *err)
{
    int null = json_is_null(v);
    switch (f->type) {
    case F_ID:
    case F_INT:
    case F_I64:
    case F_I32:
    case F_U32:
    case F_U64: {
        if (null && (f->type == F_ID || f->type == F_INT))
            return *(int64_t *)at = f->type == F_ID ? 0 : -1, 0;
        if (!json_is_integer(v))
            return fld_bad(err, path, "an integer", v);
        json_int_t x = json_integer_value(v);
        if ((f->type == F_I32 && (x < INT_MIN || x > INT_MAX)) || (f->type == F_U32 && (x < 0 || x > UINT_MAX)))
            return err_set(err, "%s: %lld is out of range", path, (long long)x);
        if (f->type == F_U32)
            *(unsigned *)at = (unsigned)x;
        else if (f->type == F_I32)
            *(int *)at = (int)x;
        else
            *(int64_t *)at = (int64_t)x;   /* F_U64: the same bits */
        return 0;
    }
    case F_REAL:
        if (!null && !json_is_number(v))
            return fld_bad(err, path, "a number", v);
        return *(double *)at = null ? NAN : json_number_value(v), 0;
    case F_BOOL:
        if (!json_is_boolean(v) && !json_is_integer(v))
            return fld_bad(err, path, "a boolean", v);
        return *(int *)at = json_is_boolean(v) ? json_is_true(v) : json_integer_value(v) != 0, 0;
    case F_TEXT:
        if (!null && !json_is_string(v))
            return fld_bad(err, path, "a string", v);
        free(*(char **)at);
        return *(char **)at = null ? NULL : xstrdup(json_string_value(v)), 0;
    case F_CHARS:
    case F_NAME:
        if (!json_is_string(v))
            return fld_bad(err, path, "a string", v);
        if (f->type == F_CHARS) {
            if (json_string_length(v) >= f->size)
                return err_set(err, "%s: a string of %zu bytes, at most %zu", path, json_string_length(v),
                               f->size - 1);
            memcpy(at, json_string_value(v), json_string_length(v) + 1);
            return 0;
        }
        for (int k = 0; k < f->max; k++)
            if (strcmp(json_string_value(v), f->names[k]) == 0)
                return *(int *)at = k, 0;
        return err_set(err, "%s: unknown name '%.64s'", path, json_string_value(v));
    case F_OBJ:
        if (!json_is_object(v))
            return fld_bad(err, path, "an object", v);
        for (int i = 0; i < f->nsub; i++) {
            const Field *s = &f->sub[i];
            const json_t *sv = s->show & FLD_HIDE ? NULL : json_object_get(v, FLD_KEY(s));
            char p[512];
            snprintf(p, sizeof(p), "%s%s%s", path, path[0] ? "." : "", FLD_KEY(s));
            if (!sv && s->req)
                return err_set(err, "%s: missing", p);
            if (sv && fld_get(s, sv, at, at + s->off, p, err))
                return -1;
        }
        return 0;
    case F_ARR:
        if (!json_is_array(v))
            return fld_bad(err, path, "an array", v);
        return fld_get_arr(f, v, rec, at, path, err);
    case F_CUSTOM: {
        EvoErr why = {{0}};
        if (!f->read)
            return f->get(v, at) ? err_set(err, "%s: malformed", path) : 0;
        return f->read(v, at, &why) ? err_set(err, "%s%s", path, why.msg) : 0;
    }
    }
    return err_set(err, "%s: unknown field type", path);
}

int fld_from_json(const Field *f, int n, const json_t *j, void *rec, EvoErr *err)
{
    Field top = {.key = "", .type = F_OBJ, .sub = f, .nsub = n};
    return fld_get(&top, j, rec, rec, "", err);
}

void fld_release(const Field *f, int n, void *rec)
{
    for (int i = 0; i < n; i++) {
        char *at = (char *)rec + f[i].off;
        if (f[i].type == F_OBJ)
            fld_release(f[i].sub, f[i].nsub, at);
        if (f[i].type == F_ARR && (f[i].elem == F_OBJ || f[i].elem == F_TEXT)) {
            Field e = FLD_ELEM(&f[i]);
            char *base = f[i].dyn ? *(char **)at : at;
            int c = f[i].count == FLD_FIXED ? f[i].max : *(int *)((char *)rec + f[i].count);
            for (int k = 0; base && k < c && (f[i].dyn || k < f[i].max); k++)
                fld_release(&e, 1, base + (size_t)k * f[i].size);
        }
        if (f[i].type == F_TEXT || (f[i].type == F_ARR && f[i].dyn)) {
            free(*(char **)at);
            *(char **)at = NULL;
        }
    }
}

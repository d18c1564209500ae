/* cserver: see cserver.h. */
#include "compile/cserver.h"

#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "compile/spawn.h"

#define MSG_MAX (64u << 20)   /* the largest message either side accepts */

static char *g_exe;                     /* set once, before the compile threads start */
static pthread_key_t g_key;
static pthread_once_t g_once = PTHREAD_ONCE_INIT;

/* A compile thread's helper. */
typedef struct Helper {
    pid_t pid;
    int   to, from;
    int   broken;   /* it failed once: this thread compiles in-process from now on */
} Helper;

static void helper_stop(Helper *h)
{
    if (h->to >= 0)
        close(h->to);
    if (h->from >= 0)
        close(h->from);
    h->to = h->from = -1;
    if (h->pid > 0) {
        int st;
        if (waitpid(h->pid, &st, WNOHANG) == 0) {   /* it exits on EOF; make sure */
            kill(h->pid, SIGKILL);
            waitpid(h->pid, &st, 0);
        }
    }
    h->pid = 0;
}

static void helper_free(void *p)
{
    Helper *h = p;
    helper_stop(h);
    free(h);
}

static void key_init(void)
{
    pthread_key_create(&g_key, helper_free);
}

void cserver_enable(const char *exe)
{
    free(g_exe);
    g_exe = exe ? xstrdup(exe) : NULL;
    pthread_once(&g_once, key_init);
}

/* ---- messages: a 4-byte length, then JSON text ---------------------------- */

static int send_json(int fd, json_t *o)
{
    char *s = json_dumps(o, JSON_COMPACT);
    uint32_t n = s ? (uint32_t)strlen(s) : 0;
    int rc = s && spawn_write_all(fd, &n, sizeof(n)) == 0 && spawn_write_all(fd, s, n) == 0 ? 0 : -1;
    free(s);
    return rc;
}

/* The next message as JSON (the caller decrefs), or NULL at EOF or on an
 * error. */
static json_t *recv_json(int fd)
{
    uint32_t n;
    if (spawn_read_all(fd, &n, sizeof(n), -1) != 0 || n > MSG_MAX)
        return NULL;
    char *s = xmalloc((size_t)n + 1);
    json_t *o = NULL;
    if (spawn_read_all(fd, s, n, -1) == 0) {
        s[n] = 0;
        o = json_loads(s, 0, NULL);
    }
    free(s);
    return o;
}

/* ---- the messages ---------------------------------------------------------- */

/* A request: what to compile, and where the cache is. */
typedef struct CsRequest {
    CompileRequest req;        /* after fld_from_json its strings are owned (fld_release) */
    char          *cache_dir;
} CsRequest;

/* A reply: rc 0 when the result is in the cache. */
typedef struct CsReply {
    int    rc;
    int    compiled;          /* 1: compiled now, not a cache hit */
    double cpu_ms, wall_ms;
    char   err[sizeof(((EvoErr *)0)->msg)];
    char   key[65];           /* the cache key of the result ("" when rc != 0) */
} CsReply;

#define CS_TEXT(key_, m) {.key = key_, .type = F_TEXT, .off = offsetof(CsRequest, m)}
#define CS_TEXTS(key_, m, n)                                                                                     \
    {.key = key_, .type = F_ARR, .off = offsetof(CsRequest, m), .elem = F_TEXT, .dyn = 1, .size = sizeof(char *), \
     .count = offsetof(CsRequest, n)}
static const Field request_fields[] = {
    CS_TEXT("source", req.source),
    CS_TEXT("name", req.name),
    CS_TEXT("arch", req.arch),
    CS_TEXTS("options", req.options, req.noptions),
    {.key = "fast_math", .type = F_BOOL, .off = offsetof(CsRequest, req.fast_math)},
    {.key = "lineinfo", .type = F_BOOL, .off = offsetof(CsRequest, req.lineinfo)},
    CS_TEXTS("name_exprs", req.name_exprs, req.nname_exprs),
    CS_TEXT("cache_dir", cache_dir),
};

#define CS_R(m, ty) {.key = #m, .type = ty, .off = offsetof(CsReply, m), .req = 1}
static const Field reply_fields[] = {
    CS_R(rc, F_I32), CS_R(compiled, F_BOOL), CS_R(cpu_ms, F_REAL), CS_R(wall_ms, F_REAL),
    {.key = "err", .type = F_CHARS, .off = offsetof(CsReply, err), .req = 1, .size = sizeof(((CsReply *)0)->err)},
    {.key = "key", .type = F_CHARS, .off = offsetof(CsReply, key), .req = 1, .size = sizeof(((CsReply *)0)->key)},
};

/* ---- the helper process ----------------------------------------------------- */

static int serve(int in, int out)
{
    for (;;) {
        json_t *o = recv_json(in);
        if (!o)
            return 0;   /* the compile thread is gone */
        CsRequest q = {.cache_dir = NULL};
        CsReply r = {0};
        CompileResult res;
        EvoErr err = {{0}};
        int ok = fld_from_json(request_fields, NFIELDS(request_fields), o, &q, &err) == 0;
        nvrtc_set_cache_dir(ok ? q.cache_dir : NULL);
        double c0 = thread_cpu_ms();
        ok = ok && (q.req.source && q.req.arch ? 1 : (err_set(&err, "a request without a source"), 0));
        r.rc = ok ? nvrtc_compile(&q.req, &res, &err) : -1;
        r.compiled = r.rc == 0 && !res.cache_hit;
        r.cpu_ms = thread_cpu_ms() - c0;
        r.wall_ms = r.rc == 0 ? res.compile_ms : 0.0;
        snprintf(r.err, sizeof(r.err), "%s", err.msg);
        if (r.rc == 0)
            snprintf(r.key, sizeof(r.key), "%s", res.key);
        if (ok)
            nvrtc_result_free(&res);
        fld_release(request_fields, NFIELDS(request_fields), &q);
        json_decref(o);
        json_t *j = fld_to_json(reply_fields, NFIELDS(reply_fields), &r);
        int sent = send_json(out, j);
        json_decref(j);
        if (sent != 0)
            return 1;
    }
}

/* A helper compiles only when nothing else wants the core: SCHED_IDLE,
 * unless EVOENG_COMPILE_NICE names a nice value (inherited from the compile
 * thread that started it). A task of the run that wakes (a GPU worker whose
 * kernel finished, the loop) then takes a core from a helper at once,
 * instead of waiting for its turn behind 64 of them. */
static void helper_idle(void)
{
#ifdef SCHED_IDLE
    const char *nice = getenv("EVOENG_COMPILE_NICE");
    struct sched_param sp = {0};
    if (!nice || !*nice)
        (void)sched_setscheduler(0, SCHED_IDLE, &sp);   /* best effort */
#endif
}

int cserver_dispatch(int argc, char **argv, int *exit_code)
{
    long in_fd, out_fd;
    if (argc < 4 || strcmp(argv[1], "__compile") != 0)
        return 0;
    if (parse_long(argv[2], 0, 1 << 20, &in_fd) != 0 || parse_long(argv[3], 0, 1 << 20, &out_fd) != 0) {
        fprintf(stderr, "evoeng __compile: bad file descriptors '%s' '%s'\n", argv[2], argv[3]);
        *exit_code = 2;
        return 1;
    }
    signal(SIGPIPE, SIG_IGN);
    /* Ctrl-C and SIGTERM are for the run, which finishes what it has: a
     * helper ends when its compile thread closes the pipe (or dies) */
    signal(SIGINT, SIG_IGN);
    signal(SIGTERM, SIG_IGN);
    helper_idle();
    *exit_code = serve((int)in_fd, (int)out_fd);
    return 1;
}

/* ---- the compile thread's side ---------------------------------------------- */

static int helper_start(Helper *h)
{
    int pid;
    if (spawn_piped(g_exe, "__compile", &pid, &h->to, &h->from) != 0)
        return -1;
    h->pid = pid;
    return 0;
}

static Helper *thread_helper(void)
{
    Helper *h = pthread_getspecific(g_key);
    if (!h) {
        h = xcalloc(1, sizeof(*h));
        h->to = h->from = -1;
        pthread_setspecific(g_key, h);
    }
    if (!h->broken && h->pid <= 0 && helper_start(h) != 0)
        h->broken = 1;
    return h;
}

/* Compile req in the helper; 0 with *compiled, *cpu_ms and *wall_ms when it
 * left a final result in the cache, -1 otherwise (the helper is then let
 * go: this thread compiles in-process from now on). */
static int remote(Helper *h, const CompileRequest *req, const char *dir, int *compiled, double *cpu_ms,
                  double *wall_ms, char key[65])
{
    CsRequest q = {*req, (char *)dir};
    CsReply rep;
    json_t *o = fld_to_json(request_fields, NFIELDS(request_fields), &q);
    int rc = send_json(h->to, o);
    json_decref(o);
    json_t *r = rc == 0 ? recv_json(h->from) : NULL;
    if (r && fld_from_json(reply_fields, NFIELDS(reply_fields), r, &rep, NULL) != 0) {
        json_decref(r);
        r = NULL;
    }
    rc = r && rep.rc == 0 ? 0 : -1;
    if (r) {
        *compiled = rep.compiled;
        *cpu_ms = rep.cpu_ms;
        *wall_ms = rep.wall_ms;
        memcpy(key, rep.key, 65);
    }
    if (!r) {   /* it died or spoke nonsense: no more helper for this thread */
        helper_stop(h);
        h->broken = 1;
    }
    json_decref(r);
    return rc;
}

int cserver_compile(const CompileRequest *req, CompileResult *res, EvoErr *err)
{
    char *dir = g_exe ? nvrtc_cache_dir() : NULL;
    Helper *h = dir ? thread_helper() : NULL;
    int compiled = 0;
    double cpu_ms = 0, wall_ms = 0;
    char key[65] = "";
    int done = h && !h->broken && remote(h, req, dir, &compiled, &cpu_ms, &wall_ms, key) == 0;
    free(dir);
    CompileRequest local = *req;
    local.key = done ? key : NULL;   /* the helper's key: no second canon_source */
    int rc = nvrtc_compile(&local, res, err);   /* a cache hit when the helper compiled it */
    if (done && rc == 0 && compiled && res->cache_hit) {
        res->cache_hit = 0;
        res->compile_ms = wall_ms;
        nvrtc_stats_account(1, cpu_ms, wall_ms);
    }
    return rc;
}

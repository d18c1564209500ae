/* cserver: see cserver.h. */
#include "compile/cserver.h"

#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <pthread.h>
#include <signal.h>
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

static int write_all(int fd, const void *buf, size_t n)
{
    const char *p = buf;
    while (n > 0) {
        ssize_t w = write(fd, p, n);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return -1;
        p += w;
        n -= (size_t)w;
    }
    return 0;
}

static int read_all(int fd, void *buf, size_t n)
{
    char *p = buf;
    while (n > 0) {
        ssize_t r = read(fd, p, n);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            return -1;
        p += r;
        n -= (size_t)r;
    }
    return 0;
}

static int send_json(int fd, json_t *o)
{
    char *s = json_dumps(o, JSON_COMPACT);
    uint32_t n = s ? (uint32_t)strlen(s) : 0;
    int rc = s && write_all(fd, &n, sizeof(n)) == 0 && write_all(fd, s, n) == 0 ? 0 : -1;
    free(s);
    return rc;
}

/* The next message as JSON (the caller decrefs), or NULL at EOF or on an
 * error. */
static json_t *recv_json(int fd)
{
    uint32_t n;
    if (read_all(fd, &n, sizeof(n)) != 0 || n > MSG_MAX)
        return NULL;
    char *s = xmalloc((size_t)n + 1);
    json_t *o = NULL;
    if (read_all(fd, s, n) == 0) {
        s[n] = 0;
        o = json_loads(s, 0, NULL);
    }
    free(s);
    return o;
}

static json_t *str_array(const char *const *v, int n)
{
    json_t *a = json_array();
    for (int i = 0; i < n; i++)
        json_array_append_new(a, json_string(v[i]));
    return a;
}

/* A request's fields (strings borrowed from o), freeing with req_free. */
static void req_from_json(json_t *o, CompileRequest *r)
{
    memset(r, 0, sizeof(*r));
    r->source = json_string_value(json_object_get(o, "source"));
    r->name = json_string_value(json_object_get(o, "name"));
    r->arch = json_string_value(json_object_get(o, "arch"));
    r->fast_math = json_is_true(json_object_get(o, "fast_math"));
    r->lineinfo = json_is_true(json_object_get(o, "lineinfo"));
    json_t *op = json_object_get(o, "options"), *ne = json_object_get(o, "name_exprs");
    r->noptions = (int)json_array_size(op);
    r->nname_exprs = (int)json_array_size(ne);
    const char **opts = xcalloc((size_t)r->noptions + 1, sizeof(char *));
    const char **names = xcalloc((size_t)r->nname_exprs + 1, sizeof(char *));
    for (int i = 0; i < r->noptions; i++)
        opts[i] = json_string_value(json_array_get(op, (size_t)i));
    for (int i = 0; i < r->nname_exprs; i++)
        names[i] = json_string_value(json_array_get(ne, (size_t)i));
    r->options = opts;
    r->name_exprs = names;
}

static void req_free(CompileRequest *r)
{
    free((void *)r->options);
    free((void *)r->name_exprs);
}

/* ---- the helper process ----------------------------------------------------- */

static int serve(int in, int out)
{
    for (;;) {
        json_t *o = recv_json(in);
        if (!o)
            return 0;   /* the compile thread is gone */
        CompileRequest req;
        CompileResult res;
        EvoErr err = {{0}};
        req_from_json(o, &req);
        nvrtc_set_cache_dir(json_string_value(json_object_get(o, "cache_dir")));
        double c0 = thread_cpu_ms();
        int rc = req.source && req.arch ? nvrtc_compile(&req, &res, &err) : err_set(&err, "a request without a source");
        json_t *r = json_pack("{s:i, s:b, s:f, s:f, s:s}", "rc", rc, "compiled", rc == 0 && !res.cache_hit, "cpu_ms",
                              thread_cpu_ms() - c0, "wall_ms", rc == 0 ? res.compile_ms : 0.0, "err", err.msg);
        if (req.source && req.arch)
            nvrtc_result_free(&res);
        req_free(&req);
        json_decref(o);
        int sent = send_json(out, r);
        json_decref(r);
        if (sent != 0)
            return 1;
    }
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
                  double *wall_ms)
{
    json_t *o = json_pack("{s:s, s:s?, s:s, s:o, s:b, s:b, s:o, s:s}", "source", req->source, "name", req->name,
                          "arch", req->arch, "options", str_array(req->options, req->noptions), "fast_math",
                          req->fast_math, "lineinfo", req->lineinfo, "name_exprs",
                          str_array(req->name_exprs, req->nname_exprs), "cache_dir", dir);
    int rc = o ? send_json(h->to, o) : -1;
    json_decref(o);
    json_t *r = rc == 0 ? recv_json(h->from) : NULL;
    rc = r && json_integer_value(json_object_get(r, "rc")) == 0 ? 0 : -1;
    if (r) {
        *compiled = json_is_true(json_object_get(r, "compiled"));
        *cpu_ms = json_number_value(json_object_get(r, "cpu_ms"));
        *wall_ms = json_number_value(json_object_get(r, "wall_ms"));
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
    int done = h && !h->broken && remote(h, req, dir, &compiled, &cpu_ms, &wall_ms) == 0;
    free(dir);
    int rc = nvrtc_compile(req, res, err);   /* a cache hit when the helper compiled it */
    if (done && rc == 0 && compiled && res->cache_hit) {
        res->cache_hit = 0;
        res->compile_ms = wall_ms;
        nvrtc_stats_account(1, cpu_ms, wall_ms);
    }
    return rc;
}

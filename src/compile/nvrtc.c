/*
 * nvrtc: compile CUDA C++ to a cubin with NVRTC, keep the whole log, parse
 * ptxas' resource report out of it, and cache results on disk keyed by a
 * hash of everything that determines the output. See nvrtc.h.
 *
 * Layout: options and cache key, the cache (load and store), the NVRTC
 * call itself, then the public entry points. The ptxas report is parsed by
 * compile/ptxas.c.
 *
 * Thread safety: NVRTC is safe for distinct programs, so nvrtc_compile()
 * runs concurrently. The cache directory name is guarded by a mutex and
 * copied per call; each cache file is written whole (util.h's file_write:
 * a fresh temporary file, then rename), the cubin before the json that
 * commits the entry, by any thread or process. Entries are not fsynced
 * (FILE_WRITE_NOSYNC): cache_load verifies each one (the json parses and
 * names its key and options, the cubin's length and sha256 match), so an
 * entry torn by a power loss is a miss, compiled and written again. Four
 * fsyncs a unit cost the compile lanes time off the CPU when 64 of them
 * write at once.
 */
#include "compile/nvrtc.h"

#include <ctype.h>
#include <jansson.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "compile/canon.h"
#include "compile/clog.h"
#include "compile/kfile.h"
#include "compile/pool.h"
#include "compile/predef.h"
#include "config.h"
#include "device.h"
#include "msg.h"
#include "task/confine.h"

/* The toolkit's header has the same name as ours (src/compile/nvrtc.h).
 * Reach the toolkit's through its include directory's parent, so that no
 * -I path can ever shadow it; the guard check below fails the build if
 * that resolves to something else. */
#include <../include/nvrtc.h>
#ifndef __NVRTC_H__
#error "the CUDA toolkit's nvrtc.h was not found (got another nvrtc.h)"
#endif

#define CACHE_FORMAT 2   /* 2: name expressions and their lowered names */
#define DEFAULT_NAME "kernel.cu"

static atomic_int      g_compiles;                 /* nvrtcCompileProgram calls */
static atomic_int      g_hits;                     /* compile cache hits */
static atomic_llong    g_cpu_us, g_wall_us;        /* in nvrtcCompileProgram, summed over threads */
static atomic_llong    g_remote_cpu_us;            /* of which in helper processes (nvrtc_stats_account) */
static pthread_mutex_t g_dir_lock = PTHREAD_MUTEX_INITIALIZER;
static char           *g_cache_dir;                /* guarded by g_dir_lock */

/* A list of owned option strings. */
typedef struct OptList {
    char **v;
    int    n;
} OptList;

static void opts_add(OptList *o, char *s)
{
    o->v = xrealloc(o->v, sizeof(char *) * (size_t)(o->n + 1));
    o->v[o->n++] = s;
}

static void opts_free(OptList *o)
{
    for (int i = 0; i < o->n; i++)
        free(o->v[i]);
    free(o->v);
    o->v = NULL;
    o->n = 0;
}

/* ---- version, counter, cache dir ---------------------------------------- */

int nvrtc_version(void)
{
    int major = 0, minor = 0;
    if (nvrtcVersion(&major, &minor) != NVRTC_SUCCESS)
        return -1;
    return major * 1000 + minor * 10;
}

int nvrtc_compile_count(void)
{
    return atomic_load(&g_compiles);
}

void nvrtc_stats(NvrtcStats *out)
{
    out->compiles = atomic_load(&g_compiles);
    out->cache_hits = atomic_load(&g_hits);
    out->cpu_s = (double)atomic_load(&g_cpu_us) / 1e6;
    out->wall_s = (double)atomic_load(&g_wall_us) / 1e6;
    out->remote_cpu_s = (double)atomic_load(&g_remote_cpu_us) / 1e6;
}

void nvrtc_stats_add(NvrtcStats *acc, const NvrtcStats *x, int sign)
{
    acc->compiles += sign * x->compiles;
    acc->cache_hits += sign * x->cache_hits;
    acc->cpu_s += sign * x->cpu_s;
    acc->wall_s += sign * x->wall_s;
    acc->remote_cpu_s += sign * x->remote_cpu_s;
}

void nvrtc_set_cache_dir(const char *dir)
{
    char *copy = dir && dir[0] ? xstrdup(dir) : NULL;
    pthread_mutex_lock(&g_dir_lock);
    char *old = g_cache_dir;
    g_cache_dir = copy;
    pthread_mutex_unlock(&g_dir_lock);
    free(old);
}

/* The cache directory as a fresh string, or NULL when caching is off. */
static char *cache_dir_get(void)
{
    pthread_mutex_lock(&g_dir_lock);
    char *dir = g_cache_dir ? xstrdup(g_cache_dir) : NULL;
    pthread_mutex_unlock(&g_dir_lock);
    return dir;
}

char *nvrtc_cache_dir(void)
{
    return cache_dir_get();
}

void nvrtc_stats_account(int compiles, double cpu_ms, double wall_ms)
{
    atomic_fetch_add(&g_compiles, compiles);
    atomic_fetch_sub(&g_hits, compiles);   /* the caller's load of each was counted a hit */
    atomic_fetch_add(&g_cpu_us, (long long)(cpu_ms * 1000));
    atomic_fetch_add(&g_remote_cpu_us, (long long)(cpu_ms * 1000));
    atomic_fetch_add(&g_wall_us, (long long)(wall_ms * 1000));
}

int nvrtc_cache_enabled(void)
{
    pthread_mutex_lock(&g_dir_lock);
    int on = g_cache_dir != NULL;
    pthread_mutex_unlock(&g_dir_lock);
    return on;
}

/* ---- options and cache key ---------------------------------------------- */

/* "sm_<NN>", optionally with the arch-specific ("a") or family ("f")
 * suffix: sm_90, sm_90a, sm_100f. */
static int arch_valid(const char *arch)
{
    if (!arch || strncmp(arch, "sm_", 3) != 0 || strlen(arch) > 32)
        return 0;
    const char *p = arch + 3;
    if (!isdigit((unsigned char)*p))
        return 0;
    while (isdigit((unsigned char)*p))
        p++;
    return *p == 0 || ((*p == 'a' || *p == 'f') && p[1] == 0);
}

static int has_std_option(const CompileRequest *req)
{
    for (int i = 0; i < req->noptions; i++) {
        const char *o = req->options[i];
        if (o && (strncmp(o, "-std", 4) == 0 || strncmp(o, "--std", 5) == 0))
            return 1;
    }
    return 0;
}

/* Build the option list for req into *o (see nvrtc_request_key). */
static int build_options(const CompileRequest *req, OptList *o, EvoErr *err)
{
    if (!req->source)
        return err_set(err, "nvrtc_compile: request has no source");
    if (!arch_valid(req->arch))
        return err_set(err, "nvrtc_compile: arch \"%s\": expected sm_<NN>[a|f], e.g. \"sm_90\" or \"sm_90a\"",
                       req->arch ? req->arch : "(null)");
    if (req->noptions < 0 || (req->noptions > 0 && !req->options))
        return err_set(err, "nvrtc_compile: noptions %d without options", req->noptions);
    for (int i = 0; i < req->noptions; i++) {   /* the spec's allow-list, again (confine.h) */
        EvoErr e;
        if (confine_check_option(req->options[i], &e) < 0)
            return err_set(err, "nvrtc_compile: option %d: %s", i, e.msg);
    }

    opts_add(o, xasprintf("--gpu-architecture=%s", req->arch));
    if (!has_std_option(req))
        opts_add(o, xstrdup("-std=c++17"));
    for (int i = 0; i < req->noptions; i++)
        opts_add(o, xstrdup(req->options[i]));
    if (req->fast_math)
        opts_add(o, xstrdup("--use_fast_math"));
    if (req->lineinfo)
        opts_add(o, xstrdup("-lineinfo"));
    opts_add(o, xasprintf("--include-path=%s", EVO_CUDA_INCLUDE));
    char *cccl = xasprintf("%s/cccl", EVO_CUDA_INCLUDE);
    if (access(cccl, R_OK) == 0)
        opts_add(o, xasprintf("--include-path=%s", cccl));
    free(cccl);
    opts_add(o, xstrdup("--ptxas-options=-v"));
    opts_add(o, xstrdup("-default-device"));
    opts_add(o, xstrdup("--pre-include=" KFILE_PRELUDE));
    if (req->nname_exprs < 0 || (req->nname_exprs > 0 && !req->name_exprs))
        return err_set(err, "nvrtc_compile: nname_exprs %d without name_exprs", req->nname_exprs);
    for (int i = 0; i < req->nname_exprs; i++)
        if (!req->name_exprs[i] || !req->name_exprs[i][0])
            return err_set(err, "nvrtc_compile: name expression %d is empty", i);
    return 0;
}

static char *opts_join(const OptList *o)
{
    StrBuf sb = {0};
    for (int i = 0; i < o->n; i++) {
        if (i)
            sb_putc(&sb, ' ');
        sb_append(&sb, o->v[i]);
    }
    return sb_take(&sb);
}

/* One length-prefixed field of the key material: "<tag><len>:<bytes>\n". */
static void key_field(StrBuf *sb, char tag, const char *s)
{
    sb_printf(sb, "%c%zu:", tag, strlen(s));
    sb_append(sb, s);
    sb_putc(sb, '\n');
}

/* NVRTC honours the driver's compute cache (~/.nv/ComputeCache): when it
 * serves a cubin from there, ptxas does not run and its -v report (our
 * registers, spills and shared memory) is missing from the log. evoeng has
 * its own cache, keyed more strictly, so the driver's is switched off for
 * this process, once, before the first compilation (and before any thread
 * of the pool exists: nvrtc_compile_many calls this first). */
static pthread_once_t g_env_once = PTHREAD_ONCE_INIT;

static void env_init(void)
{
    setenv("CUDA_CACHE_DISABLE", "1", 1);
}

/* device_src: kfile_device_source(req->source), what NVRTC compiles. */
static void compute_key(const CompileRequest *req, const OptList *o, const char *device_src, char key[65])
{
    StrBuf sb = {0};
    char ver[32];
    snprintf(ver, sizeof(ver), "%d", nvrtc_version());
    key_field(&sb, 'F', "evoeng-nvrtc-cache-1");
    key_field(&sb, 'V', ver);
    key_field(&sb, 'A', req->arch);
    key_field(&sb, 'N', req->name ? req->name : DEFAULT_NAME);
    for (int i = 0; i < o->n; i++)
        key_field(&sb, 'O', o->v[i]);
    key_field(&sb, 'K', KFILE_VERSION);
    for (int i = 0; i < req->nname_exprs; i++)
        key_field(&sb, 'E', req->name_exprs[i]);
    /* Keyed on the text the preprocessor leaves of what NVRTC compiles
     * (canon.h), so that a knob the preprocessor drops costs no compile;
     * on the source as it is when there is no such text, or with
     * EVOENG_CANON=0. */
    pthread_once(&g_env_once, env_init);   /* predef compiles probes; setenv before getenv */
    const char *env = getenv("EVOENG_CANON");
    char *text = NULL;
    if (!env || strcmp(env, "0") != 0) {
        PredefOptions po = {(const char *const *)o->v, o->n};
        text = canon_source(device_src, predef_lookup, &po);
    }
    if (text)
        key_field(&sb, 'C', text);
    else
        key_field(&sb, 'S', req->source);
    free(text);
    sha256_hex(sb.s, sb.len, key);
    sb_free(&sb);
}

int nvrtc_request_key(const CompileRequest *req, char **options, char key[65], EvoErr *err)
{
    OptList o = {0};
    *options = NULL;
    if (build_options(req, &o, err) < 0) {
        opts_free(&o);
        return -1;
    }
    *options = opts_join(&o);
    char *device_src = kfile_device_source(req->source, NULL);
    compute_key(req, &o, device_src, key);
    free(device_src);
    opts_free(&o);
    return 0;
}

const char *nvrtc_lowered_name(const CompileResult *res, const char *expr)
{
    if (!res || !expr || !res->lowered)
        return NULL;
    for (int i = 0; i < res->nnames; i++)
        if (res->name_exprs[i] && strcmp(res->name_exprs[i], expr) == 0)
            return res->lowered[i];
    return NULL;
}

const KernelResources *nvrtc_find_kernel(const CompileResult *res, const char *name)
{
    if (!res || !name)
        return NULL;
    int i = ptxas_find_kernel(res->kernels, res->nkernels, name);
    return i < 0 ? NULL : &res->kernels[i];
}

void nvrtc_max_resources(const CompileResult *res, KernelResources *out)
{
    memset(out, 0, sizeof(*out));
    out->cmem = -1;
    snprintf(out->name, sizeof(out->name), "*");
    for (int i = 0; res && i < res->nkernels; i++) {
        const KernelResources *k = &res->kernels[i];
#define EVO_MAXF(f) if (k->f > out->f) out->f = k->f
        EVO_MAXF(registers);
        EVO_MAXF(spill_stores);
        EVO_MAXF(spill_loads);
        EVO_MAXF(stack);
        EVO_MAXF(smem);
        EVO_MAXF(cmem);
#undef EVO_MAXF
    }
}

/* ---- a failure without an error line ------------------------------------- */

/* A failed compile (res->ok 0) whose log has no error line gets one at its
 * end: "evoeng: " and clog_silent_cause of its kernels; any other result is
 * left as it is. On fresh compiles and cache hits. */
static void explain_silent_failure(CompileResult *res)
{
    char *errs = res->ok ? NULL : clog_errors(res->log, 1);
    if (res->ok || errs) {
        free(errs);
        return;
    }
    char *cause = clog_silent_cause(res->kernels, res->nkernels);
    const char *log = res->log ? res->log : "";
    char *with = xasprintf("%s%sevoeng: %s\n", log, log[0] && log[strlen(log) - 1] != '\n' ? "\n" : "", cause);
    free(res->log);
    res->log = with;
    free(cause);
}

/* ---- cache -------------------------------------------------------------- */

/* A JSON string for text that may not be valid UTF-8 (logs quote source
 * lines): invalid input is stored with every byte >= 0x80 as '?'. */
static json_t *json_text(const char *s)
{
    json_t *j = json_string(s);
    if (j)
        return j;
    char *c = xstrdup(s);
    for (char *p = c; *p; p++)
        if ((unsigned char)*p >= 0x80)
            *p = '?';
    j = json_string(c);
    free(c);
    return j ? j : json_string("");
}

static const char *json_get_str(json_t *o, const char *k)
{
    return json_string_value(json_object_get(o, k));
}

/* Try the cache entry res->key in dir. Returns 1 and fills res (cubin,
 * log, ok, error, kernels) on a valid entry; 0 on a miss of any kind. */
static int cache_load(const char *dir, CompileResult *res)
{
    char *jpath = xasprintf("%s/%s.json", dir, res->key);
    char *cpath = xasprintf("%s/%s.cubin", dir, res->key);
    char *text = NULL, *cubin = NULL;
    size_t tlen = 0, clen = 0;
    json_t *root = NULL;
    int hit = 0;

    if (file_read(jpath, &text, &tlen, NULL) < 0) {
        hit = -1;                               /* no entry: a plain miss */
        goto done;
    }
    root = json_loadb(text, tlen, 0, NULL);
    if (!json_is_object(root))
        goto done;
    json_t *okj = json_object_get(root, "ok");
    const char *key = json_get_str(root, "key");
    const char *opts = json_get_str(root, "options");
    const char *log = json_get_str(root, "log");
    const char *error = json_get_str(root, "error");
    if (json_integer_value(json_object_get(root, "format")) != CACHE_FORMAT || !json_is_boolean(okj) ||
        !key || strcmp(key, res->key) != 0 || !opts || strcmp(opts, res->options) != 0 ||
        !log || !error)
        goto done;
    int ok = json_is_true(okj);
    json_t *names = json_object_get(root, "lowered");
    if (ok && (!json_is_array(names) || (int)json_array_size(names) != res->nnames))
        goto done;
    for (int i = 0; ok && i < res->nnames; i++)
        if (!json_is_string(json_array_get(names, (size_t)i)))
            goto done;
    if (ok) {
        json_t *lenj = json_object_get(root, "cubin_len");
        const char *sha = json_get_str(root, "cubin_sha256");
        char hex[65];
        if (!json_is_integer(lenj) || !sha || file_read(cpath, &cubin, &clen, NULL) < 0)
            goto done;
        sha256_hex(cubin, clen, hex);
        if ((json_int_t)clen != json_integer_value(lenj) || clen < 4 || strcmp(hex, sha) != 0)
            goto done;
    }
    free(res->log);
    res->log = xstrdup(log);
    res->ok = ok;
    snprintf(res->error, sizeof(res->error), "%s", error);
    if (ok) {
        res->cubin = (unsigned char *)cubin;
        res->cubin_len = clen;
        cubin = NULL;
        res->lowered = xcalloc((size_t)res->nnames + 1, sizeof(char *));
        for (int i = 0; i < res->nnames; i++)
            res->lowered[i] = xstrdup(json_string_value(json_array_get(names, (size_t)i)));
    }
    /* Resources come from the log, so a parser fix applies to old entries. */
    res->nkernels = ptxas_parse_resources(res->log, &res->kernels);
    explain_silent_failure(res);
    hit = 1;

done:
    if (hit == 0)
        notef("nvrtc cache: %s: ignoring an unusable entry", res->key);
    json_decref(root);
    free(text);
    free(cubin);
    free(jpath);
    free(cpath);
    return hit == 1;
}

static json_t *kernels_json(const CompileResult *res)
{
    json_t *arr = json_array();
    for (int i = 0; i < res->nkernels; i++) {
        const KernelResources *k = &res->kernels[i];
        json_array_append_new(arr, json_pack("{s:s, s:i, s:i, s:i, s:i, s:i, s:i}",
            "name", k->name, "registers", k->registers, "spill_stores", k->spill_stores,
            "spill_loads", k->spill_loads, "stack", k->stack, "smem", k->smem, "cmem", k->cmem));
    }
    return arr;
}

/* Write res as cache entry res->key in dir: cubin first, json (the commit
 * record) last. Returns 0 or -1 (err). */
static int cache_store(const char *dir, const CompileRequest *req, const CompileResult *res, EvoErr *err)
{
    char *jpath = xasprintf("%s/%s.json", dir, res->key);
    char *cpath = xasprintf("%s/%s.cubin", dir, res->key);
    char *created = time_iso8601();
    char *text = NULL;
    char sha[65] = "";
    int rc = -1;

    if (res->ok)
        sha256_hex(res->cubin, res->cubin_len, sha);
    json_t *root = json_object();
    json_object_set_new(root, "format", json_integer(CACHE_FORMAT));
    json_object_set_new(root, "key", json_string(res->key));
    json_object_set_new(root, "nvrtc_version", json_integer(nvrtc_version()));
    json_object_set_new(root, "arch", json_text(req->arch));
    json_object_set_new(root, "name", json_text(req->name ? req->name : DEFAULT_NAME));
    json_object_set_new(root, "options", json_text(res->options));
    json_object_set_new(root, "ok", json_boolean(res->ok));
    json_object_set_new(root, "error", json_text(res->error));
    json_object_set_new(root, "cubin_len", json_integer((json_int_t)res->cubin_len));
    json_object_set_new(root, "cubin_sha256", json_string(sha));
    json_object_set_new(root, "compile_ms", json_real(res->compile_ms));
    json_object_set_new(root, "created", json_string(created));
    json_object_set_new(root, "kernels", kernels_json(res));
    json_t *names = json_array();
    for (int i = 0; res->lowered && i < res->nnames; i++)
        json_array_append_new(names, json_text(res->lowered[i] ? res->lowered[i] : ""));
    json_object_set_new(root, "lowered", names);
    json_object_set_new(root, "log", json_text(res->log));
    text = json_dumps(root, JSON_INDENT(1) | JSON_SORT_KEYS);
    if (!text) {
        err_set(err, "json_dumps: cannot serialize cache entry %s", res->key);
        goto done;
    }

    if (file_mkdirs(dir, err) == 0 &&
        (!res->ok || file_write_flags(cpath, res->cubin, res->cubin_len, FILE_WRITE_NOSYNC, err) == 0) &&
        file_write_flags(jpath, text, strlen(text), FILE_WRITE_NOSYNC, err) == 0)
        rc = 0;

done:
    json_decref(root);
    free(text);
    free(created);
    free(jpath);
    free(cpath);
    return rc;
}

/* ---- NVRTC -------------------------------------------------------------- */

/* Failures that depend only on the input, so caching them is sound. */
static int deterministic_failure(nvrtcResult r)
{
    return r == NVRTC_ERROR_COMPILATION || r == NVRTC_ERROR_INVALID_OPTION;
}

/* Run NVRTC for req with options o into res. Returns 0 when the outcome
 * is final (success or a deterministic compile failure, see res->ok), -1
 * otherwise (err; res->error says the same). */
static int run_nvrtc(const CompileRequest *req, const OptList *o, const char *device_src, CompileResult *res,
                     EvoErr *err)
{
    pthread_once(&g_env_once, env_init);
    nvrtcProgram prog = NULL;
    const char *const *hnames, *const *htexts;
    int nh = kfile_headers(&hnames, &htexts);
    const char *call = "nvrtcCreateProgram";
    /* a directory that cannot exist: no relative #include reaches a file (confine.h) */
    char *pname = confine_program_name(req->name ? req->name : DEFAULT_NAME);
    nvrtcResult r = nvrtcCreateProgram(&prog, device_src, pname, nh, (const char **)htexts, (const char **)hnames);
    free(pname);
    if (r != NVRTC_SUCCESS)
        goto fail;
    call = "nvrtcAddNameExpression";
    for (int i = 0; i < req->nname_exprs; i++)
        if ((r = nvrtcAddNameExpression(prog, req->name_exprs[i])) != NVRTC_SUCCESS)
            goto fail;

    atomic_fetch_add(&g_compiles, 1);
    double t0 = time_now_ms(), c0 = thread_cpu_ms();
    call = "nvrtcCompileProgram";
    r = nvrtcCompileProgram(prog, o->n, (const char *const *)o->v);
    res->compile_ms = time_now_ms() - t0;
    atomic_fetch_add(&g_cpu_us, (long long)((thread_cpu_ms() - c0) * 1000));
    atomic_fetch_add(&g_wall_us, (long long)(res->compile_ms * 1000));

    /* The log first, whatever the result: it is the feedback. */
    size_t loglen = 0;
    if (nvrtcGetProgramLogSize(prog, &loglen) == NVRTC_SUCCESS && loglen > 0) {
        char *log = xcalloc(1, loglen + 1);
        if (nvrtcGetProgramLog(prog, log) == NVRTC_SUCCESS) {
            free(res->log);
            /* the plain name; no other file's text kept or sent on (confine.h) */
            res->log = confine_filter_log(log, req->name ? req->name : DEFAULT_NAME);
        }
        free(log);
    }
    if (r != NVRTC_SUCCESS)
        goto fail;

    size_t n = 0;
    call = "nvrtcGetCUBINSize";
    if ((r = nvrtcGetCUBINSize(prog, &n)) != NVRTC_SUCCESS)
        goto fail;
    if (n == 0) {
        snprintf(res->error, sizeof(res->error), "nvrtcGetCUBINSize: empty cubin (arch %s)", req->arch);
        err_set(err, "%s", res->error);
        nvrtcDestroyProgram(&prog);
        return -1;
    }
    res->cubin = xmalloc(n);
    call = "nvrtcGetCUBIN";
    if ((r = nvrtcGetCUBIN(prog, (char *)res->cubin)) != NVRTC_SUCCESS) {
        free(res->cubin);
        res->cubin = NULL;
        goto fail;
    }
    res->cubin_len = n;
    res->lowered = xcalloc((size_t)res->nnames + 1, sizeof(char *));
    for (int i = 0; i < res->nnames; i++) {
        const char *low = NULL;
        call = "nvrtcGetLoweredName";
        if ((r = nvrtcGetLoweredName(prog, req->name_exprs[i], &low)) != NVRTC_SUCCESS || !low)
            goto fail;
        res->lowered[i] = xstrdup(low);
    }
    res->ok = 1;
    res->error[0] = '\0';
    res->nkernels = ptxas_parse_resources(res->log, &res->kernels);
    nvrtcDestroyProgram(&prog);
    return 0;

fail:
    snprintf(res->error, sizeof(res->error), "%s: %s", call, nvrtcGetErrorString(r));
    if (res->cubin) {
        free(res->cubin);
        res->cubin = NULL;
        res->cubin_len = 0;
    }
    if (prog)
        nvrtcDestroyProgram(&prog);
    if (r == NVRTC_ERROR_COMPILATION) {
        char *hint = kfile_hint(res->log);
        if (hint) {
            size_t l = strlen(res->error);
            snprintf(res->error + l, sizeof(res->error) - l, "; %s", hint);
            char *log = xasprintf("%s%sevoeng: %s\n", res->log, res->log[0] ? "\n" : "", hint);
            free(res->log);
            res->log = log;
            free(hint);
        }
    }
    res->nkernels = ptxas_parse_resources(res->log, &res->kernels);
    explain_silent_failure(res);
    if (strcmp(call, "nvrtcCompileProgram") == 0 && deterministic_failure(r))
        return 0;
    return err_set(err, "%s (%s)", res->error, req->name ? req->name : DEFAULT_NAME);
}

/* ---- public entry points ------------------------------------------------ */

int nvrtc_compile(const CompileRequest *req, CompileResult *res, EvoErr *err)
{
    OptList o = {0};
    char *dir = NULL, *device_src = NULL;   /* what NVRTC compiles: made once, when needed */
    EvoErr local;
    int rc = -1;

    if (!err)
        err = &local;
    memset(res, 0, sizeof(*res));
    res->log = xstrdup("");
    if (build_options(req, &o, err) < 0) {
        snprintf(res->error, sizeof(res->error), "%.*s", (int)sizeof(res->error) - 1, err->msg);
        res->options = xstrdup("");
        goto done;
    }
    res->options = opts_join(&o);
    if (req->key && strlen(req->key) == 64 && strspn(req->key, "0123456789abcdef") == 64) {
        memcpy(res->key, req->key, 65);   /* a helper's, for this request: canon need not run again */
    } else {
        device_src = kfile_device_source(req->source, NULL);
        compute_key(req, &o, device_src, res->key);
    }
    res->nnames = req->nname_exprs;
    res->name_exprs = xcalloc((size_t)res->nnames + 1, sizeof(char *));
    for (int i = 0; i < res->nnames; i++)
        res->name_exprs[i] = xstrdup(req->name_exprs[i]);

    /* #include lines checked before NVRTC or the cache (confine.h): a refusal is a compile error, not cached */
    if (confine_scan_includes(req->source, req->name ? req->name : DEFAULT_NAME, err) < 0) {
        snprintf(res->error, sizeof(res->error), "%.*s", (int)sizeof(res->error) - 1, err->msg);
        free(res->log);
        res->log = xasprintf("evoeng: %s\n", err->msg);
        rc = 0;
        goto done;
    }
    dir = cache_dir_get();
    if (dir && cache_load(dir, res)) {
        res->cache_hit = 1;
        atomic_fetch_add(&g_hits, 1);
        rc = 0;
        goto done;
    }
    if (!device_src)
        device_src = kfile_device_source(req->source, NULL);
    if (run_nvrtc(req, &o, device_src, res, err) < 0)
        goto done;
    rc = 0;
    if (dir) {
        EvoErr werr;
        if (cache_store(dir, req, res, &werr) < 0)
            warnf("nvrtc cache: %s", werr.msg);
    }

done:
    free(dir);
    free(device_src);
    opts_free(&o);
    return rc;
}

typedef struct ManyJob {
    const CompileRequest *req;
    CompileResult        *res;
    EvoErr                err;
    int                   rc;
} ManyJob;

static void many_run(void *p)
{
    ManyJob *job = p;
    job->err.msg[0] = '\0';
    job->rc = nvrtc_compile(job->req, job->res, &job->err);
}

int nvrtc_compile_many(const CompileRequest *reqs, CompileResult *res, int n, int threads, EvoErr *err)
{
    pthread_once(&g_env_once, env_init);
    if (n <= 0)
        return 0;
    ManyJob *jobs = xcalloc((size_t)n, sizeof(*jobs));
    Pool *pool = NULL;
    int rc = -1;

    for (int i = 0; i < n; i++) {
        jobs[i].req = &reqs[i];
        jobs[i].res = &res[i];
    }
    if (threads <= 0) {
        threads = device_cores();
    }
    if (threads > n)
        threads = n;
    if (threads == 1) {
        for (int i = 0; i < n; i++)
            many_run(&jobs[i]);
    } else {
        if (pool_open(&pool, threads, err) < 0) {
            err_prefix(err, "nvrtc_compile_many");
            for (int i = 0; i < n; i++) {     /* leave every result freeable */
                memset(&res[i], 0, sizeof(res[i]));
                res[i].log = xstrdup("");
                res[i].options = xstrdup("");
            }
            goto done;
        }
        for (int i = 0; i < n; i++)
            if (pool_submit(pool, many_run, &jobs[i]) < 0)
                many_run(&jobs[i]);          /* cannot happen on an open pool */
        pool_wait(pool);
        pool_close(&pool);
    }
    rc = 0;
    for (int i = 0; i < n; i++) {
        if (jobs[i].rc < 0) {
            err_set(err, "nvrtc_compile_many: request %d (%s): %s", i,
                    reqs[i].name ? reqs[i].name : DEFAULT_NAME, jobs[i].err.msg);
            rc = -1;
            break;
        }
    }

done:
    free(jobs);
    return rc;
}

void nvrtc_result_free(CompileResult *res)
{
    if (!res)
        return;
    free(res->cubin);
    free(res->log);
    free(res->options);
    free(res->kernels);
    for (int i = 0; i < res->nnames; i++) {
        free(res->name_exprs ? res->name_exprs[i] : NULL);
        free(res->lowered ? res->lowered[i] : NULL);
    }
    free(res->name_exprs);
    free(res->lowered);
    memset(res, 0, sizeof(*res));
}

/*
 * llm: the concurrent HTTP client (libcurl multi) over the providers of
 * src/llm/provider.c, with retries and backoff (see llm.h). The --llm-cmd
 * runner is cmd.c; a job's end, its record filled and queued, is job.c.
 *
 * A request is a Job that moves QUEUED -> RUNNING (an HTTP attempt or a
 * command in progress) -> WAITING (a retry is due at wake_ms) -> RUNNING
 * ... -> finished (its LlmResult goes to the ready queue). RUNNING and
 * WAITING jobs hold one of the `concurrency` slots. llm_poll() is the only
 * place that does work: it starts queued jobs, fires due retries, drives
 * curl, services command pipes, and sleeps in curl_multi_poll() with the
 * command pipes as extra descriptors.
 */
#include <arpa/inet.h>
#include <ctype.h>
#include <curl/curl.h>
#include <netinet/in.h>
#include <strings.h>
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include "llm/cmd.h"
#include "llm/job.h"
#include "llm/llm.h"
#include "llm/llm_provider.h"
#include "msg.h"

/* ---- the client ------------------------------------------------------- */

static double rand01(Llm *l)
{
    l->rng ^= l->rng << 13;
    l->rng ^= l->rng >> 7;
    l->rng ^= l->rng << 17;
    return (double)(l->rng >> 11) / 9007199254740992.0;
}

void llm_config_defaults(LlmConfig *c)
{
    memset(c, 0, sizeof *c);
    c->concurrency = 4;
    c->max_retries = 4;
    c->connect_timeout_s = 10;
    c->timeout_s = 300;
    c->backoff_base_s = 1;
    c->backoff_max_s = 60;
    c->retry_after_cap_s = 120;
    c->max_reply_bytes = (size_t)4 << 20;
    c->rationale_max = 2000;
    c->max_tokens = 8192;
    c->temperature = -1;
}

static char *dup_or_null(const char *s)
{
    return s ? xstrdup(s) : NULL;
}

/* The scheme and host of url as libcurl reads them (fresh strings, lower
 * case scheme; host "" when the URL has none), or -1 when it cannot parse
 * it. */
static int url_parts(const char *url, char **scheme, char **host)
{
    *scheme = *host = NULL;
    CURLU *h = curl_url();
    char *sc = NULL, *ho = NULL;
    int rc = -1;
    if (h && curl_url_set(h, CURLUPART_URL, url, 0) == CURLUE_OK &&
        curl_url_get(h, CURLUPART_SCHEME, &sc, 0) == CURLUE_OK) {
        curl_url_get(h, CURLUPART_HOST, &ho, 0);
        *scheme = xstrdup(sc);
        *host = xstrdup(ho ? ho : "");
        for (char *p = *scheme; *p; p++)
            *p = (char)tolower((unsigned char)*p);
        rc = 0;
    }
    curl_free(sc);
    curl_free(ho);
    curl_url_cleanup(h);
    return rc;
}

int llm_url_is_loopback(const char *url)
{
    char *scheme, *host;
    if (!url || url_parts(url, &scheme, &host) < 0)
        return 0;
    struct in_addr a4;
    struct in6_addr a6;
    size_t n = strlen(host);
    int local = strcasecmp(host, "localhost") == 0 || strcasecmp(host, "localhost.") == 0 ||
                (inet_pton(AF_INET, host, &a4) == 1 && (ntohl(a4.s_addr) >> 24) == 127);
    if (!local && n > 2 && host[0] == '[' && host[n - 1] == ']') {
        host[n - 1] = '\0';
        local = inet_pton(AF_INET6, host + 1, &a6) == 1 && IN6_IS_ADDR_LOOPBACK(&a6);
    }
    free(scheme);
    free(host);
    return local;
}

/* Only http and https; http only to loopback unless insecure. */
static int url_allowed(const char *url, int insecure, EvoErr *err)
{
    char *scheme, *host;
    if (url_parts(url, &scheme, &host) < 0)
        return err_set(err, "--llm-url '%s': not a URL libcurl can read", url);
    int rc = 0;
    if (strcmp(scheme, "https") != 0 && strcmp(scheme, "http") != 0)
        rc = err_set(err, "--llm-url '%s': only http:// and https:// are spoken (not %s://)", url, scheme);
    else if (strcmp(scheme, "http") == 0 && !insecure && !llm_url_is_loopback(url))
        rc = err_set(err, "--llm-url '%s': http:// would send the API key and the prompts in clear to %s; use "
                     "https://, a loopback address (127.0.0.1, [::1], localhost), or --llm-insecure", url, host);
    free(scheme);
    free(host);
    return rc;
}

int llm_open(Llm **out, const LlmConfig *cfg, EvoErr *err)
{
    static int curl_ready;
    Llm *l = xcalloc(1, sizeof *l);
    l->cfg = *cfg;
    l->cfg.provider = dup_or_null(cfg->provider);
    l->cfg.url = dup_or_null(cfg->url);
    l->cfg.model = dup_or_null(cfg->model);
    l->cfg.cmd = dup_or_null(cfg->cmd);
    if (l->cfg.concurrency < 1)
        l->cfg.concurrency = 1;
    if (l->cfg.max_retries < 0)
        l->cfg.max_retries = 0;
    l->rng = (uint64_t)(time_now_ms() * 1000.0) ^ ((uint64_t)getpid() << 32) ^ 0x9E3779B97F4A7C15ull;
    if (!l->rng)
        l->rng = 1;

    if (!cfg->cmd) {
        const char *name = cfg->provider ? cfg->provider : "openai";
        l->prov = llm_provider_find(name);
        if (!l->prov) {
            err_set(err, "--llm: unknown provider '%s' (known: openai, anthropic)", name);
            goto fail;
        }
        if (!cfg->model || !*cfg->model) {
            err_set(err, "--llm-model: no model given for provider '%s'", name);
            goto fail;
        }
        l->url = l->prov->endpoint(cfg->url ? cfg->url : l->prov->default_url);
        if (url_allowed(l->url, cfg->insecure, err) < 0)
            goto fail;
        const char *key = getenv("EVOENG_API_KEY");
        if (!key || !*key)
            key = getenv(l->prov->key_env);
        l->key = (key && *key) ? xstrdup(key) : NULL;
        l->headers = l->prov->headers(NULL, l->key);
        if (!curl_ready) {
            if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) {
                err_set(err, "curl_global_init failed");
                goto fail;
            }
            curl_ready = 1;
        }
        l->multi = curl_multi_init();
        if (!l->multi) {
            err_set(err, "curl_multi_init failed");
            goto fail;
        }
    } else {
        l->url = xstrdup(cfg->cmd);
    }
    *out = l;
    return 0;
fail:
    llm_close(&l);
    return -1;
}

static void job_free(Job *j)
{
    for (int i = 0; i < j->nentries; i++)
        free(j->entries[i]);
    free(j->entries);
    free(j->body);
    sb_free(&j->resp);
    sb_free(&j->errtext);
    free(j->input);
    if (j->res)
        llm_result_free(&j->res);
    free(j);
}

void llm_close(Llm **pl)
{
    Llm *l = pl ? *pl : NULL;
    if (!l)
        return;
    Job *j = l->jobs;
    while (j) {
        Job *next = j->next;
        if (j->easy) {
            curl_multi_remove_handle(l->multi, j->easy);
            curl_easy_cleanup(j->easy);
        }
        llm_job_kill_cmd(j);
        job_free(j);
        j = next;
    }
    for (int i = 0; i < l->nready; i++)
        llm_result_free(&l->ready[i]);
    free(l->ready);
    if (l->multi)
        curl_multi_cleanup(l->multi);
    for (struct curl_slist *h = l->headers; h; h = h->next)
        memset(h->data, 0, strlen(h->data));
    curl_slist_free_all(l->headers);
    if (l->key) {
        memset(l->key, 0, strlen(l->key));
        free(l->key);
    }
    free(l->url);
    free((char *)l->cfg.provider);
    free((char *)l->cfg.url);
    free((char *)l->cfg.model);
    free((char *)l->cfg.cmd);
    free(l);
    *pl = NULL;
}

int llm_submit(Llm *l, const LlmRequest *req, void *user, EvoErr *err)
{
    if (!req || !req->prompt)
        return err_set(err, "llm_submit: no prompt");
    Job *j = xcalloc(1, sizeof *j);
    LlmResult *r = xcalloc(1, sizeof *r);
    j->in_fd = j->out_fd = j->err_fd = -1;
    j->retry_after_s = -1;
    j->id = ++l->next_id;
    j->res = r;
    r->user = user;
    r->mode = xstrdup(req->mode ? req->mode : "");
    r->provider = xstrdup(l->prov ? l->prov->name : "cmd");
    r->model = xstrdup(l->cfg.model ? l->cfg.model : "");
    r->url = llm_redact(l, l->url);
    r->system = xstrdup(req->system ? req->system : "");
    r->prompt = xstrdup(req->prompt);
    r->input_tokens = r->output_tokens = -1;
    if (req->nentries > 0) {
        j->entries = xcalloc((size_t)req->nentries, sizeof *j->entries);
        for (int i = 0; i < req->nentries; i++)
            j->entries[i] = xstrdup(req->entries[i]);
        j->nentries = req->nentries;
    }
    Job **tail = &l->jobs;
    while (*tail)
        tail = &(*tail)->next;
    *tail = j;
    return 0;
}

/* ---- HTTP attempts ---------------------------------------------------- */

static size_t on_body(char *data, size_t size, size_t n, void *userp)
{
    Job *j = userp;
    size_t len = size * n;
    if (j->resp.len + len > j->cap) {
        j->too_large = 1;
        return 0;  /* aborts the transfer: CURLE_WRITE_ERROR */
    }
    sb_appendn(&j->resp, data, len);
    return len;
}

static size_t on_header(char *data, size_t size, size_t n, void *userp)
{
    Job *j = userp;
    size_t len = size * n;
    static const char name[] = "retry-after:";
    if (len > sizeof name - 1 && strncasecmp(data, name, sizeof name - 1) == 0) {
        char buf[64];
        size_t vl = len - (sizeof name - 1);
        if (vl >= sizeof buf)
            vl = sizeof buf - 1;
        memcpy(buf, data + sizeof name - 1, vl);
        buf[vl] = 0;
        char *end;
        double v = strtod(buf, &end);
        while (*end == ' ' || *end == '\r' || *end == '\n' || *end == '\t')
            end++;
        if (end != buf && *end == 0 && v >= 0)
            j->retry_after_s = v;  /* the HTTP-date form is ignored: backoff applies */
    }
    return len;
}

static void attempt_start(Llm *l, Job *j)
{
    CURL *e = curl_easy_init();
    if (!e) {
        llm_finish(l, j, LLM_HTTP_ERROR, "curl_easy_init failed");
        return;
    }
    sb_clear(&j->resp);
    j->too_large = 0;
    j->retry_after_s = -1;
    j->errbuf[0] = 0;
    j->cap = l->cfg.max_reply_bytes;
    curl_easy_setopt(e, CURLOPT_URL, l->url);
    curl_easy_setopt(e, CURLOPT_PROTOCOLS_STR, "http,https");
    curl_easy_setopt(e, CURLOPT_HTTPHEADER, l->headers);
    curl_easy_setopt(e, CURLOPT_POSTFIELDS, j->body);
    curl_easy_setopt(e, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)strlen(j->body));
    curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, on_body);
    curl_easy_setopt(e, CURLOPT_WRITEDATA, j);
    curl_easy_setopt(e, CURLOPT_HEADERFUNCTION, on_header);
    curl_easy_setopt(e, CURLOPT_HEADERDATA, j);
    curl_easy_setopt(e, CURLOPT_ERRORBUFFER, j->errbuf);
    curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(e, CURLOPT_CONNECTTIMEOUT_MS, (long)(l->cfg.connect_timeout_s * 1000));
    curl_easy_setopt(e, CURLOPT_TIMEOUT_MS, (long)(l->cfg.timeout_s * 1000));
    curl_easy_setopt(e, CURLOPT_MAXFILESIZE_LARGE, (curl_off_t)l->cfg.max_reply_bytes);
    curl_easy_setopt(e, CURLOPT_USERAGENT, "evoeng/" "0.1");
    curl_easy_setopt(e, CURLOPT_PRIVATE, j);
    curl_easy_setopt(e, CURLOPT_ACCEPT_ENCODING, "");
    if (curl_multi_add_handle(l->multi, e) != CURLM_OK) {
        curl_easy_cleanup(e);
        llm_finish(l, j, LLM_HTTP_ERROR, "curl_multi_add_handle failed");
        return;
    }
    j->easy = e;
    j->res->attempts++;
    j->state = JOB_RUNNING;
}

/* A short, key-free description of an error reply body. */
static char *error_detail(const char *body)
{
    json_error_t je;
    json_t *root = json_loads(body, 0, &je);
    json_t *msg = NULL;
    if (root) {
        json_t *e = json_object_get(root, "error");
        msg = json_is_object(e) ? json_object_get(e, "message") : e;
    }
    char *r = json_is_string(msg) ? xasprintf("%.300s", json_string_value(msg))
                                  : xasprintf("%.200s", body);
    json_decref(root);
    for (char *p = r; *p; p++)
        if (*p == '\n' || *p == '\r')
            *p = ' ';
    return r;
}

/* Schedule a retry or give up with `st` and `why`. */
static void retry_or_give_up(Llm *l, Job *j, LlmStatus st, const char *why)
{
    int attempts = j->res->attempts;
    if (attempts > l->cfg.max_retries) {
        llm_finish(l, j, st, "%s (gave up after %d attempt%s)", why, attempts, attempts == 1 ? "" : "s");
        return;
    }
    double delay;
    if (j->retry_after_s >= 0) {
        delay = j->retry_after_s < l->cfg.retry_after_cap_s ? j->retry_after_s : l->cfg.retry_after_cap_s;
        delay += 0.05 * rand01(l);
    } else {
        double b = l->cfg.backoff_base_s;
        for (int i = 1; i < attempts && b < l->cfg.backoff_max_s; i++)
            b *= 2;
        if (b > l->cfg.backoff_max_s)
            b = l->cfg.backoff_max_s;
        delay = b * (0.5 + 0.5 * rand01(l));
    }
    char *safe = llm_redact(l, why);
    notef("llm: request %d: %s; retrying in %.2f s (attempt %d of %d)", j->id, safe, delay,
          attempts + 1, l->cfg.max_retries + 1);
    free(safe);
    j->state = JOB_WAITING;
    j->wake_ms = time_now_ms() + delay * 1000.0;
}

static void attempt_done(Llm *l, Job *j, CURLcode code)
{
    long http = 0;
    LlmResult *r = j->res;
    curl_easy_getinfo(j->easy, CURLINFO_RESPONSE_CODE, &http);
    curl_multi_remove_handle(l->multi, j->easy);
    curl_easy_cleanup(j->easy);
    j->easy = NULL;
    r->http_status = http;
    free(r->reply);
    r->reply = llm_redact(l, j->resp.s ? j->resp.s : "");

    if (j->too_large || code == CURLE_FILESIZE_EXCEEDED) {
        llm_finish(l, j, LLM_TOO_LARGE, "%s: the reply is larger than %zu bytes", l->url, l->cfg.max_reply_bytes);
        return;
    }
    if (code == CURLE_OPERATION_TIMEDOUT) {
        char *why = xasprintf("%s: timed out (%s)", l->url, j->errbuf[0] ? j->errbuf : curl_easy_strerror(code));
        retry_or_give_up(l, j, LLM_TIMEOUT, why);
        free(why);
        return;
    }
    if (code != CURLE_OK) {
        char *why = xasprintf("%s: %s", l->url, j->errbuf[0] ? j->errbuf : curl_easy_strerror(code));
        retry_or_give_up(l, j, LLM_HTTP_ERROR, why);
        free(why);
        return;
    }
    if (http < 200 || http > 299) {
        char *detail = error_detail(r->reply);
        char *why = xasprintf("%s: HTTP %ld: %s", l->url, http, detail);
        free(detail);
        if (http == 408 || http == 429 || http >= 500)
            retry_or_give_up(l, j, LLM_HTTP_ERROR, why);
        else
            llm_finish(l, j, LLM_HTTP_ERROR, "%s", why);
        free(why);
        return;
    }
    json_error_t je;
    json_t *root = json_loadb(r->reply, strlen(r->reply), 0, &je);
    if (!root) {
        llm_finish(l, j, LLM_BAD_JSON, "%s: bad JSON in the reply at line %d, column %d (byte %d): %s",
               l->url, je.line, je.column, je.position, je.text);
        return;
    }
    Parsed p = {NULL, NULL, -1, -1};
    EvoErr e = {{0}};
    if (l->prov->parse(root, &p, &e) < 0) {
        json_decref(root);
        llm_finish(l, j, LLM_BAD_JSON, "%s: %s", l->url, e.msg);
        return;
    }
    json_decref(root);
    r->input_tokens = p.input_tokens;
    r->output_tokens = p.output_tokens;
    free(r->stop_reason);
    r->stop_reason = p.stop_reason ? p.stop_reason : xstrdup("");
    llm_finish_text(l, j, p.text);
    free(p.text);
}

/* ---- the driver ------------------------------------------------------- */

static void job_begin(Llm *l, Job *j)
{
    if (l->cfg.max_requests > 0 && l->used >= l->cfg.max_requests) {
        llm_finish(l, j, LLM_BUDGET_EXHAUSTED, "the request budget (--llm-max-requests %d) is spent", l->cfg.max_requests);
        return;
    }
    l->used++;
    l->slots_used++;
    j->start_ms = time_now_ms();
    j->state = JOB_RUNNING;
    if (l->cfg.cmd) {
        llm_cmd_start(l, j);
        return;
    }
    j->body = l->prov->build_body(&l->cfg, j->res->system, j->res->prompt);
    attempt_start(l, j);
}

/* One pass of work; returns -1 on a curl multi failure. */
static int step(Llm *l, EvoErr *err)
{
    double now = time_now_ms();
    for (Job *j = l->jobs; j; j = j->next) {
        if (j->state == JOB_QUEUED && l->slots_used < l->cfg.concurrency)
            job_begin(l, j);
        else if (j->state == JOB_WAITING && now >= j->wake_ms)
            attempt_start(l, j);
    }
    if (l->multi) {
        int running = 0;
        CURLMcode mc = curl_multi_perform(l->multi, &running);
        if (mc != CURLM_OK)
            return err_set(err, "curl_multi_perform: %s", curl_multi_strerror(mc));
        CURLMsg *m;
        int left;
        while ((m = curl_multi_info_read(l->multi, &left))) {
            if (m->msg != CURLMSG_DONE)
                continue;
            Job *j = NULL;
            CURLcode code = m->data.result;
            curl_easy_getinfo(m->easy_handle, CURLINFO_PRIVATE, (char **)&j);
            attempt_done(l, j, code);
        }
    }
    now = time_now_ms();
    for (Job *j = l->jobs; j; j = j->next)
        if (j->state == JOB_RUNNING && j->pid > 0)
            llm_cmd_service(l, j, now);
    /* Drop finished jobs. */
    Job **pp = &l->jobs;
    while (*pp) {
        if ((*pp)->state == JOB_DONE) {
            Job *d = *pp;
            *pp = d->next;
            job_free(d);
        } else {
            pp = &(*pp)->next;
        }
    }
    return 0;
}

int llm_poll(Llm *l, int timeout_ms, LlmResult **done, int max, EvoErr *err)
{
    double t0 = time_now_ms();
    for (;;) {
        if (step(l, err) < 0)
            return -1;
        /* New slots may have opened: start queued jobs at once. */
        int queued = 0;
        for (Job *j = l->jobs; j; j = j->next)
            queued += j->state == JOB_QUEUED && l->slots_used < l->cfg.concurrency;
        if (queued && step(l, err) < 0)
            return -1;
        if (l->nready > 0 || !l->jobs)
            break;
        double now = time_now_ms();
        double left = timeout_ms < 0 ? 1e9 : t0 + timeout_ms - now;
        if (left <= 0)
            break;
        /* Sleep until the next due time, activity on curl or a command. */
        double wait = left < 1000 ? left : 1000;
        int nfd = 0, capfd = 0;
        struct curl_waitfd *fds = NULL;
        for (Job *j = l->jobs; j; j = j->next) {
            if (j->state == JOB_WAITING && j->wake_ms - now < wait)
                wait = j->wake_ms - now;
            if (j->state == JOB_RUNNING && j->pid > 0) {
                if (j->deadline_ms - now < wait)
                    wait = j->deadline_ms - now;
                if (nfd + 3 > capfd) {
                    capfd = capfd ? 2 * capfd : 12;
                    fds = xrealloc(fds, (size_t)capfd * sizeof *fds);
                }
                int all_closed = 1;
                if (j->in_fd >= 0)
                    fds[nfd++] = (struct curl_waitfd){j->in_fd, CURL_WAIT_POLLOUT, 0};
                if (j->out_fd >= 0)
                    fds[nfd++] = (struct curl_waitfd){j->out_fd, CURL_WAIT_POLLIN, 0}, all_closed = 0;
                if (j->err_fd >= 0)
                    fds[nfd++] = (struct curl_waitfd){j->err_fd, CURL_WAIT_POLLIN, 0}, all_closed = 0;
                if (all_closed && wait > 10)
                    wait = 10;  /* pipes closed, the child not reaped yet: check again soon */
            }
        }
        if (wait < 0)
            wait = 0;
        int ms = (int)(wait + 0.999);
        if (l->multi) {
            CURLMcode mc = curl_multi_poll(l->multi, fds, (unsigned)nfd, ms, NULL);
            free(fds);
            if (mc != CURLM_OK)
                return err_set(err, "curl_multi_poll: %s", curl_multi_strerror(mc));
        } else {
            /* Commands only: poll(2) on the pipes. */
            struct pollfd *pfd = xcalloc((size_t)(nfd ? nfd : 1), sizeof *pfd);
            for (int i = 0; i < nfd; i++) {
                pfd[i].fd = fds[i].fd;
                pfd[i].events = fds[i].events == CURL_WAIT_POLLOUT ? POLLOUT : POLLIN;
            }
            poll(pfd, (nfds_t)nfd, ms);
            free(pfd);
            free(fds);
        }
    }
    int n = l->nready < max ? l->nready : (max > 0 ? max : 0);
    for (int i = 0; i < n; i++)
        done[i] = l->ready[i];
    if (n > 0) {
        memmove(l->ready, l->ready + n, (size_t)(l->nready - n) * sizeof *l->ready);
        l->nready -= n;
    }
    return n;
}

int llm_pending(const Llm *l)
{
    int n = l->nready;
    for (const Job *j = l->jobs; j; j = j->next)
        n++;
    return n;
}

int llm_requests_used(const Llm *l)
{
    return l->used;
}

int llm_run(Llm *l, const LlmRequest *req, LlmResult **out, EvoErr *err)
{
    if (llm_pending(l) != 0)
        return err_set(err, "llm_run: other requests are pending");
    if (llm_submit(l, req, NULL, err) < 0)
        return -1;
    for (;;) {
        int n = llm_poll(l, -1, out, 1, err);
        if (n < 0)
            return -1;
        if (n == 1)
            return 0;
    }
}


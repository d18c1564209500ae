/*
 * worker: orchestrator side (spawn, requests with deadlines, kill and
 * respawn, module bookkeeping) and the worker process's main loop. See
 * worker.h for the protocol and the failure rules.
 */
#include "gpu/worker.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include "compile/spawn.h"
#include "gpu/cuda_api.h"
#include "gpu/proto.h"

/* =======================================================================
 * Orchestrator side
 * ======================================================================= */

typedef struct Module {
    int            id;
    unsigned char *cubin;
    size_t         len;
    char         **entries;
    int            nentries;
    int            loaded_gen;   /* worker generation that has it loaded, 0: none */
} Module;

struct Worker {
    char      *exe, *entry;
    int        device;
    double     floor_ms, mult;
    pid_t      pid;
    int        to_fd, from_fd;
    int        gen;              /* spawns so far; the current worker's generation */
    DeviceInfo info;
    Module    *mods;
    int        nmods, capmods, next_id;
    double     ref_ms;
    double     watchdog_ms;      /* > 0: the deadline of gate/time/compare/metrics (worker_set_watchdog) */
    double     last_ms;          /* wall time of the last request answered */
    double     req_ms[PROTO_QUIT + 1]; /* per request type: wall time summed, and how many (the debug line) */
    int        req_n[PROTO_QUIT + 1];
    char       last_error[640];
};

/* Outcomes of request(). */
#define REQ_OK    0
#define REQ_DEAD  1  /* the worker timed out or died: *st says which, w->last_error why */

static void close_fds(Worker *w)
{
    if (w->to_fd >= 0)
        close(w->to_fd);
    if (w->from_fd >= 0)
        close(w->from_fd);
    w->to_fd = w->from_fd = -1;
}

/* Describe a waitpid status. */
static void describe_exit(int st, char *buf, size_t cap)
{
    if (WIFSIGNALED(st))
        snprintf(buf, cap, "killed by signal %d (%s)", WTERMSIG(st), strsignal(WTERMSIG(st)));
    else if (WIFEXITED(st))
        snprintf(buf, cap, "exited with code %d%s", WEXITSTATUS(st),
                 WEXITSTATUS(st) == 127 ? " (exec failed?)" : "");
    else
        snprintf(buf, cap, "ended (status 0x%x)", st);
}

static int wait_child(pid_t pid, int *st, int nohang)
{
    for (;;) {
        pid_t r = waitpid(pid, st, nohang ? WNOHANG : 0);
        if (r < 0 && errno == EINTR)
            continue;
        return r == pid;
    }
}

/* Stop the current worker. grace_ms > 0: wait that long for it to exit by
 * itself first (its exit status is then reported). SIGKILL otherwise.
 * Writes "how it ended" into how (may be NULL). */
static void stop_worker(Worker *w, double grace_ms, char *how, size_t cap)
{
    int st = 0, reaped = 0;
    pid_t pid = w->pid;   /* never kill(0): that is the whole process group */
    if (how && cap)
        how[0] = 0;
    if (pid <= 0) {
        close_fds(w);
        return;
    }
    close_fds(w);
    if (grace_ms > 0) {
        double end = time_now_ms() + grace_ms;
        while (!(reaped = wait_child(pid, &st, 1)) && time_now_ms() < end)
            usleep(2000);
    }
    if (!reaped) {
        kill(pid, SIGKILL);
        reaped = wait_child(pid, &st, 0);
    }
    if (how && reaped)
        describe_exit(st, how, cap);
    w->pid = 0;
}

static int spawn(Worker *w, EvoErr *err)
{
    int pid;
    if (spawn_piped(w->exe, w->entry, &pid, &w->to_fd, &w->from_fd) != 0)
        return err_set(err, "starting the worker (pipe2/fork): %s", strerror(errno));
    w->pid = pid;
    w->gen++;
    return 0;
}

/* Send a request and wait for its reply. REQ_OK with *reply filled,
 * REQ_DEAD with *st (EVAL_TIMEOUT / EVAL_CRASHED) and w->last_error, or -1
 * when no worker is running. A fatal reply is returned as REQ_OK, and the
 * worker is reaped. */
static int request(Worker *w, int type, const json_t *j, const void *bin, size_t len, double timeout_ms,
                   ProtoMsg *reply, EvalStatus *st, EvoErr *err)
{
    EvoErr e = {{0}};
    char how[160];
    int rc;
    memset(reply, 0, sizeof(*reply));
    if (w->pid <= 0)
        return err_set(err, "worker: no worker process running");
    if (proto_write(w->to_fd, type, j, bin, len, &e) != 0) {
        stop_worker(w, 2000, how, sizeof(how));
        *st = EVAL_CRASHED;
        snprintf(w->last_error, sizeof(w->last_error), "crashed: worker died before the %s request (%s; %s)",
                 proto_type_name(type), e.msg, how[0] ? how : "not reaped");
        return REQ_DEAD;
    }
    double t0 = time_now_ms();
    rc = proto_read(w->from_fd, reply, timeout_ms < 0 ? -1 : (int)(timeout_ms < 2e9 ? timeout_ms : 2e9), &e);
    w->last_ms = time_now_ms() - t0;
    if (type > 0 && type <= PROTO_QUIT) {
        w->req_ms[type] += w->last_ms;
        w->req_n[type]++;
    }
    if (rc == PROTO_TIMEOUT) {
        stop_worker(w, 0, how, sizeof(how));
        *st = EVAL_TIMEOUT;
        snprintf(w->last_error, sizeof(w->last_error), "timeout: no reply to %s within %.0f ms; worker killed (%s)",
                 proto_type_name(type), timeout_ms, how);
        return REQ_DEAD;
    }
    if (rc != 0) {
        stop_worker(w, 2000, how, sizeof(how));
        *st = EVAL_CRASHED;
        snprintf(w->last_error, sizeof(w->last_error), "crashed: worker %s during %s%s%s",
                 how[0] ? how : "vanished", proto_type_name(type), rc == PROTO_EOF ? "" : ": ",
                 rc == PROTO_EOF ? "" : e.msg);
        return REQ_DEAD;
    }
    if (reply->type != PROTO_REPLY) {
        proto_msg_free(reply);
        stop_worker(w, 0, how, sizeof(how));
        *st = EVAL_CRASHED;
        snprintf(w->last_error, sizeof(w->last_error), "crashed: protocol error: expected a reply, got type %d",
                 reply->type);
        return REQ_DEAD;
    }
    w->last_error[0] = 0;
    WReply h;
    if (wmsg_read(WMSG_REPLY, reply->json, &h, NULL) == 0 && h.fatal)
        stop_worker(w, 3000, NULL, 0);
    return REQ_OK;
}

/* Read reply r as kind into out (a struct starting with its WReply); a
 * malformed reply reads as a failed one that says why. */
static void reply_read(WMsgKind kind, const ProtoMsg *r, void *out)
{
    EvoErr e = {{0}};
    if (wmsg_read(kind, r->json, out, &e) != 0) {
        WReply *h = out;
        h->ok = 0;
        snprintf(h->error, sizeof(h->error), "worker reply: %s", e.msg);
    }
}

/* Start a worker if none runs: spawn + hello. */
static int ensure_running(Worker *w, EvoErr *err)
{
    ProtoMsg r;
    EvalStatus st = EVAL_OK;
    WHello hello = {w->device};
    WHelloReply hr;
    json_t *j;
    int rc;
    if (w->pid > 0)
        return 0;
    if (spawn(w, err) != 0)
        return -1;
    j = wmsg_put(WMSG_HELLO, &hello);
    rc = request(w, PROTO_HELLO, j, NULL, 0, w->floor_ms > 30000 ? w->floor_ms : 30000, &r, &st, err);
    json_decref(j);
    if (rc < 0)
        return -1;
    if (rc == REQ_DEAD)
        return err_set(err, "worker (%s %s): hello failed: %s", w->exe, w->entry, w->last_error);
    reply_read(WMSG_HELLO_REPLY, &r, &hr);
    proto_msg_free(&r);
    if (!hr.h.ok) {
        err_set(err, "worker: %s", hr.h.error[0] ? hr.h.error : "bad hello reply");
        stop_worker(w, 1000, NULL, 0);
        return -1;
    }
    w->info = hr.device;
    return 0;
}

static Module *find_module(Worker *w, int id)
{
    for (int i = 0; i < w->nmods; i++)
        if (w->mods[i].id == id)
            return &w->mods[i];
    return NULL;
}

/* Load module m in the running worker if this generation lacks it. Returns
 * 0 with *st = EVAL_OK (or the failure status and msg), -1 (err). */
static int ensure_module(Worker *w, Module *m, WorkerFunc *funcs, EvalStatus *st, char *msg, size_t cap,
                         EvoErr *err)
{
    ProtoMsg r;
    WLoad ld = {m->id, m->entries, m->nentries};
    WLoadReply lr;
    json_t *j;
    int rc;
    *st = EVAL_OK;
    if (m->loaded_gen == w->gen && w->pid > 0 && !funcs)
        return 0;
    if (ensure_running(w, err) != 0)
        return -1;
    j = wmsg_put(WMSG_LOAD, &ld);
    rc = request(w, PROTO_LOAD, j, m->cubin, m->len, w->floor_ms, &r, st, err);
    json_decref(j);
    if (rc < 0)
        return -1;
    if (rc == REQ_DEAD) {
        snprintf(msg, cap, "%s", w->last_error);
        return 0;
    }
    reply_read(WMSG_LOAD_REPLY, &r, &lr);
    proto_msg_free(&r);
    if (!lr.h.ok) {
        int s = gate_status_parse(lr.h.status);
        *st = s < 0 ? EVAL_INVALID : (EvalStatus)s;
        snprintf(msg, cap, "%s", lr.h.error[0] ? lr.h.error : "module load failed");
        wmsg_free(WMSG_LOAD_REPLY, &lr);
        return 0;
    }
    m->loaded_gen = w->gen;
    for (int i = 0; funcs && i < m->nentries; i++) {
        memset(&funcs[i], 0, sizeof(funcs[i]));
        if (i < lr.nfunctions)
            funcs[i] = lr.functions[i];
        snprintf(funcs[i].name, sizeof(funcs[i].name), "%s", m->entries[i]);
    }
    wmsg_free(WMSG_LOAD_REPLY, &lr);
    return 0;
}

int worker_open(Worker **out, const WorkerOptions *opt, EvoErr *err)
{
    Worker *w = xcalloc(1, sizeof(*w));
    *out = NULL;
    w->exe = xstrdup(opt && opt->exe ? opt->exe : "/proc/self/exe");
    w->entry = xstrdup(opt && opt->entry ? opt->entry : "__worker");
    w->device = opt ? opt->device : 0;
    w->floor_ms = opt && opt->timeout_floor_ms > 0 ? opt->timeout_floor_ms : 10000;
    w->mult = opt && opt->timeout_mult > 0 ? opt->timeout_mult : 1000;
    w->to_fd = w->from_fd = -1;
    w->next_id = 1;
    if (ensure_running(w, err) != 0) {
        worker_close(&w);
        return -1;
    }
    *out = w;
    return 0;
}

/* EVOENG_STEADY_DEBUG: what the worker's requests took and the CPU its
 * process used, so that a slot's time can be told from the GPU's. */
static void debug_line(const Worker *w)
{
    char path[64], buf[1024];
    double cpu_s = -1;
    snprintf(path, sizeof(path), "/proc/%d/stat", (int)w->pid);
    FILE *f = fopen(path, "r");
    if (f) {
        size_t n = fread(buf, 1, sizeof(buf) - 1, f);
        buf[n] = 0;
        fclose(f);
        unsigned long ut, st;
        const char *p = strrchr(buf, ')');
        if (p && sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %lu %lu", &ut, &st) == 2)
            cpu_s = (double)(ut + st) / (double)sysconf(_SC_CLK_TCK);
    }
    fprintf(stderr, "dbg worker GPU %d: cpu %.1f s", w->device, cpu_s);
    for (int t = PROTO_LOAD; t < PROTO_QUIT; t++)
        if (w->req_n[t])
            fprintf(stderr, ", %s %d %.0f ms (%.2f each)", proto_type_name(t), w->req_n[t], w->req_ms[t],
                    w->req_ms[t] / w->req_n[t]);
    fputc('\n', stderr);
}

void worker_close(Worker **wp)
{
    Worker *w;
    if (!wp || !*wp)
        return;
    w = *wp;
    if (w->pid > 0 && getenv("EVOENG_STEADY_DEBUG"))
        debug_line(w);
    if (w->pid > 0) {
        EvoErr e;
        if (proto_write(w->to_fd, PROTO_QUIT, NULL, NULL, 0, &e) == 0) {
            ProtoMsg r;
            if (proto_read(w->from_fd, &r, 2000, &e) == 0)
                proto_msg_free(&r);
        }
        stop_worker(w, 1000, NULL, 0);
    }
    for (int i = 0; i < w->nmods; i++) {
        free(w->mods[i].cubin);
        for (int k = 0; k < w->mods[i].nentries; k++)
            free(w->mods[i].entries[k]);
        free(w->mods[i].entries);
    }
    free(w->mods);
    free(w->exe);
    free(w->entry);
    free(w);
    *wp = NULL;
}

const DeviceInfo *worker_device(const Worker *w)
{
    return &w->info;
}

int worker_spawns(const Worker *w)
{
    return w->gen;
}

int worker_pid(const Worker *w)
{
    return w->pid > 0 ? (int)w->pid : 0;
}

const char *worker_last_error(const Worker *w)
{
    return w->last_error;
}

void worker_note_ref_ms(Worker *w, double ms)
{
    if (ms > w->ref_ms)
        w->ref_ms = ms;
}

double worker_timeout_ms(const Worker *w)
{
    double t = w->mult * w->ref_ms;
    return t > w->floor_ms ? t : w->floor_ms;
}

/* Deadline of a request that runs about `runs` launch plans: the
 * watchdog when one is set, else the rule of worker.h. */
static double timeout_for_runs(const Worker *w, double runs)
{
    if (w->watchdog_ms > 0)
        return w->watchdog_ms;
    double t = runs * w->mult * w->ref_ms;
    return t > w->floor_ms ? t : w->floor_ms;
}

void worker_set_watchdog(Worker *w, double ms)
{
    w->watchdog_ms = ms > 0 ? ms : 0;
}

double worker_last_ms(const Worker *w)
{
    return w->last_ms;
}

int worker_load(Worker *w, const void *cubin, size_t len, const char *const *entries, int nentries, int *id,
                WorkerFunc *funcs, EvalStatus *status, char *msg, size_t msg_cap, EvoErr *err)
{
    Module *m;
    if (w->nmods == w->capmods) {
        w->capmods = w->capmods ? 2 * w->capmods : 8;
        w->mods = xrealloc(w->mods, (size_t)w->capmods * sizeof(*w->mods));
    }
    m = &w->mods[w->nmods++];
    memset(m, 0, sizeof(*m));
    m->id = w->next_id++;
    m->cubin = xmalloc(len ? len : 1);
    memcpy(m->cubin, cubin, len);
    m->len = len;
    m->nentries = nentries;
    m->entries = xcalloc((size_t)(nentries > 0 ? nentries : 1), sizeof(char *));
    for (int i = 0; i < nentries; i++)
        m->entries[i] = xstrdup(entries[i]);
    *id = m->id;
    if (msg && msg_cap)
        msg[0] = 0;
    {
        char tmp[640];
        int rc = ensure_module(w, m, funcs, status, msg ? msg : tmp, msg ? msg_cap : sizeof(tmp), err);
        if (rc == 0 && *status != EVAL_OK)
            m->loaded_gen = 0;
        return rc;
    }
}

int worker_unload(Worker *w, int id, EvoErr *err)
{
    for (int i = 0; i < w->nmods; i++) {
        Module *m = &w->mods[i];
        if (m->id != id)
            continue;
        if (m->loaded_gen == w->gen && w->pid > 0) {
            ProtoMsg r;
            EvalStatus st;
            WLoad u = {.module = id};
            json_t *j = wmsg_put(WMSG_UNLOAD, &u);
            if (request(w, PROTO_UNLOAD, j, NULL, 0, w->floor_ms, &r, &st, err) == REQ_OK)
                proto_msg_free(&r);
            json_decref(j);
        }
        free(m->cubin);
        for (int k = 0; k < m->nentries; k++)
            free(m->entries[k]);
        free(m->entries);
        w->mods[i] = w->mods[--w->nmods];
        return 0;
    }
    return err_set(err, "worker_unload: unknown module %d", id);
}

/* Make sure the worker runs and has the modules ids[0..n). On a module
 * failure fills st/msg and returns 0 with *st != EVAL_OK. */
static int prepare(Worker *w, const int *ids, int n, EvalStatus *st, char *msg, size_t cap, EvoErr *err)
{
    *st = EVAL_OK;
    if (ensure_running(w, err) != 0)
        return -1;
    for (int i = 0; i < n; i++) {
        Module *m = find_module(w, ids[i]);
        if (!m) {
            *st = EVAL_INVALID;
            snprintf(msg, cap, "unknown module id %d", ids[i]);
            return 0;
        }
        if (ensure_module(w, m, NULL, st, msg, cap, err) != 0)
            return -1;
        if (*st != EVAL_OK)
            return 0;
    }
    return 0;
}

int worker_gate(Worker *w, const Plan *plan, int cand, int ref, const GateOptions *opt, GateReport *rep,
                EvoErr *err)
{
    GateOptions def;
    int ids[2] = {cand, ref};
    EvalStatus st;
    ProtoMsg r;
    WGate g = {.plan = *plan, .cand = cand, .ref = ref};
    WGateReply gr;
    json_t *j;
    int rc;

    memset(rep, 0, sizeof(*rep));
    rep->first_bad = -1;
    snprintf(rep->shape, sizeof(rep->shape), "%s", plan->shape_label ? plan->shape_label : "");
    if (!opt) {
        gate_options_default(&def);
        opt = &def;
    }
    if (prepare(w, ids, 2, &st, rep->error, sizeof(rep->error), err) != 0)
        return -1;
    if (st != EVAL_OK) {
        rep->status = st;
        return 0;
    }
    g.nseeds = opt->nseeds > 0 ? (opt->nseeds > WMSG_MAX_SEEDS ? WMSG_MAX_SEEDS : opt->nseeds) : 3;
    for (int i = 0; i < g.nseeds; i++)
        g.seeds[i] = opt->seeds_given ? opt->seeds[i] : (uint64_t)i + 1;
    j = wmsg_put(WMSG_GATE, &g);
    rc = request(w, PROTO_GATE, j, NULL, 0, timeout_for_runs(w, 3.0 * g.nseeds * plan_nprofiles(plan)), &r, &st, err);
    json_decref(j);
    if (rc < 0)
        return -1;
    if (rc == REQ_DEAD) {
        rep->status = st;
        rep->fatal = 1;
        snprintf(rep->error, sizeof(rep->error), "%s", w->last_error);
        return 0;
    }
    reply_read(WMSG_GATE_REPLY, &r, &gr);
    proto_msg_free(&r);
    if (!gr.h.ok) {
        rep->status = EVAL_INVALID;
        snprintf(rep->error, sizeof(rep->error), "%s", gr.h.error[0] ? gr.h.error : "gate request failed");
    } else {
        *rep = gr.report;
        if (rep->ref_ms > 0)
            worker_note_ref_ms(w, rep->ref_ms);
    }
    return 0;
}

/* Shared by time / metrics / compare: send j (taken), read the reply as
 * kind into out (zeroed by the caller: not ok when the worker died). */
static int bench_request(Worker *w, int type, json_t *j, double timeout_ms, WMsgKind kind, void *out,
                         EvalStatus *st, char *msg, size_t cap, EvoErr *err)
{
    ProtoMsg r;
    WReply *h = out;
    int rc = request(w, type, j, NULL, 0, timeout_ms, &r, st, err);
    json_decref(j);
    if (rc < 0)
        return -1;
    if (rc == REQ_DEAD) {
        snprintf(msg, cap, "%s", w->last_error);
        return 0;
    }
    reply_read(kind, &r, out);
    proto_msg_free(&r);
    *st = h->ok ? EVAL_OK : EVAL_INVALID;
    if (!h->ok)
        snprintf(msg, cap, "%s", h->error[0] ? h->error : "request failed");
    return 0;
}

static int time_or_metrics(Worker *w, int type, const Plan *plan, int module, int which_ref, const BenchOptions *opt,
                           BenchResult *res, EvoErr *err)
{
    BenchOptions def;
    EvalStatus st;
    WTime t = {.plan = *plan, .module = module, .which_ref = which_ref};
    WTimeReply tr = {.h.ok = 0};
    int rc;
    memset(res, 0, sizeof(*res));
    if (!opt) {
        bench_options_default(&def);
        opt = &def;
    }
    if (prepare(w, &module, 1, &st, res->error, sizeof(res->error), err) != 0)
        return -1;
    if (st != EVAL_OK) {
        res->status = st;
        return 0;
    }
    t.bench = *opt;
    rc = bench_request(w, type, wmsg_put(WMSG_TIME, &t),
                       timeout_for_runs(w, (opt->warmup + opt->samples + 25.0) * plan_nprofiles(plan)),
                       WMSG_TIME_REPLY, &tr, &st, res->error, sizeof(res->error), err);
    if (rc == 0 && tr.h.ok) {
        *res = tr.result;
        bench_fill_throughput(res, plan, &w->info);
    } else if (rc == 0) {
        res->status = st;
        res->fatal = st == EVAL_TIMEOUT || st == EVAL_CRASHED;
    }
    return rc;
}

int worker_time(Worker *w, const Plan *plan, int module, int which_ref, const BenchOptions *opt, BenchResult *res,
                EvoErr *err)
{
    return time_or_metrics(w, PROTO_TIME, plan, module, which_ref, opt, res, err);
}

int worker_metrics(Worker *w, const Plan *plan, int module, int which_ref, BenchResult *res, EvoErr *err)
{
    return time_or_metrics(w, PROTO_METRICS, plan, module, which_ref, NULL, res, err);
}

int worker_compare(Worker *w, const Plan *plan_a, int module_a, const Plan *plan_b, int module_b,
                   const BenchOptions *opt, CompareResult *res, EvoErr *err)
{
    BenchOptions def;
    int ids[2] = {module_a, module_b};
    EvalStatus st;
    WCompare q = {.plan_a = *plan_a, .module_a = module_a, .plan_b = *plan_b, .module_b = module_b};
    WCompareReply cr = {.h.ok = 0};
    int rc;
    memset(res, 0, sizeof(*res));
    if (!opt) {
        bench_options_default(&def);
        opt = &def;
    }
    if (prepare(w, ids, 2, &st, res->error, sizeof(res->error), err) != 0)
        return -1;
    if (st != EVAL_OK) {
        res->status = st;
        return 0;
    }
    q.bench = *opt;
    rc = bench_request(w, PROTO_COMPARE, wmsg_put(WMSG_COMPARE, &q),
                       timeout_for_runs(w, (2.0 * opt->pairs * (opt->retries > 0 ? opt->retries : 1) + 60.0) *
                                               plan_nprofiles(plan_b)),
                       WMSG_COMPARE_REPLY, &cr, &st, res->error, sizeof(res->error), err);
    if (rc == 0 && cr.h.ok) {
        *res = cr.result;
    } else if (rc == 0) {
        res->status = st;
        res->fatal = st == EVAL_TIMEOUT || st == EVAL_CRASHED;
    }
    return rc;
}

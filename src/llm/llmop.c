/*
 * llmop: prompts for one parent (I1, I2, I3), the background thread that
 * drives the LLM client, and the request records. See llmop.h.
 */
#include "llm/llmop.h"

#include <jansson.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "msg.h"
#include "task/datadir.h"

#define MAX_ERROR_CHARS 400   /* of one failure's error text in the insights */

/* A queued request: the thread hands it to the client. */
typedef struct Job {
    struct Job *next;
    struct Job *lprev, *lnext; /* the thread's list of jobs handed to the client */
    char       *mode, *system, *prompt;
    char      **entries;
    int         nentries;
    int64_t     generation, parent_id;
    unsigned    epoch;        /* llmop_discard() bumps the op's epoch */
} Job;

/* A finished request waiting for llmop_collect(). */
typedef struct Done {
    struct Done *next;
    LlmOpAnswer  a;
} Done;

struct LlmOp {
    LlmOpConfig     cfg;
    char           *dir;      /* prompts directory */
    Llm            *llm;      /* used by the thread only, after llmop_open */
    pthread_t       thread;
    int             thread_started;
    pthread_mutex_t mu;
    pthread_cond_t  cv_work;  /* the thread waits here when idle */
    pthread_cond_t  cv_done;  /* llmop_collect waits here */
    Job            *queue, *queue_tail;
    Job            *live;     /* handed to the client, not finished (thread only) */
    Done           *done, *done_tail;
    int             pending;  /* submitted in the current epoch, not collected */
    unsigned        epoch;
    int             quit;
};

/* ---- the polling thread ---------------------------------------------- */

static void job_free(Job *j)
{
    if (!j)
        return;
    free(j->mode);
    free(j->system);
    free(j->prompt);
    for (int i = 0; i < j->nentries; i++)
        free(j->entries[i]);
    free(j->entries);
    free(j);
}

/* Hand a finished result to the collector (or drop it: an old epoch). */
static void live_remove(LlmOp *op, Job *j)
{
    if (j->lprev)
        j->lprev->lnext = j->lnext;
    else
        op->live = j->lnext;
    if (j->lnext)
        j->lnext->lprev = j->lprev;
    j->lprev = j->lnext = NULL;
}

static void deliver(LlmOp *op, LlmResult *res)
{
    Job *j = res->user;
    live_remove(op, j);
    pthread_mutex_lock(&op->mu);
    if (j->epoch == op->epoch) {
        Done *d = xcalloc(1, sizeof(*d));
        d->a.res = res;
        d->a.generation = j->generation;
        d->a.parent_id = j->parent_id;
        res->user = NULL;
        if (op->done_tail)
            op->done_tail->next = d;
        else
            op->done = d;
        op->done_tail = d;
        pthread_cond_broadcast(&op->cv_done);
        res = NULL;
    }
    pthread_mutex_unlock(&op->mu);
    if (res)
        llm_result_free(&res);
    job_free(j);
}

static void *poll_thread(void *arg)
{
    LlmOp *op = arg;
    int inflight = 0;
    pthread_mutex_lock(&op->mu);
    while (!op->quit) {
        Job *q = op->queue;
        op->queue = op->queue_tail = NULL;
        if (!q && inflight == 0) {
            pthread_cond_wait(&op->cv_work, &op->mu);
            continue;
        }
        pthread_mutex_unlock(&op->mu);
        while (q) {
            Job *j = q;
            q = q->next;
            j->next = NULL;
            LlmRequest req = {.mode = j->mode, .system = j->system, .prompt = j->prompt,
                              .entries = (const char *const *)j->entries, .nentries = j->nentries};
            EvoErr e;
            if (llm_submit(op->llm, &req, j, &e) == 0) {
                inflight++;
                j->lnext = op->live;
                if (op->live)
                    op->live->lprev = j;
                op->live = j;
            } else {
                warnf("LLM request dropped: %s", e.msg);
                pthread_mutex_lock(&op->mu);
                if (j->epoch == op->epoch && op->pending > 0)
                    op->pending--;
                pthread_mutex_unlock(&op->mu);
                job_free(j);
            }
        }
        if (inflight > 0) {
            LlmResult *got[8];
            EvoErr e;
            int n = llm_poll(op->llm, 50, got, 8, &e);
            if (n < 0) {
                warnf("LLM client: %s", e.msg);
                usleep(50000);
                n = 0;
            }
            for (int i = 0; i < n; i++)
                deliver(op, got[i]);
            inflight -= n;
        }
        pthread_mutex_lock(&op->mu);
    }
    pthread_mutex_unlock(&op->mu);
    return NULL;
}

/* ---- opening and closing --------------------------------------------- */

void llmop_config_defaults(LlmOpConfig *c)
{
    memset(c, 0, sizeof(*c));
    llm_config_defaults(&c->llm);
    c->mode = PROMPT_FULL;
}

static int dir_has_prompts(const char *dir)
{
    char *p = path_join(dir, "system.md");
    int ok = access(p, R_OK) == 0;
    free(p);
    return ok;
}

static char *find_prompts_dir(const char *given, EvoErr *err)
{
    if (given)
        return dir_has_prompts(given) ? xstrdup(given)
                                      : (err_set(err, "%s: no system.md here: not a prompts directory", given), NULL);
    const char *env = getenv("EVOENG_PROMPTS_DIR");
    if (env && *env)
        return dir_has_prompts(env)
                   ? xstrdup(env)
                   : (err_set(err, "EVOENG_PROMPTS_DIR=%s: no system.md here: not a prompts directory", env), NULL);
    if (dir_has_prompts("prompts"))
        return xstrdup("prompts");
    char *data = datadir_file("prompts/system.md");   /* $EVOENG_DATA_DIR, installed, source tree */
    if (data) {
        char *dir = path_dirname(data);
        free(data);
        return dir;
    }
    char *where = datadir_searched("prompts/system.md");
    err_set(err, "no prompts directory: %s (or EVOENG_PROMPTS_DIR to a prompts folder)", where);
    free(where);
    return NULL;
}

int llmop_open(LlmOp **out, const LlmOpConfig *cfg, EvoErr *err)
{
    *out = NULL;
    LlmOp *op = xcalloc(1, sizeof(*op));
    op->cfg = *cfg;
    if (op->cfg.history_k <= 0)
        op->cfg.history_k = 3;
    if (op->cfg.failures_k <= 0)
        op->cfg.failures_k = 3;
    pthread_mutex_init(&op->mu, NULL);
    pthread_cond_init(&op->cv_work, NULL);
    pthread_cond_init(&op->cv_done, NULL);
    op->dir = find_prompts_dir(cfg->prompts_dir, err);
    if (!op->dir)
        goto fail;
    op->cfg.prompts_dir = op->dir;
    if (llm_open(&op->llm, &op->cfg.llm, err))
        goto fail;
    if (pthread_create(&op->thread, NULL, poll_thread, op) != 0) {
        err_set(err, "pthread_create: cannot start the LLM polling thread");
        goto fail;
    }
    op->thread_started = 1;
    *out = op;
    return 0;
fail:
    llmop_close(&op);
    return -1;
}

void llmop_close(LlmOp **pop)
{
    LlmOp *op = *pop;
    if (!op)
        return;
    if (op->thread_started) {
        pthread_mutex_lock(&op->mu);
        op->quit = 1;
        pthread_cond_broadcast(&op->cv_work);
        pthread_mutex_unlock(&op->mu);
        pthread_join(op->thread, NULL);
    }
    /* The thread is gone: what the client still holds is cancelled. */
    llm_close(&op->llm);
    while (op->live) {
        Job *j = op->live;
        op->live = j->lnext;
        job_free(j);
    }
    while (op->queue) {
        Job *j = op->queue;
        op->queue = j->next;
        job_free(j);
    }
    while (op->done) {
        Done *d = op->done;
        op->done = d->next;
        llm_result_free(&d->a.res);
        free(d);
    }
    pthread_mutex_destroy(&op->mu);
    pthread_cond_destroy(&op->cv_work);
    pthread_cond_destroy(&op->cv_done);
    free(op->dir);
    free(op);
    *pop = NULL;
}

PromptMode llmop_mode(const LlmOp *op)
{
    return op->cfg.mode;
}

int llmop_max_requests(const LlmOp *op)
{
    return op->cfg.llm.max_requests;
}

const char *llmop_prompts_dir(const LlmOp *op)
{
    return op->dir;
}

/* ---- I1: the task context -------------------------------------------- */

char *llmop_kernel_of(Store *st, const Task *task, const CandidateRecord *c, EvoErr *err)
{
    if (c->params_key && strchr(c->params_key, '@'))
        return store_kernel_get(st, c->params_key, err);
    return xstrdup(task_template_text(task));
}

/* The declared name of an entry: "k" for "ns::k<128, 64>" (fresh). */
static char *entry_base_name(const char *entry)
{
    size_t end = strcspn(entry, "<");
    while (end > 0 && entry[end - 1] == ' ')
        end--;
    size_t start = 0;
    for (size_t i = 0; i + 1 < end; i++)
        if (entry[i] == ':' && entry[i + 1] == ':')
            start = i + 2;
    return xstrndup(entry + start, end - start);
}

/* The declaration of entry `name` in src, from `extern` (or the line
 * start) to the closing parenthesis, whitespace collapsed; NULL when not
 * found. */
static char *entry_signature(const char *src, const char *name)
{
    size_t nl = strlen(name);
    for (const char *p = strstr(src, name); p; p = strstr(p + 1, name)) {
        int id_before = p > src && (p[-1] == '_' || (p[-1] >= '0' && p[-1] <= '9') ||
                                    ((p[-1] | 32) >= 'a' && (p[-1] | 32) <= 'z'));
        if (id_before)
            continue;
        const char *q = p + nl;
        while (*q == ' ' || *q == '\t' || *q == '\n' || *q == '\r')
            q++;
        if (*q != '(')
            continue;
        /* __global__ must come shortly before, on the same declaration. */
        const char *lo = p - src > 300 ? p - 300 : src;
        const char *g = NULL;
        for (const char *s = lo; s < p; s++)
            if (strncmp(s, "__global__", 10) == 0)
                g = s;
        if (!g)
            continue;
        const char *start = g;
        for (const char *s = g; s >= lo; s--) {
            if (strncmp(s, "extern", 6) == 0) {
                start = s;
                break;
            }
            if (*s == ';' || *s == '}' || *s == '{')
                break;
        }
        int depth = 0;
        const char *end = q;
        for (; *end; end++) {
            if (*end == '(')
                depth++;
            else if (*end == ')' && --depth == 0)
                break;
        }
        if (!*end)
            return NULL;
        StrBuf sb = {0};
        int space = 0;
        for (const char *s = start; s <= end; s++) {
            if (*s == ' ' || *s == '\t' || *s == '\n' || *s == '\r') {
                space = 1;
                continue;
            }
            if (space && sb.len)
                sb_putc(&sb, ' ');
            space = 0;
            sb_putc(&sb, *s);
        }
        return sb_take(&sb);
    }
    return NULL;
}

static char *json_compact(json_t *v)
{
    char *s = v ? json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY) : NULL;
    return s ? s : xstrdup("?");
}

/* A spec value as the prompt shows it: a string as it is, a number with
 * %g (dflt when absent), anything else (a value a dim picks, {"dim":
 * "DTYPE", "values": [...]}) as compact JSON. Fresh string. */
static char *spec_value(json_t *v, double dflt)
{
    if (json_is_string(v))
        return xstrdup(json_string_value(v));
    if (!v || json_is_number(v))
        return xasprintf("%g", v ? json_number_value(v) : dflt);
    return json_compact(v);
}

/* launch_plan, buffers and tolerance from the spec's JSON. */
static void set_spec_vars(PromptVars *v, const Task *task)
{
    json_t *root = json_loads(task_json(task), 0, NULL);
    StrBuf sb = {0};
    json_t *launch = json_object_get(root, "launch"), *it;
    size_t i;
    json_array_foreach(launch, i, it) {
        char *grid = json_compact(json_object_get(it, "grid"));
        char *block = json_compact(json_object_get(it, "block"));
        char *smem = json_compact(json_object_get(it, "smem"));
        char *args = json_compact(json_object_get(it, "args"));
        json_t *when = json_object_get(it, "when");
        char *w = when ? json_compact(when) : NULL;
        sb_printf(&sb, "%zu. %s: grid %s, block %s, dynamic smem %s bytes, args %s%s%s\n", i + 1,
                  json_string_value(json_object_get(it, "entry")) ? json_string_value(json_object_get(it, "entry"))
                                                                  : "?",
                  grid, block, json_object_get(it, "smem") ? smem : "0", args, w ? ", when " : "", w ? w : "");
        free(grid);
        free(block);
        free(smem);
        free(args);
        free(w);
    }
    prompt_vars_set(v, "launch_plan", sb.len ? sb.s : "(see the task spec)\n");
    sb_clear(&sb);
    json_t *bufs = json_object_get(root, "buffers");
    json_array_foreach(bufs, i, it) {
        char *shape = json_compact(json_object_get(it, "shape"));
        const char *name = json_string_value(json_object_get(it, "name"));
        char *dtype = spec_value(json_object_get(it, "dtype"), 0);   /* required: never absent */
        const char *role = json_string_value(json_object_get(it, "role"));
        sb_printf(&sb, "- %s: %s, shape %s, %s", name ? name : "?", dtype, shape, role ? role : "input");
        json_t *at = json_object_get(it, "atol"), *rt = json_object_get(it, "rtol");
        if (at || rt) {
            char *a = spec_value(at, 1e-2), *r = spec_value(rt, 1e-2);
            sb_printf(&sb, " (atol %s, rtol %s)", a, r);
            free(a);
            free(r);
        }
        sb_putc(&sb, '\n');
        free(dtype);
        free(shape);
    }
    char *dims = task_shape_label(task, 0);
    sb_printf(&sb, "Benchmark shape: %s; %d more shapes are checked for correctness.\n", dims, task_nshapes(task) - 1);
    free(dims);
    prompt_vars_set(v, "buffers", sb.s);
    json_t *tol = json_object_get(root, "tolerance");
    char *at = spec_value(json_object_get(tol, "atol"), 1e-2), *rt = spec_value(json_object_get(tol, "rtol"), 1e-2);
    prompt_vars_setf(v, "tolerance", "atol %s, rtol %s", at, rt);
    free(at);
    free(rt);
    sb_free(&sb);
    json_decref(root);
}

static void set_task_vars(PromptVars *v, const Task *task, const int64_t *vals, const char *kernel)
{
    prompt_vars_set(v, "task_name", task_name(task));
    prompt_vars_set(v, "task_description", *task_description(task) ? task_description(task) : "(no description)");
    StrBuf sb = {0};
    for (int i = 0; i < task_nentries(task); i++) {
        const char *entry = task_entry(task, i);
        /* a template instantiation or a namespaced kernel is declared by
         * its base name: k for ns::k<128, 64> */
        int plain = !strpbrk(entry, "<:");
        char *base = plain ? xstrdup(entry) : entry_base_name(entry);
        char *sig = entry_signature(kernel, base);
        if (!sig)
            sig = entry_signature(task_template_text(task), base);
        if (sig && plain)
            sb_printf(&sb, "- %s\n", sig);
        else if (sig)
            sb_printf(&sb, "- %s\n  (launched as %s: keep the kernel's name%s%s and signature)\n", sig, entry,
                      strstr(entry, "::") ? ", namespace" : "", strchr(entry, '<') ? ", template parameters" : "");
        else if (plain)
            sb_printf(&sb, "- extern \"C\" __global__ void %s(...)\n", entry);
        else
            sb_printf(&sb, "- __global__ kernel launched as %s (keep its name, namespace, template parameters and "
                           "signature)\n", entry);
        free(sig);
        free(base);
    }
    prompt_vars_set(v, "entry_points", sb.s);
    sb_clear(&sb);
    for (int i = 0; i < task_nparams(task); i++) {
        sb_printf(&sb, "- %s: one of {", task_param_name(task, i));
        for (int k = 0; k < task_param_nvalues(task, i); k++)
            sb_printf(&sb, "%s%lld", k ? ", " : "", (long long)task_param_value(task, i, k));
        sb_printf(&sb, "}; current %lld\n", (long long)vals[i]);
    }
    prompt_vars_set(v, "params", sb.len ? sb.s : "(none)\n");
    sb_free(&sb);
    set_spec_vars(v, task);
}

/* ---- I2: the history -------------------------------------------------- */

static int set_history(LlmOp *op, const LlmOpContext *ctx, PromptVars *v, EvoErr *err)
{
    CandidateRecord *best = NULL;
    int nb = 0, rc = -1;
    char *text = NULL;
    if (store_candidate_list(ctx->st, ctx->run_id, STORE_SURVIVORS_BY_LATENCY, op->cfg.history_k, &best, &nb, err))
        return -1;
    PromptHistoryItem *items = xcalloc((size_t)nb + 1, sizeof(*items));
    char **labels = xcalloc((size_t)nb + 1, sizeof(char *));
    char **sources = xcalloc((size_t)nb + 1, sizeof(char *));
    for (int i = 0; i < nb; i++) {
        labels[i] = xasprintf("candidate #%lld (generation %lld, %s, %s)", (long long)best[i].id,
                              (long long)best[i].generation, best[i].operator ? best[i].operator : "?",
                              best[i].params_json ? best[i].params_json : "{}");
        EvoErr e2;
        sources[i] = llmop_kernel_of(ctx->st, ctx->task, &best[i], &e2);
        items[i].label = labels[i];
        items[i].source = sources[i] ? sources[i] : "(source unavailable)";
        items[i].latency_ms = best[i].latency_us > 0 ? best[i].latency_us / 1000.0 : -1;
        items[i].speedup = best[i].speedup > 0 ? best[i].speedup : -1;
        items[i].rationale = best[i].rationale;
    }
    if (prompt_format_history(op->dir, items, nb, &text, err) == 0) {
        prompt_vars_set(v, "history", text);
        rc = 0;
    }
    for (int i = 0; i < nb; i++) {
        free(labels[i]);
        free(sources[i]);
    }
    free(labels);
    free(sources);
    free(items);
    free(text);
    store_candidates_free(best, nb);
    return rc;
}

/* ---- I3: the insights ------------------------------------------------- */

static int is_compile_failure(const char *status)
{
    return strcmp(status, "compile_error") == 0 || strcmp(status, "invalid") == 0;
}

static void append_failure(StrBuf *sb, const CandidateRecord *c)
{
    const char *e = c->error ? c->error : "";
    size_t n = strlen(e);
    sb_printf(sb, "%s#%lld (%s): %s: %.*s%s", sb->len ? "\n  " : "", (long long)c->id,
              c->operator ? c->operator : "?", c->status, (int)(n > MAX_ERROR_CHARS ? MAX_ERROR_CHARS : n), e,
              n > MAX_ERROR_CHARS ? " [...]" : "");
}

static int set_insights(LlmOp *op, const LlmOpContext *ctx, const CandidateRecord *p, PromptVars *v, EvoErr *err)
{
    PromptInsights in;
    prompt_insights_init(&in);
    const DeviceInfo *d = ctx->dev;
    if (p->latency_us > 0)
        in.latency_ms = p->latency_us / 1000.0;
    if (p->ctas > 0)
        in.ctas = (long)p->ctas;
    if (p->registers > 0)
        in.registers = (int)p->registers;
    int64_t smem = (p->smem_static > 0 ? p->smem_static : 0) + (p->smem_dynamic > 0 ? p->smem_dynamic : 0);
    if (p->smem_static >= 0 || p->smem_dynamic >= 0)
        in.smem_bytes = (int)smem;
    if (p->tflops > 0)
        in.tflops = p->tflops;
    if (p->gbps > 0)
        in.gbps = p->gbps;
    /* Occupancy: resident CTAs per SM times threads, over the SM's thread
     * limit; the limiter is the resource that allows the fewest CTAs. */
    if (p->occupancy > 0 && p->threads > 0 && d->max_threads_per_sm > 0) {
        in.occupancy = (double)(p->occupancy * p->threads) / d->max_threads_per_sm;
        if (in.occupancy > 1)
            in.occupancy = 1;
        double lim_threads = (double)d->max_threads_per_sm / (double)p->threads;
        double lim_regs = p->registers > 0 && d->regs_per_sm > 0
                              ? (double)d->regs_per_sm / (double)(p->registers * p->threads) : INFINITY;
        double lim_smem = smem > 0 && d->smem_per_sm > 0 ? (double)d->smem_per_sm / (double)smem : INFINITY;
        double lim_blocks = d->max_blocks_per_sm > 0 ? d->max_blocks_per_sm : INFINITY;
        double m = fmin(fmin(lim_threads, lim_regs), fmin(lim_smem, lim_blocks));
        in.occupancy_limiter = m == lim_regs ? "registers" : m == lim_smem ? "shared memory"
                             : m == lim_threads ? "threads" : "blocks";
    }
    CompileRecord comp;
    compile_record_init(&comp);
    if (p->compile_id > 0 && store_compile_get(ctx->st, p->compile_id, &comp, err) == 1) {
        if (comp.spill_stores >= 0 || comp.spill_loads >= 0)
            in.spill_bytes = (int)((comp.spill_stores > 0 ? comp.spill_stores : 0) +
                                   (comp.spill_loads > 0 ? comp.spill_loads : 0));
        if (in.registers < 0 && comp.registers > 0)
            in.registers = (int)comp.registers;
    }
    compile_record_free(&comp);

    /* The run's most recent failed children. */
    CandidateRecord *all = NULL;
    int na = 0;
    if (store_candidate_list(ctx->st, ctx->run_id, STORE_ALL_BY_ID, 0, &all, &na, err))
        return -1;
    StrBuf ce = {0}, gf = {0};
    int nce = 0, ngf = 0;
    for (int i = na - 1; i >= 0 && (nce < op->cfg.failures_k || ngf < op->cfg.failures_k); i--) {
        const CandidateRecord *c = &all[i];
        if (!c->status || strcmp(c->status, "ok") == 0)
            continue;
        if (is_compile_failure(c->status)) {
            if (nce++ < op->cfg.failures_k)
                append_failure(&ce, c);
        } else if (ngf++ < op->cfg.failures_k) {
            append_failure(&gf, c);
        }
    }
    store_candidates_free(all, na);
    in.recent_compile_errors = ce.len ? ce.s : NULL;
    in.recent_gate_failures = gf.len ? gf.s : NULL;
    char *text = prompt_format_insights(&in, d);
    prompt_vars_set(v, "insights", text);
    free(text);
    sb_free(&ce);
    sb_free(&gf);
    return 0;
}

/* ---- requests --------------------------------------------------------- */

int llmop_build_prompt(LlmOp *op, const LlmOpContext *ctx, const CandidateRecord *parent, char **system,
                       char **user, EvoErr *err)
{
    PromptVars v = {0};
    int rc = -1;
    int np = task_nparams(ctx->task);
    int64_t *vals = xcalloc((size_t)np + 1, sizeof(int64_t));
    char *kernel = llmop_kernel_of(ctx->st, ctx->task, parent, err);
    if (!kernel)
        goto out;
    if (task_params_parse(ctx->task, parent->params_json ? parent->params_json : "", vals, err)) {
        err_prefix(err, "candidate %lld: params", (long long)parent->id);
        goto out;
    }
    prompt_vars_set_device(&v, ctx->dev);
    set_task_vars(&v, ctx->task, vals, kernel);
    if (parent->latency_us > 0)
        prompt_vars_setf(&v, "parent_label", "candidate #%lld, %.2f us, %.2fx over the baseline",
                         (long long)parent->id, parent->latency_us, parent->speedup > 0 ? parent->speedup : 1.0);
    else
        prompt_vars_setf(&v, "parent_label", "candidate #%lld", (long long)parent->id);
    prompt_vars_set(&v, "parent_source", kernel);
    if (op->cfg.mode == PROMPT_FULL && set_history(op, ctx, &v, err))
        goto out;
    if (op->cfg.mode != PROMPT_FREE && set_insights(op, ctx, parent, &v, err))
        goto out;
    rc = prompt_assemble(op->dir, op->cfg.mode, &v, system, user, err);
out:
    prompt_vars_free(&v);
    free(kernel);
    free(vals);
    return rc;
}

int llmop_submit(LlmOp *op, const LlmOpContext *ctx, const CandidateRecord *parent, EvoErr *err)
{
    char *sys = NULL, *user = NULL;
    if (llmop_build_prompt(op, ctx, parent, &sys, &user, err))
        return -1;
    Job *j = xcalloc(1, sizeof(*j));
    j->mode = xstrdup(prompt_mode_name(op->cfg.mode));
    j->system = sys;
    j->prompt = user;
    j->nentries = task_nentries(ctx->task);
    j->entries = xcalloc((size_t)j->nentries + 1, sizeof(char *));
    for (int i = 0; i < j->nentries; i++)
        j->entries[i] = xstrdup(task_entry(ctx->task, i));
    j->generation = ctx->generation;
    j->parent_id = parent->id;
    pthread_mutex_lock(&op->mu);
    j->epoch = op->epoch;
    if (op->queue_tail)
        op->queue_tail->next = j;
    else
        op->queue = j;
    op->queue_tail = j;
    op->pending++;
    pthread_cond_broadcast(&op->cv_work);
    pthread_mutex_unlock(&op->mu);
    return 0;
}

int llmop_collect(LlmOp *op, int timeout_ms, LlmOpAnswer *out, int max)
{
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    if (timeout_ms > 0) {
        until.tv_sec += timeout_ms / 1000;
        until.tv_nsec += (long)(timeout_ms % 1000) * 1000000L;
        if (until.tv_nsec >= 1000000000L) {
            until.tv_sec++;
            until.tv_nsec -= 1000000000L;
        }
    }
    int n = 0;
    pthread_mutex_lock(&op->mu);
    while (!op->done && op->pending > 0 && timeout_ms != 0) {
        if (timeout_ms < 0)
            pthread_cond_wait(&op->cv_done, &op->mu);
        else if (pthread_cond_timedwait(&op->cv_done, &op->mu, &until) != 0)
            break;
    }
    while (op->done && n < max) {
        Done *d = op->done;
        op->done = d->next;
        if (!op->done)
            op->done_tail = NULL;
        out[n++] = d->a;
        free(d);
        op->pending--;
    }
    pthread_mutex_unlock(&op->mu);
    return n;
}

int llmop_pending(LlmOp *op)
{
    pthread_mutex_lock(&op->mu);
    int n = op->pending;
    pthread_mutex_unlock(&op->mu);
    return n;
}

void llmop_discard(LlmOp *op)
{
    pthread_mutex_lock(&op->mu);
    op->epoch++;
    op->pending = 0;
    while (op->done) {
        Done *d = op->done;
        op->done = d->next;
        llm_result_free(&d->a.res);
        free(d);
    }
    op->done_tail = NULL;
    while (op->queue) {   /* not sent yet: never send them */
        Job *j = op->queue;
        op->queue = j->next;
        job_free(j);
    }
    op->queue_tail = NULL;
    pthread_mutex_unlock(&op->mu);
}

void llmop_request_record(const LlmOpAnswer *a, int64_t run_id, LlmRequestRecord *r)
{
    const LlmResult *x = a->res;
    llm_request_record_init(r);
    r->run_id = run_id;
    r->generation = a->generation;
    r->parent_id = a->parent_id;
    r->mode = xstrdup(x->mode);
    r->provider = xstrdup(x->provider);
    r->model = xstrdup(x->model);
    r->url = xstrdup(x->url);
    r->prompt = *x->system ? xasprintf("%s\n\n%s", x->system, x->prompt) : xstrdup(x->prompt);
    r->reply = xstrdup(x->reply);
    r->rationale = xstrdup(x->rationale);
    r->input_tokens = x->input_tokens;
    r->output_tokens = x->output_tokens;
    r->latency_ms = x->latency_ms;
    r->http_status = x->http_status;
    r->attempts = x->attempts;
    r->status = xstrdup(llm_status_name(x->status));
    r->error = *x->error ? xstrdup(x->error) : NULL;
}

/*
 * cmd_run: `evoeng run` and `evoeng resume`: open the store, start the GPU
 * worker, and hand both to the evolutionary loop. SIGINT/SIGTERM finish
 * the candidate in flight, mark the run interrupted and exit 130; kill -9
 * loses at most the candidates in flight (see evolve.h).
 *
 * With --llm or --llm-cmd the LLM operator (llmop.h) is opened before the
 * GPU worker, so a bad LLM setting is a usage error that costs nothing.
 * A remote provider needs an API key in the environment (EVOENG_API_KEY,
 * else OPENAI_API_KEY / ANTHROPIC_API_KEY); a loopback URL (127.x,
 * localhost, [::1]) may run without one. The key is never written
 * anywhere: runs.config_json records the provider, URL, model, command,
 * mode, rate, concurrency and budget only, and `resume` reads them back.
 *
 * Under mpirun (built with MPI: src/cli/runmpi.h) rank 0 runs this with
 * the agents' GPUs as its evaluator and every other rank serves as an
 * evaluation agent; a lost agent ends the run `interrupted` with
 * EVO_EXIT_LOST.
 */
#include <jansson.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/commands.h"
#include "cli/runctx.h"
#include "compile/nvrtc.h"
#include "config.h"
#include "device.h"
#include "gpu/gpueval.h"
#include "llm/llmop.h"
#include "msg.h"
#include "search/evolve.h"
#include "store/store.h"
#if EVO_HAVE_MPI
#include "cli/runmpi.h"
#endif

static volatile sig_atomic_t stop_flag;
static volatile int stop_int;

static void on_signal(int sig)
{
    (void)sig;
    stop_flag = 1;
    stop_int = 1;
}

static void install_signals(void)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    signal(SIGPIPE, SIG_IGN);
}

/* The run's configuration as stored in runs.config_json. */
static char *config_json(const Settings *s)
{
    json_t *dims = json_object();
    for (int i = 0; i < s->ndims; i++)
        json_object_set_new(dims, s->dims[i].name, json_integer(s->dims[i].value));
    json_t *o = json_pack("{s:s, s:i, s:i, s:i, s:I, s:s, s:f, s:f, s:i, s:o, s:i, s:s?}",
                          "task", s->task ? s->task : RUNCTX_DEFAULT_TASK, "generations", s->generations,
                          "population", s->population, "children", s->children, "seed", (json_int_t)s->seed,
                          "strategy", s->strategy, "revert_threshold", s->revert_threshold,
                          "time_limit_s", s->time_limit_s, "seeds", s->seeds, "dims", dims, "jobs", s->jobs,
                          "source", s->source);
    if (s->no_warm_start)
        json_object_set_new(o, "no_warm_start", json_true());
    if (s->sync)
        json_object_set_new(o, "sync", json_true());
    if (s->in_flight)
        json_object_set_new(o, "in_flight", json_integer(s->in_flight));
    if (s->profile)
        json_object_set_new(o, "profiles", json_string(s->profile));
    if (s->llm || s->llm_cmd)
        json_object_set_new(o, "llm",
                            json_pack("{s:s?, s:s?, s:s?, s:s?, s:s, s:f, s:i, s:i}", "provider", s->llm, "url",
                                      s->llm_url, "model", s->llm_model, "cmd", s->llm_cmd, "mode", s->llm_mode,
                                      "rate", s->llm_rate, "concurrency", s->llm_concurrency, "max_requests",
                                      s->llm_max_requests));
    char *txt = json_dumps(o, JSON_COMPACT | JSON_SORT_KEYS);
    json_decref(o);
    return txt;
}

static char *device_json(const DeviceInfo *d)
{
    json_t *o = json_pack("{s:s, s:s, s:i, s:i, s:i, s:i, s:i, s:I, s:i, s:f, s:f, s:i}", "name", d->name, "arch",
                          d->arch, "cc_major", d->cc_major, "cc_minor", d->cc_minor, "sm_count", d->sm_count,
                          "smem_per_block_optin", d->smem_per_block_optin, "max_threads", d->max_threads,
                          "l2_bytes", (json_int_t)d->l2_bytes, "clock_khz", d->clock_khz, "peak_tflops_fp16",
                          d->peak_tflops_fp16, "peak_gbps", d->peak_gbps, "driver_version", d->driver_version);
    char *txt = json_dumps(o, JSON_COMPACT);
    json_decref(o);
    return txt;
}

/* The strings a resumed run reads back from its configuration (owned
 * here): the LLM settings and the timed profiles. */
typedef struct Saved {
    char *provider, *url, *model, *cmd, *mode;
    char *profiles;
} Saved;

static void saved_free(Saved *l)
{
    free(l->provider);
    free(l->url);
    free(l->model);
    free(l->cmd);
    free(l->mode);
    free(l->profiles);
    memset(l, 0, sizeof(*l));
}

static char *json_strdup(json_t *o, const char *key)
{
    const char *v = json_string_value(json_object_get(o, key));
    return v ? xstrdup(v) : NULL;
}

/* An integer of the stored configuration within [lo, hi] into *out
 * (untouched when absent). -1 with err on a wrong type or range: the
 * store is data, and a value no option could give is refused. */
static int cfg_int(json_t *o, const char *key, long lo, long hi, int *out, EvoErr *err)
{
    json_t *v = json_object_get(o, key);
    if (!v)
        return 0;
    if (!json_is_integer(v) || json_integer_value(v) < lo || json_integer_value(v) > hi)
        return err_set(err, "runs.config_json: \"%s\" must be an integer from %ld to %ld", key, lo, hi);
    *out = (int)json_integer_value(v);
    return 0;
}

static int cfg_real(json_t *o, const char *key, double lo, double hi, double *out, EvoErr *err)
{
    json_t *v = json_object_get(o, key);
    if (!v)
        return 0;
    if (!json_is_number(v) || !(json_number_value(v) >= lo && json_number_value(v) <= hi))
        return err_set(err, "runs.config_json: \"%s\" must be a number from %g to %g", key, lo, hi);
    *out = json_number_value(v);
    return 0;
}

/* The LLM part of a stored configuration: what was given again wins. */
static int llm_from_config(Settings *s, json_t *lo, const Settings *given, Saved *llm, EvoErr *err)
{
    llm->provider = json_strdup(lo, "provider");
    llm->url = json_strdup(lo, "url");
    llm->model = json_strdup(lo, "model");
    llm->cmd = json_strdup(lo, "cmd");
    if (given->llm_cmd) {                  /* a command given again replaces the provider */
        s->llm = NULL;
        s->llm_url = NULL;
    } else {
        s->llm = given->llm ? given->llm : llm->provider;
        s->llm_url = given->llm_url ? given->llm_url : llm->url;
        s->llm_cmd = given->llm ? NULL : llm->cmd;
    }
    s->llm_model = given->llm_model ? given->llm_model : llm->model;
    if ((llm->mode = json_strdup(lo, "mode")))
        s->llm_mode = llm->mode;
    if (cfg_real(lo, "rate", 0, 1, &s->llm_rate, err) || cfg_int(lo, "concurrency", 1, 64, &s->llm_concurrency, err) ||
        cfg_int(lo, "max_requests", 0, 1000000, &s->llm_max_requests, err))
        return -1;
    return 0;
}

/* Apply a stored run's configuration to settings not given again. Every
 * value is checked as the option it stands for would be. Returns 0, or -1
 * with err. */
static int settings_from_config(Settings *s, const char *cfg_json, const Settings *given, Saved *saved, EvoErr *err)
{
    json_t *o = cfg_json ? json_loads(cfg_json, 0, NULL) : NULL;
    if (!json_is_object(o)) {
        json_decref(o);
        return err_set(err, "runs.config_json: not a JSON object");
    }
    int seed = -1, rc = -1;
    json_t *v;
    if ((!given->generations_set && cfg_int(o, "generations", 0, 100000, &s->generations, err)) ||
        cfg_int(o, "population", 1, 10000, &s->population, err) || cfg_int(o, "children", 1, 10000, &s->children, err) ||
        cfg_int(o, "seed", 0, 2147483647, &seed, err) || cfg_real(o, "revert_threshold", 0, 1, &s->revert_threshold, err) ||
        cfg_int(o, "seeds", 3, 64, &s->seeds, err) ||
        (!given->time_limit_set && cfg_real(o, "time_limit_s", 0, 1e9, &s->time_limit_s, err)))
        goto out;
    if (seed >= 0)
        s->seed = (uint64_t)seed;
    s->no_warm_start = json_is_true(json_object_get(o, "no_warm_start"));
    if (!given->sync)
        s->sync = json_is_true(json_object_get(o, "sync"));
    if (!given->in_flight && cfg_int(o, "in_flight", 1, 100000, &s->in_flight, err))
        goto out;
    json_t *lo = json_object_get(o, "llm");
    if (json_is_object(lo) && llm_from_config(s, lo, given, saved, err))
        goto out;
    json_t *pv = json_object_get(o, "profiles");   /* run --profile: checked again when the task loads */
    if (pv && !json_is_string(pv)) {
        err_set(err, "runs.config_json: \"profiles\" must be a string");
        goto out;
    }
    if (pv)
        s->profile = saved->profiles = xstrdup(json_string_value(pv));
    json_t *dims = json_object_get(o, "dims");
    const char *k;
    json_object_foreach(dims, k, v) {
        if (!json_is_integer(v) || strlen(k) >= sizeof(s->dims[0].name)) {
            err_set(err, "runs.config_json: dims.%.64s: expected an integer", k);
            goto out;
        }
        if (s->ndims < CLI_MAX_DIMS) {
            snprintf(s->dims[s->ndims].name, sizeof(s->dims[0].name), "%s", k);
            s->dims[s->ndims++].value = json_integer_value(v);
        }
    }
    rc = 0;
out:
    json_decref(o);
    return rc;
}

/* resume and the store's LLM settings: a store is data, so a command it
 * names is never run, and a URL it names never gets the key, unless it
 * is given again or --trust-store says the store is the user's own. */
static int llm_trusted(const Settings *s, const Settings *given, const Saved *saved, int64_t run, EvoErr *err)
{
    if (given->trust_store)
        return 0;
    if (s->llm_cmd && !given->llm_cmd)
        return err_set(err, "run %lld used --llm-cmd '%.200s': resume does not run a command read from the store; "
                       "give --llm-cmd again, or --trust-store if this store is your own", (long long)run, s->llm_cmd);
    if (s->llm_url && !given->llm_url && saved->url)
        return err_set(err, "run %lld sent its prompts to --llm-url '%.200s': resume does not send them (or an API key) "
                       "to a URL read from the store; give --llm-url again, or --trust-store if this store is your own",
                       (long long)run, s->llm_url);
    return 0;
}

/* Open the LLM operator from --llm* (NULL *out when none is asked for).
 * Returns EVO_EXIT_OK or EVO_EXIT_USAGE (printed). */
static EvoExit open_llm(const Settings *s, LlmOp **out)
{
    *out = NULL;
    if (!s->llm && !s->llm_cmd)
        return EVO_EXIT_OK;
    if (s->llm) {
        const char *prov_env = strcmp(s->llm, "anthropic") == 0 ? "ANTHROPIC_API_KEY" : "OPENAI_API_KEY";
        const char *k1 = getenv("EVOENG_API_KEY"), *k2 = getenv(prov_env);
        if ((!k1 || !*k1) && (!k2 || !*k2) && !(s->llm_url && llm_url_is_loopback(s->llm_url))) {
            errorf("--llm %s: no API key: set EVOENG_API_KEY or %s (a loopback --llm-url such as "
                   "http://127.0.0.1:8000/v1 needs none)", s->llm, prov_env);
            return EVO_EXIT_USAGE;
        }
        if (!s->llm_model) {
            errorf("--llm %s needs --llm-model NAME", s->llm);
            return EVO_EXIT_USAGE;
        }
    }
    int mode = prompt_mode_parse(s->llm_mode ? s->llm_mode : "full");
    if (mode < 0) {
        errorf("--llm-mode: unknown mode '%s' (free, insight, full)", s->llm_mode);
        return EVO_EXIT_USAGE;
    }
    LlmOpConfig c;
    llmop_config_defaults(&c);
    c.mode = (PromptMode)mode;
    c.llm.provider = s->llm ? s->llm : "openai";
    c.llm.url = s->llm_url;
    c.llm.model = s->llm_model;
    c.llm.cmd = s->llm_cmd;
    c.llm.concurrency = s->llm_concurrency;
    c.llm.max_requests = s->llm_max_requests;
    c.llm.insecure = s->llm_insecure;
    EvoErr err;
    if (llmop_open(out, &c, &err)) {
        errorf("%s: %s", s->llm ? "--llm" : "--llm-cmd", err.msg);
        return EVO_EXIT_USAGE;
    }
    return EVO_EXIT_OK;
}

/* The MPI rank lost during the run, or 0. */
static int lost_rank(void)
{
#if EVO_HAVE_MPI
    return runmpi_lost();
#else
    return 0;
#endif
}

/* "2 x " for a run on two GPUs (static storage). */
static const char *gpus_prefix(int n)
{
    static char buf[32];
    snprintf(buf, sizeof(buf), "%d x ", n);
    return buf;
}

/* The pipeline line's last part: what bounded the run's rate (text). */
static void print_bound(const EvolveSummary *m, EvolveBound bound, int cores, const EvolveLoad *l)
{
    double slots = 100 * l->slots_busy, lanes = 100 * l->compile_busy;
    if (bound == EVOLVE_BOUND_GPUS)
        printf("  bound by the GPUs (slots %.0f%% busy): more GPUs (--gpus) would judge more candidates\n", slots);
    else if (bound == EVOLVE_BOUND_COMPILE && m->pipe.lanes >= cores)
        printf("  bound by the host's %d cores (compile threads %.0f%% busy, GPU slots %.0f%%): at %.2f CPU-s a "
               "candidate they compile at most %.0f a minute; more GPUs add little, fewer distinct NVRTC units "
               "would (README: More GPUs)\n",
               cores, lanes, slots, m->evaluated > 0 ? m->cpu_s / m->evaluated : 0.0, l->cap_per_min);
    else if (bound == EVOLVE_BOUND_COMPILE)
        printf("  bound by compilation (%d compile threads %.0f%% busy, GPU slots %.0f%%, %d cores): more threads "
               "(-j) would judge more candidates\n",
               m->pipe.lanes, lanes, slots, cores);
    else if (bound == EVOLVE_BOUND_NEITHER)
        printf("  bound by neither the GPUs (slots %.0f%% busy) nor compilation (%.0f%%): a short run's warm-up, "
               "the proposals or --sync's barriers\n",
               slots, lanes);
}

/* The pipeline's figures after a run: a line of text, or with --json one
 * object {"event": "summary", ...} (README, JSON output). */
static void print_pipeline(const EvolveSummary *m, int sync, int json)
{
    double min = m->wall_ms / 60000.0, n = m->evaluated > 0 ? m->evaluated : 1;
    double wall_s = m->wall_ms / 1000.0;
    int cores = device_cores();
    EvolveLoad load;
    EvolveBound bound = evolve_bound(m, cores, &load);
    if (json) {
        json_t *busy = json_array();
        for (int i = 0; i < m->slots && i < 8; i++)
            json_array_append_new(busy, json_real(wall_s > 0 ? m->slot_busy_s[i] / wall_s : 0));
        json_t *o = json_pack("{s:I, s:s, s:s, s:i, s:f, s:f, s:I, s:f, s:f, s:i, s:i, s:o, s:f, s:f, s:f, s:f, s:i, s:f, "
                              "s:i, s:i, s:f, s:{s:I, s:I, s:I, s:I}, s:I}",
                              "run", (json_int_t)m->run_id, "event", "summary", "mode", sync ? "sync" : "steady",
                              "evaluated", m->evaluated, "wall_s", wall_s,
                              "candidates_per_min", min > 0 ? m->evaluated / min : 0.0, "best_id",
                              (json_int_t)m->best_id, "best_latency_us", isnan(m->best_latency_us) ? 0.0 : m->best_latency_us,
                              "baseline_latency_us", m->baseline_latency_us, "in_flight", m->in_flight, "slots",
                              m->slots, "slot_busy", busy, "cpu_s", m->cpu_s, "cpu_s_per_candidate",
                              m->cpu_s / n, "nvrtc_cpu_s", m->nvrtc_cpu_s, "nvrtc_wall_s", m->nvrtc_wall_s,
                              "nvrtc_units", m->nvrtc_units,
                              "nvrtc_units_per_candidate", m->nvrtc_units / n, "cache_hits", m->cache_hits,
                              "compile_lanes", m->pipe.lanes, "compile_busy", load.compile_busy, "units", "now",
                              (json_int_t)m->pipe.units_now, "next", (json_int_t)m->pipe.units_next, "spec",
                              (json_int_t)m->pipe.units_spec, "cancelled", (json_int_t)m->pipe.units_cancelled,
                              "taken_over", (json_int_t)m->pipe.taken_over);
        json_object_set_new(o, "dropped", json_integer(m->dropped));
        json_object_set_new(o, "held_s", json_real(m->held_s));
        json_object_set_new(o, "bound", json_string(evolve_bound_name(bound)));
        json_object_set_new(o, "cores", json_integer(cores));
        json_object_set_new(o, "core_cap_per_min", json_real(load.cap_per_min));
        char *txt = json_dumps(o, JSON_COMPACT);
        printf("%s\n", txt);
        free(txt);
        json_decref(o);
        return;
    }
    printf("pipeline (%s): %.1f candidates / min", sync ? "generation-synchronous" : "steady state",
           min > 0 ? m->evaluated / min : 0.0);
    if (!sync)
        printf(", %d in flight", m->in_flight);
    if (!sync && m->held_s > 0)
        printf(" (tapered off over the last %.1f s to what could still be judged)", m->held_s);
    if (!sync && m->dropped > 0)
        printf(", %d dropped unjudged at the end", m->dropped);
    for (int i = 0; i < m->slots && i < 8; i++)
        printf("%s GPU slot %d busy %.0f%%", i ? "," : ";", i, wall_s > 0 ? 100 * m->slot_busy_s[i] / wall_s : 0);
    printf("\n  compile: %d threads busy %.0f%%, %d NVRTC units (%.2f a candidate, %.2f CPU-s and %.2f s "
           "in NVRTC each; by priority: "
           "%ld for a waiting GPU or stage B, %ld next, %ld speculative, %ld cancelled), %d cache hits; evoeng %.2f "
           "CPU-s a candidate\n",
           m->pipe.lanes, 100 * load.compile_busy, m->nvrtc_units, m->nvrtc_units / n,
           m->nvrtc_units ? m->nvrtc_cpu_s / m->nvrtc_units : 0.0,
           m->nvrtc_units ? m->nvrtc_wall_s / m->nvrtc_units : 0.0, m->pipe.units_now, m->pipe.units_next,
           m->pipe.units_spec, m->pipe.units_cancelled, m->cache_hits, m->cpu_s / n);
    print_bound(m, bound, cores, &load);
    if (m->pipe.taken_over > 0)
        printf("  MPI: %ld children judged by an agent of their home's compile cache, their home's GPUs busy\n",
               m->pipe.taken_over);
}

/* Start the GPU workers (gpueval_open) with a message for the user.
 * Returns EVO_EXIT_OK with *ge, or the exit code after an error message. */
static EvoExit open_gpu(const Settings *s, Task *task, const GpuEvalOptions *go, int64_t resume_id, GpuEval **ge)
{
    EvoErr err;
    int nogpu = 0;
    if (!s->quiet && !s->json)
        fprintf(stderr, "evoeng: starting the GPU worker and compiling the reference...\n");
    if (gpueval_open(ge, task, go, &nogpu, &err)) {
        if (nogpu) {
            errorf("'%s' needs a CUDA GPU and none is usable: %s", resume_id ? "resume" : "run", err.msg);
            errorf("(commands that need no GPU: check, status, top, lineage, show, export)");
            return EVO_EXIT_NO_GPU;
        }
        errorf("%s", err.msg);
        return EVO_EXIT_TASK;
    }
    return EVO_EXIT_OK;
}

/* The run's first line: what is optimized, on which GPUs, how. */
static void print_start(const Settings *s, const Task *task, const DeviceInfo *dev, int nslots, GpuEval *ge,
                        int64_t resume_id, const char *strategy)
{
    out_printf("%s %s on %s%s (%s, %d SMs): population %d, %d children per generation, %s%d generations, seed "
               "%llu\n",
               resume_id ? "resuming" : "optimizing", task_name(task),
               nslots > 1 ? gpus_prefix(nslots) : "", dev->name, dev->arch, dev->sm_count,
               s->population, s->children, strcmp(strategy, "exhaustive") == 0 ? "exhaustive, not " : "",
               s->generations, (unsigned long long)s->seed);
    if (ge && gpueval_slots(ge) > 1)
        for (int w = 0; w < gpueval_slots(ge); w++) {
            const DeviceInfo *d = gpueval_slot_device(ge, w);
            printf("  GPU %d: %s %s%s%s\n", d->ordinal, d->name, d->uuid, d->pci_bus_id[0] ? " at " : "",
                   d->pci_bus_id);
        }
}

/* The text summary of a finished run and what to do next. */
static void print_finish(const Settings *s, const EvolveSummary *sum, LlmOp *llm)
{
    if (llm)
        printf("\nLLM (%s mode): %d requests, %d children evaluated, %d accepted; see 'evoeng status'\n",
               prompt_mode_name(llmop_mode(llm)), sum->llm_requests, sum->llm_children, sum->llm_accepted);
    printf("\nrun %lld %s: %d evaluated, %d valid, %d reverted, %d failed, %.1f s\n", (long long)sum->run_id,
           sum->time_limited ? "stopped at the time limit" : sum->interrupted ? "stopped early" : "finished",
           sum->evaluated, sum->valid, sum->reverted, sum->failed, sum->wall_ms / 1000);
    if (sum->space_exhausted)
        printf("the valid space is exhausted: every valid configuration was evaluated\n");
    if (sum->ahead_judged)
        printf("judged ahead: %d children through stage A while the GPU waited for stage B, %d of them then "
               "proposed by their generation\n",
               sum->ahead_judged, sum->ahead_used);
    if (sum->best_id)
        printf("best: candidate %lld, %.2f us, %.2fx over the baseline (%.2f us)\n", (long long)sum->best_id,
               sum->best_latency_us, sum->baseline_latency_us / sum->best_latency_us, sum->baseline_latency_us);
    printf("next: evoeng top --db %s | evoeng lineage %lld --db %s | evoeng export --best -o best.cu --db %s\n",
           s->db, (long long)sum->best_id, s->db, s->db);
    printf("report: evoeng report %lld --db %s -o report-%lld.html\n", (long long)sum->run_id, s->db, (long long)sum->run_id);
    if (sum->interrupted)
        printf("continue with: evoeng resume %lld --db %s\n", (long long)sum->run_id, s->db);
}

static EvoExit run_common(Settings *s, int64_t resume_id, const char *strategy)
{
    EvoErr err;
    Task *task = NULL;
    Store *st = NULL;
    GpuEval *ge = NULL;
    LlmOp *llm = NULL;
    char *cfg = NULL, *devj = NULL, *src = NULL, *task_abs = NULL;
    if (bench_env_check(&err)) {
        errorf("%s", err.msg);
        return EVO_EXIT_USAGE;
    }
    EvoExit rc = open_llm(s, &llm);
    if (rc != EVO_EXIT_OK)
        return rc;
    out_init(s->wide);   /* progress lines fit the terminal (msg.h, out_init) */
    if ((rc = runctx_load_task(s, &task)) != EVO_EXIT_OK)
        goto out;
    if (s->source && file_read(s->source, &src, NULL, &err)) {
        errorf("--source: %s", err.msg);
        rc = EVO_EXIT_USAGE;
        goto out;
    }
    /* one process at a time per run: a resumed run's lock is taken before
     * the GPU starts, so a held run is named at once (a new run's lock comes
     * with its row, below) */
    if (resume_id && (store_open(&st, s->db, &err) || store_lock_run(st, resume_id, &err))) {
        errorf("%s", err.msg);
        rc = EVO_EXIT_DB;
        goto out;
    }
    runctx_set_cache(s);
    GpuEvalOptions go = {.jobs = s->jobs, .verbose = s->verbose, .devices = s->gpus, .ndevices = s->ngpus,
                         .count = s->gpus_count};
    gate_options_default(&go.gate);
    go.gate.nseeds = s->seeds;
    bench_options_default(&go.bench);
    go.bench.seed = s->seed;
    const EvaluatorOps *ops = &gpueval_ops;
    void *ev_ctx = NULL;
    const DeviceInfo *dev = NULL;
    /* the spec actually loaded, absolute: resume and export find it from anywhere */
    task_abs = path_absolute(task_path(task));
    int nslots = 1;
#if EVO_HAVE_MPI
    if (runmpi_active()) {
        if (!s->quiet && !s->json)
            fprintf(stderr, "evoeng: MPI: waiting for the agent ranks to start their GPU workers...\n");
        if ((rc = runmpi_start(s, task, task_abs, &ops, &ev_ctx, &dev, s->quiet || s->json)) != EVO_EXIT_OK)
            goto out;
        nslots = ops->slots(ev_ctx);
    }
#endif
    if (!dev && (rc = open_gpu(s, task, &go, resume_id, &ge)) != EVO_EXIT_OK)
        goto out;
    if (!dev) {
        ev_ctx = ge;
        dev = gpueval_device(ge);
        nslots = gpueval_slots(ge);
    }
    /* only now: a new run that cannot start leaves no store and no folder */
    if (!st && store_open(&st, s->db, &err)) {
        errorf("%s", err.msg);
        rc = EVO_EXIT_DB;
        goto out;
    }
    cfg = config_json(s);
    devj = device_json(dev);
    char nv[32], drv[32];
    int v = nvrtc_version();
    snprintf(nv, sizeof(nv), "%d.%d", v / 1000, (v % 1000) / 10);
    snprintf(drv, sizeof(drv), "%d.%d", dev->driver_version / 1000, (dev->driver_version % 1000) / 10);
    EvolveConfig ec = {
        .generations = s->generations, .population = s->population, .children = s->children,
        .seed = s->seed, .strategy = strategy, .time_limit_s = s->time_limit_s,
        .revert_threshold = s->revert_threshold, .quiet = s->quiet, .json = s->json, .config_json = cfg,
        .task_path = task_abs, .baseline_source = src,
        .device_name = dev->name, .device_arch = dev->arch, .device_json = devj, .nvrtc_version = nv,
        .driver_version = drv, .stop = &stop_int, .llm = llm, .llm_rate = s->llm_rate,
        .no_warm_start = s->no_warm_start, .sync = s->sync, .in_flight = s->in_flight,
    };
    if (!s->quiet && !s->json)
        print_start(s, task, dev, nslots, ge, resume_id, strategy);
    install_signals();
    EvolveSummary sum;
    int fail = evolve_run(st, task, dev, ops, ev_ctx, &ec, resume_id, &sum, &err);
    int lost = lost_rank();
    EvoExit stopped = lost ? EVO_EXIT_LOST : stop_flag ? EVO_EXIT_INTERRUPT : EVO_EXIT_OK;
    if (lost && sum.run_id)
        errorf("run %lld is interrupted: MPI rank %d was lost; continue with: evoeng resume %lld --db %s "
               "(on fewer ranks, or without mpirun)", (long long)sum.run_id, lost, (long long)sum.run_id, s->db);
    if (fail) {
        errorf("%s", err.msg);
        if (sum.run_id)
            errorf("run %lld is recorded in %s; what was committed is kept", (long long)sum.run_id, s->db);
        rc = stopped != EVO_EXIT_OK ? stopped : EVO_EXIT_FAIL;
        goto out;
    }
    if (!s->quiet && !s->json)
        print_finish(s, &sum, llm);
    if (!s->quiet)
        print_pipeline(&sum, s->sync, s->json);
    rc = stopped;
out:
    gpueval_close(&ge);
    llmop_close(&llm);
    store_close(&st);
    task_free(&task);
    free(cfg);
    free(devj);
    free(task_abs);
    free(src);
    return rc;
}

/* Under mpirun: an agent rank serves here and returns 1 with *rc; rank 0
 * and a single-host run return 0. */
static int mpi_enter(const Settings *s, EvoExit *rc)
{
#if EVO_HAVE_MPI
    return runmpi_enter(s, &stop_int, rc);
#else
    (void)s;
    (void)rc;
    return 0;
#endif
}

static void mpi_leave(void)
{
#if EVO_HAVE_MPI
    runmpi_leave();
#endif
}

EvoExit cmd_run(const Settings *s)
{
    EvoExit rc;
    if (mpi_enter(s, &rc))
        return rc;
    Settings copy = *s;
    rc = run_common(&copy, 0, s->strategy);
    mpi_leave();
    return rc;
}

static EvoExit resume_common(const Settings *s);

EvoExit cmd_resume(const Settings *s)
{
    EvoExit rc;
    if (mpi_enter(s, &rc))
        return rc;
    rc = resume_common(s);
    mpi_leave();
    return rc;
}

static EvoExit resume_common(const Settings *s)
{
    EvoErr err;
    Store *st = NULL;
    if (store_open_readonly(&st, s->db, &err)) {     /* a mistyped --db creates nothing */
        errorf("%s", err.msg);
        return EVO_EXIT_DB;
    }
    RunRecord r;
    int got = store_run_get(st, s->id, &r, &err);
    store_close(&st);
    if (got <= 0) {
        if (got < 0)
            errorf("%s", err.msg);
        else
            errorf("%s: no run %s%lld to resume", s->db, s->id ? "" : "(latest) ", (long long)s->id);
        return got < 0 ? EVO_EXIT_DB : EVO_EXIT_FAIL;
    }
    if (r.status && strcmp(r.status, "completed") == 0 && s->generations <= r.generations_done - 1) {
        printf("run %lld is already complete (%lld generations); nothing to do\n", (long long)r.id,
               (long long)r.generations_done);
        run_record_free(&r);
        return EVO_EXIT_OK;
    }
    Settings copy = *s;
    Saved saved = {0};
    if (settings_from_config(&copy, r.config_json, s, &saved, &err) || llm_trusted(&copy, s, &saved, r.id, &err)) {
        errorf("%s", err.msg);
        EvoExit bad = strncmp(err.msg, "runs.", 5) == 0 ? EVO_EXIT_DB : EVO_EXIT_USAGE;
        saved_free(&saved);
        run_record_free(&r);
        return bad;
    }
    if (!copy.task)
        copy.task = r.task_path;
    char *strategy = xstrdup(r.strategy);
    char *task_path_copy = xstrdup(r.task_path);
    if (copy.task == r.task_path)
        copy.task = task_path_copy;
    int64_t id = r.id;
    run_record_free(&r);
    EvoExit rc = run_common(&copy, id, strategy);
    saved_free(&saved);
    free(strategy);
    free(task_path_copy);
    return rc;
}

/*
 * cli: table-driven parsing of evoeng's command line. See cli.h.
 */
#include "cli/cli.h"

#include <getopt.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define BIT(c) (1u << (c))
#define C_ALL  0xffffffffu
#define C_INSPECT (BIT(CMD_STATUS) | BIT(CMD_TOP) | BIT(CMD_LINEAGE) | BIT(CMD_SHOW) | BIT(CMD_EXPORT))
#define C_EVAL (BIT(CMD_RUN) | BIT(CMD_RESUME) | BIT(CMD_CHECK) | BIT(CMD_BENCH))

typedef struct CmdInfo {
    CmdId       id;
    const char *name;
    const char *synopsis;   /* after "evoeng NAME " */
    const char *summary;    /* one line for the global help */
    const char *details;    /* paragraph for the command's help */
    int         positional; /* 0 none, 1 optional ID, 2 required ID, 3 optional TASK, 4 required FILE */
} CmdInfo;

static const CmdInfo commands[] = {
    {CMD_RUN, "run", "[--task PATH] [--source FILE.cu] [--generations N] [options]",
     "optimize a task: generations of candidates, judged and recorded",
     "Runs the evolutionary search on a task (default: templates/attention/task.json) and records every\n"
     "candidate in the population store. Needs a CUDA GPU. Progress goes to stderr; Ctrl-C stops\n"
     "cleanly, and `evoeng resume` continues. By default the loop is steady-state: children are\n"
     "proposed from the population as it stands and judged on whichever GPU is free, with no\n"
     "barrier between generations; --sync runs generation by generation, reproducibly per seed.", 0},
    {CMD_RESUME, "resume", "[RUN_ID] [options]",
     "continue an interrupted run",
     "Continues a run (default: the most recent one) from what the store holds. Nothing committed is\n"
     "evaluated again. A run stopped at its --time-limit (status time_limit) gets the same limit again,\n"
     "counted from the resume, unless --time-limit is given (--time-limit 0: none).", 1},
    {CMD_STATUS, "status", "[RUN_ID] [--json]",
     "a run's configuration, counts by status and best candidate",
     "Shows a run (default: the most recent one): its task, configuration, device, counts of candidates\n"
     "by status and decision, the best candidate, and LLM validity rates per mode.", 1},
    {CMD_TOP, "top", "[-n N] [RUN_ID] [--json]",
     "the fastest candidates",
     "Lists the fastest surviving candidates (baseline and accepted, gated on every shape) with their\n"
     "parameters, latency, speedup over the baseline, CTAs and occupancy.", 1},
    {CMD_LINEAGE, "lineage", "ID | --best [--run N] [--json]",
     "the chain of ancestors of a candidate",
     "Shows candidate ID's ancestors back to the baseline: operator, parameter changes and speedup at\n"
     "each step. --best: the best candidate (gated on every shape) of the latest run, or of --run N.", 2},
    {CMD_SHOW, "show", "ID | --best [--run N] [--json]",
     "everything about one candidate",
     "Shows one candidate: parameters, status, decision, how far its gate went (the benchmark shape\n"
     "only, or every shape), gate result, timings, launch metrics, compile log and evaluation log.\n"
     "--best: the best candidate (gated on every shape) of the latest run, or of --run N.", 2},
    {CMD_EXPORT, "export", "[ID | --best] [-o FILE.cu] [--format cu|json|harness]",
     "write a candidate as a standalone .cu file",
     "Writes a candidate's kernel with its parameters baked in and a provenance header (task, params,\n"
     "device, latency, speedup, date, lineage, nvcc target). It compiles with the nvcc line its header\n"
     "gives, unchanged. Only a candidate gated on every shape is exported; any other exits 1.\n"
     "--format harness writes a standalone program instead: the kernel, the task's reference and a\n"
     "main() that fills the inputs as the gate does, checks the outputs against the reference (PASS or\n"
     "FAIL, exit 1) and times the launch plan with CUDA events; its header gives the nvcc line that\n"
     "builds it. It needs the run's task file (exit 3 without it).", 1},
    {CMD_CHECK, "check", "TASK [--arch sm_90] [--params K=V,...] [--sample N] [--source FILE.cu] [--gpu] [--json]",
     "validate a task spec and compile configurations (no GPU needed)",
     "Validates TASK, prints the size of its parameter space before and after constraints, then\n"
     "compiles the default configuration (or --params) and N random valid ones in parallel and\n"
     "prints a table.\n"
     "With --gpu, each one also goes through the correctness gate on the GPU (every shape, every\n"
     "seed): a correctness sweep of the space. Exits 1 if any configuration fails to compile (or,\n"
     "with --gpu, the gate): \"N of M configurations failed\" and the first error of each kind; -v\n"
     "prints every failed configuration's compiler errors.\n"
     "With --source, FILE.cu (a kernel file as it is) is compiled in place of the task's template:\n"
     "the static gate checks that it compiles for --arch and defines every entry.", 3},
    {CMD_BENCH, "bench", "TASK [--params K=V,...] [--source FILE.cu] [--against K=V,...] [--repeat N] [--profile NAME[,NAME]] [--cold] [--json]",
     "gate and time one configuration on the GPU",
     "Evaluates one configuration of TASK (default parameters unless --params), or an outside kernel\n"
     "with the same entry points (--source): the correctness gate, timing and launch metrics.\n"
     "--against adds one interleaved A/B comparison (this/against), the one a run uses to decide.\n"
     "--repeat N makes N independent comparisons and reports each ratio, the median, the 95th\n"
     "percentile and the max of |ratio - 1|, and how many the run's revert rule would revert\n"
     "(--revert-threshold, default 0.02). Without --against the configuration is compared with\n"
     "itself (an A/A test: every revert is a false one, and the timing passes at p95 <= 0.5% and\n"
     "no revert). With --json, --repeat prints one JSON object. Progress goes to stderr.\n"
     "The gate runs every input profile of the task; timing and the A/B run each timing profile\n"
     "(interleaved in one comparison) and print each one's figures; --profile NAME[,NAME] times\n"
     "those profiles only.", 3},
    {CMD_RUNS, "runs", "[--json] [--wide]",
     "list the runs in the store",
     "Lists every run of the store, oldest first: id, start time, status (running, completed,\n"
     "interrupted, time_limit, failed), task, device, benchmark shape, generations done, candidates\n"
     "and the best latency (of a candidate gated on every shape).", 0},
    {CMD_REPORT, "report", "[RUN_ID] [-o FILE.html] [-n N] [--json]",
     "write a self-contained HTML report of a run",
     "Writes one HTML page about a run (default: the most recent one): convergence over generations and\n"
     "wall time, the lineage of the best candidate, the top N, per-knob effects, failures by status, LLM\n"
     "rates per mode, and the run's device, configuration and noise figures. Inline SVG, no script,\n"
     "nothing loaded from the network. Default output: report-RUN_ID.html in the current directory;\n"
     "-o - writes it to stdout. With --json, prints {\"path\", \"run_id\", \"bytes\", ...}.", 1},
    {CMD_INIT, "init", "KERNEL.cu [-o task.json] [--json]",
     "write a starting task spec from a kernel file",
     "Reads a kernel file as it is (template kernels, namespaces, host launchers, host includes) and\n"
     "writes a starting task.json from what it says: its host launcher's launches (the instantiation,\n"
     "dim3 grid and block, arguments, dims from its integer parameters), its #define knobs as params\n"
     "with value lists around their defaults, buffers from pointer parameters, and constraints from the\n"
     "static_asserts, __launch_bounds__ and __shared__ arrays, so that what cannot compile is ruled out.\n"
     "The reference kernel is left as a \"TODO\" (without a launcher, every open choice is one);\n"
     "`evoeng check` refuses the spec and names the next TODO until none is left. Writes stdout unless\n"
     "-o; never overwrites a file. --json prints what it wrote.", 4},
};

enum {
    O_HELP = 'h', O_QUIET = 'q', O_VERBOSE = 'v', O_N = 'n', O_OUTPUT = 'o', O_JOBS = 'j',
    O_VERSION = 256, O_DB, O_TASK, O_ARCH, O_GENERATIONS, O_POPULATION, O_CHILDREN, O_SEED,
    O_STRATEGY, O_TIME_LIMIT, O_REVERT, O_DIM, O_JSON, O_BEST, O_FORMAT, O_SAMPLE, O_PARAMS,
    O_SOURCE, O_COLD, O_AGAINST, O_REPEAT, O_SHARED, O_GPU, O_SEEDS, O_LLM, O_LLM_URL, O_LLM_MODEL, O_LLM_CMD, O_LLM_MODE, O_LLM_RATE,
    O_LLM_CONC, O_LLM_MAX, O_GPUS, O_NO_WARM,
    O_WIDE, O_RUN, O_SYNC, O_IN_FLIGHT, O_PROFILE, O_ALLOW_PATH, O_FORCE, O_TRUST_STORE, O_LLM_INSECURE,
};

typedef struct OptInfo {
    const char *name;
    int         has_arg;
    int         id;
    unsigned    cmds;     /* commands that accept it */
    const char *argname;
    const char *help;
} OptInfo;

static const OptInfo options[] = {
    {"help", no_argument, O_HELP, C_ALL, NULL, "show this help and exit"},
    {"quiet", no_argument, O_QUIET, C_ALL, NULL, "print errors only"},
    {"verbose", no_argument, O_VERBOSE, C_ALL, NULL, "print more detail"},
    {"db", required_argument, O_DB, C_ALL & ~BIT(CMD_CHECK), "PATH", "population store (default population/population.db)"},
    {"task", required_argument, O_TASK, C_EVAL, "PATH", "task spec (default templates/attention/task.json)"},
    {"arch", required_argument, O_ARCH, BIT(CMD_CHECK), "sm_XY", "target architecture without a GPU (default sm_90)"},
    {"dim", required_argument, O_DIM, C_EVAL & ~BIT(CMD_RESUME), "NAME=V", "override a dimension of the benchmark shape (repeatable)"},
    {"generations", required_argument, O_GENERATIONS, BIT(CMD_RUN) | BIT(CMD_RESUME), "N", "generations after generation 0 (default 20)"},
    {"population", required_argument, O_POPULATION, BIT(CMD_RUN), "P", "population size (default 8)"},
    {"children", required_argument, O_CHILDREN, BIT(CMD_RUN), "C", "children per generation (default 8)"},
    {"seed", required_argument, O_SEED, BIT(CMD_RUN) | BIT(CMD_CHECK) | BIT(CMD_BENCH), "S", "random seed (default 1)"},
    {"strategy", required_argument, O_STRATEGY, BIT(CMD_RUN), "NAME", "evolve | model | random | exhaustive (default evolve); model: a surrogate ranks many proposals"},
    {"no-warm-start", no_argument, O_NO_WARM, BIT(CMD_RUN), NULL, "do not seed generation 0 with the best of earlier runs of the task on this device"},
    {"sync", no_argument, O_SYNC, BIT(CMD_RUN) | BIT(CMD_RESUME), NULL, "generation-synchronous mode: a barrier after each generation, the same children for the same seed (replay, exact reproduction); default: steady state"},
    {"in-flight", required_argument, O_IN_FLIGHT, BIT(CMD_RUN) | BIT(CMD_RESUME), "N", "steady state: children kept in flight (default 2 x compile threads + 4 x GPUs)"},
    {"time-limit", required_argument, O_TIME_LIMIT, BIT(CMD_RUN) | BIT(CMD_RESUME), "T", "stop after T seconds (suffix s, m or h; 0: no limit); the run is marked time_limit; near the end the children in flight taper off to what can still be judged"},
    {"revert-threshold", required_argument, O_REVERT, BIT(CMD_RUN) | BIT(CMD_BENCH), "F", "revert a child more than F slower than its parent (default 0.02)"},
    {"jobs", required_argument, O_JOBS, C_EVAL, "N", "compile threads (default: one per core)"},
    {"seeds", required_argument, O_SEEDS, C_EVAL & ~BIT(CMD_RESUME), "N", "input seeds for the correctness gate (default 3, at least 3)"},
    {"gpus", required_argument, O_GPUS, C_EVAL, "all|N|LIST", "GPUs to judge on, one worker each: all, the first N, or ordinals like 0,2 (one: 3,); default the first"},
    {"json", no_argument, O_JSON, C_ALL, NULL, "machine-readable output, errors included (README.md, JSON output)"},
    {"best", no_argument, O_BEST, BIT(CMD_EXPORT), NULL, "export the best candidate of the latest run"},
    {"best", no_argument, O_BEST, BIT(CMD_LINEAGE) | BIT(CMD_SHOW), NULL, "the best candidate (gated on every shape) of the latest run or --run"},
    {"run", required_argument, O_RUN, BIT(CMD_LINEAGE) | BIT(CMD_SHOW), "N", "with --best: the best of run N instead of the latest"},
    {"wide", no_argument, O_WIDE, BIT(CMD_STATUS) | BIT(CMD_TOP) | BIT(CMD_LINEAGE) | BIT(CMD_SHOW) | BIT(CMD_RUNS) | BIT(CMD_RUN) | BIT(CMD_RESUME), NULL, "full lines: no cut to the terminal width"},
    {"output", required_argument, O_OUTPUT, BIT(CMD_EXPORT) | BIT(CMD_REPORT) | BIT(CMD_INIT), "FILE", "output file (export, init: default stdout; report: default report-RUN_ID.html, - for stdout)"},
    {"format", required_argument, O_FORMAT, BIT(CMD_EXPORT), "FMT", "cu | json | harness (default cu)"},
    {"sample", required_argument, O_SAMPLE, BIT(CMD_CHECK), "N", "random valid configurations to compile (default 8)"},
    {"gpu", no_argument, O_GPU, BIT(CMD_CHECK), NULL, "also run the correctness gate of each on the GPU (a sweep)"},
    {"params", required_argument, O_PARAMS, BIT(CMD_BENCH) | BIT(CMD_CHECK), "K=V,...", "parameters (the rest keep their defaults)"},
    {"source", required_argument, O_SOURCE, BIT(CMD_BENCH) | BIT(CMD_RUN) | BIT(CMD_CHECK), "FILE.cu", "an outside kernel with the task's entry points (run: as the baseline and template; check: compiled in place of the template)"},
    {"cold", no_argument, O_COLD, BIT(CMD_BENCH), NULL, "flush L2 before each timed launch"},
    {"against", required_argument, O_AGAINST, BIT(CMD_BENCH), "K=V,...", "also time these params, and compare them by interleaved A/B"},
    {"repeat", required_argument, O_REPEAT, BIT(CMD_BENCH), "N", "N independent A/B comparisons (A/A without --against)"},
    {"profile", required_argument, O_PROFILE, BIT(CMD_RUN) | BIT(CMD_BENCH), "NAME[,NAME]", "time and compare on these input profiles only, any of the task's (default: its timing ones); the gate still runs every profile; resume keeps a run's"},
    {"shared", required_argument, O_SHARED, BIT(CMD_BENCH), "0|1", "A/B sides on the same buffers (1, the default) or each on its own (0)"},
    {"llm", required_argument, O_LLM, BIT(CMD_RUN), "PROVIDER", "openai | anthropic: add LLM-proposed children"},
    {"llm", required_argument, O_LLM, BIT(CMD_RESUME), "PROVIDER", "the LLM provider again (else the run's own)"},
    {"llm-url", required_argument, O_LLM_URL, BIT(CMD_RUN), "URL", "endpoint of the LLM provider (http:// only to loopback, unless --llm-insecure)"},
    {"llm-url", required_argument, O_LLM_URL, BIT(CMD_RESUME), "URL", "the endpoint again: resume sends the key to a URL read from the store only with --trust-store"},
    {"llm-model", required_argument, O_LLM_MODEL, BIT(CMD_RUN) | BIT(CMD_RESUME), "NAME", "model name"},
    {"llm-cmd", required_argument, O_LLM_CMD, BIT(CMD_RUN), "CMD", "pipe prompts to a local program instead of HTTP"},
    {"llm-cmd", required_argument, O_LLM_CMD, BIT(CMD_RESUME), "CMD", "the LLM command again: resume never runs a command read from the store (see --trust-store)"},
    {"llm-insecure", no_argument, O_LLM_INSECURE, BIT(CMD_RUN) | BIT(CMD_RESUME), NULL, "allow an http:// --llm-url to a host not on loopback (the API key travels in clear)"},
    {"trust-store", no_argument, O_TRUST_STORE, BIT(CMD_RESUME), NULL, "the store is yours: run the LLM command and use the LLM URL it names"},
    {"allow-path", required_argument, O_ALLOW_PATH, C_EVAL | BIT(CMD_EXPORT), "DIR", "a task spec may also read files under DIR (repeatable; default: only its own directory)"},
    {"force", no_argument, O_FORCE, BIT(CMD_EXPORT) | BIT(CMD_REPORT), NULL, "-o may replace a symbolic link (the link itself, never what it points to)"},
    {"llm-mode", required_argument, O_LLM_MODE, BIT(CMD_RUN), "MODE", "free | insight | full (default full)"},
    {"llm-rate", required_argument, O_LLM_RATE, BIT(CMD_RUN), "R", "fraction of children proposed by the LLM (default 0.25)"},
    {"llm-concurrency", required_argument, O_LLM_CONC, BIT(CMD_RUN), "N", "LLM requests in flight (default 4)"},
    {"llm-max-requests", required_argument, O_LLM_MAX, BIT(CMD_RUN), "N", "request budget for the run (default 100)"},
    {"version", no_argument, O_VERSION, 0, NULL, NULL},
    {"n", required_argument, O_N, BIT(CMD_TOP) | BIT(CMD_REPORT), "N", "how many (default 10; report: rows of its top table)"},
};

static const struct {
    const char *name;
    const char *const *values;
} choices[] = {
    {"strategy", (const char *const[]){"evolve", "model", "random", "exhaustive", NULL}},
    {"format", (const char *const[]){"cu", "json", "harness", NULL}},
    {"llm", (const char *const[]){"openai", "anthropic", NULL}},
    {"llm-mode", (const char *const[]){"free", "insight", "full", NULL}},
};

void cli_defaults(Settings *s)
{
    memset(s, 0, sizeof(*s));
    s->db = "population/population.db";
    s->generations = 20;
    s->population = 8;
    s->children = 8;
    s->seed = 1;
    s->strategy = "evolve";
    s->revert_threshold = 0.02;
    s->top_n = 10;
    s->format = "cu";
    s->sample = 8;
    s->seeds = 3;
    s->llm_mode = "full";
    s->llm_rate = 0.25;
    s->llm_concurrency = 4;
    s->llm_max_requests = 100;
    s->shared = -1;
    s->id = 0;
}

const char *cli_command_name(CmdId cmd)
{
    for (size_t i = 0; i < EVO_ARRAY_LEN(commands); i++)
        if (commands[i].id == cmd)
            return commands[i].name;
    return NULL;
}

static const CmdInfo *find_command(CmdId cmd)
{
    for (size_t i = 0; i < EVO_ARRAY_LEN(commands); i++)
        if (commands[i].id == cmd)
            return &commands[i];
    return NULL;
}

static const OptInfo *find_option(int id)
{
    for (size_t i = 0; i < EVO_ARRAY_LEN(options); i++)
        if (options[i].id == id)
            return &options[i];
    return NULL;
}

/* The entry of option id for cmd: an option may have one entry per group
 * of commands (its own help text for each); else the first entry. */
static const OptInfo *find_option_for(int id, CmdId cmd)
{
    for (size_t i = 0; i < EVO_ARRAY_LEN(options); i++)
        if (options[i].id == id && (options[i].cmds & BIT(cmd)))
            return &options[i];
    return find_option(id);
}

static int check_choice(const char *opt, const char *val, EvoErr *err)
{
    for (size_t i = 0; i < EVO_ARRAY_LEN(choices); i++) {
        if (strcmp(choices[i].name, opt) != 0)
            continue;
        StrBuf sb = {0};
        for (const char *const *v = choices[i].values; *v; v++) {
            if (strcmp(*v, val) == 0) {
                sb_free(&sb);
                return 0;
            }
            sb_printf(&sb, "%s%s", v == choices[i].values ? "" : ", ", *v);
        }
        err_set(err, "--%s: unknown value '%s' (expected one of: %s)", opt, val, sb.s);
        sb_free(&sb);
        return -1;
    }
    return 0;
}

static int int_arg(const char *opt, const char *val, long min, long max, int *out, EvoErr *err)
{
    long v;
    if (parse_long(val, min, max, &v))
        return err_set(err, "%s: expected an integer from %ld to %ld, got '%s'", opt, min, max, val);
    *out = (int)v;
    return 0;
}

static int real_arg(const char *opt, const char *val, double min, double max, double *out, EvoErr *err)
{
    double v;
    if (parse_double(val, &v) || v < min || v > max)
        return err_set(err, "%s: expected a number from %g to %g, got '%s'", opt, min, max, val);
    *out = v;
    return 0;
}

/* "90", "90s", "15m", "2h" -> seconds */
static int duration_arg(const char *opt, const char *val, double *out, EvoErr *err)
{
    char *end;
    double v = strtod(val, &end);
    double mul = 1;
    if (end == val || v < 0)
        goto bad;
    if (*end == 's')
        end++;
    else if (*end == 'm')
        mul = 60, end++;
    else if (*end == 'h')
        mul = 3600, end++;
    if (*end)
        goto bad;
    *out = v * mul;
    return 0;
bad:
    return err_set(err, "%s: expected a duration like 90, 90s, 15m or 2h, got '%s'", opt, val);
}

/* --gpus all | N | LIST (ordinals separated by commas; "3," is GPU 3 alone). */
static int gpus_arg(Settings *s, const char *val, EvoErr *err)
{
    long v;
    s->ngpus = s->gpus_count = 0;
    if (strcmp(val, "all") == 0) {
        s->gpus_count = -1;
        return 0;
    }
    if (!strchr(val, ',')) {
        if (parse_long(val, 1, CLI_MAX_GPUS, &v))
            return err_set(err, "--gpus: '%s' is not all, a count from 1 to %d, or a list of ordinals (0,2)", val,
                           CLI_MAX_GPUS);
        s->gpus_count = (int)v;
        return 0;
    }
    char *copy = xstrdup(val), *save = NULL;
    int rc = 0;
    for (char *t = strtok_r(copy, ",", &save); t && rc == 0; t = strtok_r(NULL, ",", &save)) {
        if (parse_long(t, 0, 1023, &v))
            rc = err_set(err, "--gpus: '%s' in '%s' is not a GPU ordinal", t, val);
        else if (s->ngpus == CLI_MAX_GPUS)
            rc = err_set(err, "--gpus: more than %d GPUs", CLI_MAX_GPUS);
        for (int i = 0; i < s->ngpus && rc == 0; i++)
            if (s->gpus[i] == (int)v)
                rc = err_set(err, "--gpus: GPU %ld is listed twice in '%s'", v, val);
        if (rc == 0)
            s->gpus[s->ngpus++] = (int)v;
    }
    free(copy);
    if (rc == 0 && s->ngpus == 0)
        rc = err_set(err, "--gpus: '%s' names no GPU", val);
    return rc;
}

static int dim_arg(Settings *s, const char *val, EvoErr *err)
{
    const char *eq = strchr(val, '=');
    long v;
    if (!eq || eq == val || (size_t)(eq - val) >= sizeof(s->dims[0].name) ||
        parse_long(eq + 1, -2147483647L, 2147483647L, &v))
        return err_set(err, "--dim: expected NAME=INTEGER (e.g. S=2048), got '%s'", val);
    if (s->ndims == CLI_MAX_DIMS)
        return err_set(err, "--dim: at most %d overrides", CLI_MAX_DIMS);
    DimOverride *d = &s->dims[s->ndims++];
    memcpy(d->name, val, (size_t)(eq - val));
    d->name[eq - val] = '\0';
    d->value = v;
    return 0;
}

static int apply_option(Settings *s, int id, const char *arg, EvoErr *err)
{
    const OptInfo *o = find_option(id);
    char name[48];
    snprintf(name, sizeof(name), "%s%s", o && strlen(o->name) > 1 ? "--" : "-", o ? o->name : "?");
    if (arg && o && check_choice(o->name, arg, err))
        return -1;
    switch (id) {
    case O_HELP: s->help = 1; return 0;
    case O_QUIET: s->quiet = 1; return 0;
    case O_VERBOSE: s->verbose = 1; return 0;
    case O_JSON: s->json = 1; return 0;
    case O_BEST: s->best = 1; return 0;
    case O_WIDE: s->wide = 1; return 0;
    case O_RUN: {
        long v;
        if (parse_long(arg, 1, 0x7fffffffL, &v))
            return err_set(err, "--run: expected a positive run ID, got '%s'", arg);
        s->run_id = v;
        return 0;
    }
    case O_COLD: s->cold = 1; return 0;
    case O_NO_WARM: s->no_warm_start = 1; return 0;
    case O_SYNC: s->sync = 1; return 0;
    case O_IN_FLIGHT: return int_arg(name, arg, 1, 100000, &s->in_flight, err);
    case O_GPU: s->gpu = 1; return 0;
    case O_AGAINST: s->against = arg; return 0;
    case O_PROFILE: s->profile = arg; return 0;
    case O_DB: s->db = arg; return 0;
    case O_TASK: s->task = arg; return 0;
    case O_ARCH: s->arch = arg; return 0;
    case O_STRATEGY: s->strategy = arg; return 0;
    case O_OUTPUT: s->output = arg; return 0;
    case O_FORMAT: s->format = arg; return 0;
    case O_PARAMS: s->params = arg; return 0;
    case O_SOURCE: s->source = arg; return 0;
    case O_LLM: s->llm = arg; return 0;
    case O_LLM_URL: s->llm_url = arg; return 0;
    case O_LLM_MODEL: s->llm_model = arg; return 0;
    case O_LLM_CMD: s->llm_cmd = arg; return 0;
    case O_LLM_MODE: s->llm_mode = arg; return 0;
    case O_FORCE: s->force = 1; return 0;
    case O_TRUST_STORE: s->trust_store = 1; return 0;
    case O_LLM_INSECURE: s->llm_insecure = 1; return 0;
    case O_ALLOW_PATH:
        if (s->nallow == CLI_MAX_ALLOW)
            return err_set(err, "--allow-path: at most %d directories", CLI_MAX_ALLOW);
        s->allow_paths[s->nallow++] = arg;
        return 0;
    case O_DIM: return dim_arg(s, arg, err);
    case O_GPUS: return gpus_arg(s, arg, err);
    case O_GENERATIONS: s->generations_set = 1; return int_arg(name, arg, 0, 100000, &s->generations, err);
    case O_POPULATION: return int_arg(name, arg, 1, 10000, &s->population, err);
    case O_CHILDREN: return int_arg(name, arg, 1, 10000, &s->children, err);
    case O_N: return int_arg(name, arg, 1, 100000, &s->top_n, err);
    case O_SAMPLE: return int_arg(name, arg, 0, 100000, &s->sample, err);
    case O_JOBS: return int_arg(name, arg, 0, 1024, &s->jobs, err);
    case O_SEEDS: return int_arg(name, arg, 3, 64, &s->seeds, err);
    case O_REPEAT: return int_arg(name, arg, 1, 100000, &s->repeat, err);
    case O_SHARED: return int_arg(name, arg, 0, 1, &s->shared, err);
    case O_LLM_CONC: return int_arg(name, arg, 1, 64, &s->llm_concurrency, err);
    case O_LLM_MAX: return int_arg(name, arg, 0, 1000000, &s->llm_max_requests, err);
    case O_REVERT: return real_arg(name, arg, 0.0, 1.0, &s->revert_threshold, err);
    case O_LLM_RATE: return real_arg(name, arg, 0.0, 1.0, &s->llm_rate, err);
    case O_TIME_LIMIT: s->time_limit_set = 1; return duration_arg(name, arg, &s->time_limit_s, err);
    case O_SEED: {
        long v;
        if (parse_long(arg, 0, 2147483647L, &v))
            return err_set(err, "--seed: expected an integer from 0 to 2147483647, got '%s'", arg);
        s->seed = (uint64_t)v;
        s->seed_set = 1;
        return 0;
    }
    }
    return err_set(err, "internal: unhandled option %d", id);
}

static int parse_positional(Settings *s, const CmdInfo *ci, int argc, char **argv, EvoErr *err)
{
    int n = argc - optind;
    const char *name = ci->name;
    if (n > 1)
        return err_set(err, "'%s': unexpected argument '%s'", name, argv[optind + 1]);
    if (ci->positional == 0 && n > 0)
        return err_set(err, "'%s': unexpected argument '%s'", name, argv[optind]);
    if (ci->positional == 2 && n == 0 && !s->help && !s->best)
        return err_set(err, "'%s': missing candidate ID or --best (see 'evoeng %s --help')", name, name);
    if (ci->positional == 4 && n == 0 && !s->help)
        return err_set(err, "'%s': missing the kernel file (see 'evoeng %s --help')", name, name);
    if (ci->positional == 4 && n > 0) {
        s->source = argv[optind];
        return 0;
    }
    if (n == 0)
        return 0;
    const char *a = argv[optind];
    if (ci->positional == 3) {
        if (s->task)
            return err_set(err, "'%s': give the task either as TASK or as --task, not both", name);
        s->task = a;
        return 0;
    }
    long v;
    if (parse_long(a, 1, 0x7fffffffL, &v))
        return err_set(err, "'%s': expected a positive integer ID, got '%s'", name, a);
    s->id = v;
    return 0;
}

int cli_parse(int argc, char **argv, Settings *s, EvoErr *err)
{
    cli_defaults(s);
    if (argc < 2)
        return err_set(err, "no command given (try 'evoeng --help')");
    const char *cmd = argv[1];
    if (strcmp(cmd, "--help") == 0 || strcmp(cmd, "-h") == 0 || strcmp(cmd, "help") == 0) {
        s->help = 1;
        if (argc > 2 && strcmp(cmd, "help") == 0) {
            for (size_t i = 0; i < EVO_ARRAY_LEN(commands); i++)
                if (strcmp(commands[i].name, argv[2]) == 0)
                    s->cmd = commands[i].id;
            if (s->cmd == CMD_NONE)
                return err_set(err, "unknown command '%s' (try 'evoeng --help')", argv[2]);
        }
        return 0;
    }
    if (strcmp(cmd, "--version") == 0 || strcmp(cmd, "-V") == 0) {
        if (argc > 2)
            return err_set(err, "--version takes no arguments");
        s->version = 1;
        return 0;
    }
    const CmdInfo *ci = NULL;
    for (size_t i = 0; i < EVO_ARRAY_LEN(commands); i++)
        if (strcmp(commands[i].name, cmd) == 0)
            ci = &commands[i];
    if (!ci) {
        if (cmd[0] == '-')
            return err_set(err, "unknown option '%s' (options come after the command; try 'evoeng --help')", cmd);
        return err_set(err, "unknown command '%s' (try 'evoeng --help')", cmd);
    }
    s->cmd = ci->id;

    struct option lopts[EVO_ARRAY_LEN(options) + 1];
    char shorts[64] = "";
    size_t nl = 0;
    for (size_t i = 0; i < EVO_ARRAY_LEN(options); i++) {
        const OptInfo *o = &options[i];
        int dup = 0;
        for (size_t k = 0; k < nl; k++)
            dup |= lopts[k].val == o->id;
        if (strlen(o->name) > 1 && !dup)
            lopts[nl++] = (struct option){o->name, o->has_arg, NULL, o->id};
        if (o->id < 256) {
            size_t l = strlen(shorts);
            shorts[l] = (char)o->id;
            shorts[l + 1] = '\0';
            if (o->has_arg)
                strcat(shorts, ":");
        }
    }
    lopts[nl] = (struct option){NULL, 0, NULL, 0};
    char optstr[80];
    snprintf(optstr, sizeof(optstr), ":%s", shorts);  /* leading ':' -> missing args give ':' */

    optind = 1;  /* argv[1] is the command: getopt starts after it */
    opterr = 0;
    int sub_argc = argc - 1;
    char **sub_argv = argv + 1;
    int c, li;
    const char *sweep_opt = NULL;  /* --seeds or --gpus, given */
    while ((c = getopt_long(sub_argc, sub_argv, optstr, lopts, &li)) != -1) {
        const char *bad = sub_argv[optind - 1];
        if (c == '?') {
            if (optopt && optopt < 256)
                return err_set(err, "unknown option '-%c' for '%s' (see 'evoeng %s --help')", optopt, cmd, cmd);
            return err_set(err, "unknown option '%s' for '%s' (see 'evoeng %s --help')", bad, cmd, cmd);
        }
        if (c == ':')
            return err_set(err, "option '%s' needs a value", bad);
        const OptInfo *o = find_option_for(c, s->cmd);
        if (!o || !(o->cmds & BIT(s->cmd)))
            return err_set(err, "option '%s%s' does not apply to '%s' (see 'evoeng %s --help')",
                           o && strlen(o->name) > 1 ? "--" : "-", o ? o->name : "?", cmd, cmd);
        if (apply_option(s, c, optarg, err))
            return -1;
        if (c == O_SEEDS || c == O_GPUS)
            sweep_opt = o->name;
    }
    optind += 1;  /* back to argv indices */
    if (parse_positional(s, ci, argc, argv, err))
        return -1;

    /* Cross-option checks. */
    if (s->best && s->id)
        return err_set(err, "'%s': give either an ID or --best, not both", cmd);
    if (s->run_id && !s->best)
        return err_set(err, "'%s': --run N picks the run of --best; give --best too", cmd);
    /* check: only the GPU sweep gates; without --gpu these would be ignored */
    if (s->cmd == CMD_CHECK && !s->gpu && sweep_opt)
        return err_set(err, "'check': --%s applies to the GPU sweep; give --gpu too", sweep_opt);
    if (s->quiet && s->verbose)
        return err_set(err, "--quiet and --verbose contradict each other");
    if (s->llm_cmd && s->llm)
        return err_set(err, "--llm and --llm-cmd contradict each other: choose one");
    if ((s->llm_url || s->llm_model) && !s->llm && s->cmd == CMD_RUN)
        return err_set(err, "--llm-url and --llm-model need --llm openai|anthropic");
    if (s->llm_insecure && !s->llm_url && s->cmd == CMD_RUN)
        return err_set(err, "--llm-insecure applies to an http:// --llm-url; give --llm-url too");
    return 0;
}

static void usage_options(FILE *f, CmdId cmd)
{
    for (size_t i = 0; i < EVO_ARRAY_LEN(options); i++) {
        const OptInfo *o = &options[i];
        if (!o->help || !(o->cmds & BIT(cmd)))
            continue;
        char left[64];
        if (strlen(o->name) == 1)
            snprintf(left, sizeof(left), "-%s %s", o->name, o->argname ? o->argname : "");
        else if (o->id < 256)
            snprintf(left, sizeof(left), "-%c, --%s%s%s", o->id, o->name, o->argname ? " " : "",
                     o->argname ? o->argname : "");
        else
            snprintf(left, sizeof(left), "    --%s%s%s", o->name, o->argname ? " " : "",
                     o->argname ? o->argname : "");
        fprintf(f, "  %-32s %s\n", left, o->help);
    }
}

void cli_usage(FILE *f, CmdId cmd)
{
    const CmdInfo *ci = find_command(cmd);
    if (!ci) {
        fprintf(f,
                "evoeng: an evolutionary CUDA kernel optimizer\n\n"
                "usage: evoeng <command> [options]\n"
                "       evoeng <command> --help\n"
                "       evoeng --version\n\n"
                "commands:\n");
        for (size_t i = 0; i < EVO_ARRAY_LEN(commands); i++)
            fprintf(f, "  %-9s %s\n", commands[i].name, commands[i].summary);
        fprintf(f,
                "\nThe population store is population/population.db unless --db PATH is given.\n"
                "Exit codes: 0 ok, 1 failed, 2 usage, 3 bad task spec, 4 store error, 5 no GPU,\n"
                "6 command not built yet, 7 output error, 130 interrupted.\n");
        return;
    }
    fprintf(f, "usage: evoeng %s %s\n\n%s\n\noptions:\n", ci->name, ci->synopsis, ci->details);
    usage_options(f, cmd);
}

/* ---- paths ---------------------------------------------------------- */

char *path_absolute(const char *path)
{
    char *real = realpath(path, NULL);
    if (real) {
        char *r = xstrdup(real);
        free(real);
        return r;
    }
    char cwd[PATH_MAX];
    if (path[0] == '/' || !getcwd(cwd, sizeof(cwd)))
        return xstrdup(path);
    return path_join(cwd, path);
}

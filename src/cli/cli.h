/*
 * cli: the command line. cli_parse() turns argv into a plain Settings
 * struct: the command, then its options (getopt_long, one table of long
 * options, each tagged with the commands that accept it). It prints
 * nothing and exits nothing: errors come back in an EvoErr, and main()
 * maps them to EVO_EXIT_USAGE. cli_usage() writes the help of a command,
 * generated from the same tables, so help and parser cannot disagree.
 */
#ifndef EVO_CLI_H
#define EVO_CLI_H

#include <stdint.h>
#include <stdio.h>

#include "util.h"

typedef enum CmdId {
    CMD_NONE = 0,
    CMD_RUN, CMD_RESUME, CMD_STATUS, CMD_TOP, CMD_LINEAGE, CMD_SHOW, CMD_EXPORT,
    CMD_CHECK, CMD_BENCH,
    CMD_RUNS,
    CMD_REPORT,
    CMD_INIT,
    CMD_COUNT
} CmdId;

#define CLI_MAX_DIMS 16
#define CLI_MAX_GPUS 64
#define CLI_MAX_ALLOW 16

typedef struct DimOverride {
    char    name[64];
    int64_t value;
} DimOverride;

typedef struct Settings {
    CmdId        cmd;
    int          help;              /* --help: print this command's help */
    int          version;           /* --version (no command) */
    int          quiet, verbose, json;
    const char  *db;                /* --db, default population/population.db */
    const char  *task;              /* --task or the positional TASK */
    const char  *arch;              /* --arch sm_XY; NULL: the GPU's own */
    /* run */
    int          generations, population, children;
    uint64_t     seed;
    int          seed_set;
    const char  *strategy;          /* evolve | model | random | exhaustive */
    int          no_warm_start;     /* --no-warm-start */
    int          sync;              /* --sync: generation-synchronous mode */
    int          in_flight;         /* --in-flight N (0: sized from the cores and GPUs) */
    double       time_limit_s;      /* 0: none */
    double       revert_threshold;  /* 0.02 */
    int          jobs;              /* compile threads, 0: one per core */
    DimOverride  dims[CLI_MAX_DIMS];
    int          ndims;
    /* llm */
    const char  *llm, *llm_url, *llm_model, *llm_cmd, *llm_mode;
    double       llm_rate;
    int          llm_concurrency, llm_max_requests;
    /* inspection, export */
    int64_t      id;                /* RUN_ID or candidate ID (positional) */
    int          best;              /* export, lineage, show --best */
    int          top_n;             /* top -n */
    const char  *output;            /* export -o, report -o */
    const char  *format;            /* export --format cu|json */
    /* check, bench */
    int          sample;            /* check --sample N */
    int          gpu;               /* check --gpu: gate each on the GPU */
    const char  *params;            /* bench --params K=V,... */
    const char  *source;            /* bench/run/check --source FILE.cu; init's KERNEL.cu */
    int          cold;              /* bench --cold */
    const char  *against;           /* bench --against K=V,...: A/B reference */
    int          repeat;            /* bench --repeat N: N A/B comparisons (0: one, with --against) */
    const char  *profile;           /* run, bench --profile NAME[,NAME]: time these input profiles only (NULL: the task's timing ones) */
    int          shared;            /* bench --shared 0|1: BenchOptions.shared; -1: its default */
    int          seeds;             /* gate seeds */
    /* --gpus: all (gpus_count -1), the first N (gpus_count N) or a list of ordinals (gpus/ngpus) */
    int          gpus[CLI_MAX_GPUS];
    int          ngpus, gpus_count;
    /* output */
    int          wide;              /* --wide: no cut to the terminal width */
    int64_t      run_id;            /* lineage/show --best --run N (0: the latest run) */
    int          generations_set;   /* --generations was given (resume: else the run's own) */
    int          time_limit_set;    /* --time-limit was given (resume: else the run's own; 0: none) */
    /* trust (README.md, "Trust model") */
    const char  *allow_paths[CLI_MAX_ALLOW];  /* --allow-path DIR: a spec may read files there too */
    int          nallow;
    int          force;             /* --force: -o may replace a symbolic link (the link itself) */
    int          trust_store;       /* resume --trust-store: run the LLM command / use the URL the store names */
    int          llm_insecure;      /* --llm-insecure: send the API key over http:// to a host not on loopback */
} Settings;

/* Fill *s with defaults. */
void cli_defaults(Settings *s);

/* Parse argv (argv[0] is the program). Returns 0 with *s filled, or -1
 * with err saying what is wrong ("unknown option '--foo' for 'status'",
 * "--generations: expected an integer from 0 to 100000, got 'x'"). On
 * success with s->help set, the caller prints cli_usage(s->cmd). */
int cli_parse(int argc, char **argv, Settings *s, EvoErr *err);

/* Name of a command ("run"), or NULL for CMD_NONE. */
const char *cli_command_name(CmdId cmd);

/* Write help: the global help for CMD_NONE, else that command's usage,
 * description and options. */
void cli_usage(FILE *f, CmdId cmd);

/* path (a task, a kernel, an output directory from the command line) as
 * an absolute path (symbolic links resolved when it exists, else joined
 * to the current directory), so that it still names the same file from
 * another directory: what a run records. Fresh string; path itself when
 * the current directory cannot be read. */
char *path_absolute(const char *path);

#endif

/* Unit tests for cli_parse: good and bad command lines. */
#include "testhelp.h"
#include <stdlib.h>

#include "cli/cli.h"

static int parse(Settings *s, EvoErr *err, int argc, const char **argv)
{
    return cli_parse(argc, (char **)argv, s, err);
}

#define PARSE(s, err, ...) \
    parse(s, err, (int)(sizeof((const char *[]){__VA_ARGS__}) / sizeof(char *)), (const char *[]){__VA_ARGS__})

static void test_defaults(void)
{
    Settings s;
    EvoErr err;
    CHECK(PARSE(&s, &err, "evoeng", "run") == 0);
    CHECK(s.cmd == CMD_RUN);
    CHECK(s.generations == 20);
    CHECK_STR(s.db, "population/population.db");
    CHECK_STR(s.strategy, "evolve");
    CHECK(s.revert_threshold == 0.02);
    CHECK(s.seeds == 3);
    CHECK(s.task == NULL);
}

static void test_run_options(void)
{
    Settings s;
    EvoErr err;
    CHECK_MSG(PARSE(&s, &err, "evoeng", "run", "--generations", "5", "--population=12", "--children", "6",
                    "--seed", "42", "--strategy", "exhaustive", "--time-limit", "15m", "--db", "/tmp/p.db",
                    "--task", "t.json", "--dim", "S=2048", "--dim", "causal=1", "--revert-threshold", "0.05",
                    "-j", "4", "--json") == 0, "%s", err.msg);
    CHECK(s.generations == 5 && s.population == 12 && s.children == 6);
    CHECK(s.seed == 42 && s.seed_set);
    CHECK_STR(s.strategy, "exhaustive");
    CHECK(s.time_limit_s == 900);
    CHECK_STR(s.db, "/tmp/p.db");
    CHECK_STR(s.task, "t.json");
    CHECK(s.ndims == 2);
    CHECK_STR(s.dims[0].name, "S");
    CHECK(s.dims[0].value == 2048);
    CHECK_STR(s.dims[1].name, "causal");
    CHECK(s.revert_threshold == 0.05);
    CHECK(s.jobs == 4 && s.json);
}

static void test_positionals(void)
{
    Settings s;
    EvoErr err;
    CHECK(PARSE(&s, &err, "evoeng", "lineage", "42", "--db", "x.db") == 0);
    CHECK(s.cmd == CMD_LINEAGE && s.id == 42);
    CHECK(PARSE(&s, &err, "evoeng", "check", "templates/attention/task.json", "--arch", "sm_80",
                "--sample", "3") == 0);
    CHECK_STR(s.task, "templates/attention/task.json");
    CHECK_STR(s.arch, "sm_80");
    CHECK(s.sample == 3);
    CHECK(PARSE(&s, &err, "evoeng", "top", "-n", "3", "7") == 0);
    CHECK(s.top_n == 3 && s.id == 7);
    CHECK(PARSE(&s, &err, "evoeng", "export", "--best", "-o", "k.cu") == 0);
    CHECK(s.best && s.id == 0);
    CHECK_STR(s.output, "k.cu");
    CHECK(PARSE(&s, &err, "evoeng", "status") == 0);
    CHECK(s.id == 0);
    CHECK(PARSE(&s, &err, "evoeng", "show", "5", "--json") == 0);  /* with "gate_stage" */
    CHECK(s.cmd == CMD_SHOW && s.id == 5 && s.json);
    CHECK(PARSE(&s, &err, "evoeng", "top", "--json") == 0);
    CHECK(s.cmd == CMD_TOP && s.json);
    CHECK(PARSE(&s, &err, "evoeng", "lineage", "5", "--json") == 0);  /* issue 14: lineage has --json */
    CHECK(s.cmd == CMD_LINEAGE && s.id == 5 && s.json);
    CHECK(PARSE(&s, &err, "evoeng", "status") == 0);
    CHECK(s.id == 0);
    CHECK(PARSE(&s, &err, "evoeng", "bench", "t.json", "--params", "BLOCK_M=64,WARPS=4", "--cold") == 0);
    CHECK_STR(s.params, "BLOCK_M=64,WARPS=4");
    CHECK(s.cold);
}

static void test_help_version(void)
{
    Settings s;
    EvoErr err;
    CHECK(PARSE(&s, &err, "evoeng", "--help") == 0 && s.help && s.cmd == CMD_NONE);
    CHECK(PARSE(&s, &err, "evoeng", "run", "--help") == 0 && s.help && s.cmd == CMD_RUN);
    CHECK(PARSE(&s, &err, "evoeng", "lineage", "--help") == 0 && s.help);  /* no ID needed */
    CHECK(PARSE(&s, &err, "evoeng", "help", "top") == 0 && s.help && s.cmd == CMD_TOP);
    CHECK(PARSE(&s, &err, "evoeng", "--version") == 0 && s.version);
}

static void test_errors(void)
{
    Settings s;
    EvoErr err;
    CHECK(PARSE(&s, &err, "evoeng") != 0);
    CHECK_CONTAINS(err.msg, "no command");
    CHECK(PARSE(&s, &err, "evoeng", "frobnicate") != 0);
    CHECK_CONTAINS(err.msg, "unknown command 'frobnicate'");
    CHECK(PARSE(&s, &err, "evoeng", "--frob") != 0);
    CHECK_CONTAINS(err.msg, "unknown option '--frob'");
    CHECK(PARSE(&s, &err, "evoeng", "run", "--frob") != 0);
    CHECK_CONTAINS(err.msg, "unknown option '--frob' for 'run'");
    CHECK(PARSE(&s, &err, "evoeng", "run", "-Z") != 0);
    CHECK_CONTAINS(err.msg, "unknown option '-Z'");
    CHECK(PARSE(&s, &err, "evoeng", "run", "--generations") != 0);
    CHECK_CONTAINS(err.msg, "needs a value");
    CHECK(PARSE(&s, &err, "evoeng", "run", "--generations", "ten") != 0);
    CHECK_CONTAINS(err.msg, "--generations: expected an integer");
    CHECK(PARSE(&s, &err, "evoeng", "run", "--generations", "10x") != 0);
    CHECK(PARSE(&s, &err, "evoeng", "run", "--population", "0") != 0);
    CHECK(PARSE(&s, &err, "evoeng", "run", "--strategy", "greedy") != 0);
    CHECK_CONTAINS(err.msg, "expected one of: evolve, model, random, exhaustive");
    CHECK(PARSE(&s, &err, "evoeng", "run", "--strategy", "model", "--no-warm-start") == 0);
    CHECK(s.no_warm_start && strcmp(s.strategy, "model") == 0);
    CHECK(PARSE(&s, &err, "evoeng", "run", "--revert-threshold", "-0.1") != 0);
    CHECK(PARSE(&s, &err, "evoeng", "run", "--time-limit", "soon") != 0);
    CHECK(PARSE(&s, &err, "evoeng", "run", "--dim", "S") != 0);
    CHECK_CONTAINS(err.msg, "NAME=INTEGER");
    CHECK(PARSE(&s, &err, "evoeng", "run", "--dim", "S=abc") != 0);
    CHECK(PARSE(&s, &err, "evoeng", "status", "--generations", "3") != 0);
    CHECK_CONTAINS(err.msg, "does not apply to 'status'");
    CHECK(PARSE(&s, &err, "evoeng", "lineage") != 0);
    CHECK_CONTAINS(err.msg, "missing candidate ID");
    CHECK(PARSE(&s, &err, "evoeng", "lineage", "abc") != 0);
    CHECK(PARSE(&s, &err, "evoeng", "lineage", "1", "2") != 0);
    CHECK_CONTAINS(err.msg, "unexpected argument '2'");
    CHECK(PARSE(&s, &err, "evoeng", "run", "extra") != 0);
    CHECK(PARSE(&s, &err, "evoeng", "export", "3", "--best") != 0);
    CHECK(PARSE(&s, &err, "evoeng", "check", "a.json", "--task", "b.json") != 0);
    CHECK(PARSE(&s, &err, "evoeng", "run", "--quiet", "--verbose") != 0);
    CHECK(PARSE(&s, &err, "evoeng", "run", "--seeds", "2") != 0);
    CHECK(PARSE(&s, &err, "evoeng", "run", "--llm", "gpt") != 0);
    CHECK(PARSE(&s, &err, "evoeng", "run", "--llm-model", "m") != 0);
    CHECK_CONTAINS(err.msg, "need --llm");
    CHECK(PARSE(&s, &err, "evoeng", "--version", "x") != 0);
}

static void test_gpus(void)
{
    Settings s;
    EvoErr err;
    CHECK(PARSE(&s, &err, "evoeng", "run") == 0);
    CHECK(s.ngpus == 0 && s.gpus_count == 0);
    CHECK(PARSE(&s, &err, "evoeng", "run", "--gpus", "all") == 0 && s.gpus_count == -1 && s.ngpus == 0);
    CHECK(PARSE(&s, &err, "evoeng", "check", "--gpu", "--gpus", "2") == 0 && s.gpus_count == 2 && s.ngpus == 0);
    CHECK(PARSE(&s, &err, "evoeng", "bench", "--gpus", "0,2") == 0 && s.ngpus == 2 && s.gpus[0] == 0 &&
          s.gpus[1] == 2 && s.gpus_count == 0);
    CHECK(PARSE(&s, &err, "evoeng", "resume", "--gpus", "3,") == 0 && s.ngpus == 1 && s.gpus[0] == 3);
    CHECK(PARSE(&s, &err, "evoeng", "run", "--gpus", "0") != 0 && strstr(err.msg, "--gpus") != NULL);
    CHECK(PARSE(&s, &err, "evoeng", "run", "--gpus", "1,1") != 0 && strstr(err.msg, "twice") != NULL);
    CHECK(PARSE(&s, &err, "evoeng", "run", "--gpus", "a,b") != 0 && strstr(err.msg, "not a GPU ordinal") != NULL);
    CHECK(PARSE(&s, &err, "evoeng", "run", "--gpus", ",") != 0 && strstr(err.msg, "names no GPU") != NULL);
    CHECK(PARSE(&s, &err, "evoeng", "status", "--gpus", "2") != 0);   /* not an evaluating command */
}

/* Issue 14: runs, --best/--run on lineage and show, --wide, and options a
 * command would ignore are refused. */
static void test_issue14(void)
{
    Settings s;
    EvoErr err;
    CHECK(PARSE(&s, &err, "evoeng", "runs") == 0 && s.cmd == CMD_RUNS && !s.json && !s.wide);
    CHECK(PARSE(&s, &err, "evoeng", "runs", "--json", "--wide", "--db", "x.db") == 0 && s.json && s.wide);
    CHECK_STR(s.db, "x.db");
    CHECK(PARSE(&s, &err, "evoeng", "runs", "3") != 0);
    CHECK_CONTAINS(err.msg, "unexpected argument '3'");
    CHECK(PARSE(&s, &err, "evoeng", "runs", "-n", "3") != 0);
    CHECK(PARSE(&s, &err, "evoeng", "status", "--json", "2") == 0 && s.json && s.id == 2);
    CHECK(PARSE(&s, &err, "evoeng", "lineage", "--best") == 0 && s.best && s.id == 0 && s.run_id == 0);
    CHECK(PARSE(&s, &err, "evoeng", "show", "--best", "--run", "4", "--json") == 0 && s.best && s.run_id == 4 &&
          s.json);
    CHECK(PARSE(&s, &err, "evoeng", "show", "5", "--run", "4") != 0);
    CHECK_CONTAINS(err.msg, "give --best too");
    CHECK(PARSE(&s, &err, "evoeng", "lineage", "7", "--best") != 0);
    CHECK_CONTAINS(err.msg, "either an ID or --best");
    CHECK(PARSE(&s, &err, "evoeng", "show", "--best", "--run", "0") != 0);
    CHECK_CONTAINS(err.msg, "--run: expected a positive run ID");
    CHECK(PARSE(&s, &err, "evoeng", "show") != 0);
    CHECK_CONTAINS(err.msg, "missing candidate ID or --best");
    CHECK(PARSE(&s, &err, "evoeng", "export", "--run", "2") != 0);    /* export has no --run */
    CHECK(PARSE(&s, &err, "evoeng", "top", "--wide") == 0 && s.wide);
    CHECK(PARSE(&s, &err, "evoeng", "run", "--wide") == 0 && s.wide);
    CHECK(PARSE(&s, &err, "evoeng", "export", "--wide") != 0);
    CHECK(PARSE(&s, &err, "evoeng", "check", "t.json", "--json") == 0 && s.json);
    /* accepted means honoured: check gates only with --gpu, and resume
     * keeps the shape and the gate seeds of the run it continues */
    CHECK(PARSE(&s, &err, "evoeng", "check", "t.json", "--seeds", "5") != 0);
    CHECK_CONTAINS(err.msg, "--seeds applies to the GPU sweep");
    CHECK(PARSE(&s, &err, "evoeng", "check", "t.json", "--gpus", "all") != 0);
    CHECK_CONTAINS(err.msg, "--gpus applies to the GPU sweep");
    CHECK(PARSE(&s, &err, "evoeng", "check", "t.json", "--gpu", "--seeds", "5") == 0 && s.seeds == 5);
    CHECK(PARSE(&s, &err, "evoeng", "resume", "--dim", "S=64") != 0);
    CHECK_CONTAINS(err.msg, "does not apply to 'resume'");
    CHECK(PARSE(&s, &err, "evoeng", "resume", "--seeds", "4") != 0);
    CHECK(PARSE(&s, &err, "evoeng", "resume", "--time-limit", "5m") == 0 && s.time_limit_s == 300 &&
          s.time_limit_set && !s.generations_set);
    CHECK(PARSE(&s, &err, "evoeng", "resume", "--time-limit", "0", "--generations", "20") == 0 &&
          s.time_limit_s == 0 && s.time_limit_set && s.generations_set);   /* given, even as the default */
    CHECK(PARSE(&s, &err, "evoeng", "resume") == 0 && !s.time_limit_set && !s.generations_set);
    /* --best has its own help per command */
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    cli_usage(f, CMD_SHOW);
    fclose(f);
    CHECK_CONTAINS(buf, "--best");
    CHECK_CONTAINS(buf, "of the latest run or --run");
    CHECK(strstr(buf, "export the best") == NULL);
    free(buf);
}

int main(void)
{
    RUN(test_defaults);
    RUN(test_run_options);
    RUN(test_positionals);
    RUN(test_help_version);
    RUN(test_errors);
    RUN(test_gpus);
    RUN(test_issue14);
    return test_report();
}

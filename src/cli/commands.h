/*
 * commands: the implementation of each evoeng sub-command. Each takes the
 * parsed Settings and returns an EvoExit code; they print their results
 * to stdout and diagnostics through msg.h. main() only dispatches.
 */
#ifndef EVO_COMMANDS_H
#define EVO_COMMANDS_H

#include "cli/cli.h"
#include "msg.h"

/* evoeng --version: version, NVRTC version, CUDA driver and device 0. */
EvoExit cmd_version(const Settings *s);
/* status / top / lineage / show: read the population store (no GPU). */
EvoExit cmd_status(const Settings *s);
EvoExit cmd_top(const Settings *s);
EvoExit cmd_lineage(const Settings *s);
EvoExit cmd_show(const Settings *s);
/* runs: the runs of the store (no GPU). */
EvoExit cmd_runs(const Settings *s);
/* export: a standalone .cu (or JSON) of one candidate. */
EvoExit cmd_export(const Settings *s);
/* check: validate a task and compile configurations (no GPU). */
EvoExit cmd_check(const Settings *s);
/* bench: gate and time one configuration on the GPU. */
EvoExit cmd_bench(const Settings *s);
/* init: a starting task spec from a kernel file. */
EvoExit cmd_init(const Settings *s);
/* run / resume: the evolutionary loop. */
EvoExit cmd_run(const Settings *s);
EvoExit cmd_resume(const Settings *s);
/* report: a self-contained HTML report of a run (src/report/). */
EvoExit cmd_report(const Settings *s);

#endif

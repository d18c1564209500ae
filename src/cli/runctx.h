/*
 * runctx: what the GPU-facing commands share: loading the task named on
 * the command line (default templates/attention/task.json) with its --dim
 * overrides, the compile cache directory, and the core count.
 */
#ifndef EVO_RUNCTX_H
#define EVO_RUNCTX_H

#include "cli/cli.h"
#include "msg.h"
#include "task/task.h"

#define RUNCTX_DEFAULT_TASK "templates/attention/task.json"

/* The spec file to read for path: path itself when it is readable, else,
 * for a relative path, datadir_file(path) when found, else path.
 * Fresh string. */
char *runctx_task_file(const char *path);

/* Load s->task (or the default task), apply s->dims and s->profile (the
 * profiles timed). Prints the error and returns EVO_EXIT_TASK (the spec)
 * or EVO_EXIT_USAGE (a dim or profile), EVO_EXIT_OK with *out set. */
EvoExit runctx_load_task(const Settings *s, Task **out);

/* The compile cache's folder: $EVOENG_CACHE_DIR, else $XDG_CACHE_HOME/evoeng
 * (an absolute XDG_CACHE_HOME only), else $HOME/.cache/evoeng; never the
 * current directory. Fresh string, or NULL when none of them is set. */
char *runctx_cache_dir(void);

/* Point the NVRTC cache at runctx_cache_dir() (no cache when it is NULL).
 * The folder is made on the first compile, not before. s is unused. */
void runctx_set_cache(const Settings *s);

#endif

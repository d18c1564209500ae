/*
 * runctx: what the GPU-facing commands share: loading the task named on
 * the command line (default templates/attention/task.json) with its --dim
 * overrides, the compile cache directory, and the core count.
 */
#ifndef EVO_RUNCTX_H
#define EVO_RUNCTX_H

#include "cli.h"
#include "msg.h"
#include "task.h"

#define RUNCTX_DEFAULT_TASK "templates/attention/task.json"

/* The file or directory rel (relative: "prompts", "templates/x/task.json")
 * in the first data directory that has it readable, in this order:
 * $EVOENG_DATA_DIR, the installed data directory (EVO_DATADIR,
 * <prefix>/share/evoeng, where `meson install` puts templates/ and
 * prompts/), the source tree evoeng was built from (EVO_SOURCE_ROOT).
 * Fresh string, or NULL when none has it. */
char *runctx_data_file(const char *rel);

/* The spec file to read for path: path itself when it is readable, else,
 * for a relative path, runctx_data_file(path) when found, else path.
 * Fresh string. */
char *runctx_task_file(const char *path);

/* Load s->task (or the default task) and apply s->dims. Prints the error
 * and returns EVO_EXIT_TASK on failure, EVO_EXIT_OK with *out set. */
EvoExit runctx_load_task(const Settings *s, Task **out);

/* Point the NVRTC cache at $EVOENG_CACHE_DIR, else <dir of --db>/cache. */
void runctx_set_cache(const Settings *s);

/* Online CPU cores. */
int runctx_cores(void);

#endif

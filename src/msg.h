/*
 * msg: every user-facing message goes through here, prefixed "evoeng: ",
 * and the process exit codes are defined here (documented in README.md).
 */
#ifndef EVO_MSG_H
#define EVO_MSG_H

#include "util.h"

/* Exit codes of the evoeng command. Keep README.md's table in sync. */
typedef enum EvoExit {
    EVO_EXIT_OK        = 0,  /* success */
    EVO_EXIT_FAIL      = 1,  /* the command ran and failed (e.g. the default config fails its check) */
    EVO_EXIT_USAGE     = 2,  /* bad command line */
    EVO_EXIT_TASK      = 3,  /* the task spec is malformed or inconsistent */
    EVO_EXIT_DB        = 4,  /* the population store cannot be opened or written */
    EVO_EXIT_NO_GPU    = 5,  /* the command needs a CUDA driver and device, and none was found */
    EVO_EXIT_UNBUILT   = 6,  /* the command exists but is not built yet */
    EVO_EXIT_IO        = 7,  /* writing output failed (disk full, closed pipe) */
    EVO_EXIT_LOST      = 8,  /* an MPI rank was lost: the run is interrupted, committed work is kept */
    EVO_EXIT_INTERRUPT = 130 /* interrupted by SIGINT/SIGTERM; committed work is kept */
} EvoExit;

/* Verbosity: 0 quiet (errors only), 1 normal, 2 verbose. */
extern int msg_verbosity;

void errorf(const char *fmt, ...) EVO_PRINTF(1, 2);  /* stderr, always (and kept under --json) */
void warnf(const char *fmt, ...) EVO_PRINTF(1, 2);   /* stderr, unless quiet */
void notef(const char *fmt, ...) EVO_PRINTF(1, 2);   /* stderr, verbose only */
void progressf(const char *fmt, ...) EVO_PRINTF(1, 2); /* stderr, unless quiet; no kind prefix */

/* --json: from now on every errorf message is also kept, in order, so
 * that the command's JSON on stdout can carry it (cli/out.h,
 * out_json_end). Call once, before the command runs. */
void msg_keep_errors(void);
/* The messages kept so far (without the "evoeng: " prefix): *n of them,
 * owned by msg, valid until the next errorf. */
const char *const *msg_errors(int *n);

#endif

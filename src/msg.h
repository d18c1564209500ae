/*
 * msg: every user-facing message goes through here, prefixed "evoeng: ",
 * with the result lines on stdout (cut to the terminal) and the --json
 * document; the process exit codes are defined here (documented in
 * README.md).
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
 * that the command's JSON on stdout can carry it (out_json_end).
 * Call once, before the command runs. */
void msg_keep_errors(void);
/* The messages kept so far (without the "evoeng: " prefix): *n of them,
 * owned by msg, valid until the next errorf. */
const char *const *msg_errors(int *n);

/* ---- result lines and --json ------------------------------------------------
 *
 * out_*: result lines on stdout that fit the terminal. The width is, in
 * order: none with --wide; the terminal's (ioctl TIOCGWINSZ on stdout);
 * $COLUMNS when set to a number; 100 when stdout is a terminal of unknown
 * width. Output that is not a terminal (a pipe, a file) and has no
 * $COLUMNS is never cut: scripts get whole lines (and should use --json).
 * A cut line ends in "..." at exactly the width.
 */

struct json_t;

/* Decide the width for this process (wide: no cut). Call once, before
 * out_printf; out_width() is 0 (no cut) until then. */
void out_init(int wide);
/* The width lines are cut to, or 0 for no cut. */
int out_width(void);
/* The width for a stream and a wide flag, by the rules above (tty: the
 * stream's file descriptor is a terminal). Exposed for tests. */
int out_width_for(int fd, int wide);
/* printf to stdout, each line cut to out_width() display columns (UTF-8
 * aware: a multi-byte character counts once and is never split). Lines
 * are cut per call: print a whole line (or several) with each call. */
void out_printf(const char *fmt, ...) EVO_PRINTF(1, 2);
/* Cut one line (no '\n') to width columns into a fresh string; width 0:
 * a copy. */
char *out_fit(const char *line, int width);

/* --json documents (README.md, "JSON output"). A command hands its one
 * JSON document here instead of printing it (the reference is taken);
 * main() prints it with out_json_end() as the command ends. */
void out_json_doc(struct json_t *doc);

/* Print what --json owes stdout for a command that ends with exit code rc:
 * its document, with "error" (the first message errorf gave) and
 * "exit" added when rc is not 0; or, when the command handed no document
 * and rc is not 0, {"error": "...", "exit": rc} alone ("messages" lists
 * every message when there were several). Nothing for rc 0 without a
 * document (a command that streams JSON lines). */
void out_json_end(int rc);

#endif

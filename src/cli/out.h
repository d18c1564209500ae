/*
 * out: result lines on stdout that fit the terminal. The width is, in
 * order: none with --wide; the terminal's (ioctl TIOCGWINSZ on stdout);
 * $COLUMNS when set to a number; 100 when stdout is a terminal of unknown
 * width. Output that is not a terminal (a pipe, a file) and has no
 * $COLUMNS is never cut: scripts get whole lines (and should use --json).
 * A cut line ends in "..." at exactly the width.
 */
#ifndef EVO_OUT_H
#define EVO_OUT_H

#include <jansson.h>

#include "util.h"

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
void out_json_doc(json_t *doc);

/* Print what --json owes stdout for a command that ends with exit code rc:
 * its document, with "error" (the first message errorf gave, msg.h) and
 * "exit" added when rc is not 0; or, when the command handed no document
 * and rc is not 0, {"error": "...", "exit": rc} alone ("messages" lists
 * every message when there were several). Nothing for rc 0 without a
 * document (a command that streams JSON lines). */
void out_json_end(int rc);

#endif

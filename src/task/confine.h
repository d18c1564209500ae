/*
 * confine: what untrusted input may reach. A task spec, its kernel files,
 * LLM-written code and a store file are data (README.md, "Trust model"):
 *
 *   - files a spec names (template, reference, the parts a template
 *     includes) resolve inside the spec's directory, symbolic links
 *     followed, or inside a directory the user allowed (--allow-path DIR);
 *     /proc, /sys and /dev never;
 *   - kernel code includes only headers NVRTC is handed (evoeng's stubs)
 *     or finds on its include path (the CUDA toolkit's include directory):
 *     an #include of an absolute path, of a name holding "..", or one
 *     whose operand is a macro (a computed include), and #include_next,
 *     #import, #embed and #pragma include_alias, are refused by name
 *     before NVRTC runs; NVRTC is told the program lives in a directory
 *     that cannot exist (nvrtc.c), so a relative name never resolves
 *     against the current directory or the template's;
 *   - a spec's compile.options pass an allow-list.
 *
 * The allowed directories are process-wide: set them (confine_allow_dir)
 * before any thread loads a task.
 */
#ifndef EVO_CONFINE_H
#define EVO_CONFINE_H

#include "util.h"

/* Allow files under dir as well as a spec's own directory (--allow-path).
 * dir must exist; it is kept as its real path. Returns 0, or -1 with err. */
int confine_allow_dir(const char *dir, EvoErr *err);
/* Forget every allowed directory (tests). */
void confine_reset(void);

/* Resolve rel, a file a spec names, against base (the spec's directory;
 * rel may also be absolute). The file's real path must lie inside root
 * (NULL: base) or an allowed directory, and not under /proc, /sys or
 * /dev. Returns the real path (fresh string), or NULL with err saying
 * which rule refused it ("'../x.cu' is outside the task's directory
 * /a/b ..."), or that it cannot be found. */
char *confine_resolve(const char *base, const char *root, const char *rel, EvoErr *err);

/* Check every #include-like directive of src, a kernel source as NVRTC
 * would get it (file names it in messages). Every place a directive could
 * begin is looked at: whatever a comment, a string or a line splice may
 * hide, a directive the preprocessor would run is seen (a line that only
 * looks like one, inside a comment, may be refused too). Returns 0, or -1
 * with err "FILE line N: #include "/etc/passwd": an absolute path ...". */
int confine_scan_includes(const char *src, const char *file, EvoErr *err);

/* Check one NVRTC option a spec gives (compile.options). Allowed:
 * -D NAME[=VALUE] and -U NAME (single token; VALUE of letters, digits and
 * _ . + -), -std=c++17|c++20, --use_fast_math, -maxrregcount=N,
 * --extra-device-vectorization, --fmad/--ftz/--prec-div/--prec-sqrt=
 * true|false, -lineinfo, --restrict, -default-device, -w,
 * --diag-suppress/--diag-error/--diag-warn=N[,N...], --dopt=on|off and
 * --ptxas-options= one of -O0..-O3, -v, -dlcm=ca|cg, --warn-on-spills,
 * --warn-on-local-memory-usage. Returns 0, or -1 with err saying why. */
int confine_check_option(const char *opt, EvoErr *err);
/* The allow-list in one line, for messages and the README. */
const char *confine_allowed_options(void);

/* The name to give NVRTC for a program called name: name under a
 * directory that cannot exist (procfs has no such entry and allows none
 * to be made; where /proc is not mounted only root could), because NVRTC
 * looks for a quoted #include in the program's own directory first: so a
 * relative name never reaches the current directory or the template's.
 * (--no-source-include would do it too, but it also stops the CUDA
 * headers finding their neighbours.) Fresh string. */
char *confine_program_name(const char *name);

/* A copy of an NVRTC log, the program's name made plain again (without
 * confine_program_name's directory), in which every diagnostic about a file other
 * than prog (the program's own name), a name without a directory (evoeng's
 * headers, NVRTC's own, a #line name) or a header under the CUDA include
 * directory is replaced, with its quoted source lines, by one line saying
 * it was withheld: the log kept in the store and the cache, and sent to an
 * LLM, never carries another file's text, whatever reached the compiler.
 * Fresh string. */
char *confine_filter_log(const char *log, const char *prog);

#endif

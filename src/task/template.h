/*
 * template: turning a kernel template plus a parameter assignment into the
 * exact CUDA source that NVRTC compiles, and naming that source by its
 * content hash. A template is plain CUDA C++ whose knobs are macros with
 * `#ifndef X / #define X default / #endif` fallbacks; rendering prepends
 * one `#define NAME VALUE` line per knob, so the prepended values win.
 *
 * Rendering is stable: the same inputs give the same bytes, so the hash of
 * a rendered source identifies a candidate (and keys the compile cache).
 */
#ifndef EVO_TEMPLATE_H
#define EVO_TEMPLATE_H

#include <stdint.h>

#include "util.h"

/* Render template_text with n macros names[i] = values[i], in the given
 * order. The output is, byte for byte:
 *
 *   // evoeng: rendered from <file>\n
 *   #define NAME VALUE\n            (one per macro; negative values in parentheses)
 *   #line 1 "<file>"\n
 *   <template_text>                (a final newline is added if missing)
 *
 * The #line directive keeps compiler messages pointing at template lines.
 * file may be NULL ("template"); only its last path component is used.
 * *out is a fresh string the caller frees. Returns 0, or -1 with err when
 * a name is not a valid C identifier or the file name holds a quote or a
 * newline. */
int template_render(const char *template_text, const char *file, const char *const *names,
                    const int64_t *values, int n, char **out, EvoErr *err);

/* Inline a template's local includes: every line that is exactly
 * `#include "NAME"` (optional blanks around the directive, nothing after the
 * closing quote but blanks), where NAME has no '/' or '\' and a file NAME
 * exists in dir, is replaced by `#line 1 "NAME"`, that file's text (a final
 * newline added if missing) and `#line <the next line> "<file>"`, so
 * compiler messages name the part and its line; recursively, up to 8
 * levels. Other lines, `#include <...>`, and quoted includes of files not
 * in dir are kept as they are, so NVRTC still sees them. The result is the
 * single source the template stands for: rendering, hashing, exports and
 * the LLM's prompts all use it (an exported kernel needs no other file).
 * file names the including file in those directives (its last path
 * component; NULL: "template").
 * *out is a fresh string. Returns 0, or -1 with err ("FILE line N: ...")
 * when an included file cannot be read or includes itself again. */
int template_expand(const char *text, const char *file, const char *dir, char **out, EvoErr *err);

/* 1 when s is a C identifier (so a valid macro name); 0 for NULL. */
int template_is_ident(const char *s);

/* SHA-256 of a rendered source (its whole text, without the NUL), as 64
 * lowercase hex digits in hex[65]. */
void template_hash(const char *src, char hex[65]);

/* Collect the knobs a template declares through `#ifndef X` immediately
 * followed by `#define X ...` (blank lines and whitespace allowed): the
 * names, in order of appearance, as a fresh NULL-terminated array of fresh
 * strings (free each, then the array). *n (optional) gets the count. */
char **template_knobs(const char *template_text, int *n);

#endif

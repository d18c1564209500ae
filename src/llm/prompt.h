/*
 * prompt: the LLM prompts, rendered from the text files in prompts/ with
 * named placeholders ({{task_description}}). A template may use only the
 * names it is given: an unknown placeholder is an error naming it and its
 * line, so a typo in a prompt file never reaches the model silently.
 * Values are inserted verbatim and never re-scanned.
 *
 * EvoEngineer's three modes pick which sections make up the user message:
 *   free     task_context (I1)                          + request
 *   insight  task_context (I1)            + insights (I3) + request
 *   full     task_context (I1) + history (I2) + insights (I3) + request
 * The system message (system.md, with the rules) is the same for all.
 * prompts/README.md lists every placeholder each file uses.
 */
#ifndef EVO_PROMPT_H
#define EVO_PROMPT_H

#include "device.h"
#include "util.h"

typedef enum PromptMode { PROMPT_FREE = 0, PROMPT_INSIGHT, PROMPT_FULL } PromptMode;

/* Name -> value pairs. Zero-initialize (PromptVars v = {0}); the set
 * functions copy their arguments; prompt_vars_free releases. */
typedef struct PromptVars {
    char **names;
    char **values;
    int    n, cap;
} PromptVars;

/* One earlier solution for the history section (I2). Borrowed strings;
 * NULL fields print as "n/a" (rationale: "(none recorded)"). */
typedef struct PromptHistoryItem {
    const char *label;       /* e.g. "#12 gen 3" */
    const char *source;      /* the kernel source */
    double      latency_ms;  /* <= 0: unknown */
    double      speedup;     /* vs. the baseline; <= 0: unknown */
    const char *rationale;   /* the LLM's rationale when it proposed it */
} PromptHistoryItem;

/* Measured facts about the parent for the insights section (I3). Any
 * negative number means "not measured" and its line is left out. */
typedef struct PromptInsights {
    long        ctas;             /* CTAs of the largest launch */
    double      occupancy;        /* achieved or theoretical, 0..1 */
    const char *occupancy_limiter;/* "registers", "shared memory", "threads", "blocks"; NULL: unknown */
    int         registers;        /* per thread */
    int         spill_bytes;      /* stores + loads */
    int         smem_bytes;       /* static + dynamic per CTA */
    double      latency_ms;
    double      tflops;           /* achieved */
    double      gbps;             /* achieved */
    const char *recent_compile_errors; /* NULL or text (already bounded by the caller) */
    const char *recent_gate_failures;  /* NULL or text */
} PromptInsights;

/* Set name to value (copies both; replaces an earlier value). */
void prompt_vars_set(PromptVars *v, const char *name, const char *value);
/* printf form of prompt_vars_set. */
void prompt_vars_setf(PromptVars *v, const char *name, const char *fmt, ...) EVO_PRINTF(3, 4);
/* The value of name, or NULL. */
const char *prompt_vars_get(const PromptVars *v, const char *name);
void prompt_vars_free(PromptVars *v);

/* Set the device_* placeholders from d: device_name, device_arch,
 * device_sms, device_smem_per_block (opt-in bytes), device_peak_tflops,
 * device_peak_gbps. */
void prompt_vars_set_device(PromptVars *v, const DeviceInfo *d);

/* Render template_text, replacing each {{name}} (spaces inside the braces
 * allowed; names are [A-Za-z0-9_]+) by its value in vars. Writes a fresh
 * string to *out. Returns 0, or -1 with err "line N: unknown placeholder
 * {{name}}" or "line N: malformed placeholder ..." (*out untouched). */
int prompt_render(const char *template_text, const PromptVars *vars, char **out, EvoErr *err);

/* Read dir/file and render it: prompt_render with the path in errors
 * ("prompts/insights.md: line 3: unknown placeholder {{x}}"). */
int prompt_render_file(const char *dir, const char *file, const PromptVars *vars, char **out, EvoErr *err);

/* Assemble a request: *system from dir/system.md and *user from the
 * mode's sections (see above), each rendered with vars. The mode's
 * sections need their placeholders: history.md needs {{history}} (see
 * prompt_format_history), insights.md {{insights}} (prompt_format_insights).
 * Both outputs are fresh strings. Returns 0 or -1 (err names file and line). */
int prompt_assemble(const char *dir, PromptMode mode, const PromptVars *vars,
                    char **system, char **user, EvoErr *err);

/* Render items[0..n) through dir/history_item.md (placeholders rank,
 * label, latency, speedup, rationale, source) into one text for the
 * {{history}} placeholder. n == 0 gives "(no earlier solutions yet)". */
int prompt_format_history(const char *dir, const PromptHistoryItem *items, int n, char **out, EvoErr *err);

/* A bullet list of measured insights for the {{insights}} placeholder:
 * CTAs vs. SMs (waves), occupancy and its limiter, registers, spills,
 * shared memory, achieved TFLOP/s and GB/s as % of the device's peaks,
 * recent compile errors and gate failures. dev may be NULL (no %). */
char *prompt_format_insights(const PromptInsights *in, const DeviceInfo *dev);

/* Initialize in to "nothing measured" (every number -1, strings NULL). */
void prompt_insights_init(PromptInsights *in);

/* "free" / "insight" / "full", and the reverse (-1 when unknown). */
const char *prompt_mode_name(PromptMode m);
int prompt_mode_parse(const char *s);

#endif

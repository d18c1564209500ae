/*
 * llmop: the LLM operator of the evolutionary loop, the glue between the
 * loop (evolve.c), the prompts (prompt.h), the client (llm.h) and the
 * store. It builds a request for one parent (EvoEngineer's I1 task
 * context, I2 history of the best solutions, I3 insights from the
 * parent's measurements and the run's recent failures), sends it, and
 * hands the finished answers back; evolve.c turns an answer into a child.
 *
 * Concurrency: the client (llm.h) only makes progress inside llm_poll(),
 * so an LlmOp owns one background thread that is the only caller of the
 * client after llmop_open(): it submits queued requests and polls. The
 * loop's thread builds prompts (it alone touches the store), queues them
 * with llmop_submit() and takes answers with llmop_collect(), so HTTP
 * transfers progress while the loop compiles and times other children.
 *
 * Kernels: an LLM child is a new template. Its raw code is kept in the
 * store's `kernels` table (store_kernel_put) under the key its params_key
 * carries after '@'; llmop_kernel_of() returns that raw code (or the
 * task's template) for any candidate, for prompts and for children that
 * mutate its parameters.
 *
 * The API key never passes through here: the client reads it from the
 * environment and redacts it (llm.h).
 */
#ifndef EVO_LLMOP_H
#define EVO_LLMOP_H

#include <stdint.h>

#include "device.h"
#include "llm/llm.h"
#include "llm/prompt.h"
#include "store/store.h"
#include "task/task.h"
#include "util.h"

typedef struct LlmOp LlmOp;

typedef struct LlmOpConfig {
    LlmConfig   llm;          /* the client's configuration; its strings must outlive the LlmOp */
    PromptMode  mode;         /* free | insight | full */
    const char *prompts_dir;  /* NULL: $EVOENG_PROMPTS_DIR, else ./prompts when it holds system.md,
                               * else the source tree's prompts/ */
    int         history_k;    /* I2: how many of the best solutions (0: 3) */
    int         failures_k;   /* I3: how many recent failures of the run (0: 3) */
} LlmOpConfig;

/* What the prompt of one request is built from. All borrowed. */
typedef struct LlmOpContext {
    Store            *st;
    const Task       *task;
    const DeviceInfo *dev;
    int64_t           run_id;
    int64_t           generation;
} LlmOpContext;

/* One finished request, as llmop_collect() hands it back. */
typedef struct LlmOpAnswer {
    LlmResult *res;           /* owned by the caller: llm_result_free() */
    int64_t    generation;    /* as submitted */
    int64_t    parent_id;     /* the candidate shown to the LLM */
} LlmOpAnswer;

/* Fill *c with defaults: llm_config_defaults(), mode full, the rest 0. */
void llmop_config_defaults(LlmOpConfig *c);

/* Open the client (llm_open) and start the polling thread. cfg is copied
 * (its strings are borrowed). Returns 0, or -1 with err (the client's
 * error: unknown provider, no model; no prompts directory found). */
int llmop_open(LlmOp **out, const LlmOpConfig *cfg, EvoErr *err);

/* Stop the thread, cancel what is in flight, free everything, set *op to
 * NULL. Safe on NULL. */
void llmop_close(LlmOp **op);

PromptMode llmop_mode(const LlmOp *op);
/* The request budget of the client (0: unlimited). */
int llmop_max_requests(const LlmOp *op);
/* The prompts directory in use. */
const char *llmop_prompts_dir(const LlmOp *op);

/* The raw kernel of candidate c: the stored kernel when its params_key
 * holds '@' (store_kernel_get), else the task's template. Fresh string,
 * or NULL with err. */
char *llmop_kernel_of(Store *st, const Task *task, const CandidateRecord *c, EvoErr *err);

/* Build the (system, user) prompt asking to improve parent, in the
 * configured mode. *system and *user are fresh strings. Returns 0, or -1
 * with err (a prompt file fails to render, the store fails). */
int llmop_build_prompt(LlmOp *op, const LlmOpContext *ctx, const CandidateRecord *parent, char **system,
                       char **user, EvoErr *err);

/* Build the prompt for parent and queue the request; returns at once.
 * Every queued request produces exactly one answer through llmop_collect()
 * (unless llmop_discard() is called first). Returns 0 or -1 (err). */
int llmop_submit(LlmOp *op, const LlmOpContext *ctx, const CandidateRecord *parent, EvoErr *err);

/* Wait up to timeout_ms (0: no wait; < 0: until one is ready or none is
 * pending) and move up to max finished answers into out[]. Returns the
 * count (0 on timeout). */
int llmop_collect(LlmOp *op, int timeout_ms, LlmOpAnswer *out, int max);

/* Requests submitted and not yet collected. */
int llmop_pending(LlmOp *op);

/* Forget every request not yet collected: their answers are dropped when
 * they arrive (the run is stopping). */
void llmop_discard(LlmOp *op);

/* Fill *r (initialised here) from an answer: run, generation, parent,
 * mode, provider, model, url, prompt (the system message, a blank line,
 * the user message), reply, rationale, tokens, latency, HTTP status,
 * attempts, status (llm_status_name) and error. Strings are copied. */
void llmop_request_record(const LlmOpAnswer *a, int64_t run_id, LlmRequestRecord *r);

#endif

/*
 * llm: the LLM client. Sends a (system, user) prompt to a provider and
 * hands back one record per request for the store: the reply, the
 * extracted kernel and rationale, token counts, latency, HTTP status,
 * attempts and a status word.
 *
 * Providers are const vtables in a NULL-terminated registry, chosen by
 * name: "openai" (any OpenAI-compatible chat-completions endpoint: OpenAI,
 * vLLM, Ollama, llama.cpp) and "anthropic" (the Messages API). With a
 * command (--llm-cmd) the prompt goes to `/bin/sh -c CMD` on stdin and the
 * reply is its stdout; the command is killed (its process group) on timeout.
 *
 * Requests run concurrently on libcurl's multi interface: llm_submit()
 * returns at once and llm_poll() drives transfers, retries and commands
 * and returns finished records, so the caller keeps compiling and timing
 * while requests are in flight. Retries (HTTP 408, 429, 5xx, timeouts and
 * connection failures) back off exponentially with jitter, or wait what a
 * Retry-After header says (seconds form, capped); a retry is scheduled,
 * never slept on.
 *
 * Budget: max_requests counts logical requests (one llm_submit each, its
 * retries included). Once spent, further submissions finish at once with
 * status budget_exhausted and nothing is sent.
 *
 * Secrets: the API key is read from the environment (EVOENG_API_KEY, else
 * the provider's OPENAI_API_KEY / ANTHROPIC_API_KEY) and lives only in the
 * request header list. It is redacted ("[REDACTED]") from every error
 * text, reply and log line; records never hold request headers.
 */
#ifndef EVO_LLM_H
#define EVO_LLM_H

#include <stddef.h>

#include "llm/record.h"
#include "util.h"

typedef struct Llm Llm;


/* Fill *c with the defaults listed above (all pointers NULL). */
void llm_config_defaults(LlmConfig *c);

/* 1 when url's host (as libcurl reads it) is a loopback address:
 * 127.x.y.z, ::1 or localhost. */
int llm_url_is_loopback(const char *url);

/* Create a client. cfg is copied. The URL, if given, is used as it is
 * when it ends with the provider's endpoint path ("/chat/completions",
 * "/messages"); otherwise it is a base URL: openai appends
 * "/chat/completions" (give "http://host:8000/v1"), anthropic appends
 * "/messages" after "/v1" or else "/v1/messages". Reads the API key from
 * the environment (none: no auth header is sent, fine for local servers).
 * Only http:// and https:// are spoken, and http:// (the key and the
 * prompts in clear) only to a loopback host unless cfg->insecure.
 * Returns 0, or -1 with err (unknown provider, listing the known ones; no
 * model; a refused URL; curl init). */
int llm_open(Llm **out, const LlmConfig *cfg, EvoErr *err);

/* Cancel what is in flight (commands are killed), free everything,
 * set *l to NULL. Safe on NULL. */
void llm_close(Llm **l);

/* Queue a request; returns at once. The request's strings are copied.
 * user is handed back in the result. Never fails for network reasons:
 * every submitted request produces exactly one result through llm_poll.
 * Returns 0, or -1 with err on a misuse (NULL prompt). */
int llm_submit(Llm *l, const LlmRequest *req, void *user, EvoErr *err);

/* Drive the client for up to timeout_ms (0: do what can be done without
 * waiting; < 0: wait until at least one result is ready or nothing is
 * pending). Moves up to max finished results into done[] (the caller
 * frees each with llm_result_free) and returns how many, or -1 with err
 * on an internal failure (curl multi error). */
int llm_poll(Llm *l, int timeout_ms, LlmResult **done, int max, EvoErr *err);

/* Requests submitted and not yet returned by llm_poll. */
int llm_pending(const Llm *l);

/* Logical requests started so far (what max_requests counts). */
int llm_requests_used(const Llm *l);

/* Blocking convenience: submit and poll until this request is done.
 * Only for a client with nothing else pending. Returns 0 and *out, or -1. */
int llm_run(Llm *l, const LlmRequest *req, LlmResult **out, EvoErr *err);

/* The provider names, NULL-terminated ({"openai", "anthropic", NULL}). */
const char *const *llm_provider_names(void);

#endif

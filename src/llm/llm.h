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

#include "util.h"

typedef struct Llm Llm;

typedef enum LlmStatus {
    LLM_OK = 0,
    LLM_HTTP_ERROR,        /* non-2xx after retries, or the connection failed */
    LLM_TIMEOUT,           /* the last attempt timed out */
    LLM_BAD_JSON,          /* the reply is not the JSON the provider promises */
    LLM_NO_CODE,           /* the answer holds no usable code block */
    LLM_MISSING_ENTRY,     /* the kernel lacks an entry point */
    LLM_HOST_CODE,         /* the kernel defines main() (see extract.h) */
    LLM_TOO_LARGE,         /* the reply passed max_reply_bytes */
    LLM_BUDGET_EXHAUSTED,  /* max_requests reached: nothing was sent */
    LLM_CMD_FAILED         /* --llm-cmd exited non-zero or could not start */
} LlmStatus;

typedef struct LlmConfig {
    const char *provider;         /* "openai" (default) or "anthropic"; ignored with cmd */
    const char *url;              /* NULL: the provider's default; see llm_open for the form */
    const char *model;            /* required for providers */
    const char *cmd;              /* non-NULL: use this command instead of HTTP */
    int    concurrency;           /* requests in flight at most (default 4) */
    int    max_requests;          /* budget per client; 0: unlimited */
    int    max_retries;           /* retries after the first attempt (default 4) */
    double connect_timeout_s;     /* default 10 */
    double timeout_s;             /* per attempt / for the command (default 300) */
    double backoff_base_s;        /* first backoff (default 1); doubles per retry */
    double backoff_max_s;         /* backoff cap (default 60) */
    double retry_after_cap_s;     /* Retry-After cap (default 120) */
    size_t max_reply_bytes;       /* reply size cap (default 4 MiB) */
    size_t rationale_max;         /* rationale bound in bytes (default 2000) */
    int    max_tokens;            /* output tokens asked for (default 8192) */
    double temperature;           /* < 0: the provider's default (default -1) */
    int    insecure;              /* 1: allow http:// to a host not on loopback (--llm-insecure) */
} LlmConfig;

typedef struct LlmRequest {
    const char *mode;             /* "free" | "insight" | "full": recorded only */
    const char *system;           /* system message (may be NULL) */
    const char *prompt;           /* user message */
    const char *const *entries;   /* entry points the kernel must define */
    int         nentries;
} LlmRequest;

/* One finished request: the record the store keeps. All strings owned,
 * never NULL (possibly ""), key-free. */
typedef struct LlmResult {
    void      *user;              /* as given to llm_submit */
    LlmStatus  status;
    char      *mode;
    char      *provider;          /* "openai", "anthropic" or "cmd" */
    char      *model;             /* "" for cmd */
    char      *url;               /* the endpoint, or the command for cmd */
    char      *system;            /* the system message sent */
    char      *prompt;            /* the user message sent */
    char      *reply;             /* raw reply body / command stdout, at most max_reply_bytes */
    char      *text;              /* the assistant's text from the reply */
    char      *code;              /* the extracted kernel ("" when none) */
    char      *rationale;         /* the extracted rationale */
    char      *stop_reason;       /* "stop", "end_turn", "length", "max_tokens", ... or "" */
    char      *error;             /* why it failed ("" when ok) */
    long       input_tokens;      /* -1 when not reported */
    long       output_tokens;
    double     latency_ms;        /* submit-to-finish minus queueing, retries included */
    long       http_status;       /* last HTTP status; 0 when none; exit status for cmd */
    int        attempts;          /* HTTP attempts made (1 for cmd, 0 when not sent) */
} LlmResult;

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

void llm_result_free(LlmResult **r);

/* "ok", "http_error", "timeout", "bad_json", "no_code", "missing_entry",
 * "host_code", "too_large", "budget_exhausted", "cmd_failed". */
const char *llm_status_name(LlmStatus s);

/* The provider names, NULL-terminated ({"openai", "anthropic", NULL}). */
const char *const *llm_provider_names(void);

#endif

/*
 * record: what the LLM client takes and gives: its configuration, a
 * request, and the record of a finished request that the store keeps,
 * with its status (llm.h is the client itself).
 */
#ifndef EVO_LLM_RECORD_H
#define EVO_LLM_RECORD_H

#include <stddef.h>

#include "util.h"

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

void llm_result_free(LlmResult **r);

/* "ok", "http_error", "timeout", "bad_json", "no_code", "missing_entry",
 * "host_code", "too_large", "budget_exhausted", "cmd_failed". */
const char *llm_status_name(LlmStatus s);

#endif

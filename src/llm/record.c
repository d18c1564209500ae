/*
 * record: the LLM client's records. See record.h.
 */
#include "llm/record.h"

#include <stdlib.h>

void llm_result_free(LlmResult **pr)
{
    LlmResult *r = pr ? *pr : NULL;
    if (!r)
        return;
    free(r->mode);
    free(r->provider);
    free(r->model);
    free(r->url);
    free(r->system);
    free(r->prompt);
    free(r->reply);
    free(r->text);
    free(r->code);
    free(r->rationale);
    free(r->stop_reason);
    free(r->error);
    free(r);
    *pr = NULL;
}

const char *llm_status_name(LlmStatus s)
{
    static const char *const names[] = {"ok", "http_error", "timeout", "bad_json", "no_code", "missing_entry",
                                        "host_code", "too_large", "budget_exhausted", "cmd_failed"};
    return (unsigned)s < EVO_ARRAY_LEN(names) ? names[s] : "?";
}

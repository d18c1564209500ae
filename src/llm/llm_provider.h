/*
 * llm_provider: the HTTP APIs the LLM client speaks (OpenAI's chat
 * completions and Anthropic's messages): request bodies, headers, reply
 * parsing and endpoints. Private to the client (src/llm/).
 */
#ifndef EVO_LLM_PROVIDER_H
#define EVO_LLM_PROVIDER_H

#include <curl/curl.h>
#include <jansson.h>

#include "llm/record.h"

/* What a provider's reply parser extracts. */
typedef struct Parsed {
    char *text;          /* owned */
    char *stop_reason;   /* owned, may be NULL */
    long  input_tokens, output_tokens;
} Parsed;

typedef struct LlmProvider {
    const char *name;
    const char *default_url;
    const char *key_env;     /* provider's API key variable */
    /* The request body (fresh JSON text). */
    char *(*build_body)(const LlmConfig *c, const char *system, const char *prompt);
    /* Append the auth and protocol headers (key may be NULL). */
    struct curl_slist *(*headers)(struct curl_slist *h, const char *key);
    /* Parse a 2xx reply. Returns 0 or -1 with err naming the missing field. */
    int (*parse)(json_t *root, Parsed *p, EvoErr *err);
    /* Make the endpoint URL from a user-given URL (fresh string). */
    char *(*endpoint)(const char *url);
} LlmProvider;

/* The provider called name ("openai", "anthropic"), or NULL. */
const LlmProvider *llm_provider_find(const char *name);

#endif

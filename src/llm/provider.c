/*
 * llm/provider: the OpenAI and Anthropic request and reply formats (see
 * llm_provider.h).
 */
#include <stdlib.h>
#include <string.h>

#include "llm/llm.h"
#include "llm/llm_provider.h"


static char *dump_json(json_t *root)
{
    char *s = json_dumps(root, JSON_COMPACT);
    json_decref(root);
    if (!s) {
        fprintf(stderr, "evoeng: out of memory\n");
        abort();
    }
    char *r = xstrdup(s);
    free(s);
    return r;
}

static long json_long(json_t *obj, const char *key)
{
    json_t *v = obj ? json_object_get(obj, key) : NULL;
    return json_is_integer(v) ? (long)json_integer_value(v) : -1;
}

static char *strip_slash(const char *url)
{
    size_t n = strlen(url);
    while (n > 0 && url[n - 1] == '/')
        n--;
    return xstrndup(url, n);
}

static int ends_with(const char *s, const char *suffix)
{
    size_t a = strlen(s), b = strlen(suffix);
    return a >= b && strcmp(s + a - b, suffix) == 0;
}

/* OpenAI-compatible chat completions. */

static char *openai_body(const LlmConfig *c, const char *system, const char *prompt)
{
    json_t *root = json_object(), *msgs = json_array();
    json_object_set_new(root, "model", json_string(c->model));
    if (system && *system)
        json_array_append_new(msgs, json_pack("{s:s, s:s}", "role", "system", "content", system));
    json_array_append_new(msgs, json_pack("{s:s, s:s}", "role", "user", "content", prompt));
    json_object_set_new(root, "messages", msgs);
    if (c->max_tokens > 0)
        json_object_set_new(root, "max_tokens", json_integer(c->max_tokens));
    if (c->temperature >= 0)
        json_object_set_new(root, "temperature", json_real(c->temperature));
    return dump_json(root);
}

static struct curl_slist *openai_headers(struct curl_slist *h, const char *key)
{
    h = curl_slist_append(h, "Content-Type: application/json");
    if (key && *key) {
        char *line = xasprintf("Authorization: Bearer %s", key);
        h = curl_slist_append(h, line);
        memset(line, 0, strlen(line));
        free(line);
    }
    return h;
}

static int openai_parse(json_t *root, Parsed *p, EvoErr *err)
{
    json_t *choices = json_object_get(root, "choices");
    json_t *c0 = json_array_get(choices, 0);
    json_t *msg = json_object_get(c0, "message");
    json_t *content = json_object_get(msg, "content");
    if (!json_is_string(content))
        return err_set(err, "the reply has no string choices[0].message.content");
    p->text = xstrdup(json_string_value(content));
    json_t *fr = json_object_get(c0, "finish_reason");
    if (json_is_string(fr))
        p->stop_reason = xstrdup(json_string_value(fr));
    json_t *usage = json_object_get(root, "usage");
    p->input_tokens = json_long(usage, "prompt_tokens");
    p->output_tokens = json_long(usage, "completion_tokens");
    return 0;
}

static char *openai_endpoint(const char *url)
{
    char *base = strip_slash(url);
    if (ends_with(base, "/chat/completions"))
        return base;
    char *r = xasprintf("%s/chat/completions", base);
    free(base);
    return r;
}

/* Anthropic Messages API. */

static char *anthropic_body(const LlmConfig *c, const char *system, const char *prompt)
{
    json_t *root = json_object(), *msgs = json_array();
    json_object_set_new(root, "model", json_string(c->model));
    json_object_set_new(root, "max_tokens", json_integer(c->max_tokens > 0 ? c->max_tokens : 8192));
    if (system && *system)
        json_object_set_new(root, "system", json_string(system));
    json_array_append_new(msgs, json_pack("{s:s, s:s}", "role", "user", "content", prompt));
    json_object_set_new(root, "messages", msgs);
    if (c->temperature >= 0)
        json_object_set_new(root, "temperature", json_real(c->temperature));
    return dump_json(root);
}

static struct curl_slist *anthropic_headers(struct curl_slist *h, const char *key)
{
    h = curl_slist_append(h, "Content-Type: application/json");
    h = curl_slist_append(h, "anthropic-version: 2023-06-01");
    if (key && *key) {
        char *line = xasprintf("x-api-key: %s", key);
        h = curl_slist_append(h, line);
        memset(line, 0, strlen(line));
        free(line);
    }
    return h;
}

static int anthropic_parse(json_t *root, Parsed *p, EvoErr *err)
{
    json_t *content = json_object_get(root, "content");
    if (!json_is_array(content))
        return err_set(err, "the reply has no content array");
    StrBuf sb = {0};
    int ntext = 0;
    for (size_t i = 0; i < json_array_size(content); i++) {
        json_t *blk = json_array_get(content, i);
        json_t *type = json_object_get(blk, "type"), *text = json_object_get(blk, "text");
        if (json_is_string(type) && strcmp(json_string_value(type), "text") == 0 && json_is_string(text)) {
            sb_append(&sb, json_string_value(text));
            ntext++;
        }
    }
    if (!ntext) {
        sb_free(&sb);
        return err_set(err, "the reply's content array has no text block");
    }
    p->text = sb_take(&sb);
    json_t *sr = json_object_get(root, "stop_reason");
    if (json_is_string(sr))
        p->stop_reason = xstrdup(json_string_value(sr));
    json_t *usage = json_object_get(root, "usage");
    p->input_tokens = json_long(usage, "input_tokens");
    p->output_tokens = json_long(usage, "output_tokens");
    return 0;
}

static char *anthropic_endpoint(const char *url)
{
    char *base = strip_slash(url);
    if (ends_with(base, "/messages"))
        return base;
    char *r = xasprintf("%s%s", base, ends_with(base, "/v1") ? "/messages" : "/v1/messages");
    free(base);
    return r;
}

static const LlmProvider provider_openai = {
    "openai", "https://api.openai.com/v1", "OPENAI_API_KEY",
    openai_body, openai_headers, openai_parse, openai_endpoint,
};

static const LlmProvider provider_anthropic = {
    "anthropic", "https://api.anthropic.com", "ANTHROPIC_API_KEY",
    anthropic_body, anthropic_headers, anthropic_parse, anthropic_endpoint,
};

static const LlmProvider *const providers[] = {&provider_openai, &provider_anthropic, NULL};
static const char *const provider_names[] = {"openai", "anthropic", NULL};

const char *const *llm_provider_names(void)
{
    return provider_names;
}

const LlmProvider *llm_provider_find(const char *name)
{
    for (int i = 0; providers[i]; i++)
        if (strcmp(providers[i]->name, name) == 0)
            return providers[i];
    return NULL;
}


/*
 * test_net_llm: the LLM HTTP client against tests/llm_stub.py on
 * 127.0.0.1 (both APIs): extraction outcomes, retries (429 + Retry-After,
 * 500), timeouts, bad JSON, size cap, budget, concurrency, and that the
 * API key never shows in a record or on stderr. Loopback only.
 */
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "llm/llm.h"
#include "msg.h"
#include "testhelp.h"
#include "stub.h"

#define KEY "sk-test-SECRET-1234"

static const char *const entries[] = {"attn_fwd"};


/* The key must appear in no field of any record. */
static void check_no_key(const LlmResult *r)
{
    const char *f[] = {r->mode, r->provider, r->model, r->url, r->system, r->prompt, r->reply,
                       r->text, r->code, r->rationale, r->stop_reason, r->error};
    for (size_t i = 0; i < EVO_ARRAY_LEN(f); i++) {
        CHECK(f[i] != NULL);
        CHECK_MSG(!f[i] || !strstr(f[i], KEY), "field %zu holds the key", i);
    }
}

static void config(LlmConfig *c, const char *provider, const Stub *s)
{
    llm_config_defaults(c);
    c->provider = provider;
    c->url = strcmp(provider, "openai") == 0 ? NULL : s->url;
    c->model = "stub-model";
    c->timeout_s = 5;
    c->connect_timeout_s = 2;
    c->backoff_base_s = 0.05;
    c->max_retries = 3;
}

static char url_v1[160];

/* Run one request against a fresh stub with scenario; returns the record. */
static LlmResult *one(const char *provider, const char *scenario, void (*tweak)(LlmConfig *), double *wall_ms)
{
    Stub s;
    LlmConfig c;
    Llm *l = NULL;
    LlmResult *r = NULL;
    EvoErr err = {{0}};
    if (stub_start(&s, "tests/data/llm/scenarios.json", scenario, KEY) < 0) {
        CHECK(!"stub started");
        return NULL;
    }
    config(&c, provider, &s);
    snprintf(url_v1, sizeof url_v1, "%s/v1", s.url);
    if (strcmp(provider, "openai") == 0)
        c.url = url_v1;
    if (tweak)
        tweak(&c);
    CHECK_MSG(llm_open(&l, &c, &err) == 0, "%s", err.msg);
    LlmRequest req = {"free", "SYSTEM-TEXT", "USER-TEXT", entries, 1};
    double t0 = time_now_ms();
    if (l)
        CHECK_MSG(llm_run(l, &req, &r, &err) == 0, "%s", err.msg);
    if (wall_ms)
        *wall_ms = time_now_ms() - t0;
    llm_close(&l);
    stub_stop(&s);
    if (r)
        check_no_key(r);
    else
        CHECK(!"got a record");
    return r;
}

static void test_ok_openai(void)
{
    LlmResult *r = one("openai", "ok", NULL, NULL);
    if (!r)
        return;
    CHECK_MSG(r->status == LLM_OK, "%s: %s", llm_status_name(r->status), r->error);
    CHECK_CONTAINS(r->code, "attn_fwd");
    CHECK_CONTAINS(r->rationale, "cuts global memory traffic");
    CHECK_STR(r->provider, "openai");
    CHECK_STR(r->model, "stub-model");
    CHECK_STR(r->mode, "free");
    CHECK_CONTAINS(r->url, "/v1/chat/completions");
    CHECK_STR(r->stop_reason, "stop");
    CHECK_STR(r->error, "");
    CHECK_STR(r->prompt, "USER-TEXT");
    CHECK_STR(r->system, "SYSTEM-TEXT");
    CHECK_CONTAINS(r->reply, "\"choices\"");
    CHECK(r->input_tokens == 123 && r->output_tokens == 456);
    CHECK(r->http_status == 200);
    CHECK(r->attempts == 1);
    CHECK(r->latency_ms > 0);
    llm_result_free(&r);
}

static void test_ok_anthropic(void)
{
    LlmResult *r = one("anthropic", "ok", NULL, NULL);
    if (!r)
        return;
    CHECK_MSG(r->status == LLM_OK, "%s: %s", llm_status_name(r->status), r->error);
    CHECK_CONTAINS(r->code, "attn_fwd");
    CHECK_CONTAINS(r->url, "/v1/messages");
    CHECK_STR(r->provider, "anthropic");
    CHECK_STR(r->stop_reason, "end_turn");
    CHECK(r->input_tokens == 321 && r->output_tokens == 654);
    llm_result_free(&r);
}

static void test_request_body(void)
{
    /* The stub echoes the request body: check what each provider sent. */
    LlmResult *r = one("openai", "echo", NULL, NULL);
    if (r) {
        CHECK(r->status == LLM_NO_CODE);
        CHECK_CONTAINS(r->text, "\"model\":\"stub-model\"");
        CHECK_CONTAINS(r->text, "{\"role\":\"system\",\"content\":\"SYSTEM-TEXT\"}");
        CHECK_CONTAINS(r->text, "{\"role\":\"user\",\"content\":\"USER-TEXT\"}");
        CHECK_CONTAINS(r->text, "\"max_tokens\":8192");
        llm_result_free(&r);
    }
    r = one("anthropic", "echo", NULL, NULL);
    if (r) {
        CHECK_CONTAINS(r->text, "\"system\":\"SYSTEM-TEXT\"");
        CHECK_CONTAINS(r->text, "\"messages\":[{\"role\":\"user\",\"content\":\"USER-TEXT\"}]");
        llm_result_free(&r);
    }
}

static void test_redaction(void)
{
    /* The stub echoes the auth headers back: the record holds them only
     * redacted (one() also checks every field for the key). */
    LlmResult *r = one("openai", "echo_headers", NULL, NULL);
    if (r) {
        CHECK_CONTAINS(r->text, "Authorization: Bearer [REDACTED]");
        CHECK_CONTAINS(r->reply, "Bearer [REDACTED]");
        CHECK_CONTAINS(r->error, "starts \"Authorization: Bearer [REDACTED]");
        llm_result_free(&r);
    }
    r = one("anthropic", "echo_headers", NULL, NULL);
    if (r) {
        CHECK_CONTAINS(r->text, "x-api-key: [REDACTED]");
        llm_result_free(&r);
    }
}

static void test_compile_error_reply(void)
{
    LlmResult *r = one("openai", "compile_error", NULL, NULL);
    if (!r)
        return;
    CHECK(r->status == LLM_OK);   /* the loop marks it compile_error after NVRTC */
    CHECK_CONTAINS(r->code, "threadIdx.x\n");
    llm_result_free(&r);
}

static void test_no_code(void)
{
    LlmResult *r = one("anthropic", "no_code", NULL, NULL);
    if (!r)
        return;
    CHECK(r->status == LLM_NO_CODE);
    CHECK_CONTAINS(r->error, "no fenced code block in the reply (");
    CHECK_CONTAINS(r->error, "starts \"I think the kernel");
    CHECK_STR(r->code, "");
    llm_result_free(&r);
}

static void test_renamed(void)
{
    LlmResult *r = one("openai", "renamed", NULL, NULL);
    if (!r)
        return;
    CHECK(r->status == LLM_MISSING_ENTRY);
    CHECK_STR(r->error, "entry point 'attn_fwd' not found in the proposed kernel");
    llm_result_free(&r);
}

static void test_rate_limited(void)
{
    double wall = 0;
    LlmResult *r = one("openai", "rate_limited", NULL, &wall);
    if (!r)
        return;
    CHECK_MSG(r->status == LLM_OK, "%s: %s", llm_status_name(r->status), r->error);
    CHECK(r->attempts == 2);
    CHECK_MSG(wall >= 1000, "Retry-After: 1 not honored, wall %.0f ms", wall);
    CHECK_MSG(r->latency_ms >= 1000, "latency %.0f ms", r->latency_ms);
    CHECK(wall < 3000);
    llm_result_free(&r);
}

static void test_server_error_then_ok(void)
{
    LlmResult *r = one("anthropic", "server_error", NULL, NULL);
    if (!r)
        return;
    CHECK_MSG(r->status == LLM_OK, "%s: %s", llm_status_name(r->status), r->error);
    CHECK(r->attempts == 2);
    llm_result_free(&r);
}

static void retries2(LlmConfig *c) { c->max_retries = 2; }

static void test_server_error_forever(void)
{
    LlmResult *r = one("openai", "always_500", retries2, NULL);
    if (!r)
        return;
    CHECK(r->status == LLM_HTTP_ERROR);
    CHECK(r->attempts == 3);
    CHECK(r->http_status == 500);
    CHECK_CONTAINS(r->error, "HTTP 500: internal error");
    CHECK_CONTAINS(r->error, "gave up after 3 attempts");
    llm_result_free(&r);
}

static void short_timeout(LlmConfig *c) { c->timeout_s = 0.5; c->max_retries = 1; }

static void test_timeout(void)
{
    double wall = 0;
    LlmResult *r = one("openai", "slow", short_timeout, &wall);
    if (!r)
        return;
    CHECK_MSG(r->status == LLM_TIMEOUT, "%s: %s", llm_status_name(r->status), r->error);
    CHECK(r->attempts == 2);
    CHECK_CONTAINS(r->error, "timed out");
    CHECK_MSG(wall >= 1000 && wall < 2500, "wall %.0f ms", wall);
    llm_result_free(&r);
}

static void test_truncated_json(void)
{
    LlmResult *r = one("openai", "truncated", NULL, NULL);
    if (!r)
        return;
    CHECK(r->status == LLM_BAD_JSON);
    CHECK_CONTAINS(r->error, "bad JSON in the reply at line 1, column");
    CHECK(r->attempts == 1);
    llm_result_free(&r);
}

static void small_cap(LlmConfig *c) { c->max_reply_bytes = 64 * 1024; }

static void test_too_large(void)
{
    LlmResult *r = one("anthropic", "huge", small_cap, NULL);
    if (!r)
        return;
    CHECK_MSG(r->status == LLM_TOO_LARGE, "%s: %s", llm_status_name(r->status), r->error);
    CHECK_CONTAINS(r->error, "larger than 65536 bytes");
    CHECK(strlen(r->reply) <= 64 * 1024);
    llm_result_free(&r);
}

static void no_key_env(LlmConfig *c) { unsetenv("EVOENG_API_KEY"); }

static void test_missing_key(void)
{
    /* Without a key there is no auth header: the stub answers 401, which is
     * not retried. */
    LlmResult *r = one("openai", "ok", no_key_env, NULL);
    setenv("EVOENG_API_KEY", KEY, 1);
    if (!r)
        return;
    CHECK(r->status == LLM_HTTP_ERROR);
    CHECK(r->http_status == 401);
    CHECK(r->attempts == 1);
    CHECK_CONTAINS(r->error, "HTTP 401: stub: invalid or missing API key");
    llm_result_free(&r);
}

static void test_budget(void)
{
    Stub s;
    LlmConfig c;
    Llm *l = NULL;
    EvoErr err = {{0}};
    if (stub_start(&s, "tests/data/llm/scenarios.json", "ok_forever", KEY) < 0) {
        CHECK(!"stub started");
        return;
    }
    config(&c, "anthropic", &s);
    c.max_requests = 2;
    CHECK(llm_open(&l, &c, &err) == 0);
    LlmRequest req = {"insight", NULL, "USER", entries, 1};
    int tags[3] = {0, 1, 2};
    for (int i = 0; i < 3; i++)
        CHECK(llm_submit(l, &req, &tags[i], &err) == 0);
    CHECK(llm_pending(l) == 3);
    LlmResult *got[3] = {0};
    int n = 0;
    double t0 = time_now_ms();
    while (n < 3 && time_now_ms() - t0 < 10000) {
        LlmResult *batch[3];
        int k = llm_poll(l, 1000, batch, 3, &err);
        CHECK(k >= 0);
        for (int i = 0; i < k; i++)
            got[*(int *)batch[i]->user] = batch[i], n++;
    }
    CHECK(n == 3);
    CHECK(llm_pending(l) == 0);
    CHECK(llm_requests_used(l) == 2);
    int ok = 0, spent = 0;
    for (int i = 0; i < 3; i++) {
        if (!got[i])
            continue;
        check_no_key(got[i]);
        ok += got[i]->status == LLM_OK;
        if (got[i]->status == LLM_BUDGET_EXHAUSTED) {
            spent++;
            CHECK(got[i]->attempts == 0);
            CHECK_CONTAINS(got[i]->error, "budget");
            CHECK(i == 2);
        }
        llm_result_free(&got[i]);
    }
    CHECK(ok == 2 && spent == 1);
    llm_close(&l);
    stub_stop(&s);
}

/* Four requests of 1 s each: with concurrency 4 they overlap (~1 s), with
 * concurrency 2 they run two at a time (~2 s). */
static double run_parallel(int concurrency, int nreq)
{
    Stub s;
    LlmConfig c;
    Llm *l = NULL;
    EvoErr err = {{0}};
    if (stub_start(&s, "tests/data/llm/scenarios.json", "slow_ok", KEY) < 0) {
        CHECK(!"stub started");
        return -1;
    }
    config(&c, "openai", &s);
    snprintf(url_v1, sizeof url_v1, "%s/v1/chat/completions", s.url);
    c.url = url_v1;
    c.concurrency = concurrency;
    CHECK(llm_open(&l, &c, &err) == 0);
    LlmRequest req = {"full", "S", "U", entries, 1};
    double t0 = time_now_ms();
    for (int i = 0; i < nreq; i++)
        CHECK(llm_submit(l, &req, NULL, &err) == 0);
    int n = 0;
    while (n < nreq && time_now_ms() - t0 < 15000) {
        LlmResult *batch[8];
        int k = llm_poll(l, 200, batch, 8, &err);
        CHECK(k >= 0);
        for (int i = 0; i < k; i++) {
            CHECK_MSG(batch[i]->status == LLM_OK, "%s", batch[i]->error);
            CHECK(batch[i]->latency_ms >= 900);
            check_no_key(batch[i]);
            llm_result_free(&batch[i]);
        }
        n += k > 0 ? k : 0;
    }
    double wall = time_now_ms() - t0;
    CHECK(n == nreq);
    llm_close(&l);
    stub_stop(&s);
    return wall;
}

static void test_concurrency(void)
{
    double w4 = run_parallel(4, 4);
    CHECK_MSG(w4 >= 900 && w4 < 2500, "4 requests of 1 s, 4 in flight: %.0f ms", w4);
    double w2 = run_parallel(2, 4);
    CHECK_MSG(w2 >= 1900 && w2 < 3500, "4 requests of 1 s, 2 in flight: %.0f ms", w2);
}

static void test_open_errors(void)
{
    LlmConfig c;
    Llm *l = NULL;
    EvoErr err = {{0}};
    llm_config_defaults(&c);
    c.provider = "gemini";
    c.model = "m";
    CHECK(llm_open(&l, &c, &err) == -1);
    CHECK_STR(err.msg, "--llm: unknown provider 'gemini' (known: openai, anthropic)");
    CHECK(l == NULL);
    c.provider = "anthropic";
    c.model = NULL;
    CHECK(llm_open(&l, &c, &err) == -1);
    CHECK_CONTAINS(err.msg, "--llm-model");
    CHECK_STR(llm_provider_names()[1], "anthropic");
    CHECK(llm_provider_names()[2] == NULL);
    CHECK_STR(llm_status_name(LLM_BUDGET_EXHAUSTED), "budget_exhausted");
    CHECK_STR(llm_status_name(LLM_CMD_FAILED), "cmd_failed");
}

/* Issue 35: the key never goes in clear. http:// only to a loopback host
 * (as libcurl reads the host), unless insecure; nothing but http(s). */
static void test_url_rules(void)
{
    static const struct {
        const char *url;
        int ok, ok_insecure;
    } cases[] = {
        {"https://api.openai.com/v1", 1, 1},
        {"http://127.0.0.1:8000/v1", 1, 1},
        {"http://127.9.9.9/v1", 1, 1},
        {"http://localhost:8000/v1", 1, 1},
        {"http://[::1]:8000/v1", 1, 1},
        {"HTTP://127.0.0.1/v1", 1, 1},
        {"http://api.example.com/v1", 0, 1},
        {"http://127.0.0.1.evil.example/v1", 0, 1},
        {"http://127.0.0.1@evil.example/v1", 0, 1},
        {"http://10.0.0.5:8000/v1", 0, 1},
        {"http://[::ffff:10.0.0.5]/v1", 0, 1},
        {"file:///etc/passwd", 0, 0},
        {"ftp://127.0.0.1/x", 0, 0},
        {"gopher://127.0.0.1/x", 0, 0},
        {"not a url", 0, 0},
    };
    for (size_t i = 0; i < EVO_ARRAY_LEN(cases); i++) {
        for (int insecure = 0; insecure < 2; insecure++) {
            LlmConfig c;
            Llm *l = NULL;
            EvoErr err = {{0}};
            llm_config_defaults(&c);
            c.model = "m";
            c.url = cases[i].url;
            c.insecure = insecure;
            int want = insecure ? cases[i].ok_insecure : cases[i].ok;
            int got = llm_open(&l, &c, &err) == 0;
            CHECK_MSG(got == want, "%s (insecure %d): %s", cases[i].url, insecure, got ? "opened" : err.msg);
            llm_close(&l);
        }
    }
    LlmConfig c;
    Llm *l = NULL;
    EvoErr err = {{0}};
    llm_config_defaults(&c);
    c.model = "m";
    c.url = "http://api.example.com/v1";
    CHECK(llm_open(&l, &c, &err) == -1);
    CHECK_CONTAINS(err.msg, "in clear to api.example.com");
    CHECK_CONTAINS(err.msg, "--llm-insecure");
    CHECK(llm_url_is_loopback("http://127.0.0.1:1/v1") && !llm_url_is_loopback("http://127.0.0.1.nip.io/v1"));
}

int main(void)
{
    /* Everything the client logs goes to stderr: capture it to check that
     * the key never shows, then copy it to the real stderr. */
    char cap_path[] = "/tmp/evo_test_net_llm_XXXXXX";
    int cap = mkstemp(cap_path);
    int real_err = dup(2);
    if (cap < 0 || real_err < 0) {
        perror("mkstemp");
        return 1;
    }
    dup2(cap, 2);
    msg_verbosity = 2;
    setenv("EVOENG_API_KEY", KEY, 1);
    /* Loopback only: a proxy from the environment must not get these. */
    static const char *const proxies[] = {"http_proxy", "HTTP_PROXY", "https_proxy", "HTTPS_PROXY", "all_proxy", "ALL_PROXY"};
    for (size_t i = 0; i < EVO_ARRAY_LEN(proxies); i++)
        unsetenv(proxies[i]);

    RUN(test_open_errors);
    RUN(test_url_rules);
    RUN(test_ok_openai);
    RUN(test_ok_anthropic);
    RUN(test_request_body);
    RUN(test_redaction);
    RUN(test_compile_error_reply);
    RUN(test_no_code);
    RUN(test_renamed);
    RUN(test_rate_limited);
    RUN(test_server_error_then_ok);
    RUN(test_server_error_forever);
    RUN(test_timeout);
    RUN(test_truncated_json);
    RUN(test_too_large);
    RUN(test_missing_key);
    RUN(test_budget);
    RUN(test_concurrency);

    fflush(stderr);
    dup2(real_err, 2);
    char *log = NULL;
    EvoErr err = {{0}};
    CHECK(file_read(cap_path, &log, NULL, &err) == 0);
    if (log) {
        fputs(log, stderr);
        CHECK_MSG(strstr(log, KEY) == NULL, "the key appears on stderr");
        CHECK_CONTAINS(log, "retrying in");      /* the client did log */
        CHECK_CONTAINS(log, "[REDACTED]");       /* and redacted the key the stub echoed */
    }
    free(log);
    close(cap);
    unlink(cap_path);
    return test_report();
}

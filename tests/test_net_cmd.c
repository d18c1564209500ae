/*
 * test_net_cmd: the --llm-cmd provider: the prompt goes to a shell
 * command's stdin, the reply comes from its stdout; failures, hangs
 * (killed on timeout), oversized output, budget and concurrency.
 */
#include <stdlib.h>
#include <string.h>

#include "llm/llm.h"
#include "testhelp.h"

static const char *const entries[] = {"attn_fwd"};
static char *ok_file;   /* tests/data/llm/reply_ok.md */

static LlmResult *run_cmd(const char *cmd, double timeout_s, size_t cap, const char *prompt, double *wall)
{
    LlmConfig c;
    Llm *l = NULL;
    LlmResult *r = NULL;
    EvoErr err = {{0}};
    llm_config_defaults(&c);
    c.cmd = cmd;
    c.timeout_s = timeout_s;
    if (cap)
        c.max_reply_bytes = cap;
    CHECK_MSG(llm_open(&l, &c, &err) == 0, "%s", err.msg);
    if (!l)
        return NULL;
    LlmRequest req = {"free", "SYSTEM", prompt ? prompt : "PROMPT", entries, 1};
    double t0 = time_now_ms();
    CHECK_MSG(llm_run(l, &req, &r, &err) == 0, "%s", err.msg);
    if (wall)
        *wall = time_now_ms() - t0;
    llm_close(&l);
    return r;
}

static void test_cat_file(void)
{
    char *cmd = xasprintf("cat '%s'", ok_file);
    LlmResult *r = run_cmd(cmd, 5, 0, NULL, NULL);
    if (r) {
        CHECK_MSG(r->status == LLM_OK, "%s", r->error);
        CHECK_STR(r->provider, "cmd");
        CHECK_STR(r->url, cmd);
        CHECK_STR(r->model, "");
        CHECK_CONTAINS(r->code, "attn_fwd");
        CHECK_CONTAINS(r->rationale, "cuts global memory traffic");
        CHECK_CONTAINS(r->reply, "```cuda");
        CHECK(r->attempts == 1);
        CHECK(r->input_tokens == -1);
        CHECK_STR(r->error, "");
        llm_result_free(&r);
    }
    free(cmd);
}

static void test_prompt_on_stdin(void)
{
    /* `cat` echoes its stdin: system + prompt come back. The prompt holds
     * a kernel, so extraction succeeds too. A 1 MiB prompt checks that
     * feeding stdin does not block on a full pipe. */
    StrBuf p = {0};
    sb_append(&p, "```cuda\nextern \"C\" __global__ void attn_fwd(int *o) {}\n```\n");
    while (p.len < (1u << 20))
        sb_append(&p, "filler line of the prompt, to pass the pipe buffer size\n");
    LlmResult *r = run_cmd("cat", 10, (size_t)4 << 20, p.s, NULL);
    if (r) {
        CHECK_MSG(r->status == LLM_OK, "%s", r->error);
        CHECK(strncmp(r->reply, "SYSTEM\n\n```cuda", 15) == 0);
        CHECK(strlen(r->reply) == strlen("SYSTEM\n\n") + p.len);
        llm_result_free(&r);
    }
    /* A command that reads nothing of a large prompt must not hurt us
     * (no SIGPIPE). */
    char *cmd = xasprintf("cat '%s'", ok_file);
    r = run_cmd(cmd, 10, 0, p.s, NULL);
    if (r) {
        CHECK_MSG(r->status == LLM_OK, "%s", r->error);
        llm_result_free(&r);
    }
    free(cmd);
    sb_free(&p);
}

static void test_failing_command(void)
{
    LlmResult *r = run_cmd("cat >/dev/null; echo 'model not loaded' >&2; exit 3", 5, 0, NULL, NULL);
    if (r) {
        CHECK(r->status == LLM_CMD_FAILED);
        CHECK(r->http_status == 3);
        CHECK_STR(r->error, "--llm-cmd: the command exited with status 3: model not loaded");
        llm_result_free(&r);
    }
    r = run_cmd("no-such-program-evoeng-test", 5, 0, NULL, NULL);
    if (r) {
        CHECK(r->status == LLM_CMD_FAILED);
        CHECK(r->http_status == 127);
        CHECK_CONTAINS(r->error, "not found");
        llm_result_free(&r);
    }
    r = run_cmd("echo 'I cannot help with that.'", 5, 0, NULL, NULL);
    if (r) {
        CHECK(r->status == LLM_NO_CODE);
        CHECK_CONTAINS(r->error, "no fenced code block in the reply (25 characters, starts \"I cannot help with that.\")");
        llm_result_free(&r);
    }
}

static void test_hanging_command(void)
{
    double wall = 0;
    /* The background sleep keeps stdout open: the whole process group
     * must be killed. */
    LlmResult *r = run_cmd("echo partial; sleep 30 & sleep 30", 0.5, 0, NULL, &wall);
    if (r) {
        CHECK(r->status == LLM_TIMEOUT);
        CHECK_CONTAINS(r->error, "no answer within 0.5 s");
        CHECK_CONTAINS(r->reply, "partial");
        CHECK_MSG(wall >= 450 && wall < 2000, "wall %.0f ms", wall);
        llm_result_free(&r);
    }
}

static void test_too_large(void)
{
    LlmResult *r = run_cmd("head -c 300000 /dev/zero | tr '\\0' x", 5, 65536, NULL, NULL);
    if (r) {
        CHECK(r->status == LLM_TOO_LARGE);
        CHECK(strlen(r->reply) == 65536);
        CHECK_CONTAINS(r->error, "larger than 65536 bytes");
        llm_result_free(&r);
    }
}

static void test_parallel_and_budget(void)
{
    LlmConfig c;
    Llm *l = NULL;
    EvoErr err = {{0}};
    char *cmd = xasprintf("sleep 1; cat '%s'", ok_file);
    llm_config_defaults(&c);
    c.cmd = cmd;
    c.timeout_s = 5;
    c.concurrency = 3;
    c.max_requests = 3;
    CHECK(llm_open(&l, &c, &err) == 0);
    LlmRequest req = {"full", NULL, "P", entries, 1};
    for (int i = 0; i < 4; i++)
        CHECK(llm_submit(l, &req, NULL, &err) == 0);
    double t0 = time_now_ms();
    int n = 0, ok = 0, spent = 0;
    while (n < 4 && time_now_ms() - t0 < 10000) {
        LlmResult *b[4];
        int k = llm_poll(l, 500, b, 4, &err);
        CHECK(k >= 0);
        for (int i = 0; i < k; i++) {
            ok += b[i]->status == LLM_OK;
            spent += b[i]->status == LLM_BUDGET_EXHAUSTED;
            llm_result_free(&b[i]);
        }
        n += k > 0 ? k : 0;
    }
    double wall = time_now_ms() - t0;
    CHECK(n == 4 && ok == 3 && spent == 1);
    CHECK_MSG(wall >= 900 && wall < 2500, "3 commands of 1 s in parallel took %.0f ms", wall);
    llm_close(&l);
    free(cmd);
}

static void test_close_kills(void)
{
    /* Closing the client with a command in flight kills it promptly. */
    LlmConfig c;
    Llm *l = NULL;
    EvoErr err = {{0}};
    llm_config_defaults(&c);
    c.cmd = "sleep 30";
    CHECK(llm_open(&l, &c, &err) == 0);
    LlmRequest req = {"free", NULL, "P", entries, 1};
    CHECK(llm_submit(l, &req, NULL, &err) == 0);
    LlmResult *b[1];
    CHECK(llm_poll(l, 100, b, 1, &err) == 0);
    CHECK(llm_pending(l) == 1);
    double t0 = time_now_ms();
    llm_close(&l);
    CHECK(time_now_ms() - t0 < 1000);
    CHECK(l == NULL);
}

int main(void)
{
    const char *root = getenv("EVO_SOURCE_ROOT");
    ok_file = xasprintf("%s/tests/data/llm/reply_ok.md", root ? root : ".");
    RUN(test_cat_file);
    RUN(test_prompt_on_stdin);
    RUN(test_failing_command);
    RUN(test_hanging_command);
    RUN(test_too_large);
    RUN(test_parallel_and_budget);
    RUN(test_close_kills);
    free(ok_file);
    return test_report();
}

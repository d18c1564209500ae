/*
 * test_extract: kernel and rationale extraction from LLM answers, on the
 * canned replies in tests/data/llm/ and on inline edge cases.
 */
#include <stdlib.h>
#include <string.h>

#include "llm/extract.h"
#include "testhelp.h"

static const char *const entries[] = {"attn_fwd"};

static char *data(const char *name)
{
    const char *root = getenv("EVO_SOURCE_ROOT");
    char *path = xasprintf("%s/tests/data/llm/%s", root ? root : ".", name);
    char *text = NULL;
    EvoErr err = {{0}};
    if (file_read(path, &text, NULL, &err) < 0) {
        fprintf(stderr, "%s\n", err.msg);
        text = xstrdup("");
    }
    free(path);
    return text;
}

static void test_ok_reply(void)
{
    char *r = data("reply_ok.md");
    Extracted x;
    EvoErr err = {{0}};
    CHECK(extract_reply(r, entries, 1, 0, &x, &err) == 0);
    CHECK(x.status == EXTRACT_OK);
    CHECK_STR(x.lang, "cuda");
    CHECK_CONTAINS(x.code, "#define BLOCK_M 64");
    CHECK(strstr(x.code, "```") == NULL);
    CHECK_CONTAINS(x.rationale, "I kept the entry point");
    CHECK_CONTAINS(x.rationale, "cuts global memory traffic");
    CHECK(strstr(x.rationale, "__global__") == NULL);
    CHECK(x.nblocks == 1);
    extract_free(&x);
    free(r);
}

static void test_compile_error_is_extracted(void)
{
    char *r = data("reply_compile_error.md");
    Extracted x;
    CHECK(extract_reply(r, entries, 1, 0, &x, NULL) == 0);
    CHECK_STR(x.lang, "cu");
    CHECK_CONTAINS(x.code, "threadIdx.x\n    if");
    extract_free(&x);
    free(r);
}

static void test_no_code(void)
{
    char *r = data("reply_no_code.md");
    Extracted x;
    EvoErr err = {{0}};
    CHECK(extract_reply(r, entries, 1, 0, &x, &err) == -1);
    CHECK(x.status == EXTRACT_NO_CODE);
    CHECK(x.code == NULL);
    char *want = xasprintf("no fenced code block in the reply (%zu characters, starts \"I think the kernel", strlen(r));
    CHECK_CONTAINS(err.msg, want);
    CHECK_CONTAINS(err.msg, "...\")");
    CHECK_CONTAINS(x.rationale, "cp.async");
    free(want);
    extract_free(&x);
    free(r);
}

static void test_renamed_entry(void)
{
    char *r = data("reply_renamed.md");
    Extracted x;
    EvoErr err = {{0}};
    CHECK(extract_reply(r, entries, 1, 0, &x, &err) == -1);
    CHECK(x.status == EXTRACT_MISSING_ENTRY);
    CHECK_STR(err.msg, "entry point 'attn_fwd' not found in the proposed kernel");
    CHECK_CONTAINS(x.code, "attention_forward");
    extract_free(&x);
    free(r);
}

static void test_host_code(void)
{
    char *r = data("reply_host.md");
    Extracted x;
    EvoErr err = {{0}};
    CHECK(extract_reply(r, entries, 1, 0, &x, &err) == -1);
    CHECK(x.status == EXTRACT_HOST_CODE);
    CHECK_CONTAINS(err.msg, "main()");
    CHECK_STR(extract_status_name(x.status), "host_code");
    extract_free(&x);
    free(r);
}

static void test_choice_of_block(void)
{
    /* A python block is ignored; a small snippet loses to the full kernel
     * that has the entry point, even when the snippet comes first and
     * the kernel is untagged. */
    const char *r =
        "Run this:\n```python\nprint('extern \"C\" __global__ void attn_fwd(')\n```\n"
        "The key line:\n```cuda\nacc += a * b; // a long comment that makes this block larger than the kernel itself, really long\n```\n"
        "Full kernel:\n```\nextern \"C\" __global__ void attn_fwd(float *o) { o[0] = 1; }\n```\nDone.\n";
    Extracted x;
    CHECK(extract_reply(r, entries, 1, 0, &x, NULL) == 0);
    CHECK_CONTAINS(x.code, "o[0] = 1");
    CHECK_STR(x.lang, "");
    CHECK(x.nblocks == 3);
    CHECK_CONTAINS(x.rationale, "Run this:");
    CHECK_CONTAINS(x.rationale, "Done.");
    extract_free(&x);

    /* Without entries to check, the largest block wins. */
    CHECK(extract_reply(r, NULL, 0, 0, &x, NULL) == 0);
    CHECK_CONTAINS(x.code, "acc += a * b");
    extract_free(&x);
}

static void test_only_other_languages(void)
{
    const char *r = "Try:\n```python\nx = 1\n```\n~~~json\n{}\n~~~\n";
    Extracted x;
    EvoErr err = {{0}};
    CHECK(extract_reply(r, entries, 1, 0, &x, &err) == -1);
    CHECK(x.status == EXTRACT_NO_CODE);
    CHECK_STR(err.msg, "no CUDA code block in the reply (2 fenced blocks, tagged python, json)");
    extract_free(&x);
}

static void test_unterminated(void)
{
    const char *r = "Here:\n\n```cuda\nextern \"C\" __global__ void attn_fwd(float *o) {\n  o[0] = 1;\n";
    Extracted x;
    EvoErr err = {{0}};
    CHECK(extract_reply(r, entries, 1, 0, &x, &err) == -1);
    CHECK(x.status == EXTRACT_NO_CODE);
    CHECK_STR(err.msg, "the code block opened at line 3 of the reply is never closed (truncated reply?)");
    extract_free(&x);
}

static void test_fence_details(void)
{
    /* A longer fence may hold a shorter one; indentation up to 3 spaces;
     * an info string after the tag; CRLF line ends. */
    const char *r = "intro\r\n  ````cuda title=\"k.cu\"\r\nextern \"C\" __global__ void attn_fwd(int *p)\r\n{ /* ``` */ }\r\n```\r\n````\r\nafter\r\n";
    Extracted x;
    CHECK(extract_reply(r, entries, 1, 0, &x, NULL) == 0);
    CHECK_STR(x.lang, "cuda");
    CHECK_CONTAINS(x.code, "{ /* ``` */ }\r\n```\r\n");
    CHECK_STR(x.rationale, "intro\n\nafter");
    extract_free(&x);
}

static void test_entry_detection(void)
{
    CHECK(extract_has_entry("extern \"C\" __global__ void attn_fwd(int a) {}", "attn_fwd"));
    CHECK(extract_has_entry("extern   \"C\"\n__global__\n void\n  attn_fwd\n (int a) {}", "attn_fwd"));
    CHECK(extract_has_entry("extern \"C\" __global__ __launch_bounds__(256, 2) void attn_fwd(int a) {}", "attn_fwd"));
    CHECK(extract_has_entry("extern \"C\" {\n__global__ void attn_fwd(int a) {}\n}", "attn_fwd"));
    CHECK(!extract_has_entry("__global__ void attn_fwd(int a) {}", "attn_fwd"));       /* C++ linkage */
    CHECK(!extract_has_entry("extern \"C\" __device__ void attn_fwd(int a) {}", "attn_fwd"));
    CHECK(!extract_has_entry("extern \"C\" __global__ void attn_fwd2(int a) {}", "attn_fwd"));
    CHECK(!extract_has_entry("// extern \"C\" __global__ void attn_fwd(int a) {}\n", "attn_fwd"));
    CHECK(!extract_has_entry("/* extern \"C\" __global__ void attn_fwd(int a) {} */", "attn_fwd"));
    CHECK(!extract_has_entry("extern \"C\" __global__ void attn_fwd", "attn_fwd"));
    /* calling it from another kernel is not defining it */
    CHECK(!extract_has_entry("extern \"C\" __global__ void other(int a) { attn_fwd(a); }", "attn_fwd"));
}

static void test_rationale_bound(void)
{
    /* 10 'a' then a 2-byte UTF-8 character: a bound of 11 must not split it. */
    const char *r = "aaaaaaaaaa\xc3\xa9tail\n```cuda\nextern \"C\" __global__ void attn_fwd() {}\n```\n";
    Extracted x;
    CHECK(extract_reply(r, entries, 1, 11, &x, NULL) == 0);
    CHECK_STR(x.rationale, "aaaaaaaaaa [...]");
    extract_free(&x);
    CHECK(extract_reply(r, entries, 1, 12, &x, NULL) == 0);
    CHECK_STR(x.rationale, "aaaaaaaaaa\xc3\xa9 [...]");
    extract_free(&x);
    CHECK(extract_reply("", entries, 1, 0, &x, NULL) == -1);
    CHECK_STR(x.rationale, "");
    extract_free(&x);
}

int main(void)
{
    RUN(test_ok_reply);
    RUN(test_compile_error_is_extracted);
    RUN(test_no_code);
    RUN(test_renamed_entry);
    RUN(test_host_code);
    RUN(test_choice_of_block);
    RUN(test_only_other_languages);
    RUN(test_unterminated);
    RUN(test_fence_details);
    RUN(test_entry_detection);
    RUN(test_rationale_bound);
    return test_report();
}

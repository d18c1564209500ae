/*
 * test_prompt: placeholder rendering, the three prompt modes over the
 * shipped prompts/ files, and the history and insights sections.
 */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "device.h"
#include "llm/llmop.h"
#include "llm/prompt.h"
#include "store/store.h"
#include "task/task.h"
#include "testhelp.h"

static char *prompts_dir(void)
{
    const char *root = getenv("EVO_SOURCE_ROOT");
    return xasprintf("%s/prompts", root ? root : ".");
}

static void test_render_basic(void)
{
    PromptVars v = {0};
    char *out = NULL;
    EvoErr err = {{0}};
    prompt_vars_set(&v, "a", "one");
    prompt_vars_set(&v, "b_2", "{{a}}");   /* values are not re-scanned */
    prompt_vars_set(&v, "a", "ONE");       /* replaces */
    CHECK(prompt_render("x {{a}} y {{ b_2 }} z {a} }}", &v, &out, &err) == 0);
    CHECK_STR(out, "x ONE y {{a}} z {a} }}");
    free(out);
    CHECK_STR(prompt_vars_get(&v, "b_2"), "{{a}}");
    CHECK(prompt_vars_get(&v, "c") == NULL);
    prompt_vars_free(&v);
    CHECK(v.n == 0);
}

static void test_render_errors(void)
{
    PromptVars v = {0};
    char *out = (char *)"untouched";
    EvoErr err = {{0}};
    prompt_vars_set(&v, "known", "k");
    CHECK(prompt_render("line one\nline {{known}}\n\nthen {{task_descripton}} here", &v, &out, &err) == -1);
    CHECK_STR(err.msg, "line 4: unknown placeholder {{task_descripton}}");
    CHECK_STR(out, "untouched");
    CHECK(prompt_render("a\n{{ not closed", &v, &out, &err) == -1);
    CHECK_CONTAINS(err.msg, "line 2: malformed placeholder \"{{ not closed\"");
    CHECK(prompt_render("{{}}", &v, &out, &err) == -1);
    CHECK_CONTAINS(err.msg, "line 1: malformed placeholder");
    prompt_vars_free(&v);
}

/* Every placeholder prompts/README.md documents for the loop. */
static void fill_task(PromptVars *v)
{
    DeviceInfo d;
    EvoErr err = {{0}};
    CHECK(device_profile("sm_90", &d, &err) == 0);
    prompt_vars_set_device(v, &d);
    prompt_vars_set(v, "task_name", "attention");
    prompt_vars_set(v, "task_description", "fp16 attention forward");
    prompt_vars_set(v, "entry_points", "extern \"C\" __global__ void attn_fwd(const half *Q, half *O, int S)");
    prompt_vars_set(v, "launch_plan", "attn_fwd: grid [ceil_div(S, BLOCK_M), B*H] block [128]");
    prompt_vars_set(v, "buffers", "Q f16 [B,H,S,D] input");
    prompt_vars_set(v, "params", "BLOCK_M in {32, 64, 128}, now 64");
    prompt_vars_set(v, "tolerance", "atol 1e-2, rtol 1e-2");
    prompt_vars_set(v, "parent_label", "#7, 0.123 ms");
    prompt_vars_set(v, "parent_source", "PARENT_SOURCE_TEXT");
}

static void test_modes(void)
{
    char *dir = prompts_dir();
    PromptVars v = {0};
    char *sys = NULL, *user = NULL, *hist = NULL, *ins = NULL;
    EvoErr err = {{0}};
    fill_task(&v);

    /* free: I1 + request only; needs no history/insights values. */
    CHECK_MSG(prompt_assemble(dir, PROMPT_FREE, &v, &sys, &user, &err) == 0, "%s", err.msg);
    CHECK_CONTAINS(sys, "extern \"C\" __global__ void");
    CHECK_CONTAINS(sys, "sm_90");
    CHECK_CONTAINS(user, "fp16 attention forward");
    CHECK_CONTAINS(user, "PARENT_SOURCE_TEXT");
    CHECK_CONTAINS(user, "BLOCK_M in {32, 64, 128}");
    CHECK_CONTAINS(user, "## Your task");
    CHECK(strstr(user, "## Measurements") == NULL);
    CHECK(strstr(user, "## Best solutions") == NULL);
    CHECK(strstr(user, "{{") == NULL);
    free(sys);
    free(user);

    /* insight without {{insights}}: the error names the file and line. */
    CHECK(prompt_assemble(dir, PROMPT_INSIGHT, &v, &sys, &user, &err) == -1);
    CHECK_CONTAINS(err.msg, "insights.md: line 2: unknown placeholder {{insights}}");

    PromptInsights in;
    prompt_insights_init(&in);
    in.ctas = 66;
    in.occupancy = 0.25;
    in.occupancy_limiter = "shared memory";
    in.spill_bytes = 16;
    in.tflops = 99;
    DeviceInfo d;
    CHECK(device_profile("sm_90", &d, &err) == 0);
    ins = prompt_format_insights(&in, &d);
    prompt_vars_set(&v, "insights", ins);
    CHECK_MSG(prompt_assemble(dir, PROMPT_INSIGHT, &v, &sys, &user, &err) == 0, "%s", err.msg);
    CHECK_CONTAINS(user, "## Measurements");
    CHECK_CONTAINS(user, "limited by shared memory");
    CHECK(strstr(user, "## Best solutions") == NULL);
    CHECK(strstr(user, "## Measurements") > strstr(user, "PARENT_SOURCE_TEXT"));
    CHECK(strstr(user, "## Your task") > strstr(user, "## Measurements"));
    free(sys);
    free(user);

    PromptHistoryItem items[2] = {
        {"#3 gen 1", "SOURCE_THREE", 0.1, 2.5, "used tensor cores"},
        {"#5 gen 2", "SOURCE_FIVE", -1, -1, NULL},
    };
    CHECK_MSG(prompt_format_history(dir, items, 2, &hist, &err) == 0, "%s", err.msg);
    CHECK_CONTAINS(hist, "### Solution 1: #3 gen 1, 0.1000 ms, speedup 2.50x");
    CHECK_CONTAINS(hist, "used tensor cores");
    CHECK_CONTAINS(hist, "### Solution 2: #5 gen 2, n/a, speedup n/a");
    CHECK_CONTAINS(hist, "(none recorded)");
    CHECK(strstr(hist, "SOURCE_FIVE") > strstr(hist, "SOURCE_THREE"));
    prompt_vars_set(&v, "history", hist);
    CHECK_MSG(prompt_assemble(dir, PROMPT_FULL, &v, &sys, &user, &err) == 0, "%s", err.msg);
    CHECK(strstr(user, "## Best solutions") != NULL);
    CHECK(strstr(user, "## Best solutions") < strstr(user, "## Measurements"));
    CHECK_CONTAINS(user, "SOURCE_FIVE");
    free(sys);
    free(user);
    free(hist);

    CHECK(prompt_format_history(dir, NULL, 0, &hist, &err) == 0);
    CHECK_STR(hist, "(no earlier solutions yet)\n");
    free(hist);
    free(ins);
    prompt_vars_free(&v);
    free(dir);
}

static void test_insights(void)
{
    PromptInsights in;
    DeviceInfo d;
    EvoErr err = {{0}};
    CHECK(device_profile("sm_90", &d, &err) == 0);
    prompt_insights_init(&in);
    char *s = prompt_format_insights(&in, &d);
    CHECK_STR(s, "(no measurements yet)\n");
    free(s);
    in.ctas = d.sm_count / 2;
    in.gbps = d.peak_gbps / 4;
    in.tflops = d.peak_tflops_fp16 / 2;
    in.registers = 255;
    in.recent_compile_errors = "error: identifier \"foo\" is undefined";
    s = prompt_format_insights(&in, &d);
    CHECK_CONTAINS(s, "(0.50 waves): fewer CTAs than SMs");
    CHECK_CONTAINS(s, "(25.0% of the");
    CHECK_CONTAINS(s, "(50.0% of the");
    CHECK_CONTAINS(s, "Registers per thread: 255");
    CHECK_CONTAINS(s, "identifier \"foo\"");
    CHECK(strstr(s, "Occupancy") == NULL);
    free(s);
    s = prompt_format_insights(&in, NULL);   /* no device: no percentages */
    CHECK(strstr(s, "% of the") == NULL);
    free(s);
}

static void test_mode_names(void)
{
    CHECK(prompt_mode_parse("free") == PROMPT_FREE);
    CHECK(prompt_mode_parse("insight") == PROMPT_INSIGHT);
    CHECK(prompt_mode_parse("full") == PROMPT_FULL);
    CHECK(prompt_mode_parse("ful") == -1);
    CHECK_STR(prompt_mode_name(PROMPT_INSIGHT), "insight");
}

/* A kernel file's template and namespaced entries (tests/data/kfile) are
 * shown to the LLM by their declarations, with the name they are launched
 * by; never as extern "C" kernels of that name. */
static void test_template_entries(void)
{
    const char *root = getenv("EVO_SOURCE_ROOT");
    char tmp[] = "/tmp/evo_test_prompt_XXXXXX";
    CHECK(mkdtemp(tmp) != NULL);
    EvoErr err = {{0}};
    char *path = xasprintf("%s/tests/data/kfile/task.json", root ? root : ".");
    Task *t = NULL;
    CHECK_MSG(task_load(path, &t, &err) == 0, "%s", err.msg);
    char *db = xasprintf("%s/p.db", tmp);
    Store *st = NULL;
    CHECK_MSG(store_open(&st, db, &err) == 0, "%s", err.msg);
    LlmOpConfig c;
    llmop_config_defaults(&c);
    c.mode = PROMPT_FREE;
    c.llm.provider = "openai";
    c.llm.url = "http://127.0.0.1:9/v1";   /* nothing is sent */
    c.llm.model = "m";
    char *dir = prompts_dir();
    c.prompts_dir = dir;
    LlmOp *op = NULL;
    CHECK_MSG(llmop_open(&op, &c, &err) == 0, "%s", err.msg);
    DeviceInfo dev;
    CHECK(device_profile("sm_90", &dev, &err) == 0);
    if (t && st && op) {
        LlmOpContext ctx = {.st = st, .task = t, .dev = &dev, .run_id = 1, .generation = 1};
        CandidateRecord parent;
        candidate_record_init(&parent);
        parent.id = 1;
        parent.params_json = xstrdup("{\"THREADS\": 64}");
        parent.params_key = xstrdup("THREADS=64");
        char *sys = NULL, *user = NULL;
        CHECK_MSG(llmop_build_prompt(op, &ctx, &parent, &sys, &user, &err) == 0, "%s", err.msg);
        const char *all = user ? user : "";
        CHECK_CONTAINS(all, "- __global__ void __launch_bounds__(128) attn_rows(const float *__restrict__ q,");
        CHECK_CONTAINS(all, "(launched as attn_rows<SEQ, HEAD_DIM>: keep the kernel's name, template parameters and "
                            "signature)");
        CHECK_CONTAINS(all, "- __global__ void fill(float *x, float value, int n)");
        CHECK_CONTAINS(all, "(launched as util::fill: keep the kernel's name, namespace and signature)");
        CHECK(!strstr(all, "extern \"C\" __global__ void attn_rows<"));
        CHECK(!strstr(all, "void util::fill(...)"));
        free(sys);
        free(user);
        candidate_record_free(&parent);
    }
    llmop_close(&op);
    store_close(&st);
    task_free(&t);
    free(dir);
    unlink(db);
    char *wal = xasprintf("%s-wal", db), *shm = xasprintf("%s-shm", db);
    unlink(wal);
    unlink(shm);
    rmdir(tmp);
    free(wal);
    free(shm);
    free(db);
    free(path);
}

int main(void)
{
    RUN(test_render_basic);
    RUN(test_render_errors);
    RUN(test_modes);
    RUN(test_insights);
    RUN(test_mode_names);
    RUN(test_template_entries);
    return test_report();
}

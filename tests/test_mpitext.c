/*
 * test_mpitext: rank 0 of an MPI run renders a child's source instead of
 * receiving it (issue 32), so what it stores must be the text the agent
 * compiled, byte for byte:
 *   - prep_render_source gives, for every shape, the very text prep_render
 *     puts in that shape's unit (the attention task: compile dims make the
 *     shapes' sources differ), for the template and for a custom kernel;
 *   - mpitext takes rank 0's render only when its hash is the agent's; a
 *     render of another hash (a planted mismatch: other template files)
 *     or a failed one leaves the child without a source until the agent's
 *     own text is taken, and an agent text that is not what its hash says
 *     fails with both hashes named;
 *   - the wire carries the compile row and the text only when asked, and
 *     never an empty compile row over rank 0's.
 */
#include <stdlib.h>
#include <string.h>

#include "compile/prep.h"
#include "device.h"
#include "mpi/mpitext.h"
#include "mpi/wire.h"
#include "search/evolve.h"
#include "task/task.h"
#include "testdata.h"
#include "testhelp.h"

static void check_shapes(const Task *t, const DeviceInfo *dev, const PrepInput *in)
{
    EvoErr err;
    Prepared p;
    CHECK_MSG(prep_render(t, dev, in, &p, &err) == 0, "prep_render: %s", err.msg);
    CHECK_MSG(p.status[0] == 0, "rendered with status %s: %s", p.status, p.error ? p.error : "");
    for (int s = 0; s < p.nplans && !p.status[0]; s++) {
        char *src = NULL;
        CHECK_MSG(prep_render_source(t, in, s, &src, &err) == 0, "prep_render_source: %s", err.msg);
        CHECK_MSG(src && strcmp(src, p.units[p.shape_unit[s]].source) == 0, "shape %d renders another text", s);
        free(src);
    }
    prep_free(&p);
}

static void test_render_source(void)
{
    char *path = test_source_path("templates/attention/task.json");
    Task *t = NULL;
    EvoErr err;
    DeviceInfo dev;
    CHECK_MSG(device_profile("sm_90", &dev, &err) == 0 && task_load(path, &t, &err) == 0, "%s", err.msg);
    free(path);
    if (!t)
        return;
    CHECK(task_nshapes(t) > 1);
    int64_t *vals = xcalloc((size_t)task_nparams(t), sizeof(*vals));
    task_defaults(t, vals);
    PrepInput in = {.vals = vals};
    check_shapes(t, &dev, &in);
    char *custom = xasprintf("// an LLM's variant\n%s", task_template_text(t));
    in.custom_source = custom;
    check_shapes(t, &dev, &in);
    free(custom);
    free(vals);
    task_free(&t);
}

/* MpiRenderFn over a fixed text (ctx), or a failure when ctx is NULL. */
static int render_fixed(void *ctx, const Child *c, char **text, EvoErr *err)
{
    (void)c;
    if (!ctx)
        return err_set(err, "template_render: no such file");
    *text = xstrdup(ctx);
    return 0;
}

static char *hash_of(const char *s)
{
    char hex[65];
    sha256_hex(s, strlen(s), hex);
    return xstrdup(hex);
}

static void test_settle(void)
{
    Child c;
    evolve_child_init(&c, 1);
    c.params_key = xstrdup("BLOCK=64");
    MpiText t = {0};
    EvoErr err;
    double ms = -1;
    CHECK(mpitext_settle(&t, &c, NULL) == 0);   /* no hash: no source to settle */
    mpitext_render(&t, render_fixed, "rank 0's text", &c, &ms);
    CHECK(t.rendered && t.text && ms >= 0);
    /* the agent compiled the same text: rank 0's render is taken */
    c.rec.source_hash = hash_of("rank 0's text");
    CHECK(mpitext_settle(&t, &c, NULL) == 0);
    CHECK_STR(c.source_text, "rank 0's text");
    CHECK(mpitext_settle(&t, &c, NULL) == 0);   /* settled: nothing more */
    /* judged since on an agent that renders another text (a planted
     * mismatch): no source until the agent's is taken */
    free(c.rec.source_hash);
    c.rec.source_hash = hash_of("another host's text");
    CHECK(mpitext_settle(&t, &c, NULL) == 1);
    char *mine = mpitext_describe(&t);
    CHECK(strstr(mine, t.hash) != NULL);
    free(mine);
    CHECK(mpitext_take(&t, &c, "a corrupted text", 2, &err) == -1);
    CHECK(strstr(err.msg, "MPI rank 2") && strstr(err.msg, c.rec.source_hash) && strstr(err.msg, "BLOCK=64"));
    CHECK_STR(c.source_text, "rank 0's text");   /* left as it was */
    CHECK(mpitext_take(&t, &c, NULL, 2, &err) == -1);
    CHECK(mpitext_take(&t, &c, "another host's text", 2, &err) == 0);
    CHECK_STR(c.source_text, "another host's text");
    CHECK(mpitext_settle(&t, &c, NULL) == 0);
    /* a text the agent sent with its reply is taken when it is its
     * hash's, else (a record that names another agent's source) not */
    CHECK(mpitext_settle(&t, &c, "a stage-B agent's text") == 0);
    CHECK_STR(c.source_text, "another host's text");
    free(c.rec.source_hash);
    c.rec.source_hash = hash_of("sent");
    CHECK(mpitext_settle(&t, &c, "not sent") == 1);
    CHECK(mpitext_settle(&t, &c, "sent") == 0);
    CHECK_STR(c.source_text, "sent");
    CHECK(mpitext_settle(&t, &c, NULL) == 0);
    mpitext_free(&t);
    /* a render that fails is no source, and says why */
    mpitext_render(&t, render_fixed, NULL, &c, NULL);
    free(c.rec.source_hash);
    c.rec.source_hash = hash_of("x");
    CHECK(mpitext_settle(&t, &c, NULL) == 1);
    mine = mpitext_describe(&t);
    CHECK(strstr(mine, "no source (template_render: no such file)") != NULL);
    free(mine);
    mpitext_free(&t);
    evolve_child_clear(&c, NULL, NULL);
}

static void test_wire_levels(void)
{
    Child c, d;
    evolve_child_init(&c, 1);
    evolve_child_init(&d, 1);
    c.rec.source_hash = xstrdup("abc");
    c.comp.cache_key = xstrdup("key");
    c.comp.log = xstrdup("ptxas info    : Used 32 registers");
    c.source_text = xstrdup("__global__ void k() {}\n");
    json_t *rec = wire_result_put(&c, WIRE_REC), *comp = wire_result_put(&c, WIRE_COMP),
           *text = wire_result_put(&c, WIRE_TEXT);
    CHECK(json_object_get(rec, "rec") && !json_object_get(rec, "comp") && !json_object_get(rec, "text"));
    CHECK(json_object_get(comp, "comp") && !json_object_get(comp, "text"));
    CHECK(json_object_get(text, "comp") && json_object_get(text, "text"));
    EvoErr err;
    d.source_text = xstrdup("kept");
    CHECK(wire_result_get(comp, &d, &err) == 0);
    CHECK_STR(d.source_text, "kept");   /* absent from the reply: left */
    CHECK_STR(d.comp.log, c.comp.log);
    CHECK_STR(d.rec.source_hash, "abc");
    CHECK(wire_result_get(text, &d, &err) == 0);
    CHECK_STR(d.source_text, c.source_text);
    json_decref(rec);
    json_decref(comp);
    json_decref(text);
    /* no compile row (a child gated only at stage B there): none is sent,
     * and the one rank 0 has stays */
    free(c.comp.cache_key);
    c.comp.cache_key = NULL;
    text = wire_result_put(&c, WIRE_TEXT);
    CHECK(!json_object_get(text, "comp") && json_object_get(text, "text"));
    CHECK(wire_result_get(text, &d, &err) == 0);
    CHECK_STR(d.comp.cache_key, "key");
    json_decref(text);
    evolve_child_clear(&c, NULL, NULL);
    evolve_child_clear(&d, NULL, NULL);
}

int main(void)
{
    RUN(test_render_source);
    RUN(test_settle);
    RUN(test_wire_levels);
    return test_report();
}

/*
 * test_worker_proto: CPU-only tests of the GPU evaluation machinery: the
 * driver loader's failure path, the pipe protocol (round trips, partial
 * reads, EOF, timeouts, garbage), Plan serialization, the worker's
 * timeout / crash / respawn logic against a fake worker (this binary run
 * as "__fake IN OUT"), the gate's host math and the bench statistics.
 */
#include "gpu/bench.h"
#include "gpu/cuda_api.h"
#include "gpu/devkern.h"
#include "gpu/gate.h"
#include "compile/nvrtc.h"
#include "gpu/proto.h"
#include "testhelp.h"
#include "gpu/watchdog.h"
#include "gpu/wmsg.h"
#include "gpu/worker.h"

#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

/* ---- fake worker ------------------------------------------------------ */

/* Behaves per the gate plan's shape label: "ok", "hang", "segv", "fatal",
 * "exit". Refuses a gate whose modules were not loaded in this process,
 * so the test sees whether the orchestrator reloads after a respawn. */
static int fake_worker(int in, int out)
{
    int loaded[64] = {0};
    for (;;) {
        ProtoMsg m;
        EvoErr e;
        json_t *r = NULL;
        WReply ok = {.ok = 1};
        if (proto_read(in, &m, -1, &e) != 0)
            return 0;
        if (m.type == PROTO_HELLO) {
            WHelloReply hr = {.h.ok = 1};
            snprintf(hr.device.name, sizeof(hr.device.name), "fake GPU pid %d", (int)getpid());
            snprintf(hr.device.arch, sizeof(hr.device.arch), "sm_90");
            hr.device.sm_count = 3;
            r = wmsg_put(WMSG_HELLO_REPLY, &hr);
        } else if (m.type == PROTO_LOAD) {
            WLoad q;
            CHECK(wmsg_read(WMSG_LOAD, m.json, &q, &e) == 0);
            if (m.bin_len == 5 && memcmp(m.bin, "BADIM", 5) == 0) {
                r = wmsg_error("compile_error", "cuModuleLoadData: CUDA_ERROR_INVALID_IMAGE: device kernel image is invalid");
            } else {
                WorkerFunc f = {"k", 42, 0, 0, 0};
                WLoadReply lr = {.h.ok = 1, .functions = &f, .nfunctions = 1};
                if (q.module >= 0 && q.module < 64)
                    loaded[q.module] = 1;
                r = wmsg_put(WMSG_LOAD_REPLY, &lr);
            }
            wmsg_free(WMSG_LOAD, &q);
        } else if (m.type == PROTO_GATE) {
            WGate q;
            WGateReply gr = {.h.ok = 1};
            CHECK(wmsg_read(WMSG_GATE, m.json, &q, &e) == 0);
            const char *shape = q.plan.shape_label ? q.plan.shape_label : "";
            gr.report.first_bad = -1;
            if (strcmp(shape, "hang") == 0)
                for (;;)
                    pause();
            if (strcmp(shape, "segv") == 0)
                raise(SIGSEGV);
            if (strcmp(shape, "exit") == 0)
                _exit(3);
            if (!loaded[q.cand & 63] || !loaded[q.ref & 63]) {
                r = wmsg_error("invalid", "module not loaded in this worker");
            } else if (strcmp(shape, "fatal") == 0) {
                gr.report.status = EVAL_CRASHED;
                gr.report.fatal = gr.h.fatal = gr.h.has_fatal = 1;
                snprintf(gr.report.cuda_error, sizeof(gr.report.cuda_error), "CUDA_ERROR_ILLEGAL_ADDRESS");
                snprintf(gr.report.error, sizeof(gr.report.error),
                         "candidate: cuStreamSynchronize: CUDA_ERROR_ILLEGAL_ADDRESS");
                r = wmsg_put(WMSG_GATE_REPLY, &gr);
            } else {
                gr.report.status = EVAL_OK;
                gr.report.seeds_run = q.nseeds;
                gr.report.ref_ms = 0.01;
                r = wmsg_put(WMSG_GATE_REPLY, &gr);
            }
            wmsg_free(WMSG_GATE, &q);
        } else if (m.type == PROTO_QUIT) {
            r = wmsg_put(WMSG_REPLY, &ok);
            proto_write(out, PROTO_REPLY, r, NULL, 0, &e);
            json_decref(r);
            proto_msg_free(&m);
            return 0;
        } else {
            r = wmsg_put(WMSG_REPLY, &ok);
        }
        int fatal = json_is_true(json_object_get(r, "fatal"));
        proto_write(out, PROTO_REPLY, r, NULL, 0, &e);
        json_decref(r);
        proto_msg_free(&m);
        if (fatal)
            return 1;
    }
}

/* ---- helpers ---------------------------------------------------------- */

static void make_plan(Plan *p, const char *shape)
{
    memset(p, 0, sizeof(*p));
    p->shape_label = xstrdup(shape);
    p->nbuffers = 2;
    p->buffers = xcalloc(2, sizeof(PlanBuffer));
    p->buffers[0] = (PlanBuffer){xstrdup("X"), DT_F16, 1000, ROLE_INPUT, {.kind = INIT_NORMAL, .a = 0, .b = 1}, 7, 0, 0, 1, 1};
    p->buffers[1] = (PlanBuffer){xstrdup("Y"), DT_F32, 1000, ROLE_OUTPUT, {.kind = INIT_NORMAL, .a = 0, .b = 0}, 8, 1e-3, 1e-2, 1, 1};
    p->nlaunches = 1;
    p->launches = xcalloc(1, sizeof(PlanLaunch));
    p->launches[0].entry = xstrdup("k");
    p->launches[0].grid[0] = 4; p->launches[0].grid[1] = 1; p->launches[0].grid[2] = 1;
    p->launches[0].block[0] = 256; p->launches[0].block[1] = 1; p->launches[0].block[2] = 1;
    p->launches[0].smem = 65536;
    p->launches[0].nargs = 4;
    p->launches[0].args = xcalloc(4, sizeof(PlanArg));
    p->launches[0].args[0] = (PlanArg){.kind = ARG_BUFFER};
    p->launches[0].args[1] = (PlanArg){.kind = ARG_BUFFER, .buffer = 1};
    p->launches[0].args[2] = (PlanArg){.kind = ARG_I32, .i = 1000};
    p->launches[0].args[3] = (PlanArg){.kind = ARG_F32, .f = 0.125};
    p->nref_launches = 1;
    p->ref_launches = xcalloc(1, sizeof(PlanLaunch));
    p->ref_launches[0].entry = xstrdup("ref");
    p->ref_launches[0].grid[0] = 1; p->ref_launches[0].grid[1] = 1; p->ref_launches[0].grid[2] = 1;
    p->ref_launches[0].block[0] = 32; p->ref_launches[0].block[1] = 1; p->ref_launches[0].block[2] = 1;
    p->ref_launches[0].nargs = 1;
    p->ref_launches[0].args = xcalloc(1, sizeof(PlanArg));
    p->ref_launches[0].args[0] = (PlanArg){.kind = ARG_I64, .i = -5000000000LL};
    p->flops = 2e6;
    p->bytes = 6e3;
    p->min_ctas = 2;
}

/* ---- tests ------------------------------------------------------------ */

static void test_cuda_load_fails_cleanly(void)
{
    CudaApi *api = (CudaApi *)1;
    EvoErr err = {{0}};
    CHECK(cuda_load_from("/nonexistent/libcuda.so.1", &api, &err) == -1);
    CHECK(api == NULL);
    CHECK_CONTAINS(err.msg, "dlopen(/nonexistent/libcuda.so.1)");
    /* a library that exists but is not the driver: a missing symbol */
    CHECK(cuda_load_from("libm.so.6", &api, &err) == -1);
    CHECK(api == NULL);
    CHECK_CONTAINS(err.msg, "dlsym(libm.so.6, cuInit)");
    cuda_close(&api);
    CHECK(cuda_error_is_sticky(CUDA_ERROR_ILLEGAL_ADDRESS));
    CHECK(cuda_error_is_sticky(CUDA_ERROR_MISALIGNED_ADDRESS));
    CHECK(!cuda_error_is_sticky(CUDA_ERROR_INVALID_VALUE));
    CHECK(cuda_check(NULL, CUDA_ERROR_INVALID_VALUE, "api->cuMemAlloc(&p, n)", &err) == -1);
    CHECK_CONTAINS(err.msg, "cuMemAlloc: ");
    CHECK(cuda_check(NULL, CUDA_SUCCESS, "x", &err) == 0);
    CHECK(gate_status_from_cuda(CUDA_ERROR_ILLEGAL_ADDRESS) == EVAL_CRASHED);
    CHECK(gate_status_from_cuda(CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES) == EVAL_RESOURCE);
    CHECK(gate_status_from_cuda(CUDA_ERROR_INVALID_VALUE) == EVAL_LAUNCH_ERROR);
}

static void test_status_names(void)
{
    const char *want[] = {"ok", "incorrect", "crashed", "timeout", "launch_error", "resource", "compile_error",
                          "invalid"};
    for (int i = 0; i < EVAL_NSTATUS; i++) {
        CHECK_STR(gate_status_name((EvalStatus)i), want[i]);
        CHECK(gate_status_parse(want[i]) == i);
    }
    CHECK(gate_status_parse("nope") == -1);
    CHECK_STR(gate_status_name(EVAL_NSTATUS), "?");
}

static void test_proto_roundtrip(void)
{
    int fds[2];
    EvoErr err = {{0}};
    CHECK(pipe(fds) == 0);
    for (int t = PROTO_HELLO; t <= PROTO_QUIT; t++) {
        ProtoMsg m;
        json_t *j = json_pack("{s:i, s:s}", "n", t, "s", "héllo \"q\"");
        unsigned char bin[300];
        for (int i = 0; i < 300; i++)
            bin[i] = (unsigned char)(i * 7 + t);
        CHECK(proto_write(fds[1], t, j, t == PROTO_LOAD ? bin : NULL, t == PROTO_LOAD ? sizeof(bin) : 0, &err) == 0);
        CHECK(proto_read(fds[0], &m, 1000, &err) == 0);
        CHECK(m.type == t);
        CHECK(json_integer_value(json_object_get(m.json, "n")) == t);
        CHECK_STR(json_string_value(json_object_get(m.json, "s")), "héllo \"q\"");
        if (t == PROTO_LOAD) {
            CHECK(m.bin_len == sizeof(bin));
            CHECK(m.bin && memcmp(m.bin, bin, sizeof(bin)) == 0);
        } else {
            CHECK(m.bin_len == 0 && m.bin == NULL);
        }
        CHECK(strcmp(proto_type_name(t), "?") != 0);
        proto_msg_free(&m);
        json_decref(j);
    }
    /* NULL json is sent as {} */
    {
        ProtoMsg m;
        CHECK(proto_write(fds[1], PROTO_REPLY, NULL, NULL, 0, &err) == 0);
        CHECK(proto_read(fds[0], &m, 1000, &err) == 0);
        CHECK(m.type == PROTO_REPLY && json_object_size(m.json) == 0);
        proto_msg_free(&m);
    }
    close(fds[0]);
    close(fds[1]);
}

static void test_proto_partial_eof_timeout(void)
{
    int fds[2];
    EvoErr err = {{0}};
    ProtoMsg m;
    pid_t pid;
    double t0;
    CHECK(pipe(fds) == 0);
    /* a child dribbles one message byte by byte */
    pid = fork();
    if (pid == 0) {
        int p[2];
        ProtoMsg tmp;
        json_t *j = json_pack("{s:s}", "msg", "dribbled");
        /* build the bytes through another pipe, then copy slowly */
        if (pipe(p) != 0)
            _exit(1);
        proto_write(p[1], PROTO_GATE, j, "BIN", 3, &err);
        close(p[1]);
        unsigned char c;
        while (read(p[0], &c, 1) == 1) {
            if (write(fds[1], &c, 1) != 1)
                _exit(1);
            usleep(500);
        }
        (void)tmp;
        _exit(0);
    }
    CHECK(proto_read(fds[0], &m, 5000, &err) == 0);
    CHECK(m.type == PROTO_GATE);
    CHECK_STR(json_string_value(json_object_get(m.json, "msg")), "dribbled");
    CHECK(m.bin_len == 3 && memcmp(m.bin, "BIN", 3) == 0);
    proto_msg_free(&m);
    waitpid(pid, NULL, 0);

    /* timeout with nothing sent */
    t0 = time_now_ms();
    CHECK(proto_read(fds[0], &m, 150, &err) == PROTO_TIMEOUT);
    CHECK(time_now_ms() - t0 >= 140);
    /* bad magic */
    {
        uint32_t junk[4] = {0x12345678u, 1, 0, 0};
        CHECK(write(fds[1], junk, sizeof(junk)) == (ssize_t)sizeof(junk));
        CHECK(proto_read(fds[0], &m, 1000, &err) == -1);
        CHECK_CONTAINS(err.msg, "bad magic");
    }
    /* oversized */
    {
        uint32_t big[4] = {PROTO_MAGIC, 1, PROTO_MAX_JSON + 1, 0};
        CHECK(write(fds[1], big, sizeof(big)) == (ssize_t)sizeof(big));
        CHECK(proto_read(fds[0], &m, 1000, &err) == -1);
        CHECK_CONTAINS(err.msg, "oversized");
    }
    /* invalid JSON */
    {
        uint32_t h[4] = {PROTO_MAGIC, 1, 3, 0};
        CHECK(write(fds[1], h, sizeof(h)) == (ssize_t)sizeof(h));
        CHECK(write(fds[1], "{x}", 3) == 3);
        CHECK(proto_read(fds[0], &m, 1000, &err) == -1);
        CHECK_CONTAINS(err.msg, "invalid JSON");
    }
    /* EOF in the middle of a message */
    {
        uint32_t h[4] = {PROTO_MAGIC, 1, 100, 0};
        CHECK(write(fds[1], h, sizeof(h)) == (ssize_t)sizeof(h));
        CHECK(write(fds[1], "{\"a\":", 5) == 5);
        close(fds[1]);
        CHECK(proto_read(fds[0], &m, 1000, &err) == PROTO_EOF);
    }
    close(fds[0]);
    /* writing to a pipe without reader: error, not SIGPIPE */
    CHECK(pipe(fds) == 0);
    close(fds[0]);
    CHECK(proto_write(fds[1], PROTO_HELLO, NULL, NULL, 0, &err) == -1);
    CHECK_CONTAINS(err.msg, "write(worker pipe)");
    close(fds[1]);
}

/* encode kind from msg, decode, encode again: the same text */
static void wmsg_round(WMsgKind kind, const void *msg, void *back)
{
    EvoErr err = {{0}};
    json_t *j = wmsg_put(kind, msg);
    char *a = json_dumps(j, JSON_COMPACT | JSON_SORT_KEYS);
    CHECK(wmsg_read(kind, j, back, &err) == 0);
    json_t *k = wmsg_put(kind, back);
    char *b = json_dumps(k, JSON_COMPACT | JSON_SORT_KEYS);
    CHECK_STR(b, a);
    free(a);
    free(b);
    json_decref(j);
    json_decref(k);
}

/* A plan with every argument kind (buffer, the four scalars, a tensor
 * map) and two profiles. */
static void make_full_plan(Plan *p)
{
    make_plan(p, "full");
    PlanLaunch *l = &p->launches[0];
    l->args = xrealloc(l->args, 7 * sizeof(PlanArg));
    l->args[4] = (PlanArg){.kind = ARG_I64, .i = -5000000000LL};
    l->args[5] = (PlanArg){.kind = ARG_F64, .f = -2.5e-300};
    l->args[6] = (PlanArg){.kind = ARG_TMAP, .buffer = 0,
                           .tmap = {3, {64, 128, 8}, {128, 32768}, {64, 64, 1}, {1, 1, 2}, 3, 2, 1}};
    l->nargs = 7;
    p->nprofiles = 2;
    p->profiles = xcalloc(2, sizeof(PlanProfile));
    for (int k = 0; k < 2; k++) {
        p->profiles[k].name = xstrdup(k ? "large" : "normal");
        p->profiles[k].timing = k == 0;
        p->profiles[k].init = xcalloc(2, sizeof(InitSpec));
        p->profiles[k].init[0] = p->buffers[0].init;
        p->profiles[k].init[1] = (InitSpec){INIT_OUTLIER, 0.5, 4, 0.001, 10, ROWS_UNIFORM, 0.5, 2, 64};
    }
}

/* Every argument kind and the profiles cross whole; malformed plans fail
 * with the JSON path of the bad value. */
static void test_plan_fields(void)
{
    Plan p, q;
    EvoErr err = {{0}};
    make_full_plan(&p);
    json_t *j = proto_plan_to_json(&p);
    char *a = json_dumps(j, JSON_COMPACT);
    CHECK(proto_plan_from_json(j, &q, &err) == 0);
    const PlanTmap *t = &q.launches[0].args[6].tmap;
    CHECK(q.launches[0].nargs == 7 && q.launches[0].args[6].kind == ARG_TMAP && t->rank == 3);
    CHECK(t->dims[1] == 128 && t->strides[1] == 32768 && t->box[0] == 64 && t->elem_strides[2] == 2);
    CHECK(t->swizzle == 3 && t->l2_promotion == 2 && t->oob_nan == 1);
    CHECK(q.launches[0].args[5].f == -2.5e-300 && q.launches[0].args[4].i == -5000000000LL);
    CHECK(q.nprofiles == 2 && plan_init(&q, 1, 1)->rows == ROWS_UNIFORM);
    json_t *k = proto_plan_to_json(&q);
    char *b = json_dumps(k, JSON_COMPACT);
    CHECK_STR(b, a);
    free(a);
    free(b);
    json_decref(k);
    plan_free(&q);
    static const struct {
        const char *path, *value, *msg;   /* a JSON pointer-ish path, the value put there */
    } bad[] = {
        {"shape", "7", "plan.shape: a string expected, found an integer"},
        {"buffers.1.dtype", "9", "plan.buffers[1].dtype: 9 is not a dtype"},
        {"buffers.0.init.k", "\"x\"", "plan.buffers[0].init.k: an integer expected, found a string"},
        {"launches.0.grid", "[1,2]", "plan.launches[0].grid: 2 elements, 3 expected"},
        {"launches.0.args.6.t.box", "[1,2]", "plan.launches[0].args[6].t.box: 2 elements, 3 expected"},
        {"launches.0.args.6.t.strides", "[1]", "plan.launches[0].args[6].t.strides: an array of rank - 1 (2)"},
        {"launches.0.args.0.b", "9", "plan.launches[0].args[0].b: buffer index 9 out of range"},
        {"profiles.1.init", "[]", "plan.profiles[1].init: 0 elements, one per buffer (2) expected"},
        {"profiles.0.timing", "\"yes\"", "plan.profiles[0].timing: a boolean expected, found a string"},
        {"profiles.0", "{}", "plan.profiles[0].name: missing"},
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        json_t *v = json_loads(bad[i].value, JSON_DECODE_ANY, NULL), *at = j, *up = NULL;
        char path[128], *save = NULL, *tok;
        const char *last = NULL;
        snprintf(path, sizeof(path), "%s", bad[i].path);
        json_t *copy = json_deep_copy(j);
        at = copy;
        for (tok = strtok_r(path, ".", &save); tok; tok = strtok_r(NULL, ".", &save)) {
            up = at;
            last = tok;
            at = json_is_array(at) ? json_array_get(at, (size_t)atoi(tok)) : json_object_get(at, tok);
        }
        if (json_is_array(up))
            json_array_set_new(up, (size_t)atoi(last), v);
        else
            json_object_set_new(up, last, v);
        err.msg[0] = 0;
        CHECK(proto_plan_from_json(copy, &q, &err) == -1);
        CHECK_CONTAINS(err.msg, bad[i].msg);
        json_decref(copy);
    }
    json_decref(j);
    plan_free(&p);
}

/* Each request and reply kind crosses whole through its table. */
static void test_wmsg_kinds(void)
{
    EvoErr err = {{0}};
    Plan p;
    make_full_plan(&p);
    char *ents[] = {"k", "attn<64, 128>"};
    WHello h = {3}, h2;
    wmsg_round(WMSG_HELLO, &h, &h2);
    CHECK(h2.device == 3);
    WLoad ld = {7, ents, 2}, ld2;
    wmsg_round(WMSG_LOAD, &ld, &ld2);
    CHECK(ld2.module == 7 && ld2.nentries == 2);
    CHECK_STR(ld2.entries[1], "attn<64, 128>");
    wmsg_free(WMSG_LOAD, &ld2);
    wmsg_round(WMSG_UNLOAD, &ld, &ld2);
    CHECK(ld2.module == 7 && ld2.nentries == 0);
    WGate g = {.plan = p, .cand = 4, .ref = 5, .seeds = {1, 0xfedcba9876543210ULL}, .nseeds = 2}, g2;
    wmsg_round(WMSG_GATE, &g, &g2);
    CHECK(g2.nseeds == 2 && g2.seeds[1] == 0xfedcba9876543210ULL && g2.plan.launches[0].nargs == 7);
    wmsg_free(WMSG_GATE, &g2);
    WTime t = {.plan = p, .module = 4, .which_ref = 1}, t2;
    bench_options_default(&t.bench);
    t.bench.samples = 33;
    wmsg_round(WMSG_TIME, &t, &t2);
    CHECK(t2.which_ref == 1 && t2.bench.samples == 33 && t2.plan.nprofiles == 2);
    wmsg_free(WMSG_TIME, &t2);
    WCompare c = {.plan_a = p, .module_a = 1, .plan_b = p, .module_b = 2, .which_b = 1}, c2;
    bench_options_default(&c.bench);
    wmsg_round(WMSG_COMPARE, &c, &c2);
    CHECK(c2.module_b == 2 && c2.which_b == 1 && c2.which_a == 0 && c2.plan_b.nbuffers == 2);
    wmsg_free(WMSG_COMPARE, &c2);
    /* replies: an error, and each kind's body */
    WReply e = {.status = "compile_error", .error = "bad image", .fatal = 1, .has_fatal = 1}, e2;
    wmsg_round(WMSG_REPLY, &e, &e2);
    CHECK(!e2.ok && e2.fatal && e2.has_fatal);
    CHECK_STR(e2.status, "compile_error");
    WHelloReply hr = {.h.ok = 1}, hr2;
    snprintf(hr.device.name, sizeof(hr.device.name), "H100");
    wmsg_round(WMSG_HELLO_REPLY, &hr, &hr2);
    CHECK_STR(hr2.device.name, "H100");
    WorkerFunc f[2] = {{"k", 40, 16, 0, 1024}, {"j", 255, 0, 8, 512}};
    WLoadReply lr = {.h.ok = 1, .functions = f, .nfunctions = 2}, lr2;
    wmsg_round(WMSG_LOAD_REPLY, &lr, &lr2);
    CHECK(lr2.nfunctions == 2 && lr2.functions[1].registers == 255 && lr2.functions[1].local_bytes == 8);
    wmsg_free(WMSG_LOAD_REPLY, &lr2);
    WGateReply gr = {.h.ok = 1, .h.has_fatal = 1}, gr2;
    gr.report.status = EVAL_INCORRECT;
    gr.report.first_bad = 17;
    wmsg_round(WMSG_GATE_REPLY, &gr, &gr2);
    CHECK(gr2.report.status == EVAL_INCORRECT && gr2.report.first_bad == 17 && gr2.h.has_fatal && !gr2.h.fatal);
    WTimeReply tr = {.h.ok = 1}, tr2;
    tr.result.ms.median = 0.25;
    tr.result.batch = 8;
    wmsg_round(WMSG_TIME_REPLY, &tr, &tr2);
    CHECK(tr2.result.ms.median == 0.25 && tr2.result.batch == 8);
    WCompareReply cr = {.h.ok = 1}, cr2;
    cr.result.ratio.median = 0.9;
    wmsg_round(WMSG_COMPARE_REPLY, &cr, &cr2);
    CHECK(cr2.result.ratio.median == 0.9);
    /* malformed: a wrong type, a bad name, a string too long, with the path */
    json_t *j = wmsg_put(WMSG_TIME, &t);
    json_object_set_new(j, "which", json_string("both"));
    CHECK(wmsg_read(WMSG_TIME, j, &t2, &err) == -1);
    CHECK_CONTAINS(err.msg, "which: unknown name 'both'");
    json_object_set_new(j, "which", json_string("ref"));
    json_object_set_new(json_object_get(j, "bench"), "samples", json_string("many"));
    CHECK(wmsg_read(WMSG_TIME, j, &t2, &err) == -1);
    CHECK_CONTAINS(err.msg, "bench.samples: an integer expected, found a string");
    json_decref(j);
    char longname[200];
    memset(longname, 'n', sizeof(longname) - 1);
    longname[sizeof(longname) - 1] = 0;
    j = wmsg_put(WMSG_LOAD_REPLY, &lr);
    json_object_set_new(json_array_get(json_object_get(j, "functions"), 1), "name", json_string(longname));
    CHECK(wmsg_read(WMSG_LOAD_REPLY, j, &lr2, &err) == -1);
    CHECK_CONTAINS(err.msg, "functions[1].name: a string of 199 bytes, at most 95");
    json_decref(j);
    j = wmsg_put(WMSG_GATE, &g);
    json_object_set_new(json_object_get(j, "plan"), "min_ctas", json_real(1.5));
    CHECK(wmsg_read(WMSG_GATE, j, &g2, &err) == -1);
    CHECK_CONTAINS(err.msg, "plan.min_ctas: an integer expected, found a real number");
    json_decref(j);
    plan_free(&p);
}

static void test_plan_json(void)
{
    Plan p, q;
    EvoErr err = {{0}};
    make_plan(&p, "B=1 S=77");
    json_t *j = proto_plan_to_json(&p);
    CHECK(j != NULL);
    CHECK(proto_plan_from_json(j, &q, &err) == 0);
    CHECK_STR(q.shape_label, "B=1 S=77");
    CHECK(q.nbuffers == 2 && q.nlaunches == 1 && q.nref_launches == 1);
    CHECK_STR(q.buffers[0].name, "X");
    CHECK(q.buffers[0].dtype == DT_F16 && q.buffers[0].role == ROLE_INPUT && q.buffers[0].seed_salt == 7);
    CHECK(q.buffers[1].dtype == DT_F32 && q.buffers[1].role == ROLE_OUTPUT);
    CHECK_NEAR(q.buffers[1].atol, 1e-3, 0);
    CHECK_NEAR(q.buffers[1].rtol, 1e-2, 0);
    CHECK_NEAR(q.buffers[0].init.b, 1, 0);
    CHECK_STR(q.launches[0].entry, "k");
    CHECK(q.launches[0].grid[0] == 4 && q.launches[0].block[0] == 256 && q.launches[0].smem == 65536);
    CHECK(q.launches[0].nargs == 4 && q.launches[0].args[1].kind == ARG_BUFFER && q.launches[0].args[1].buffer == 1);
    CHECK(q.launches[0].args[2].i == 1000);
    CHECK_NEAR(q.launches[0].args[3].f, 0.125, 0);
    CHECK(q.ref_launches[0].args[0].kind == ARG_I64 && q.ref_launches[0].args[0].i == -5000000000LL);
    CHECK(q.min_ctas == 2);
    CHECK_NEAR(q.flops, 2e6, 0);
    CHECK(q.nprofiles == 0 && plan_nprofiles(&q) == 1);
    plan_free(&q);
    json_decref(j);
    /* profiles, and the generators of the new kinds, cross whole */
    p.nprofiles = 2;
    p.profiles = xcalloc(2, sizeof(PlanProfile));
    for (int k = 0; k < 2; k++) {
        p.profiles[k].name = xstrdup(k ? "large" : "normal");
        p.profiles[k].timing = k == 0;
        p.profiles[k].init = xcalloc(2, sizeof(InitSpec));
        p.profiles[k].init[0] = p.buffers[0].init;
    }
    p.profiles[1].init[0] = (InitSpec){INIT_OUTLIER, 0.5, 4, 0.001, 10, ROWS_LOGNORMAL, -0.25, 1.5, 64};
    j = proto_plan_to_json(&p);
    CHECK(proto_plan_from_json(j, &q, &err) == 0);
    CHECK(q.nprofiles == 2 && plan_timing_mask(&q) == 1u);
    CHECK_STR(plan_profile_name(&q, 1), "large");
    const InitSpec *g = plan_init(&q, 1, 0);
    CHECK(g->kind == INIT_OUTLIER && g->a == 0.5 && g->b == 4 && g->p == 0.001 && g->c == 10);
    CHECK(g->rows == ROWS_LOGNORMAL && g->ra == -0.25 && g->rb == 1.5 && g->row_len == 64);
    CHECK(plan_init(&q, 0, 0)->kind == INIT_NORMAL && plan_init(&q, 0, 0)->b == 1);
    plan_free(&q);
    json_decref(j);
    j = proto_plan_to_json(&p);
    json_object_set_new(json_array_get(json_object_get(j, "profiles"), 1), "init", json_array());
    CHECK(proto_plan_from_json(j, &q, &err) == -1);
    CHECK_CONTAINS(err.msg, "plan.profiles[1].init: 0 elements, one per buffer (2) expected");
    json_decref(j);
    j = proto_plan_to_json(&p);
    /* a bad buffer index is refused */
    json_object_set_new(json_array_get(json_object_get(json_array_get(json_object_get(j, "launches"), 0), "args"), 0),
                        "b", json_integer(9));
    CHECK(proto_plan_from_json(j, &q, &err) == -1);
    CHECK_CONTAINS(err.msg, "plan.launches[0].args[0].b: buffer index 9 out of range");
    json_decref(j);
    plan_free(&p);

    DeviceInfo d, e;
    CHECK(device_profile("sm_90", &d, &err) == 0);
    j = proto_device_to_json(&d);
    CHECK(proto_device_from_json(j, &e, &err) == 0);
    CHECK(memcmp(&d, &e, sizeof(d)) == 0);
    json_decref(j);
}

static void test_half(void)
{
    const float vals[] = {0.0f, 1.0f, -2.5f, 65504.0f, 0.333251953125f, 6.103515625e-05f, 5.960464477539063e-08f};
    for (size_t i = 0; i < EVO_ARRAY_LEN(vals); i++)
        CHECK_NEAR(gate_f16_to_f32(gate_f32_to_f16(vals[i])), vals[i], 0);
    CHECK(gate_f32_to_f16(1.0f) == 0x3c00);
    CHECK(gate_f32_to_f16(-2.0f) == 0xc000);
    CHECK(gate_f32_to_f16(1e6f) == 0x7c00);         /* overflow -> inf */
    CHECK(gate_f32_to_f16(1.0f + 1.0f / 2048) == 0x3c00); /* tie rounds to even */
    CHECK(gate_f32_to_f16(1.0f + 3.0f / 2048) == 0x3c02);
    CHECK(isnan(gate_f16_to_f32(0xFFFF)));
    CHECK(gate_f32_to_bf16(1.0f) == 0x3f80);
    CHECK_NEAR(gate_bf16_to_f32(gate_f32_to_bf16(3.140625f)), 3.140625, 0);
    CHECK(isnan(gate_bf16_to_f32(0xFFFF)));
    float s;
    uint32_t sb = GATE_SENTINEL_F32;
    memcpy(&s, &sb, 4);
    CHECK(isnan(s));
}

static void test_fill(void)
{
    PlanBuffer b = {0};
    float *x = xmalloc(20000 * sizeof(float)), *y = xmalloc(20000 * sizeof(float));
    double sum = 0, sq = 0;
    b.dtype = DT_F32;
    b.count = 20000;
    b.init.kind = INIT_NORMAL;
    b.init.a = 1;
    b.init.b = 2;
    b.seed_salt = 5;
    gate_fill_host(&b, 42, x);
    gate_fill_host(&b, 42, y);
    CHECK(memcmp(x, y, 20000 * sizeof(float)) == 0);
    for (int i = 0; i < 20000; i++) {
        sum += x[i];
        sq += (x[i] - 1) * (x[i] - 1);
    }
    CHECK_NEAR(sum / 20000, 1.0, 0.05);
    CHECK_NEAR(sqrt(sq / 20000), 2.0, 0.05);
    gate_fill_host(&b, 43, y);
    CHECK(memcmp(x, y, 20000 * sizeof(float)) != 0);
    b.seed_salt = 6;
    gate_fill_host(&b, 42, y);
    CHECK(memcmp(x, y, 20000 * sizeof(float)) != 0);
    b.init.kind = INIT_UNIFORM;
    b.init.a = -1;
    b.init.b = 3;
    gate_fill_host(&b, 1, x);
    int inrange = 1;
    for (int i = 0; i < 20000; i++)
        inrange &= x[i] >= -1 && x[i] < 3;
    CHECK(inrange);
    b.init.kind = INIT_CONST;
    b.init.a = 0.5;
    b.dtype = DT_F16;
    gate_fill_host(&b, 1, x);
    CHECK(((uint16_t *)x)[19999] == 0x3800);
    /* counter-based: element i does not depend on the buffer's length, so
     * the device can make any element on its own */
    b.dtype = DT_F32;
    b.init.kind = INIT_NORMAL;
    b.init.a = 0;
    b.init.b = 1;
    b.count = 20000;
    gate_fill_host(&b, 9, x);
    b.count = 777;
    gate_fill_host(&b, 9, y);
    CHECK(memcmp(x, y, 777 * sizeof(float)) == 0);
    CHECK_NEAR(gate_gen_value(&b.init, gate_seed_key(9, b.seed_salt), 776), y[776], 1e-6);
    CHECK(gate_seed_key(9, 5) != gate_seed_key(9, 6) && gate_seed_key(9, 5) != gate_seed_key(10, 5));
    free(x);
    free(y);
}

/* The distributions of input profiles on the host generator: an outlier
 * mix draws its rare component at rate p (the rest is the plain normal of
 * the same stream: the mix only adds), and a row scale multiplies whole
 * rows by one factor each, lognormal with the asked log-std. */
static void test_fill_profiles(void)
{
    enum { N = 200000 };
    uint64_t key = gate_seed_key(3, 11);
    InitSpec plain = {.kind = INIT_NORMAL, .b = 1}, mix = {.kind = INIT_OUTLIER, .b = 1, .p = 0.01, .c = 10};
    int hits = 0, same = 0;
    for (uint64_t i = 0; i < N; i++) {
        double a = gate_gen_value(&plain, key, i), b = gate_gen_value(&mix, key, i);
        same += a == b;
        hits += a != b;
    }
    printf("  outlier p=0.01: %d of %d elements drew the wide component\n", hits, N);
    CHECK(hits > 0.008 * N && hits < 0.012 * N);
    CHECK(same + hits == N);
    /* a const 1 scaled by rows of 64: each row one factor, log-std ~ 0.5 */
    InitSpec rows = {.kind = INIT_CONST, .a = 1, .rows = ROWS_LOGNORMAL, .ra = 0, .rb = 0.5, .row_len = 64};
    int whole = 1;
    double sum = 0, sq = 0;
    for (uint64_t r = 0; r < N / 64; r++) {
        double f = gate_gen_value(&rows, key, r * 64);
        for (uint64_t j = 1; j < 64; j++)
            whole &= gate_gen_value(&rows, key, r * 64 + j) == f;
        sum += log(f);
        sq += log(f) * log(f);
    }
    double n = N / 64, mean = sum / n, sd = sqrt(sq / n - mean * mean);
    printf("  lognormal rows of 64: log mean %.4f, log std %.4f\n", mean, sd);
    CHECK(whole);
    CHECK_NEAR(mean, 0, 0.03);
    CHECK_NEAR(sd, 0.5, 0.03);
    /* uniform factors stay in [low, high); a row scale leaves the base's stream alone */
    InitSpec u = {.kind = INIT_NORMAL, .b = 1, .rows = ROWS_UNIFORM, .ra = 0.5, .rb = 2, .row_len = 7};
    int in = 1, prop = 1;
    for (uint64_t i = 0; i < 7000; i++) {
        double f = gate_gen_value(&u, key, i) / gate_gen_value(&plain, key, i);
        in &= f >= 0.5 - 1e-12 && f < 2 + 1e-12;
        prop &= fabs(f - gate_gen_value(&u, key, i - i % 7) / gate_gen_value(&plain, key, i - i % 7)) < 1e-9;
    }
    CHECK(in && prop);
}

/* evoeng's own kernels (devkern) compile for every architecture the
 * worker may run on; NVRTC needs no GPU. */
static void test_devkern_compiles(void)
{
    static const char *const archs[] = {"sm_80", "sm_89", "sm_90", "sm_90a"};
    for (size_t i = 0; i < EVO_ARRAY_LEN(archs); i++) {
        CompileRequest req = {0};
        CompileResult res = {0};
        EvoErr err = {{0}};
        req.source = devkern_source();
        req.name = "evoeng_devkern.cu";
        req.arch = archs[i];
        CHECK_MSG(nvrtc_compile(&req, &res, &err) == 0, "%s: %s", archs[i], err.msg);
        CHECK_MSG(res.ok, "%s: %s\n%s", archs[i], res.error, res.log);
        CHECK(nvrtc_find_kernel(&res, "evo_fill") && nvrtc_find_kernel(&res, "evo_compare") &&
              nvrtc_find_kernel(&res, "evo_diff") && nvrtc_find_kernel(&res, "evo_hash"));
        nvrtc_result_free(&res);
    }
}

static void test_compare(void)
{
    float ref[8] = {1, 2, 3, 4, -5, 6, 7, 8}, got[8];
    GateCmp c;
    memcpy(got, ref, sizeof(got));
    CHECK(gate_compare(DT_F32, got, ref, 8, 1e-3, 1e-3, &c) == 1);
    CHECK_STR(c.check, "ok");
    CHECK(c.first_bad == -1 && c.nbad == 0);
    got[5] = 6.1f;
    CHECK(gate_compare(DT_F32, got, ref, 8, 1e-3, 1e-3, &c) == 0);
    CHECK_STR(c.check, "mismatch");
    CHECK(c.first_bad == 5 && c.nbad == 1);
    CHECK_NEAR(c.max_abs, 0.1, 1e-5);
    CHECK_NEAR(c.max_rel, 0.1 / 6, 1e-5);
    CHECK(gate_compare(DT_F32, got, ref, 8, 0.2, 0, &c) == 1); /* within atol */
    got[2] = NAN;
    CHECK(gate_compare(DT_F32, got, ref, 8, 1, 0, &c) == 0);
    CHECK_STR(c.check, "nan");
    got[2] = INFINITY;
    CHECK(gate_compare(DT_F32, got, ref, 8, 1, 0, &c) == 0);
    CHECK_STR(c.check, "nan");
    gate_fill_sentinel(DT_F32, &got[7], 1);
    CHECK(gate_compare(DT_F32, got, ref, 8, 1, 0, &c) == 0);
    CHECK_STR(c.check, "unwritten"); /* precedence over nan */
    CHECK(c.nunwritten == 1 && c.nnan == 1 && c.nbad == 2 && c.first_bad == 2);
    memset(got, 0, sizeof(got));
    CHECK(gate_compare(DT_F32, got, ref, 8, 1e-2, 1e-2, &c) == 0);
    CHECK_STR(c.check, "zero_output");
    /* f16 */
    uint16_t h[4], hr[4];
    for (int i = 0; i < 4; i++)
        hr[i] = h[i] = gate_f32_to_f16((float)i + 0.5f);
    CHECK(gate_compare(DT_F16, h, hr, 4, 1e-2, 1e-2, &c) == 1);
    gate_fill_sentinel(DT_F16, h + 3, 1);
    CHECK(gate_compare(DT_F16, h, hr, 4, 1e-2, 1e-2, &c) == 0);
    CHECK_STR(c.check, "unwritten");
    CHECK(c.first_bad == 3);
    /* i32 */
    int32_t ia[3] = {1, 2, 3}, ib[3] = {1, 2, 4};
    CHECK(gate_compare(DT_I32, ia, ib, 3, 0, 0, &c) == 0);
    CHECK_STR(c.check, "mismatch");
    gate_fill_sentinel(DT_I32, ia, 1);
    CHECK(gate_compare(DT_I32, ia, ib, 3, 0, 0, &c) == 0);
    CHECK_STR(c.check, "unwritten");
}

static void test_report_json(void)
{
    GateReport r, q;
    char line[1024];
    memset(&r, 0, sizeof(r));
    r.status = EVAL_INCORRECT;
    snprintf(r.check, sizeof(r.check), "mismatch");
    snprintf(r.buffer, sizeof(r.buffer), "O");
    snprintf(r.shape, sizeof(r.shape), "B=1");
    r.seed = 2;
    r.run = 1;
    r.first_bad = 12;
    r.nbad = 17;
    r.got = NAN;
    r.want = 1.25;
    r.max_abs = 0.3;
    json_t *j = gate_report_to_json(&r);
    gate_report_from_json(j, &q);
    json_decref(j);
    CHECK(q.status == EVAL_INCORRECT && q.seed == 2 && q.first_bad == 12 && q.nbad == 17 && isnan(q.got));
    CHECK_STR(q.check, "mismatch");
    gate_report_format(&q, line, sizeof(line));
    printf("  %s\n", line);
    CHECK_CONTAINS(line, "incorrect: mismatch in O (shape 'B=1', seed 2, run 1): 17 bad, first at 12");
    /* a failure on another profile names it; a pass counts seeds x profiles */
    snprintf(r.profile, sizeof(r.profile), "large");
    r.profiles = 3;
    j = gate_report_to_json(&r);
    gate_report_from_json(j, &q);
    json_decref(j);
    CHECK_STR(q.profile, "large");
    CHECK(q.profiles == 3);
    gate_report_format(&q, line, sizeof(line));
    CHECK_CONTAINS(line, "(shape 'B=1', profile large, seed 2, run 1)");
    q.status = EVAL_OK;
    q.seeds_run = 9;
    gate_report_format(&q, line, sizeof(line));
    CHECK_CONTAINS(line, "ok: 3 seeds x 3 profiles passed");
    q.profiles = 1;
    q.seeds_run = 3;
    gate_report_format(&q, line, sizeof(line));
    CHECK_CONTAINS(line, "ok: 3 seeds passed (last shape");
}

/* Several input profiles in one timing or A/B: each profile's share of
 * the pairs and samples, the aggregates (a geometric mean of latencies; the
 * ratio of the worst profile, which no other profile can offset), and the
 * records' JSON round trip. */
static void test_profile_aggregates(void)
{
    BenchOptions o;
    bench_options_default(&o);
    CHECK(bench_pairs_per_profile(&o, 1) == 15 && bench_pairs_per_profile(&o, 3) == 5);
    CHECK(bench_pairs_per_profile(&o, 8) == BENCH_MIN_PAIRS);
    o.pairs = 40;
    CHECK(bench_pairs_per_profile(&o, 3) == 14);
    o.pairs = 3;
    CHECK(bench_pairs_per_profile(&o, 2) == 3);   /* never more than asked for in all */
    CHECK(bench_samples_per_profile(&o, 1) == 25 && bench_samples_per_profile(&o, 3) == 10);
    o.samples = 60;
    CHECK(bench_samples_per_profile(&o, 3) == 20);

    BenchStats s[3];
    memset(s, 0, sizeof(s));
    double med[3] = {0.064, 0.080, 0.125}, cv[3] = {0.01, 0.03, 0.02};
    for (int k = 0; k < 3; k++) {
        s[k].n = 10 + k;
        s[k].median = s[k].mean = s[k].min = s[k].max = s[k].p10 = s[k].p90 = med[k];
        s[k].cv = cv[k];
    }
    BenchStats g;
    bench_stats_geomean(s, 3, &g);
    CHECK_NEAR(g.median, cbrt(0.064 * 0.080 * 0.125), 1e-12);
    CHECK(g.n == 10);
    CHECK_NEAR(g.cv, 0.03, 0);
    bench_stats_geomean(s, 1, &g);
    CHECK(memcmp(&g, &s[0], sizeof(g)) == 0);

    CompareResult cr, cr2;
    memset(&cr, 0, sizeof(cr));
    cr.nprof = 3;
    const double ratio[3] = {0.963, 1.240, 0.990};
    for (int k = 0; k < 3; k++) {
        snprintf(cr.prof[k].name, sizeof(cr.prof[k].name), "p%d", k);
        cr.prof[k].ratio.median = ratio[k];
        cr.prof[k].ratio.p10 = ratio[k] - 0.01;
        cr.prof[k].ms = s[k];
        cr.prof[k].a_ms = s[(k + 1) % 3];
        cr.prof[k].attempts = k + 1;
        cr.prof[k].noisy = k == 2;
    }
    bench_compare_aggregate(&cr);
    CHECK(cr.worst == 1);
    CHECK_NEAR(cr.ratio.median, 1.240, 0);     /* the mean ratio would be 1.064 */
    CHECK_NEAR(cr.b_ms.median, cbrt(0.064 * 0.080 * 0.125), 1e-12);
    CHECK(cr.attempts == 3 && cr.noisy == 1);
    json_t *j = bench_compare_to_json(&cr);
    bench_compare_from_json(j, &cr2);
    json_decref(j);
    CHECK(cr2.nprof == 3 && cr2.worst == 1);
    CHECK_STR(cr2.prof[2].name, "p2");
    CHECK_NEAR(cr2.prof[1].ratio.median, 1.240, 0);
    CHECK_NEAR(cr2.prof[1].ratio.p10, 1.230, 1e-12);
    CHECK_NEAR(cr2.prof[0].a_ms.median, 0.080, 0);
    CHECK(cr2.prof[2].noisy == 1 && cr2.prof[2].attempts == 3);

    BenchResult br, br2;
    memset(&br, 0, sizeof(br));
    br.nprof = 2;
    br.prof[0].ms = s[0];
    br.prof[1].ms = s[2];
    snprintf(br.prof[1].name, sizeof(br.prof[1].name), "large");
    bench_result_aggregate(&br);
    CHECK_NEAR(br.ms.median, sqrt(0.064 * 0.125), 1e-12);
    Plan p;
    DeviceInfo d;
    make_plan(&p, "x");
    device_profile("sm_90", &d, NULL);
    bench_fill_throughput(&br, &p, &d);
    CHECK_NEAR(br.prof[1].tflops, 2e6 / 0.125e-3 / 1e12, 1e-12);
    j = bench_result_to_json(&br);
    bench_result_from_json(j, &br2);
    json_decref(j);
    CHECK(br2.nprof == 2);
    CHECK_STR(br2.prof[1].name, "large");
    CHECK_NEAR(br2.prof[1].ms.median, 0.125, 0);
    CHECK_NEAR(br2.prof[1].tflops, br.prof[1].tflops, 1e-12);
    plan_free(&p);
}

static void test_stats(void)
{
    double x[] = {5, 1, 4, 2, 3};
    BenchStats s;
    bench_stats(x, 5, &s);
    CHECK(s.n == 5);
    CHECK_NEAR(s.median, 3, 0);
    CHECK_NEAR(s.mean, 3, 1e-12);
    CHECK_NEAR(s.min, 1, 0);
    CHECK_NEAR(s.max, 5, 0);
    CHECK_NEAR(s.p10, 1.4, 1e-12);
    CHECK_NEAR(s.p90, 4.6, 1e-12);
    CHECK_NEAR(s.mad, 1, 0);
    CHECK_NEAR(s.cv, sqrt(2.5) / 3, 1e-12);
    CHECK(x[0] == 5); /* input untouched */
    double y[] = {2, 4};
    bench_stats(y, 2, &s);
    CHECK_NEAR(s.median, 3, 0);
    bench_stats(y, 0, &s);
    CHECK(s.n == 0 && s.median == 0);
    double r[20];
    for (int i = 0; i < 20; i++)
        r[i] = 1.0 + (i % 2 ? 0.002 : -0.002);
    bench_stats(r, 20, &s);
    CHECK(bench_settled(&s, 0.01));
    for (int i = 0; i < 20; i++)
        r[i] = 1.0 + (i % 2 ? 0.05 : -0.05);
    bench_stats(r, 20, &s);
    CHECK(!bench_settled(&s, 0.01));
    /* pooled rounds: pairs at +-1% are not settled to 0.5% after one
     * round of 5 (half-width 0.86%), and are after 25 (0.38%) */
    for (int i = 0; i < 20; i++)
        r[i] = 1.0 + (i % 2 ? 0.01 : -0.01);
    bench_stats(r, 5, &s);
    CHECK(!bench_settled(&s, 0.005));
    CHECK_NEAR(bench_ratio_halfwidth(&s), 1.96 * 1.2533 * (0.02 / 2.5631) / sqrt(5.0) / 0.99, 1e-9);   /* median 0.99 */
    double r25[25];
    for (int i = 0; i < 25; i++)
        r25[i] = 1.0 + (i % 2 ? 0.01 : -0.01);
    bench_stats(r25, 25, &s);
    CHECK(bench_settled(&s, 0.005));
    bench_stats(r25, 1, &s);
    CHECK(!bench_settled(&s, 0.5));   /* one pair says nothing of its noise */
    BenchOptions o, o2;
    bench_options_default(&o);
    CHECK(o.samples >= 20 && o.pairs >= 10);
    o.cold = 1;
    o.seed = 99;
    json_t *j = bench_options_to_json(&o);
    bench_options_from_json(j, &o2, NULL);
    json_decref(j);
    CHECK(o2.cold == 1 && o2.seed == 99 && o2.pairs == o.pairs);
    /* results round trip */
    BenchResult br, br2;
    memset(&br, 0, sizeof(br));
    br.ms = s;
    br.nlaunches = 1;
    snprintf(br.launches[0].entry, sizeof(br.launches[0].entry), "k");
    br.launches[0].occupancy = 3;
    br.launches[0].waves = 1.5;
    j = bench_result_to_json(&br);
    bench_result_from_json(j, &br2);
    json_decref(j);
    CHECK(br2.nlaunches == 1 && br2.launches[0].occupancy == 3);
    CHECK_NEAR(br2.ms.median, s.median, 1e-12);
    Plan p;
    DeviceInfo d;
    make_plan(&p, "x");
    device_profile("sm_90", &d, NULL);
    br2.ms.median = 1.0; /* 1 ms: 2e6 flop -> 2e9 flop/s */
    bench_fill_throughput(&br2, &p, &d);
    CHECK_NEAR(br2.tflops, 0.002, 1e-12);
    CHECK_NEAR(br2.gbps, 0.006, 1e-12);
    plan_free(&p);
}

/* The watchdog's rule: 20 x the parent's time in [2 s, W], W without a
 * parent, where W is the ceiling less the kill and reap allowance (250 ms,
 * at most a tenth of it); EVOENG_WATCHDOG_S sets the ceiling. */
static void test_watchdog_rule(void)
{
    EvoErr err;
    unsetenv("EVOENG_WATCHDOG_S");
    CHECK_NEAR(watchdog_ceiling_ms(), 10000, 0);
    CHECK_NEAR(watchdog_ms(NAN), 9750, 0);
    CHECK_NEAR(watchdog_ms(0), 9750, 0);
    CHECK_NEAR(watchdog_ms(30), 2000, 0);      /* 600 ms: the floor */
    CHECK_NEAR(watchdog_ms(250), 5000, 0);     /* 20 x */
    CHECK_NEAR(watchdog_ms(3000), 9750, 0);    /* the ceiling, less the reap */
    CHECK(watchdog_env_check(&err) == 0);
    setenv("EVOENG_WATCHDOG_S", "30", 1);
    CHECK_NEAR(watchdog_ms(NAN), 29750, 0);
    CHECK_NEAR(watchdog_ms(1000), 20000, 0);
    setenv("EVOENG_WATCHDOG_S", "0.5", 1);
    CHECK_NEAR(watchdog_ms(30), 450, 0);       /* a ceiling under the floor wins; reap 1/10 */
    setenv("EVOENG_WATCHDOG_S", "0.1", 1);
    CHECK(watchdog_env_check(&err) == -1);
    CHECK_CONTAINS(err.msg, "EVOENG_WATCHDOG_S='0.1'");
    CHECK_NEAR(watchdog_ms(NAN), 9750, 0);     /* a bad value is not used */
    setenv("EVOENG_WATCHDOG_S", "soon", 1);
    CHECK(watchdog_env_check(&err) == -1);
    unsetenv("EVOENG_WATCHDOG_S");
}

static void test_worker_fake(void)
{
    WorkerOptions o = {0};
    Worker *w = NULL;
    EvoErr err = {{0}};
    Plan ok, hang, segv, fatal, ex;
    GateReport rep;
    int cand = 0, ref = 0, bad = 0;
    EvalStatus st;
    char msg[512];
    WorkerFunc f[1];
    const char *ents[] = {"k"};
    double t0;

    o.exe = "/proc/self/exe";
    o.entry = "__fake";
    o.timeout_floor_ms = 500;
    CHECK_MSG(worker_open(&w, &o, &err) == 0, "%s", err.msg);
    if (!w)
        return;
    CHECK(worker_spawns(w) == 1);
    CHECK_CONTAINS(worker_device(w)->name, "fake GPU");
    CHECK(worker_load(w, "CUBIN", 5, ents, 1, &cand, f, &st, msg, sizeof(msg), &err) == 0);
    CHECK(st == EVAL_OK);
    CHECK(f[0].registers == 42);
    CHECK(worker_load(w, "REFCB", 5, NULL, 0, &ref, NULL, &st, msg, sizeof(msg), &err) == 0);
    CHECK(st == EVAL_OK && ref != cand);
    CHECK(worker_load(w, "BADIM", 5, NULL, 0, &bad, NULL, &st, msg, sizeof(msg), &err) == 0);
    CHECK(st == EVAL_COMPILE_ERROR);
    CHECK_CONTAINS(msg, "CUDA_ERROR_INVALID_IMAGE");

    make_plan(&ok, "ok");
    make_plan(&hang, "hang");
    make_plan(&segv, "segv");
    make_plan(&fatal, "fatal");
    make_plan(&ex, "exit");

    CHECK(worker_gate(w, &ok, cand, ref, NULL, &rep, &err) == 0);
    CHECK_MSG(rep.status == EVAL_OK, "%s %s", gate_status_name(rep.status), rep.error);
    CHECK(rep.seeds_run == 3);
    CHECK_NEAR(worker_timeout_ms(w), 500, 0); /* max(floor 500, 1000 x 0.01 ms) */

    int pid1 = worker_pid(w);
    t0 = time_now_ms();
    CHECK(worker_gate(w, &hang, cand, ref, NULL, &rep, &err) == 0);
    printf("  hang -> %s after %.0f ms: %s\n", gate_status_name(rep.status), time_now_ms() - t0, rep.error);
    CHECK(rep.status == EVAL_TIMEOUT);
    CHECK_CONTAINS(rep.error, "timeout");
    CHECK(time_now_ms() - t0 < 3000);
    CHECK(worker_pid(w) == 0);
    CHECK(kill(pid1, 0) != 0); /* really gone */

    CHECK(worker_gate(w, &ok, cand, ref, NULL, &rep, &err) == 0);
    CHECK_MSG(rep.status == EVAL_OK, "after respawn: %s %s", gate_status_name(rep.status), rep.error);
    CHECK(worker_spawns(w) == 2);
    CHECK(worker_last_ms(w) >= 0 && worker_last_ms(w) < 500);   /* what the gate took */

    /* the watchdog the evaluator sets replaces the rule (issue 34) */
    worker_set_watchdog(w, 250);
    t0 = time_now_ms();
    CHECK(worker_gate(w, &hang, cand, ref, NULL, &rep, &err) == 0);
    double took = time_now_ms() - t0;
    printf("  hang with a 250 ms watchdog -> %s after %.0f ms: %s\n", gate_status_name(rep.status), took, rep.error);
    CHECK(rep.status == EVAL_TIMEOUT);
    CHECK_CONTAINS(rep.error, "no reply to gate within 250 ms");
    CHECK(took >= 250 && took < 2000);
    worker_set_watchdog(w, 0);
    CHECK(worker_gate(w, &ok, cand, ref, NULL, &rep, &err) == 0);
    CHECK(rep.status == EVAL_OK && worker_spawns(w) == 3);

    CHECK(worker_gate(w, &segv, cand, ref, NULL, &rep, &err) == 0);
    printf("  segv -> %s: %s\n", gate_status_name(rep.status), rep.error);
    CHECK(rep.status == EVAL_CRASHED);
    /* under AddressSanitizer the worker's SEGV is ASan's to catch: it
     * reports it and exits with code 1, which is what the parent sees */
    CHECK_CONTAINS(rep.error, TEST_ASAN ? "worker exited with code 1 during gate" : "signal 11");
    CHECK(worker_gate(w, &ok, cand, ref, NULL, &rep, &err) == 0);
    CHECK(rep.status == EVAL_OK);
    CHECK(worker_spawns(w) == 4);

    CHECK(worker_gate(w, &ex, cand, ref, NULL, &rep, &err) == 0);
    printf("  exit -> %s: %s\n", gate_status_name(rep.status), rep.error);
    CHECK(rep.status == EVAL_CRASHED);
    CHECK_CONTAINS(rep.error, "exited with code 3");

    CHECK(worker_gate(w, &fatal, cand, ref, NULL, &rep, &err) == 0);
    printf("  fatal -> %s: %s [%s]\n", gate_status_name(rep.status), rep.error, rep.cuda_error);
    CHECK(rep.status == EVAL_CRASHED && rep.fatal);
    CHECK_STR(rep.cuda_error, "CUDA_ERROR_ILLEGAL_ADDRESS");
    CHECK(worker_pid(w) == 0);
    CHECK(worker_gate(w, &ok, cand, ref, NULL, &rep, &err) == 0);
    CHECK(rep.status == EVAL_OK);
    CHECK(worker_spawns(w) == 6);

    /* an unknown module id */
    CHECK(worker_gate(w, &ok, 999, ref, NULL, &rep, &err) == 0);
    CHECK(rep.status == EVAL_INVALID);
    CHECK(worker_unload(w, cand, &err) == 0);
    CHECK(worker_unload(w, cand, &err) == -1);

    plan_free(&ok);
    plan_free(&hang);
    plan_free(&segv);
    plan_free(&fatal);
    plan_free(&ex);
    worker_close(&w);
    CHECK(w == NULL);

    /* a worker that cannot start */
    o.exe = "/nonexistent/evoeng";
    CHECK(worker_open(&w, &o, &err) == -1);
    printf("  bad exe: %s\n", err.msg);
    CHECK_CONTAINS(err.msg, "exec failed");
    CHECK(w == NULL);
}

int main(int argc, char **argv)
{
    if (argc >= 4 && strcmp(argv[1], "__fake") == 0)
        return fake_worker(atoi(argv[2]), atoi(argv[3]));
    RUN(test_cuda_load_fails_cleanly);
    RUN(test_status_names);
    RUN(test_proto_roundtrip);
    RUN(test_proto_partial_eof_timeout);
    RUN(test_watchdog_rule);
    RUN(test_plan_json);
    RUN(test_plan_fields);
    RUN(test_wmsg_kinds);
    RUN(test_half);
    RUN(test_fill);
    RUN(test_fill_profiles);
    RUN(test_devkern_compiles);
    RUN(test_compare);
    RUN(test_report_json);
    RUN(test_stats);
    RUN(test_profile_aggregates);
    RUN(test_worker_fake);
    return test_report();
}

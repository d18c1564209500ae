/*
 * wmsg: the field tables of the worker pipe's messages. See wmsg.h.
 */
#include "gpu/wmsg.h"

#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpu/proto.h"

/* ---- hooks: records that describe themselves ---------------------------- */

static json_t *bench_put(const void *at) { return bench_options_to_json(at); }
static int bench_read(const json_t *v, void *at, EvoErr *err)
{
    EvoErr why = {{0}};
    return bench_options_from_json(v, at, &why) ? err_set(err, ".%s", why.msg) : 0;
}
static json_t *device_put(const void *at) { return proto_device_to_json(at); }
static int device_read(const json_t *v, void *at, EvoErr *err)
{
    EvoErr why = {{0}};
    return proto_device_from_json(v, at, &why) ? err_set(err, ": %s", why.msg) : 0;
}
/* A malformed result reads as a result with status invalid and the reason
 * (the readers' convention), never as a malformed reply. */
static json_t *report_put(const void *at) { return gate_report_to_json(at); }
static int report_read(const json_t *v, void *at, EvoErr *err) { return (void)err, gate_report_from_json(v, at), 0; }
static json_t *result_put(const void *at) { return bench_result_to_json(at); }
static int result_read(const json_t *v, void *at, EvoErr *err) { return (void)err, bench_result_from_json(v, at), 0; }
static json_t *compare_put(const void *at) { return bench_compare_to_json(at); }
static int compare_read(const json_t *v, void *at, EvoErr *err) { return (void)err, bench_compare_from_json(v, at), 0; }

static const char *const which_names[] = {"cand", "ref"};

#define W(T, m, ty) {.key = #m, .type = ty, .off = offsetof(T, m), .req = 1}
#define W_HOOK(T, m, put_, read_) {.key = #m, .type = F_CUSTOM, .off = offsetof(T, m), .req = 1, .put = put_, .read = read_}
#define W_PLAN(T, m) W_HOOK(T, m, proto_plan_put, proto_plan_read)
#define W_WHICH(T, key_, m) \
    {.key = key_, .type = F_NAME, .off = offsetof(T, m), .req = 1, .names = which_names, .max = 2}

/* ---- requests ----------------------------------------------------------- */

static const Field hello_fields[] = {W(WHello, device, F_I32)};

static const Field load_fields[] = {
    W(WLoad, module, F_I32),
    {.key = "entries", .type = F_ARR, .off = offsetof(WLoad, entries), .req = 1, .elem = F_TEXT, .dyn = 1,
     .size = sizeof(char *), .count = offsetof(WLoad, nentries)},
};
static const Field unload_fields[] = {W(WLoad, module, F_I32)};

static const Field gate_fields[] = {
    W_PLAN(WGate, plan), W(WGate, cand, F_I32), W(WGate, ref, F_I32),
    {.key = "seeds", .type = F_ARR, .off = offsetof(WGate, seeds), .elem = F_U64, .size = sizeof(uint64_t),
     .count = offsetof(WGate, nseeds), .max = WMSG_MAX_SEEDS},
};

static const Field time_fields[] = {
    W_PLAN(WTime, plan), W(WTime, module, F_I32), W_WHICH(WTime, "which", which_ref),
    W_HOOK(WTime, bench, bench_put, bench_read),
};

static const Field compare_fields[] = {
    W_PLAN(WCompare, plan_a), W(WCompare, module_a, F_I32), W_WHICH(WCompare, "which_a", which_a),
    W_PLAN(WCompare, plan_b), W(WCompare, module_b, F_I32), W_WHICH(WCompare, "which_b", which_b),
    W_HOOK(WCompare, bench, bench_put, bench_read),
};

/* ---- replies ------------------------------------------------------------ */

/* rec starts with its WReply */
static int failed(const void *rec) { return !((const WReply *)rec)->ok; }
static int succeeded(const void *rec) { return ((const WReply *)rec)->ok; }
static int has_fatal(const void *rec) { return ((const WReply *)rec)->has_fatal; }

/* A reply's WReply is its first member: the head's offsets are WReply's. */
#define R_HEAD                                                                                                   \
    {.key = "ok", .type = F_BOOL, .off = offsetof(WReply, ok), .req = 1},                                       \
    {.key = "status", .type = F_CHARS, .off = offsetof(WReply, status), .size = sizeof(((WReply *)0)->status),  \
     .when = failed},                                                                                           \
    {.key = "error", .type = F_CHARS, .off = offsetof(WReply, error), .size = sizeof(((WReply *)0)->error),     \
     .when = failed}
#define R_FATAL {.key = "fatal", .type = F_BOOL, .off = offsetof(WReply, fatal), .when = has_fatal}
#define R_BODY(T, m, put_, read_) \
    {.key = #m, .type = F_CUSTOM, .off = offsetof(T, m), .put = put_, .read = read_, .when = succeeded}

static const Field reply_fields[] = {R_HEAD, R_FATAL};

static const Field hello_reply_fields[] = {R_HEAD, R_BODY(WHelloReply, device, device_put, device_read),
                                           R_FATAL};

#define WF(m) {.key = #m, .type = F_I32, .off = offsetof(WorkerFunc, m)}
static const Field func_fields[] = {
    FJ_CHARS(WorkerFunc, name), WF(registers), WF(static_smem), WF(local_bytes), WF(max_threads),
};
static const Field load_reply_fields[] = {
    R_HEAD,
    {.key = "functions", .type = F_ARR, .off = offsetof(WLoadReply, functions), .elem = F_OBJ, .dyn = 1,
     .size = sizeof(WorkerFunc), .count = offsetof(WLoadReply, nfunctions), .sub = func_fields,
     .nsub = NFIELDS(func_fields), .when = succeeded},
    R_FATAL,
};

static const Field gate_reply_fields[] = {R_HEAD, R_BODY(WGateReply, report, report_put, report_read),
                                          R_FATAL};
static const Field time_reply_fields[] = {R_HEAD, R_BODY(WTimeReply, result, result_put, result_read),
                                          R_FATAL};
static const Field compare_reply_fields[] = {
    R_HEAD, R_BODY(WCompareReply, result, compare_put, compare_read), R_FATAL};

/* ---- the codec over the kinds ------------------------------------------ */

static const struct {
    const Field *f;
    int          n;
    size_t       size;
} kinds[WMSG_NKINDS] = {
#define K(k, tab, T) [k] = {tab, NFIELDS(tab), sizeof(T)}
    K(WMSG_HELLO, hello_fields, WHello),          K(WMSG_LOAD, load_fields, WLoad),
    K(WMSG_UNLOAD, unload_fields, WLoad),         K(WMSG_GATE, gate_fields, WGate),             K(WMSG_TIME, time_fields, WTime),
    K(WMSG_COMPARE, compare_fields, WCompare),    K(WMSG_REPLY, reply_fields, WReply),
    K(WMSG_HELLO_REPLY, hello_reply_fields, WHelloReply),
    K(WMSG_LOAD_REPLY, load_reply_fields, WLoadReply),
    K(WMSG_GATE_REPLY, gate_reply_fields, WGateReply),
    K(WMSG_TIME_REPLY, time_reply_fields, WTimeReply),
    K(WMSG_COMPARE_REPLY, compare_reply_fields, WCompareReply),
#undef K
};

json_t *wmsg_put(WMsgKind kind, const void *msg)
{
    return fld_to_json(kinds[kind].f, kinds[kind].n, msg);
}

int wmsg_read(WMsgKind kind, const json_t *j, void *msg, EvoErr *err)
{
    memset(msg, 0, kinds[kind].size);
    if (kind == WMSG_TIME)
        bench_options_from_json(NULL, &((WTime *)msg)->bench, NULL);
    if (kind == WMSG_COMPARE)
        bench_options_from_json(NULL, &((WCompare *)msg)->bench, NULL);
    if (fld_from_json(kinds[kind].f, kinds[kind].n, j, msg, err) == 0) {
        if (kind >= WMSG_REPLY)
            ((WReply *)msg)->has_fatal = json_object_get(j, "fatal") != NULL;
        return 0;
    }
    wmsg_free(kind, msg);
    return -1;
}

void wmsg_free(WMsgKind kind, void *msg)
{
    const Field *f = kinds[kind].f;
    for (int i = 0; i < kinds[kind].n; i++)
        if (f[i].read == proto_plan_read)
            plan_free((Plan *)((char *)msg + f[i].off));
    fld_release(f, kinds[kind].n, msg);
}

json_t *wmsg_error(const char *status, const char *fmt, ...)
{
    WReply r = {0};
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(r.error, sizeof(r.error), fmt, ap);
    va_end(ap);
    snprintf(r.status, sizeof(r.status), "%s", status);
    return wmsg_put(WMSG_REPLY, &r);
}

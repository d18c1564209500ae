/*
 * wmsg: the worker pipe's messages, each kind described once. A request
 * or reply of each kind is a small struct; its field table (wmsg.c) is
 * what both ends use, the orchestrator (worker.c) and the worker process
 * (worker_main.c), to write and read it through the one JSON codec
 * (fld_to_json / fld_from_json). The protocol is documented in worker.h;
 * the framing in proto.h.
 */
#ifndef EVO_GPU_WMSG_H
#define EVO_GPU_WMSG_H

#include <stdint.h>

#include <jansson.h>

#include "device.h"
#include "gpu/bench.h"
#include "gpu/verdict.h"
#include "task/plan.h"
#include "util.h"

#define WMSG_MAX_SEEDS 16

/* hello {"device": N} */
typedef struct WHello {
    int device;
} WHello;

/* load {"module": ID, "entries": [..]} (the cubin attached); unload
 * {"module": ID} (the same struct, without entries) */
typedef struct WLoad {
    int    module;
    char **entries;   /* owned after wmsg_read */
    int    nentries;
} WLoad;

/* gate {"plan", "cand", "ref", "seeds"} */
typedef struct WGate {
    Plan     plan;    /* on writing: a shallow copy of the caller's */
    int      cand, ref;
    uint64_t seeds[WMSG_MAX_SEEDS];
    int      nseeds;  /* 0: the gate's default seeds */
} WGate;

/* time and metrics {"plan", "module", "which": "cand"|"ref", "bench"} */
typedef struct WTime {
    Plan         plan;
    int          module;
    int          which_ref;
    BenchOptions bench;
} WTime;

/* compare {"plan_a", "module_a", "which_a", "plan_b", "module_b", "which_b", "bench"} */
typedef struct WCompare {
    Plan         plan_a;
    int          module_a, which_a;
    Plan         plan_b;
    int          module_b, which_b;
    BenchOptions bench;
} WCompare;

/* What every reply has: {"ok", "status" and "error" (when not ok), ...,
 * "fatal" (when has_fatal)}. A reply of no other kind (unload, quit, an
 * error) is a WReply alone. */
typedef struct WReply {
    int  ok;
    char status[32];    /* a gate status name ("compile_error", "invalid", ...) */
    char error[1024];
    int  fatal;         /* the CUDA context is dead: the worker exits */
    int  has_fatal;     /* writing: "fatal" is written (read: set when it was there) */
} WReply;

typedef struct WHelloReply {
    WReply     h;
    DeviceInfo device;
} WHelloReply;

/* Function attributes reported by a module load. */
typedef struct WorkerFunc {
    char name[96];
    int  registers, static_smem, local_bytes, max_threads;
} WorkerFunc;

typedef struct WLoadReply {
    WReply      h;
    WorkerFunc *functions;   /* owned after wmsg_read */
    int         nfunctions;
} WLoadReply;

typedef struct WGateReply {
    WReply     h;
    GateReport report;  /* a malformed report reads as one with status invalid */
} WGateReply;

typedef struct WTimeReply {
    WReply      h;
    BenchResult result;  /* the same for a malformed result */
} WTimeReply;

typedef struct WCompareReply {
    WReply        h;
    CompareResult result;
} WCompareReply;

typedef enum WMsgKind {
    WMSG_HELLO, WMSG_LOAD, WMSG_UNLOAD, WMSG_GATE, WMSG_TIME, WMSG_COMPARE,
    WMSG_REPLY, WMSG_HELLO_REPLY, WMSG_LOAD_REPLY, WMSG_GATE_REPLY, WMSG_TIME_REPLY, WMSG_COMPARE_REPLY,
    WMSG_NKINDS
} WMsgKind;

/* msg (the struct of kind) as JSON, a new reference. */
json_t *wmsg_put(WMsgKind kind, const void *msg);

/* Read j into msg (the struct of kind; zeroed first, then a request's
 * defaults: bench options, no seeds). Returns 0, or -1 with err naming
 * the JSON path of the bad value ("plan.buffers[1].dtype: ..."); msg is
 * then released. Release a read message with wmsg_free. */
int wmsg_read(WMsgKind kind, const json_t *j, void *msg, EvoErr *err);

/* Free what wmsg_read allocated in msg (plans, entries, functions). */
void wmsg_free(WMsgKind kind, void *msg);

/* An error reply: ok false, status, the formatted error. */
json_t *wmsg_error(const char *status, const char *fmt, ...) EVO_PRINTF(2, 3);

#endif

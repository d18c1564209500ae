/*
 * proto: the framing of the orchestrator <-> worker pipe protocol and the
 * JSON forms of the values that cross it (Plan, DeviceInfo). The message
 * types and their fields are documented in worker.h.
 *
 * A message is a fixed 16-byte header, then json_len bytes of JSON text
 * (UTF-8, no NUL), then bin_len bytes of binary attachment (a cubin):
 *
 *   uint32 magic  = PROTO_MAGIC ("EVOW"), native byte order (both ends
 *                   are the same binary on the same machine)
 *   uint32 type   = ProtoType
 *   uint32 json_len  (<= PROTO_MAX_JSON)
 *   uint32 bin_len   (<= PROTO_MAX_BIN)
 *
 * Reads and writes loop over partial transfers and EINTR; a read can wait
 * against a deadline (poll) so that the orchestrator can time a worker
 * out. Writing to a pipe whose reader died gives an error, never SIGPIPE.
 */
#ifndef EVO_PROTO_H
#define EVO_PROTO_H

#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "device.h"
#include "task/plan.h"
#include "util.h"

#define PROTO_MAGIC    0x574f5645u /* "EVOW" in memory on little-endian */
#define PROTO_MAX_JSON (64u << 20)
#define PROTO_MAX_BIN  (1024u << 20)

typedef enum ProtoType {
    PROTO_HELLO = 1,   /* -> device info */
    PROTO_LOAD,        /* cubin attached -> function attributes */
    PROTO_GATE,        /* correctness gate of one plan */
    PROTO_TIME,        /* timing + launch metrics of one plan */
    PROTO_COMPARE,     /* interleaved A/B timing */
    PROTO_METRICS,     /* launch metrics only (occupancy, waves) */
    PROTO_UNLOAD,      /* drop a module */
    PROTO_QUIT,        /* exit cleanly */
    PROTO_REPLY = 100  /* every reply */
} ProtoType;

/* One received message. json is owned (json_decref), bin is owned (free). */
typedef struct ProtoMsg {
    int            type;
    json_t        *json;
    unsigned char *bin;
    size_t         bin_len;
} ProtoMsg;

/* Return codes of proto_read besides 0 and -1. */
#define PROTO_EOF     (-2)  /* the peer closed the pipe before a full message */
#define PROTO_TIMEOUT (-3)  /* the deadline passed */

/* Send one message: json (may be NULL: sent as "{}") and an optional
 * attachment. Does not take ownership. Returns 0, or -1 with err naming
 * write() and errno (EPIPE when the reader is gone; SIGPIPE is blocked
 * for the calling thread during the write and a pending one discarded). */
int proto_write(int fd, int type, const json_t *json, const void *bin, size_t bin_len, EvoErr *err);

/* Receive one message into *out (zeroed first; release with
 * proto_msg_free). timeout_ms < 0 waits forever. Returns 0, PROTO_EOF,
 * PROTO_TIMEOUT, or -1 with err (bad magic, oversized lengths, invalid
 * JSON, read error). */
int proto_read(int fd, ProtoMsg *out, int timeout_ms, EvoErr *err);

void proto_msg_free(ProtoMsg *m);

/* Name of a ProtoType ("hello", ...), "?" when unknown. */
const char *proto_type_name(int type);

/* Plan <-> JSON, through the plan's field tables. to_json returns a new
 * reference. from_json fills *out (zeroed first; plan_free releases it)
 * and returns 0, or -1 with err naming the JSON path of the bad value
 * ("plan.launches[0].args[2].b: buffer index 9 out of range"); besides
 * the types it checks the enumerations, the buffer indices and that each
 * profile has a generator per buffer. On -1 *out is already released. */
json_t *proto_plan_to_json(const Plan *p);
int     proto_plan_from_json(const json_t *j, Plan *out, EvoErr *err);
/* The same as the hooks of a Field (F_CUSTOM, .put / .read) for a Plan
 * member of a message: read's err continues the path (".buffers[1]..."). */
json_t *proto_plan_put(const void *plan);
int     proto_plan_read(const json_t *v, void *plan, EvoErr *err);

/* DeviceInfo <-> JSON, same conventions. */
json_t *proto_device_to_json(const DeviceInfo *d);
int     proto_device_from_json(const json_t *j, DeviceInfo *out, EvoErr *err);

#endif

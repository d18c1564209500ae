/*
 * wire: what the MPI mode sends about a child, as JSON (jansson): the
 * request side (its id, params, params key, kernel text) and the result
 * record, every CandidateRecord and CompileRecord field an evaluator
 * fills (status, error, gate stage, latencies, metrics, gate_json, log,
 * the compile row) plus the rendered source, described once in field
 * tables (util.h), and an agent's DeviceInfo. Doubles that are not finite
 * travel as null.
 */
#ifndef EVO_MPI_WIRE_H
#define EVO_MPI_WIRE_H

#include <jansson.h>

#include "compile/nvrtc.h"
#include "device.h"
#include "search/evolve.h"

/* The child as the agent must rebuild it: {"id", "key", "vals", "pid",
 * "rid", "src"}; src (custom_source) only when with_source is 1. */
json_t *wire_child_put(const Child *c, int64_t id, int nparams, int with_source);
/* Fill a fresh Child (evolve_child_init with nparams) from such an
 * object; *id gets the rank-0 id. Returns 0 or -1 (malformed). */
int wire_child_get(json_t *o, Child *c, int nparams, int64_t *id);

/* What a result carries besides the record: the compile row and the
 * rendered source do not change, so they go once; the source (tens of
 * kB) only where rank 0 cannot render it itself (mpitext.h). */
#define WIRE_REC  0   /* c->rec */
#define WIRE_COMP 1   /* c->rec, c->comp (when it has a cache key) */
#define WIRE_TEXT 2   /* c->rec, c->comp (the same), c->source_text (when there is one) */

/* The evaluator's fields of c, as much as `what` (WIRE_*) says. */
json_t *wire_result_put(const Child *c, int what);
/* Overwrite those fields of c from o (fields absent from o are left).
 * Returns 0, or -1 with err naming the path of a malformed value. */
int wire_result_get(json_t *o, Child *c, EvoErr *err);

/* An agent's compile figures since it began to serve (cur less base), as
 * a reply's "nv": [compiles, cache hits, CPU s, wall s]. */
json_t *wire_nv_put(const NvrtcStats *cur, const NvrtcStats *base);
/* Read o's "nv" into *nv where o has one and it is not behind *nv (the
 * figures only grow; replies may arrive out of order). Returns 1 when
 * read, 0 otherwise. */
int wire_nv_get(json_t *o, NvrtcStats *nv);

/* DeviceInfo as hex text and back (the agents run the same binary): a
 * fresh string; 0, or -1 when hex is not one. */
char *wire_device_hex(const DeviceInfo *d);
int wire_device_unhex(const char *hex, DeviceInfo *d);

#endif

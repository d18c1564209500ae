/*
 * resident: the evaluation state a worker keeps on its GPU for a whole run,
 * so that judging a candidate costs kernel launches, not host work.
 *
 * A *bay* holds everything one shape needs, in one device allocation, for
 * every *variant*, a (profile, seed) pair of the plan's input profiles
 * (plan.h) and the gate's seeds:
 *   - pristine inputs, one copy per variant (variants whose generators
 *     agree share it: a profile that changes Q and K only keeps one V per
 *     seed), made on the device by the counter-based generator
 *     (devkern_fill), never handed to a kernel;
 *   - the reference outputs per variant, computed once (the reference runs
 *     on a working set filled from the pristine inputs, and its outputs
 *     are checked complete and finite, then copied aside);
 *   - two working sets per profile of every plan buffer, each buffer
 *     between two red zones of GUARD bytes holding a fixed pattern. The
 *     gate runs the candidate on set 0 (A), then on the fresh set 1 (B);
 *     timing keeps profile k's inputs in set k (and a second side that
 *     does not share buffers in set nprofiles + k), so that interleaved
 *     samples of several profiles need no copy between them.
 * Layout: [pristine inputs][reference outputs][working sets]: a kernel that
 * writes below its first buffer far enough to jump the red zone lands in
 * the reference outputs.
 *
 * A bay is keyed by what the reference actually reads and writes: the
 * input buffers (name, dtype, count, distribution, salt), the output and
 * reference-visible buffers, the reference launches (with buffer names, not
 * indices), the reference module and the seeds. Scratch buffers that only
 * the candidate uses are not in the key: a candidate needing more scratch
 * than a bay's working sets hold makes the bay grow (rebuilt, which is a
 * few launches). Timing requests look bays up by inputs only.
 *
 * Protection: the pristine inputs and reference outputs are hashed on the
 * device (devkern_hash) when made. resident_verify() re-hashes every bay
 * (and every red zone) in one launch; a bay whose digest changed is
 * dropped and rebuilt on next use. Bays are evicted least recently used
 * beyond a memory budget (a quarter of the device's memory).
 */
#ifndef EVO_RESIDENT_H
#define EVO_RESIDENT_H

#include <stdint.h>

#include "gpu/cuda_api.h"
#include "gpu/devkern.h"
#include "gpu/verdict.h"
#include "task/plan.h"
#include "util.h"

#define RESIDENT_GUARD 4096u       /* red-zone bytes on each side of a working buffer */
#define RESIDENT_PATTERN 0xA5A5u   /* the red zones' 16-bit pattern */
#define RESIDENT_MAX_SEEDS 16   /* per profile */

typedef struct Resident Resident;
typedef struct Bay Bay;

/* Start the resident state of a worker on context c: compiles evoeng's own
 * kernels (devkern). Returns 0 or -1 (err). */
int resident_open(Resident **out, CudaCtx *c, EvoErr *err);
/* Free every bay and the kernels. NULL-safe. Must not be called on a
 * context that died (a sticky error): the process exits instead. */
void resident_close(Resident **r);

DevKern *resident_kern(Resident *r);

/* Start a request: bays used from now on are pinned (not evicted) until
 * the next call. */
void resident_begin(Resident *r);

/* 1 when the last resident_verify() completed and no request began since
 * (resident_begin): nothing has run on the context since that verify
 * found, dropped or restored what was changed, so a verify now would find
 * nothing. 0 at first, and after any resident_begin(). */
int resident_verified(const Resident *r);

/* The bay for a gate of plan with module ref (id ref_id) over seeds (every
 * profile of the plan): found, or made (inputs generated, reference run
 * and checked, digests taken).
 * Returns 0 with *out set; 1 when the reference failed (rep filled: status
 * invalid, or crashed with rep->fatal); -1 on an internal or allocation
 * failure (err; *cu gets the CUresult, CUDA_ERROR_OUT_OF_MEMORY for a
 * budget problem). */
int resident_bay_gate(Resident *r, const Plan *plan, CUmodule ref, int ref_id, const uint64_t *seeds, int nseeds,
                      Bay **out, GateReport *rep, CUresult *cu, EvoErr *err);

/* The bay for timing plan on the inputs of (profile, seed): any bay with
 * the same inputs (every profile's generators) holding that variant,
 * else a new one of that seed, every profile, without references.
 * Returns 0 or -1 (err, *cu). */
int resident_bay_time(Resident *r, const Plan *plan, int profile, uint64_t seed, Bay **out, CUresult *cu,
                      EvoErr *err);

/* The variant (profile, seed) of a bay: its index (0 <= v <
 * resident_nvariants), -1 when the bay has none; a variant's seed and
 * profile. */
int      resident_variant(const Bay *b, int profile, uint64_t seed);
int      resident_nvariants(const Bay *b);
uint64_t resident_variant_seed(const Bay *b, int v);
int      resident_variant_profile(const Bay *b, int v);
/* The bay's working sets: 2 per profile. */
int      resident_nsets(const Bay *b);

/* Fill *cp (dptr and bytes per plan buffer; cp->plan = plan) with working
 * set `set` (0 <= set < resident_nsets) of bay b. Release with
 * resident_plan_free (not cuda_plan_free: the memory belongs to the bay). */
void resident_plan(const Bay *b, int set, const Plan *plan, CudaPlan *cp);
void resident_plan_free(CudaPlan *cp);

/* Enqueue the reset of working set `set` for variant v: inputs copied
 * from the pristine copies, outputs filled with the NaN sentinel, scratch
 * zeroed, for the buffers of the candidate (which = 0) or the reference
 * (1). Returns 0 or -1 (err, *cu). */
int resident_reset(Resident *r, const Bay *b, int set, int v, const Plan *plan, int which, CUresult *cu,
                   EvoErr *err);

/* Device address of the pristine input / reference output of buffer i for
 * variant v (0 when the bay has none). */
CUdeviceptr resident_pristine(const Bay *b, int v, int i);
CUdeviceptr resident_reference(const Bay *b, int v, int i);

/* Re-hash every bay's pristine inputs and references and every red zone.
 * Bays whose resident data changed are dropped (their count goes to
 * *resident_bad); red zones that changed are restored (their count goes to
 * *guard_bad, and the first one is described in where[]). A dropped bay
 * is no longer found but stays valid for a caller holding it until the
 * next resident_begin(). Returns 0 or -1 (err, *cu). */
int resident_verify(Resident *r, int *resident_bad, int *guard_bad, char *where, size_t cap, CUresult *cu,
                    EvoErr *err);

/* Device summary slots for one request: resident_sums_reset() zeroes n
 * slots (n <= RESIDENT_MAX_SUMS) and returns their base address;
 * resident_sums_read() syncs the stream and copies them to host memory
 * (valid until the next reset). */
#define RESIDENT_MAX_SUMS 4096
int resident_sums_reset(Resident *r, int n, CUdeviceptr *base, CUresult *cu, EvoErr *err);
int resident_sums_read(Resident *r, int n, const DevSum **host, CUresult *cu, EvoErr *err);

/* Bytes held by bays, and how many there are (for logs and tests). */
uint64_t resident_bytes(const Resident *r);
int resident_nbays(const Resident *r);

#endif

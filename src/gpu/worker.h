/*
 * worker: the process that owns the GPU, and the orchestrator's handle on
 * it. The orchestrator never touches the GPU: worker_open() starts a
 * child by fork + exec of an evoeng binary with the hidden command
 *
 *     evoeng __worker IN_FD OUT_FD
 *
 * whose main() must call worker_main(IN_FD, OUT_FD) and exit with its
 * return value. exec (not a bare fork) because the orchestrator has
 * threads (the NVRTC pool, libcurl): after fork() only async-signal-safe
 * calls are allowed until exec, and dlopen()ing libcuda and creating a
 * context is far from that. exec also gives a clean address space and no
 * inherited locks. The executable defaults to /proc/self/exe; tests set
 * it (and the entry word) to run themselves or a fake worker.
 *
 * Protocol (framing in proto.h): the orchestrator sends a request, the
 * worker answers with exactly one PROTO_REPLY. Every reply has
 * {"ok": bool, "error": "...", "fatal": bool} plus the fields below.
 * "fatal": true means the CUDA context is dead (sticky error): the worker
 * exits after replying and the orchestrator reaps it.
 *
 *   hello   {"device": N}                      -> {"device": DeviceInfo}
 *   load    {"module": ID, "entries": [..]}    -> {"functions": [{"name", "registers",
 *           + cubin attached                        "static_smem", "local_bytes", "max_threads"}]}
 *           (ok false + "status": "compile_error"/"invalid" on a bad image/entry)
 *   gate    {"plan": Plan, "cand": ID, "ref": ID, "seeds": [..]}  -> {"report": GateReport}
 *           (every input profile of the plan, every seed: one request a shape)
 *   time    {"plan": Plan, "module": ID, "which": "cand"|"ref",
 *            "bench": BenchOptions}            -> {"result": BenchResult}
 *           (each of the plan's timing profiles)
 *   compare {"plan_a", "module_a", "which_a", "plan_b", "module_b", "which_b",
 *            "bench"}                          -> {"result": CompareResult}
 *           (the profiles interleaved within the one request)
 *   metrics {"plan", "module", "which"}        -> {"result": BenchResult (metrics only)}
 *   unload  {"module": ID}                     -> {}
 *   quit    {}                                 -> {} then the worker exits 0
 *
 * Module ids are chosen by the orchestrator, which keeps every loaded
 * cubin: after a respawn, modules are reloaded on demand, so callers never
 * see the restart. The reference outputs are cached in the worker per
 * (reference module, plan, seed) and recomputed after a respawn.
 *
 * Failure handling: each request has a deadline (poll on the reply pipe):
 * the watchdog the evaluator sets (worker_set_watchdog), else
 * max(timeout_floor_ms, timeout_mult x the slowest reference run seen x
 * the number of launch-plan runs the request makes) (gate: 3 per seed). On timeout, a crash (EOF, the
 * child died of a signal) or a fatal reply, the orchestrator sends
 * SIGKILL, waitpid()s, records the status (timeout / crashed / the
 * reply's) with the error name, and the next request starts a fresh
 * worker.
 */
#ifndef EVO_WORKER_H
#define EVO_WORKER_H

#include <stddef.h>

#include "device.h"
#include "gpu/bench.h"
#include "gpu/gate.h"
#include "gpu/wmsg.h"
#include "task/plan.h"
#include "util.h"

typedef struct WorkerOptions {
    const char *exe;              /* NULL: "/proc/self/exe" */
    const char *entry;            /* argv[1] of the child; NULL: "__worker" */
    int         device;           /* CUDA ordinal (default 0) */
    double      timeout_floor_ms; /* <= 0: 10000 */
    double      timeout_mult;     /* <= 0: 1000 */
} WorkerOptions;

typedef struct Worker Worker;

/* WorkerFunc, a kernel's attributes reported by a module load: gpu/wmsg.h. */

/* Start a worker (fork + exec, then hello). *out gets the handle, to be
 * released with worker_close(). Returns 0, or -1 with err (exec failure,
 * no driver or device: the hello's error). */
int worker_open(Worker **out, const WorkerOptions *opt, EvoErr *err);

/* Ask the worker to quit (briefly), then kill and reap it; free the
 * handle and its cubins. NULL-safe; sets *w to NULL. */
void worker_close(Worker **w);

/* The device the worker found at hello. */
const DeviceInfo *worker_device(const Worker *w);

/* Number of worker processes started so far (1 after open; +1 per
 * respawn). For tests and logs. */
int worker_spawns(const Worker *w);

/* Process id of the current worker (0 when none is running). */
int worker_pid(const Worker *w);

/* The status and message of the last request that failed at the process
 * level (timeout, crash), "" after a success. */
const char *worker_last_error(const Worker *w);

/* Raise the reference time used by the timeout rule (the gate does this
 * itself with the reference time it measures). */
void worker_note_ref_ms(Worker *w, double ms);

/* The deadline unit, in ms: max(floor, mult x reference time). */
double worker_timeout_ms(const Worker *w);

/* The deadline of every gate, time, compare and metrics request from now
 * on, in ms, in place of the rule above (the evaluator sets it from the
 * parent's times: watchdog.h); ms <= 0 goes back to the rule. Hello and
 * load keep theirs. */
void worker_set_watchdog(Worker *w, double ms);

/* Wall time of the last request that was answered (or timed out), ms:
 * what a candidate's request took, for its children's watchdog. */
double worker_last_ms(const Worker *w);

/* Register a cubin with the worker (copied; kept for respawns) and load
 * it now. entries are the kernel names whose attributes are wanted
 * (funcs[i] corresponds to entries[i], may be NULL). *id gets the module
 * id. Returns 0 with *status = EVAL_OK, or 0 with another status when the
 * module is unusable (compile_error: bad image; invalid: missing entry;
 * crashed/timeout) and msg filled; -1 on an orchestrator-side failure. */
int worker_load(Worker *w, const void *cubin, size_t len, const char *const *entries, int nentries, int *id,
                WorkerFunc *funcs, EvalStatus *status, char *msg, size_t msg_cap, EvoErr *err);

/* Forget a module (and unload it in the running worker). */
int worker_unload(Worker *w, int id, EvoErr *err);

/* Run the correctness gate of one plan, candidate module cand vs
 * reference module ref. opt NULL: defaults (3 seeds). Returns 0 with *rep
 * filled (including timeout / crashed verdicts), -1 when the worker
 * cannot be (re)started (err). */
int worker_gate(Worker *w, const Plan *plan, int cand, int ref, const GateOptions *opt, GateReport *rep,
                EvoErr *err);

/* Time one plan's candidate launches (which_ref = 0) or reference
 * launches (1) with module `module`; also fills launch metrics and
 * throughput. Same return convention as worker_gate. */
int worker_time(Worker *w, const Plan *plan, int module, int which_ref, const BenchOptions *opt, BenchResult *res,
                EvoErr *err);

/* Interleaved A/B: A = (plan_a, module_a) the parent, B = (plan_b,
 * module_b) the child; res->ratio.median = B/A. */
int worker_compare(Worker *w, const Plan *plan_a, int module_a, const Plan *plan_b, int module_b,
                   const BenchOptions *opt, CompareResult *res, EvoErr *err);

/* Launch metrics only (no timing). */
int worker_metrics(Worker *w, const Plan *plan, int module, int which_ref, BenchResult *res, EvoErr *err);

/* The worker process's main loop: read requests from in_fd, reply on
 * out_fd, until quit, EOF or a fatal CUDA error. Returns the process exit
 * code (0 normal, 1 after a fatal error or a protocol failure). */
int worker_main(int in_fd, int out_fd);

/* If argv is "__worker IN OUT" (argv[1] == "__worker"), run worker_main
 * and return 1 with *exit_code set; else return 0. For main.c and tests. */
int worker_dispatch(int argc, char **argv, int *exit_code);

#endif

/*
 * inspect: what the commands that read the population store share
 * (status, top, lineage, show in cmd_inspect.c; runs in cli/cmd_runs.c):
 * opening the store read-only, picking a run or the best candidate,
 * formatting, and the JSON objects documented in README.md ("JSON
 * output"): a run, a candidate.
 */
#ifndef EVO_INSPECT_H
#define EVO_INSPECT_H

#include <jansson.h>
#include <stddef.h>

#include "cli/cli.h"
#include "gpu/bench.h"
#include "msg.h"
#include "store/store.h"

/* Open s->db read-only (store_open_readonly): a missing store is an error
 * that creates nothing. Returns the store, or NULL with the error printed
 * and *rc = EVO_EXIT_DB. */
Store *inspect_open(const Settings *s, EvoExit *rc);

/* Open the store and read run `id` (0: the latest) into *r. Returns the
 * store, or NULL with *rc set: EVO_EXIT_DB (store), EVO_EXIT_FAIL (no run
 * `id`), or EVO_EXIT_OK for an empty store, after printing "no runs yet"
 * (text) or `empty_json` (with s->json; may be NULL: "{"run": null}"). */
Store *inspect_open_run(const Settings *s, int64_t id, RunRecord *r, const char *empty_json, EvoExit *rc);

/* The id of the best candidate (a survivor: gated on every shape, fastest)
 * of run run_id (0: the latest run). Returns the id, or 0 with the reason
 * printed and *rc set (EVO_EXIT_FAIL: no such run or no survivor yet;
 * EVO_EXIT_DB). */
int64_t inspect_best_id(Store *st, int64_t run_id, EvoExit *rc);

/* "12.34 us", "1.234 ms", or "-" for NaN. */
void inspect_fmt_us(char *buf, size_t n, double us);
/* {"A":1,"B":2} -> "A=1 B=2" (fresh string). */
char *inspect_params_compact(const char *json);
/* Keys whose values differ between two params objects, "BLOCK_M 64->128"
 * (fresh string). */
char *inspect_params_diff(const char *from, const char *to);
/* The same as JSON: {"KEY": {"from": old or null, "to": new}, ...}. */
json_t *inspect_params_diff_json(const char *from, const char *to);
/* The benchmark shape of a run: the spec's dims with the run's --dim
 * overrides, as a JSON object (new reference) or text "B=4 H=8 ...". */
json_t *inspect_shape_json(const RunRecord *r);
char *inspect_shape_text(const RunRecord *r);

/* The GPU that measured a candidate, from its metrics_json "gpu" (a run
 * on several GPUs records the ordinal, name, UUID and the latency scale
 * to GPU 0): a new {"index", "name", "uuid", "scale"} object, or NULL
 * when the candidate names none (older stores, failed before timing). */
json_t *inspect_gpu_json(const CandidateRecord *c);

/* The figures of each input profile a candidate was timed on, from its
 * metrics_json (bench_metrics_profiles): into out[PLAN_MAX_PROFILES],
 * returns how many (0 for a candidate never timed or from an older
 * store). As JSON: a new array of {"name", "latency_us", "p90_us",
 * "tflops"} plus, where an A/B measured it, "ratio_to_parent",
 * "ratio_p10", "ratio_p90", "parent_latency_us" and "noisy"; NULL when
 * there are none. */
int     inspect_profiles(const CandidateRecord *c, ProfileStat *out);
json_t *inspect_profiles_json(const CandidateRecord *c);

/* A candidate as JSON (new reference): the row as the store prints it
 * (store_candidate_json), then "gpu" and "profiles" where it has them.
 * full: then also the detail of show (timings, gate and metrics, logs,
 * dates). */
json_t *inspect_candidate_json(const CandidateRecord *c, int full);
/* A run as JSON (new reference): the row as the store prints it
 * (store_run_json: id, task, task_path, status, strategy, seed,
 * generations_done, started_at, finished_at, device {name, arch},
 * nvrtc_version, driver_version, evoeng_version, baseline_id, config),
 * then "shape". */
json_t *inspect_run_json(const RunRecord *r);

/* Put v under key when it is finite. */
void inspect_set_real(json_t *o, const char *key, double v);
/* A finite real, else null (new reference). */
json_t *inspect_real_or_null(double v);

/* Hand o to out_json_doc (printed as the command ends) and release it. */
void inspect_json_print(json_t *o);

#endif

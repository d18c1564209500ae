/*
 * store: the SQLite population store (population/population.db).
 *
 * The schema lives in db/NNN_*.sql and is embedded at build time. Opening
 * a store applies the pending migrations, keyed by PRAGMA user_version, in
 * one transaction. WAL journal, foreign keys on, a busy timeout. A file
 * that is not an evoeng database, or one written by a newer evoeng, is
 * refused before anything in it changes.
 *
 * Records are plain structs; a NULL column reads as: 0 for ids, -1 for
 * integer metrics, NaN for reals, NULL for text. Writers use BEGIN
 * IMMEDIATE; store_candidate_insert() commits one candidate (with its
 * source and compile rows) in its own transaction.
 *
 * Files: store.c (open, migrate, runs), candidates.c (candidates, sources,
 * compiles, generations), requests.c (LLM requests, raw kernels), rows.c
 * (field tables and statement helpers, shared through rows.h).
 */
#ifndef EVO_STORE_H
#define EVO_STORE_H

#include <stdint.h>

#include "util.h"

typedef struct Store Store;

typedef struct RunRecord {
    int64_t id;
    char   *task_name, *task_path, *task_json, *config_json;
    char   *device_name, *device_arch, *device_json;
    char   *nvrtc_version, *driver_version, *evoeng_version;
    int64_t seed;
    char   *strategy;
    char   *status;            /* running, completed, interrupted (a signal), time_limit, failed */
    int64_t generations_done;
    int64_t baseline_id;
    char   *started_at, *finished_at;
} RunRecord;

typedef struct CompileRecord {
    int64_t id;
    char   *cache_key, *source_hash, *arch, *options, *nvrtc_version;
    int64_t ok;
    char   *log;
    int64_t registers, smem, spill_stores, spill_loads, stack;
    char   *resources_json;
    double  compile_ms;
    char   *created_at;
} CompileRecord;

typedef struct CandidateRecord {
    int64_t id, run_id, generation, parent_id, parent2_id;
    char   *operator, *params_json, *params_key, *source_hash;
    int64_t compile_id;
    char   *status, *decision, *error, *gate_json, *log;
    int64_t gate_stage;        /* how far the correctness gate went: GATE_STAGE_* (store.h) */
    double  latency_us, p90_us, cv, ratio_to_parent, ratio_spread, speedup;
    int64_t ctas, ctas_total, threads, registers, smem_static, smem_dynamic, occupancy;
    double  waves, tflops, gbps, pct_peak_flops, pct_peak_bw;
    char   *metrics_json;
    double  compile_ms, gate_ms, time_ms;
    int64_t llm_request_id;
    char   *rationale;
    char   *created_at, *decided_at;
} CandidateRecord;

/* CandidateRecord.gate_stage, the candidates.gate_stage column
 * (db/004_gate_stage.sql). Only GATE_STAGE_FULL candidates may be
 * survivors, parents, bests or exports: STORE_SURVIVORS_BY_LATENCY and
 * the survivors and best_per_run views require it. candidate_record_init
 * sets -1, "not stated": store_candidate_insert then derives the stage a
 * single-stage gate reached from the status (ok: FULL; incorrect, crashed,
 * timeout, launch_error: BENCH; else NONE). A staged evaluator must state
 * it, BENCH for a child that stopped after stage A whatever its status. */
#define GATE_STAGE_NONE  0   /* never gated (static failure, or not reached) */
#define GATE_STAGE_BENCH 1   /* gated on the benchmark shape only (stage A) */
#define GATE_STAGE_FULL  2   /* gated on every shape (stage B) */

/* "none", "bench", "full" for a GATE_STAGE_*; "?" for anything else. */
const char *gate_stage_name(int64_t stage);
/* A sentence for people on how far the gate went, e.g. "gated on the
 * benchmark shape only (stage A); never gated on the other shapes". */
const char *gate_stage_explain(int64_t stage);

typedef struct GenerationRecord {
    int64_t run_id, generation, best_id;
    double  best_latency_us;
    int64_t evaluated, valid, accepted, reverted, failed;
    double  wall_ms;
    char   *finished_at;
} GenerationRecord;

typedef struct LlmRequestRecord {
    int64_t id, run_id, generation, parent_id, candidate_id;
    char   *mode, *provider, *model, *url, *prompt, *reply, *rationale;
    int64_t input_tokens, output_tokens;
    double  latency_ms;
    int64_t http_status, attempts;
    char   *status, *error, *created_at;
} LlmRequestRecord;

/* The longest value (text or blob) read from a store: a longer one is
 * refused (README.md, "Trust model"). */
#define STORE_VALUE_MAX (64 << 20)

/* ---- --json views (docs/json-output.md) ----------------------------- */

/* A run and a candidate as the --json of status, top, lineage, show and
 * runs print them (new references): "id", then the row's columns, in the
 * order, under the names and with the omissions that the tables of
 * store.c and candidates.c state (rows.h): a candidate's run_id as "run",
 * params_json as the object "params", gate_stage by name, a NULL metric
 * left out; a run's device as {"name", "arch"}, config as an object. The
 * caller adds what it computes (a run's shape, a candidate's GPU and
 * profiles). detail: also the columns only show prints (timings, logs,
 * the gate and metrics, dates). */
struct json_t *store_run_json(const RunRecord *r);
struct json_t *store_candidate_json(const CandidateRecord *c, int detail);
/* A generation's row as the object of `run --json`'s per-generation event
 * (run, generation, counts, best_id, best_latency_us: a NULL one is null);
 * the caller adds what it computes. New reference. */
struct json_t *store_generation_json(const GenerationRecord *g);

/* Schema version this build writes (number of embedded migrations). */
int store_schema_latest(void);

/* Open (creating if absent, with its parent directory) the store at path
 * and migrate it to the latest schema. Refuses, changing nothing, a file
 * that is not SQLite, a SQLite database that is not evoeng's, and one
 * whose user_version is newer than this build. Returns 0 or -1 (err). */
int store_open(Store **out, const char *path, EvoErr *err);
/* Open an existing store for reading (status, top, lineage, show, runs,
 * export, report). Nothing is ever created or changed: a path with no
 * file, an empty file, a file that is not SQLite or not evoeng's fail with
 * err saying so and stay byte for byte as they were. The same identity
 * checks as store_open. The file is opened without SQLITE_OPEN_CREATE and
 * with PRAGMA query_only (SQLITE_OPEN_READONLY when this user may not
 * write it); a store of an older schema is copied into memory and
 * migrated there, never in place. Returns 0 or -1 (err). */
int store_open_readonly(Store **out, const char *path, EvoErr *err);
void store_close(Store **s);
int store_schema_version(Store *s);      /* PRAGMA user_version */
const char *store_path(const Store *s);

/* Initialise a record with "NULL" values (see the file comment). */
void candidate_record_init(CandidateRecord *c);
void compile_record_init(CompileRecord *c);
void llm_request_record_init(LlmRequestRecord *r);
/* Free the strings a record owns and reset it; safe on an initialised record. */
void run_record_free(RunRecord *r);
void compile_record_free(CompileRecord *c);
void candidate_record_free(CandidateRecord *c);
/* dst: a deep copy of src (its strings fresh). */
void candidate_record_copy(CandidateRecord *dst, const CandidateRecord *src);
void llm_request_record_free(LlmRequestRecord *r);

/* Insert a run; started_at and evoeng_version are filled when NULL.
 * Sets r->id and takes the new run's lock (store_lock_run). */
int store_run_insert(Store *s, RunRecord *r, EvoErr *err);
/* Read run id (0: the most recent run) into *r. Returns 1 found, 0 not
 * found, -1 error. */
int store_run_get(Store *s, int64_t id, RunRecord *r, EvoErr *err);
/* Take run id's advisory lock for this process, held until store_close
 * (or store_unlock_runs, which drops every lock the handle holds): one
 * process at a time per run. store_run_insert
 * takes the new run's lock itself; resume takes it before it starts. A
 * run another process holds is refused with err naming it: "run 3 is in
 * use by another process: pid 4242 host gpu-7 since 2026-11-26T10:00:00Z
 * (lock file ...)". The lock is a file beside the store, <path>.run<ID>.lock,
 * held with flock() (dropped by the kernel when the process dies) and
 * removed on release. Returns 0 or -1. */
int store_lock_run(Store *s, int64_t run_id, EvoErr *err);
void store_unlock_runs(Store *s);

/* Update the mutable fields of a run: status, generations_done,
 * baseline_id, finished_at. */
int store_run_update(Store *s, const RunRecord *r, EvoErr *err);

/* A run with its figures, one row of `evoeng runs`. */
typedef struct RunSummary {
    RunRecord run;
    int64_t   candidates;        /* candidates committed */
    int64_t   best_id;           /* the fastest survivor (gated on every shape); 0: none */
    double    best_latency_us;   /* NaN: none */
    double    best_speedup;      /* over the baseline; NaN: none */
} RunSummary;
/* Every run of the store, oldest first, with its candidate count and best
 * (the best_per_run view). *out is a fresh array (store_run_list_free);
 * *n may be 0. Returns 0 or -1 (err). */
int store_run_list(Store *s, RunSummary **out, int *n, EvoErr *err);
void store_run_list_free(RunSummary *list, int n);

/* Commit one candidate in its own transaction: its source (deduplicated
 * by hash; source_text may be NULL for candidates that never rendered),
 * its compile row (deduplicated by cache key; comp may be NULL) and the
 * candidate row. Sets c->id, c->compile_id, timestamps when NULL. */
int store_candidate_insert(Store *s, CandidateRecord *c, const char *source_text,
                           CompileRecord *comp, EvoErr *err);
/* Read candidate id. Returns 1 found, 0 not found, -1 error. */
int store_candidate_get(Store *s, int64_t id, CandidateRecord *c, EvoErr *err);
/* The id of the candidate of run with params_key, or 0. -1 on error. */
int64_t store_candidate_find(Store *s, int64_t run_id, const char *params_key, EvoErr *err);

typedef enum StoreOrder {
    STORE_ALL_BY_ID = 0,      /* every candidate of the run, oldest first */
    STORE_SURVIVORS_BY_LATENCY /* baseline + accepted, status ok, GATE_STAGE_FULL, fastest first */
} StoreOrder;
/* List candidates of a run (run 0: every run) in the given order, at most
 * limit (0: no limit). *out is a fresh array the caller frees with
 * store_candidates_free. */
int store_candidate_list(Store *s, int64_t run_id, StoreOrder order, int limit,
                         CandidateRecord **out, int *n, EvoErr *err);
/* The same, only the candidates whose id is above after (every one that
 * was committed after it: ids grow, and no committed row changes), with
 * no limit. */
int store_candidate_list_after(Store *s, int64_t run_id, StoreOrder order, int64_t after, CandidateRecord **out,
                               int *n, EvoErr *err);
void store_candidates_free(CandidateRecord *list, int n);

/* Read a compile row, a source text (fresh string, NULL if absent). */
int store_compile_get(Store *s, int64_t id, CompileRecord *c, EvoErr *err);
char *store_source_get(Store *s, const char *hash, EvoErr *err);

/* Insert or replace the summary of one generation. */
int store_generation_put(Store *s, const GenerationRecord *g, EvoErr *err);
/* Read the summaries of a run in order; the caller frees *out with
 * store_generations_free. */
int store_generation_list(Store *s, int64_t run_id, GenerationRecord **out, int *n, EvoErr *err);
void store_generations_free(GenerationRecord *list, int n);

/* Counts by (status, decision) for a run: calls fn once per group. */
int store_run_counts(Store *s, int64_t run_id,
                     void (*fn)(void *ctx, const char *status, const char *decision, int64_t n),
                     void *ctx, EvoErr *err);

/* Record an LLM request; sets r->id. And link it to the candidate made. */
int store_llm_request_insert(Store *s, LlmRequestRecord *r, EvoErr *err);
int store_llm_request_link(Store *s, int64_t request_id, int64_t candidate_id, EvoErr *err);

/* ---- LLM requests: lists, counts, statistics; raw kernels (issue 7) -- */

/* Every LLM request of a run (run 0: all runs), oldest first. *out is a
 * fresh array the caller frees with store_llm_requests_free. Returns 0 or
 * -1 (err). */
int store_llm_request_list(Store *s, int64_t run_id, LlmRequestRecord **out, int *n, EvoErr *err);
void store_llm_requests_free(LlmRequestRecord *list, int n);

/* How many requests of a run were recorded for generations gen_from..
 * gen_to (inclusive), not counting those marked 'interrupted'. Returns the
 * count, or -1 (err). */
int store_llm_request_count(Store *s, int64_t run_id, int64_t gen_from, int64_t gen_to, EvoErr *err);

/* Resume: mark the requests of a run whose answer was usable (status ok)
 * but whose candidate was never committed (the run was killed in between)
 * as status 'interrupted' with an error saying so. Returns the number of
 * rows changed, or -1 (err). */
int store_llm_requests_interrupt(Store *s, int64_t run_id, EvoErr *err);

/* One row of the llm_mode_stats view (db/002_llm.sql). */
typedef struct LlmModeStats {
    char    mode[16];          /* free | insight | full */
    int64_t requests, children, valid, accepted;
    double  validity_rate;     /* valid / requests (compiled and passed the gate) */
    double  acceptance_rate;   /* accepted / requests */
    double  best_speedup;      /* over the baseline; NaN when no child was timed */
} LlmModeStats;

/* The per-mode statistics of a run, ordered by mode. *out is a fresh
 * array (free()); *n may be 0. Returns 0 or -1 (err). */
int store_llm_mode_stats(Store *s, int64_t run_id, LlmModeStats **out, int *n, EvoErr *err);

/* Keep a raw kernel (one that is not the task's template: origin "source"
 * for --source, "llm" for an LLM answer, with its request id or 0) under
 * the first 16 hex digits of its SHA-256, the key ops_params_key() puts
 * after '@'. A kernel already present is left as it is. Returns 0 or -1. */
int store_kernel_put(Store *s, const char *text, const char *origin, int64_t llm_request_id, EvoErr *err);

/* The raw kernel of a candidate whose params_key holds "@<key>": a fresh
 * string, or NULL with err (no '@', no such kernel, database error). */
char *store_kernel_get(Store *s, const char *params_key, EvoErr *err);

#endif

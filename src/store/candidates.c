/*
 * candidates: candidates with their sources and compile rows (one
 * transaction per candidate), lists in id or survivor order, generation
 * summaries and counts by status. See store.h for the contract.
 */
#include "store/store.h"

#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "store/rows.h"

/* ---- field tables ---------------------------------------------------- */

static const Field compile_fields[] = {
    FLDR(CompileRecord, cache_key, F_TEXT), FLDR(CompileRecord, source_hash, F_TEXT),
    FLDR(CompileRecord, arch, F_TEXT), FLDR(CompileRecord, options, F_TEXT),
    FLD(CompileRecord, nvrtc_version, F_TEXT), FLDR(CompileRecord, ok, F_INT),
    FLD(CompileRecord, log, F_TEXT), FLD(CompileRecord, registers, F_INT),
    FLD(CompileRecord, smem, F_INT), FLD(CompileRecord, spill_stores, F_INT),
    FLD(CompileRecord, spill_loads, F_INT), FLD(CompileRecord, stack, F_INT),
    FLD(CompileRecord, resources_json, F_TEXT), FLD(CompileRecord, compile_ms, F_REAL),
    FLDR(CompileRecord, created_at, F_TEXT),
};

/* A gate stage by name in --json ("none", "bench", "full"). */
static json_t *put_gate_stage(const void *at)
{
    return json_string(gate_stage_name(*(const int64_t *)at));
}

/* The --json candidate object (docs/json-output.md) in the order it
 * prints: what every view has, the detail of show (FLD_MORE), then the
 * columns it never prints. A NULL metric is left out (FLD_OMIT). */
#define CJ(name, ty, ...) FLDJ(CandidateRecord, name, ty, __VA_ARGS__)
#define OMIT .show = FLD_OMIT
#define DETAIL .show = FLD_OMIT | FLD_MORE
static const Field candidate_fields[] = {
    CJ(run_id, F_ID, .req = 1, .jkey = "run"),       FLDR(CandidateRecord, generation, F_INT),
    FLDR(CandidateRecord, operator, F_TEXT),          FLDR(CandidateRecord, status, F_TEXT),
    FLDR(CandidateRecord, decision, F_TEXT),          CJ(gate_stage, F_INT, .req = 1, .put = put_gate_stage),
    CJ(parent_id, F_ID, .jkey = "parent", OMIT),     CJ(parent2_id, F_ID, .jkey = "parent2", OMIT),
    CJ(params_json, F_TEXT, .req = 1, .jkey = "params", .put = fld_put_json_text, OMIT),
    CJ(error, F_TEXT, OMIT),
    CJ(latency_us, F_REAL, OMIT), CJ(p90_us, F_REAL, OMIT), CJ(cv, F_REAL, OMIT),
    CJ(ratio_to_parent, F_REAL, OMIT), CJ(speedup, F_REAL, OMIT),
    CJ(ctas, F_INT, OMIT), CJ(threads, F_INT, OMIT), CJ(registers, F_INT, OMIT), CJ(occupancy, F_INT, OMIT),
    /* show only: the detail */
    CJ(ratio_spread, F_REAL, DETAIL), CJ(ctas_total, F_INT, DETAIL), CJ(smem_static, F_INT, DETAIL),
    CJ(smem_dynamic, F_INT, DETAIL), CJ(waves, F_REAL, DETAIL), CJ(tflops, F_REAL, DETAIL),
    CJ(gbps, F_REAL, DETAIL), CJ(compile_ms, F_REAL, DETAIL), CJ(gate_ms, F_REAL, DETAIL),
    CJ(time_ms, F_REAL, DETAIL), CJ(source_hash, F_TEXT, DETAIL),
    CJ(gate_json, F_TEXT, .jkey = "gate", .put = fld_put_json_text, DETAIL),
    CJ(metrics_json, F_TEXT, .jkey = "metrics", .put = fld_put_json_text, DETAIL),
    CJ(rationale, F_TEXT, DETAIL), CJ(log, F_TEXT, DETAIL),
    CJ(created_at, F_TEXT, .req = 1, .show = FLD_MORE), CJ(decided_at, F_TEXT, .req = 1, .show = FLD_MORE),
    /* not in --json */
    CJ(params_key, F_TEXT, .req = 1, .show = FLD_HIDE), CJ(compile_id, F_ID, .show = FLD_HIDE),
    CJ(pct_peak_flops, F_REAL, .show = FLD_HIDE), CJ(pct_peak_bw, F_REAL, .show = FLD_HIDE),
    CJ(llm_request_id, F_ID, .show = FLD_HIDE),
};
#undef CJ
#undef OMIT
#undef DETAIL

/* A generation's row, in the order `run --json` prints its per-generation
 * event (docs/json-output.md); the last three columns are not in it. */
static const Field generation_fields[] = {
    FLDJ(GenerationRecord, run_id, F_ID, .req = 1, .jkey = "run"), FLDR(GenerationRecord, generation, F_INT),
    FLDR(GenerationRecord, evaluated, F_INT), FLDR(GenerationRecord, valid, F_INT),
    FLDR(GenerationRecord, accepted, F_INT), FLDR(GenerationRecord, reverted, F_INT),
    FLD(GenerationRecord, best_id, F_ID), FLD(GenerationRecord, best_latency_us, F_REAL),
    FLDJ(GenerationRecord, failed, F_INT, .req = 1, .show = FLD_HIDE),
    FLDJ(GenerationRecord, wall_ms, F_REAL, .show = FLD_HIDE),
    FLDJ(GenerationRecord, finished_at, F_TEXT, .req = 1, .show = FLD_HIDE),
};

/* ---- records --------------------------------------------------------- */

void candidate_record_init(CandidateRecord *c)
{
    memset(c, 0, sizeof(*c));
    fld_init(candidate_fields, NFIELDS(candidate_fields), c);
}

void compile_record_init(CompileRecord *c)
{
    memset(c, 0, sizeof(*c));
    fld_init(compile_fields, NFIELDS(compile_fields), c);
}

void compile_record_free(CompileRecord *c)
{
    fld_free(compile_fields, NFIELDS(compile_fields), c);
    c->id = 0;
}

void candidate_record_free(CandidateRecord *c)
{
    fld_free(candidate_fields, NFIELDS(candidate_fields), c);
    c->id = 0;
}

json_t *store_generation_json(const GenerationRecord *g)
{
    return fld_to_json_view(generation_fields, NFIELDS(generation_fields), g, 0);
}

json_t *store_candidate_json(const CandidateRecord *c, int detail)
{
    return fld_row_json(c->id, candidate_fields, NFIELDS(candidate_fields), c, detail ? FLD_MORE : 0);
}

static void free_candidate(void *r)
{
    candidate_record_free(r);
}

static void free_generation(void *r)
{
    free(((GenerationRecord *)r)->finished_at);
}

/* ---- candidates ------------------------------------------------------ */

/* INSERT OR IGNORE INTO sources (hash, text, bytes, created_at) VALUES (?, ?, ?, ?) */
static int source_put(Store *s, const char *hash, const char *text, EvoErr *err)
{
    sqlite3_stmt *st = NULL;
    if (sdb_prepare(s, "INSERT OR IGNORE INTO sources (hash, text, bytes, created_at) VALUES (?, ?, ?, ?)",
                &st, err))
        return -1;
    char *now = time_iso8601();
    sqlite3_bind_text(st, 1, hash, -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(st, 2, text, -1, SQLITE_TRANSIENT);
    sqlite3_bind_int64(st, 3, (sqlite3_int64)strlen(text));
    sqlite3_bind_text(st, 4, now, -1, SQLITE_TRANSIENT);
    int rc = sqlite3_step(st) == SQLITE_DONE ? 0 : sdb_fail(s, err, "INSERT INTO sources");
    sqlite3_finalize(st);
    free(now);
    return rc;
}

/* SELECT id FROM compiles WHERE cache_key = ?, inserting the row first if absent. */
static int compile_put(Store *s, CompileRecord *c, EvoErr *err)
{
    sqlite3_stmt *st = NULL;
    if (sdb_prepare(s, "SELECT id FROM compiles WHERE cache_key = ?", &st, err))
        return -1;
    sqlite3_bind_text(st, 1, c->cache_key, -1, SQLITE_TRANSIENT);
    int step = sqlite3_step(st);
    if (step == SQLITE_ROW)
        c->id = sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    if (step == SQLITE_ROW)
        return 0;
    if (step != SQLITE_DONE)
        return sdb_fail(s, err, "SELECT FROM compiles");
    if (!c->created_at)
        c->created_at = time_iso8601();
    return sdb_insert(s, "compiles", compile_fields, NFIELDS(compile_fields), c, &c->id, err);
}

const char *gate_stage_name(int64_t stage)
{
    switch (stage) {
    case GATE_STAGE_NONE:  return "none";
    case GATE_STAGE_BENCH: return "bench";
    case GATE_STAGE_FULL:  return "full";
    default:               return "?";
    }
}

const char *gate_stage_explain(int64_t stage)
{
    switch (stage) {
    case GATE_STAGE_NONE:  return "never gated (it failed before the correctness gate)";
    case GATE_STAGE_BENCH: return "gated on the benchmark shape only (stage A); never gated on the other shapes";
    case GATE_STAGE_FULL:  return "gated on every shape (stage B)";
    default:               return "unknown gate stage";
    }
}

/* The stage a single-stage gate (every shape at once) reached for a
 * status: the default of a record whose writer did not state one, and the
 * rule db/004_gate_stage.sql backfills older rows with. */
static int64_t gate_stage_of_status(const char *status)
{
    static const char *const gated[] = {"incorrect", "crashed", "timeout", "launch_error"};
    if (!status)
        return GATE_STAGE_NONE;
    if (strcmp(status, "ok") == 0)
        return GATE_STAGE_FULL;
    for (size_t i = 0; i < EVO_ARRAY_LEN(gated); i++)
        if (strcmp(status, gated[i]) == 0)
            return GATE_STAGE_BENCH;
    return GATE_STAGE_NONE;
}

int store_candidate_insert(Store *s, CandidateRecord *c, const char *source_text,
                           CompileRecord *comp, EvoErr *err)
{
    if (c->gate_stage < 0)
        c->gate_stage = gate_stage_of_status(c->status);
    if (sdb_exec(s, "BEGIN IMMEDIATE", err))
        return -1;
    if (source_text && c->source_hash && source_put(s, c->source_hash, source_text, err))
        goto fail;
    if (comp && comp->cache_key) {
        if (!comp->source_hash && c->source_hash)
            comp->source_hash = xstrdup(c->source_hash);
        if (compile_put(s, comp, err))
            goto fail;
        c->compile_id = comp->id;
    }
    if (!c->created_at)
        c->created_at = time_iso8601();
    if (!c->decided_at)
        c->decided_at = time_iso8601();
    if (sdb_insert(s, "candidates", candidate_fields, NFIELDS(candidate_fields), c, &c->id, err))
        goto fail;
    if (sdb_exec(s, "COMMIT", err))
        goto fail;
    return 0;
fail:
    sqlite3_exec(s->db, "ROLLBACK", NULL, NULL, NULL);
    c->id = 0;
    return -1;
}

int store_candidate_get(Store *s, int64_t id, CandidateRecord *c, EvoErr *err)
{
    memset(c, 0, sizeof(*c));
    return sdb_select_by_id(s, "candidates", candidate_fields, NFIELDS(candidate_fields), id, c, &c->id, err);
}

int64_t store_candidate_find(Store *s, int64_t run_id, const char *params_key, EvoErr *err)
{
    /* SELECT id FROM candidates WHERE run_id = ? AND params_key = ? ORDER BY id LIMIT 1 */
    sqlite3_stmt *st = NULL;
    if (sdb_prepare(s, "SELECT id FROM candidates WHERE run_id = ? AND params_key = ? ORDER BY id LIMIT 1",
                &st, err))
        return -1;
    sqlite3_bind_int64(st, 1, run_id);
    sqlite3_bind_text(st, 2, params_key, -1, SQLITE_TRANSIENT);
    int64_t id = 0;
    int step = sqlite3_step(st);
    if (step == SQLITE_ROW)
        id = sqlite3_column_int64(st, 0);
    else if (step != SQLITE_DONE)
        id = sdb_fail(s, err, "SELECT FROM candidates");
    sqlite3_finalize(st);
    return id;
}

/* The candidates of run run_id (0: every run) in order, with ids above
 * after, at most limit (0: all). */
static int list_rows(Store *s, int64_t run_id, StoreOrder order, int64_t after, int limit, CandidateRecord **out,
                     int *n, EvoErr *err)
{
    *out = NULL;
    *n = 0;
    /* SELECT id, <cols> FROM candidates WHERE (?1 = 0 OR run_id = ?1) AND id > ?3 ORDER BY id LIMIT ?2
     * SELECT id, <cols> FROM survivors WHERE gate_stage = 2 AND (?1 = 0 OR run_id = ?1) AND id > ?3
     *   ORDER BY latency_us, id LIMIT ?2
     * The survivors view (db/004_gate_stage.sql) already requires the full
     * gate; the query says so too, so no survivor, parent, best or export
     * can ever come from a candidate gated on the benchmark shape only. */
    int surv = order == STORE_SURVIVORS_BY_LATENCY;
    sqlite3_stmt *st = NULL;
    if (sdb_prepare_select(s, 1, candidate_fields, NFIELDS(candidate_fields), &st, err,
                           "FROM %s WHERE %s(?1 = 0 OR run_id = ?1) AND id > ?3 ORDER BY %s LIMIT ?2",
                           surv ? "survivors" : "candidates", surv ? "gate_stage = 2 AND " : "",
                           surv ? "latency_us, id" : "id"))
        return -1;
    sqlite3_bind_int64(st, 1, run_id);
    sqlite3_bind_int64(st, 2, limit > 0 ? limit : -1);
    sqlite3_bind_int64(st, 3, after);
    return sdb_read_rows(s, st, candidate_fields, NFIELDS(candidate_fields), sizeof(CandidateRecord),
                         offsetof(CandidateRecord, id), free_candidate, "SELECT FROM candidates", (void **)out,
                         n, err);
}

int store_candidate_list(Store *s, int64_t run_id, StoreOrder order, int limit,
                         CandidateRecord **out, int *n, EvoErr *err)
{
    return list_rows(s, run_id, order, 0, limit, out, n, err);
}

int store_candidate_list_after(Store *s, int64_t run_id, StoreOrder order, int64_t after, CandidateRecord **out,
                               int *n, EvoErr *err)
{
    return list_rows(s, run_id, order, after, 0, out, n, err);
}

void candidate_record_copy(CandidateRecord *dst, const CandidateRecord *src)
{
    *dst = *src;
    fld_dup_text(candidate_fields, NFIELDS(candidate_fields), dst);
}

void store_candidates_free(CandidateRecord *list, int n)
{
    for (int i = 0; i < n; i++)
        candidate_record_free(&list[i]);
    free(list);
}

int store_compile_get(Store *s, int64_t id, CompileRecord *c, EvoErr *err)
{
    memset(c, 0, sizeof(*c));
    return sdb_select_by_id(s, "compiles", compile_fields, NFIELDS(compile_fields), id, c, &c->id, err);
}

char *store_source_get(Store *s, const char *hash, EvoErr *err)
{
    /* SELECT text FROM sources WHERE hash = ? */
    sqlite3_stmt *st = NULL;
    if (!hash || sdb_prepare(s, "SELECT text FROM sources WHERE hash = ?", &st, err))
        return NULL;
    sqlite3_bind_text(st, 1, hash, -1, SQLITE_TRANSIENT);
    char *text = NULL;
    int step = sqlite3_step(st);
    if (step == SQLITE_ROW)
        sdb_col_text(s, st, 0, "sources", &text, err);
    else if (step != SQLITE_DONE)
        sdb_fail(s, err, "SELECT FROM sources");
    sqlite3_finalize(st);
    return text;
}

/* ---- generations, counts --------------------------------------------- */

int store_generation_put(Store *s, const GenerationRecord *g, EvoErr *err)
{
    GenerationRecord copy = *g;
    char *now = NULL;
    if (!copy.finished_at)
        copy.finished_at = now = time_iso8601();
    /* INSERT OR REPLACE INTO generations (<cols>) VALUES (?...) */
    int rc = sdb_replace(s, "generations", generation_fields, NFIELDS(generation_fields), &copy, err);
    free(now);
    return rc;
}

int store_generation_list(Store *s, int64_t run_id, GenerationRecord **out, int *n, EvoErr *err)
{
    *out = NULL;
    *n = 0;
    /* SELECT <cols> FROM generations WHERE run_id = ? ORDER BY generation */
    sqlite3_stmt *st = NULL;
    if (sdb_prepare_select(s, 0, generation_fields, NFIELDS(generation_fields), &st, err,
                           "FROM generations WHERE run_id = ? ORDER BY generation"))
        return -1;
    sqlite3_bind_int64(st, 1, run_id);
    return sdb_read_rows(s, st, generation_fields, NFIELDS(generation_fields), sizeof(GenerationRecord), NO_ID,
                         free_generation, "SELECT FROM generations", (void **)out, n, err);
}

void store_generations_free(GenerationRecord *list, int n)
{
    for (int i = 0; list && i < n; i++)
        free_generation(&list[i]);
    free(list);
}

int store_run_counts(Store *s, int64_t run_id,
                     void (*fn)(void *ctx, const char *status, const char *decision, int64_t n),
                     void *ctx, EvoErr *err)
{
    /* SELECT status, decision, n FROM run_counts WHERE run_id = ? ORDER BY n DESC */
    sqlite3_stmt *st = NULL;
    if (sdb_prepare(s, "SELECT status, decision, n FROM run_counts WHERE run_id = ? ORDER BY n DESC, status",
                &st, err))
        return -1;
    sqlite3_bind_int64(st, 1, run_id);
    int step;
    while ((step = sqlite3_step(st)) == SQLITE_ROW) {
        const char *status = (const char *)sqlite3_column_text(st, 0);
        const char *decision = (const char *)sqlite3_column_text(st, 1);
        if (!status || !decision || sqlite3_column_type(st, 2) != SQLITE_INTEGER) {
            err_set(err, "%s: run_counts: a row holds NULL where text is expected (a damaged or foreign store)",
                    store_path(s));
            sqlite3_finalize(st);
            return -1;
        }
        fn(ctx, status, decision, sqlite3_column_int64(st, 2));
    }
    sqlite3_finalize(st);
    return step == SQLITE_DONE ? 0 : sdb_fail(s, err, "SELECT FROM run_counts");
}

/*
 * requests: LLM requests (issue 7) with their per-mode statistics, and the
 * raw kernels that LLM answers and --source baselines bring. See store.h
 * for the contract.
 */
#include "store/store.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store/rows.h"

static const Field llm_fields[] = {
    FLDR(LlmRequestRecord, run_id, F_ID), FLD(LlmRequestRecord, generation, F_INT),
    FLD(LlmRequestRecord, parent_id, F_ID), FLD(LlmRequestRecord, candidate_id, F_ID),
    FLDR(LlmRequestRecord, mode, F_TEXT), FLDR(LlmRequestRecord, provider, F_TEXT),
    FLD(LlmRequestRecord, model, F_TEXT), FLD(LlmRequestRecord, url, F_TEXT),
    FLDR(LlmRequestRecord, prompt, F_TEXT), FLD(LlmRequestRecord, reply, F_TEXT),
    FLD(LlmRequestRecord, rationale, F_TEXT), FLD(LlmRequestRecord, input_tokens, F_INT),
    FLD(LlmRequestRecord, output_tokens, F_INT), FLD(LlmRequestRecord, latency_ms, F_REAL),
    FLD(LlmRequestRecord, http_status, F_INT), FLD(LlmRequestRecord, attempts, F_INT),
    FLDR(LlmRequestRecord, status, F_TEXT), FLD(LlmRequestRecord, error, F_TEXT),
    FLDR(LlmRequestRecord, created_at, F_TEXT),
};

void llm_request_record_init(LlmRequestRecord *r)
{
    memset(r, 0, sizeof(*r));
    fld_init(llm_fields, NFIELDS(llm_fields), r);
}

void llm_request_record_free(LlmRequestRecord *r)
{
    fld_free(llm_fields, NFIELDS(llm_fields), r);
    r->id = 0;
}

static void free_llm_request(void *r)
{
    llm_request_record_free(r);
}

/* ---- LLM requests ---------------------------------------------------- */

int store_llm_request_insert(Store *s, LlmRequestRecord *r, EvoErr *err)
{
    if (!r->created_at)
        r->created_at = time_iso8601();
    return sdb_insert(s, "llm_requests", llm_fields, NFIELDS(llm_fields), r, &r->id, err);
}

int store_llm_request_link(Store *s, int64_t request_id, int64_t candidate_id, EvoErr *err)
{
    /* UPDATE llm_requests SET candidate_id = ? WHERE id = ?; and the reverse link */
    sqlite3_stmt *st = NULL;
    if (sdb_prepare(s, "UPDATE llm_requests SET candidate_id = ?1 WHERE id = ?2", &st, err))
        return -1;
    sqlite3_bind_int64(st, 1, candidate_id);
    sqlite3_bind_int64(st, 2, request_id);
    int rc = sqlite3_step(st) == SQLITE_DONE ? 0 : sdb_fail(s, err, "UPDATE llm_requests");
    sqlite3_finalize(st);
    return rc;
}

/* ---- LLM requests: lists, counts, per-mode statistics, raw kernels ---- */

int store_llm_request_list(Store *s, int64_t run_id, LlmRequestRecord **out, int *n, EvoErr *err)
{
    *out = NULL;
    *n = 0;
    /* SELECT id, <cols> FROM llm_requests WHERE (?1 = 0 OR run_id = ?1) ORDER BY id */
    sqlite3_stmt *st = NULL;
    if (sdb_prepare_select(s, 1, llm_fields, NFIELDS(llm_fields), &st, err,
                           "FROM llm_requests WHERE (?1 = 0 OR run_id = ?1) ORDER BY id"))
        return -1;
    sqlite3_bind_int64(st, 1, run_id);
    return sdb_read_rows(s, st, llm_fields, NFIELDS(llm_fields), sizeof(LlmRequestRecord),
                         offsetof(LlmRequestRecord, id), free_llm_request, "SELECT FROM llm_requests",
                         (void **)out, n, err);
}

void store_llm_requests_free(LlmRequestRecord *list, int n)
{
    for (int i = 0; i < n; i++)
        llm_request_record_free(&list[i]);
    free(list);
}

int store_llm_request_count(Store *s, int64_t run_id, int64_t gen_from, int64_t gen_to, EvoErr *err)
{
    /* SELECT COUNT(*) FROM llm_requests WHERE run_id = ? AND generation BETWEEN ? AND ?
     *   AND status <> 'interrupted' */
    sqlite3_stmt *st = NULL;
    if (sdb_prepare(s,
                "SELECT COUNT(*) FROM llm_requests WHERE run_id = ?1 AND generation BETWEEN ?2 AND ?3 "
                "AND status <> 'interrupted'",
                &st, err))
        return -1;
    sqlite3_bind_int64(st, 1, run_id);
    sqlite3_bind_int64(st, 2, gen_from);
    sqlite3_bind_int64(st, 3, gen_to);
    int rc = sqlite3_step(st) == SQLITE_ROW ? (int)sqlite3_column_int64(st, 0) : sdb_fail(s, err, "SELECT COUNT(*) FROM llm_requests");
    sqlite3_finalize(st);
    return rc;
}

int store_llm_requests_interrupt(Store *s, int64_t run_id, EvoErr *err)
{
    /* UPDATE llm_requests SET status = 'interrupted', error = ...
     *   WHERE run_id = ? AND status = 'ok' AND candidate_id IS NULL */
    sqlite3_stmt *st = NULL;
    if (sdb_prepare(s,
                "UPDATE llm_requests SET status = 'interrupted', error = 'the run stopped before the candidate "
                "of this answer was committed; the request is asked again on resume' "
                "WHERE run_id = ?1 AND status = 'ok' AND candidate_id IS NULL",
                &st, err))
        return -1;
    sqlite3_bind_int64(st, 1, run_id);
    int rc = sqlite3_step(st) == SQLITE_DONE ? sqlite3_changes(s->db) : sdb_fail(s, err, "UPDATE llm_requests");
    sqlite3_finalize(st);
    return rc;
}

int store_llm_mode_stats(Store *s, int64_t run_id, LlmModeStats **out, int *n, EvoErr *err)
{
    *out = NULL;
    *n = 0;
    /* SELECT mode, requests, children, valid, validity_rate, accepted, acceptance_rate,
     *   best_speedup FROM llm_mode_stats WHERE run_id = ? ORDER BY mode */
    sqlite3_stmt *st = NULL;
    if (sdb_prepare(s,
                "SELECT mode, requests, children, valid, validity_rate, accepted, acceptance_rate, best_speedup "
                "FROM llm_mode_stats WHERE run_id = ? ORDER BY mode",
                &st, err))
        return -1;
    sqlite3_bind_int64(st, 1, run_id);
    int step;
    LlmModeStats *list = NULL;
    while ((step = sqlite3_step(st)) == SQLITE_ROW) {
        list = xrealloc(list, (size_t)(*n + 1) * sizeof(*list));
        LlmModeStats *m = &list[*n];
        memset(m, 0, sizeof(*m));
        const char *mode = (const char *)sqlite3_column_text(st, 0);
        snprintf(m->mode, sizeof(m->mode), "%s", mode ? mode : "?");
        m->requests = sqlite3_column_int64(st, 1);
        m->children = sqlite3_column_int64(st, 2);
        m->valid = sqlite3_column_int64(st, 3);
        m->validity_rate = sqlite3_column_double(st, 4);
        m->accepted = sqlite3_column_int64(st, 5);
        m->acceptance_rate = sqlite3_column_double(st, 6);
        m->best_speedup = sqlite3_column_type(st, 7) == SQLITE_NULL ? NAN : sqlite3_column_double(st, 7);
        (*n)++;
    }
    sqlite3_finalize(st);
    if (step != SQLITE_DONE) {
        free(list);
        *n = 0;
        return sdb_fail(s, err, "SELECT FROM llm_mode_stats");
    }
    *out = list;
    return 0;
}

int store_kernel_put(Store *s, const char *text, const char *origin, int64_t llm_request_id, EvoErr *err)
{
    char hex[65], key[17];
    sha256_hex(text, strlen(text), hex);
    memcpy(key, hex, 16);
    key[16] = '\0';
    /* INSERT OR IGNORE INTO kernels (key, hash, text, origin, llm_request_id, created_at)
     *   VALUES (?, ?, ?, ?, ?, ?) */
    sqlite3_stmt *st = NULL;
    if (sdb_prepare(s,
                "INSERT OR IGNORE INTO kernels (key, hash, text, origin, llm_request_id, created_at) "
                "VALUES (?, ?, ?, ?, ?, ?)",
                &st, err))
        return -1;
    char *now = time_iso8601();
    sqlite3_bind_text(st, 1, key, -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(st, 2, hex, -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(st, 3, text, -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(st, 4, origin, -1, SQLITE_TRANSIENT);
    if (llm_request_id > 0)
        sqlite3_bind_int64(st, 5, llm_request_id);
    else
        sqlite3_bind_null(st, 5);
    sqlite3_bind_text(st, 6, now, -1, SQLITE_TRANSIENT);
    int rc = sqlite3_step(st) == SQLITE_DONE ? 0 : sdb_fail(s, err, "INSERT INTO kernels");
    sqlite3_finalize(st);
    free(now);
    return rc;
}

char *store_kernel_get(Store *s, const char *params_key, EvoErr *err)
{
    const char *at = params_key ? strchr(params_key, '@') : NULL;
    if (!at) {
        err_set(err, "%s: params key '%s' names no kernel (no '@')", store_path(s), params_key ? params_key : "");
        return NULL;
    }
    /* SELECT text FROM kernels WHERE key = ? */
    sqlite3_stmt *st = NULL;
    if (sdb_prepare(s, "SELECT text FROM kernels WHERE key = ?", &st, err))
        return NULL;
    sqlite3_bind_text(st, 1, at + 1, -1, SQLITE_TRANSIENT);
    char *text = NULL;
    int step = sqlite3_step(st);
    if (step == SQLITE_ROW) {
        if (sdb_col_text(s, st, 0, "kernels", &text, err) == 0 && !text)
            err_set(err, "%s: kernels: the kernel for params key '%s' is NULL", store_path(s), params_key);
    } else if (step == SQLITE_DONE)
        err_set(err, "%s: no kernel stored for params key '%s'", store_path(s), params_key);
    else
        sdb_fail(s, err, "SELECT FROM kernels");
    sqlite3_finalize(st);
    return text;
}

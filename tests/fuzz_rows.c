/*
 * libFuzzer target for the store's row readers (src/store/): a store file
 * from anywhere may hold any value in any column. The input is decoded
 * into rows of every table of a real store whose NOT NULL and CHECK
 * constraints are out of the way (as a crafted file has them): per table a
 * row count, per column a type tag (NULL, integer, real, text, blob) and
 * its bytes. A connection opened for reading as evoeng opens a store
 * (store_open_readonly, once) then runs every reader over it: runs, candidates in both orders,
 * compiles, sources, kernels, generations, counts, LLM requests and their
 * statistics. Readers may refuse a row (that is their job); they must
 * never crash, leak or hit undefined behaviour.
 * Build with meson (clang found or -Dfuzz=enabled); run through
 * `bench/fuzz.sh SECONDS` or `build/tests/fuzz_rows -max_total_time=60`.
 */
#include <sqlite3.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "store/report_rows.h"
#include "store/store.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char *const tables[] = {"runs", "sources", "compiles", "candidates", "generations", "llm_requests",
                                     "kernels"};
#define NTABLES (sizeof(tables) / sizeof(tables[0]))
static char g_path[256];
static sqlite3 *g_db;                     /* the writer, constraints off */
static sqlite3_stmt *g_ins[NTABLES];      /* INSERT OR REPLACE INTO t VALUES (?, ...) */
static int g_ncol[NTABLES];
static Store *g_store;                    /* the reader, as evoeng opens a store */

static void cleanup(void)
{
    store_close(&g_store);
    for (size_t t = 0; t < NTABLES; t++)
        sqlite3_finalize(g_ins[t]);
    sqlite3_close(g_db);
    char side[300];
    unlink(g_path);
    snprintf(side, sizeof(side), "%s-wal", g_path);
    unlink(side);
    snprintf(side, sizeof(side), "%s-shm", g_path);
    unlink(side);
}

/* The input, read a byte or a few at a time; past the end reads zeros. */
typedef struct In {
    const uint8_t *p;
    size_t left;
} In;

static unsigned take(In *in)
{
    if (!in->left)
        return 0;
    in->left--;
    return *in->p++;
}

static void take_n(In *in, void *out, size_t n)
{
    memset(out, 0, n);
    size_t k = n < in->left ? n : in->left;
    memcpy(out, in->p, k);
    in->p += k;
    in->left -= k;
}

/* One store for the process: evoeng's schema, then its constraints off. */
static int setup(void)
{
    if (g_db)
        return 0;
    /* in memory where there is a tmpfs: each input is a commit */
    const char *dir = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : getenv("TMPDIR");
    snprintf(g_path, sizeof(g_path), "%s/evoeng_fuzz_rows_%ld.db", dir && *dir ? dir : "/tmp", (long)getpid());
    unlink(g_path);
    Store *s = NULL;
    EvoErr err;
    if (store_open(&s, g_path, &err) != 0) {
        fprintf(stderr, "fuzz_rows: %s\n", err.msg);
        abort();
    }
    store_close(&s);
    if (sqlite3_open(g_path, &g_db) != SQLITE_OK)
        abort();
    sqlite3_exec(g_db,
                 "PRAGMA writable_schema = ON; "
                 "UPDATE sqlite_master SET sql = replace(sql, 'NOT NULL', '') WHERE type = 'table'; "
                 "PRAGMA writable_schema = OFF;",
                 NULL, NULL, NULL);
    sqlite3_close(g_db);
    if (sqlite3_open(g_path, &g_db) != SQLITE_OK)
        abort();
    sqlite3_exec(g_db, "PRAGMA ignore_check_constraints = ON; PRAGMA foreign_keys = OFF; PRAGMA synchronous = OFF;",
                 NULL, NULL, NULL);
    for (size_t t = 0; t < NTABLES; t++) {
        char sql[1024];
        snprintf(sql, sizeof(sql), "SELECT count(*) FROM pragma_table_info('%s')", tables[t]);
        sqlite3_stmt *st = NULL;
        if (sqlite3_prepare_v2(g_db, sql, -1, &st, NULL) == SQLITE_OK && sqlite3_step(st) == SQLITE_ROW)
            g_ncol[t] = sqlite3_column_int(st, 0);
        sqlite3_finalize(st);
        if (g_ncol[t] <= 0 || g_ncol[t] > 64)
            abort();
        int k = snprintf(sql, sizeof(sql), "INSERT OR REPLACE INTO %s VALUES (?", tables[t]);
        for (int c = 1; c < g_ncol[t]; c++)
            k += snprintf(sql + k, sizeof(sql) - (size_t)k, ", ?");
        snprintf(sql + k, sizeof(sql) - (size_t)k, ")");
        if (sqlite3_prepare_v2(g_db, sql, -1, &g_ins[t], NULL) != SQLITE_OK)
            abort();
    }
    if (store_open_readonly(&g_store, g_path, &err) != 0) {
        fprintf(stderr, "fuzz_rows: %s\n", err.msg);
        abort();
    }
    atexit(cleanup);
    return 0;
}

/* Rows of table t (g_ins[t]) from in: a count, then per column a tag and
 * its bytes. */
static void fill(In *in, size_t t)
{
    sqlite3_stmt *st = g_ins[t];
    int ncol = g_ncol[t];
    int rows = (int)(take(in) % 4);
    for (int r = 0; r < rows; r++) {
        sqlite3_reset(st);
        for (int c = 1; c <= ncol; c++) {
            unsigned tag = take(in);
            switch (tag % 6) {
            case 0: sqlite3_bind_null(st, c); break;
            case 1: sqlite3_bind_int64(st, c, (sqlite3_int64)(tag >> 3) - 2); break;  /* small: ids that match */
            case 2: {
                int64_t v;
                take_n(in, &v, sizeof(v));
                sqlite3_bind_int64(st, c, v);
                break;
            }
            case 3: {
                double v;
                take_n(in, &v, sizeof(v));
                sqlite3_bind_double(st, c, v);
                break;
            }
            case 4: {
                char buf[256];
                size_t n = take(in);
                take_n(in, buf, n);
                sqlite3_bind_text(st, c, buf, (int)n, SQLITE_TRANSIENT);
                break;
            }
            default: {
                char buf[64];
                size_t n = take(in) % sizeof(buf);
                take_n(in, buf, n);
                sqlite3_bind_blob(st, c, buf, (int)n, SQLITE_TRANSIENT);
                break;
            }
            }
        }
        sqlite3_step(st);
    }
    sqlite3_reset(st);
    sqlite3_clear_bindings(st);
}

static void counts(void *ctx, const char *status, const char *decision, int64_t n)
{
    (void)ctx;
    (void)strlen(status);
    (void)strlen(decision);
    (void)n;
}

static void read_candidate(Store *s, const CandidateRecord *c)
{
    EvoErr err;
    CandidateRecord again;
    if (store_candidate_get(s, c->id, &again, &err) == 1)
        candidate_record_free(&again);
    CompileRecord comp;
    if (c->compile_id && store_compile_get(s, c->compile_id, &comp, &err) == 1)
        compile_record_free(&comp);
    free(store_source_get(s, c->source_hash, &err));
    if (c->params_key && strchr(c->params_key, '@'))
        free(store_kernel_get(s, c->params_key, &err));
}

/* Every reader over the store, as the reading commands call them. */
static void read_all(Store *s)
{
    EvoErr err;
    int64_t n, lo, hi;
    (void)store_run_span(s, &n, &lo, &hi, &err);
    RunSummary *runs = NULL;
    int nruns = 0;
    if (store_run_list(s, &runs, &nruns, &err) == 0)
        store_run_list_free(runs, nruns);
    RunRecord r;
    if (store_run_get(s, 0, &r, &err) == 1)
        run_record_free(&r);
    for (int64_t run = 0; run <= 3; run++) {
        for (int order = 0; order < 2; order++) {
            CandidateRecord *cs = NULL;
            int nc = 0;
            if (store_candidate_list(s, run, (StoreOrder)order, 0, &cs, &nc, &err) == 0) {
                for (int i = 0; i < nc; i++)
                    read_candidate(s, &cs[i]);
                store_candidates_free(cs, nc);
            }
        }
        GenerationRecord *g = NULL;
        int ng = 0;
        if (store_generation_list(s, run, &g, &ng, &err) == 0)
            store_generations_free(g, ng);
        (void)store_run_counts(s, run, counts, NULL, &err);
        LlmRequestRecord *lr = NULL;
        int nl = 0;
        if (store_llm_request_list(s, run, &lr, &nl, &err) == 0) {
            for (int i = 0; i < nl; i++)
                llm_request_record_free(&lr[i]);
            free(lr);
        }
        (void)store_llm_request_count(s, run, 0, 100, &err);
        LlmModeStats *ms = NULL;
        int nm = 0;
        if (store_llm_mode_stats(s, run, &ms, &nm, &err) == 0)
            free(ms);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size > 8192 || setup() != 0)
        return 0;
    In in = {data, size};
    sqlite3_exec(g_db, "BEGIN", NULL, NULL, NULL);
    for (size_t t = 0; t < NTABLES; t++) {
        char del[64];
        snprintf(del, sizeof(del), "DELETE FROM %s", tables[t]);
        sqlite3_exec(g_db, del, NULL, NULL, NULL);
    }
    for (size_t t = 0; t < NTABLES; t++)
        fill(&in, t);
    sqlite3_exec(g_db, "COMMIT", NULL, NULL, NULL);
    read_all(g_store);
    return 0;
}

/*
 * evolve_fixture: what the evolutionary loop's unit tests share. Each test
 * program calls evx_setup() first and evx_teardown() last; the globals
 * below are valid in between.
 */
#ifndef EVO_TEST_EVOLVE_FIXTURE_H
#define EVO_TEST_EVOLVE_FIXTURE_H

#include "search/evolve.h"
#include "device.h"
#include "fake_eval.h"

extern char tmpdir[256];  /* the test's temporary directory */
extern Task *task;        /* the task of the tests (tests/data/good_task.json unless swapped) */
extern DeviceInfo dev;    /* an sm_90 profile */

/* Set the globals up: a temporary directory for the test program NAME
 * and tests/data/good_task.json. Returns 0, or 1 with a message printed. */
int evx_setup(const char *name);
/* Free the task and remove the temporary directory. */
void evx_teardown(void);

/* The value of param NAME in child C (of `task`). */
int64_t pval(const Child *c, const char *name);
/* The latency model: best at BLOCK=256, UNROLL=4, SPLITS=1. */
double model_us(const Child *c);
/* The planted compile error (BLOCK=64 with UNROLL=4), else NULL. */
const char *compile_error(const Child *c);
/* The planted gate failures: BLOCK=512 UNROLL=2 at stage 1, SPLITS=2
 * UNROLL=1 at stage 2; else NULL. */
const char *gate_error(const Child *c, int stage);
/* A FakeEval with the three hooks above (fake_eval_free() it). */
FakeEval *fake_new(void);
/* A quiet run of GENS generations of 4 children, population 4, seed 11,
 * 2% revert threshold. */
EvolveConfig config(const char *strategy, int gens);
/* A new store NAME in tmpdir (NULL with the error printed). */
Store *fresh_store(const char *name);
/* row(c) of every candidate of RUN, each followed by "|": in commit order,
 * or sorted when SORTED. The caller frees the string. */
char *rows_of(Store *s, int64_t run, char *(*row)(const CandidateRecord *c), int sorted);
/* All params keys of RUN in commit order, joined (caller frees). */
char *keys_of(Store *s, int64_t run);
/* Each generation's params keys, sorted within the generation (caller frees). */
char *keys_by_generation(Store *s, int64_t run);
/* Make tests/data/FILE the task; returns the one it replaces. */
Task *swap_task(const char *file);
/* Undo swap_task(): free the swapped-in task and restore SAVED. */
void restore_task(Task *saved);

#endif

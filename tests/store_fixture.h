/*
 * store_fixture: a run row for the store's unit tests (test_store,
 * test_store_trust, test_inspect), with the fields each test cares about.
 */
#ifndef EVO_TEST_STORE_FIXTURE_H
#define EVO_TEST_STORE_FIXTURE_H

#include "store/store.h"
#include "testhelp.h"

/* Insert a run of task `task_name` (spec at task_path, task_json, the run's
 * config_json and seed; strategy evolve) into s; returns its id (a failed
 * insert fails the test's check and returns 0). */
static inline int64_t fixture_run(Store *s, const char *task_name, const char *task_path, const char *task_json,
                                  const char *config_json, int64_t seed)
{
    RunRecord r = {0};
    r.task_name = xstrdup(task_name);
    r.task_path = xstrdup(task_path);
    r.task_json = xstrdup(task_json);
    r.config_json = xstrdup(config_json);
    r.strategy = xstrdup("evolve");
    r.seed = seed;
    EvoErr err;
    CHECK_MSG(store_run_insert(s, &r, &err) == 0, "%s", err.msg);
    int64_t id = r.id;
    run_record_free(&r);
    return id;
}

#endif

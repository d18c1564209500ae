/*
 * fake_eval: a synthetic Evaluator (evolve.h) for the loop's tests, with
 * no GPU: "compiling" makes a source that names the params, the gate and
 * the timing follow the test's hooks. It follows the staged contract:
 * stage 1 gates the benchmark shape, stage 2 the rest, compare fills the
 * child's latency from its side of the A/B.
 */
#ifndef EVO_TEST_FAKE_EVAL_H
#define EVO_TEST_FAKE_EVAL_H

#include "evolve.h"

typedef struct FakeEval {
    /* hooks, set by the test; the failure hooks may be NULL */
    double      (*model_us)(const Child *c);               /* latency of a child */
    const char *(*compile_error)(const Child *c);          /* a compile error message, or NULL */
    const char *(*gate_error)(const Child *c, int stage);  /* a gate failure at this stage, or NULL */
    /* counters */
    int submits[3], gates[3], times, compares;
    int evaluates;        /* stage-1 gates: candidates judged */
    int double_eval;      /* stage-1 gates of a params key judged before */
    int nseen;
    char seen[4096][96];
} FakeEval;

/* A zeroed FakeEval with these hooks (caller frees with free()). */
FakeEval *fake_eval_new(double (*model_us)(const Child *), const char *(*compile_error)(const Child *),
                        const char *(*gate_error)(const Child *, int));

extern const EvaluatorOps fake_eval_ops;

/* A test's setup: a fresh temporary directory /tmp/evo_test_<name>_XXXXXX
 * into tmpdir (room for n) and the task tests/data/<task_file> of
 * $EVO_SOURCE_ROOT into *task. Returns 0, or 1 after a message on stderr. */
int fake_eval_setup(const char *name, const char *task_file, char *tmpdir, size_t n, Task **task);
/* Free the task and remove the temporary directory. */
void fake_eval_teardown(const char *tmpdir, Task **task);

#endif

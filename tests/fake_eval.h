/*
 * fake_eval: a synthetic Evaluator (search/child.h) for the loop's tests, with
 * no GPU: "compiling" makes a source that names the params, the gate and
 * the timing follow the test's hooks. It follows the staged contract:
 * stage 1 gates the benchmark shape, stage 2 the rest, compare fills the
 * child's latency from its side of the A/B.
 */
#ifndef EVO_TEST_FAKE_EVAL_H
#define EVO_TEST_FAKE_EVAL_H

#include <pthread.h>

#include "search/evolve.h"

typedef struct FakeEval {
    /* hooks, set by the test; the failure hooks may be NULL */
    double      (*model_us)(const Child *c);               /* latency of a child */
    const char *(*compile_error)(const Child *c);          /* a compile error message, or NULL */
    const char *(*gate_error)(const Child *c, int stage);  /* a gate failure at this stage, or NULL */
    int nslots;           /* concurrent slots (GPUs); 0: 1 */
    int delay_us;         /* a stage-1 gate takes this long (so slots overlap) */
    int work_us;          /* a stage-2 gate, a timing and an A/B take this long (0: none) */
    int unit_us;          /* a child's stage-1 unit builds this long after its submit: ready()
                           * says 0 until then, its gate and an A/B against it wait */
    int compile_us;       /* a child's stage-2 units build this long after their submit:
                           * ready() says 0 until then and the stage-2 gate waits */
    int account_units;    /* 1: each unit "built" (a child's first stage-1 submit, its first
                           * stage-2 one) counts as an NVRTC compile of 1 ms (nvrtc_stats) */
    int text_bytes;       /* pad each child's source text to about this size (0: no padding), as
                           * a rendered template's is (tens of kB) */
    int log_bytes;        /* > 0: a child's compile row (comp, filled by its stage-1 gate) with a
                           * log of about this size, as NVRTC's with ptxas -v; 0: none */
    int plant;            /* 1: this evaluator renders differently (another host's template) */
    int die_slot;         /* with die_after > 0: this slot is lost after ... */
    int die_after;        /* ... that many requests on it (EVAL_RETRY from then on) */
    pthread_mutex_t lock; /* the counters: slots run on threads of their own */
    int per_slot[8];      /* stage-1 gates per slot */
    int calibrations;
    /* counters */
    int submits[4], gates[3], times, compares;   /* submits[3]: speculative look-ahead */
    int drops;            /* children decided at stage 1 (drop) */
    int evaluates;        /* stage-1 gates: candidates judged */
    int double_eval;      /* stage-1 gates of a params key judged before */
    int nseen;
    char seen[4096][96];
} FakeEval;

/* A zeroed FakeEval with these hooks (release with fake_eval_free()). */
FakeEval *fake_eval_new(double (*model_us)(const Child *), const char *(*compile_error)(const Child *),
                        const char *(*gate_error)(const Child *, int));

void fake_eval_free(FakeEval *f);

/* The source text f renders for c (what submit puts into c->source_text;
 * it depends on c's params key, custom_source, text_bytes and plant), a
 * fresh string. */
char *fake_eval_source(const FakeEval *f, const Child *c);

extern const EvaluatorOps fake_eval_ops;

/* A test's setup: a fresh temporary directory /tmp/evo_test_<name>_XXXXXX
 * into tmpdir (room for n) and the task tests/data/<task_file> of
 * $EVO_SOURCE_ROOT into *task. Returns 0, or 1 after a message on stderr. */
int fake_eval_setup(const char *name, const char *task_file, char *tmpdir, size_t n, Task **task);
/* Free the task and remove the temporary directory. */
void fake_eval_teardown(const char *tmpdir, Task **task);

#endif

/* The MPI mode over the fake evaluator (issue 15 part 2), driven by
 * tests/test_mpi.sh: no GPU. Modes:
 *   test_mpi single DB [RUN]    the run (or resume of RUN) in one process, 2 slots
 *   test_mpi mpi DB [RUN]       the same under mpirun: rank 0 orchestrates over
 *                               mpieval, every other rank serves a fake
 *                               evaluator of one slot
 *   test_mpi dump DB            one line per candidate, in commit order:
 *                               generation, params key, status, decision,
 *                               latency; then "run ID STATUS" and
 *                               "duplicates N"
 * EVO_TEST_AGENT_SLOTS=N gives each agent N slots (default 1).
 * EVO_TEST_SLOW=RANK:US makes agent RANK's stage-A gates take US (2000).
 * EVO_TEST_CACHE=DIR gives every agent that compile cache folder, so that
 * rank 0 lets an idle agent take over another's built children.
 * EVO_TEST_DIE=RANK:N makes agent RANK kill itself (SIGKILL) in its N-th
 * stage-1 gate, mid-request.
 * EVO_TEST_TEXT_BYTES=N pads each child's source text to about N bytes,
 * EVO_TEST_LOG_BYTES=N gives it a compile row with a log of about N bytes
 * (a rendered template and NVRTC's log are tens of kB and a few).
 * EVO_TEST_PLANT=RANK makes agent RANK render sources that rank 0 does
 * not (another host's template files). Rank 0 renders the sources itself
 * unless EVO_TEST_NO_RENDER=1 (then the agents send theirs).
 * A throughput bench of the MPI path (bench/mpi_fake.sh): EVO_TEST_GATE_US
 * (a stage-1 gate, default 2000), EVO_TEST_WORK_US (a stage-2 gate, a
 * timing, an A/B; default 0) mimic GPU work with sleeps, EVO_TEST_UNIT_US
 * the build of a child's stage-1 unit after its submit (default 0),
 * EVO_TEST_PROPOSE_US the loop thread's cost of a proposal (a sleep in
 * each stage-1 submit), EVO_TEST_GENERATIONS and EVO_TEST_SLOTS (one
 * process's slots, default 2) the size; each run prints a "bench:" line. Exit codes: 0, 8 (a rank was lost), 77 (built
 * without MPI, for the mpi mode), 1 (failure). */
#include <math.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "config.h"
#include "device.h"
#include "compile/nvrtc.h"
#include "search/evolve.h"
#include "fake_eval.h"
#include "store/store.h"
#if EVO_HAVE_MPI
#include "mpi/agent.h"
#include "mpi/link.h"
#include "mpi/mpieval.h"
#include "mpi/wire.h"
#endif

static int die_after;   /* this agent's gate that kills it, 0: never */

static int env_int(const char *name, int dflt)
{
    const char *v = getenv(name);
    return v && *v ? atoi(v) : dflt;
}

/* The loop thread's cost of a proposal (EVO_TEST_PROPOSE_US), paid in
 * each stage-1 submit of the evaluator it drives. */
static EvaluatorOps bench_ops;
static const EvaluatorOps *bench_inner;

static int bench_submit(void *ctx, Child *kid, int stage, EvoErr *err)
{
    if (stage == 1)
        usleep((useconds_t)env_int("EVO_TEST_PROPOSE_US", 0));
    return bench_inner->submit(ctx, kid, stage, err);
}

static const EvaluatorOps *bench_wrap(const EvaluatorOps *ev)
{
    if (env_int("EVO_TEST_PROPOSE_US", 0) <= 0)
        return ev;
    bench_inner = ev;
    bench_ops = *ev;
    bench_ops.submit = bench_submit;
    return &bench_ops;
}

/* The fake GPU work of a FakeEval (see the header comment). */
static void fake_work(FakeEval *f)
{
    f->delay_us = env_int("EVO_TEST_GATE_US", 2000);
    f->work_us = env_int("EVO_TEST_WORK_US", 0);
    f->unit_us = env_int("EVO_TEST_UNIT_US", 0);
    f->account_units = 1;   /* the run's NVRTC figures count them: under MPI, the agents' */
    f->text_bytes = env_int("EVO_TEST_TEXT_BYTES", 0);
    f->log_bytes = env_int("EVO_TEST_LOG_BYTES", 0);
}

static uint64_t key_hash(const Child *c)
{
    uint64_t h = 1469598103934665603ull;
    for (const char *p = c->params_key; *p; p++)
        h = (h ^ (unsigned char)*p) * 1099511628211ull;
    return h;
}

static double model_us(const Child *c)
{
    return 10.0 + (double)(key_hash(c) % 1000) / 100.0;
}

static const char *compile_error(const Child *c)
{
    return key_hash(c) % 19 == 3 ? "synthetic compile error" : NULL;
}

static const char *gate_error(const Child *c, int stage)
{
    if (stage == 1 && die_after > 0 && --die_after == 0)
        raise(SIGKILL);   /* an agent dies mid-request */
    if (stage == 1 && key_hash(c) % 13 == 5)
        return "mismatch on the benchmark shape";
    if (stage == 2 && key_hash(c) % 11 == 7)
        return "mismatch on another shape";
    return NULL;
}

static EvolveConfig config(void)
{
    EvolveConfig c = {0};
    c.generations = env_int("EVO_TEST_GENERATIONS", 6);
    c.population = c.children = 8;
    c.seed = 23;
    c.strategy = "evolve";
    c.revert_threshold = 0.02;
    c.quiet = 1;
    c.config_json = "{}";
    /* the same commits as one process: the synchronous mode's promise;
     * EVO_TEST_STEADY=1: the steady mode (no key twice, every generation) */
    const char *steady = getenv("EVO_TEST_STEADY");
    c.sync = !(steady && strcmp(steady, "1") == 0);
    return c;
}

static volatile int stop;

/* Run or resume (run > 0) into db over ev. Returns 0, 8 when stopped by
 * a lost rank, 1 on failure. */
static int run_into(const char *db, int64_t run, const EvaluatorOps *ev, void *ctx, Task *task)
{
    Store *st = NULL;
    EvoErr err;
    DeviceInfo dev;
    if (device_profile("sm_90", &dev, &err) || store_open(&st, db, &err)) {
        fprintf(stderr, "%s\n", err.msg);
        return 1;
    }
    EvolveConfig c = config();
    c.stop = &stop;
    EvolveSummary sum;
    double t0 = time_now_ms();
    int rc = evolve_run(st, task, &dev, bench_wrap(ev), ctx, &c, run, &sum, &err);
    double wall = (time_now_ms() - t0) / 1000.0, busy = 0;
    for (int i = 0; i < sum.slots && i < 8; i++)
        busy += sum.slot_busy_s[i];
    if (rc)
        fprintf(stderr, "evolve_run: %s\n", err.msg);
    rc = stop ? 8 : rc ? 1 : 0;
    printf("run %lld: %d evaluated, interrupted %d, exit %d, taken over %ld\n", (long long)sum.run_id, sum.evaluated,
           sum.interrupted, rc, sum.pipe.taken_over);
    printf("nvrtc units %d, cpu %.3f s\n", sum.nvrtc_units, sum.nvrtc_cpu_s);
    printf("bench: %d slots, %d candidates in %.2f s: %.0f / min, slot time %.2f ms a candidate, slots busy %.2f\n",
           sum.slots, sum.evaluated, wall, sum.evaluated * 60.0 / wall, sum.evaluated ? busy * 1000.0 / sum.evaluated : 0,
           sum.slots ? busy / (wall * sum.slots) : 0);
    fflush(stdout);   /* before MPI's teardown: mpirun forwards what a rank wrote */
    store_close(&st);
    return rc;
}

static int dump(const char *db)
{
    Store *st = NULL;
    EvoErr err;
    if (store_open(&st, db, &err)) {
        fprintf(stderr, "%s\n", err.msg);
        return 1;
    }
    RunRecord r;
    if (store_run_get(st, 0, &r, &err) != 1)
        return 1;
    CandidateRecord *l = NULL;
    int n = 0, dup = 0;
    store_candidate_list(st, r.id, STORE_ALL_BY_ID, 0, &l, &n, &err);
    for (int i = 0; i < n; i++) {
        /* the kernel text committed with it (over MPI: rendered by rank 0
         * and checked against the agent's hash, or sent by the agent), the
         * hash of that text (it must be the candidate's source_hash: "=")
         * and of its compile row's log */
        char *text = l[i].source_hash ? store_source_get(st, l[i].source_hash, &err) : NULL;
        char th[65] = "-", lh[65] = "-";
        if (text)
            sha256_hex(text, strlen(text), th);
        CompileRecord cr;
        if (l[i].compile_id > 0 && store_compile_get(st, l[i].compile_id, &cr, &err) == 1) {
            if (cr.log)
                sha256_hex(cr.log, strlen(cr.log), lh);
            compile_record_free(&cr);
        }
        char *nl = text ? strchr(text, '\n') : NULL;
        if (nl)
            *nl = 0;
        printf("%lld %s %s %s %.4f %s %.16s%s log %.16s\n", (long long)l[i].generation, l[i].params_key,
               l[i].status, l[i].decision ? l[i].decision : "-", isfinite(l[i].latency_us) ? l[i].latency_us : -1.0,
               text ? text : "-", th, text && strcmp(th, l[i].source_hash) != 0 ? "!=" : "=", lh);
        free(text);
        for (int j = 0; j < i; j++)
            dup += strcmp(l[i].params_key, l[j].params_key) == 0;
    }
    printf("run %lld %s\nduplicates %d\n", (long long)r.id, r.status, dup);
    store_candidates_free(l, n);
    run_record_free(&r);
    store_close(&st);
    return 0;
}

#if EVO_HAVE_MPI
/* Rank 0 renders a child's source as the agents' fake evaluators do
 * (MpiRenderFn; ctx: a FakeEval with their settings). */
static int render_fake(void *ctx, const Child *c, char **text, EvoErr *err)
{
    (void)err;
    *text = fake_eval_source(ctx, c);
    return 0;
}

static int mpi_main(const char *db, int64_t run, Task *task)
{
    MpiLink *l = NULL;
    EvoErr err;
    if (mpilink_open(&l, 60, &err)) {
        fprintf(stderr, "%s\n", err.msg);
        return 1;
    }
    int rank = mpilink_rank(l), rc = 0;
    if (rank == 0) {
        MpiEval *m = NULL;
        FakeEval *f = fake_eval_new(model_us, compile_error, gate_error);
        fake_work(f);
        if (mpieval_open(&m, l, &stop, &err) || mpieval_start(m, "{}", task_nparams(task), &err)) {
            fprintf(stderr, "%s\n", err.msg);
            rc = 1;
        } else {
            if (!env_int("EVO_TEST_NO_RENDER", 0))   /* 1: the agents send their sources */
                mpieval_set_render(m, render_fake, f);
            rc = run_into(db, run, &mpieval_ops, m, task);
        }
        fake_eval_free(f);
        int lost = m && mpieval_lost(m);
        mpieval_close(&m);
        mpilink_close(&l, lost);
        return rc;
    }
    const char *die = getenv("EVO_TEST_DIE");
    if (die && atoi(die) == rank && strchr(die, ':'))
        die_after = atoi(strchr(die, ':') + 1);
    char *setup = NULL;
    FakeEval *f = fake_eval_new(model_us, compile_error, gate_error);
    fake_work(f);
    f->nslots = getenv("EVO_TEST_AGENT_SLOTS") ? atoi(getenv("EVO_TEST_AGENT_SLOTS")) : 1;
    const char *slow = getenv("EVO_TEST_SLOW");   /* RANK:US: that agent's stage-A gates take US */
    if (slow && atoi(slow) == rank && strchr(slow, ':'))
        f->delay_us = atoi(strchr(slow, ':') + 1);
    f->plant = env_int("EVO_TEST_PLANT", 0) == rank;
    if (getenv("EVO_TEST_CACHE"))   /* a compile cache folder: agents that share it may take over */
        nvrtc_set_cache_dir(getenv("EVO_TEST_CACHE"));
    DeviceInfo dev;
    memset(&dev, 0, sizeof(dev));
    char *hex = wire_device_hex(&dev);
    int abandon = 0;
    if (agent_wait_setup(l, &setup, &err) ||
        (setup && agent_serve(l, &fake_eval_ops, f, task_nparams(task), hex, &abandon, &err))) {
        fprintf(stderr, "rank %d: %s\n", rank, err.msg);
        rc = 1;
    }
    free(hex);
    free(setup);
    fake_eval_free(f);
    mpilink_close(&l, abandon);
    return rc;
}
#endif

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: test_mpi single|mpi|dump DB [RUN]\n");
        return 1;
    }
    const char *mode = argv[1], *db = argv[2];
    int64_t run = argc > 3 ? atoll(argv[3]) : 0;
    if (strcmp(mode, "dump") == 0)
        return dump(db);
    Task *task = NULL;
    EvoErr err;
    char *p = xasprintf("%s/tests/data/search_task.json", getenv("EVO_SOURCE_ROOT") ? getenv("EVO_SOURCE_ROOT") : ".");
    int rc = task_load(p, &task, &err);
    free(p);
    if (rc) {
        fprintf(stderr, "%s\n", err.msg);
        return 1;
    }
    if (strcmp(mode, "single") == 0) {
        FakeEval *f = fake_eval_new(model_us, compile_error, gate_error);
        f->nslots = env_int("EVO_TEST_SLOTS", 2);
        fake_work(f);
        rc = run_into(db, run, &fake_eval_ops, f, task);
        fake_eval_free(f);
    } else {
#if EVO_HAVE_MPI
        rc = mpi_main(db, run, task);
#else
        fprintf(stderr, "test_mpi: built without MPI\n");
        rc = 77;
#endif
    }
    task_free(&task);
    return rc;
}

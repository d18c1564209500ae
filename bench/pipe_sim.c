/*
 * pipe_sim: the evaluation pipeline simulated on the CPU, for sizing and
 * scaling studies without a GPU (issue 32). The real loop (steady or
 * --sync) runs unchanged over an evaluator whose "compilations" sleep on
 * a real compile pool of --lanes threads (so 16 lanes fit a 2-core
 * machine) and whose GPU work sleeps on each slot: the per-candidate
 * costs measured on the GPU machine go in as options. Latencies come from
 * a synthetic, seeded landscape over the task's parameters, with planted
 * compile and gate failures, so acceptance rates and stage B arise as in
 * a run. Figures are simulated; bench/scale.sh says so when it prints them.
 *
 *   pipe_sim [--task PATH] [--slots N] [--lanes J] [--compile-ms C]
 *            [--units U] [--gate-ms G] [--ab-ms A] [--time-ms T]
 *            [--generations N] [--seconds S] [--speed X] [--sync]
 *            [--in-flight W] [--seed K] [--keys FILE] [--json]
 *
 * --keys FILE writes the committed params keys, in commit order, one a
 * line (to compare two builds' proposals in the --sync mode).
 * --speed X runs X times faster than real time (every cost divided by X)
 * and reports figures scaled back to real time.
 */
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "device.h"
#include "search/evolve.h"
#include "compile/pool.h"
#include "store/store.h"
#include "task/task.h"
#include "task/task_space.h"

#define MAXU 8

typedef struct Sim {
    Task   *task;
    Pool   *pool;
    int     slots, units;
    double  compile_ms, gate_ms, ab_ms, time_ms, speed;
    uint64_t seed;
} Sim;

typedef struct SimUnit {
    PoolJob job;
    int     queued;
    double  ms;
} SimUnit;

typedef struct SimPriv {
    SimUnit u[MAXU];
} SimPriv;

/* ---- the landscape ---------------------------------------------------- */

static uint64_t mix(uint64_t x)
{
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdULL;
    x ^= x >> 33;
    x *= 0xc4ceb9fe1a85ec53ULL;
    return x ^ (x >> 33);
}

static double unit_real(uint64_t h)   /* [-1, 1) */
{
    return (double)(h >> 11) / (double)(1ULL << 52) - 1.0;
}

/* Latency: a product of per-(param, value) factors and pairwise terms of
 * neighbouring params, seeded: smooth enough to climb, rugged enough to
 * need the search. */
static double sim_latency(const Sim *s, const int64_t *v)
{
    int np = task_nparams(s->task);
    double lat = 10.0;
    for (int i = 0; i < np; i++) {
        int k = task_param_find(s->task, i, v[i]);
        lat *= 1.0 + 0.12 * unit_real(mix(s->seed ^ ((uint64_t)i << 20) ^ (uint64_t)k));
        if (i + 1 < np) {
            int k2 = task_param_find(s->task, i + 1, v[i + 1]);
            lat *= 1.0 + 0.04 * unit_real(mix(s->seed * 31 ^ ((uint64_t)i << 24) ^ ((uint64_t)k << 8) ^ (uint64_t)k2));
        }
    }
    return lat;
}

static uint64_t key_hash(const Sim *s, const Child *c)
{
    uint64_t h = s->seed;
    for (const char *p = c->params_key; *p; p++)
        h = mix(h ^ (unsigned char)*p);
    return h;
}

static void fail(Child *c, const char *status, const char *msg)
{
    free(c->rec.status);
    c->rec.status = xstrdup(status);
    free(c->rec.error);
    c->rec.error = xstrdup(msg);
}

static void sleep_ms(double ms)
{
    if (ms > 0)
        usleep((useconds_t)(ms * 1000));
}

/* ---- the evaluator ---------------------------------------------------- */

static void compile_task(void *arg)
{
    SimUnit *u = arg;
    sleep_ms(u->ms);
}

static int unit_submit(Sim *s, SimUnit *u, double ms, int level)
{
    if (u->queued) {
        pool_job_promote(s->pool, &u->job, level);
        return 0;
    }
    u->queued = 1;
    u->ms = ms;
    return pool_submit_pri(s->pool, &u->job, compile_task, u, level);
}

static int s_submit(void *ctx, Child *c, int stage, EvoErr *err)
{
    Sim *s = ctx;
    if (c->rec.status && strcmp(c->rec.status, "ok") != 0)
        return 0;
    SimPriv *p = c->priv;
    if (!p) {
        p = xcalloc(1, sizeof(*p));
        c->priv = p;
        char hex[65];
        c->source_text = xasprintf("// sim %s", c->params_key);
        sha256_hex(c->source_text, strlen(c->source_text), hex);
        c->rec.source_hash = xstrdup(hex);
    }
    /* each unit's compile time varies +-30% with the configuration */
    double ms = s->compile_ms / s->speed * (1.0 + 0.3 * unit_real(key_hash(s, c)));
    if (stage <= 1)
        return unit_submit(s, &p->u[0], ms, POOL_NEXT) ? err_set(err, "sim: pool closing") : 0;
    for (int u = 1; u < s->units; u++)
        if (unit_submit(s, &p->u[u], ms, stage == 2 ? POOL_NOW : POOL_SPEC))
            return err_set(err, "sim: pool closing");
    return 0;
}

static int units_ready(Sim *s, SimPriv *p, int stage)
{
    int u0 = stage == 1 ? 0 : 1, u1 = stage == 1 ? 1 : s->units;
    for (int u = u0; u < u1; u++)
        if (!p->u[u].queued || !pool_job_is_done(s->pool, &p->u[u].job))
            return 0;
    return 1;
}

static int s_ready(void *ctx, Child *c, int stage)
{
    Sim *s = ctx;
    SimPriv *p = c->priv;
    return !p || (c->rec.status && strcmp(c->rec.status, "ok") != 0) || units_ready(s, p, stage);
}

static void s_urge(void *ctx, Child *c, int stage)
{
    Sim *s = ctx;
    SimPriv *p = c->priv;
    int u0 = stage == 1 ? 0 : 1, u1 = stage == 1 ? 1 : s->units;
    for (int u = u0; p && u < u1; u++)
        if (p->u[u].queued)
            pool_job_promote(s->pool, &p->u[u].job, POOL_NOW);
}

static int s_gate(void *ctx, Child *c, int stage, EvoErr *err)
{
    Sim *s = ctx;
    SimPriv *p = c->priv;
    if (c->rec.status)
        return 0;
    if (!p)
        return err_set(err, "sim gate: never submitted");
    if (stage == 2)
        s_submit(ctx, c, 2, err);
    s_urge(ctx, c, stage);
    int u0 = stage == 1 ? 0 : 1, u1 = stage == 1 ? 1 : s->units;
    for (int u = u0; u < u1; u++)
        pool_job_wait(s->pool, &p->u[u].job);
    uint64_t h = key_hash(s, c);
    c->rec.gate_stage = stage == 1 ? GATE_STAGE_BENCH : GATE_STAGE_FULL;
    if (stage == 1 && h % 100 < 3) {
        c->rec.gate_stage = GATE_STAGE_NONE;
        fail(c, "compile_error", "sim: planted compile error");
        return 0;
    }
    sleep_ms(s->gate_ms / s->speed * (stage == 1 ? 1.0 : 1.5));
    if (h % 100 == (uint64_t)(3 + stage))
        fail(c, "incorrect", "sim: planted mismatch");
    return 0;
}

static void fill(Sim *s, Child *c)
{
    free(c->rec.status);
    c->rec.status = xstrdup("ok");
    c->rec.latency_us = sim_latency(s, c->vals);
    c->rec.p90_us = c->rec.latency_us * 1.01;
    c->rec.cv = 0.004;
}

static int s_time(void *ctx, Child *c, EvoErr *err)
{
    Sim *s = ctx;
    (void)err;
    if (c->rec.status)
        return 0;
    sleep_ms(s->time_ms / s->speed);
    fill(s, c);
    return 0;
}

static int s_compare(void *ctx, Child *parent, Child *kid, double *ratio, double *spread, EvoErr *err)
{
    Sim *s = ctx;
    (void)err;
    *ratio = *spread = NAN;
    if (kid->rec.status && strcmp(kid->rec.status, "ok") != 0)
        return 0;
    sleep_ms(s->ab_ms / s->speed);
    *ratio = sim_latency(s, kid->vals) / sim_latency(s, parent->vals);
    *spread = 0.004;
    fill(s, kid);
    return 0;
}

static void s_drop(void *ctx, Child *c)
{
    Sim *s = ctx;
    SimPriv *p = c->priv;
    for (int u = 1; p && u < s->units; u++)
        if (p->u[u].queued && pool_job_cancel(s->pool, &p->u[u].job))
            p->u[u].queued = 0;
}

static void s_release(void *ctx, Child *c)
{
    Sim *s = ctx;
    SimPriv *p = c->priv;
    if (!p)
        return;
    for (int u = 0; u < s->units; u++)
        if (p->u[u].queued && !pool_job_cancel(s->pool, &p->u[u].job))
            pool_job_wait(s->pool, &p->u[u].job);   /* running: its task still uses u */
    free(p);
    c->priv = NULL;
}

static int s_busy(void *ctx, Child *c)
{
    Sim *s = ctx;
    SimPriv *p = c->priv;
    for (int u = 0; p && u < s->units; u++)
        if (p->u[u].queued && !pool_job_is_done(s->pool, &p->u[u].job))
            return 1;
    return 0;
}

static int s_slots(void *ctx)
{
    return ((Sim *)ctx)->slots;
}

static int s_lanes(void *ctx)
{
    return pool_threads(((Sim *)ctx)->pool);
}

static void s_watch(void *ctx, void (*fn)(void *), void *arg)
{
    pool_set_hook(((Sim *)ctx)->pool, fn, arg);
}

static void s_pipe_stats(void *ctx, EvalPipeStats *out)
{
    Sim *s = ctx;
    PoolStats ps;
    pool_stats(s->pool, &ps);
    out->lanes = ps.threads;
    out->compile_busy_s = ps.busy_s * s->speed;
    out->units_now = ps.ran[POOL_NOW];
    out->units_next = ps.ran[POOL_NEXT];
    out->units_spec = ps.ran[POOL_SPEC];
    out->units_cancelled = ps.cancelled;
}

static const EvaluatorOps sim_ops = {
    .name = "sim", .submit = s_submit, .gate = s_gate, .time = s_time, .compare = s_compare,
    .release = s_release, .slots = s_slots, .drop = s_drop, .ready = s_ready, .urge = s_urge,
    .lanes = s_lanes, .watch = s_watch, .pipe_stats = s_pipe_stats, .busy = s_busy,
};

/* ---- main ------------------------------------------------------------- */

static double arg_num(int argc, char **argv, const char *name, double dflt)
{
    for (int i = 1; i + 1 < argc; i++)
        if (strcmp(argv[i], name) == 0)
            return atof(argv[i + 1]);
    return dflt;
}

static const char *arg_str(int argc, char **argv, const char *name, const char *dflt)
{
    for (int i = 1; i + 1 < argc; i++)
        if (strcmp(argv[i], name) == 0)
            return argv[i + 1];
    return dflt;
}

static int arg_flag(int argc, char **argv, const char *name)
{
    for (int i = 1; i < argc; i++)
        if (strcmp(argv[i], name) == 0)
            return 1;
    return 0;
}

/* The landscape's best over the valid space (enumerated), or NAN. */
static double space_best(Sim *s, const DeviceInfo *dev)
{
    TaskSpace sp;
    EvoErr err;
    if (task_space_enumerate(s->task, dev, 100000000, &sp, &err))
        return NAN;
    double best = INFINITY;
    for (size_t i = 0; i < sp.count; i++) {
        double l = sim_latency(s, &sp.vals[i * (size_t)sp.nparams]);
        if (l < best)
            best = l;
    }
    task_space_free(&sp);
    return best;
}

int main(int argc, char **argv)
{
    if (arg_flag(argc, argv, "-h") || arg_flag(argc, argv, "--help")) {
        fprintf(stdout, "usage: pipe_sim [--task PATH] [--slots N] [--lanes J] [--compile-ms C] [--units U]\n"
                        "                [--gate-ms G] [--ab-ms A] [--time-ms T] [--generations N] [--seconds S]\n"
                        "                [--speed X] [--sync] [--in-flight W] [--seed K] [--keys FILE] [--json]\n");
        return 0;
    }
    const char *root = getenv("EVO_SOURCE_ROOT");
    char *dflt = xasprintf("%s/templates/attention/task.json", root ? root : ".");
    Sim s = {0};
    s.slots = (int)arg_num(argc, argv, "--slots", 1);
    s.units = (int)arg_num(argc, argv, "--units", 4);
    s.compile_ms = arg_num(argc, argv, "--compile-ms", 270);
    s.gate_ms = arg_num(argc, argv, "--gate-ms", 15);
    s.ab_ms = arg_num(argc, argv, "--ab-ms", 25);
    s.time_ms = arg_num(argc, argv, "--time-ms", 25);
    s.speed = arg_num(argc, argv, "--speed", 1);
    s.seed = (uint64_t)arg_num(argc, argv, "--seed", 1);
    if (s.units < 1 || s.units > MAXU || s.slots < 1 || s.speed <= 0) {
        fprintf(stderr, "pipe_sim: --units 1..%d, --slots >= 1, --speed > 0\n", MAXU);
        return 2;
    }
    EvoErr err;
    DeviceInfo dev;
    if (task_load(arg_str(argc, argv, "--task", dflt), &s.task, &err) || device_profile("sm_90", &dev, &err) ||
        pool_open(&s.pool, (int)arg_num(argc, argv, "--lanes", 16), &err)) {
        fprintf(stderr, "pipe_sim: %s\n", err.msg);
        return 1;
    }
    char db[] = "/tmp/pipe_sim_XXXXXX";
    int fd = mkstemp(db);
    if (fd >= 0)
        close(fd);
    Store *st = NULL;
    if (store_open(&st, db, &err)) {
        fprintf(stderr, "pipe_sim: %s\n", err.msg);
        return 1;
    }
    volatile int stop = 0;
    EvolveConfig c = {
        .generations = (int)arg_num(argc, argv, "--generations", 1000), .population = 8, .children = 8,
        .seed = s.seed, .strategy = "evolve", .revert_threshold = 0.02, .quiet = 1, .config_json = "{}",
        .stop = &stop, .time_limit_s = arg_num(argc, argv, "--seconds", 0) / s.speed,
        .sync = arg_flag(argc, argv, "--sync"), .in_flight = (int)arg_num(argc, argv, "--in-flight", 0),
        .no_warm_start = 1,
    };
    EvolveSummary sum;
    int rc = evolve_run(st, s.task, &dev, &sim_ops, &s, &c, 0, &sum, &err);
    if (rc)
        fprintf(stderr, "pipe_sim: %s\n", err.msg);
    const char *keys = arg_str(argc, argv, "--keys", NULL);
    if (keys && rc == 0) {
        CandidateRecord *l = NULL;
        int nl = 0;
        FILE *kf = fopen(keys, "w");
        if (kf && store_candidate_list(st, sum.run_id, STORE_ALL_BY_ID, 0, &l, &nl, &err) == 0)
            for (int i = 0; i < nl; i++)
                fprintf(kf, "%lld %s %s %s\n", (long long)l[i].generation, l[i].params_key, l[i].operator, l[i].decision);
        if (kf)
            fclose(kf);
        store_candidates_free(l, nl);
    }
    double best = space_best(&s, &dev);
    double wall_s = sum.wall_ms / 1000.0 * s.speed, per_min = sum.evaluated / (wall_s / 60.0);
    PoolStats ps;
    pool_stats(s.pool, &ps);
    double lanes_busy = ps.busy_s * s.speed / (ps.threads * wall_s);
    if (arg_flag(argc, argv, "--json")) {
        printf("{\"simulated\": true, \"mode\": \"%s\", \"slots\": %d, \"lanes\": %d, \"in_flight\": %d, "
               "\"evaluated\": %d, \"wall_s\": %.2f, \"candidates_per_min\": %.1f, \"slot_busy\": [",
               c.sync ? "sync" : "steady", s.slots, ps.threads, sum.in_flight, sum.evaluated, wall_s, per_min);
        for (int i = 0; i < s.slots && i < 8; i++)
            printf("%s%.3f", i ? ", " : "", sum.slot_busy_s[i] * s.speed / wall_s);
        printf("], \"compile_busy\": %.3f, \"units\": {\"now\": %ld, \"next\": %ld, \"spec\": %ld, \"cancelled\": %ld}, "
               "\"best_over_optimum\": %.4f}\n",
               lanes_busy, ps.ran[POOL_NOW], ps.ran[POOL_NEXT], ps.ran[POOL_SPEC], ps.cancelled,
               sum.best_latency_us / best);
    } else {
        printf("simulated %s, %d slots, %d lanes, window %d: %d candidates in %.1f s = %.1f / min; slots busy",
               c.sync ? "sync" : "steady", s.slots, ps.threads, sum.in_flight, sum.evaluated, wall_s, per_min);
        for (int i = 0; i < s.slots && i < 8; i++)
            printf(" %.0f%%", 100 * sum.slot_busy_s[i] * s.speed / wall_s);
        printf("; compile %.0f%% (units now %ld, next %ld, spec %ld, cancelled %ld); best %.4f x the optimum\n",
               100 * lanes_busy, ps.ran[POOL_NOW], ps.ran[POOL_NEXT], ps.ran[POOL_SPEC], ps.cancelled,
               sum.best_latency_us / best);
    }
    store_close(&st);
    unlink(db);
    char *wal = xasprintf("%s-wal", db), *shm = xasprintf("%s-shm", db);
    unlink(wal);
    unlink(shm);
    free(wal);
    free(shm);
    pool_close(&s.pool);
    task_free(&s.task);
    free(dflt);
    return rc ? 1 : 0;
}

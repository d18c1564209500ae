/* fake_eval: see fake_eval.h. */
#include "fake_eval.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "compile/nvrtc.h"

FakeEval *fake_eval_new(double (*model_us)(const Child *), const char *(*compile_error)(const Child *),
                        const char *(*gate_error)(const Child *, int))
{
    FakeEval *f = xcalloc(1, sizeof(*f));
    f->model_us = model_us;
    f->compile_error = compile_error;
    f->gate_error = gate_error;
    pthread_mutex_init(&f->lock, NULL);
    return f;
}

void fake_eval_free(FakeEval *f)
{
    if (!f)
        return;
    pthread_mutex_destroy(&f->lock);
    free(f);
}

/* Count one request on the child's slot; 1 when that slot is lost. */
static int slot_lost(FakeEval *f, const Child *c)
{
    pthread_mutex_lock(&f->lock);
    int lost = 0;
    if (f->die_after > 0 && c->gpu == f->die_slot) {
        if (f->die_after == 1)
            lost = 1;
        else
            f->die_after--;
    }
    pthread_mutex_unlock(&f->lock);
    return lost;
}

/* What a child's priv points at: how far its compilations were queued
 * (stage 1 or 2), and when stage 2 was. */
typedef struct FakePriv {
    int    stage;
    double t1_ms, t2_ms;
} FakePriv;

static void fail(Child *c, const char *status, const char *msg)
{
    c->rec.status = xstrdup(status);
    c->rec.error = xstrdup(msg);
}

char *fake_eval_source(const FakeEval *f, const Child *c)
{
    StrBuf sb = {0};
    sb_printf(&sb, "// %s\n%s", c->params_key, c->custom_source ? c->custom_source : "template");
    /* lines of the kind a rendered kernel has (indented code, quotes,
     * tabs), cheap to make: a template's render takes a fraction of a ms */
    char *line = xasprintf("\n#include \"part.cuh\"\n\tacc[i] += a[i * 8] * b[j]; /* %s */", c->params_key);
    size_t n = strlen(line);
    while ((int)sb.len < f->text_bytes)
        sb_appendn(&sb, line, n);
    free(line);
    if (f->plant)
        sb_append(&sb, "\n// rendered from another host's template\n");
    return sb_take(&sb);
}

/* c's compile row: a cache key, its source's hash and a log of about
 * f->log_bytes, as prep_compile_record fills one (at the stage-1 gate, as
 * GpuEval's: an MPI agent that only gates a child's stage 2 has none). */
static void fake_comp(const FakeEval *f, Child *c)
{
    compile_record_free(&c->comp);
    compile_record_init(&c->comp);
    c->comp.cache_key = xasprintf("%.32s%.32s", c->rec.source_hash, c->rec.source_hash);
    c->comp.source_hash = xstrdup(c->rec.source_hash);
    c->comp.arch = xstrdup("sm_90");
    c->comp.options = xstrdup("-arch=sm_90 -Xptxas -v");
    c->comp.nvrtc_version = xstrdup("12.8");
    c->comp.ok = 1;
    StrBuf sb = {0};
    for (int i = 0; (int)sb.len < f->log_bytes; i++)
        sb_printf(&sb, "ptxas info    : Used %d registers, used 1 barriers, %d bytes smem, 400 bytes cmem[0] (%s)\n",
                  32 + i % 64, 1024 * (i % 48), c->params_key);
    c->comp.log = sb_take(&sb);
    c->comp.resources_json = xstrdup("[]");
    c->comp.registers = 32;
}

static int fake_submit(void *ctx, Child *c, int stage, EvoErr *err)
{
    FakeEval *f = ctx;
    if (c->rec.status && strcmp(c->rec.status, "ok") != 0)
        return 0;
    pthread_mutex_lock(&f->lock);   /* GPU threads submit stage 2 */
    f->submits[stage]++;
    pthread_mutex_unlock(&f->lock);
    if (stage <= 1 && !c->priv) {
        char hex[65];
        c->source_text = fake_eval_source(f, c);
        sha256_hex(c->source_text, strlen(c->source_text), hex);
        c->rec.source_hash = xstrdup(hex);
        FakePriv *p = xcalloc(1, sizeof(*p));   /* non-NULL: release() must be called */
        p->stage = 1;
        p->t1_ms = time_now_ms();
        c->priv = p;
        if (f->account_units)
            nvrtc_stats_account(1, 1.0, 1.0);
    } else if (stage == 2) {
        if (!c->priv)
            return err_set(err, "fake submit: stage 2 of a child never submitted");
        FakePriv *p = c->priv;
        if (p->stage != 2) {   /* its other units are queued */
            p->stage = 2;
            p->t2_ms = time_now_ms();
            if (f->account_units)
                nvrtc_stats_account(1, 1.0, 1.0);
        }
    }
    return 0;
}

/* ms left before a child's stage-2 units are built (compile_us). */
static double build_left_ms(const FakeEval *f, const Child *c)
{
    const FakePriv *p = c->priv;
    if (!p || p->stage != 2 || f->compile_us <= 0)
        return 0;
    double left = p->t2_ms + f->compile_us / 1000.0 - time_now_ms();
    return left > 0 ? left : 0;
}

/* ms left before a child's stage-1 unit is built (unit_us). */
static double unit_left_ms(const FakeEval *f, const Child *c)
{
    const FakePriv *p = c->priv;
    if (!p || f->unit_us <= 0)
        return 0;
    double left = p->t1_ms + f->unit_us / 1000.0 - time_now_ms();
    return left > 0 ? left : 0;
}

static void wait_ms(double ms)
{
    if (ms > 0)
        usleep((useconds_t)(ms * 1000));
}

static int fake_ready(void *ctx, Child *c, int stage)
{
    return stage == 2 ? build_left_ms(ctx, c) <= 0 : unit_left_ms(ctx, c) <= 0;
}

static int fake_gate(void *ctx, Child *c, int stage, EvoErr *err)
{
    FakeEval *f = ctx;
    if (c->rec.status)
        return 0;
    const FakePriv *fp = c->priv;
    if (!fp || fp->stage < stage)
        return err_set(err, "fake gate: stage %d of a child whose stage-%d units were never queued", stage, stage);
    wait_ms(stage == 2 ? build_left_ms(f, c) : unit_left_ms(f, c));
    if (slot_lost(f, c))
        return EVAL_RETRY;
    if (stage == 1 && c->source_text) {   /* the source it built and its compile row, as GpuEval's gate */
        char hex[65];
        sha256_hex(c->source_text, strlen(c->source_text), hex);
        free(c->rec.source_hash);
        c->rec.source_hash = xstrdup(hex);
        if (f->log_bytes > 0)
            fake_comp(f, c);
    }
    if (stage == 1 && f->delay_us > 0)
        usleep((useconds_t)f->delay_us);
    if (stage == 2 && f->work_us > 0)
        usleep((useconds_t)f->work_us);
    pthread_mutex_lock(&f->lock);
    f->gates[stage]++;
    if (stage == 1) {
        f->evaluates++;
        if (c->gpu >= 0 && c->gpu < 8)
            f->per_slot[c->gpu]++;
        for (int i = 0; i < f->nseen; i++)
            if (strcmp(f->seen[i], c->params_key) == 0)
                f->double_eval++;
        if (f->nseen < 4096)
            snprintf(f->seen[f->nseen++], sizeof(f->seen[0]), "%s", c->params_key);
    }
    pthread_mutex_unlock(&f->lock);
    if (stage == 1) {
        const char *ce = f->compile_error ? f->compile_error(c) : NULL;
        if (ce) {
            fail(c, "compile_error", ce);
            return 0;
        }
    }
    const char *ge = f->gate_error ? f->gate_error(c, stage) : NULL;
    c->rec.gate_stage = stage == 1 ? GATE_STAGE_BENCH : GATE_STAGE_FULL;
    if (ge)
        fail(c, "incorrect", ge);
    return 0;
}

static void fill(FakeEval *f, Child *c)
{
    free(c->rec.status);
    c->rec.status = xstrdup("ok");
    c->rec.latency_us = f->model_us(c);
    c->rec.p90_us = c->rec.latency_us * 1.01;
    c->rec.cv = 0.003;
    c->rec.ctas = 24;
    c->rec.occupancy = 4;
    c->rec.registers = 32;
}

static int fake_time(void *ctx, Child *c, EvoErr *err)
{
    FakeEval *f = ctx;
    if (c->rec.status)
        return 0;
    if (c->rec.gate_stage < GATE_STAGE_BENCH)
        return err_set(err, "fake time: a child that was not gated");
    if (slot_lost(f, c))
        return EVAL_RETRY;
    if (f->work_us > 0)
        usleep((useconds_t)f->work_us);
    pthread_mutex_lock(&f->lock);
    f->times++;
    pthread_mutex_unlock(&f->lock);
    fill(f, c);
    return 0;
}

static int fake_compare(void *ctx, Child *parent, Child *kid, double *ratio, double *spread, EvoErr *err)
{
    FakeEval *f = ctx;
    *ratio = *spread = NAN;
    if (kid->rec.status && strcmp(kid->rec.status, "ok") != 0)
        return 0;
    if (kid->rec.gate_stage < GATE_STAGE_BENCH || !parent->priv)
        return err_set(err, "fake compare: a candidate that was not gated or prepared");
    if (slot_lost(f, kid))
        return EVAL_RETRY;
    wait_ms(unit_left_ms(f, parent));   /* a parent just sent to this agent (MPI) */
    if (f->work_us > 0)
        usleep((useconds_t)f->work_us);
    pthread_mutex_lock(&f->lock);
    f->compares++;
    pthread_mutex_unlock(&f->lock);
    *ratio = f->model_us(kid) / f->model_us(parent);
    *spread = 0.004;
    fill(f, kid);
    return 0;
}

static void fake_release(void *ctx, Child *kid)
{
    (void)ctx;
    free(kid->priv);
    kid->priv = NULL;
}

static int fake_calibrate(void *ctx, Child *baseline, EvoErr *err)
{
    FakeEval *f = ctx;
    (void)err;
    if (!baseline->priv)
        return err_set(err, "fake calibrate: the baseline is not prepared");
    pthread_mutex_lock(&f->lock);
    f->calibrations++;
    pthread_mutex_unlock(&f->lock);
    return 0;
}

static void fake_drop(void *ctx, Child *kid)
{
    FakeEval *f = ctx;
    (void)kid;
    pthread_mutex_lock(&f->lock);
    f->drops++;
    pthread_mutex_unlock(&f->lock);
}

static int fake_slots(void *ctx)
{
    FakeEval *f = ctx;
    return f->nslots > 0 ? f->nslots : 1;
}

const EvaluatorOps fake_eval_ops = {
    .name = "fake", .submit = fake_submit, .gate = fake_gate, .time = fake_time, .compare = fake_compare,
    .release = fake_release, .slots = fake_slots, .calibrate = fake_calibrate, .drop = fake_drop,
    .ready = fake_ready,
};

int fake_eval_setup(const char *name, const char *task_file, char *tmpdir, size_t n, Task **task)
{
    const char *root = getenv("EVO_SOURCE_ROOT");
    if (!root) {
        fprintf(stderr, "EVO_SOURCE_ROOT is not set\n");
        return 1;
    }
    snprintf(tmpdir, n, "/tmp/evo_test_%s_XXXXXX", name);
    if (!mkdtemp(tmpdir))
        return 1;
    EvoErr err;
    char *p = xasprintf("%s/tests/data/%s", root, task_file);
    int rc = task_load(p, task, &err);
    free(p);
    if (rc)
        fprintf(stderr, "%s\n", err.msg);
    return rc ? 1 : 0;
}

void fake_eval_teardown(const char *tmpdir, Task **task)
{
    task_free(task);
    char *cmd = xasprintf("rm -rf '%s'", tmpdir);
    if (system(cmd) != 0)
        fprintf(stderr, "cleanup failed\n");
    free(cmd);
}

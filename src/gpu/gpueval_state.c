/*
 * gpueval_state: what the parts of gpueval share (gpueval_state.h): the
 * slot of a child and its pending unloads, a slot that fails, the wait and
 * load of a unit, and the child's record fields the static steps fill.
 */
#include "gpu/gpueval_state.h"

#include <pthread.h>
#include <stdlib.h>

#include "msg.h"

/* Unload what other threads released on slot sl: called on the thread
 * that is about to send sl's worker a request, so a worker never sees two
 * threads at once (release runs on the loop's thread while the slot's
 * GPU thread gates or times). */
void ge_slot_flush(GpuEval *g, Slot *sl)
{
    pthread_mutex_lock(&g->lock);
    int n = sl->nunload, *ids = sl->unload;
    sl->unload = NULL;
    sl->capunload = 0;
    __atomic_store_n(&sl->nunload, 0, __ATOMIC_RELAXED);
    int dead = sl->dead;
    pthread_mutex_unlock(&g->lock);
    EvoErr err;
    for (int i = 0; i < n && !dead; i++)
        worker_unload(sl->worker, ids[i], &err);
    free(ids);
}

/* The slot a child is judged on, its pending unloads done. */
Slot *ge_slot_of(GpuEval *g, const Child *c)
{
    int w = c->gpu >= 0 && c->gpu < g->nslots ? c->gpu : 0;
    if (__atomic_load_n(&g->slots[w].nunload, __ATOMIC_RELAXED))
        ge_slot_flush(g, &g->slots[w]);
    return &g->slots[w];
}

/* A worker request on slot sl failed at the orchestrator (its worker
 * cannot go on). With other GPUs alive the slot is dropped and the child
 * goes elsewhere (EVAL_RETRY); the last one fails the run (-1). */
int ge_slot_failed(GpuEval *g, Slot *sl, EvoErr *err)
{
    pthread_mutex_lock(&g->lock);
    int retry = 0;
    if (!sl->dead && g->alive > 1) {
        sl->dead = 1;
        g->alive--;
        retry = 1;
    }
    pthread_mutex_unlock(&g->lock);
    if (!retry)
        return -1;
    warnf("GPU %d (%s) is dropped from the run: %s", sl->dev.ordinal, sl->dev.name, err->msg);
    return EVAL_RETRY;
}

void ge_set_str(char **dst, const char *s)
{
    free(*dst);
    *dst = s ? xstrdup(s) : NULL;
}


/* Take a failure of the static steps into the child's record. */
void ge_take_prep_status(Child *c, const Prepared *p)
{
    ge_set_str(&c->rec.status, p->status);
    ge_set_str(&c->rec.error, p->error ? p->error : p->status);
    /* The benchmark shape's compile log is the candidate's compile row;
     * another shape's that failed goes whole into its evaluation log. */
    const char *flog = prep_failure_log(p);
    if (flog && p->nunits > 0 && p->units[p->shape_unit[0]].res.ok) {
        char *s = xasprintf("%scompile log of the source that failed:\n%s\n", c->rec.log ? c->rec.log : "", flog);
        free(c->rec.log);
        c->rec.log = s;
    }
}

/* The shapes a stage gates: [*s0, *s1): the benchmark shape (stage 1),
 * every other shape (stage 2). */
void ge_stage_shapes(const Prepared *p, int stage, int *s0, int *s1)
{
    *s0 = stage == 1 ? 0 : 1;
    *s1 = stage == 1 ? 1 : p->nplans;
}

/* The module id of shape s's unit on slot sl (-1: not loaded). */
int *ge_mod_id(GpuEval *g, Priv *pv, const Slot *sl, int s)
{
    return &pv->ids[(int)(sl - g->slots) * pv->prep.nunits + pv->prep.shape_unit[s]];
}

/* Wait for the unit of shape s and load it into slot sl's worker (once).
 * A parent may be used by several GPU threads at once: the wait and the
 * load happen under the evaluator's lock for a parent (shared = 1).
 * Returns 0 with *st (EVAL_OK, or the load's failure; a failed compile
 * leaves pv->prep.status set and *st EVAL_OK), -1 on an orchestrator
 * failure. */
int ge_unit_ready(GpuEval *g, Slot *sl, Priv *pv, int s, int shared, EvalStatus *st, char *msg, size_t cap,
                      EvoErr *err)
{
    int u = pv->prep.shape_unit[s], rc = 0;
    *st = EVAL_OK;
    if (shared)
        pthread_mutex_lock(&g->lock);
    if (prep_unit_wait(g->pool, &pv->prep, u, err))
        rc = -1;
    int *id = ge_mod_id(g, pv, sl, s);
    if (rc == 0 && !pv->prep.status[0] && *id < 0) {
        int nent = task_nentries(g->task);
        const char **ents = xcalloc((size_t)nent + 1, sizeof(char *));
        for (int i = 0; i < nent; i++)
            ents[i] = prep_unit_entry(&pv->prep.units[u], task_entry(g->task, i));
        const CompileResult *r = &pv->prep.units[u].res;
        rc = worker_load(sl->worker, r->cubin, r->cubin_len, ents, nent, id, NULL, st, msg, cap, err);
        free(ents);
    }
    if (shared)
        pthread_mutex_unlock(&g->lock);
    return rc;
}

/*
 * warm: warm starts (issue 12). Generation 0 of a new run seeds up to half
 * of its members with the best survivors (baseline or accepted, status ok:
 * fully gated) of earlier runs of the same task name on the same device,
 * instead of random members. The runs take turns: the best of each run
 * first, then the second best of each, and so on, by stored latency. A
 * configuration is taken only when it is valid for the task as loaded now
 * (shape, template and params may have changed: params that no longer
 * parse or no longer pass the constraints are skipped) and not already
 * evaluated here. Kernels that are not the task's template (LLM answers,
 * --source) are not seeded.
 *
 * A seed is recorded with operator "warm", no parent (so it passes the
 * full gate and is timed like any generation-0 member), its source in
 * parent2_id and in the rationale "warm start from run R candidate C".
 * Only runs with a smaller id count, so resume seeds the same members.
 */
#include "search/warm.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "search/judge.h"
#include "search/moves.h"

static int same_str(const char *a, const char *b)
{
    return a && b && strcmp(a, b) == 0;
}

/* 1 when run id is an earlier run of this task on this device; known[]
 * caches answers (0 unknown, 1 yes, 2 no) for ids below cap. */
static int source_run(Loop *L, int64_t id, char *known, int64_t cap, EvoErr *err)
{
    if (id <= 0 || id >= L->run.id || id >= cap)
        return 0;
    if (!known[id]) {
        RunRecord r;
        int got = store_run_get(L->st, id, &r, err);
        if (got < 0)
            return -1;
        known[id] = got == 1 && same_str(r.task_name, L->run.task_name) &&
                            same_str(r.device_name, L->run.device_name) ? 1 : 2;
        if (got == 1)
            run_record_free(&r);
    }
    return known[id] == 1;
}

int loop_warm_propose(Loop *L, Child *kids, int want, int *done, EvoErr *err)
{
    int limit = (want + 1) / 2, n = 0, rc = 0;
    L->sum->warm_seeded = 0;
    L->sum->warm_runs[0] = '\0';
    if (L->cfg->no_warm_start || limit <= 0 || !L->run.device_name)
        return 0;
    CandidateRecord *all = NULL;
    int na = 0;
    if (store_candidate_list(L->st, 0, STORE_SURVIVORS_BY_LATENCY, 0, &all, &na, err))
        return -1;
    int64_t cap = L->run.id + 1;
    char *known = xcalloc((size_t)cap + 1, 1);
    int *rank = xcalloc((size_t)na + 1, sizeof(int));
    int64_t *runs = xcalloc((size_t)limit + 1, sizeof(int64_t));
    int nruns = 0, maxrank = 0;
    for (int i = 0; i < na && rc == 0; i++) {
        int src = strchr(all[i].params_key, '@') ? 0 : source_run(L, all[i].run_id, known, cap, err);
        if (src < 0)
            rc = -1;
        rank[i] = -1;
        if (src == 1) {
            for (int j = 0; j < i; j++)
                rank[i] += all[j].run_id == all[i].run_id && rank[j] >= 0;
            rank[i]++;
            maxrank = rank[i] > maxrank ? rank[i] : maxrank;
        }
    }
    /* the runs take turns: every run's best first */
    for (int r = 0; r <= maxrank && n < limit && rc == 0; r++) {
        for (int i = 0; i < na && n < limit && rc == 0; i++) {
            if (rank[i] != r)
                continue;
            Child c;
            loop_child_init(L, &c);
            EvoErr e;
            int state = 0, ok = task_params_parse(L->task, all[i].params_json, c.vals, &e) == 0;
            if (ok) {
                ok = loop_place(L, 0, kids, n, &c, NULL, &state, err);
                if (ok < 0)
                    rc = -1;
            }
            if (ok <= 0) {
                loop_child_free(L, &c);
                continue;
            }
            c.op = "warm";
            c.parent2_id = all[i].id;
            c.rec.rationale = xasprintf("warm start from run %lld candidate %lld", (long long)all[i].run_id,
                                        (long long)all[i].id);
            done[n] = state == 1;
            kids[n++] = c;
            int seen = 0;
            for (int k = 0; k < nruns; k++)
                seen |= runs[k] == all[i].run_id;
            if (!seen)
                runs[nruns++] = all[i].run_id;
        }
    }
    if (rc == 0) {
        L->sum->warm_seeded = n;
        size_t used = 0;
        for (int k = 0; k < nruns && used < sizeof(L->sum->warm_runs); k++)
            used += (size_t)snprintf(L->sum->warm_runs + used, sizeof(L->sum->warm_runs) - used, "%s%lld",
                                     k ? ", " : "", (long long)runs[k]);
    } else {
        for (int i = 0; i < n; i++)
            loop_child_free(L, &kids[i]);
        n = 0;
    }
    store_candidates_free(all, na);
    free(known);
    free(rank);
    free(runs);
    return rc < 0 ? -1 : n;
}

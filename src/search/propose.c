/*
 * propose: a generation's proposals by strategy, and the niche founders.
 * See propose.h.
 */
#include "search/propose.h"

#include <stdlib.h>
#include <string.h>

#include "search/judge.h"
#include "search/model.h"
#include "search/moves.h"
#include "search/ops.h"
#include "search/population.h"
#include "search/warm.h"

#define STAGNATION_K    3    /* generations without improvement before immigrants */

/* kids[n] = *c (done[n]: committed before a kill, see loop_place) when v
 * says c is valid (1; 0 not, -1 an error) and loop_place takes it; else c
 * is freed. 1 placed, 0 not, -1 on an error. */
static int place_child(Loop *L, int64_t gen, Child *kids, int n, int *done, Child *c, const CandidateRecord *kparent,
                       int v, EvoErr *err)
{
    int state = 0, got = v < 0 ? -1 : v == 0 ? 0 : loop_place(L, gen, kids, n, c, kparent, &state, err);
    if (got > 0) {
        done[n] = state == 1;
        kids[n] = *c;
        return 1;
    }
    loop_child_free(L, c);
    return got < 0 ? -1 : 0;
}

/* A niche founder: when a value of a structural knob is held by no
 * survivor of the run yet (say WGMMA=1), one child a generation takes the
 * best member's configuration with that value (the missing pairs take
 * turns by generation), repaired by wider moves of the other params if the
 * constraints refuse it. It is compared with the baseline, like an
 * immigrant, so it founds the niche (it becomes a survivor) unless it is
 * more than 2% slower than the baseline. Returns 1 with kids[n] filled, 0
 * when there is nothing to found or no valid new founder, -1 on an error. */
static int propose_founder(Loop *L, int64_t gen, const CandidateRecord *pop, int npop, Child *kids, int n,
                           int *done, EvoErr *err)
{
    const LoopSurvivors *S;
    int np = L->np, rc = 0;
    if (npop == 0 || loop_survivors(L, &S, err))
        return npop == 0 ? 0 : -1;
    const CandidateRecord *all = S->rec;
    const int64_t *v = S->vals;
    const char *ok = S->ok;
    int na = S->n;
    int *knobs = xcalloc((size_t)np + 1, sizeof(int)), nk = loop_niche_knobs(L->task, knobs), pairs = 0;
    for (int k = 0; k < nk; k++)
        pairs += task_param_nvalues(L->task, knobs[k]);
    int64_t *base = xcalloc((size_t)np + 1, sizeof(int64_t));
    int *miss_k = xcalloc((size_t)pairs + 1, sizeof(int)), *miss_v = xcalloc((size_t)pairs + 1, sizeof(int));
    int nmiss = 0;
    char *pok = NULL;
    int64_t *pv = loop_parse_all(L, L->pending, L->npending_surv, &pok);
    for (int k = 0; k < nk; k++) {
        int i = knobs[k];
        for (int vi = 0; vi < task_param_nvalues(L->task, i); vi++) {
            int64_t val = task_param_value(L->task, i, vi);
            int held = 0;
            for (int j = 0; j < na && !held; j++)
                held = all[j].generation < gen && ok[j] && v[(size_t)j * (size_t)np + (size_t)i] == val;
            for (int j = 0; j < L->npending_surv && !held; j++)   /* speculation: as if committed */
                held = pok[j] && pv[(size_t)j * (size_t)np + (size_t)i] == val;
            if (!held) {
                miss_k[nmiss] = i;
                miss_v[nmiss++] = vi;
            }
        }
    }
    if (nmiss > 0 && task_params_parse(L->task, pop[0].params_json, base, err) == 0) {
        int pick = (int)(gen % nmiss), knob = miss_k[pick];
        int64_t val = task_param_value(L->task, knob, miss_v[pick]);
        Rng rng;
        rng_seed(&rng, rng_mix(rng_mix(L->cfg->seed, (uint64_t)gen), 0xf0u));
        for (int attempt = 0; attempt < 64 && rc == 0; attempt++) {
            Child c;
            loop_child_init(L, &c);
            if (attempt == 0 || ops_perturb(L->task, &rng, base, 1 + attempt / 16, attempt >= 32, c.vals))
                memcpy(c.vals, base, (size_t)np * sizeof(int64_t));
            c.vals[knob] = val;
            int valid = attempt == 0 ? loop_valid_config(L, c.vals, NULL, err) : 1;
            if (valid == 0)   /* repaired or not, loop_place checks it again */
                valid = loop_repair(L, &rng, base, c.vals, err) < 0 ? -1 : 1;
            c.op = "niche";
            c.parent_id = L->baseline.rec.id;
            rc = place_child(L, gen, kids, n, done, &c, &pop[0], valid, err);
        }
    } else if (nmiss > 0) {
        rc = -1;
    }
    free(knobs);
    free(pv);
    free(pok);
    free(base);
    free(miss_k);
    free(miss_v);
    return rc;
}

/* The best member's nearest untried configuration: one param moved one
 * value step (structural knobs such as WGMMA first, the others after, each
 * group in random order; a move the constraints refuse takes its coupled
 * knobs along, loop_repair). A mutation of a tournament winner reaches a
 * given single step of the best only now and then; this child walks the
 * best's neighbourhood one step a generation, so a one-knob improvement of
 * the best is not left to chance. Returns 1 with kids[n] filled, 0 when
 * every neighbour was tried (or none is valid), -1 on an error. */
static int propose_neighbour(Loop *L, int64_t gen, const CandidateRecord *pop, int npop, Child *kids, int n,
                             int *done, EvoErr *err)
{
    int np = L->np, rc = 0;
    int64_t *base = xcalloc((size_t)np + 1, sizeof(int64_t));
    int *knobs = xcalloc((size_t)np + 1, sizeof(int)), *order = xcalloc((size_t)np + 1, sizeof(int));
    int tried = npop > 0 && pop[0].id > 0 && pop[0].id == L->nb_tried;   /* (a speculative member has no id) */
    if (npop == 0 || tried || task_params_parse(L->task, pop[0].params_json, base, err)) {
        rc = npop == 0 || tried ? 0 : -1;
        goto out;
    }
    Rng rng;
    rng_seed(&rng, rng_mix(rng_mix(L->cfg->seed, (uint64_t)gen), 0x6e6bu));
    int ns = loop_niche_knobs(L->task, knobs), no = 0;
    char *structural = xcalloc((size_t)np + 1, 1);
    for (int k = 0; k < ns; k++)
        structural[knobs[k]] = 1;
    for (int pass = 1; pass >= 0; pass--) {   /* the structural knobs, then the rest, each shuffled */
        int from = no;
        for (int i = 0; i < np; i++)
            if (structural[i] == pass && task_param_nvalues(L->task, i) > 1)
                order[no++] = i;
        for (int i = no - 1; i > from; i--) {
            int k = from + (int)rng_below(&rng, (uint64_t)(i - from + 1)), t = order[i];
            order[i] = order[k];
            order[k] = t;
        }
    }
    free(structural);
    for (int o = 0; o < no && rc == 0; o++) {   /* (what was tried stays tried: the next best starts again) */
        int i = order[o], cur = task_param_find(L->task, i, base[i]), nv = task_param_nvalues(L->task, i);
        for (int sgn = -1; sgn <= 1 && rc == 0 && cur >= 0; sgn += 2) {
            int k = cur + sgn;
            if (k < 0 || k >= nv)
                continue;
            Child c;
            loop_child_init(L, &c);
            memcpy(c.vals, base, (size_t)np * sizeof(int64_t));
            c.vals[i] = task_param_value(L->task, i, k);
            int v = loop_valid_config(L, c.vals, NULL, err);
            if (v == 0)
                v = loop_repair(L, &rng, base, c.vals, err);
            c.op = "neighbour";
            c.parent_id = pop[0].id;
            rc = place_child(L, gen, kids, n, done, &c, &pop[0], v, err);
        }
    }
    if (rc == 0 && pop[0].id > 0)
        L->nb_tried = pop[0].id;
out:
    free(base);
    free(knobs);
    free(order);
    return rc;
}

/* Propose up to `want` children for generation gen into kids[]. Children
 * already committed in this generation (a resumed run) are returned with
 * done = 1 and not evaluated again. When stagnation reaches STAGNATION_K,
 * a quarter of the slots (at least one) are random immigrants. A slot
 * whose moves find nothing new widens them (see MAX_ATTEMPTS), so a
 * generation is full until the valid space is exhausted (*exhausted = 1,
 * when given). Returns the count, or -1. */
int loop_propose(Loop *L, int64_t gen, CandidateRecord *pop, int npop, Child *kids, int want, int *done,
                 int *exhausted, EvoErr *err)
{
    Rng rng;
    rng_seed(&rng, rng_mix(L->cfg->seed, (uint64_t)gen));
    if (exhausted)
        *exhausted = 0;
    const int diverse = !L->cfg->no_diversity &&
                        (strcmp(L->cfg->strategy, "evolve") == 0 || strcmp(L->cfg->strategy, "model") == 0);
    int nf = diverse && gen > 0 && want > 1 ? propose_founder(L, gen, pop, npop, kids, 0, done, err) : 0;
    if (nf < 0)
        return -1;
    if (diverse && gen > 0 && want > nf + 2) {
        int nn = propose_neighbour(L, gen, pop, npop, kids, nf, done, err);
        if (nn < 0)
            return -1;
        nf += nn;
    }
    if (strcmp(L->cfg->strategy, "model") == 0 && gen > 0 && npop > 0)
        return loop_model_propose(L, gen, pop, npop, kids, nf, want, done, exhausted, err);
    LoopMoves mv;
    loop_moves_init(L, gen, pop, npop, &mv);
    int immigrants = mv.stagnation >= STAGNATION_K ? (want + 3) / 4 : 0;
    int n = nf, rc = 0;
    const int exh = strcmp(L->cfg->strategy, "exhaustive") == 0;
    if (gen == 0 && !exh && strcmp(L->cfg->strategy, "random") != 0)
        n = loop_warm_propose(L, kids, want, done, err);
    if (n < 0) {
        loop_moves_free(&mv);
        return -1;
    }
    for (int slot = n; slot < want && rc == 0; slot++) {
        mv.immigrant = slot >= want - immigrants;
        mv.uniform = !L->cfg->no_diversity && slot % 4 == 1;
        int placed = 0;
        for (int attempt = 0; attempt <= MAX_ATTEMPTS && !placed && rc == 0; attempt++) {
            Child c;
            loop_child_init(L, &c);
            int kp = -1, state = 0, got;
            if (exh) {
                got = loop_exhaustive_next(L, c.vals, err);
                if (got > 0) {
                    c.op = "exhaustive";
                    c.parent_id = L->baseline.rec.id;
                    got = loop_place(L, gen, kids, n, &c, NULL, &state, err);
                    attempt = 0;   /* the cursor moves on: no widening */
                } else {
                    rc = got < 0 ? -1 : 1;
                }
            } else if (attempt == MAX_ATTEMPTS) {
                got = loop_fill_unseen(L, gen, &rng, kids, n, &c, &state, err);
                if (got == 0 && exhausted)
                    *exhausted = 1;
                rc = got < 0 ? -1 : got == 0 ? 1 : 0;
                got = got == 2 ? 0 : got;   /* an unlucky slot of a huge space stays empty */
            } else {
                got = loop_propose_one(L, gen, &rng, &mv, attempt, &c, &kp, err);
                if (got == 0)
                    got = loop_place(L, gen, kids, n, &c, kp >= 0 ? &pop[kp] : NULL, &state, err);
                else if (got > 0)
                    got = 0;
            }
            if (got < 0)
                rc = -1;
            if (got > 0 && rc == 0) {
                done[n] = state == 1;
                kids[n++] = c;
                placed = 1;
            } else {
                loop_child_free(L, &c);   /* invalid or already evaluated: refill */
            }
        }
    }
    loop_moves_free(&mv);
    return rc < 0 ? -1 : n;
}

/*
 * population: the population a generation works from, and its
 * stagnation.
 */
#ifndef EVO_SEARCH_POPULATION_H
#define EVO_SEARCH_POPULATION_H

#include "search/loop.h"

/* The population chosen from all[0..m) (survivors, fastest first; the
 * array and its records are taken over): the P fastest and the niches. */
int loop_population_pick(Loop *L, CandidateRecord *all, int m, CandidateRecord **pop, int *n);
/* The P fastest survivors of generations before gen, fastest first, with
 * the best survivor of each unrepresented value of a structural knob
 * (niches). */
int loop_load_population(Loop *L, int64_t gen, CandidateRecord **pop, int *n, EvoErr *err);
/* The run's survivors fastest first (the STORE_SURVIVORS_BY_LATENCY
 * order) with their params parsed, kept in L: read once, then only those
 * committed since merged in (ids grow and committed rows never change),
 * so a proposal does not read and parse them all again. *out is borrowed
 * until the next call. 0 or -1 (err). */
int loop_survivors(Loop *L, const LoopSurvivors **out, EvoErr *err);
void loop_survivors_free(Loop *L);
/* Generations since the population's best was found (steady mode: its
 * commits since then, in generations of L->cfg->children). */
int loop_stagnation(Loop *L, int64_t gen, const CandidateRecord *pop, int npop);
/* The structural knobs: the movable params with the fewest values (a task
 * names none, so they are found generically: on/off switches such as
 * WGMMA or CLUSTER). Fills knobs[] (room for np) and returns how many. */
int loop_niche_knobs(const Task *t, int *knobs);
/* The params of recs[0..n), parsed once: n x L->np values, and (*ok)[j]
 * = 1 where recs[j]'s parsed (the caller frees both). */
int64_t *loop_parse_all(Loop *L, const CandidateRecord *recs, int n, char **ok);

#endif

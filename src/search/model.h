/*
 * model: the model strategy's proposals, ranked by the surrogate.
 */
#ifndef EVO_SEARCH_MODEL_H
#define EVO_SEARCH_MODEL_H

#include "search/loop.h"

/* The model strategy's proposals (same contract as loop_propose, with
 * kids[0..nprior) already proposed): many candidate moves ranked by the
 * surrogate fitted on the run so far. */
int loop_model_propose(Loop *L, int64_t gen, CandidateRecord *pop, int npop, Child *kids, int nprior, int want,
                       int *done, int *exhausted, EvoErr *err);

#endif

/*
 * stages: a generation-synchronous batch through stage A and stage B,
 * and the speculation on the next generation.
 */
#ifndef EVO_SEARCH_STAGES_H
#define EVO_SEARCH_STAGES_H

#include "search/loop.h"

/* Evaluate and commit each child of kids[0..n) not marked done (done may
 * be NULL), linking it to req_ids[i] when given; ahead: speculate on the
 * next generation during stage B. 0 (also when stopped early) or -1. */
int loop_decide_all(Loop *L, Child *kids, const int *done, int n, GenerationRecord *g, int64_t *req_ids,
                    int ahead, EvoErr *err);
/* Drop the speculative children, waiting for their compilations. */
void loop_spec_free(Loop *L);
/* Take over into kids[0..n) (not marked done) each speculative child that
 * is the same proposal (params, operator, parents) and was judged ahead
 * through stage A: kids[i] becomes it and pre[i] is set to 1 (2 when it
 * goes on to stage B); the other pre[i] are left as they are (the caller
 * zeroes them). Then drops the rest (loop_spec_free). Returns how many. */
int loop_spec_adopt(Loop *L, Child *kids, const int *done, int n, int *pre);

#endif

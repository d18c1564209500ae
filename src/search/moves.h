/*
 * moves: one proposal of a slot, from the operators of ops.h up to a
 * scan of the space, and the checks that make it a child of the batch.
 */
#ifndef EVO_SEARCH_MOVES_H
#define EVO_SEARCH_MOVES_H

#include "search/loop.h"

/* The attempts of a slot widen its move (moves.c); after MAX_ATTEMPTS a
 * scan of the space from a random point finds an unevaluated valid
 * configuration if one is left (loop_fill_unseen). */
#define MAX_ATTEMPTS    96

/* Start enumerating the task's valid configurations (and their index) on
 * a thread of its own, so that the first random immigrant finds them
 * ready instead of waiting seconds for them (the attention task: about 2
 * s, while the baseline is judged). Best effort: without a thread they
 * are enumerated when first needed, as before. Same result either way. */
void loop_space_ahead(Loop *L);
/* Wait for the enumeration started by loop_space_ahead, if any, and drop
 * it unused (a run that ends before its first immigrant). */
void loop_space_cancel(Loop *L);

/* What the moves of one generation work from. */
typedef struct LoopMoves {
    const CandidateRecord *pop;
    int                    npop;
    int                    strength;    /* params a mutation moves (adaptive: grows with stagnation) */
    int                    stagnation;  /* loop_stagnation() */
    int                    immigrant;   /* this slot takes a random valid immigrant */
    int                    uniform;     /* this slot's parent is drawn uniformly, not by tournament */
    int64_t               *p1, *p2;     /* scratch: the parents' values */
} LoopMoves;
void loop_moves_init(Loop *L, int64_t gen, const CandidateRecord *pop, int npop, LoopMoves *mv);
void loop_moves_free(LoopMoves *mv);
/* One proposal into c (vals, op, parents) for attempt `attempt` of a slot:
 * the later the attempt, the wider the move. *kparent: the index in
 * mv->pop of the primary parent, or -1 (random: the baseline's kernel).
 * 0, 1 (the operator could not move: try again) or -1 (err). */
int loop_propose_one(Loop *L, int64_t gen, Rng *rng, const LoopMoves *mv, int attempt, Child *c, int *kparent,
                     EvoErr *err);
/* Give c its kernel and key and check it: 1 when valid, new to the run
 * (or committed in generation gen: *state 1) and not in kids[0..n); 0 when
 * not; -1 on an error. */
int loop_place(Loop *L, int64_t gen, Child *kids, int n, Child *c, const CandidateRecord *kparent, int *state,
               EvoErr *err);
/* An unevaluated valid configuration found by a scan of the space from a
 * random point (op random, parent the baseline): 1, 0 when the valid space
 * is exhausted, 2 when a huge space showed none in the part scanned, -1. */
int loop_fill_unseen(Loop *L, int64_t gen, Rng *rng, Child *kids, int n, Child *c, int *state, EvoErr *err);
/* 0 new, 1 committed in generation gen (resume, synchronous mode only), 2
 * in an earlier one (steady mode: in any); -1. */
int loop_key_state(Loop *L, const char *key, int64_t gen, EvoErr *err);
/* 1 when key is the params key of one of kids[0..n). */
int loop_in_batch(Child *kids, int n, const char *key);
/* Is vals valid for the task on this device? 1 yes, 0 no, -1 error. Once
 * a run has checked many configurations, the valid ones are enumerated
 * and a check is a lookup (the same answer, without evaluating every
 * constraint); why (a reason for a refusal) always evaluates them. */
int loop_valid_config(Loop *L, const int64_t *vals, char **why, EvoErr *err);
/* Advance the exhaustive cursor to the next valid configuration. Returns 1
 * with vals filled, 0 when the space is exhausted. */
int loop_exhaustive_next(Loop *L, int64_t *vals, EvoErr *err);
/* A move of one parent that the constraints refuse: one more param
 * follows it, else two or three. 1 repaired, 0 none, -1 on an error. */
int loop_repair(Loop *L, Rng *rng, const int64_t *parent, int64_t *vals, EvoErr *err);

#endif

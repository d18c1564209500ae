/*
 * judge: one child of a run through stage A (the gate on the benchmark
 * shape, the A/B against its parent), stage B (the gate on every other
 * shape) and its commit, and the parents kept prepared (compiled, loaded)
 * for its A/B.
 */
#ifndef EVO_SEARCH_JUDGE_H
#define EVO_SEARCH_JUDGE_H

#include "search/loop.h"

void loop_child_init(Loop *L, Child *c);
void loop_child_free(Loop *L, Child *c);
/* Rebuild a Child from a committed candidate (a parent), its
 * benchmark-shape unit queued for compilation. 0 or -1 (err). */
int loop_child_from_record(Loop *L, const CandidateRecord *r, Child *c, EvoErr *err);
/* The prepared Child that candidate parent_id is, as the A/B reference of
 * a child: NULL for no parent (0), the baseline itself, or a candidate of
 * the parent cache (prepared into it on a miss) with one more reference;
 * give it back with loop_parent_put. 0 or -1 (err). Loop thread only. */
int loop_parent_get(Loop *L, int64_t parent_id, Child **parent, EvoErr *err);
void loop_parent_put(Loop *L, Child *parent);
/* c was just committed as a survivor: the cache takes it over (its
 * compiled units stay loaded for its children's A/Bs) and *c is zeroed;
 * nothing happens when it is there already or was never prepared. */
void loop_parent_offer(Loop *L, Child *c);
void loop_parents_free(Loop *L);
/* Does the child go through the full gate whatever its A/B says? The
 * baseline, generation 0 and the children of the random and exhaustive
 * strategies (ground truth for comparing strategies) do; the random
 * immigrants of the other strategies do not (reverted, they are decided
 * at stage A like any child: never a parent, never a survivor). */
int loop_needs_full_gate(const Loop *L, const Child *c);
/* Stage A of a submitted child on slot c->gpu: the gate on the benchmark
 * shape, then the A/B against its parent. Sets *next = 1 when the child
 * goes on to stage B (its other units are then queued first), 0 when it
 * is decided (failed, or reverted and not needing the full gate). Returns
 * 0, EVAL_RETRY (its slot was lost: judge it again elsewhere) or -1. Runs
 * on a GPU thread: it touches nothing of the loop but the child. */
int loop_stage_a(Loop *L, Child *c, Child *parent, int *next, EvoErr *err);
/* Stage B of a child that passed stage A, on slot c->gpu: the gate on
 * every other shape, and the timing of a child with no parent. Sets its
 * decision. Returns 0, EVAL_RETRY (the child is as it was) or -1. Runs on
 * a GPU thread. */
int loop_stage_b(Loop *L, Child *c, EvoErr *err);
/* Decide and commit a child whose stages are over, counted in g, and link
 * it to its LLM request req_id (0: none). Loop thread only. 0 or -1. */
int loop_commit(Loop *L, Child *c, int64_t req_id, GenerationRecord *g, EvoErr *err);

#endif

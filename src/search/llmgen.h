/*
 * llmgen: the LLM's children of a generation or wave.
 */
#ifndef EVO_SEARCH_LLMGEN_H
#define EVO_SEARCH_LLMGEN_H

#include "llm/llmop.h"
#include "search/loop.h"

/* LLM slots of generation gen, or -1. */
int loop_llm_slots(Loop *L, int64_t gen, int npop, EvoErr *err);
/* Queue the generation's LLM requests. 0 or -1. */
int loop_llm_submit_generation(Loop *L, int64_t gen, CandidateRecord *pop, int npop, int slots, EvoErr *err);
/* Wait for the generation's answers and evaluate their children. 0 or -1. */
int loop_llm_collect_generation(Loop *L, int64_t gen, GenerationRecord *g, EvoErr *err);
/* Record answers ans[0..n) in llm_requests and turn the usable ones into
 * children (the LLM's kernel rendered with its parent's params) in
 * kids[], with their requests' ids in req_ids[] (room for n each); frees
 * the answers' results. Returns how many children, or -1. */
int loop_llm_children(Loop *L, int64_t gen, LlmOpAnswer *ans, int n, Child *kids, int64_t *req_ids, EvoErr *err);

#endif

/*
 * space_index: lookups over an enumerated space of valid configurations
 * (task_space.h), for the proposals' hot paths: is this configuration
 * valid (a hash set instead of evaluating every constraint), each
 * configuration's values as indices into its params' value lists, and for
 * each (param, value) the configurations that hold it, in space order.
 * Built once a run; answers exactly what task_check() and a scan of the
 * space would.
 */
#ifndef EVO_TASK_SPACE_INDEX_H
#define EVO_TASK_SPACE_INDEX_H

#include <stddef.h>
#include <stdint.h>

#include "task/task.h"
#include "task/task_space.h"

typedef struct SpaceIndex SpaceIndex;

/* Index space s (borrowed: it must outlive the index) of task t. Returns
 * 0, or -1 with err when a configuration holds a value that is not one of
 * its param's (s is not t's space). */
int space_index_build(SpaceIndex **out, const Task *t, const TaskSpace *s, EvoErr *err);
void space_index_free(SpaceIndex **x);

/* The index in the space of the configuration equal to vals (nparams
 * values), or -1 when it is not there: not valid. O(1) expected. */
int64_t space_index_find(const SpaceIndex *x, const int64_t *vals);

/* Configuration k's values as indices into each param's value list. */
const uint16_t *space_index_vidx(const SpaceIndex *x, size_t k);

/* The configurations (indices into the space, ascending) whose param
 * `param` holds its value number vidx; *n how many. */
const uint32_t *space_index_bucket(const SpaceIndex *x, int param, int vidx, size_t *n);

#endif

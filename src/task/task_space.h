/*
 * task_space: every valid configuration of a task, found exactly by a
 * depth-first search over the params instead of drawing the raw space at
 * random. A constraint is tested as soon as every param it reads (through
 * the derived values too) is assigned, or earlier when the params assigned
 * already make it false, and a branch is cut at the first constraint that
 * fails on any shape, so the search visits few nodes even where the valid
 * configurations are a tiny fraction of the raw space (the attention task
 * on sm_90: 116,976 of 5.2e11, 1.2 million nodes). "Valid" means what
 * task_check() says: every constraint true on every shape, with the same
 * device facts. A node budget bounds the work; past it the caller falls
 * back to sampling.
 */
#ifndef EVO_TASK_SPACE_H
#define EVO_TASK_SPACE_H

#include <stddef.h>
#include <stdint.h>

#include "device.h"
#include "task/task.h"
#include "util.h"

/* The default node budget: a few seconds of search at most (the attention
 * task takes 1.2 million nodes, about 1.5 s on one core). */
#define TASK_SPACE_MAX_NODES 4000000u
/* The most configurations kept (a space that holds more is better
 * sampled at random): 8 bytes a param each, 224 MB for 28 params. */
#define TASK_SPACE_MAX_CONFIGS 1000000u

/* task_space_enumerate's result when the budget runs out. */
enum { TASK_SPACE_TOO_LARGE = 1 };

typedef struct TaskSpace {
    int64_t *vals;      /* count configurations back to back, nparams values each (task.h) */
    size_t   count;     /* the number of valid configurations */
    int      nparams;
    uint64_t nodes;     /* search nodes visited (one per param value tried), also when too large */
} TaskSpace;

/* Enumerate every configuration that task_check(t, vals, dev) accepts into
 * *out (zeroed first; release with task_space_free), in a fixed order: the
 * same spec, dims and device give the same list. max_nodes bounds the
 * search (0: TASK_SPACE_MAX_NODES; a node is one value tried for one
 * param). Returns 0; TASK_SPACE_TOO_LARGE when the search needs more
 * nodes or the space holds more than TASK_SPACE_MAX_CONFIGS (out->vals
 * NULL, count 0, nodes set); -1 with err when an expression fails to
 * evaluate on a branch the search reaches (task_check's -1: division by
 * zero, overflow), out empty. */
int task_space_enumerate(const Task *t, const DeviceInfo *dev, uint64_t max_nodes, TaskSpace *out, EvoErr *err);

/* task_space_enumerate, ended early when *stop (read every 1024 nodes, by
 * another thread's atomic store) becomes nonzero: then it returns
 * TASK_SPACE_TOO_LARGE with out empty, as when the budget runs out. stop
 * NULL: task_space_enumerate. */
int task_space_enumerate_stop(const Task *t, const DeviceInfo *dev, uint64_t max_nodes, const int *stop,
                              TaskSpace *out, EvoErr *err);

/* Release s's configurations and zero it; safe on a zeroed TaskSpace. */
void task_space_free(TaskSpace *s);

/* Configuration i (i < s->count): s->nparams values owned by s. */
const int64_t *task_space_config(const TaskSpace *s, size_t i);

/* The index of the configuration equal to vals, or -1 when it is not in
 * the space (not valid). Linear in the count. */
int64_t task_space_find(const TaskSpace *s, const int64_t *vals);

/* Draw up to n distinct configurations uniformly at random from s,
 * leaving out skip (may be NULL, or a configuration not in s): their
 * indices go to idx (room for n). Deterministic for a given rng state.
 * Returns how many were drawn: n, or all the others when fewer exist. */
size_t task_space_sample(const TaskSpace *s, Rng *rng, const int64_t *skip, size_t n, size_t *idx);

#endif

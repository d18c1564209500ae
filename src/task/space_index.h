/*
 * space_index: lookups over an enumerated space of valid configurations
 * (task_space.h), for the proposals' hot paths: is this configuration
 * valid (a hash set instead of evaluating every constraint), each
 * configuration's values as indices into its params' value lists, for
 * each (param, value) the configurations that hold it, in space order, and
 * how far a configuration is from a given one (space_index_near).
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

/* Index space s (borrowed: it must outlive the index) of task t. flags:
 * 0, or SPACE_INDEX_UNPACKED (space_index_near compares value indices one
 * param at a time, as it does where they do not pack: for tests). Returns
 * 0, or -1 with err when a configuration holds a value that is not one of
 * its param's (s is not t's space). */
#define SPACE_INDEX_UNPACKED 1
int space_index_build(SpaceIndex **out, const Task *t, const TaskSpace *s, int flags, EvoErr *err);
void space_index_free(SpaceIndex **x);

/* The index in the space of the configuration equal to vals (nparams
 * values), or -1 when it is not there: not valid. O(1) expected. */
int64_t space_index_find(const SpaceIndex *x, const int64_t *vals);

/* Configuration k's values as indices into each param's value list. */
const uint16_t *space_index_vidx(const SpaceIndex *x, size_t k);

/* The configurations (indices into the space, ascending) whose param
 * `param` holds its value number vidx; *n how many. */
const uint32_t *space_index_bucket(const SpaceIndex *x, int param, int vidx, size_t *n);

/* A configuration to measure distances from (space_index_near_init):
 * its value indices packed as the index packs every configuration's. */
#define SPACE_NEAR_WORDS 4
typedef struct SpaceNear {
    uint64_t v[SPACE_NEAR_WORDS];      /* the packed value indices */
    uint64_t fixed[SPACE_NEAR_WORDS];  /* the value bits of the fixed params */
    uint64_t free[SPACE_NEAR_WORDS];   /* the guard bits of the other params */
    int      extra;   /* other params whose value is none of theirs: always a difference */
    int      none;    /* a fixed param's value is none of its: nothing is near */
    const int *at;    /* borrowed (the unpacked path) */
    const unsigned char *fix;
} SpaceNear;

/* Prepare q for distances from the configuration whose value indices are
 * at[] (nparams; -1 where the value is none of its param's) with the
 * params where fix[i] != 0 held fixed. at and fix are borrowed until the
 * last space_index_near() with q. */
void space_index_near_init(const SpaceIndex *x, const int *at, const unsigned char *fix, SpaceNear *q);

/* How many of the params that q leaves free configuration k holds at
 * another value than q's, when every fixed param holds q's value and that
 * number is at most maxd; -1 otherwise. The same answer as comparing
 * space_index_vidx(x, k) with at[] param by param, in a few word
 * operations a configuration where the value indices pack into 256 bits. */
int space_index_near(const SpaceIndex *x, const SpaceNear *q, size_t k, int maxd);

#endif

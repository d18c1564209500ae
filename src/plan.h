/*
 * plan: a fully resolved evaluation plan. The task module turns a task
 * spec, a parameter assignment, a shape and the device facts into a Plan:
 * every expression is evaluated, so a Plan holds only concrete numbers and
 * names. The worker consumes Plans (serialized over its pipe) and never
 * sees an expression. One Plan is one shape of one candidate, with the
 * reference's launches beside the candidate's.
 */
#ifndef EVO_PLAN_H
#define EVO_PLAN_H

#include <stdint.h>

typedef enum DType { DT_F16 = 0, DT_BF16, DT_F32, DT_I32 } DType;
typedef enum BufRole { ROLE_INPUT = 0, ROLE_OUTPUT, ROLE_SCRATCH } BufRole;
typedef enum InitKind { INIT_NORMAL = 0, INIT_UNIFORM, INIT_ZERO, INIT_CONST } InitKind;
typedef enum ArgKind { ARG_BUFFER = 0, ARG_I32, ARG_I64, ARG_F32, ARG_F64 } ArgKind;

typedef struct PlanBuffer {
    char     *name;
    DType     dtype;
    uint64_t  count;      /* elements */
    BufRole   role;
    InitKind  init;       /* inputs only; outputs get the NaN sentinel, scratch zero */
    double    a, b;       /* normal: mean, stddev; uniform: low, high; const: value */
    uint64_t  seed_salt;  /* mixed with the evaluation seed: distinct per buffer */
    double    atol, rtol; /* outputs: tolerance */
    int       for_ref;    /* 1 when the reference launches use it */
    int       for_cand;   /* 1 when the candidate launches use it */
} PlanBuffer;

typedef struct PlanArg {
    ArgKind kind;
    int     buffer;       /* ARG_BUFFER: index into Plan.buffers */
    int64_t i;            /* ARG_I32, ARG_I64 */
    double  f;            /* ARG_F32, ARG_F64 */
} PlanArg;

typedef struct PlanLaunch {
    char     *entry;      /* extern "C" __global__ name */
    unsigned  grid[3];
    unsigned  block[3];
    unsigned  smem;       /* dynamic shared memory, bytes */
    PlanArg  *args;
    int       nargs;
} PlanLaunch;

typedef struct Plan {
    char       *shape_label; /* e.g. "B=4 H=8 S=512 D=64 causal=0" */
    int         is_bench;    /* 1 for the benchmark shape */
    PlanBuffer *buffers;
    int         nbuffers;
    PlanLaunch *launches;    /* the candidate's launch plan, in order */
    int         nlaunches;
    PlanLaunch *ref_launches;/* the reference's launch plan */
    int         nref_launches;
    double      flops;       /* per run of the whole launch plan */
    double      bytes;
    int         min_ctas;    /* gate: fewer CTAs in the largest launch fails (0: off) */
} Plan;

/* Release everything a Plan owns (not the struct itself); safe on a zeroed
 * Plan. Implemented in plan.c. */
void plan_free(Plan *p);

/* Bytes per element of a dtype; the dtype's name ("f16", ...) and the
 * reverse lookup (-1 when unknown). */
int         dtype_size(DType t);
const char *dtype_name(DType t);
int         dtype_parse(const char *s);

#endif

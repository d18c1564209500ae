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
typedef enum ArgKind { ARG_BUFFER = 0, ARG_I32, ARG_I64, ARG_F32, ARG_F64, ARG_TMAP } ArgKind;

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

#define TMAP_MAX_RANK 5

/* ARG_TMAP: a CUDA tensor map (CUtensorMap, 128 bytes) over a buffer,
 * built by the worker with cuTensorMapEncodeTiled and passed by value
 * (the kernel takes it as `const __grid_constant__`). Dimensions are
 * innermost first, as the driver wants them. */
typedef struct PlanTmap {
    int      rank;                         /* 1..5 */
    uint64_t dims[TMAP_MAX_RANK];          /* elements */
    uint64_t strides[TMAP_MAX_RANK - 1];   /* bytes, of dims 1..rank-1 */
    uint32_t box[TMAP_MAX_RANK];           /* elements per copy */
    uint32_t elem_strides[TMAP_MAX_RANK];  /* 1 = every element */
    int      swizzle;                      /* 0 none, 1 32B, 2 64B, 3 128B */
    int      l2_promotion;                 /* 0 none, 1 64B, 2 128B, 3 256B */
    int      oob_nan;                      /* out-of-bounds fill: 0 zero, 1 NaN */
} PlanTmap;

typedef struct PlanArg {
    ArgKind  kind;
    int      buffer;      /* ARG_BUFFER, ARG_TMAP: index into Plan.buffers */
    int64_t  i;           /* ARG_I32, ARG_I64 */
    double   f;           /* ARG_F32, ARG_F64 */
    PlanTmap tmap;        /* ARG_TMAP */
} PlanArg;

/* The names of PlanTmap's enumerations as task specs write them
 * ("none", "32B", ...), and the reverse lookups (-1 when unknown). */
extern const char *const tmap_swizzle_names[];     /* 4 entries + NULL */
extern const char *const tmap_l2_names[];          /* 4 entries + NULL */
int tmap_name_index(const char *const *names, const char *s);

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

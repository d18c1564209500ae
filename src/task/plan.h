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
typedef enum InitKind { INIT_NORMAL = 0, INIT_UNIFORM, INIT_ZERO, INIT_CONST, INIT_OUTLIER } InitKind;
typedef enum RowScale { ROWS_NONE = 0, ROWS_LOGNORMAL, ROWS_UNIFORM } RowScale;
typedef enum ArgKind { ARG_BUFFER = 0, ARG_I32, ARG_I64, ARG_F32, ARG_F64, ARG_TMAP } ArgKind;

/* How an input is generated (the generator is gate_gen_value, gpu/gen.h):
 * element i is the distribution's value for counter i, times, with a row
 * scale, the factor of its row i / row_len (one factor per row, drawn from
 * the row distribution on a stream of its own). */
typedef struct InitSpec {
    InitKind kind;
    double   a, b;        /* normal, outlier: mean, stddev; uniform: low, high; const: value */
    double   p, c;        /* outlier: probability of the rare component, its stddev (added to the normal) */
    RowScale rows;        /* per-row factor: none, lognormal, uniform */
    double   ra, rb;      /* lognormal: mean and stddev of the log; uniform: low, high */
    uint64_t row_len;     /* elements per row (rows != ROWS_NONE), >= 1 */
} InitSpec;

typedef struct PlanBuffer {
    char     *name;
    DType     dtype;
    uint64_t  count;      /* elements */
    BufRole   role;
    InitSpec  init;       /* inputs only (the spec's "init"); outputs get the NaN sentinel, scratch zero */
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

/* An input profile: a named set of generators for the inputs. The gate
 * runs every profile (every seed); timing and the A/B use the timing
 * profiles. */
#define PLAN_MAX_PROFILES 8
typedef struct PlanProfile {
    char     *name;
    int       timing;     /* 1: timed and compared */
    InitSpec *init;       /* [Plan.nbuffers]: each buffer's generator under this profile */
} PlanProfile;

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
    PlanProfile *profiles;   /* task_resolve fills at least one; 0 (a plan made by hand): one
                                implicit profile "default", timing, of the buffers' own init */
    int         nprofiles;
} Plan;

/* The plan's profiles, at least 1 (see Plan.profiles); the name, the
 * timing flag and buffer b's generator of profile k (0 <= k <
 * plan_nprofiles). */
int             plan_nprofiles(const Plan *p);
const char     *plan_profile_name(const Plan *p, int k);
int             plan_profile_timing(const Plan *p, int k);
const InitSpec *plan_init(const Plan *p, int k, int b);
/* A bit per timing profile (bit k: profile k). */
unsigned        plan_timing_mask(const Plan *p);

/* The names of InitKind and RowScale as task specs write them, in enum
 * order, NULL-terminated. */
extern const char *const init_kind_names[];
extern const char *const row_scale_names[];

/* Release everything a Plan owns (not the struct itself); safe on a zeroed
 * Plan. Implemented in plan.c. */
void plan_free(Plan *p);

/* Bytes per element of a dtype; the dtype's name ("f16", ...) and the
 * reverse lookup (-1 when unknown). */
int         dtype_size(DType t);
const char *dtype_name(DType t);
int         dtype_parse(const char *s);

#endif

/*
 * proto: message framing over pipes and JSON forms of Plan and DeviceInfo.
 * See proto.h.
 */
#include "gpu/proto.h"

#include <errno.h>
#include <stddef.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "compile/spawn.h"

/* ---- framing ---------------------------------------------------------- */

typedef struct Header {
    uint32_t magic, type, json_len, bin_len;
} Header;

static int write_all(int fd, const void *buf, size_t n, EvoErr *err)
{
    return spawn_write_all(fd, buf, n) ? err_set(err, "write(worker pipe): %s", strerror(errno)) : 0;
}

int proto_write(int fd, int type, const json_t *json, const void *bin, size_t bin_len, EvoErr *err)
{
    char *text = json ? json_dumps(json, JSON_COMPACT) : NULL;
    const char *t = text ? text : "{}";
    Header h;
    sigset_t block, old, pending;
    int rc = -1, was_pending = 0;

    h.magic = PROTO_MAGIC;
    h.type = (uint32_t)type;
    h.json_len = (uint32_t)strlen(t);
    h.bin_len = (uint32_t)bin_len;
    if (strlen(t) > PROTO_MAX_JSON || bin_len > PROTO_MAX_BIN) {
        err_set(err, "proto_write(%s): message too large (json %zu, binary %zu bytes)", proto_type_name(type),
                strlen(t), bin_len);
        goto fail_nomask;
    }
    /* Block SIGPIPE for this thread so a dead reader gives EPIPE. */
    sigemptyset(&block);
    sigaddset(&block, SIGPIPE);
    sigpending(&pending);
    was_pending = sigismember(&pending, SIGPIPE);
    pthread_sigmask(SIG_BLOCK, &block, &old);
    if (write_all(fd, &h, sizeof(h), err) != 0 || write_all(fd, t, h.json_len, err) != 0 ||
        (bin_len && write_all(fd, bin, bin_len, err) != 0))
        goto fail;
    rc = 0;
fail:
    if (rc != 0 && !was_pending) {
        /* discard the SIGPIPE our failed write raised */
        struct timespec zero = {0, 0};
        while (sigtimedwait(&block, NULL, &zero) < 0 && errno == EINTR) {
        }
    }
    pthread_sigmask(SIG_SETMASK, &old, NULL);
fail_nomask:
    free(text);
    return rc;
}

/* Read exactly n bytes before the deadline (ms on time_now_ms's clock,
 * < 0: none). Returns 0, PROTO_EOF, PROTO_TIMEOUT or -1. */
static int read_all(int fd, void *buf, size_t n, double deadline, EvoErr *err)
{
    int rc = spawn_read_all(fd, buf, n, deadline);
    if (rc < 0)
        return err_set(err, "read(worker pipe): %s", strerror(errno));
    return rc == SPAWN_EOF ? PROTO_EOF : rc == SPAWN_TIMEOUT ? PROTO_TIMEOUT : 0;
}

int proto_read(int fd, ProtoMsg *out, int timeout_ms, EvoErr *err)
{
    Header h;
    char *text = NULL;
    double deadline = timeout_ms < 0 ? -1 : time_now_ms() + timeout_ms;
    json_error_t je;
    int rc;

    memset(out, 0, sizeof(*out));
    rc = read_all(fd, &h, sizeof(h), deadline, err);
    if (rc != 0)
        goto fail;
    if (h.magic != PROTO_MAGIC) {
        rc = err_set(err, "worker pipe: bad magic 0x%08x (expected 0x%08x)", h.magic, PROTO_MAGIC);
        goto fail;
    }
    if (h.json_len > PROTO_MAX_JSON || h.bin_len > PROTO_MAX_BIN) {
        rc = err_set(err, "worker pipe: oversized message (json %u, binary %u bytes)", h.json_len, h.bin_len);
        goto fail;
    }
    text = xmalloc((size_t)h.json_len + 1);
    rc = read_all(fd, text, h.json_len, deadline, err);
    if (rc != 0)
        goto fail;
    text[h.json_len] = 0;
    if (h.bin_len) {
        out->bin = xmalloc(h.bin_len);
        out->bin_len = h.bin_len;
        rc = read_all(fd, out->bin, h.bin_len, deadline, err);
        if (rc != 0)
            goto fail;
    }
    out->json = json_loadb(text, h.json_len, 0, &je);
    if (!out->json || !json_is_object(out->json)) {
        rc = err_set(err, "worker pipe: %s message: invalid JSON: %s", proto_type_name((int)h.type),
                     out->json ? "not an object" : je.text);
        goto fail;
    }
    out->type = (int)h.type;
    free(text);
    return 0;
fail:
    free(text);
    proto_msg_free(out);
    return rc;
}

void proto_msg_free(ProtoMsg *m)
{
    if (!m)
        return;
    if (m->json)
        json_decref(m->json);
    free(m->bin);
    memset(m, 0, sizeof(*m));
}

const char *proto_type_name(int type)
{
    static const char *const names[] = {"?",    "hello",   "load",    "gate",  "time",
                                        "compare", "metrics", "unload", "quit"};
    if (type == PROTO_REPLY)
        return "reply";
    if (type > 0 && type < (int)EVO_ARRAY_LEN(names))
        return names[type];
    return "?";
}

/* ---- Plan ------------------------------------------------------------- */

/* Every key of a plan is written, and required on reading: both ends are
 * the same binary. */
#define PF(T, key_, m, ty) {.key = key_, .type = ty, .off = offsetof(T, m), .req = 1}
#define PF_ARR(T, key_, m, ty, n)                                                                                \
    {.key = key_, .type = F_ARR, .off = offsetof(T, m), .req = 1, .elem = ty, .size = sizeof(((T *)0)->m[0]), \
     .count = n, .max = FLD_MEMBER_LEN(T, m)}
#define PF_TAB(T, key_, m, cnt, tab)                                                                             \
    {.key = key_, .type = F_ARR, .off = offsetof(T, m), .req = 1, .elem = F_OBJ, .dyn = 1,                    \
     .size = sizeof(((T *)0)->m[0]), .count = offsetof(T, cnt), .sub = tab, .nsub = NFIELDS(tab)}

static const Field init_fields[] = {
    PF(InitSpec, "k", kind, F_I32), PF(InitSpec, "a", a, F_REAL),   PF(InitSpec, "b", b, F_REAL),
    PF(InitSpec, "p", p, F_REAL),   PF(InitSpec, "c", c, F_REAL),   PF(InitSpec, "rows", rows, F_I32),
    PF(InitSpec, "ra", ra, F_REAL), PF(InitSpec, "rb", rb, F_REAL), PF(InitSpec, "rl", row_len, F_U64),
};

static const Field buffer_fields[] = {
    PF(PlanBuffer, "name", name, F_TEXT),
    PF(PlanBuffer, "dtype", dtype, F_I32),
    PF(PlanBuffer, "count", count, F_U64),
    PF(PlanBuffer, "role", role, F_I32),
    {.key = "init", .type = F_OBJ, .off = offsetof(PlanBuffer, init), .req = 1, .sub = init_fields,
     .nsub = NFIELDS(init_fields)},
    PF(PlanBuffer, "salt", seed_salt, F_U64),
    PF(PlanBuffer, "atol", atol, F_REAL),
    PF(PlanBuffer, "rtol", rtol, F_REAL),
    PF(PlanBuffer, "for_ref", for_ref, F_BOOL),
    PF(PlanBuffer, "for_cand", for_cand, F_BOOL),
};

/* A tensor map's strides: rank - 1 of them (the hooks get the whole map). */
static json_t *strides_put(const void *at)
{
    const PlanTmap *t = at;
    json_t *a = json_array();
    for (int d = 0; d + 1 < t->rank; d++)
        json_array_append_new(a, json_integer((json_int_t)t->strides[d]));
    return a;
}

static int strides_read(const json_t *v, void *at, EvoErr *err)
{
    PlanTmap *t = at;
    if (!json_is_array(v) || t->rank < 1 || json_array_size(v) != (size_t)t->rank - 1)
        return err_set(err, ": an array of rank - 1 (%d) integers expected", t->rank - 1);
    for (int d = 0; d + 1 < t->rank; d++) {
        if (!json_is_integer(json_array_get(v, (size_t)d)))
            return err_set(err, "[%d]: an integer expected", d);
        t->strides[d] = (uint64_t)json_integer_value(json_array_get(v, (size_t)d));
    }
    return 0;
}

/* The arrays of a tensor map hold rank elements (rank comes first). */
#define TMAP_ARR(key_, m, ty) \
    {.key = key_, .type = F_ARR, .off = offsetof(PlanTmap, m), .req = 1, .elem = ty, \
     .size = sizeof(((PlanTmap *)0)->m[0]), .count = offsetof(PlanTmap, rank), .match = 1, .max = TMAP_MAX_RANK}
static const Field tmap_fields[] = {
    PF(PlanTmap, "rank", rank, F_I32),
    TMAP_ARR("dims", dims, F_U64),
    {.key = "strides", .type = F_CUSTOM, .off = 0, .req = 1, .put = strides_put, .read = strides_read},
    TMAP_ARR("box", box, F_U32),
    TMAP_ARR("es", elem_strides, F_U32),
    PF(PlanTmap, "swizzle", swizzle, F_I32),
    PF(PlanTmap, "l2", l2_promotion, F_I32),
    PF(PlanTmap, "oob_nan", oob_nan, F_I32),
};

/* An argument writes the member of its kind: b (and t), i or f. */
static int arg_has_buffer(const void *r)
{
    return ((const PlanArg *)r)->kind == ARG_BUFFER || ((const PlanArg *)r)->kind == ARG_TMAP;
}
static int arg_is_tmap(const void *r) { return ((const PlanArg *)r)->kind == ARG_TMAP; }
static int arg_is_int(const void *r) { return ((const PlanArg *)r)->kind == ARG_I32 || ((const PlanArg *)r)->kind == ARG_I64; }
static int arg_is_real(const void *r) { return ((const PlanArg *)r)->kind == ARG_F32 || ((const PlanArg *)r)->kind == ARG_F64; }

static const Field arg_fields[] = {
    PF(PlanArg, "k", kind, F_I32),
    {.key = "b", .type = F_I32, .off = offsetof(PlanArg, buffer), .when = arg_has_buffer},
    {.key = "t", .type = F_OBJ, .off = offsetof(PlanArg, tmap), .when = arg_is_tmap, .sub = tmap_fields,
     .nsub = NFIELDS(tmap_fields)},
    {.key = "i", .type = F_I64, .off = offsetof(PlanArg, i), .when = arg_is_int},
    {.key = "f", .type = F_REAL, .off = offsetof(PlanArg, f), .when = arg_is_real},
};

static const Field launch_fields[] = {
    PF(PlanLaunch, "entry", entry, F_TEXT),
    PF_ARR(PlanLaunch, "grid", grid, F_U32, FLD_FIXED),
    PF_ARR(PlanLaunch, "block", block, F_U32, FLD_FIXED),
    PF(PlanLaunch, "smem", smem, F_U32),
    PF_TAB(PlanLaunch, "args", args, nargs, arg_fields),
};

/* A profile on the wire: its generators carry their count, which must be
 * the plan's number of buffers. */
typedef struct WireProfile {
    char     *name;
    int       timing;
    InitSpec *init;
    int       ninit;
} WireProfile;

static const Field profile_fields[] = {
    PF(WireProfile, "name", name, F_TEXT),
    PF(WireProfile, "timing", timing, F_BOOL),
    PF_TAB(WireProfile, "init", init, ninit, init_fields),
};

static json_t *profiles_put(const void *at)
{
    const Plan *p = at;
    json_t *a = json_array();
    for (int k = 0; k < p->nprofiles; k++) {
        const PlanProfile *pp = &p->profiles[k];
        WireProfile w = {pp->name, pp->timing, pp->init, p->nbuffers};
        json_array_append_new(a, fld_to_json(profile_fields, NFIELDS(profile_fields), &w));
    }
    return a;
}

static int profiles_read(const json_t *v, void *at, EvoErr *err)
{
    Plan *p = at;
    if (!json_is_array(v) || json_array_size(v) > PLAN_MAX_PROFILES)
        return err_set(err, ": an array of at most %d profiles expected", PLAN_MAX_PROFILES);
    p->profiles = xcalloc(json_array_size(v) + 1, sizeof(*p->profiles));
    for (size_t k = 0; k < json_array_size(v); k++) {
        WireProfile w = {0};
        EvoErr why = {{0}};
        int rc = fld_from_json(profile_fields, NFIELDS(profile_fields), json_array_get(v, k), &w, &why);
        p->profiles[p->nprofiles++] = (PlanProfile){w.name, w.timing, w.init};
        if (rc)
            return err_set(err, "[%zu]%s%s", k, why.msg[0] == ':' ? "" : ".", why.msg);
        if (w.ninit != p->nbuffers)
            return err_set(err, "[%zu].init: %d elements, one per buffer (%d) expected", k, w.ninit, p->nbuffers);
    }
    return 0;
}

static const Field plan_fields[] = {
    PF(Plan, "shape", shape_label, F_TEXT),
    PF(Plan, "is_bench", is_bench, F_BOOL),
    PF_TAB(Plan, "buffers", buffers, nbuffers, buffer_fields),
    PF_TAB(Plan, "launches", launches, nlaunches, launch_fields),
    PF_TAB(Plan, "ref_launches", ref_launches, nref_launches, launch_fields),
    PF(Plan, "flops", flops, F_REAL),
    PF(Plan, "bytes", bytes, F_REAL),
    PF(Plan, "min_ctas", min_ctas, F_I32),
    {.key = "profiles", .type = F_CUSTOM, .off = 0, .put = profiles_put, .read = profiles_read},
};

/* A generator's kind and row scale in range. */
static int init_check(const InitSpec *s, const char *path, EvoErr *err)
{
    if ((int)s->kind < INIT_NORMAL || s->kind > INIT_OUTLIER)
        return err_set(err, "%s.k: %d is not a generator", path, (int)s->kind);
    if ((int)s->rows < ROWS_NONE || s->rows > ROWS_UNIFORM)
        return err_set(err, "%s.rows: %d is not a row scale", path, (int)s->rows);
    return 0;
}

/* The arguments of launches l[n]: known kinds, buffers that exist, tensor
 * maps of rank 1..TMAP_MAX_RANK. */
static int launches_check(const PlanLaunch *l, int n, const char *what, int nbuf, EvoErr *err)
{
    for (int i = 0; i < n; i++)
        for (int a = 0; a < l[i].nargs; a++) {
            const PlanArg *pa = &l[i].args[a];
            if ((int)pa->kind < ARG_BUFFER || pa->kind > ARG_TMAP)
                return err_set(err, "%s[%d].args[%d].k: %d is not an argument kind", what, i, a, (int)pa->kind);
            if (arg_has_buffer(pa) && (pa->buffer < 0 || pa->buffer >= nbuf))
                return err_set(err, "%s[%d].args[%d].b: buffer index %d out of range", what, i, a, pa->buffer);
            if (pa->kind == ARG_TMAP && (pa->tmap.rank < 1 || pa->tmap.rank > TMAP_MAX_RANK))
                return err_set(err, "%s[%d].args[%d].t.rank: %d out of range", what, i, a, pa->tmap.rank);
        }
    return 0;
}

/* What the table cannot say: the enumerations in range, the references
 * between buffers and launches. */
static int plan_check(const Plan *p, EvoErr *err)
{
    char path[64];
    for (int i = 0; i < p->nbuffers; i++) {
        const PlanBuffer *b = &p->buffers[i];
        if ((int)b->dtype < DT_F16 || b->dtype > DT_I32)
            return err_set(err, "buffers[%d].dtype: %d is not a dtype", i, (int)b->dtype);
        if ((int)b->role < ROLE_INPUT || b->role > ROLE_SCRATCH)
            return err_set(err, "buffers[%d].role: %d is not a role", i, (int)b->role);
        snprintf(path, sizeof(path), "buffers[%d].init", i);
        if (init_check(&b->init, path, err))
            return -1;
    }
    for (int k = 0; k < p->nprofiles; k++)
        for (int i = 0; i < p->nbuffers; i++) {
            snprintf(path, sizeof(path), "profiles[%d].init[%d]", k, i);
            if (init_check(&p->profiles[k].init[i], path, err))
                return -1;
        }
    return launches_check(p->launches, p->nlaunches, "launches", p->nbuffers, err) ||
                   launches_check(p->ref_launches, p->nref_launches, "ref_launches", p->nbuffers, err)
               ? -1
               : 0;
}

json_t *proto_plan_put(const void *plan)
{
    return fld_to_json(plan_fields, NFIELDS(plan_fields), plan);
}

int proto_plan_read(const json_t *v, void *plan, EvoErr *err)
{
    EvoErr why = {{0}};
    Plan *p = plan;
    memset(p, 0, sizeof(*p));
    if (fld_from_json(plan_fields, NFIELDS(plan_fields), v, p, &why) == 0 && plan_check(p, &why) == 0)
        return 0;
    plan_free(p);
    return err_set(err, "%s%s", why.msg[0] == ':' ? "" : ".", why.msg);
}

json_t *proto_plan_to_json(const Plan *p)
{
    return proto_plan_put(p);
}

int proto_plan_from_json(const json_t *j, Plan *out, EvoErr *err)
{
    EvoErr why = {{0}};
    return proto_plan_read(j, out, &why) ? err_set(err, "plan%s", why.msg) : 0;
}

/* ---- DeviceInfo ------------------------------------------------------- */

#define DI(m, ty) FJ(DeviceInfo, m, ty)
static const Field device_fields[] = {
    {.key = "name", .type = F_CHARS, .off = offsetof(DeviceInfo, name), .size = sizeof(((DeviceInfo *)0)->name),
     .req = 1},
    FJ_CHARS(DeviceInfo, arch),
    DI(cc_major, F_I32), DI(cc_minor, F_I32), DI(sm_count, F_I32), DI(max_threads, F_I32),
    DI(max_threads_per_sm, F_I32), DI(smem_per_block, F_I32), DI(smem_per_block_optin, F_I32),
    DI(smem_per_sm, F_I32), DI(regs_per_block, F_I32), DI(regs_per_sm, F_I32), DI(max_blocks_per_sm, F_I32),
    DI(warp_size, F_I32), DI(l2_bytes, F_I64), DI(mem_bytes, F_I64), DI(clock_khz, F_I32),
    DI(mem_clock_khz, F_I32), DI(mem_bus_bits, F_I32), DI(peak_tflops_fp16, F_REAL), DI(peak_gbps, F_REAL),
    DI(driver_version, F_I32), DI(is_profile, F_I32), DI(ordinal, F_I32), DI(device_count, F_I32),
    FJ_CHARS(DeviceInfo, uuid), FJ_CHARS(DeviceInfo, pci_bus_id),
};

json_t *proto_device_to_json(const DeviceInfo *d)
{
    return fld_to_json(device_fields, NFIELDS(device_fields), d);
}

int proto_device_from_json(const json_t *j, DeviceInfo *d, EvoErr *err)
{
    memset(d, 0, sizeof(*d));
    if (fld_from_json(device_fields, NFIELDS(device_fields), j, d, err))
        return err_prefix(err, "device");
    return 0;
}

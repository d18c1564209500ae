/*
 * proto: message framing over pipes and JSON forms of Plan and DeviceInfo.
 * See proto.h.
 */
#include "gpu/proto.h"

#include <errno.h>
#include <stddef.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* ---- framing ---------------------------------------------------------- */

typedef struct Header {
    uint32_t magic, type, json_len, bin_len;
} Header;

static int write_all(int fd, const void *buf, size_t n, EvoErr *err)
{
    const unsigned char *p = buf;
    while (n > 0) {
        ssize_t w = write(fd, p, n);
        if (w < 0) {
            if (errno == EINTR)
                continue;
            return err_set(err, "write(worker pipe): %s", strerror(errno));
        }
        p += w;
        n -= (size_t)w;
    }
    return 0;
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
    unsigned char *p = buf;
    while (n > 0) {
        if (deadline >= 0) {
            struct pollfd pfd = {.fd = fd, .events = POLLIN};
            double left = deadline - time_now_ms();
            if (left <= 0)
                return PROTO_TIMEOUT;
            int pr = poll(&pfd, 1, left > 2e9 ? 2000000000 : (int)left + 1);
            if (pr < 0) {
                if (errno == EINTR)
                    continue;
                return err_set(err, "poll(worker pipe): %s", strerror(errno));
            }
            if (pr == 0)
                continue; /* loop re-checks the deadline */
        }
        ssize_t r = read(fd, p, n);
        if (r < 0) {
            if (errno == EINTR || errno == EAGAIN)
                continue;
            return err_set(err, "read(worker pipe): %s", strerror(errno));
        }
        if (r == 0)
            return PROTO_EOF;
        p += r;
        n -= (size_t)r;
    }
    return 0;
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

/* ---- getters ---------------------------------------------------------- */

double proto_get_num(const json_t *o, const char *key, double def)
{
    json_t *v = json_object_get(o, key);
    return v && json_is_number(v) ? json_number_value(v) : def;
}

long long proto_get_int(const json_t *o, const char *key, long long def)
{
    json_t *v = json_object_get(o, key);
    if (v && json_is_integer(v))
        return (long long)json_integer_value(v);
    if (v && json_is_real(v))
        return (long long)json_real_value(v);
    if (v && json_is_boolean(v))
        return json_is_true(v);
    return def;
}

const char *proto_get_str(const json_t *o, const char *key, const char *def)
{
    json_t *v = json_object_get(o, key);
    return v && json_is_string(v) ? json_string_value(v) : def;
}

void proto_copy_str(const json_t *o, const char *key, char *dst, size_t cap)
{
    const char *s = proto_get_str(o, key, "");
    size_t n = strlen(s);
    if (cap == 0)
        return;
    if (n >= cap)
        n = cap - 1;
    memcpy(dst, s, n);
    dst[n] = 0;
}

/* ---- Plan ------------------------------------------------------------- */

static json_t *u64_array(const uint64_t *v, int n)
{
    json_t *a = json_array();
    for (int i = 0; i < n; i++)
        json_array_append_new(a, json_integer((json_int_t)v[i]));
    return a;
}

static json_t *tmap_to_json(const PlanTmap *t)
{
    uint64_t box[TMAP_MAX_RANK], es[TMAP_MAX_RANK];
    for (int d = 0; d < t->rank; d++) {
        box[d] = t->box[d];
        es[d] = t->elem_strides[d];
    }
    return json_pack("{s:i, s:o, s:o, s:o, s:o, s:i, s:i, s:i}", "rank", t->rank, "dims", u64_array(t->dims, t->rank),
                     "strides", u64_array(t->strides, t->rank > 0 ? t->rank - 1 : 0), "box", u64_array(box, t->rank),
                     "es", u64_array(es, t->rank), "swizzle", t->swizzle, "l2", t->l2_promotion, "oob_nan",
                     t->oob_nan);
}

/* Read a tensor map; -1 when it is malformed. */
static int tmap_from_json(const json_t *j, PlanTmap *t)
{
    memset(t, 0, sizeof(*t));
    t->rank = (int)proto_get_int(j, "rank", 0);
    if (t->rank < 1 || t->rank > TMAP_MAX_RANK)
        return -1;
    for (int d = 0; d < t->rank; d++) {
        t->dims[d] = (uint64_t)json_integer_value(json_array_get(json_object_get(j, "dims"), (size_t)d));
        t->box[d] = (uint32_t)json_integer_value(json_array_get(json_object_get(j, "box"), (size_t)d));
        t->elem_strides[d] = (uint32_t)json_integer_value(json_array_get(json_object_get(j, "es"), (size_t)d));
        if (d > 0)
            t->strides[d - 1] = (uint64_t)json_integer_value(json_array_get(json_object_get(j, "strides"), (size_t)d - 1));
    }
    t->swizzle = (int)proto_get_int(j, "swizzle", 0);
    t->l2_promotion = (int)proto_get_int(j, "l2", 0);
    t->oob_nan = (int)proto_get_int(j, "oob_nan", 0);
    return 0;
}

static json_t *launches_to_json(const PlanLaunch *l, int n)
{
    json_t *arr = json_array();
    for (int i = 0; i < n; i++) {
        json_t *args = json_array();
        for (int a = 0; a < l[i].nargs; a++) {
            const PlanArg *pa = &l[i].args[a];
            json_t *ja = json_pack("{s:i}", "k", (int)pa->kind);
            if (pa->kind == ARG_BUFFER)
                json_object_set_new(ja, "b", json_integer(pa->buffer));
            else if (pa->kind == ARG_TMAP)
                json_object_set_new(ja, "b", json_integer(pa->buffer)), json_object_set_new(ja, "t", tmap_to_json(&pa->tmap));
            else if (pa->kind == ARG_I32 || pa->kind == ARG_I64)
                json_object_set_new(ja, "i", json_integer(pa->i));
            else
                json_object_set_new(ja, "f", json_real(pa->f));
            json_array_append_new(args, ja);
        }
        json_array_append_new(arr, json_pack("{s:s, s:[I,I,I], s:[I,I,I], s:I, s:o}", "entry", l[i].entry ? l[i].entry : "",
                                             "grid", (json_int_t)l[i].grid[0], (json_int_t)l[i].grid[1],
                                             (json_int_t)l[i].grid[2], "block", (json_int_t)l[i].block[0],
                                             (json_int_t)l[i].block[1], (json_int_t)l[i].block[2], "smem",
                                             (json_int_t)l[i].smem, "args", args));
    }
    return arr;
}

/* InitSpec on the wire. */
static const Field init_fields[] = {
    FJK(InitSpec, "k", kind, F_I32), FJK(InitSpec, "a", a, F_REAL),     FJK(InitSpec, "b", b, F_REAL),
    FJK(InitSpec, "p", p, F_REAL),   FJK(InitSpec, "c", c, F_REAL),     FJK(InitSpec, "rows", rows, F_I32),
    FJK(InitSpec, "ra", ra, F_REAL), FJK(InitSpec, "rb", rb, F_REAL),   FJK(InitSpec, "rl", row_len, F_U64),
};

static json_t *init_to_json(const InitSpec *s)
{
    return fld_to_json(init_fields, NFIELDS(init_fields), s);
}

/* -1 when malformed, or the kind or the row scale is out of range. */
static int init_from_json(const json_t *j, InitSpec *s)
{
    memset(s, 0, sizeof(*s));
    s->kind = (InitKind)-1;
    s->rows = (RowScale)-1;
    s->row_len = 1;
    if (fld_from_json(init_fields, NFIELDS(init_fields), j, s, NULL))
        return -1;
    return (int)s->kind < INIT_NORMAL || s->kind > INIT_OUTLIER || (int)s->rows < ROWS_NONE || s->rows > ROWS_UNIFORM
               ? -1
               : 0;
}

json_t *proto_plan_to_json(const Plan *p)
{
    json_t *bufs = json_array(), *profs = json_array();
    for (int i = 0; i < p->nbuffers; i++) {
        const PlanBuffer *b = &p->buffers[i];
        json_array_append_new(bufs, json_pack("{s:s, s:i, s:I, s:i, s:o, s:I, s:f, s:f, s:b, s:b}", "name",
                                              b->name ? b->name : "", "dtype", (int)b->dtype, "count",
                                              (json_int_t)b->count, "role", (int)b->role, "init",
                                              init_to_json(&b->init), "salt", (json_int_t)b->seed_salt, "atol",
                                              b->atol, "rtol", b->rtol, "for_ref", b->for_ref, "for_cand",
                                              b->for_cand));
    }
    for (int k = 0; k < p->nprofiles; k++) {
        json_t *inits = json_array();
        for (int i = 0; i < p->nbuffers; i++)
            json_array_append_new(inits, init_to_json(&p->profiles[k].init[i]));
        json_array_append_new(profs, json_pack("{s:s, s:b, s:o}", "name", p->profiles[k].name ? p->profiles[k].name : "",
                                               "timing", p->profiles[k].timing, "init", inits));
    }
    return json_pack("{s:s, s:b, s:o, s:o, s:o, s:f, s:f, s:i, s:o}", "shape", p->shape_label ? p->shape_label : "",
                     "is_bench", p->is_bench, "buffers", bufs, "launches",
                     launches_to_json(p->launches, p->nlaunches), "ref_launches",
                     launches_to_json(p->ref_launches, p->nref_launches), "flops", p->flops, "bytes", p->bytes,
                     "min_ctas", p->min_ctas, "profiles", profs);
}

/* The plan's profiles (after its buffers); -1 with err when malformed. */
static int profiles_from_json(const json_t *arr, Plan *out, EvoErr *err)
{
    size_t n = json_is_array(arr) ? json_array_size(arr) : 0;
    if (arr && !json_is_array(arr))
        return err_set(err, "plan: 'profiles' is not an array");
    if (n > PLAN_MAX_PROFILES)
        return err_set(err, "plan: %zu profiles, at most %d", n, PLAN_MAX_PROFILES);
    out->profiles = xcalloc(n ? n : 1, sizeof(*out->profiles));
    for (size_t k = 0; k < n; k++) {
        const json_t *jp = json_array_get(arr, k), *inits = json_object_get(jp, "init");
        PlanProfile *pp = &out->profiles[out->nprofiles++];
        pp->name = xstrdup(proto_get_str(jp, "name", ""));
        pp->timing = (int)proto_get_int(jp, "timing", 0);
        pp->init = xcalloc((size_t)(out->nbuffers > 0 ? out->nbuffers : 1), sizeof(InitSpec));
        if (!json_is_array(inits) || json_array_size(inits) != (size_t)out->nbuffers)
            return err_set(err, "plan: profile %zu ('%s'): needs an init per buffer", k, pp->name);
        for (int i = 0; i < out->nbuffers; i++)
            if (init_from_json(json_array_get(inits, (size_t)i), &pp->init[i]) != 0)
                return err_set(err, "plan: profile %zu ('%s'), buffer %d: bad init", k, pp->name, i);
    }
    return 0;
}

static int launches_from_json(const json_t *arr, const char *what, int nbuf, PlanLaunch **out, int *n,
                              EvoErr *err)
{
    size_t cnt = json_is_array(arr) ? json_array_size(arr) : 0;
    if (!json_is_array(arr))
        return err_set(err, "plan: '%s' is not an array", what);
    *out = xcalloc(cnt ? cnt : 1, sizeof(**out));
    *n = (int)cnt;
    for (size_t i = 0; i < cnt; i++) {
        const json_t *jl = json_array_get(arr, i);
        PlanLaunch *l = &(*out)[i];
        const json_t *g = json_object_get(jl, "grid"), *b = json_object_get(jl, "block");
        const json_t *args = json_object_get(jl, "args");
        const char *entry = proto_get_str(jl, "entry", NULL);
        if (!entry || !json_is_array(g) || json_array_size(g) != 3 || !json_is_array(b) ||
            json_array_size(b) != 3 || !json_is_array(args))
            return err_set(err, "plan: %s[%zu]: needs entry, grid[3], block[3], args", what, i);
        l->entry = xstrdup(entry);
        for (int k = 0; k < 3; k++) {
            l->grid[k] = (unsigned)json_integer_value(json_array_get(g, (size_t)k));
            l->block[k] = (unsigned)json_integer_value(json_array_get(b, (size_t)k));
        }
        l->smem = (unsigned)proto_get_int(jl, "smem", 0);
        l->nargs = (int)json_array_size(args);
        l->args = xcalloc(l->nargs ? (size_t)l->nargs : 1, sizeof(*l->args));
        for (int a = 0; a < l->nargs; a++) {
            const json_t *ja = json_array_get(args, (size_t)a);
            PlanArg *pa = &l->args[a];
            long long k = proto_get_int(ja, "k", -1);
            if (k < ARG_BUFFER || k > ARG_TMAP)
                return err_set(err, "plan: %s[%zu] argument %d: bad kind %lld", what, i, a, k);
            pa->kind = (ArgKind)k;
            pa->buffer = (int)proto_get_int(ja, "b", -1);
            pa->i = (int64_t)proto_get_int(ja, "i", 0);
            pa->f = proto_get_num(ja, "f", 0);
            if ((pa->kind == ARG_BUFFER || pa->kind == ARG_TMAP) && (pa->buffer < 0 || pa->buffer >= nbuf))
                return err_set(err, "plan: %s[%zu] argument %d: buffer index %d out of range", what, i, a,
                               pa->buffer);
            if (pa->kind == ARG_TMAP && tmap_from_json(json_object_get(ja, "t"), &pa->tmap) != 0)
                return err_set(err, "plan: %s[%zu] argument %d: malformed tensor map", what, i, a);
        }
    }
    return 0;
}

int proto_plan_from_json(const json_t *j, Plan *out, EvoErr *err)
{
    const json_t *bufs = json_object_get(j, "buffers");
    memset(out, 0, sizeof(*out));
    if (!json_is_object(j) || !json_is_array(bufs)) {
        err_set(err, "plan: not an object with a 'buffers' array");
        goto fail;
    }
    out->shape_label = xstrdup(proto_get_str(j, "shape", ""));
    out->is_bench = (int)proto_get_int(j, "is_bench", 0);
    out->flops = proto_get_num(j, "flops", 0);
    out->bytes = proto_get_num(j, "bytes", 0);
    out->min_ctas = (int)proto_get_int(j, "min_ctas", 0);
    out->nbuffers = (int)json_array_size(bufs);
    out->buffers = xcalloc(out->nbuffers ? (size_t)out->nbuffers : 1, sizeof(*out->buffers));
    for (int i = 0; i < out->nbuffers; i++) {
        const json_t *jb = json_array_get(bufs, (size_t)i);
        PlanBuffer *b = &out->buffers[i];
        long long dt = proto_get_int(jb, "dtype", -1), role = proto_get_int(jb, "role", -1);
        b->name = xstrdup(proto_get_str(jb, "name", ""));
        if (dt < DT_F16 || dt > DT_I32 || role < ROLE_INPUT || role > ROLE_SCRATCH ||
            init_from_json(json_object_get(jb, "init"), &b->init) != 0) {
            err_set(err, "plan: buffer %d ('%s'): bad dtype, role or init", i, b->name);
            goto fail;
        }
        b->dtype = (DType)dt;
        b->role = (BufRole)role;
        b->count = (uint64_t)proto_get_int(jb, "count", 0);
        b->seed_salt = (uint64_t)proto_get_int(jb, "salt", 0);
        b->atol = proto_get_num(jb, "atol", 0);
        b->rtol = proto_get_num(jb, "rtol", 0);
        b->for_ref = (int)proto_get_int(jb, "for_ref", 1);
        b->for_cand = (int)proto_get_int(jb, "for_cand", 1);
    }
    if (profiles_from_json(json_object_get(j, "profiles"), out, err) != 0 ||
        launches_from_json(json_object_get(j, "launches"), "launches", out->nbuffers, &out->launches,
                           &out->nlaunches, err) != 0 ||
        launches_from_json(json_object_get(j, "ref_launches"), "ref_launches", out->nbuffers, &out->ref_launches,
                           &out->nref_launches, err) != 0)
        goto fail;
    return 0;
fail:
    plan_free(out);
    return -1;
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

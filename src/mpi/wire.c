/* wire: see wire.h. */
#include "mpi/wire.h"

#include <math.h>
#include <stdio.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#define R_S(f) FJ(CandidateRecord, f, F_TEXT)
#define R_I(f) FJ(CandidateRecord, f, F_I64)
#define R_D(f) FJ(CandidateRecord, f, F_REAL)
/* The CandidateRecord fields an evaluator fills. */
static const Field rec_fields[] = {
    R_S(status), R_S(error), R_S(gate_json), R_S(log), R_S(source_hash), R_S(metrics_json),
    R_I(id), R_I(gate_stage), R_I(ctas), R_I(ctas_total), R_I(threads), R_I(registers), R_I(smem_static),
    R_I(smem_dynamic), R_I(occupancy),
    R_D(latency_us), R_D(p90_us), R_D(cv), R_D(waves), R_D(tflops), R_D(gbps), R_D(pct_peak_flops),
    R_D(pct_peak_bw), R_D(compile_ms), R_D(gate_ms), R_D(time_ms),
};
#define C_S(f) FJ(CompileRecord, f, F_TEXT)
#define C_I(f) FJ(CompileRecord, f, F_I64)
#define C_D(f) FJ(CompileRecord, f, F_REAL)
static const Field comp_fields[] = {
    C_S(cache_key), C_S(source_hash), C_S(arch), C_S(options), C_S(nvrtc_version), C_S(log), C_S(resources_json),
    C_I(ok), C_I(registers), C_I(smem), C_I(spill_stores), C_I(spill_loads), C_I(stack), C_D(compile_ms),
};

/* A result as the wire carries it: the record, the compile row, the text. */
static const Field result_fields[] = {
    {.key = "rec", .type = F_OBJ, .off = offsetof(Child, rec), .sub = rec_fields, .nsub = NFIELDS(rec_fields)},
    {.key = "comp", .type = F_OBJ, .off = offsetof(Child, comp), .sub = comp_fields, .nsub = NFIELDS(comp_fields)},
    FJK(Child, "text", source_text, F_TEXT),
};

json_t *wire_child_put(const Child *c, int64_t id, int nparams, int with_source)
{
    json_t *vals = json_array();
    for (int i = 0; i < nparams; i++)
        json_array_append_new(vals, json_integer((json_int_t)c->vals[i]));
    json_t *o = json_pack("{s:I, s:s?, s:o, s:I, s:I}", "id", (json_int_t)id, "key", c->params_key, "vals", vals,
                          "pid", (json_int_t)c->parent_id, "rid", (json_int_t)c->rec.id);
    if (with_source && c->custom_source)
        json_object_set_new(o, "src", json_string(c->custom_source));
    return o;
}

int wire_child_get(json_t *o, Child *c, int nparams, int64_t *id)
{
    json_t *vals = json_object_get(o, "vals");
    if (!json_is_object(o) || !json_is_array(vals) || (int)json_array_size(vals) != nparams)
        return -1;
    *id = (int64_t)json_integer_value(json_object_get(o, "id"));
    for (int i = 0; i < nparams; i++)
        c->vals[i] = (int64_t)json_integer_value(json_array_get(vals, (size_t)i));
    const char *key = json_string_value(json_object_get(o, "key"));
    c->params_key = key ? xstrdup(key) : NULL;
    c->parent_id = (int64_t)json_integer_value(json_object_get(o, "pid"));
    c->rec.id = (int64_t)json_integer_value(json_object_get(o, "rid"));
    c->op = "mpi";
    const char *src = json_string_value(json_object_get(o, "src"));
    if (src)
        c->custom_source = c->own_source = xstrdup(src);
    return 0;
}

/* Add result field f of c to o. */
static void put_field(json_t *o, const Field *f, const Child *c)
{
    json_t *one = fld_to_json(f, 1, c);
    json_object_update(o, one);
    json_decref(one);
}

json_t *wire_result_put(const Child *c, int what)
{
    json_t *o = fld_to_json(result_fields, 1, c);   /* the record */
    /* a compile row only where there is one: an empty one would blank
     * rank 0's (an agent that gates only a child's stage B has none) */
    if (what != WIRE_REC && c->comp.cache_key)
        put_field(o, &result_fields[1], c);
    if (what == WIRE_TEXT && c->source_text)
        put_field(o, &result_fields[2], c);
    return o;
}

int wire_result_get(json_t *o, Child *c, EvoErr *err)
{
    if (o && fld_from_json(result_fields, NFIELDS(result_fields), o, c, err))
        return err_prefix(err, "MPI wire: result");
    return 0;
}

json_t *wire_nv_put(const NvrtcStats *cur, const NvrtcStats *base)
{
    return json_pack("[i, i, f, f]", cur->compiles - base->compiles, cur->cache_hits - base->cache_hits,
                     cur->cpu_s - base->cpu_s, cur->wall_s - base->wall_s);
}

int wire_nv_get(json_t *o, NvrtcStats *nv)
{
    json_t *a = json_object_get(o, "nv");
    if (!json_is_array(a) || json_array_size(a) != 4 || json_integer_value(json_array_get(a, 0)) < nv->compiles)
        return 0;
    nv->compiles = (int)json_integer_value(json_array_get(a, 0));
    nv->cache_hits = (int)json_integer_value(json_array_get(a, 1));
    nv->cpu_s = json_number_value(json_array_get(a, 2));
    nv->wall_s = json_number_value(json_array_get(a, 3));
    return 1;
}

char *wire_device_hex(const DeviceInfo *d)
{
    const unsigned char *p = (const unsigned char *)d;
    char *s = xmalloc(2 * sizeof(*d) + 1);
    for (size_t i = 0; i < sizeof(*d); i++)
        snprintf(s + 2 * i, 3, "%02x", p[i]);
    return s;
}

int wire_device_unhex(const char *hex, DeviceInfo *d)
{
    if (strlen(hex) != 2 * sizeof(*d))
        return -1;
    unsigned char *p = (unsigned char *)d;
    for (size_t i = 0; i < sizeof(*d); i++) {
        unsigned v;
        if (sscanf(hex + 2 * i, "%2x", &v) != 1)
            return -1;
        p[i] = (unsigned char)v;
    }
    return 0;
}

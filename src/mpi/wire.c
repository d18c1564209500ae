/* wire: see wire.h. */
#include "mpi/wire.h"

#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

typedef enum { F_STR, F_I64, F_DBL } FieldType;

typedef struct Field {
    const char *name;
    FieldType   type;
    size_t      off;
} Field;

#define R_S(f) {#f, F_STR, offsetof(CandidateRecord, f)}
#define R_I(f) {#f, F_I64, offsetof(CandidateRecord, f)}
#define R_D(f) {#f, F_DBL, offsetof(CandidateRecord, f)}
/* The CandidateRecord fields an evaluator fills. */
static const Field rec_fields[] = {
    R_S(status), R_S(error), R_S(gate_json), R_S(log), R_S(source_hash), R_S(metrics_json),
    R_I(id), R_I(gate_stage), R_I(ctas), R_I(ctas_total), R_I(threads), R_I(registers), R_I(smem_static),
    R_I(smem_dynamic), R_I(occupancy),
    R_D(latency_us), R_D(p90_us), R_D(cv), R_D(waves), R_D(tflops), R_D(gbps), R_D(pct_peak_flops),
    R_D(pct_peak_bw), R_D(compile_ms), R_D(gate_ms), R_D(time_ms),
};
#define C_S(f) {#f, F_STR, offsetof(CompileRecord, f)}
#define C_I(f) {#f, F_I64, offsetof(CompileRecord, f)}
#define C_D(f) {#f, F_DBL, offsetof(CompileRecord, f)}
static const Field comp_fields[] = {
    C_S(cache_key), C_S(source_hash), C_S(arch), C_S(options), C_S(nvrtc_version), C_S(log), C_S(resources_json),
    C_I(ok), C_I(registers), C_I(smem), C_I(spill_stores), C_I(spill_loads), C_I(stack), C_D(compile_ms),
};

static json_t *fields_put(const void *base, const Field *f, size_t n)
{
    json_t *o = json_object();
    for (size_t i = 0; i < n; i++) {
        const char *p = (const char *)base + f[i].off;
        json_t *v = NULL;
        if (f[i].type == F_STR) {
            const char *s = *(char *const *)p;
            v = s ? json_string(s) : json_null();
        } else if (f[i].type == F_I64) {
            v = json_integer((json_int_t)*(const int64_t *)p);
        } else {
            double d = *(const double *)p;
            v = isfinite(d) ? json_real(d) : json_null();
        }
        json_object_set_new(o, f[i].name, v ? v : json_null());
    }
    return o;
}

static void fields_get(json_t *o, void *base, const Field *f, size_t n)
{
    if (!json_is_object(o))
        return;
    for (size_t i = 0; i < n; i++) {
        json_t *v = json_object_get(o, f[i].name);
        if (!v)
            continue;
        char *p = (char *)base + f[i].off;
        if (f[i].type == F_STR) {
            char **s = (char **)p;
            free(*s);
            *s = json_is_string(v) ? xstrdup(json_string_value(v)) : NULL;
        } else if (f[i].type == F_I64) {
            *(int64_t *)p = (int64_t)json_integer_value(v);
        } else {
            *(double *)p = json_is_number(v) ? json_number_value(v) : NAN;
        }
    }
}

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

json_t *wire_result_put(const Child *c, int full)
{
    json_t *o = json_object();
    json_object_set_new(o, "rec", fields_put(&c->rec, rec_fields, sizeof(rec_fields) / sizeof(rec_fields[0])));
    if (full) {
        json_object_set_new(o, "comp", fields_put(&c->comp, comp_fields, sizeof(comp_fields) / sizeof(comp_fields[0])));
        if (c->source_text)
            json_object_set_new(o, "text", json_string(c->source_text));
    }
    return o;
}

void wire_result_get(json_t *o, Child *c)
{
    fields_get(json_object_get(o, "rec"), &c->rec, rec_fields, sizeof(rec_fields) / sizeof(rec_fields[0]));
    fields_get(json_object_get(o, "comp"), &c->comp, comp_fields, sizeof(comp_fields) / sizeof(comp_fields[0]));
    const char *t = json_string_value(json_object_get(o, "text"));
    if (t) {
        free(c->source_text);
        c->source_text = xstrdup(t);
    }
}

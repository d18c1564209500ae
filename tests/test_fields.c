/*
 * test_fields: the field-table JSON codec (util.h, "field tables"): every
 * field type through a table of its own, a round trip of each record that
 * crosses the worker pipe (BenchOptions, BenchResult, CompareResult,
 * GateReport, DeviceInfo), and malformed input (a wrong type, a required
 * field missing, an array or a string too long, an unknown name) failing
 * with the JSON path of the bad value; the --json view of a store row
 * (a key of its own, nested, hidden, omitted when null, detail only).
 */
#include "gpu/bench.h"
#include "gpu/gate.h"
#include "gpu/proto.h"
#include "testhelp.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

typedef struct Inner {
    int  x;
    char tag[4];
} Inner;

typedef struct Rec {
    int64_t  id, cnt, big;
    double   r;
    char    *text;
    int      i, flag, colour, ninner;
    unsigned u;
    uint64_t seed;
    char     name[8];
    Inner    in, inner[3];
    int     *dyn;
} Rec;

static const char *const colours[] = {"red", "green"};
static const Field inner_fields[] = {FJ(Inner, x, F_I32), FJ_CHARS(Inner, tag)};
static const Field rec_fields[] = {
    FJ(Rec, id, F_ID),     FJ(Rec, cnt, F_INT),    FJ(Rec, big, F_I64),   FJ(Rec, r, F_REAL),
    FJ(Rec, text, F_TEXT), FJ(Rec, i, F_I32),      FJ(Rec, u, F_U32),     FJ(Rec, seed, F_U64),
    FJ(Rec, flag, F_BOOL), FJ_CHARS(Rec, name),
    {.key = "colour", .type = F_NAME, .off = offsetof(Rec, colour), .names = colours, .max = 2, .req = 1},
    FJ_OBJ(Rec, in, inner_fields),
    FJ_ARR(Rec, inner, ninner, inner_fields),
    {.key = "dyn", .type = F_ARR, .off = offsetof(Rec, dyn), .elem = F_I32, .size = sizeof(int), .dyn = 1,
     .count = FLD_FIXED, .max = 2},
};

static char *dump(json_t *j)
{
    char *s = json_dumps(j, JSON_COMPACT);
    json_decref(j);
    return s;
}

static void test_types(void)
{
    Rec a, b;
    memset(&a, 0, sizeof(a));
    memset(&b, 0, sizeof(b));
    a.id = 0;   /* null */
    a.cnt = -1; /* null */
    a.big = -5;
    a.r = NAN;  /* null */
    a.i = -7;
    a.u = 4000000000u;
    a.seed = 0xfedcba9876543210ull;
    a.flag = 1;
    a.colour = 1;
    snprintf(a.name, sizeof(a.name), "seven77");
    a.in.x = 3;
    a.ninner = 2;
    a.inner[1].x = 9;
    snprintf(a.inner[1].tag, 4, "abc");
    int d[2] = {4, 5};
    a.dyn = d;
    char *s = dump(fld_to_json(rec_fields, NFIELDS(rec_fields), &a));
    CHECK_STR(s, "{\"id\":null,\"cnt\":null,\"big\":-5,\"r\":null,\"text\":null,\"i\":-7,\"u\":4000000000,"
                 "\"seed\":-81985529216486896,\"flag\":true,\"name\":\"seven77\",\"colour\":\"green\","
                 "\"in\":{\"x\":3,\"tag\":\"\"},\"inner\":[{\"x\":0,\"tag\":\"\"},{\"x\":9,\"tag\":\"abc\"}],"
                 "\"dyn\":[4,5]}");
    json_t *j = json_loads(s, 0, NULL);
    EvoErr err;
    CHECK(fld_from_json(rec_fields, NFIELDS(rec_fields), j, &b, &err) == 0);
    CHECK(b.id == 0 && b.cnt == -1 && b.big == -5 && isnan(b.r) && !b.text && b.i == -7 && b.u == a.u);
    CHECK(b.seed == a.seed && b.flag == 1 && b.colour == 1 && b.in.x == 3 && b.ninner == 2);
    CHECK_STR(b.name, "seven77");
    CHECK_STR(b.inner[1].tag, "abc");
    CHECK(b.dyn && b.dyn[0] == 4 && b.dyn[1] == 5);
    char *s2 = dump(fld_to_json(rec_fields, NFIELDS(rec_fields), &b));
    CHECK_STR(s2, s);
    free(b.dyn);
    free(s2);
    free(s);
    json_decref(j);
}

/* fld_from_json of text into a fresh Rec must fail with err containing want. */
static void bad(const char *text, const char *want)
{
    Rec r;
    EvoErr err = {{0}};
    memset(&r, 0, sizeof(r));
    json_t *j = json_loads(text, 0, NULL);
    CHECK_MSG(j != NULL, "%s", text);
    CHECK_MSG(fld_from_json(rec_fields, NFIELDS(rec_fields), j, &r, &err) == -1, "%s", text);
    CHECK_CONTAINS(err.msg, want);
    free(r.text);
    free(r.dyn);
    json_decref(j);
}

static void test_malformed(void)
{
    bad("{\"i\":1}", "colour: missing");
    bad("{\"colour\":\"red\",\"i\":\"1\"}", "i: an integer expected, found a string");
    bad("{\"colour\":\"red\",\"r\":true}", "r: a number expected, found true");
    bad("{\"colour\":\"red\",\"in\":{\"x\":1.5}}", "in.x: an integer expected, found a real number");
    bad("{\"colour\":\"red\",\"inner\":[{},{},{\"tag\":7}]}", "inner[2].tag: a string expected, found an integer");
    bad("{\"colour\":\"red\",\"inner\":[{},{},{},{}]}", "inner: 4 elements, at most 3");
    bad("{\"colour\":\"red\",\"dyn\":[1]}", "dyn: 1 elements, 2 expected");
    bad("{\"colour\":\"red\",\"name\":\"eight888\"}", "name: a string of 8 bytes, at most 7");
    bad("{\"colour\":\"blue\"}", "colour: unknown name 'blue'");
    bad("{\"colour\":\"red\",\"u\":-1}", "u: -1 is out of range");
    bad("[]", "an object expected, found an array");
}

/* The --json view of a table (store rows): jkey, a dotted jkey, FLD_HIDE,
 * FLD_OMIT, FLD_MORE and put on a type that is not F_CUSTOM. */
typedef struct Row {
    int64_t run, gen, stage;
    double  lat;
    char   *name, *arch, *secret, *log;
} Row;

static json_t *put_stage(const void *at)
{
    return json_string(*(const int64_t *)at == 2 ? "full" : "?");
}

static const Field row_fields[] = {
    {.key = "run_id", .jkey = "run", .type = F_ID, .off = offsetof(Row, run)},
    {.key = "gen", .type = F_INT, .off = offsetof(Row, gen), .show = FLD_OMIT},
    {.key = "stage", .type = F_INT, .off = offsetof(Row, stage), .put = put_stage},
    {.key = "lat", .type = F_REAL, .off = offsetof(Row, lat), .show = FLD_OMIT},
    {.key = "device_name", .jkey = "device.name", .type = F_TEXT, .off = offsetof(Row, name)},
    {.key = "device_arch", .jkey = "device.arch", .type = F_TEXT, .off = offsetof(Row, arch)},
    {.key = "log", .type = F_TEXT, .off = offsetof(Row, log), .show = FLD_OMIT | FLD_MORE},
    {.key = "secret", .type = F_TEXT, .off = offsetof(Row, secret), .show = FLD_HIDE},
};

static void test_views(void)
{
    Row r = {.run = 3, .gen = -1, .stage = 2, .lat = NAN, .arch = "sm_90", .secret = "k", .log = "l"};
    char *s = dump(fld_to_json(row_fields, NFIELDS(row_fields), &r));
    CHECK_STR(s, "{\"run\":3,\"stage\":\"full\",\"device\":{\"name\":null,\"arch\":\"sm_90\"}}");
    free(s);
    r.gen = 4;
    r.lat = 1.5;
    s = dump(fld_to_json_view(row_fields, NFIELDS(row_fields), &r, FLD_MORE));
    CHECK_STR(s, "{\"run\":3,\"gen\":4,\"stage\":\"full\",\"lat\":1.5,\"device\":{\"name\":null,"
                 "\"arch\":\"sm_90\"},\"log\":\"l\"}");
    free(s);
    /* the reader takes the JSON key and never a hidden member */
    Row b = {.secret = "kept"};
    json_t *j = json_loads("{\"run\":7,\"run_id\":8,\"secret\":\"x\"}", 0, NULL);
    EvoErr err = {{0}};
    CHECK(fld_from_json(row_fields, 1, j, &b, &err) == 0 && b.run == 7);
    CHECK(fld_from_json(&row_fields[7], 1, j, &b, &err) == 0 && strcmp(b.secret, "kept") == 0);
    json_decref(j);
}

/* A record's JSON survives from_json + to_json unchanged. */
#define ROUND_TRIP(T, put, get, rec)                                                                             \
    do {                                                                                                         \
        T rt_b;                                                                                                  \
        char *rt_s = dump(put(&(rec)));                                                                          \
        json_t *rt_j = json_loads(rt_s, 0, NULL);                                                                \
        CHECK(get == 0);                                                                                         \
        char *rt_s2 = dump(put(&rt_b));                                                                          \
        CHECK_STR(rt_s2, rt_s);                                                                                  \
        free(rt_s);                                                                                              \
        free(rt_s2);                                                                                             \
        json_decref(rt_j);                                                                                       \
    } while (0)

static void test_records(void)
{
    BenchResult br;
    memset(&br, 0, sizeof(br));
    br.status = EVAL_TIMEOUT;
    snprintf(br.error, sizeof(br.error), "slow");
    br.ms.n = 20;
    br.ms.median = 0.125;
    br.nlaunches = 2;
    snprintf(br.launches[1].entry, sizeof(br.launches[1].entry), "k1");
    br.launches[1].ctas = 1ull << 40;
    br.launches[1].waves = 2.5;
    br.nprof = 2;
    snprintf(br.prof[1].name, sizeof(br.prof[1].name), "large");
    br.prof[1].ratio.n = 15;
    br.prof[1].ratio.median = 0.97;
    br.prof[1].noisy = 1;
    ROUND_TRIP(BenchResult, bench_result_to_json, bench_result_from_json(rt_j, &rt_b), br);

    CompareResult cr;
    memset(&cr, 0, sizeof(cr));
    cr.status = EVAL_OK;
    cr.ratio.median = 1.02;
    cr.pairs = 15;
    cr.noisy = 1;
    cr.nprof = 2;
    cr.worst = 1;
    cr.prof[0].attempts = 2;
    ROUND_TRIP(CompareResult, bench_compare_to_json, bench_compare_from_json(rt_j, &rt_b), cr);

    BenchOptions o;
    bench_options_default(&o);
    o.seed = ~0ull;
    ROUND_TRIP(BenchOptions, bench_options_to_json, bench_options_from_json(rt_j, &rt_b, NULL), o);

    GateReport g;
    memset(&g, 0, sizeof(g));
    g.status = EVAL_INCORRECT;
    snprintf(g.check, sizeof(g.check), "mismatch");
    g.first_bad = 12;
    g.got = NAN;
    g.want = 1.5;
    snprintf(g.profile, sizeof(g.profile), "outliers");
    g.profiles = 3;
    ROUND_TRIP(GateReport, gate_report_to_json, gate_report_from_json(rt_j, &rt_b), g);

    DeviceInfo d;
    CHECK(device_profile("sm_90", &d, NULL) == 0);
    snprintf(d.uuid, sizeof(d.uuid), "GPU-0");
    d.mem_bytes = 80LL << 30;
    ROUND_TRIP(DeviceInfo, proto_device_to_json, proto_device_from_json(rt_j, &rt_b, NULL), d);
}

/* The named readers of the pipe's records: a malformed record is refused
 * with the path, never read as zeros. */
static void test_records_malformed(void)
{
    BenchResult br;
    json_t *j = json_loads("{\"status\":\"ok\",\"launches\":[{},{},{},{},{},{},{},{},{}]}", 0, NULL);
    CHECK(bench_result_from_json(j, &br) == -1 && br.status == EVAL_INVALID);
    CHECK_CONTAINS(br.error, "launches: 9 elements, at most 8");
    json_decref(j);
    j = json_loads("{\"status\":\"ok\",\"profiles\":[{\"ms\":{\"median\":\"fast\"}}]}", 0, NULL);
    CHECK(bench_result_from_json(j, &br) == -1);
    CHECK_CONTAINS(br.error, "profiles[0].ms.median: a number expected, found a string");
    json_decref(j);
    CompareResult cr;
    j = json_loads("{\"ratio\":{}}", 0, NULL);
    CHECK(bench_compare_from_json(j, &cr) == -1 && cr.status == EVAL_INVALID);
    CHECK_CONTAINS(cr.error, "status: missing");
    json_decref(j);
    GateReport g;
    CHECK(gate_report_from_json(NULL, &g) == -1 && g.status == EVAL_INVALID);
    j = json_loads("{\"status\":\"weird\"}", 0, NULL);
    CHECK(gate_report_from_json(j, &g) == -1);
    CHECK_CONTAINS(g.error, "status: unknown name 'weird'");
    json_decref(j);
    DeviceInfo d;
    EvoErr err;
    char big[300];
    memset(big, 'x', sizeof(big) - 1);
    big[sizeof(big) - 1] = 0;
    j = json_pack("{s:s}", "name", big);
    CHECK(proto_device_from_json(j, &d, &err) == -1);
    CHECK_CONTAINS(err.msg, "device: name: a string of 299 bytes, at most 255");
    json_decref(j);
    BenchOptions o;
    j = json_loads("{\"pairs\":\"many\"}", 0, NULL);
    CHECK(bench_options_from_json(j, &o, &err) == -1);
    CHECK_CONTAINS(err.msg, "pairs: an integer expected, found a string");
    json_decref(j);
}

int main(void)
{
    RUN(test_types);
    RUN(test_malformed);
    RUN(test_views);
    RUN(test_records);
    RUN(test_records_malformed);
    return test_report();
}

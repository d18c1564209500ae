/* Unit tests for task_space: the exact enumeration equals a brute-force
 * loop of task_check() over a small synthetic spec's whole raw space
 * (tests/data/space_task.json, two shapes; tests/data/space_shapes.json,
 * five that agree on some dims and not others), on the attention template it
 * finishes with every configuration valid and none twice, sampling draws
 * distinct valid configurations reproducibly, a tiny node budget and a
 * space too large to search (tests/data/space_large.json) give
 * TASK_SPACE_TOO_LARGE, an expression that fails is an error, and the
 * index's distances (space_index_near), packed and not, equal a plain
 * param-by-param count. */
#include "testhelp.h"
#include "task/task.h"
#include "task/task_space.h"
#include "task/space_index.h"
#include "search/ops.h"

#include <stdlib.h>

static int cmp_np;  /* params per configuration, for cmp_config */

static int cmp_config(const void *a, const void *b)
{
    return memcmp(a, b, (size_t)cmp_np * sizeof(int64_t));
}

static char *source_path(const char *rel)
{
    const char *root = getenv("EVO_SOURCE_ROOT");
    return xasprintf("%s/%s", root ? root : ".", rel);
}

/* The spec at rel (under EVO_SOURCE_ROOT), or NULL (a failed check), and
 * the sm_90 profile in *dev. */
static Task *load(const char *rel, DeviceInfo *dev)
{
    char *path = source_path(rel);
    Task *t = NULL;
    EvoErr err;
    CHECK(device_profile("sm_90", dev, &err) == 0);
    if (task_load(path, &t, &err) < 0)
        CHECK_MSG(0, "%s", err.msg);
    free(path);
    return t;
}

/* load(), then its space enumerated into *s; NULL (a failed check) when
 * either fails. */
static Task *load_enumerated(const char *rel, DeviceInfo *dev, TaskSpace *s)
{
    EvoErr err;
    Task *t = load(rel, dev);
    if (!t || task_space_enumerate(t, dev, 0, s, &err) != 0) {
        CHECK(0);
        task_free(&t);
    }
    return t;
}

/* Every configuration of the raw space that task_check accepts (*n of
 * them, fresh); a task_check error fails the test. */
static int64_t *brute_force(const Task *t, const DeviceInfo *dev, size_t *n)
{
    int np = task_nparams(t);
    size_t total = (size_t)task_space_size(t), cap = 16;
    int64_t *out = xcalloc(cap * (size_t)np, sizeof(int64_t)), *v = xcalloc((size_t)np, sizeof(int64_t));
    *n = 0;
    for (size_t idx = 0; idx < total; idx++) {
        size_t rest = idx;
        for (int i = np - 1; i >= 0; i--) {
            v[i] = task_param_value(t, i, (int)(rest % (size_t)task_param_nvalues(t, i)));
            rest /= (size_t)task_param_nvalues(t, i);
        }
        EvoErr err;
        int ok = task_check(t, v, dev, NULL, &err);
        CHECK_MSG(ok >= 0, "%s", err.msg);
        if (ok != 1)
            continue;
        if (*n == cap) {
            cap *= 2;
            out = xrealloc(out, cap * (size_t)np * sizeof(int64_t));
        }
        memcpy(out + *n * (size_t)np, v, (size_t)np * sizeof(int64_t));
        (*n)++;
    }
    free(v);
    return out;
}

/* Enumerate t and compare with the brute force: same count, same set. */
static void check_equals_brute_force(const Task *t, const DeviceInfo *dev, size_t want)
{
    TaskSpace s;
    EvoErr err;
    size_t nb = 0;
    int64_t *b = brute_force(t, dev, &nb);
    CHECK(task_space_enumerate(t, dev, 0, &s, &err) == 0);
    CHECK_MSG(s.count == nb && nb == want, "enumerated %zu, brute force %zu, expected %zu", s.count, nb, want);
    CHECK(s.nparams == task_nparams(t));
    cmp_np = s.nparams;
    if (s.count == nb && nb > 0) {
        qsort(s.vals, s.count, (size_t)cmp_np * sizeof(int64_t), cmp_config);
        qsort(b, nb, (size_t)cmp_np * sizeof(int64_t), cmp_config);
        CHECK(memcmp(s.vals, b, nb * (size_t)cmp_np * sizeof(int64_t)) == 0);
    }
    printf("     %zu of %.0f valid, %llu nodes\n", s.count, task_space_size(t), (unsigned long long)s.nodes);
    task_space_free(&s);
    CHECK(s.vals == NULL && s.count == 0);
    free(b);
}

static void test_brute_force(void)
{
    DeviceInfo dev;
    EvoErr err;
    Task *t = load("tests/data/space_task.json", &dev);
    if (!t)
        return;
    /* A in {1, 2} (A = 4 breaks N = 90 % (A * E), A = 8 also TILE >= 15 on
     * that shape), TOT <= 128, C = 1 only with E > 1, F free: 56 */
    check_equals_brute_force(t, &dev, 56);
    /* a smaller device limit (A * B * 8 <= 512) and the benchmark shape's
     * N = 60 (the other keeps its 90): A = 2 loses B = 64: 50 */
    dev.max_threads = 512;
    CHECK(task_set_dim(t, "N", 60, &err) == 0);
    check_equals_brute_force(t, &dev, 50);
    /* a constraint that reads no param fails at the root: nothing */
    CHECK(task_set_dim(t, "M", 0, &err) == 0);
    check_equals_brute_force(t, &dev, 0);
    task_free(&t);
    /* the shipped small specs too */
    const char *small[] = {"templates/softmax/task.json", "templates/triad/task.json", "tests/data/good_task.json"};
    for (size_t i = 0; i < EVO_ARRAY_LEN(small); i++) {
        Task *u = load(small[i], &dev);
        if (!u)
            continue;
        size_t nb = 0;
        free(brute_force(u, &dev, &nb));
        check_equals_brute_force(u, &dev, nb);
        task_free(&u);
    }
}

/* Each item is evaluated on one shape of each group that agrees on the
 * dims it reads (through derived values too): tests/data/space_shapes.json
 * finds 27 or more configurations where a dim read through a derived
 * value is missed, 18 when none is; then the benchmark shape's N = 30
 * regroups them (A = 1 only: 9). */
static void test_shape_groups(void)
{
    DeviceInfo dev;
    EvoErr err;
    Task *t = load("tests/data/space_shapes.json", &dev);
    if (!t)
        return;
    check_equals_brute_force(t, &dev, 18);
    CHECK(task_set_dim(t, "N", 30, &err) == 0);
    check_equals_brute_force(t, &dev, 9);
    task_free(&t);
}

static void test_sample_small(void)
{
    DeviceInfo dev;
    TaskSpace s;
    Task *t = load_enumerated("tests/data/space_task.json", &dev, &s);
    if (!t)
        return;
    int64_t def[5];
    task_defaults(t, def);
    int64_t at = task_space_find(&s, def);
    CHECK(at >= 0);
    /* more than there are: all the others, the defaults left out */
    size_t idx[64];
    Rng rng;
    rng_seed(&rng, 3);
    size_t got = task_space_sample(&s, &rng, def, 60, idx);
    CHECK(got == s.count - 1);
    unsigned char seen[64] = {0};
    CHECK(s.count <= 64);
    for (size_t i = 0; i < got && s.count <= 64; i++) {
        CHECK(idx[i] < s.count && (int64_t)idx[i] != at && !seen[idx[i]]);
        seen[idx[i]] = 1;
    }
    /* a configuration that is not in the space leaves nothing out */
    int64_t bad[5] = {8, 64, 1, 1, 0};
    CHECK(task_space_find(&s, bad) < 0);
    CHECK(task_space_sample(&s, &rng, bad, 60, idx) == s.count);
    CHECK(task_space_sample(&s, &rng, NULL, 5, idx) == 5);
    task_space_free(&s);
    task_free(&t);
}

static void test_attention(void)
{
    DeviceInfo dev;
    EvoErr err;
    TaskSpace s;
    Task *t = load("templates/attention/task.json", &dev);
    if (!t)
        return;
    int np = task_nparams(t);
    double t0 = time_now_ms();
    int rc = task_space_enumerate(t, &dev, 0, &s, &err);
    double ms = time_now_ms() - t0;
    CHECK_MSG(rc == 0, "rc %d: %s", rc, rc < 0 ? err.msg : "too large");
    printf("     attention on sm_90: %zu valid of %.0f, %llu nodes, %.0f ms\n", s.count, task_space_size(t),
           (unsigned long long)s.nodes, ms);
    CHECK(s.count > 1000 && s.nodes < TASK_SPACE_MAX_NODES);
    size_t invalid = 0;
    for (size_t i = 0; i < s.count; i++)
        invalid += task_check(t, task_space_config(&s, i), &dev, NULL, &err) != 1;
    CHECK_MSG(invalid == 0, "%zu enumerated configurations fail task_check", invalid);

    /* 200 distinct, valid, not the default, the same for the same seed */
    int64_t *def = xcalloc((size_t)np, sizeof(int64_t));
    task_defaults(t, def);
    CHECK(task_space_find(&s, def) >= 0);
    size_t a[200], b[200];
    Rng r1, r2;
    rng_seed(&r1, 6);
    rng_seed(&r2, 6);
    CHECK(task_space_sample(&s, &r1, def, 200, a) == 200);
    CHECK(task_space_sample(&s, &r2, def, 200, b) == 200);
    CHECK(memcmp(a, b, sizeof(a)) == 0);
    cmp_np = np;
    int64_t *picked = xcalloc(200 * (size_t)np, sizeof(int64_t));
    for (int i = 0; i < 200; i++) {
        const int64_t *v = task_space_config(&s, a[i]);
        memcpy(picked + (size_t)i * (size_t)np, v, (size_t)np * sizeof(int64_t));
        CHECK(task_check(t, v, &dev, NULL, &err) == 1);
        CHECK(memcmp(v, def, (size_t)np * sizeof(int64_t)) != 0);
    }
    qsort(picked, 200, (size_t)np * sizeof(int64_t), cmp_config);
    int dup = 0;
    for (int i = 1; i < 200; i++)
        dup += cmp_config(picked + (size_t)(i - 1) * (size_t)np, picked + (size_t)i * (size_t)np) == 0;
    CHECK(dup == 0);

    /* no duplicates in the whole space, and every valid configuration that
     * random draws find is in it */
    qsort(s.vals, s.count, (size_t)np * sizeof(int64_t), cmp_config);
    dup = 0;
    for (size_t i = 1; i < s.count; i++)
        dup += cmp_config(task_space_config(&s, i - 1), task_space_config(&s, i)) == 0;
    CHECK(dup == 0);
    Rng rng;
    rng_seed(&rng, 11);
    /* about 6e-7 of the draws are valid: draw until one is (at most 20M draws, about 4 us each) */
    int hits = 0, missing = 0, draws = 0;
    for (int k = 0; k < 20000000 && hits < 1; k++, draws++) {
        ops_random(t, &rng, def);
        if (task_check(t, def, &dev, NULL, &err) != 1)
            continue;
        hits++;
        missing += bsearch(def, s.vals, s.count, (size_t)np * sizeof(int64_t), cmp_config) == NULL;
    }
    printf("     %d random draws: %d valid, %d not enumerated\n", draws, hits, missing);
    CHECK(hits > 0 && missing == 0);
    free(picked);
    free(def);
    task_space_free(&s);
    task_free(&t);
}

/* space_index_near against a plain count over the value indices, packed
 * and unpacked, for random queries (some holding a value that is none of
 * its param's) over a stride of the attention space. */
static void test_near(void)
{
    DeviceInfo dev;
    EvoErr err;
    TaskSpace s;
    Task *t = load_enumerated("templates/attention/task.json", &dev, &s);
    if (!t)
        return;
    SpaceIndex *packed = NULL, *plain = NULL;
    CHECK(space_index_build(&packed, t, &s, 0, &err) == 0);
    CHECK(space_index_build(&plain, t, &s, SPACE_INDEX_UNPACKED, &err) == 0);
    int np = task_nparams(t), *at = xcalloc((size_t)np, sizeof(int));
    unsigned char *fix = xcalloc((size_t)np, 1);
    Rng rng;
    rng_seed(&rng, 5);
    long checked = 0, near = 0, wrong = 0;
    for (int qn = 0; qn < 300 && packed && plain; qn++) {
        /* a configuration of the space with a few params moved */
        const uint16_t *base = space_index_vidx(packed, (size_t)rng_below(&rng, s.count));
        for (int i = 0; i < np; i++) {
            at[i] = base[i];
            if (rng_below(&rng, 6) == 0)
                at[i] = (int)rng_below(&rng, (uint64_t)task_param_nvalues(t, i));
            if (rng_below(&rng, 150) == 0)
                at[i] = -1;
            fix[i] = rng_below(&rng, 8) == 0;
        }
        SpaceNear qp, qu;
        space_index_near_init(packed, at, fix, &qp);
        space_index_near_init(plain, at, fix, &qu);
        int maxd = (int)rng_below(&rng, 6);
        for (size_t k = (size_t)qn; k < s.count; k += 97) {
            const uint16_t *vi = space_index_vidx(packed, k);
            int d = 0, off = 0;
            for (int i = 0; i < np; i++)
                if (at[i] < 0 || vi[i] != at[i]) {
                    off |= fix[i];
                    d++;
                }
            int want = off || d > maxd ? -1 : d;
            int a = space_index_near(packed, &qp, k, maxd), b = space_index_near(plain, &qu, k, maxd);
            wrong += a != want || b != want;
            near += want >= 0;
            checked++;
        }
    }
    printf("     space_index_near: %ld checks, %ld within reach, %ld wrong\n", checked, near, wrong);
    CHECK(wrong == 0 && near > 100 && checked > 100000);
    free(at);
    free(fix);
    space_index_free(&packed);
    space_index_free(&plain);
    task_space_free(&s);
    task_free(&t);
}

static void test_budget(void)
{
    /* a tiny budget on the small spec (it needs 127 nodes) */
    DeviceInfo dev;
    EvoErr err;
    TaskSpace s;
    Task *t = load("tests/data/space_task.json", &dev);
    CHECK(t && task_space_enumerate(t, &dev, 100, &s, &err) == TASK_SPACE_TOO_LARGE);
    CHECK(s.vals == NULL && s.count == 0 && s.nodes == 101);
    CHECK(t && task_space_enumerate(t, &dev, 127, &s, &err) == 0 && s.count == 56);
    task_space_free(&s);
    task_free(&t);
    /* the default budget on a space whose one constraint reads every param */
    t = load("tests/data/space_large.json", &dev);
    CHECK(t && task_space_enumerate(t, &dev, 0, &s, &err) == TASK_SPACE_TOO_LARGE);
    CHECK(s.vals == NULL && s.count == 0 && s.nodes == TASK_SPACE_MAX_NODES + 1);
    /* a stop already set ends it at the first check (1024 nodes), empty */
    int stop = 1;
    CHECK(t && task_space_enumerate_stop(t, &dev, 0, &stop, &s, &err) == TASK_SPACE_TOO_LARGE);
    CHECK(s.vals == NULL && s.count == 0 && s.nodes == 1024);
    stop = 0;
    CHECK(t && task_space_enumerate_stop(t, &dev, 5000, &stop, &s, &err) == TASK_SPACE_TOO_LARGE && s.nodes == 5001);
    task_free(&t);
    t = load("tests/data/space_task.json", &dev);
    CHECK(t && task_space_enumerate_stop(t, &dev, 0, &stop, &s, &err) == 0 && s.count == 56);
    task_space_free(&s);
    task_free(&t);
}

static void test_eval_error(void)
{
    /* a derived value that divides by zero on a reachable branch (A = 2) */
    char *path = source_path("tests/data/space_task.json"), *text = NULL;
    size_t len = 0;
    EvoErr err;
    DeviceInfo dev;
    TaskSpace s;
    Task *t = NULL;
    CHECK(device_profile("sm_90", &dev, &err) == 0);
    CHECK(file_read(path, &text, &len, &err) == 0);
    char *at = text ? strstr(text, "\"N / A\"") : NULL;
    CHECK(at != NULL);
    if (at) {
        char *bad = xasprintf("%.*s\"N / (A - 2)\"%s", (int)(at - text), text, at + 7);
        if (task_load_text(bad, strlen(bad), path, &t, &err) < 0)
            CHECK_MSG(0, "%s", err.msg);
        free(bad);
    }
    if (t) {
        CHECK(task_space_enumerate(t, &dev, 0, &s, &err) == -1);
        CHECK_CONTAINS(err.msg, "derived.TILE: column 3: division by zero");
        CHECK(s.vals == NULL && s.count == 0);
    }
    task_free(&t);
    free(text);
    free(path);
}

int main(void)
{
    RUN(test_brute_force);
    RUN(test_shape_groups);
    RUN(test_sample_small);
    RUN(test_attention);
    RUN(test_near);
    RUN(test_budget);
    RUN(test_eval_error);
    return test_report();
}

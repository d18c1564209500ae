/*
 * libFuzzer target for task: load arbitrary bytes as a task spec (from
 * tests/data, so that good.cu and good_ref.cu resolve when the fuzzer keeps
 * the file names), and when it loads, check, resolve, render and print the
 * default configuration. Must never crash, leak or hit undefined behaviour.
 * Build: `ninja -C build tests/fuzz_task`; run from the source root:
 * `build/tests/fuzz_task -max_total_time=60 corpus tests/data`.
 */
#include <stdint.h>
#include <stdlib.h>

#include "task/task.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    Task *t = NULL;
    EvoErr err;
    DeviceInfo dev;
    if (size > 65536 || device_profile("sm_90", &dev, &err) < 0)
        return 0;
    if (task_load_text((const char *)data, size, "tests/data/fuzz.json", &t, &err) < 0)
        return 0;
    int64_t *vals = calloc((size_t)task_nparams(t) + 1, sizeof(int64_t));
    char *why = NULL, *s = NULL;
    task_defaults(t, vals);
    (void)task_check(t, vals, &dev, &why, &err);
    free(why);
    for (int sh = 0; sh < task_nshapes(t); sh++) {
        Plan p = {0};
        (void)task_resolve(t, vals, sh, &dev, &p, &err);
        plan_free(&p);
        if (task_render(t, vals, sh, 0, &s, &err) == 0)
            free(s);
        free(task_shape_label(t, sh));
    }
    s = task_params_json(t, vals);
    (void)task_params_parse(t, s, vals, &err);
    free(s);
    free(vals);
    task_free(&t);
    return 0;
}

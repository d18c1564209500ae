/*
 * libFuzzer target for expr: parse arbitrary bytes, and when they parse,
 * evaluate with a fixed variable table, explain, and walk the variables.
 * Must never crash, leak or hit undefined behaviour (built with ASan and
 * UBSan). Build: `ninja -C build tests/fuzz_expr` (meson option fuzz, needs
 * clang); run: `build/tests/fuzz_expr -max_total_time=60`.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "task/expr.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int lookup(void *ctx, const char *name, ExprValue *out)
{
    static const struct { const char *name; ExprValue v; } vars[] = {
        {"N", {0, 1000, 0}}, {"M", {0, -7, 0}}, {"Z", {0, 0, 0}}, {"BIG", {0, INT64_MAX, 0}},
        {"SMALL", {0, INT64_MIN, 0}}, {"H", {1, 0, 0.5}}, {"HUGE", {1, 0, 1e308}},
    };
    (void)ctx;
    for (size_t i = 0; i < sizeof(vars) / sizeof(vars[0]); i++)
        if (strcmp(vars[i].name, name) == 0) {
            *out = vars[i].v;
            return 1;
        }
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size > 4096)
        return 0;
    char *text = malloc(size + 1);
    memcpy(text, data, size);
    text[size] = 0;
    Expr *e = NULL;
    EvoErr err;
    if (expr_parse(text, &e, &err) == 0) {
        ExprValue v;
        char buf[64];
        if (expr_eval(e, lookup, NULL, &v, &err) == 0)
            expr_value_str(v, buf, sizeof(buf));
        free(expr_explain(e, lookup, NULL));
        const char *names[8];
        int n = 0;
        for (int i = 0; i < expr_nvars(e) && n < 8; i++)
            names[n++] = expr_var(e, i, NULL);
        if (n)
            (void)expr_closest(names[0], names, n);
        (void)expr_is_var(e, NULL);
        expr_free(&e);
    }
    free(text);
    return 0;
}

/*
 * libFuzzer target for canon: arbitrary bytes as a source (an LLM's or a
 * user's kernel reaches canon_source before NVRTC does), with a fixed
 * table of predefined names. Must never crash, leak, hit undefined
 * behaviour or hang (built with ASan and UBSan); when it gives a text, the
 * text keeps the source's lines. Build: `ninja -C build tests/fuzz_canon`
 * (meson option fuzz, needs clang); run: `bench/fuzz.sh 60 fuzz_canon`.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "compile/canon.h"
#include "util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int lookup(void *ctx, const char *name, int *defined, int *has_value, long long *value)
{
    (void)ctx;
    if (strcmp(name, "MYSTERY") == 0)
        return -1;
    *defined = strcmp(name, "__CUDA_ARCH__") == 0 || strcmp(name, "__CUDA_ARCH_FEAT_SM90_ALL") == 0;
    *has_value = strcmp(name, "__CUDA_ARCH__") == 0;
    *value = 900;
    return 0;
}

static size_t lines(const char *s)
{
    size_t n = 0;
    for (; *s; s++)
        n += *s == '\n';
    return n;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size > 65536)
        return 0;
    char *src = xstrndup((const char *)data, size);   /* up to a NUL byte, if any */
    char *text = canon_source(src, lookup, NULL);
    if (text && lines(text) < lines(src))
        abort();   /* a line went missing: line numbers would move */
    free(text);
    free(src);
    return 0;
}

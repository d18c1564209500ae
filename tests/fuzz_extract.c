/*
 * libFuzzer target for the LLM reply extractor (src/llm/extract.c): the reply
 * is whatever a model, a proxy or a stub sends back. Arbitrary bytes as a
 * reply (NUL-terminated), with the entry points the attention task asks
 * for, every rationale bound; then extract_has_entry on the result and on
 * the raw bytes. Must never crash, leak or hit undefined behaviour.
 * Build with meson (clang found or -Dfuzz=enabled); run through
 * `bench/fuzz.sh SECONDS` or `build/tests/fuzz_extract -max_total_time=60`.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "llm/extract.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const char *const entries[] = {"attn_fwd", "attn_combine", "k"};
    static const size_t bounds[] = {0, 1, 7, 2000};
    if (size > (1 << 20))
        return 0;
    char *reply = malloc(size + 1);
    if (!reply)
        return 0;
    memcpy(reply, data, size);
    reply[size] = '\0';
    for (size_t b = 0; b < sizeof(bounds) / sizeof(bounds[0]); b++) {
        Extracted x;
        EvoErr err;
        memset(&x, 0, sizeof(x));
        int n = (int)(size % 4);   /* 0..3 entry points */
        (void)extract_reply(reply, entries, n, bounds[b], &x, &err);
        if (x.code)
            (void)extract_has_entry(x.code, entries[0]);
        (void)extract_status_name(x.status);
        extract_free(&x);
    }
    (void)extract_has_entry(reply, "k");
    free(reply);
    return 0;
}

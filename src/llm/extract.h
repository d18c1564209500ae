/*
 * extract: take an LLM's answer apart. Finds the proposed kernel (a fenced
 * code block), the rationale (the prose around it, trimmed to a bound),
 * and checks that the kernel still defines every required entry point
 * (`extern "C" __global__ void NAME(`) and carries no host program.
 *
 * Which block is the kernel: every fenced block (``` or ~~~ fence, up to
 * three spaces of indentation) tagged cuda, cu, cuh, c++, cpp, cxx, cc, c
 * or untagged is a candidate; blocks tagged otherwise (python, json, text,
 * sh, ...) are not. Among candidates, one that defines all entry points
 * wins over one that does not, then the larger wins, then the earlier.
 * A fence left open at the end of the reply (a truncated answer) is not a
 * block: the reply is rejected as "no_code" with a message saying so.
 *
 * Host code: a candidate that defines `main(` is rejected (status
 * host_code). NVRTC would build only its device part anyway, but such an
 * answer ignored the rules ("no host code"), so its kernel is not trusted
 * and a compile is not wasted on it. Other host-looking text (cudaMalloc,
 * <<<...>>>) is left to NVRTC, which fails on it: device-side launches
 * exist, so those markers are not proof of host code.
 */
#ifndef EVO_EXTRACT_H
#define EVO_EXTRACT_H

#include <stddef.h>

#include "util.h"

typedef enum ExtractStatus {
    EXTRACT_OK = 0,
    EXTRACT_NO_CODE,        /* no usable fenced code block */
    EXTRACT_MISSING_ENTRY,  /* the kernel lacks a required entry point */
    EXTRACT_HOST_CODE       /* the kernel defines main() */
} ExtractStatus;

typedef struct Extracted {
    ExtractStatus status;
    char   *code;        /* the chosen block's text (owned), NULL when none */
    char   *lang;        /* its fence tag ("cuda", "" untagged), owned, NULL when none */
    char   *rationale;   /* the prose outside code blocks, trimmed, bounded; owned, never NULL after a call */
    int     nblocks;     /* fenced blocks seen (any tag) */
} Extracted;

/* Extract the kernel and rationale from reply (NUL-terminated text).
 * entries[0..nentries) are the entry points the kernel must define
 * (nentries may be 0). The rationale is cut to rationale_max bytes (0: no
 * bound) at a UTF-8 boundary, with " [...]" appended when cut.
 * Fills *out (caller frees with extract_free). Returns 0 when a kernel
 * with every entry point was found; else -1 with out->status saying why
 * and err saying it for people, e.g.
 *   no fenced code block in the reply (842 characters, starts "I think...")
 *   entry point 'attn_fwd' not found in the proposed kernel */
int extract_reply(const char *reply, const char *const *entries, int nentries,
                  size_t rationale_max, Extracted *out, EvoErr *err);

/* 1 when code defines NAME as an extern "C" __global__ function
 * (whitespace, __launch_bounds__(...), and `extern "C" { ... }` blocks
 * tolerated; comments ignored), else 0. */
int extract_has_entry(const char *code, const char *name);

/* Release what *x owns and zero it; safe on a zeroed struct. */
void extract_free(Extracted *x);

/* The status' name: "ok", "no_code", "missing_entry", "host_code". */
const char *extract_status_name(ExtractStatus s);

#endif

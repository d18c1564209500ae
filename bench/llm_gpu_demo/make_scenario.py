#!/usr/bin/env python3
"""Write the stub scenario of the GPU LLM demo from templates/attention/attention.cu
(with its parts attention_fa2.cuh, attention_ws.cuh and attention_ws_sync.cuh inlined, as evoeng does).

  python3 bench/llm_gpu_demo/make_scenario.py

Writes beside this script: scenario.json (scenario "demo", for
tests/llm_stub.py) and one reply_*.md per hand-written variant of the
attention kernel, each a complete answer (a ```cuda block and a rationale):

  reply_tile.md     the same kernel with another BLOCK_N default: the task's
                    #defines override it, so it times like its parent
                    (accepted, or reverted by noise)
  reply_bug.md      the softmax scale doubled: fails the correctness gate
  reply_compile.md  a misspelt identifier: compile_error
  reply_slow.md     forces STAGES 1 (no cp.async double buffering) and expf
                    instead of exp2 after the knob defaults: slower, reverted

Regenerate after attention.cu changes; the transformations check that the
text they edit is still there.
"""
import json
import os
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
SRC = os.path.join(ROOT, "templates", "attention", "attention.cu")


def must_replace(text, old, new, count=None):
    if old not in text:
        sys.exit("make_scenario.py: attention.cu no longer contains %r: update the variant" % old)
    return text.replace(old, new) if count is None else text.replace(old, new, count)


def must_sub(text, pattern, new):
    out, n = re.subn(pattern, new, text, count=1)
    if n == 0:
        sys.exit("make_scenario.py: attention.cu no longer matches %r: update the variant" % pattern)
    return out


def expand(path, stack=()):
    """The template as evoeng reads it (src/task/template.h, template_expand):
    each line `#include "NAME"` of a file NAME beside it replaced by
    `#line 1 "NAME"`, that file's text and `#line <next> "<file>"`."""
    d, name = os.path.split(path)
    out = []
    for n, line in enumerate(open(path).read().splitlines(keepends=True), 1):
        m = re.fullmatch(r'[ \t]*#[ \t]*include[ \t]*"([^"/\\\r]+)"[ \t\r]*\n?', line)
        if m and os.path.exists(os.path.join(d, m.group(1))) and m.group(1) not in stack:
            sub = expand(os.path.join(d, m.group(1)), stack + (name,))
            out.append('#line 1 "%s"\n%s%s#line %d "%s"\n' % (m.group(1), sub, "" if sub.endswith("\n") else "\n",
                                                              n + 1, name))
        else:
            out.append(line)
    return "".join(out)


def answer(code, rationale):
    return "Here is an improved kernel.\n\n```cuda\n%s```\n\n%s\n" % (code if code.endswith("\n") else code + "\n",
                                                                     rationale)


def main():
    base = expand(SRC)
    variants = {}
    variants["reply_tile.md"] = answer(
        must_sub(base, r"#ifndef BLOCK_N\n#define BLOCK_N \d+", "#ifndef BLOCK_N\n#define BLOCK_N 32  /* demo: new default */"),
        "Demo variant: another default KV tile. The tuner's #defines override defaults, "
        "so this times like its parent.")
    variants["reply_bug.md"] = answer(
        must_replace(base, "const float sl = scale", "const float sl = 2.0f * scale"),
        "Demo variant with a deliberate bug: the softmax scale is doubled, so the gate must reject it.")
    variants["reply_compile.md"] = answer(
        must_replace(base, "const float sl = scale", "const float sl = scael"),
        "Demo variant with a deliberate typo: NVRTC must reject it (compile_error).")
    exp2_guard = "#ifndef EXP2\n#define EXP2 1\n#endif\n"   # after the STAGES guard
    variants["reply_slow.md"] = answer(
        must_replace(base, exp2_guard,
                     exp2_guard + "/* demo: force a single-stage pipeline and expf, whatever the tuner says */\n"
                     "#undef STAGES\n#define STAGES 1\n#undef EXP2\n#define EXP2 0\n", 1),
        "Demo variant: no double buffering and expf instead of exp2; it should be slower and reverted. "
        "(STAGES 1 needs less shared memory than the launch plan allocates, so it stays safe.)")
    order = ["reply_tile.md", "reply_bug.md", "reply_compile.md", "reply_slow.md"]
    for name in order:
        with open(os.path.join(HERE, name), "w") as f:
            f.write(variants[name])
    scenario = {"demo": [{"text_file": name} for name in order]}
    with open(os.path.join(HERE, "scenario.json"), "w") as f:
        json.dump(scenario, f, indent=1)
        f.write("\n")
    print("wrote %s and %d replies" % (os.path.join(HERE, "scenario.json"), len(order)))


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""check_layout: the layout rules of src/ (CONTRIBUTING.md, "Source layout").

Usage: check_layout.py [SRC_DIR]      (default: src/ beside this tests/ folder)
       check_layout.py --layout [SRC_DIR]   print folder -> files -> lines

Reads every src/**/*.{c,h}, parses its `#include "..."` lines and its
column-0 function definitions and declarations, and prints one line per
offence, then a count of each kind; exits 1 when there is any.

Definitions:
- A *stage* is a folder directly under src/ (a deeper folder belongs to
  the stage it is in). The stages, lowest first (a stage may use the ones
  before it, never the ones after it):
      task store compile llm search gpu mpi report export cli
  The top of src/ holds only main.c (above every stage) and util, msg and
  device (below every stage), with the generated config.h.
- A *module* is a .c file and the .h file of the same path (src/gpu/gate.c
  and src/gpu/gate.h are the module gpu/gate); a file without its twin is
  a module alone.
- Module A *uses* module B (an edge A -> B) when a file of A includes a
  header of B, or when A calls a function (or names a variable) that a
  header A's files reach through their includes declares and that B's .c
  defines (so a header that declares the functions of several files, such
  as a folder's shared "internal" header, ties each includer to the files
  whose functions it calls, not to the header alone).

Offences:
  circle   a strongly connected component of more than one module in the
           graph of uses (every edge inside it is listed);
  climb    a file includes a header of a stage after its own in the order
           above, or a top-level header other than util.h, msg.h,
           device.h and config.h; util, msg and device include only each
           other;
  style    an include not written as its path under src/ ("gpu/gate.h",
           "util.h"), or one that names no file of src/;
  place    a .c or .h file at the top of src/ other than main.c, util,
           msg and device, or in a folder that is not a stage;
  size     a file of more than 800 lines;
  length   a function of more than 120 lines, counted from the line of its
           opening brace at column 0 to that of its closing brace at
           column 0, both included.
"""
import os
import re
import sys

STAGES = ["task", "store", "compile", "llm", "search", "gpu", "mpi", "report", "export", "cli"]
TOP_LOW = {"util", "msg", "device"}        # top-level modules below every stage
TOP_ALLOWED = {"main.c", "util.c", "util.h", "msg.c", "msg.h", "device.c", "device.h"}
TOP_HEADERS = {"util.h", "msg.h", "device.h", "config.h"}
GENERATED = {"config.h"}
MAX_FILE_LINES = 800
MAX_FUNC_LINES = 120

INCLUDE_RE = re.compile(r'^\s*#\s*include\s+"([^"]+)"')
IDENT_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
KEYWORDS = {"if", "for", "while", "switch", "return", "sizeof", "typedef", "struct", "enum", "union"}


def strip_code(text):
    """text without comments, string and character literals (newlines kept)."""
    out = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append("\n" * text.count("\n", i, j))
            i = j
        elif text.startswith("//", i):
            j = text.find("\n", i)
            i = n if j < 0 else j
        elif c in "\"'":
            j = i + 1
            while j < n and text[j] != c and text[j] != "\n":
                j += 2 if text[j] == "\\" else 1
            out.append(" ")
            i = j + 1
        else:
            out.append(c)
            i += 1
    return "".join(out)


class SrcFile:
    def __init__(self, root, rel):
        self.rel = rel                       # path under src/, "gpu/gate.c"
        with open(os.path.join(root, rel), encoding="utf-8", errors="replace") as f:
            self.text = f.read()
        self.lines = self.text.split("\n")
        if self.lines and self.lines[-1] == "":
            self.lines.pop()
        self.code = strip_code(self.text).split("\n")
        self.includes = []                   # (line number, name as written)
        for k, line in enumerate(self.lines):
            m = INCLUDE_RE.match(line)
            if m and self.code[k].lstrip().startswith("#"):
                self.includes.append((k + 1, m.group(1)))
        self.idents = set(IDENT_RE.findall("\n".join(l for l in self.code if not l.lstrip().startswith("#"))))
        self.defined, self.funcs = self._definitions()
        self.declared = self._declarations() if rel.endswith(".h") else set()

    @property
    def module(self):
        return os.path.splitext(self.rel)[0]

    @property
    def stage(self):
        return self.rel.split("/")[0] if "/" in self.rel else None

    def _statement_before(self, k):
        """The column-0 statement that ends at line k-1 (the text before a
        `{` at column 0 on line k), joined."""
        j = k - 1
        parts = []
        while j >= 0:
            line = self.code[j]
            if not line.strip() or line.startswith("#") or line.rstrip().endswith((";", "}")):
                break
            parts.insert(0, line.strip())
            if line[:1] not in (" ", "\t", ""):
                break
            j -= 1
        return " ".join(parts)

    def _definitions(self):
        """Exported names defined here, and every function as (name, first
        line, last line) from its braces at column 0."""
        exported, funcs = set(), []
        k, n = 0, len(self.code)
        while k < n:
            line = self.code[k]
            if line.startswith("{"):
                head = self._statement_before(k)
                close = k + 1
                while close < n and not self.code[close].startswith("}"):
                    close += 1
                m = re.search(r"([A-Za-z_]\w*)\s*\(", head)
                if m and "=" not in head[:m.start()] and not head.startswith(("typedef", "struct", "enum")):
                    funcs.append((m.group(1), k + 1, close + 1))
                    if not re.match(r"(static|inline)\b", head):
                        exported.add(m.group(1))
                k = close + 1
                continue
            # a variable defined at file scope: `const EvaluatorOps gpueval_ops = {`
            m = re.match(r"(?!static\b|typedef\b|extern\b)[A-Za-z_][\w\s\*]*?\b([A-Za-z_]\w*)\s*(\[[^\]]*\])?\s*=", line)
            if m and not line.startswith((" ", "\t", "#")):
                exported.add(m.group(1))
            k += 1
        return exported, funcs

    def _declarations(self):
        """Functions and variables a header declares (column-0 statements)."""
        names = set()
        stmt = []
        depth = 0
        for line in self.code:
            if depth == 0 and not stmt and (not line[:1].strip() or line.startswith(("#", "}"))):
                depth += line.count("{") - line.count("}")
                continue
            if depth > 0:
                depth += line.count("{") - line.count("}")
                continue
            stmt.append(line.strip())
            joined = " ".join(stmt)
            if "{" in joined and ";" not in joined.split("{")[0]:
                depth = joined.count("{") - joined.count("}")
                stmt = []
                continue
            if joined.endswith(";"):
                stmt = []
                if joined.startswith(("typedef", "struct", "enum", "union")):
                    continue
                m = re.search(r"([A-Za-z_]\w*)\s*\(", joined)
                if m and m.group(1) not in KEYWORDS and "(*" not in joined[:m.end() + 1]:
                    names.add(m.group(1))
                elif joined.startswith("extern"):
                    v = re.search(r"([A-Za-z_]\w*)\s*(\[[^\]]*\])?\s*;$", joined)
                    if v:
                        names.add(v.group(1))
        return names


def load(root):
    files = {}
    for dirpath, _dirs, names in os.walk(root):
        for name in sorted(names):
            if name.endswith((".c", ".h")):
                rel = os.path.relpath(os.path.join(dirpath, name), root).replace(os.sep, "/")
                files[rel] = SrcFile(root, rel)
    return files


def resolve(files, f, name):
    """(the file name refers to, or None; 1 when written as its path under src/)."""
    if name in files:
        return name, 1
    if name in GENERATED:
        return None, 1
    here = os.path.normpath(os.path.join(os.path.dirname(f.rel), name)).replace(os.sep, "/")
    if here in files:
        return here, 0
    same = [r for r in files if r.endswith("/" + name)]
    return (same[0], 0) if len(same) == 1 else (None, 0)


def stage_rank(stage):
    return STAGES.index(stage) if stage in STAGES else None


def climb(f, target):
    """Why including target (a path under src/) from f climbs, or None."""
    src_stage, dst_stage = f.stage, target.split("/")[0] if "/" in target else None
    if dst_stage is None:
        if target in TOP_HEADERS:
            return None if (src_stage or f.module in TOP_LOW or f.module == "main") else None
        return None if f.rel == "main.c" else "a top-level header other than util.h, msg.h, device.h, config.h"
    if src_stage is None:
        return None if f.rel == "main.c" else "util, msg and device include no stage"
    a, b = stage_rank(src_stage), stage_rank(dst_stage)
    if a is None or b is None or b <= a:
        return None
    return "stage %s is after %s" % (dst_stage, src_stage)


def modules(files):
    """path under src/ -> module name: the stem of a .c/.h pair, joined by
    the .c files that define functions its header declares."""
    definer = {}
    for f in files.values():
        if f.rel.endswith(".c"):
            for name in f.defined:
                definer.setdefault(name, f.rel)
    parent = {f.module: f.module for f in files.values()}

    def find(x):
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    for f in files.values():
        if f.rel.endswith(".h") and f.module + ".c" in files:
            for name in f.declared:
                c = definer.get(name)
                if c and files[c].module != f.module:
                    a, b = find(files[c].module), find(f.module)
                    if a != b:
                        parent[a] = b
    members = {}
    for m in parent:
        members.setdefault(find(m), []).append(m)
    name = {r: "+".join(sorted(ms, key=lambda m: (m != r, m))) for r, ms in members.items()}
    return {rel: name[find(f.module)] for rel, f in files.items()}, definer


def graph(files):
    """module -> {module: [reason, ...]}. A header without a .c of its own
    (a folder's shared header) is no module: its includes count as its
    includer's."""
    mod, definer = modules(files)
    lone = {rel for rel in files if rel.endswith(".h") and rel[:-2] + ".c" not in files}
    fs_of = {}
    for rel in files:
        if rel not in lone:
            fs_of.setdefault(mod[rel], []).append(files[rel])
    direct = {rel: [resolve(files, f, n)[0] for _k, n in f.includes] for rel, f in files.items()}
    edges = {m: {} for m in fs_of}
    for m, fs in fs_of.items():
        seen = set()
        todo = [(t, f.rel, 1) for f in fs for t in direct[f.rel] if t]
        while todo:
            t, via, near = todo.pop()
            if (t, near) in seen or (t, 1) in seen:
                continue
            seen.add((t, near))
            if t in lone:   # its includes are its includer's
                todo.extend((u, "%s (through %s)" % (via, t), near) for u in direct[t] if u)
                continue
            if near and mod[t] != m:
                edges[m].setdefault(mod[t], []).append("%s includes %s" % (via, t))
            todo.extend((u, "", 0) for u in direct[t] if u)
        seen = {t for t, _near in seen}
        used = set().union(*(f.idents for f in fs))
        for h in sorted(seen):
            for name in sorted(files[h].declared & used):
                c = definer.get(name)
                if c and mod[c] != m:
                    edges[m].setdefault(mod[c], []).append("%s calls %s() of %s (declared in %s)"
                                                           % (m, name, c, h))
    return edges


def sccs(edges):
    """Tarjan's strongly connected components (iterative)."""
    index, low, on, stack, out = {}, {}, set(), [], []
    counter = [0]
    for root in sorted(edges):
        if root in index:
            continue
        work = [(root, iter(sorted(edges[root])))]
        index[root] = low[root] = counter[0]
        counter[0] += 1
        stack.append(root)
        on.add(root)
        while work:
            v, it = work[-1]
            w = next(it, None)
            if w is None:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[v])
                if low[v] == index[v]:
                    comp = []
                    while True:
                        x = stack.pop()
                        on.discard(x)
                        comp.append(x)
                        if x == v:
                            break
                    out.append(sorted(comp))
            elif w not in index:
                index[w] = low[w] = counter[0]
                counter[0] += 1
                stack.append(w)
                on.add(w)
                work.append((w, iter(sorted(edges.get(w, {})))))
            elif w in on:
                low[v] = min(low[v], index[w])
    return out


def check(files):
    offences = {k: [] for k in ("circle", "climb", "style", "place", "size", "length")}
    for rel, f in sorted(files.items()):
        if f.stage is None and rel not in TOP_ALLOWED:
            offences["place"].append("%s: at the top of src/ (only main.c, util, msg, device)" % rel)
        elif f.stage is not None and f.stage not in STAGES:
            offences["place"].append("%s: folder %s is not a stage (%s)" % (rel, f.stage, " ".join(STAGES)))
        if len(f.lines) > MAX_FILE_LINES:
            offences["size"].append("%s: %d lines (at most %d)" % (rel, len(f.lines), MAX_FILE_LINES))
        for name, a, b in f.funcs:
            if b - a + 1 > MAX_FUNC_LINES:
                offences["length"].append("%s:%d: %s() is %d lines (at most %d)" % (rel, a, name, b - a + 1,
                                                                                    MAX_FUNC_LINES))
        for k, name in f.includes:
            target, exact = resolve(files, f, name)
            if target is None and name not in GENERATED:
                offences["style"].append('%s:%d: #include "%s" names no file of src/' % (rel, k, name))
                continue
            if not exact:
                offences["style"].append('%s:%d: #include "%s": write it "%s"' % (rel, k, name, target))
            why = climb(f, target) if target else None
            if why:
                offences["climb"].append('%s:%d: #include "%s": %s' % (rel, k, name, why))
    edges = graph(files)
    for comp in sccs(edges):
        if len(comp) < 2:
            continue
        inside = ["    %s -> %s: %s" % (a, b, "; ".join(edges[a][b][:3]))
                  for a in comp for b in sorted(edges[a]) if b in comp]
        offences["circle"].append("circle of %d modules: %s\n%s" % (len(comp), " ".join(comp), "\n".join(inside)))
    return offences


def layout(files):
    by = {}
    for rel, f in files.items():
        by.setdefault(os.path.dirname(rel) or ".", []).append((rel, len(f.lines)))
    total = 0
    for d in sorted(by):
        fs = sorted(by[d])
        n = sum(x for _r, x in fs)
        total += n
        print("src/%s/  %d files, %d lines" % ("" if d == "." else d, len(fs), n) if d != "."
              else "src/  %d files, %d lines" % (len(fs), n))
        print("    " + ", ".join("%s %d" % (os.path.basename(r), x) for r, x in fs))
    print("total: %d files, %d lines" % (len(files), total))


def main(argv):
    args = [a for a in argv[1:] if not a.startswith("--")]
    root = args[0] if args else os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "src")
    files = load(root)
    if "--layout" in argv:
        layout(files)
        return 0
    offences = check(files)
    bad = 0
    for kind, items in offences.items():
        for item in items:
            print("%s: %s" % (kind, item))
        bad += len(items)
    print("check_layout: %d files; %s" % (len(files), ", ".join("%d %s" % (len(v), k) for k, v in offences.items())))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))

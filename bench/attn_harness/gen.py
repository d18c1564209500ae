#!/usr/bin/env python3
"""gen.py -- configuration space tool for templates/attention (evoeng).

Reads a task.json, evaluates its derived values and constraints with the
same expression rules as evoeng (ints, floats, + - * / %, comparisons,
&& || !, min max ceil_div sqrt; integer / truncates toward zero) on every
shape, with Hopper (H100/H200) device facts, and:

  gen.py TASK count                 valid-space size and rejections per constraint
  gen.py TASK sample N [SEED]       default config + N random valid configs (uniform
                                    over the valid space by rejection sampling), one
                                    "NAME=VALUE ..." line each (harness input)
  gen.py TASK all                   every valid config
  gen.py TASK shapes                "B H S D CAUSAL" per shape, benchmark first
  gen.py TASK nvcc N [SEED] [D]     compile N sampled configs here with nvcc
                                    -Xptxas -v at dim D (default 128, the worst
                                    case): registers and spill bytes
"""
import functools, itertools, json, math, os, random, re, subprocess, sys, tempfile

DEVICE = {"SM_COUNT": 132, "SMEM_PER_BLOCK": 49152, "SMEM_PER_BLOCK_OPTIN": 232448,
          "SMEM_PER_SM": 233472, "MAX_THREADS": 1024, "MAX_THREADS_PER_SM": 2048,
          "REGS_PER_BLOCK": 65536, "REGS_PER_SM": 65536, "MAX_BLOCKS_PER_SM": 32,
          "CC_MAJOR": 9, "CC_MINOR": 0, "CC": 90, "L2_BYTES": 52428800, "WARP_SIZE": 32}

TOK = re.compile(r"\s*(\d+\.\d*(?:[eE][-+]?\d+)?|\d+(?:[eE][-+]?\d+)?|[A-Za-z_]\w*|&&|\|\||<=|>=|==|!=|[-+*/%()<>!,])")


@functools.lru_cache(maxsize=None)
def tokenize(s):
    out, pos = [], 0
    s = s.strip()
    while pos < len(s):
        m = TOK.match(s, pos)
        if not m:
            raise ValueError(f"bad expression at {s[pos:]!r}")
        out.append(m.group(1))
        pos = m.end()
    return tuple(out)


class Expr:
    """Recursive-descent evaluator over a variable dict."""

    def __init__(self, text, env):
        self.t, self.i, self.env, self.text = list(tokenize(text)), 0, env, text

    def peek(self):
        return self.t[self.i] if self.i < len(self.t) else None

    def take(self, want=None):
        tok = self.peek()
        if want is not None and tok != want:
            raise ValueError(f"{self.text}: expected {want}, got {tok}")
        self.i += 1
        return tok

    def run(self):
        v = self.orx()
        if self.peek() is not None:
            raise ValueError(f"{self.text}: trailing {self.peek()}")
        return v

    def orx(self):
        v = self.andx()
        while self.peek() == "||":
            self.take()
            r = self.andx()
            v = int(bool(v) or bool(r))
        return v

    def andx(self):
        v = self.cmp()
        while self.peek() == "&&":
            self.take()
            r = self.cmp()
            v = int(bool(v) and bool(r))
        return v

    def cmp(self):
        v = self.add()
        ops = {"<": lambda a, b: a < b, "<=": lambda a, b: a <= b, ">": lambda a, b: a > b,
               ">=": lambda a, b: a >= b, "==": lambda a, b: a == b, "!=": lambda a, b: a != b}
        while self.peek() in ops:
            op = self.take()
            v = int(ops[op](v, self.add()))
        return v

    def add(self):
        v = self.mul()
        while self.peek() in ("+", "-"):
            op = self.take()
            r = self.mul()
            v = v + r if op == "+" else v - r
        return v

    def mul(self):
        v = self.unary()
        while self.peek() in ("*", "/", "%"):
            op = self.take()
            r = self.unary()
            if op == "*":
                v = v * r
            elif op == "/":
                if r == 0:
                    raise ZeroDivisionError(self.text)
                if isinstance(v, int) and isinstance(r, int):
                    q = abs(v) // abs(r)
                    v = q if (v >= 0) == (r >= 0) else -q
                else:
                    v = v / r
            else:
                v = int(math.fmod(v, r))
        return v

    def unary(self):
        tok = self.peek()
        if tok == "-":
            self.take()
            return -self.unary()
        if tok == "+":
            self.take()
            return self.unary()
        if tok == "!":
            self.take()
            return int(not self.unary())
        return self.atom()

    def atom(self):
        tok = self.take()
        if tok == "(":
            v = self.orx()
            self.take(")")
            return v
        if tok[0].isdigit():
            return float(tok) if ("." in tok or "e" in tok.lower()) else int(tok)
        if self.peek() == "(":
            self.take("(")
            args = [self.orx()]
            while self.peek() == ",":
                self.take()
                args.append(self.orx())
            self.take(")")
            if tok == "min":
                return min(args)
            if tok == "max":
                return max(args)
            if tok == "ceil_div":
                return -(-args[0] // args[1])
            if tok == "sqrt":
                return math.sqrt(args[0])
            raise ValueError(f"unknown function {tok}")
        if tok not in self.env:
            raise ValueError(f"{self.text}: unknown name {tok}")
        return self.env[tok]


def ev(text, env):
    return Expr(str(text), env).run()


def load(path):
    with open(path) as f:
        return json.load(f)


def shapes_of(task):
    out = [dict(task["dims"])]
    for s in task.get("shapes", []):
        d = dict(task["dims"])
        d.update(s)
        out.append(d)
    return out


def check(task, cfg, shapes):
    """Return None if cfg passes every constraint on every shape, else the why."""
    for sh in shapes:
        env = dict(DEVICE)
        env.update(sh)
        env.update(cfg)
        for name, e in task.get("derived", {}).items():
            env[name] = ev(e, env)
        for c in task.get("constraints", []):
            e = c["expr"] if isinstance(c, dict) else c
            if not ev(e, env):
                return e
    return None


def space(task):
    names = list(task["params"])
    vals = [task["params"][n]["values"] for n in names]
    for combo in itertools.product(*vals):
        yield dict(zip(names, combo))


def default(task):
    return {n: p["default"] for n, p in task["params"].items()}


def line(cfg):
    return " ".join(f"{k}={v}" for k, v in cfg.items())


def valid_list(task):
    sh = shapes_of(task)
    return [c for c in space(task) if check(task, c, sh) is None]


def cmd_count(task):
    sh = shapes_of(task)
    total, ok, why = 0, 0, {}
    for c in space(task):
        total += 1
        w = check(task, c, sh)
        if w is None:
            ok += 1
        else:
            why[w] = why.get(w, 0) + 1
    print(f"space {total}, valid {ok}")
    for w, n in sorted(why.items(), key=lambda x: -x[1]):
        print(f"  rejected {n:6d}  first failing: {w}")


def sample_valid(task, n, seed):
    """Up to n distinct valid configs, uniform over the valid space
    (rejection sampling: the full space is too large to enumerate fast)."""
    sh = shapes_of(task)
    rnd = random.Random(seed)
    names = list(task["params"])
    pick, seen, tries = [], set(), 0
    while len(pick) < n and tries < 200 * n + 1000:
        tries += 1
        c = {k: rnd.choice(task["params"][k]["values"]) for k in names}
        key = line(c)
        if key not in seen and check(task, c, sh) is None:
            seen.add(key)
            pick.append(c)
    return pick


def cmd_sample(task, n, seed):
    d = default(task)
    if check(task, d, shapes_of(task)) is not None:
        sys.exit("default config violates the constraints")
    out = [d] + [c for c in sample_valid(task, n, seed) if c != d]
    for c in out:
        print(line(c))


def cmd_nvcc(task, tdir, n, seed, dim_d):
    pick = [default(task)] + sample_valid(task, n, seed)
    src = os.path.join(tdir, task["template"])
    for c in pick:
        defs = [f"-D{k}={val}" for k, val in c.items()] + [f"-DD={dim_d}", "-DCAUSAL=1"]
        with tempfile.TemporaryDirectory() as td:
            r = subprocess.run(["/usr/local/cuda/bin/nvcc", "-arch=sm_90", "-std=c++17", "-c",
                                "-x", "cu", "-Xptxas", "-v", *defs, src, "-o", os.path.join(td, "a.o")],
                               capture_output=True, text=True)
        log = r.stderr
        m = re.search(r"attn_fwd.*?(\d+) bytes spill stores.*?Used (\d+) registers", log, re.S)
        env = dict(DEVICE); env.update(task["dims"]); env["D"] = dim_d; env.update(c)
        for name, e in task["derived"].items():
            env[name] = ev(e, env)
        if r.returncode != 0 or not m:
            print(f"FAIL {line(c)}\n{log[-2000:]}")
            continue
        print(f"regs {int(m.group(2)):3d} est {env['REG_EST']:3d} cap {env['REG_CAP']:3d} "
              f"spill {int(m.group(1)):4d}  {line(c)}", flush=True)


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    tpath = sys.argv[1]
    if os.path.isdir(tpath):
        tpath = os.path.join(tpath, "task.json")
    task = load(tpath)
    cmd = sys.argv[2]
    if cmd == "count":
        cmd_count(task)
    elif cmd == "sample":
        cmd_sample(task, int(sys.argv[3]), int(sys.argv[4]) if len(sys.argv) > 4 else 1)
    elif cmd == "all":
        for c in valid_list(task):
            print(line(c))
    elif cmd == "shapes":
        for s in shapes_of(task):
            print(s["B"], s["H"], s["S"], s["D"], s["CAUSAL"])
    elif cmd == "nvcc":
        cmd_nvcc(task, os.path.dirname(tpath), int(sys.argv[3]),
                 int(sys.argv[4]) if len(sys.argv) > 4 else 1,
                 int(sys.argv[5]) if len(sys.argv) > 5 else 128)
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""sdpa_table.py -- compare_sdpa.py's rows as a text table and as JSON:
short parameter and shape labels, an export's description, per-contender
times, errors and ratios."""

import math

from sdpa_export import DTYPE_BYTES, NVRTC_OPTIONS, arch_specific

CONTENDERS = ("evoeng", "flash", "cudnn", "flashkv")
LABELS = {"evoeng": "evoeng", "flash": "FA2", "cudnn": "cuDNN", "flashkv": "FAkv"}


def params_short(params):
    """{'BLOCK_M': 64, 'WARPS': 4} -> 'BLOCK_M=64 WARPS=4' (export order)."""
    return " ".join(f"{k}={v}" for k, v in params.items())


def shape_short(d):
    """'B4 H8 S512 D64'; with grouped heads or fewer queries 'B8 H32 HKV8 SQ1 S4096 D128'."""
    hkv = f" HKV{d['HKV']}" if d.get("HKV", d["H"]) != d["H"] else ""
    sq = f" SQ{d['SQ']}" if d.get("SQ", d["S"]) != d["S"] else ""
    return f"B{d['B']} H{d['H']}{hkv}{sq} S{d['S']} D{d['D']}"


def rate(r, c, key, unit):
    """r[key] (flops or bytes) / contender c's time in `unit`s a second, or None."""
    if not c or c["status"] != "ok" or not c.get("us") or not r.get(key):
        return None
    return r[key] / (c["us"] * 1e-6) / unit


def describe(exp):
    """Dry-run text: what would be allocated and launched."""
    lines = [f"{exp['path']}: candidate {exp['id']} (run {exp['run']}, task {exp['task']}, "
             f"exported on {exp['export_device']} {exp['export_arch']}, {exp['export_latency_us']} us there)",
             f"  shape {shape_short(exp['dims'])} causal={exp['dims']['CAUSAL']}  "
             f"flops {exp['flops']:.4g}  bytes {exp.get('bytes', 0):.4g}  params: {params_short(exp['params'])}"]
    for b in exp["buffers"]:
        n = max(b["count"], 1)
        init = ("randn or --profile's" if b["role"] == "input" else "NaN-poisoned" if b["role"] == "output" else "zeros")
        lines.append(f"  buffer {b['name']:<6} {b['dtype']:<4} x {b['count']:<10} ({b['role']}, {init}, "
                     f"{n * DTYPE_BYTES[b['dtype']]} bytes)")
    if arch_specific(exp):
        lines.append(f"  compile: NVRTC --gpu-architecture={exp['target']} {' '.join(NVRTC_OPTIONS)} "
                     "(the export's arch-specific target), loaded by cupy.RawModule(path=cubin)")
    else:
        lines.append(f"  compile: cupy.RawModule(options={NVRTC_OPTIONS}), arch from the device (sm_XY)")
    for i, l in enumerate(exp["launches"]):
        args = ", ".join(f"{k}:{v}" for a in l["args"] for k, v in a.items())
        extra = "  [sets max_dynamic_shared_size_bytes]" if l.get("smem", 0) > 48 * 1024 else ""
        lines.append(f"  launch {i + 1}: {l['entry']} grid {tuple(l['grid'])} block {tuple(l['block'])} "
                     f"smem {l.get('smem', 0)}  ({args}){extra}")
    for p in exp.get("profiles") or []:
        ins = ", ".join(f"{b} {i.get('dist')}" + (f" std {i['std']:g}" if "std" in i else "")
                        + (" rows scaled" if i.get("row_scale") else "") for b, i in (p.get("inputs") or {}).items())
        lines.append(f"  profile {p['name']}{'' if p.get('timing', True) else ' (gate only)'}: {ins}")
    for w in exp["warnings"]:
        lines.append(f"  warning: {w}")
    return "\n".join(lines)


# ---------------------------------------------------------------- output

def fmt_us(c):
    if c is None:
        return "n/a"
    if c["status"] == "ok" and c.get("us") is not None:
        return f"{c['us']:.2f}"
    return c["status"] if c["status"] in ("FAIL", "n/a") else "n/a"


def fmt_err(c):
    if c is None or c.get("max_abs_err") is None:
        return "-"
    e = c["max_abs_err"]
    return "nan" if isinstance(e, float) and math.isnan(e) else f"{e:.2e}"


def ratio(row, other):
    """other's time / evoeng's time (> 1: evoeng faster), or None."""
    e, o = row["contenders"].get("evoeng"), row["contenders"].get(other)
    if not e or not o or e.get("us") is None or o.get("us") is None or e["status"] != "ok" or o["status"] != "ok":
        return None
    return o["us"] / e["us"]


def table(rows):
    """The side-by-side table as text."""
    profiled = any(r.get("profile") for r in rows)
    others = CONTENDERS[1:]
    head = (["shape", "causal"] + (["profile"] if profiled else []) + [f"{LABELS[n]} us" for n in CONTENDERS]
            + [f"{LABELS[n]}/evo" for n in others] + ["evo TFLOP/s", "evo GB/s", "best GB/s", "gqa"]
            + [f"err {LABELS[n]}" for n in CONTENDERS] + ["export us", "params"])
    body = []
    for r in rows:
        c = r["contenders"]
        e = c.get("evoeng")
        tfl, gbs = rate(r, e, "flops", 1e12), rate(r, e, "bytes", 1e9)
        best = max((x for x in (rate(r, c.get(n), "bytes", 1e9) for n in others) if x), default=None)
        rts = [ratio(r, n) for n in others]
        xl = r.get("export_latency_us")
        body.append([shape_short(r["dims"]), str(r["dims"]["CAUSAL"])]
                    + ([r.get("profile") or "randn"] if profiled else [])
                    + [fmt_us(c.get(n)) for n in CONTENDERS] + [f"{x:.2f}" if x else "-" for x in rts]
                    + [f"{tfl:.1f}" if tfl else "-", f"{gbs:.0f}" if gbs else "-", f"{best:.0f}" if best else "-",
                       r.get("gqa") or "-"]
                    + [fmt_err(c.get(n)) for n in CONTENDERS]
                    + [f"{xl:.2f}" if isinstance(xl, (int, float)) else "-", params_short(r["params"])])
    widths = [max(len(head[i]), *(len(b[i]) for b in body)) if body else len(head[i]) for i in range(len(head))]
    out = ["  ".join(h.ljust(w) for h, w in zip(head, widths)).rstrip(),
           "  ".join("-" * w for w in widths)]
    for b in body:
        out.append("  ".join(x.ljust(w) for x, w in zip(b, widths)).rstrip())
    notes = []
    for r in rows:
        for name in CONTENDERS:
            c = r["contenders"].get(name)
            if c and c["status"] != "ok" and c.get("reason") and c["reason"] != "dry run":
                notes.append(f"  {shape_short(r['dims'])} causal={r['dims']['CAUSAL']}"
                             f"{' profile ' + r['profile'] if r.get('profile') else ''} {LABELS[name]}: "
                             f"{c['status']}: {c['reason']}")
    if notes:
        out.append("")
        out.append("not ok:")
        out.extend(notes)
    out.append("")
    out.append("ratios are the other backend's time / evoeng's time: > 1 means evoeng is faster; GB/s: Q, O "
               "and K, V once per K/V head over the time (best GB/s: the fastest other contender's)")
    return "\n".join(out)


def json_safe(v):
    """NaN/inf floats as strings ("nan"), so --out stays strict JSON."""
    if isinstance(v, float) and not math.isfinite(v):
        return str(v)
    if isinstance(v, dict):
        return {k: json_safe(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [json_safe(x) for x in v]
    return v


def row_json(r):
    """A result row for --out, with ratios and TFLOP/s filled in."""
    out = {k: v for k, v in r.items() if k not in ("source", "buffers", "launches", "roles")}
    out["flash_over_evoeng"] = ratio(r, "flash")
    out["cudnn_over_evoeng"] = ratio(r, "cudnn")
    out["flashkv_over_evoeng"] = ratio(r, "flashkv")
    e = r["contenders"].get("evoeng")
    out["evoeng_tflops"] = rate(r, e, "flops", 1e12)
    out["evoeng_gbps"] = rate(r, e, "bytes", 1e9)
    return json_safe(out)


# ---------------------------------------------------------------- GPU part

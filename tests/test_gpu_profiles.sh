#!/bin/sh
# run --profile on the GPU (issue 33): a short attention run timed on the
# `large` profile alone. Every candidate's timing holds that one profile,
# the export's plan marks it alone for timing, and resume keeps it (the
# candidates it adds are timed on `large` alone too). The gate still runs
# every profile (the run's own check). Resume's --json summary says what
# bounded the run. Exits 77 without a GPU.
set -u
E=${EVOENG:?EVOENG must point to the binary}
: "${EVO_SOURCE_ROOT:?EVO_SOURCE_ROOT must point to the source tree}"
PY=${PYTHON:-python3}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export EVOENG_CACHE_DIR="$tmp/cache"
db="$tmp/p.db"
"$E" run --profile large --generations 1 --population 2 --children 2 --dim S=256 --db "$db" --quiet; rc=$?
[ "$rc" -eq 5 ] && { echo "no usable GPU: skip"; exit 77; }
[ "$rc" -eq 0 ] || { echo "FAIL run --profile large: exit $rc"; exit 1; }
fails=0
only_large() {   # every candidate of top --json timed on `large` alone
    "$E" top -n 1000 --json --db "$db" > "$tmp/top.json" || { echo "FAIL top --json"; return 1; }
    "$PY" - "$tmp/top.json" "$1" <<'PYEOF'
import json, sys
c = json.load(open(sys.argv[1]))["candidates"]
names = sorted({tuple(p["name"] for p in x.get("profiles", [])) for x in c})
if len(c) < int(sys.argv[2]) or names != [("large",)]:
    sys.exit("FAIL %d candidates (want %s or more), profiles timed %s (want only large)" % (len(c), sys.argv[2], names))
print("ok   %d candidates, each timed on large alone" % len(c))
PYEOF
}
only_large 1 || fails=$((fails + 1))
"$E" export --best --format json --db "$db" -o "$tmp/best.json" || { echo "FAIL export"; exit 1; }
"$PY" - "$tmp/best.json" <<'PYEOF' || fails=$((fails + 1))
import json, sys
prof = json.load(open(sys.argv[1]))["plan"]["profiles"]
timed = [p["name"] for p in prof if p.get("timing")]
if timed != ["large"] or len(prof) != 4:
    sys.exit("FAIL the export's plan: timed %s of %d profiles (want large of 4)" % (timed, len(prof)))
print("ok   the export's plan times large alone, the gate's 4 profiles kept")
PYEOF
n=$("$E" top -n 1000 --json --db "$db" | "$PY" -c 'import json,sys; print(len(json.load(sys.stdin)["candidates"]))')
"$E" resume --generations 3 --db "$db" --json > "$tmp/resume.jsonl" 2> "$tmp/resume.err" ||
    { echo "FAIL resume: exit $?: $(tail -3 "$tmp/resume.err")"; exit 1; }
only_large "$n" || fails=$((fails + 1))
# the summary says what bounded the run (evolve_bound) and the cores' cap
"$PY" - "$tmp/resume.jsonl" <<'PYEOF' || fails=$((fails + 1))
import json, sys
s = [o for o in map(json.loads, (l for l in open(sys.argv[1]) if l.startswith("{"))) if o.get("event") == "summary"]
if len(s) != 1 or s[0].get("bound") not in ("gpus", "compile", "neither") or s[0].get("cores", 0) < 1 \
        or not s[0].get("core_cap_per_min", 0) > 0:
    sys.exit("FAIL the summary's bound, cores and cap: %s" % s)
print("ok   the summary: bound %s, %d cores, cap %.0f a minute" % (s[0]["bound"], s[0]["cores"], s[0]["core_cap_per_min"]))
PYEOF
[ "$fails" -eq 0 ] && echo "OK" || { echo "FAIL ($fails)"; exit 1; }

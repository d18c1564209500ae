#!/bin/sh
# `meson install` (issue 14, item 5): templates and prompts land under
# <prefix>/share/evoeng, and the installed binary finds its default task
# there with the source tree unreachable. A copy of the source tree is
# configured with --prefix into a temporary directory, built (the binary
# only) and installed, then the copy is deleted, and `evoeng check` runs
# from an unrelated directory with EVO_SOURCE_ROOT unset. Then a --destdir
# install of the same build, moved elsewhere, finds its data beside its
# binary, and without data says where it looked (issue 34).
set -u
ROOT=${EVO_SOURCE_ROOT:?EVO_SOURCE_ROOT must point to the source tree}
command -v meson >/dev/null && command -v ninja >/dev/null || { echo "meson or ninja missing: skip"; exit 77; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fails=0
pass=0
ok() { echo "ok   $1"; pass=$((pass + 1)); }
bad() { echo "FAIL $1"; fails=$((fails + 1)); }

# The tracked files of the tree (a git checkout) or the whole tree.
mkdir -p "$tmp/src"
if git -C "$ROOT" rev-parse --git-dir >/dev/null 2>&1; then
    (cd "$ROOT" && git ls-files -z --cached --others --exclude-standard | tar --null -T - -cf -) | tar -C "$tmp/src" -xf - \
        || { bad "copying the source tree"; exit 1; }
else
    (cd "$ROOT" && tar --exclude=./build -cf - .) | tar -C "$tmp/src" -xf -
fi
prefix="$tmp/prefix"
if meson setup "$tmp/build" "$tmp/src" --prefix "$prefix" -Dbuildtype=release >"$tmp/setup.log" 2>&1 &&
   ninja -C "$tmp/build" src/evoeng >"$tmp/build.log" 2>&1 &&
   meson install -C "$tmp/build" --no-rebuild >"$tmp/install.log" 2>&1 &&
   meson install -C "$tmp/build" --no-rebuild --destdir "$tmp/stage" >>"$tmp/install.log" 2>&1; then
    ok "configure, build and install into $prefix (and with --destdir $tmp/stage)"
else
    bad "configure, build or install failed"; tail -20 "$tmp/setup.log" "$tmp/build.log" "$tmp/install.log" 2>/dev/null
    exit 1
fi
rm -rf "$tmp/src" "$tmp/build"        # the source tree it was built from is gone

data="$prefix/share/evoeng"
for f in templates/attention/task.json templates/attention/attention.cu templates/softmax/task.json \
         templates/triad/task.json templates/README.md prompts/system.md prompts/request.md; do
    if [ -r "$data/$f" ]; then ok "installed $f"; else bad "$data/$f is missing"; fi
done
[ -x "$prefix/bin/evoeng" ] && ok "installed bin/evoeng" || bad "bin/evoeng is missing"

mkdir -p "$tmp/elsewhere"
cd "$tmp/elsewhere" || exit 1
run() { env -u EVO_SOURCE_ROOT -u EVOENG_DATA_DIR EVOENG_LIBCUDA=/nonexistent/libcuda.so.1 \
        EVOENG_CACHE_DIR="$tmp/cache" "$prefix/bin/evoeng" "$@" >"$tmp/out" 2>"$tmp/err"; }
if run check --arch sm_90 --sample 0; then ok "check (the default task) from the installed binary"
else bad "check of the default task failed"; sed 's/^/  /' "$tmp/out" "$tmp/err" | tail -15; fi
if grep -q "task attention: $data/templates/attention/task.json" "$tmp/out"; then ok "the default task comes from $data"
else bad "the default task does not come from $data"; head -3 "$tmp/out"; fi
if run check templates/softmax/task.json --arch sm_90 --sample 0 && grep -q "$data/templates/softmax/task.json" "$tmp/out"; then
    ok "a relative task path is found in the installed templates"
else bad "templates/softmax/task.json was not found in $data"; sed 's/^/  /' "$tmp/out" "$tmp/err" | tail -10; fi
# EVOENG_DATA_DIR comes first.
mkdir -p "$tmp/mine/templates"
cp -r "$data/templates/triad" "$tmp/mine/templates/"
if env -u EVO_SOURCE_ROOT EVOENG_DATA_DIR="$tmp/mine" EVOENG_CACHE_DIR="$tmp/cache" "$prefix/bin/evoeng" check \
       templates/triad/task.json --arch sm_90 --sample 0 >"$tmp/out" 2>"$tmp/err" &&
   grep -q "$tmp/mine/templates/triad/task.json" "$tmp/out"; then ok "EVOENG_DATA_DIR overrides the installed data"
else bad "EVOENG_DATA_DIR was not used"; sed 's/^/  /' "$tmp/out" "$tmp/err" | tail -10; fi

# A tree installed with --destdir and moved (issue 34): the binary finds the
# data beside it (<its folder>/../share/evoeng); without any, the error
# lists every place searched and names EVOENG_DATA_DIR.
moved="$tmp/moved"
mv "$tmp/stage$prefix" "$moved"
if env -u EVO_SOURCE_ROOT -u EVOENG_DATA_DIR EVOENG_CACHE_DIR="$tmp/cache" "$moved/bin/evoeng" check --arch sm_90 \
       --sample 0 >"$tmp/out" 2>"$tmp/err" && grep -q "task attention: $moved/share/evoeng/templates/attention/task.json" "$tmp/out"; then
    ok "a moved --destdir tree finds its data beside its binary"
else bad "the moved tree did not find $moved/share/evoeng"; sed 's/^/  /' "$tmp/out" "$tmp/err" | tail -10; fi
rm -rf "$moved/share" "$data"
env -u EVO_SOURCE_ROOT -u EVOENG_DATA_DIR EVOENG_CACHE_DIR="$tmp/cache" "$moved/bin/evoeng" check --arch sm_90 \
    --sample 0 >"$tmp/out" 2>"$tmp/err"; rc=$?
if [ "$rc" -eq 3 ] && grep -q "templates/attention/task.json is in none of the places searched" "$tmp/err" &&
   grep -q "$moved/share/evoeng/templates/attention/task.json (beside the binary)" "$tmp/err" &&
   grep -q "$data/templates/attention/task.json (where meson install puts it)" "$tmp/err" &&
   grep -q "EVOENG_DATA_DIR (not set)" "$tmp/err" && grep -q "set EVOENG_DATA_DIR to the folder" "$tmp/err"; then
    ok "without its data: exit 3, every place searched listed, EVOENG_DATA_DIR named"
else bad "the error without data (exit $rc) does not list the places searched:"; sed 's/^/  /' "$tmp/err"; fi

echo "$pass passed, $fails failed"
[ "$fails" -eq 0 ]

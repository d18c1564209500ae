#!/bin/sh
# A real kernel file on the GPU (issue 14, item 4): tests/data/kfile/task.json
# (attn_rows.cu as it is: template kernel, host launcher, host includes,
# INFINITY) through the correctness gate for every shape and seed, by its
# lowered names, then gated and timed by bench. Exits 77 without a GPU.
set -u
EVOENG=${EVOENG:?EVOENG must point to the binary}
ROOT=${EVO_SOURCE_ROOT:?EVO_SOURCE_ROOT must point to the source tree}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export EVOENG_CACHE_DIR="$tmp/cache"
"$EVOENG" check "$ROOT/tests/data/kfile/task.json" --gpu --sample 2; rc=$?
[ "$rc" -eq 5 ] && { echo "no usable GPU: skip"; exit 77; }
[ "$rc" -eq 0 ] || { echo "FAIL check --gpu: exit $rc"; exit 1; }
"$EVOENG" bench "$ROOT/tests/data/kfile/task.json" --db "$tmp/p.db" || { echo "FAIL bench: exit $?"; exit 1; }
echo "ok   attn_rows.cu gated on every shape and timed on the GPU"

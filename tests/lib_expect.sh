# Sourced by the shell tests of the evoeng binary ($EVOENG, set by meson): a
# temporary folder ($tmp, removed on exit), pass/fail counters and the
# checks they count.
#   expect CODE DESCRIPTION -- command...   the command exits CODE (its
#                                           output in $tmp/out and $tmp/err)
#   grep_out FILE PATTERN DESCRIPTION       $tmp/FILE has a line matching PATTERN
#   finish                                  "N passed, N failed", exit status
EVOENG=${EVOENG:?EVOENG must point to the binary}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fails=0
pass=0
expect() {
    want=$1; what=$2; shift 3
    "$@" >"$tmp/out" 2>"$tmp/err"; got=$?
    if [ "$got" -ne "$want" ]; then
        echo "FAIL $what: exit $got, expected $want"; sed 's/^/  out: /' "$tmp/out" | head -20; sed 's/^/  err: /' "$tmp/err" | head -10
        fails=$((fails + 1))
    else
        echo "ok   $what"; pass=$((pass + 1))
    fi
}
grep_out() {
    if grep -q -- "$2" "$tmp/$1"; then echo "ok   $3"; pass=$((pass + 1));
    else echo "FAIL $3: '$2' not in $1:"; sed 's/^/  /' "$tmp/$1" | head -10; fails=$((fails + 1)); fi
}
ok() { echo "ok   $1"; pass=$((pass + 1)); }
fail() { echo "FAIL $1"; fails=$((fails + 1)); }
finish() {
    echo "$pass passed, $fails failed"
    [ "$fails" -eq 0 ]
}

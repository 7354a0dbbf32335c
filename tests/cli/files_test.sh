#!/usr/bin/env bash
# What kvroof leaves on disk: bad sweep input writes nothing; an interrupted
# or failed run leaves no temporary; report --out is all or nothing; --out
# follows links and writes through devices.
# Usage: files_test.sh path/to/kvroof
set -u
kvroof=$1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
pass=0
fail=0
ok() { pass=$((pass + 1)); }
bad() { fail=$((fail + 1)); echo "FAIL: $*"; }
# Entries of folder $1 other than those named after it.
leftovers() {
    local dir=$1; shift
    local keep=" $* " e
    for e in $(ls -A "$dir"); do case "$keep" in *" $e "*) ;; *) printf '%s ' "$e" ;; esac; done
}

# Bad sweep input: exit 2, one line naming the rule, no stdout, no file, no temporary.
expect_bad_sweep() {
    local needle=$1; shift
    local d="$tmp/bad"
    rm -rf "$d" && mkdir "$d"
    "$kvroof" sweep "$@" --out "$d/o.csv" >"$tmp/out" 2>"$tmp/err"
    local rc=$?
    if [ $rc -ne 2 ]; then bad "sweep $* -> exit $rc, want 2: $(cat "$tmp/err")"; return; fi
    if ! grep -qF -- "$needle" "$tmp/err"; then bad "sweep $* -> stderr lacks '$needle': $(cat "$tmp/err")"; return; fi
    if [ "$(wc -l <"$tmp/err")" -ne 1 ] || [ -s "$tmp/out" ] || [ -n "$(ls -A "$d")" ]; then bad "sweep $* -> not one line / wrote something"; return; fi
    "$kvroof" sweep "$@" >"$tmp/out" 2>/dev/null
    if [ $? -ne 2 ] || [ -s "$tmp/out" ]; then bad "sweep $* to stdout -> wrote before failing"; return; fi
    ok
}
expect_bad_sweep "--eta-mem" --eta-mem 0 --grid "f=0:1:0.25"
expect_bad_sweep "gpus takes whole numbers" --grid "gpus=1:3:0.5" --grid "f=0:1:0.0001"
expect_bad_sweep "gpus takes whole numbers, got '1.5'" --grid "gpus=1,1.5"
expect_bad_sweep "--grid hbm-cap=10, hbm-reserve=50: --hbm-reserve: must be < hbm-cap" \
    --grid "hbm-cap=200,10" --grid "hbm-reserve=2,50" --grid "f=0:1:0.0001"
expect_bad_sweep "--grid hardware=h100-sxm, hbm-reserve=150" --grid "hardware=gb200,h100-sxm" --grid "hbm-reserve=2,150" --grid "f=0,1"
expect_bad_sweep "--grid sparse=0" --grid "sparse=0.5,0" --grid "cpus-per-gpu=1,2"
expect_bad_sweep "--grid f=1.5" --grid "sparse=0.5,1" --grid "f=0,1.5"

echo "$pass passed, $fail failed"
[ $fail -eq 0 ]

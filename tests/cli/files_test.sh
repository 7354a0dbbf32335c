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

# An interrupted sweep --out leaves neither the file nor its temporary.
# Job control on: background jobs then keep SIGINT instead of ignoring it.
set -m
for sig in INT TERM HUP; do
    d="$tmp/sig-$sig"
    mkdir "$d"
    "$kvroof" sweep --grid "f=0:1:0.000001" --grid "sparse=0.1,0.2,0.5,1" --out "$d/F.csv" 2>/dev/null &
    pid=$!
    for _ in $(seq 100); do [ -n "$(ls -A "$d")" ] && break; sleep 0.05; done
    sleep 0.3
    [ -n "$(ls -A "$d")" ] || bad "sweep never started its temporary before SIG$sig"
    kill -s "$sig" "$pid"
    { wait "$pid"; } 2>/dev/null  # without bash's job report
    rc=$?
    [ $rc -gt 128 ] && ok || bad "sweep after SIG$sig -> exit $rc, want death by the signal"
    [ -z "$(ls -A "$d")" ] && ok || bad "SIG$sig left: $(ls -A "$d")"
done
set +m

# No gnuplot: one line, exit 1, nothing written, the earlier outputs untouched.
d="$tmp/nognu"
mkdir -p "$d/rep" "$d/tmpdir"
echo old >"$d/rep/SUMMARY.md"
PATH=/nonexistent "$kvroof" report --out "$d/rep" >"$tmp/out" 2>"$tmp/err"
rc=$?
[ $rc -eq 1 ] && [ "$(wc -l <"$tmp/err")" -eq 1 ] && grep -q gnuplot "$tmp/err" && ok || bad "report without gnuplot -> exit $rc: $(cat "$tmp/err")"
[ ! -s "$tmp/out" ] && [ "$(cat "$d/rep/SUMMARY.md")" = old ] && [ "$(ls -A "$d/rep")" = SUMMARY.md ] && ok || bad "report without gnuplot touched the old folder"
[ -z "$(leftovers "$d" rep tmpdir)" ] && ok || bad "report without gnuplot left: $(leftovers "$d" rep tmpdir)"
TMPDIR="$d/tmpdir" PATH=/nonexistent "$kvroof" sweep --grid "f=0,1" --plot "$d/p.svg" --x f --y gain_con --out "$d/s.csv" >"$tmp/out" 2>"$tmp/err"
rc=$?
[ $rc -eq 1 ] && [ "$(wc -l <"$tmp/err")" -eq 1 ] && [ ! -s "$tmp/out" ] && ok || bad "sweep --plot without gnuplot -> exit $rc: $(cat "$tmp/err")"
[ -z "$(leftovers "$d" rep tmpdir)" ] && [ -z "$(ls -A "$d/tmpdir")" ] && ok || bad "sweep --plot without gnuplot left files"

# A gnuplot that fails, or exits at once without reading (SIGPIPE for a writer
# that does not ignore it): exit 1, the old folder kept, no temporaries.
mkdir "$d/bin"
for body in "exit 3" "exec 0<&-; exit 0"; do
    printf '#!/bin/sh\n%s\n' "$body" >"$d/bin/gnuplot"
    chmod +x "$d/bin/gnuplot"
    TMPDIR="$d/tmpdir" PATH="$d/bin" "$kvroof" report --out "$d/rep" >"$tmp/out" 2>"$tmp/err"
    rc=$?
    [ $rc -eq 1 ] && [ "$(wc -l <"$tmp/err")" -eq 1 ] && ok || bad "report with gnuplot '$body' -> exit $rc: $(cat "$tmp/err")"
    [ "$(ls -A "$d/rep")" = SUMMARY.md ] && [ -z "$(leftovers "$d" rep tmpdir bin)" ] && ok || bad "report with gnuplot '$body' left: $(leftovers "$d" rep tmpdir bin)"
    TMPDIR="$d/tmpdir" PATH="$d/bin" "$kvroof" sweep --grid "f=0,1" --plot "$d/p.svg" --x f --y gain_con --out "$d/s.csv" >/dev/null 2>&1
    rc=$?
    [ $rc -eq 1 ] && [ -z "$(leftovers "$d" rep tmpdir bin)" ] && [ -z "$(ls -A "$d/tmpdir")" ] && ok || bad "sweep --plot with gnuplot '$body' -> exit $rc, left: $(leftovers "$d" rep tmpdir bin) $(ls -A "$d/tmpdir")"
done

# report --out replaces the folder whole, refuses one holding other files, follows a link.
d="$tmp/rep"
mkdir -p "$d/real" "$d/foreign"
echo old >"$d/real/SUMMARY.md"
echo stale >"$d/real/verdict_default.md"
ln -s real "$d/link"
"$kvroof" report --out "$d/link" >"$tmp/out" 2>"$tmp/err" && ok || bad "report through a link: $(cat "$tmp/err")"
[ -L "$d/link" ] && [ "$(ls "$d/real" | wc -l)" -eq 23 ] && ! grep -q '^old$' "$d/real/SUMMARY.md" && ok || bad "report --out link did not replace the target's files"
[ -z "$(leftovers "$d" real foreign link)" ] && ok || bad "report left: $(leftovers "$d" real foreign link)"
echo mine >"$d/foreign/notes.txt"
"$kvroof" report --out "$d/foreign" >"$tmp/out" 2>"$tmp/err"
rc=$?
[ $rc -eq 2 ] && grep -q -- "--out" "$tmp/err" && [ "$(ls -A "$d/foreign")" = notes.txt ] && [ ! -s "$tmp/out" ] && ok || bad "report into a folder of other files -> exit $rc: $(cat "$tmp/err")"

# sweep --out through a link writes the target and keeps the link; devices are written directly.
d="$tmp/out-link"
mkdir "$d"
"$kvroof" sweep --grid "sparse=0.1,1" --grid "f=0,0.5,1" >"$d/want.csv"
ln -s target.csv "$d/link.csv"
for round in new existing; do
    "$kvroof" sweep --grid "sparse=0.1,1" --grid "f=0,0.5,1" --out "$d/link.csv" &&
        [ -L "$d/link.csv" ] && cmp -s "$d/target.csv" "$d/want.csv" && ok || bad "sweep --out link ($round target)"
done
# The provenance sidecar sits next to the name given (link.csv.meta.json) and reproduces the rows.
[ -z "$(leftovers "$d" want.csv link.csv target.csv link.csv.meta.json)" ] && ok || bad "sweep --out link left: $(leftovers "$d" want.csv link.csv target.csv link.csv.meta.json)"
"$kvroof" sweep --config "$d/link.csv.meta.json" | cmp -s - "$d/want.csv" && ok || bad "sweep --config OUT.meta.json does not reproduce OUT"
"$kvroof" sweep --grid "sparse=0.1,1" --grid "f=0,0.5,1" --out /dev/stdout >"$d/file.csv" && cmp -s "$d/file.csv" "$d/want.csv" && ok || bad "sweep --out /dev/stdout into a file"
"$kvroof" sweep --grid "sparse=0.1,1" --grid "f=0,0.5,1" --out /dev/stdout | cat >"$d/pipe.csv" && cmp -s "$d/pipe.csv" "$d/want.csv" && ok || bad "sweep --out /dev/stdout into a pipe"
"$kvroof" sweep --grid "sparse=0.1,1" --grid "f=0,0.5,1" --out /dev/null && [ -c /dev/null ] && ok || bad "sweep --out /dev/null"
"$kvroof" sweep --grid "sparse=0.1,1" --grid "f=0,0.5,1" --plot "$d/p.svg" --x f --y gain_con --out /dev/stdout >"$d/plot.csv" &&
    cmp -s "$d/plot.csv" "$d/want.csv" && grep -q '<svg' "$d/p.svg" && ok || bad "sweep --plot --out /dev/stdout"
# "-" is standard output, as in most tools: no file named "-" (or "-.meta.json") appears.
(cd "$d" && "$kvroof" sweep --grid "sparse=0.1,1" --grid "f=0,0.5,1" --out - >"$d/dash.csv") && cmp -s "$d/dash.csv" "$d/want.csv" &&
    [ ! -e "$d/-" ] && [ ! -e "$d/-.meta.json" ] && ok || bad "sweep --out - is not stdout"
[ -z "$(leftovers "$d" want.csv link.csv target.csv link.csv.meta.json file.csv pipe.csv plot.csv p.svg dash.csv)" ] && ok || bad "sweep --out devices left files"

# A sidecar names the files its knobs read relative to its own folder, so it reproduces the rows from any folder;
# a file without '/' or .json there keeps "./", or it would read back as a preset's name.
r="$tmp/rel" && mkdir -p "$r/run/sub" "$r/elsewhere"
cp "$(dirname "$0")/../fixtures/custom_hardware.json" "$r/run/sub/hw.json"
cp "$(dirname "$0")/../fixtures/hf_llama_3_1_70b_config.json" "$r/run/sub/mcfg"
(cd "$r/run" && "$kvroof" sweep --model sub/mcfg --grid "hardware=gb200,sub/hw.json" --grid "f=0,1" --out sub/out.csv) &&
    grep -q '"model": "./mcfg"' "$r/run/sub/out.csv.meta.json" && grep -q '"hardware=gb200,hw.json"' "$r/run/sub/out.csv.meta.json" &&
    ok || bad "sweep: the sidecar's paths are not relative to its folder"
(cd "$r/run" && "$kvroof" sweep --config sub/out.csv.meta.json) | cmp -s - "$r/run/sub/out.csv" && ok || bad "sweep --config sub/OUT.meta.json from the sweep's folder: not the same rows"
(cd "$r/elsewhere" && "$kvroof" sweep --config ../run/sub/out.csv.meta.json >/dev/null) && ok || bad "sweep --config OUT.meta.json from another folder"

echo "$pass passed, $fail failed"
[ $fail -eq 0 ]

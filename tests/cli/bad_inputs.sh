#!/usr/bin/env bash
# Table-driven bad input (tests/cli/bad_inputs.tsv): each row runs in a fresh
# empty folder and must exit with the given code, print exactly one line on
# stderr matching the row's extended regex, print nothing on stdout and leave
# the folder as its setup made it.
# Row: setup (a shell command run in the folder, or -) TAB kvroof arguments
# (shell words) TAB exit code TAB regex.
# Usage: bad_inputs.sh path/to/kvroof [path/to/bad_inputs.tsv]
set -u
kvroof=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
table=${2:-$(dirname "$0")/bad_inputs.tsv}
table=$(cd "$(dirname "$table")" && pwd)/$(basename "$table")  # absolute: a row's setup runs in its own folder
root=$(mktemp -d)
trap 'rm -rf "$root"' EXIT
pass=0
fail=0
n=0
listing() { (cd "$1" && find . -mindepth 1 -printf '%p %s %T@\n' | LC_ALL=C sort); }  # entries, not the folder's own mtime
while IFS=$'\t' read -r setup args code regex; do
    case "$setup" in ''|'#'*) continue ;; esac
    n=$((n + 1))
    dir="$root/$n"
    mkdir "$dir"
    if [ "$setup" != "-" ]; then
        (cd "$dir" && eval "$setup") || { echo "FAIL row $n: setup failed: $setup"; fail=$((fail + 1)); continue; }
    fi
    before=$(listing "$dir")
    (cd "$dir" && eval "\"\$kvroof\" $args" >"$root/out.$n" 2>"$root/err.$n")
    rc=$?
    after=$(listing "$dir")
    why=""
    lines=$(wc -l <"$root/err.$n")
    line=$(head -n 1 "$root/err.$n")
    if [ "$rc" -ne "$code" ]; then why="exit $rc, want $code"
    elif [ "$lines" -ne 1 ] || [ "$(tail -c 1 "$root/err.$n" | od -An -tx1 | tr -d ' \n')" != "0a" ]; then why="stderr is not exactly one line"
    elif ! [[ $line =~ $regex ]]; then why="stderr does not match /$regex/"
    elif [ -s "$root/out.$n" ]; then why="wrote to stdout"
    elif [ "$before" != "$after" ]; then why="changed the working folder"
    fi
    if [ -n "$why" ]; then
        fail=$((fail + 1))
        echo "FAIL row $n: kvroof $args -> $why"
        echo "  stderr: $(head -c 400 "$root/err.$n")"
    else
        pass=$((pass + 1))
    fi
done <"$table"
echo "bad_inputs: $pass passed, $fail failed"
[ "$n" -gt 0 ] && [ "$fail" -eq 0 ]

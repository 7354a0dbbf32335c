#!/usr/bin/env bash
# Every option of every subcommand says in its --help what it is when not given:
# a "[default: …]" (a value, or what absence means: "optimised", "the preset's").
# The subcommands are read from `kvroof --help`, the options from each one's
# --help, so a new subcommand or flag is checked without a line here.
# Exempt: -h,--help and the pure switches below (no value, so no default); each
# exempt switch is checked to take no value, so the list cannot hide an option.
# Usage: help_defaults.sh path/to/kvroof
set -u
kvroof=$1
switches=" --help --json --no-meta --cpu --gpu "
pass=0
fail=0
ok() { pass=$((pass + 1)); }
bad() { fail=$((fail + 1)); echo "FAIL: $*"; }

top=$("$kvroof" --help) || { echo "FAIL: kvroof --help exits non-zero"; exit 1; }
subs=$(printf '%s\n' "$top" | awk '/^Subcommands:/ { on = 1; next } on && /^$/ { exit } on && /^  [a-z]/ { print $1 }')
[ "$(printf '%s\n' "$subs" | wc -w)" -ge 10 ] && ok || bad "kvroof --help lists fewer than 10 subcommands: '$subs'"

for sub in $subs; do
    help=$("$kvroof" "$sub" --help) || { bad "kvroof $sub --help exits non-zero"; continue; }
    [ -n "$help" ] || { bad "kvroof $sub --help is empty"; continue; }
    # One entry per option: its line (optional spaces, then -) and the lines CLI11 indents under it
    # (a name wider than the name column, or a newline in the help, puts the text there).
    entries=$(printf '%s\n' "$help" | awk '
        /^ +-/ { if (e != "") print e; e = $0; next }
        /^ {20,}[^ ]/ && e != "" { e = e " " $0; next }
        { if (e != "") print e; e = "" }
        END { if (e != "") print e }')
    [ -n "$entries" ] || { bad "kvroof $sub --help shows no option"; continue; }
    while IFS= read -r e; do
        names=$(printf '%s\n' "$e" | sed -E 's/^ *([^ ]+).*/\1/')  # "-h,--help" or "--f"
        long=${names##*,}
        if [[ "$switches" == *" $long "* ]]; then
            # A pure switch: its name is followed by its text, not by a value's type (CLI11: "--f X", "--out FILE").
            if printf '%s\n' "$e" | grep -Eq "^ *${names} {2,}[^ ]"; then ok; else bad "kvroof $sub: exempt $long takes a value: $e"; fi
            continue
        fi
        if printf '%s\n' "$e" | grep -q '\[default: [^]]'; then ok; else bad "kvroof $sub: no [default: …] in: $e"; fi
    done <<< "$entries"
done

echo "help_defaults: $pass passed, $fail failed"
[ "$fail" -eq 0 ]

#!/usr/bin/env bash
# The committed reports must be what `kvroof report` writes today, and a rerun
# must write the same bytes.
# Usage: outputs_current.sh path/to/kvroof path/to/outputs
set -u
kvroof=$1
committed=$2
a=$(mktemp -d)
b=$(mktemp -d)
trap 'rm -rf "$a" "$b"' EXIT
"$kvroof" report --out "$a" >/dev/null || { echo "kvroof report failed"; exit 1; }
"$kvroof" report --out "$b" >/dev/null || { echo "kvroof report failed"; exit 1; }
diff -rq "$a" "$b" >/dev/null || { echo "kvroof report is not byte-identical on rerun"; diff -rq "$a" "$b"; exit 1; }
if ! diff -r "$a" "$committed" >"$b/diff" 2>&1; then
  echo "outputs/ is stale: run './build/release/kvroof report' and commit outputs/"
  head -40 "$b/diff"
  exit 1
fi
echo "outputs/ is current"

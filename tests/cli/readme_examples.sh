#!/usr/bin/env bash
# Every `kvroof ...` (and `echo ... > file`) line of the README's sh blocks runs
# and exits 0, in order, in a scratch folder that holds a copy of configs/ and
# the files the examples name as the user's own (a Hugging Face config.json and
# a request trace, from tests/data/). Continuation lines are joined; `kvroof`
# is the binary under test.
# Usage: readme_examples.sh path/to/kvroof path/to/project
set -u
# Absolute: the commands run in a scratch folder, and a relative path there would fall through to any kvroof on PATH.
kvroof=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
root=$2
[ -x "$kvroof" ] || { echo "readme_examples: no executable at $1"; exit 1; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cp -r "$root/configs" "$work/"
cp "$root/tests/data/hf/llama-3.1-8b.json" "$work/config.json"
cp "$root/tests/data/trace/sample.jsonl" "$work/calls.jsonl"
cp "$root/tests/data/trace/conversations.json" "$work/codex_swebenchpro.json"  # the dataset's shape, in miniature
mkdir "$work/bin"
ln -s "$kvroof" "$work/bin/kvroof"
# One command per line: blocks opened by ```sh, ```bash or ```shell, continuation joined, trailing comments cut
# (outside quotes). A README line that starts with `kvroof ` inside any fence but is not extracted fails the test.
awk '
  /^[ \t]*```/ { inblock = (!inblock && $0 ~ /^[ \t]*```(sh|bash|shell)[ \t]*$/); buf = ""; next }
  !inblock { next }
  {
    line = $0
    if (buf == "") { sub(/^[ \t]+/, "", line); if (line !~ /^(kvroof|echo) /) next; start = NR }
    else { sub(/^[ \t]+/, "", line); buf = buf " " }
    buf = buf line
    if (buf ~ /\\$/) { sub(/[ \t]*\\$/, "", buf); next }
    out = ""; q = ""
    for (i = 1; i <= length(buf); i++) {
      c = substr(buf, i, 1)
      if (q != "") { if (c == q) q = "" }
      else if (c == "\"" || c == "\047") q = c
      else if (c == "#" && (i == 1 || substr(buf, i - 1, 1) == " ")) break
      out = out c
    }
    sub(/[ \t]+$/, "", out)
    print start "\t" out
    buf = ""
  }' "$root/README.md" >"$work/commands.tsv"
n=$(wc -l <"$work/commands.tsv")
[ "$n" -ge 30 ] || { echo "found only $n README commands: the extraction is broken"; exit 1; }
fenced=$(awk '/^[ \t]*```/ { inblock = !inblock; next } inblock && /^[ \t]*kvroof / { n++ } END { print n + 0 }' "$root/README.md")
[ "$fenced" -le "$n" ] || { echo "README has $fenced kvroof lines in fences but only $n were extracted: a fence is not sh"; exit 1; }
failed=0
while IFS=$'\t' read -r line cmd; do
  if ! (cd "$work" && PATH="$work/bin:$PATH" bash -e -o pipefail -c "$cmd" >"$work/out" 2>&1 </dev/null); then
    echo "README.md:$line failed: $cmd"
    tail -3 "$work/out"
    failed=$((failed + 1))
  fi
done <"$work/commands.tsv"
echo "readme_examples: $((n - failed)) of $n README commands ran"
[ "$failed" -eq 0 ]

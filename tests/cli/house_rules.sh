#!/usr/bin/env bash
# House rules (docs/architecture.md): no source file over 400 lines; the code
# is laid out as .clang-format says (checked when clang-format-14 is installed,
# as .ci/deps does). Usage: house_rules.sh path/to/repo
set -uo pipefail
cd "$1" || exit 1
fail=0
files=$(find include src apps tests -name '*.hpp' -o -name '*.cpp' | LC_ALL=C sort)
for f in $files; do
  n=$(wc -l < "$f")
  if [ "$n" -gt 400 ]; then
    echo "house_rules: $f has $n lines (at most 400)"
    fail=1
  fi
done
if command -v clang-format-14 > /dev/null; then
  # shellcheck disable=SC2086
  if ! clang-format-14 --dry-run -Werror $files 2> /tmp/house_rules_format.$$; then
    head -20 /tmp/house_rules_format.$$
    echo "house_rules: files differ from .clang-format: run clang-format-14 -i on them"
    fail=1
  fi
  rm -f /tmp/house_rules_format.$$
else
  echo "house_rules: clang-format-14 not installed, layout not checked"
fi
[ "$fail" -eq 0 ] && echo "house_rules: $(echo "$files" | wc -l) files within the rules"
exit "$fail"

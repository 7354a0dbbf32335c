#!/usr/bin/env bash
# `cmake --install` of a build tree into a fresh prefix: the binary, the
# scenario files, the docs, a man page with every subcommand, and bash/zsh
# completion that completes subcommands, flags and preset names; the README's
# `sweep --config configs/…` example runs from another folder; -V names the
# git revision. Usage: install_test.sh BUILD_DIR
set -uo pipefail
build=$1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
pass=0 fail=0
ok() { pass=$((pass + 1)); }
bad() { fail=$((fail + 1)); echo "FAIL: $1"; }

cmake --install "$build" --prefix "$tmp/p" >"$tmp/log" 2>&1 && ok || { bad "cmake --install"; cat "$tmp/log"; }
k=$tmp/p/bin/kvroof
[ -x "$k" ] && ok || bad "no bin/kvroof"
for f in share/kvroof/configs/sweep_cpus_per_gpu.json share/kvroof/configs/report.json share/doc/kvroof/model.md \
    share/doc/kvroof/README.md share/man/man1/kvroof.1 share/bash-completion/completions/kvroof share/kvroof/completion.zsh; do
    [ -s "$tmp/p/$f" ] && ok || bad "not installed: $f"
done
man=$tmp/p/share/man/man1/kvroof.1
head -n 1 "$man" | grep -q '^\.TH KVROOF 1 ' && ok || bad "man page header"
subs=$("$k" --help | sed -n '/^Subcommands:/,/^$/p' | grep -c '^  [a-z]')
[ "$(grep -c '^\.SS ' "$man")" = "$subs" ] && ok || bad "man page: not one section per subcommand ($subs)"
grep -q 'Usage: kvroof verdict' "$man" && ok || bad "man page: usage names the build path"
mkdir "$tmp/elsewhere"
(cd "$tmp/elsewhere" && "$k" sweep --config configs/sweep_cpus_per_gpu.json --out s.csv) && [ -s "$tmp/elsewhere/s.csv" ] && ok \
    || bad "sweep --config configs/… from another folder"
"$k" -V | grep -Eq '^kvroof [0-9.]+ \(git [0-9a-f]{12}(-dirty)?\)$|^kvroof [0-9.]+ \(git unknown\)$' && ok || bad "-V"
complete_words() { bash -c "source '$tmp/p/share/bash-completion/completions/kvroof'; COMP_WORDS=($1); COMP_CWORD=$2; _kvroof; echo \"\${COMPREPLY[*]}\""; }
[ "$(complete_words 'kvroof verd' 1)" = "verdict" ] && ok || bad "bash completion: subcommand"
[ "$(complete_words 'kvroof verdict --sol' 2)" = "--solve" ] && ok || bad "bash completion: flag"
[ "$(complete_words 'kvroof verdict --hardware gb2' 3)" = "gb200" ] && ok || bad "bash completion: preset name"
grep -q 'bashcompinit' "$tmp/p/share/kvroof/completion.zsh" && ok || bad "zsh completion"
echo "install: $pass passed, $fail failed"
[ "$fail" -eq 0 ]

#!/usr/bin/env bash
# Fuzzes every parser with libFuzzer (clang, ASan + UBSan).
# Usage: tests/fuzz/run.sh [SECONDS_PER_TARGET=600] [PARALLEL=2] [TARGET...]
# Builds the `fuzz` preset, runs each target for SECONDS from the committed
# corpus (new inputs go to build/fuzz/work/<target>, the corpus is not
# touched), and prints executions and crashes per target. Crash inputs are
# left in build/fuzz/work/ as crash-*; the exit status is 1 if any target crashed.
# To keep new coverage: build/fuzz/tests/fuzz/fuzz_T -merge=1 tests/fuzz/corpus/T build/fuzz/work/T
set -euo pipefail
cd "$(dirname "$0")/../.."
seconds=${1:-600}
parallel=${2:-2}
shift $(( $# > 2 ? 2 : $# ))
targets=("$@")
[ ${#targets[@]} -eq 0 ] && targets=(units workload mix grid shard preset_json hf_config sweep_config trace)

cmake --preset fuzz >/dev/null
cmake --build --preset fuzz -j"$parallel" >/dev/null
bin=build/fuzz/tests/fuzz
work=build/fuzz/work
mkdir -p "$work"

run_one() {
    local t=$1
    mkdir -p "$work/$t"
    (cd "$work" && "../../../$bin/fuzz_$t" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 \
        -print_final_stats=1 -artifact_prefix="$t-" "$t" "../../../tests/fuzz/corpus/$t" >"$t.log" 2>&1) || true
    local execs crashes
    execs=$(grep -m1 '^stat::number_of_executed_units' "$work/$t.log" | awk '{print $2}')
    crashes=$(ls "$work" | grep -c "^$t-\(crash\|leak\|timeout\|oom\)" || true)
    printf '%-14s %12s execs in %ss  %s crash(es)\n' "$t" "${execs:-?}" "$seconds" "$crashes"
}
export -f run_one
export seconds work bin
printf '%s\n' "${targets[@]}" | xargs -P "$parallel" -I{} bash -c 'run_one {}' | tee "$work/summary.txt"
! grep -qv ' 0 crash' "$work/summary.txt"

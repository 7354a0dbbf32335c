#!/usr/bin/env bash
# Extreme but valid scenarios: every one must succeed, and no output may carry
# nan, inf or a negative throughput. Runs each subcommand (verdict, mix,
# prefill, layers, parallel, ladder, disagg, compare, sim) as text and as --json over huge and tiny contexts, 1 and
# 100000 GPUs, eta 1e-3, int4 everything and every model preset.
# Usage: extreme_outputs.sh path/to/kvroof
set -u
kvroof=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
pass=0
fail=0
check() {
    local out="$tmp/out" err="$tmp/err" rc
    "$kvroof" "$@" >"$out" 2>"$err"
    rc=$?
    if [ $rc -ne 0 ]; then fail=$((fail + 1)); echo "FAIL: kvroof $* -> exit $rc: $(head -c 300 "$err")"; return; fi
    # Nothing on stderr but warnings (a context beyond the model's window is one, and is said).
    if grep -qv '^kvroof: warning: ' "$err"; then fail=$((fail + 1)); echo "FAIL: kvroof $* -> wrote to stderr: $(head -c 300 "$err")"; return; fi
    local hit
    hit=$(grep -nEi '(^|[^a-z_])(-?nan|-?inf|infinity)([^a-z_]|$)' "$out" | head -n 3)
    if [ -n "$hit" ]; then fail=$((fail + 1)); echo "FAIL: kvroof $* -> nan/inf in output: $hit"; return; fi
    hit=$(grep -nE -- '(^|[ (=:])-[0-9][0-9.e+]* *(tok/s|calls/s|sessions|%)|"[a-z_]*(tok_per_s|throughput|lambda_max|batch|ttft|tpot)[a-z_]*": -[0-9]' "$out" | head -n 3)
    # A sweep's CSV and JSON Lines: no column of a row is ever negative.
    [ "$1" = sweep ] && [ -z "$hit" ] && hit=$(grep -nE -- '(^|,|:)-[0-9]' "$out" | head -n 3)
    if [ -n "$hit" ]; then fail=$((fail + 1)); echo "FAIL: kvroof $* -> negative figure: $hit"; return; fi
    pass=$((pass + 1))
}
both() { check "$@"; check "$@" --json; }

models=$("$kvroof" presets --json 2>/dev/null | grep -o '"models": *\[[^]]*\]' | grep -o '"[a-z0-9.-]*"' | tr -d '"' | grep -v '^models$')
[ -n "$models" ] || models="llama-3.1-8b llama-3.1-70b llama-3.1-405b qwen3-235b-a22b qwen3-30b-a3b mixtral-8x7b glm-4.5 deepseek-v3"

for w in "s_cached=0,a_append=1,o_output=1" "s_cached=1000000000,a_append=1000000000,o_output=1000000000" \
         "s_cached=1,a_append=0,o_output=1" "s_cached=100000,a_append=1,o_output=1,idle_gap=1000000000s" \
         "s_cached=1000000,a_append=1,o_output=1,idle_gap=0s"; do
    both verdict --workload "$w"
    both verdict --workload "$w" --gpus 1 --cpus-per-gpu 0.001
    both verdict --workload "$w" --gpus 100000 --eta 0.001 --kv-dtype int4 --weight-dtype int4
    both mix --workload "$w" --step 0.5
    both prefill --workload "$w" --gpus 100000
done
for g in 1 100000; do
    both verdict --gpus $g --eta 0.001 --kv-dtype int4 --weight-dtype int4 --sparse 0.000001
    both verdict --gpus $g --idle park --slo-tpot 0.000001s --slo-ttft 1000000s
    both verdict --gpus $g --hbm-cap 1MB --hbm-reserve 0 --cpu-mem 1e18B --c2c-bw 1KB/s --f 1
    both verdict --gpus $g --gpu-flops 1000000FLOPS --hbm-bw 1KB/s --cpu-flops 1e21FLOPS --cpu-dram-bw 1e18B/s
    both mix --gpus $g --mix "long:0.000001,short:1000000" --eta-mem 0.001
    both prefill --gpus $g --c2c-bw 1KB/s --prefill-flops 1e21FLOPS
    both prefill --gpus $g --c2c-bw 1e18B/s --prefill-flops 1000000FLOPS --vram 0
done
for m in $models; do
    both verdict --model "$m" --gpus 8
    both verdict --model "$m" --gpus 1 --kv-dtype int4 --weight-dtype int4 --eta 0.001
    both mix --model "$m" --gpus 100000 --step 0.25
    both prefill --model "$m" --kv-dtype int4
    both layers --model "$m" --weight-bits 0.1 --tp 1,1024
    both layers --model "$m" --weight-bits 64 --tp 1 --target-tps 0.000001
done
# Per-layer attention (window, linear and Mamba-2 state, DSA, MLP-only layers) from the Hugging Face corpus, at tiny and huge contexts.
hf=$(cd "$(dirname "$0")/../data/hf" && pwd)
for m in gpt-oss-20b gpt-oss-120b qwen3-next-80b-a3b-thinking deepseek-v3.2 nemotron-h-56b-base-8k llama-3.3-nemotron-super-49b-v1 llama-4-maverick-17b-128e-instruct qwen3.5-35b-a3b; do
    both verdict --model "$hf/$m.json" --gpus 8
    both verdict --model "$hf/$m.json" --gpus 1 --kv-dtype int4 --weight-dtype int4 --eta 0.001
    both verdict --model "$hf/$m.json" --gpus 8 --workload "s_cached=0,a_append=1,o_output=1"
    both verdict --model "$hf/$m.json" --gpus 100000 --workload "s_cached=1000000000,a_append=1000000000,o_output=1000000000"
    both verdict --model "$hf/$m.json" --gpus 8 --concurrency 64 --isl 100000 --osl 1000
    both mix --model "$hf/$m.json" --gpus 100000 --step 0.25
    both prefill --model "$hf/$m.json" --kv-dtype int4
    both parallel --model "$hf/$m.json" --gpus 8 --hardware h100-sxm
    both disagg --model "$hf/$m.json" --gpus 8
    both disagg --model "$hf/$m.json" --gpus 8 --arch gpu-pools
done
both layers --checkpoint llama-70b-fp4 --tp 1 --prefill-compute-ms 15 --rows 1000000000
both layers --checkpoint llama-70b-fp4 --tp 1 --offload-layers 80 --compute-ms 0 --prefill-compute-ms 0
both layers --checkpoint llama-70b-fp4 --tp 1 --copy-ms 0.000000001 --compute-ms 1000000000
both layers --checkpoint glm-5.2-q4 --tp 1024 --hbm-cap 1MB --c2c-bw 1KB/s --target-tps 1000000000
both layers --hbm-cap 1e18B --c2c-bw 1e18B/s
both verdict --workload "s_cached=1000000000,a_append=1,o_output=1" --model deepseek-v3 --gpus 100000

# Sweeps, CSV and JSON Lines, over the same extremes (including an f = 0 that
# cannot hold one session, whose gain is undefined: an empty cell or null).
for fmt in csv jsonl; do
    check sweep --format $fmt --threads 1 --workload "s_cached=1000000000,a_append=1,o_output=1" --grid "gpus=1,100000" --grid "eta=0.001,1" --grid "f=0,0.5,1"
    check sweep --format $fmt --threads 1 --hbm-reserve 0 --grid "model=llama-3.1-8b,deepseek-v3,mixtral-8x7b" --grid "kv-dtype=bf16,int4" --grid "hbm-cap=1MB,1e18B" --grid "idle=hold,park"
    check sweep --format $fmt --threads 1 --hardware h100-sxm --model llama-3.1-70b --weight-dtype fp8 --workload "s_cached=200000,a_append=1000,o_output=100" --grid "cpu-mem=1MB,480GB" --grid "f=0,0.9,1" --grid "ov=0,1"
    check sweep --format $fmt --threads 1 --grid "c2c-bw=1KB/s,1e18B/s" --grid "cpu-flops=1000000FLOPS,1e21FLOPS" --grid "sparse=0.000001,1"
done

# The deployment and lever subcommands over the same extremes.
for w in "s_cached=0,a_append=1,o_output=2,idle_gap=0" "s_cached=1000000,a_append=1,o_output=2,idle_gap=0" \
         "s_cached=100000,a_append=100000,o_output=100000,idle_gap=1000000s"; do
    both parallel --workload "$w" --gpus 8 --hardware h100-sxm
    both parallel --workload "$w" --gpus 72 --eta 0.001 --kv-dtype int4 --weight-dtype int4
    both ladder --workload "$w" --gpus 1 --max-gpus 8
    both disagg --workload "$w" --cpus-per-gpu 0.001
    both disagg --workload "$w" --arch gpu-pools --gpus 8 --hardware h200
    both compare --workload "$w" --across gpus=1,100000 --across cpus-per-gpu=0.001,1000
done
for m in $models; do
    both parallel --model "$m" --gpus 8 --hardware h200 --isl 2000 --osl 500
    both ladder --model "$m" --gpus 1
    both disagg --model "$m" --arch gpu-pools --gpus 8 --hardware b200 --isl 2000 --osl 500
done
# kvroof sim over the extremes, with few calls (each run is short; a steady state is not the point here).
for w in "s_cached=0,a_append=1,o_output=1" "s_cached=1000000000,a_append=1000000000,o_output=1000000000" \
         "s_cached=1,a_append=0,o_output=1" "s_cached=100000,a_append=1,o_output=1,idle_gap=1000000000s" \
         "s_cached=1000000,a_append=1,o_output=2,idle_gap=0s"; do
    both sim --workload "$w" --calls 40 --concurrency 4
    both sim --workload "$w" --calls 40 --request-rate 0.000001 --gpus 100000 --eta 0.001 --kv-dtype int4 --weight-dtype int4
    both sim --workload "$w" --calls 40 --concurrency 1000000 --f 1 --idle park --gap-dist lognormal --warmup 0
done

echo "extreme_outputs: $pass passed, $fail failed"
[ "$fail" -eq 0 ]

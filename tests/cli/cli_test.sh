#!/usr/bin/env bash
# The CLI as a user meets it: exit codes, the VERDICT line, one-line errors that
# name the flag, nothing written on bad input, byte-identical reruns.
# Usage: cli_test.sh path/to/kvroof
set -u
kvroof=$1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
pass=0
fail=0
ok() { pass=$((pass + 1)); }
bad() { fail=$((fail + 1)); echo "FAIL: $*"; }

# Good runs.
out=$("$kvroof" verdict 2>"$tmp/err"); rc=$?
[ $rc -eq 0 ] && ok || bad "default verdict exit $rc"
[ "$(printf '%s\n' "$out" | tail -n 1 | cut -c1-8)" = "VERDICT:" ] && ok || bad "default verdict's last line is not VERDICT:"
[ ! -s "$tmp/err" ] && ok || bad "default verdict wrote to stderr"
"$kvroof" verdict --json >"$tmp/v.json" && head -c1 "$tmp/v.json" | grep -q '{' && grep -q '"line": "VERDICT: ' "$tmp/v.json" && ok || bad "--json"
grep -q '"version"' "$tmp/v.json" && grep -q '"overrides"' "$tmp/v.json" && ok || bad "--json lacks version or resolved inputs"
grep -q '"time_bound_by": {' "$tmp/v.json" && grep -q '"batch_limited_by": {' "$tmp/v.json" && grep -q '"pipelined": {' "$tmp/v.json" \
    && grep -q '"best_lever": {' "$tmp/v.json" && ok || bad "--json lacks the VERDICT's facts as objects"
"$kvroof" verdict | tail -n 1 | grep -Eq '^VERDICT: [A-Z ]+ f=[0-9.]+ — offload: bankable [0-9.]+× at f=[0-9.]+ \(no overlap\), pipelined [0-9.]+× at f=[0-9.]+ \(perfect overlap\); best lever: .*; at f=0 time bound by HBM bandwidth, batch limited by HBM capacity$' \
    && ok || bad "the VERDICT names both offload ends, the best lever and the two bindings"
"$kvroof" verdict --solve cpus-per-gpu --target-gain 1.2 | tail -n 1 | grep -Eq '^SOLVE: --cpus-per-gpu >= [0-9.]+ for a bankable offload gain >= 1\.20×' && ok || bad "--solve: no SOLVE line"
# One-token requests have no inter-token latency: the verdict shows none (it printed B / throughput, 2,686 s).
"$kvroof" verdict --isl 1 --osl 1 | grep -q 'Without offload' && "$kvroof" verdict --isl 1 --osl 1 | grep -A1 'Without offload' | grep -q 'ITL —' && ok || bad "one-token requests show no ITL"
# The printed answer, plugged back in, meets the target: a ">=" is rounded up (2.6492 -> 2.65, not 2.649).
"$kvroof" verdict --solve cpus-per-gpu --target-gain 1.2 | tail -n 1 | grep -q '^SOLVE: --cpus-per-gpu >= 2.65 for' && ok || bad "--solve rounds a >= answer up"
"$kvroof" verdict --cpus-per-gpu 2.65 --json | tr -d ' \n' | grep -Eq '"gain":\{"conservative":1\.2[0-9]*' && ok || bad "--solve's printed answer meets the target"
"$kvroof" verdict --solve context --target fits --json | grep -q '"outcome": "at_most"' && ok || bad "--solve context --json"
# fits: one session at its longest, S + O: the free HBM over the KV per token, less the output (520 tokens).
"$kvroof" verdict --solve context --target fits | tail -n 1 | grep -q '^SOLVE: --context <= 130385 tokens ' && ok || bad "--solve context --target fits leaves out the output"
# One session fits only from f = 1.24e-06 (HBM free just short of its KV): the f shown is not "0.00",
# and the lever's --f and the "needs f >=" figure each give a point that fits when run.
edge=(--workload s_cached=130000,a_append=906,o_output=1000)
"$kvroof" verdict "${edge[@]}" >"$tmp/edge" 2>/dev/null
grep -q '^VERDICT: OFFLOAD f=1.25e-06 — offload: bankable [0-9.]* tok/s at f=1.25e-06 ' "$tmp/edge" && ok || bad "a tiny f reads as 0.00, or below where a session fits"
lever_f=$(grep 'CPU offload at the best f' "$tmp/edge" | grep -o -- '--f [0-9.e+-]*' | cut -d' ' -f2)
needs_f=$(grep -o 'it needs f >= [0-9.e+-]*' "$tmp/edge" | cut -d' ' -f5)
[ "$lever_f" = 1.25e-06 ] && [ "$needs_f" = 1.25e-06 ] && ok || bad "lever --f '$lever_f', needs f >= '$needs_f': not rounded up to where a session fits"
"$kvroof" verdict "${edge[@]}" --f "$lever_f" 2>/dev/null | tail -n 1 | grep -q '^VERDICT: OFFLOAD f=1.25e-06 ' && ok || bad "the lever's --f $lever_f does not fit"
"$kvroof" verdict --hardware H200 --model Llama-3.1-8B | tail -n 1 | grep -q '^VERDICT: ' && ok || bad "preset names are case-insensitive"
"$kvroof" verdict --hbm-cap 80TB 2>"$tmp/warn" >/dev/null && grep -q '^kvroof: warning: --hbm-cap 80TB per GPU is above every sourced GPU preset (the most: 288 GB, mi355x)' "$tmp/warn" \
    && ok || bad "a per-GPU capacity above every sourced GPU is warned about"
"$kvroof" verdict --model llama-2-7b --isl 4000 --osl 200 --concurrency 4 2>"$tmp/warn" >/dev/null \
    && grep -q "^kvroof: warning: workload class 'benchmark': its context at the end of a call, S + O = 4200 tokens, is longer than llama-2-7b's context window of 4096 tokens" "$tmp/warn" \
    && ok || bad "a request longer than the model's context window is warned about"
"$kvroof" verdict --model llama-2-7b --isl 100 --osl 100 --concurrency 4 2>"$tmp/warn" >/dev/null && ! grep -q "context window" "$tmp/warn" \
    && ok || bad "--isl/--osl replace the default workload before its context is checked"
"$kvroof" help terms | grep -q '^  MARGINAL$' && "$kvroof" help terms | grep -q '^  κ_crit$' && ok || bad "help terms"
"$kvroof" verdict --help | grep -q -- '--cpus-per-gpu .*\[default: from --hardware; gb200: 0.5\]' && ok || bad "--help shows the preset's default value"
"$kvroof" verdict --report "$tmp/a.md" >/dev/null && "$kvroof" verdict --report "$tmp/b.md" >/dev/null && cmp -s "$tmp/a.md" "$tmp/b.md" && ok || bad "--report not byte-identical on rerun"
"$kvroof" verdict --json >"$tmp/v2.json" && cmp -s "$tmp/v.json" "$tmp/v2.json" && ok || bad "--json not byte-identical on rerun"
# Seed 000's example under its own efficiencies (0.5 for every FLOP/s and bandwidth, the link as measured, no step overhead).
seed000="--eta 0.5 --eta-link 1 --step-overhead 0 --slo-tpot-bounds step"
"$kvroof" verdict --gpus 1 --cpus-per-gpu 4 --sparse 0.1 --workload "s_cached=16000,a_append=2000,o_output=400" $seed000 | tail -n 1 | grep -q '^VERDICT: OFFLOAD f=0.8' && ok || bad "seed example verdict"
"$kvroof" verdict --hardware h100-sxm --model llama-3.1-8b --concurrency 32 --isl 2000 --osl 500 | tail -n 1 | grep -Eq "^VERDICT: (KEEP KV ON GPU|MARGINAL .*) at concurrency 32 — offload: bankable .* pipelined .*; at f=0: ITL [0-9.]+ ms" && ok || bad "operating point verdict"
"$kvroof" verdict --batch 8 --isl 4096 --osl 2 --prefill separate --json | grep -q '"mode": "batch"' && ok || bad "operating point JSON"
"$kvroof" verdict --hardware h100-sxm --model llama-3.1-8b --concurrency 256 --isl 2000 --osl 500 --slo-ttft 100ms | grep -Eq '^  within the SLOs +no: TTFT ' && ok || bad "an operating point names the SLO it misses"
"$kvroof" verdict --prefill chunked | tail -n 1 | grep -q '^VERDICT: .* at the best load' && ok || bad "solved mode with chunked prefill"
out4090=$("$kvroof" verdict --hardware rtx-4090 --model llama-3.1-8b --workload "s_cached=0,a_append=128000,o_output=500")
echo "$out4090" | grep -q 'it needs f >= 0.646' && echo "$out4090" | grep -q 'mean number of sequences decoding' && ok || bad "one session that does not fit at f=0 names the f it needs; a fractional batch is explained"
"$kvroof" verdict --hardware h100-sxm --model llama-3.1-405b | tail -n 1 | grep -q '^VERDICT: DOES NOT FIT — weights' && ok || bad "does-not-fit is an answer"
# Neither point serves: no gain is 1.00× (0 over 0); an operating point that does not fit shows no figures of a run, only memory.
"$kvroof" verdict --slo-tpot 1ms | grep -q 'infeasible -> —$' && ! "$kvroof" verdict --slo-tpot 1ms | grep -q '1\.00×' \
    && "$kvroof" verdict --hardware h100-sxm --model llama-3.1-405b --json | grep -A1 '"gain": {' | grep -q '"conservative": null' \
    && ok || bad "a gain of nothing over nothing is shown as 1.00×"
"$kvroof" verdict --slo-tpot 1ms --report "$tmp/inf.md" >/dev/null && grep -q '^| f = 0, ov = 0 | 0.000 | 0 | 0.0 | — |' "$tmp/inf.md" \
    && ! grep -q '1\.00×' "$tmp/inf.md" && ok || bad "the markdown report shows 1.00× where nothing is served"
# Scenarios that do not fit say so in every command, with no figures: mix, layers on a card under the embeddings,
# disagg's balance (null, not 0 sockets); verdict's points show the ITL the SLO bounds beside the bare step.
"$kvroof" mix --hardware h100-sxm | grep -q '^MIX: DOES NOT FIT — weights 141.1 GB > HBM 78 GB usable' \
    && "$kvroof" layers --hbm-cap 1GB | grep -q '^LAYERS: llama-3.1-70b@bf16 TP1 — DOES NOT FIT: the 0.9313 GiB card cannot hold' \
    && ! "$kvroof" layers --hbm-cap 5GB | grep -q 'tok/s' \
    && "$kvroof" disagg --hardware h100-sxm --json | grep -q '"balance_cpus_per_gpu": null' \
    && "$kvroof" verdict | grep -q '39.6 tok/s (batch 1.07, ITL 26.9 ms, step 25.4 ms, TTFT' \
    && ok || bad "a scenario that does not fit shows figures, or verdict's point shows no ITL"
# A concurrency grid's max is its text in a plot's legend too (it was concurrency=inf).
"$kvroof" sweep --hardware h100-sxm --model llama-3.1-8b --weight-dtype fp8 --isl 2000 --osl 500 --grid concurrency=8,max \
    --grid f=0:0.2:0.1 --plot "$tmp/cm.svg" --x f --y tps_tok_per_s --out /dev/null \
    && grep -q '<text>concurrency=max</text>' "$tmp/cm.svg" && ok || bad "concurrency=max is not max in the plot legend"
# --solve: a target that holds on a window reads "from", not ">=" (at 500 GB the gain is 1.00x); a tok/s target over
# --dp replicas says so; an answer engines refuse is warned about. Labels say what the numbers are.
"$kvroof" verdict --solve hbm-cap --target-gain 1.1 --cpus-per-gpu 1 --sparse 0.1 | grep -q '^SOLVE: --hbm-cap from 143.2 GB for' \
    && "$kvroof" verdict --solve gpus --target tps=400 --dp 2 | grep -q 'tok/s over all --dp replicas together' \
    && "$kvroof" verdict --model llama-3.1-405b --hardware h200 --solve gpus --target tps=200 2>&1 >/dev/null \
        | grep -q '^kvroof: warning: at the answer: --gpus 13: ' \
    && "$kvroof" verdict --slo-tpot-bounds step --slo-tpot 20 | grep -q 'SLO TPOT 20.0 ms (on the bare step)' \
    && "$kvroof" verdict --net ib-ndr-measured --net-bw 100 --gpus 16 2>/dev/null | grep -q '^ *network custom: 100 GB/s' \
    && ok || bad "a solve window read as >=, a dp target unlabelled, or an SLO/network label that misstates its figure"
# A rung that serves nothing shows no tok/s and says why (it showed 0.0 tok/s beside hbm_capacity).
lad=$("$kvroof" ladder --hardware h100-sxm --model llama-3.1-70b --gpus 1)
echo "$lad" | grep -E '^  1 +\+ tensor parallel over 2 GPUs +--gpus 2 +— +— +— +— +one session does not fit$' -q \
    && echo "$lad" | grep -q '^  0 .* weights do not fit$' && echo "$lad" | grep -q '^LADDER: weights do not fit -> ' \
    && ok || bad "a ladder step that serves nothing shows tok/s or a gain"
# A lever's flag names the group as the user did: after --tp 2, "--gpus 4" would be refused beside it (the two must agree).
lad=$("$kvroof" ladder --hardware h100-sxm --tp 2)
echo "$lad" | grep -qE '^  1 +\+ tensor parallel over 4 GPUs +--tp 4 ' && echo "$lad" | grep -q '^LADDER: .* --tp 4, ' \
    && "$kvroof" ladder --hardware h100-sxm --tp 2 --json | grep -q '"flag": "--tp 4"' \
    && "$kvroof" compare --tp 2 --across hardware=h100-sxm,h200 | grep -q ' --tp 4 makes it serve ' \
    && "$kvroof" ladder --hardware h100-sxm --gpus 2 | grep -qE '^  1 +\+ tensor parallel over 4 GPUs +--gpus 4 ' \
    && ok || bad "ladder or compare printed --gpus for a group the user set with --tp"
# Two outputs may share a device or standard output (a sweep thrown away, its sidecar too).
"$kvroof" sweep --grid f=0,1 --out /dev/null --meta /dev/null && ok || bad "sweep --out /dev/null --meta /dev/null refused"
outnf=$("$kvroof" verdict --hardware h100-sxm --model llama-3.1-70b --gpus 1 --concurrency 8 --isl 2000 --osl 500)
echo "$outnf" | grep -Eq '^  throughput, tok/s +— +—$' && echo "$outnf" | grep -Eq '^  HBM used, GB +147\.0 +147\.0$' \
    && echo "$outnf" | grep -Eq '^  step bound by +— +—$' && ok || bad "an operating point whose weights do not fit shows what-if figures"
"$kvroof" verdict --hardware h100-sxm --model llama-3.1-70b --gpus 1 --concurrency 8 --json | grep -q '"throughput_tok_s": null' \
    && ok || bad "an operating point that does not fit gives a throughput in JSON"
# Under --attention-dp the model line gives the checkpoint's weights; the copies are Capacity's (79.89 GB over 8 GPUs).
outadp=$("$kvroof" verdict --hardware h200 --model deepseek-v3 --gpus 8 --attention-dp 1)
echo "$outadp" | grep -q '^  model     deepseek-v3 (MLA, MoE): 671.0B params (37.6B active), weights 673 GB fp8' \
    && echo "$outadp" | grep -q 'HBM 1.112 TB usable - weights 752.9 GB' && ok || bad "--attention-dp: the model line counts the attention copies as the checkpoint's weights"
# The layer-offload sweep budgets the whole card, as kvroof layers does: a 6 GB card holds the 4.20 GB embedding and
# head and one 1.71 GB layer.
"$kvroof" sweep --analysis layers --grid hbm-cap=1,6 --out - --no-meta >"$tmp/lc.csv" && grep -q '^6,offload,1.71128,1,79,' "$tmp/lc.csv" \
    && grep -q '^1,does_not_fit,1.71128,,,,,,,,,,,$' "$tmp/lc.csv" \
    && ok || bad "sweep --analysis layers refuses a card under the verdict's 2 GB reserve"
"$kvroof" verdict --hbm-cap 141GB --hbm-bw 4.8TB/s --c2c-bw 900GB/s --gpu-flops 2.5PFLOPS --slo-tpot 50ms --measured-tps 30 >/dev/null && ok || bad "unit-bearing flags"
"$kvroof" mix --mix "long:0.7,short:0.3" | grep -q '^binding @ f=0' && ok || bad "mix table"
"$kvroof" presets | grep -q 'rtx-2080ti-22g' && ok || bad "presets list"
# Grouped: superchips apart from PCIe hosts, models by attention and MLP kind, with their precisions' peaks.
"$kvroof" presets | grep -A1 '^Models: mixture of experts, MLA attention' | grep -q 'deepseek-r1 .*8 of 256 experts' \
    && "$kvroof" presets | grep -A1 '^Hardware, GPU + Grace superchips' | grep -q 'gb200 .*fp4 10 PFLOPS' && ok || bad "presets are not grouped"
# Per-layer attention from a Hugging Face config: a Mistral-style window on every layer is echoed and sizes the session (2 layers · 2·8·128·2 B · min(S, 4096)).
printf '%s' '{"num_hidden_layers":2,"hidden_size":4096,"num_attention_heads":32,"num_key_value_heads":8,"intermediate_size":14336,"vocab_size":32000,"max_position_embeddings":32768,"sliding_window":4096}' >"$tmp/mistral.json"
outw=$("$kvroof" verdict --model "$tmp/mistral.json" --workload "s_cached=60000,a_append=4000,o_output=500")
echo "$outw" | grep -q 'layers 0 full attention, 2 sliding window of 4096 tokens' && echo "$outw" | grep -q "one session's KV at S=64000 is 33.55 MB" && ok || bad "a sliding window is echoed and caps the session's KV"
"$kvroof" presets | grep -q 'gpt-oss-120b .*18 of 36 layers window 128' && "$kvroof" presets | grep -q 'qwen3-next-80b .*36 of 48 layers linear attention' && ok || bad "presets show their layer kinds"
"$kvroof" presets | grep -q 'nemotron-h-56b .*54 of 118 layers Mamba-2, 54 MLP only' && "$kvroof" presets | grep -q 'llama-4-maverick .*1 of 128 experts + 1 shared on 24 of 48 layers; 36 of 48 layers window 8192' && ok || bad "presets show Mamba-2, MLP-only layers and Llama-4's shared expert"
"$kvroof" presets | grep -q 'gemma-3-27b .*52 of 62 layers window 1024' && "$kvroof" presets | grep -q 'mistral-small-3 ' && "$kvroof" presets | grep -q 'gemma-4-26b-a4b .*25 of 30 layers window 1024' && ok || bad "presets show Gemma-3-27B's windows, Mistral-Small-3 and Gemma-4-26B-A4B"
# Qwen3.5's config says mamba_ssm_dtype float32: 30 layers x (32·128·128 x 4 B + 8,192·3 x 2 B) = 64.39 MB, echoed as such.
"$kvroof" verdict --model "$(dirname "$0")/../data/hf/qwen3.5-35b-a3b.json" | grep -q '30 linear attention (state 64.39 MB per sequence, recurrent fp32)' && ok || bad "Qwen3.5's FP32 recurrent state is echoed"
# MiniMax-M1's attn_type_list: 70 lightning-attention layers, each 64 heads x 128 x 128 x 2 B: 146.8 MB per sequence.
"$kvroof" verdict --model "$(dirname "$0")/../data/hf/minimax-m1.json" | grep -q 'layers 10 full attention, 70 lightning attention (state 146.8 MB per sequence, bf16)' && ok || bad "MiniMax-M1's lightning layers and their state are echoed"
"$kvroof" --version | grep -q '^kvroof ' && ok || bad "--version"
"$kvroof" verdict --help | grep -q 'Examples' && ok || bad "verdict --help has examples"
(cd "$tmp" && "$kvroof" verdict >/dev/null) && ok || bad "runs from any folder (embedded presets)"

# prefill and layers: verdict's default scenario, the papers' tables behind --table seed, the answer lines, JSON.
"$kvroof" prefill --json >"$tmp/p.json" && grep -q '"hardware": "gb200"' "$tmp/p.json" && grep -q '"model": "llama-3.1-70b"' "$tmp/p.json" \
    && grep -q '"name": "codex"' "$tmp/p.json" && grep -q '"gpus": 1,' "$tmp/p.json" && grep -q '"link": "nvlink-c2c"' "$tmp/p.json" \
    && ok || bad "plain prefill is not verdict's default scenario (gb200, llama-3.1-70b, codex, 1 GPU, its own link)"
# By hand: κ_crit = F_pf/B_kv · link/C_eff = 141.1 GFLOP / 327,680 B · 225 GB/s / (0.7 · 2.5 PFLOPS) = 55.4 > κ_ratio 64,338/3,991 = 16.1;
# P_OH = 16.1/55.4 = 0.291, link share 0.291/1.291 = 23 %.
"$kvroof" prefill | tail -n 1 | grep -q '^PREFILL: compute-bound — κ_ratio 16.1 <= κ_crit 55.4; 23% of TTFT is the link$' && ok || bad "default prefill answer line"
"$kvroof" layers --json | grep -q '"hardware": "gb200"' && "$kvroof" layers | grep -q '^llama-3.1-70b@bf16  *1 ' && ok || bad "plain layers is not verdict's default scenario"
# --table seed is the κ_crit paper's scenario and table: the committed report, byte for byte, and its answer line.
"$kvroof" prefill --table seed --report "$tmp/pk.md" >/dev/null && cmp -s "$tmp/pk.md" "$(dirname "$0")/../../outputs/prefill_kappa.md" && ok || bad "prefill --table seed differs from outputs/prefill_kappa.md"
"$kvroof" prefill --table seed | tail -n 1 | grep -q '^PREFILL: transfer-bound — κ_ratio 16.1 > κ_crit 4.66; 78% of TTFT is the link$' && ok || bad "seed prefill answer line"
# The paper's fitted H100 C_eff (1,900 TFLOP/s) gives its figure back; the seed default is 0.7 x the FP8 peak.
"$kvroof" prefill --table seed --prefill-flops 1900TFLOPS | tail -n 1 | grep -q 'κ_crit 3.40; 83% of TTFT' && ok || bad "prefill with the paper's C_eff"
"$kvroof" prefill --table seed | grep -q 'GB200 unified HBM' && ok || bad "prefill --table seed prints the kappa table"
"$kvroof" prefill | grep -q 'GB200 unified HBM' && bad "plain prefill prints the paper's kappa table" || ok
"$kvroof" prefill --workload "s_cached=100,a_append=4000,o_output=1" | tail -n 1 | grep -q '^PREFILL: compute-bound' && ok || bad "compute-bound prefill"
"$kvroof" prefill --json | grep -q '"answer": "PREFILL: ' && ok || bad "prefill --json"
# C_eff is named by the precision the GEMMs run in: MXFP4 runs at B200's FP4 peak (0.7 x 9 PFLOPS), on H100 (no FP4 math) at BF16's.
"$kvroof" prefill --compute-dtype mxfp4 --hardware b200 | grep -q 'C_eff 6.3 PFLOPS per GPU: 0.7 × fp4 peak)' && ok || bad "prefill --compute-dtype mxfp4: C_eff not named fp4 peak"
"$kvroof" prefill --compute-dtype mxfp4 --hardware h100-sxm | grep -q 'C_eff 692.6 TFLOPS per GPU: 0.7 × BF16 peak)' && ok || bad "prefill --compute-dtype mxfp4 on h100: C_eff not the BF16 peak"
"$kvroof" layers | tail -n 1 | grep -q '^LAYERS: ' && ok || bad "default layers answer line"
"$kvroof" layers --table seed --report "$tmp/lb.md" >/dev/null && cmp -s "$tmp/lb.md" "$(dirname "$0")/../../outputs/layers_budget.md" && ok || bad "layers --table seed differs from outputs/layers_budget.md"
"$kvroof" layers --table seed | grep -q '^glm-5.2-q4 *1 *5.47 *3 *76 *415.75 *0.02526 *0.02532' && ok || bad "layers table GLM TP1 row"
"$kvroof" layers --table seed --checkpoint llama-70b-fp4 --tp 1 --compute-ms 3.58 | tail -n 1 | grep -q '≤ 0.7874 tok/s serial' && ok || bad "re-charged 70B row"
"$kvroof" layers --table seed --model llama-3.1-70b --weight-bits 4.25 --tp 2 | tail -n 1 | grep -q 'all 80 layers fit' && ok || bad "model-built checkpoint"
"$kvroof" layers --report "$tmp/l1.md" >/dev/null && "$kvroof" layers --report "$tmp/l2.md" >/dev/null && cmp -s "$tmp/l1.md" "$tmp/l2.md" && ok || bad "layers report not byte-identical"

# sweep: streams, threads and shards agree, plots, report.
"$kvroof" sweep --grid "cpus-per-gpu=0.5,1,4" --grid "f=0:1:0.001" --threads 1 >"$tmp/s1.csv" && ok || bad "sweep runs"
"$kvroof" sweep --grid "cpus-per-gpu=0.5,1,4" --grid "f=0:1:0.001" --threads 2 >"$tmp/s2.csv" && cmp -s "$tmp/s1.csv" "$tmp/s2.csv" && ok || bad "sweep --threads 1 != --threads 2"
for k in 1 2 3; do "$kvroof" sweep --grid "cpus-per-gpu=0.5,1,4" --grid "f=0:1:0.001" --shard $k/3; done >"$tmp/s3.csv"
cmp -s "$tmp/s1.csv" "$tmp/s3.csv" && ok || bad "sweep shards do not concatenate to the whole"
[ "$(wc -l <"$tmp/s1.csv")" -eq 3004 ] && ok || bad "sweep row count"
head -n 1 "$tmp/s1.csv" | grep -q '^cpus_per_gpu,f,status,f_star_con,f_star_opt,tps_base_con_tok_per_s,tps_base_opt_tok_per_s,tps_base_con_per_gpu_tok_per_s' && ok || bad "sweep CSV header"
# A point that does not fit: its status, and empty cells (null in JSON) where no number exists.
"$kvroof" sweep --grid "hbm-cap=10,186" --grid "f=0,0.5" >"$tmp/fit.csv" && grep -q '^10,0,does_not_fit,,,,,,,,,,,,,,,,hbm_capacity,hbm_capacity,does_not_fit$' "$tmp/fit.csv" \
    && grep -q '^186,0.5,ok,' "$tmp/fit.csv" && ok || bad "sweep: a point that does not fit has no status or numbers: $(cat "$tmp/fit.csv")"
"$kvroof" sweep --grid "hbm-cap=10" --grid "f=0.5" --format jsonl | grep -q '"status":"does_not_fit",.*"tps_con_tok_per_s":null,.*"gain_con":null' && ok || bad "sweep jsonl: no null where nothing fits"
"$kvroof" sweep --grid "f=0,0.5" --format jsonl | head -n 1 | grep -q '^{"f":0,' && ok || bad "sweep jsonl"
# A benchmark's curve: --isl/--osl and a concurrency grid give operating-point rows, the same as verdict --concurrency.
"$kvroof" sweep --hardware h100-sxm --model llama-3.1-8b --weight-dtype fp8 --isl 2000 --osl 500 --grid "concurrency=1,32" >"$tmp/load.csv" \
    && head -n 1 "$tmp/load.csv" | grep -q '^load_clients,f,ov,status,batch_seq,running_req,itl_ms,' && [ "$(wc -l <"$tmp/load.csv")" -eq 3 ] \
    && ok || bad "sweep under a load: $(cat "$tmp/load.csv")"
# (--f 0: the JSON's first "itl_s" is the point at f = 0, ov = 0; the sweep prints %.6g.)
itl=$("$kvroof" verdict --hardware h100-sxm --model llama-3.1-8b --weight-dtype fp8 --isl 2000 --osl 500 --concurrency 32 --f 0 --json \
    | grep -m1 '"itl_s"' | awk -F': ' '{ gsub(",", "", $2); printf "%.6g", $2 * 1000 }')
[ -n "$itl" ] && grep -q "^32,0,0,ok,[^,]*,[^,]*,$itl," "$tmp/load.csv" && ok || bad "sweep --grid concurrency=32 row's ITL is not verdict --concurrency 32's ($itl): $(tail -n 1 "$tmp/load.csv")"
# The MoE layer latency: echoed for a MoE model only, and a batch-1 step of Qwen3-30B-A3B (48 MoE layers) is
# 48 · 27 µs = 1.296 ms longer with it than with --moe-layer-latency 0.
"$kvroof" verdict --hardware h100-sxm --model qwen3-30b-a3b --weight-dtype fp8 | grep -q 'step overhead 1.5 ms, MoE layer 27 us$' \
    && ! "$kvroof" verdict | grep -q 'MoE layer' && ok || bad "MoE layer latency echo"
moe_step() { "$kvroof" verdict --hardware h100-sxm --model qwen3-30b-a3b --weight-dtype fp8 --batch 1 --isl 128 --osl 2 \
    --prefill separate --f 0 "$@" --json | grep -m1 '"step_bare_s"' | awk -F': ' '{ gsub(",", "", $2); print $2 }'; }
awk -v a="$(moe_step)" -v b="$(moe_step --moe-layer-latency 0)" 'BEGIN { d = (a - b) * 1e6; exit !(d > 1295.99 && d < 1296.01) }' \
    && ok || bad "--moe-layer-latency: step difference $(moe_step) - $(moe_step --moe-layer-latency 0) is not 1.296 ms"
# The experts' GEMM efficiency: echoed when given, for a MoE model; a dense model's numbers ignore it.
"$kvroof" verdict --hardware h100-sxm --model qwen3-30b-a3b --weight-dtype fp8 --eta-moe-gemm 0.2 \
    | grep -q 'step overhead 1.5 ms, MoE layer 27 us, expert GEMMs 0.2$' \
    && [ "$("$kvroof" verdict)" = "$("$kvroof" verdict --eta-moe-gemm 0.2 | grep -v '^  overrides --eta-moe-gemm=0.2$')" ] \
    && ok || bad "--eta-moe-gemm echo, or a dense model moved by it"
# ... and a MoE model's compute-bound step (4,096 sequences of Qwen3-30B-A3B) grows when its expert GEMMs run slower.
moe_big() { "$kvroof" verdict --hardware h100-sxm --model qwen3-30b-a3b --weight-dtype fp8 --kv-dtype fp8 --batch 4096 --isl 128 \
    --osl 2 --prefill separate --f 0 "$@" --json | grep -m1 '"step_bare_s"' | awk -F': ' '{ gsub(",", "", $2); print $2 }'; }
awk -v a="$(moe_big --eta-moe-gemm 0.1)" -v b="$(moe_big)" 'BEGIN { exit !(a > 1.5 * b) }' \
    && ok || bad "--eta-moe-gemm 0.1: step $(moe_big --eta-moe-gemm 0.1) is not well above $(moe_big)"
"$kvroof" sweep --config "$(dirname "$0")/../../configs/sweep_cpus_per_gpu.json" --out "$tmp/cfg.csv" >/dev/null && [ "$(wc -l <"$tmp/cfg.csv")" -eq 17 ] && ok || bad "sweep --config --out"
"$kvroof" sweep --grid "sparse=0.1,1" --grid "f=0:1:0.1" --plot "$tmp/p.svg" --x f --y tps_con_tok_per_s >/dev/null && grep -q '<svg' "$tmp/p.svg" && ok || bad "sweep --plot"
# A point that does not fit has no figures of a run in JSON: what binds it and its concurrency are null too.
"$kvroof" verdict --hardware h100-sxm --model llama-3.1-70b --batch 8 --isl 4096 --osl 2 --f 0 --json >"$tmp/nofit.json" \
    && grep -q '"time_bound_by": null' "$tmp/nofit.json" && grep -q '"concurrency": null' "$tmp/nofit.json" \
    && grep -q '"prefill_bound": null' "$tmp/nofit.json" && ! grep -q '"concurrency": [0-9]' "$tmp/nofit.json" \
    && ok || bad "verdict --json: figures for a point that does not fit"
"$kvroof" verdict --concurrency max --isl 100 --osl 100 --json | grep -A8 '"load": {' | grep -q '"value": null' \
    && ok || bad "verdict --json: --concurrency max shows a number as its load"
# The LADDER line's flags reproduce its last rung: offload at the last rung's f (here 0: the later levers took its gain).
"$kvroof" ladder --gpus 1 --cpus-per-gpu 4 --sparse 0.1 --workload "s_cached=16000,a_append=2000,o_output=400" \
    | grep -q '^LADDER: .*--f 0\.00 (the later levers left offload no bankable gain; ov = 1: --f 1\.00)' && ok || bad "ladder: the summary's --f is the last rung's"
# Requests of one output token: nothing decodes, so no ITL, decode step or per-user rate is shown (the VERDICT gives TTFT).
"$kvroof" verdict --concurrency 8 --isl 2000 --osl 1 >"$tmp/o1.txt" && grep -qE '^  ITL, ms +— +—$' "$tmp/o1.txt" \
    && grep -q '^VERDICT: .*at f=0: TTFT ' "$tmp/o1.txt" && ok || bad "verdict: an ITL for requests of one output token"
# NVLink domains of one GPU (GH200): the inputs echo no NVLink all-reduce step that is not charged.
"$kvroof" verdict --hardware gh200 --gpus 4 --model llama-3.1-8b | grep -q 'each over the network alone (NVLink domains of 1 GPU' \
    && ok || bad "verdict: GH200's echo names an NVLink all-reduce step"
# Nothing fits: a result, not a crash. The plot says so, the CSV is written, gnuplot's warnings stay off stderr.
"$kvroof" parallel --hardware l4 --model deepseek-v3 --gpus 1 --plot "$tmp/none.svg" --csv "$tmp/none.csv" >/dev/null 2>"$tmp/none.err" \
    && grep -q 'nothing to plot' "$tmp/none.svg" && [ -s "$tmp/none.csv" ] && [ ! -s "$tmp/none.err" ] && ok || bad "parallel --plot where nothing fits"
"$kvroof" sweep --grid f=0,1 --hardware h200 --plot "$tmp/one.svg" --x f --y gain_con --out /dev/null 2>"$tmp/one.err" \
    && grep -q '<svg' "$tmp/one.svg" && [ ! -s "$tmp/one.err" ] && ok || bad "sweep --plot with no gain to draw: gnuplot's warnings on stderr"
# Axis labels with units from the knob table, never a raw column name; a 1x line on a gain plot.
grep -q 'throughput, ov = 0 (tok/s)' "$tmp/p.svg" && grep -q 'offload fraction f' "$tmp/p.svg" && ! grep -q 'tps_con_tok_per_s' "$tmp/p.svg" && ok || bad "sweep --plot: axis labels"
"$kvroof" sweep --grid "hbm-bw=4,8" --grid "cpus-per-gpu=0.5,1,2" --plot "$tmp/g.svg" --x cpus-per-gpu --y gain_con >/dev/null \
    && grep -q 'CPU sockets per GPU' "$tmp/g.svg" && grep -q '1x: break-even' "$tmp/g.svg" && grep -q 'hbm-bw=4' "$tmp/g.svg" && ok || bad "sweep --plot: gain plot"
"$kvroof" report --out "$tmp/rep" >/dev/null && [ -s "$tmp/rep/SUMMARY.md" ] && [ -s "$tmp/rep/throughput_vs_f.svg" ] && ok || bad "report"

# sweep --analysis prefill: the row at the default scenario carries kvroof prefill's kappa_crit (six digits).
kc=$("$kvroof" prefill --json | grep -m1 '"kappa_crit"' | sed 's/.*: *\([0-9.e+-]*\).*/\1/')
"$kvroof" sweep --analysis prefill --grid "ov=0,1" >"$tmp/pf.csv" \
    && head -n 1 "$tmp/pf.csv" | grep -q '^ov,regime,kappa_crit,kappa_ratio,t_gpu_ms,' \
    && awk -F, -v k="$kc" 'NR > 1 { d = $3 / k - 1; if (d < 0) d = -d; if (d > 1e-5) bad = 1 } END { exit bad || NR != 3 }' "$tmp/pf.csv" \
    && ok || bad "sweep --analysis prefill: kappa_crit is not kvroof prefill's ($kc): $(cat "$tmp/pf.csv")"
# sweep --analysis layers: the row carries kvroof layers --model's perfect-overlap ceiling (deepseek-v3 on one H100).
"$kvroof" sweep --analysis layers --hardware h100-sxm --grid "model=deepseek-v3" --format jsonl >"$tmp/ly.jsonl" \
    && grep -q '"offloaded_layers":55,' "$tmp/ly.jsonl" && grep -q '"overlap_tps_tok_per_s":0.0944572,' "$tmp/ly.jsonl" \
    && "$kvroof" layers --model deepseek-v3 --hardware h100-sxm | grep -q '55 of 61 layers offloaded.*≤ 0.09446 tok/s with perfect overlap' \
    && ok || bad "sweep --analysis layers: not kvroof layers' row: $(cat "$tmp/ly.jsonl")"
# sweep bad input: exit 2, one line naming the --grid entry, no --out file.
expect_bad_sweep() {
    local needle=$1; shift
    rm -f "$tmp/o.csv"
    "$kvroof" sweep "$@" --out "$tmp/o.csv" >"$tmp/out" 2>"$tmp/err"
    local rc=$?
    if [ $rc -ne 2 ]; then bad "sweep $* -> exit $rc, want 2"; return; fi
    if ! grep -qF -- "$needle" "$tmp/err"; then bad "sweep $* -> stderr lacks '$needle': $(cat "$tmp/err")"; return; fi
    if [ "$(wc -l <"$tmp/err")" -ne 1 ] || [ -s "$tmp/out" ] || [ -e "$tmp/o.csv" ]; then bad "sweep $* -> not one line / wrote output"; return; fi
    ok
}
expect_bad_sweep "--grid 'bogus=1'" --grid "bogus=1"
expect_bad_sweep "empty range" --grid "f=1:0:0.1"
expect_bad_sweep "step must be > 0" --grid "f=0:1:0"
expect_bad_sweep "unknown unit 'GB'" --grid "hbm-bw=4.8GB"
expect_bad_sweep "--grid model=nope" --grid "model=llama-3.1-70b,nope"
expect_bad_sweep "--grid sparse=0" --grid "sparse=0,0.5"
expect_bad_sweep "--shard" --grid "f=0,1" --shard 3/2
expect_bad_sweep "--threads" --grid "f=0,1" --threads 0
expect_bad_sweep "--format" --grid "f=0,1" --format xml
expect_bad_sweep "--x" --grid "f=0,1" --plot "$tmp/x.svg" --x sparse --y gain_con
expect_bad_sweep "--analysis: must be verdict, prefill or layers" --analysis layer --grid "gpus=1,2"
expect_bad_sweep "--grid ov: each layers row shows both ends" --analysis layers --grid "ov=0,1"
expect_bad_sweep "--grid f: the prefill analysis has no f" --analysis prefill --grid "f=0,1"
expect_bad_sweep "--analysis prefill: takes no load" --analysis prefill --grid "gpus=1,2" --concurrency 8
expect_bad_sweep "not a --mix" --analysis prefill --grid "gpus=1,2" --mix "long:1"

# Bad input: exit 2, one line on stderr naming the flag, nothing on stdout, no report.
expect_bad() {
    local needle=$1; shift
    rm -f "$tmp/r.md"
    "$kvroof" "$@" --report "$tmp/r.md" >"$tmp/out" 2>"$tmp/err"
    local rc=$?
    if [ $rc -ne 2 ]; then bad "$* -> exit $rc, want 2"; return; fi
    if ! grep -qF -- "$needle" "$tmp/err"; then bad "$* -> stderr lacks '$needle': $(cat "$tmp/err")"; return; fi
    if [ "$(wc -l <"$tmp/err")" -ne 1 ]; then bad "$* -> stderr is not one line"; return; fi
    if [ -s "$tmp/out" ] || [ -e "$tmp/r.md" ]; then bad "$* -> wrote output on bad input"; return; fi
    ok
}
expect_bad "--hbm-bw" verdict --hbm-bw -1
expect_bad "--hbm-bw" verdict --hbm-bw 4.8GB
expect_bad "--hbm-cap" verdict --hbm-cap nan
expect_bad "--gpu-flops" verdict --gpu-flops inf
expect_bad "--c2c-bw" verdict --c2c-bw 0
expect_bad "--cpus-per-gpu" verdict --cpus-per-gpu 0
expect_bad "--f" verdict --f 1.5
expect_bad "--ov" verdict --ov -0.1
expect_bad "--sparse" verdict --sparse 0
expect_bad "--kv-dtype" verdict --kv-dtype fp3
expect_bad "gb200" verdict --hardware nope
expect_bad "llama-3.1-70b" verdict --model nope
expect_bad "--workload" verdict --workload "s_cached=1,a_append=2"
expect_bad "--workload" verdict --workload "s_cached=x,a_append=2,o_output=3"
expect_bad "--mix" verdict --mix "long"
expect_bad "--mix" verdict --mix "long:0.5,tiny:0.5"
expect_bad "--gpus" verdict --gpus 1.5
expect_bad "--slo-tpot" verdict --slo-tpot fast
expect_bad "--measured-tps" verdict --measured-tps -3
expect_bad "--nope" verdict --nope 1
expect_bad "--step" mix --step 0
expect_bad "--c2c-bw" prefill --c2c-bw 0
expect_bad "--link-bw: now --c2c-bw" prefill --link-bw 64
expect_bad "--link-bw: now --c2c-bw" layers --link-bw 10
expect_bad "--prefill-flops" prefill --prefill-flops -5
expect_bad "--ov" prefill --ov 2
expect_bad "--link" prefill --link pcie-gen9
expect_bad "--workload" prefill --workload "s_cached=1"
expect_bad "--tp" layers --tp 0
expect_bad "--tp" layers --tp 1,x
expect_bad "--checkpoint" layers --checkpoint nope
expect_bad "--weight-bits" layers --checkpoint llama-70b-fp4 --weight-bits 4
expect_bad "--offload-layers" layers --checkpoint llama-70b-fp4 --offload-layers 81
expect_bad "--hbm-cap" layers --hbm-cap -1GiB
expect_bad "--budget: now --hbm-cap" layers --budget 100
expect_bad "--weight-dtype: sets the precision of the --model checkpoint" layers --checkpoint llama-70b-fp4 --weight-dtype fp8
expect_bad "--target-tps" layers --target-tps 0

# One knob, one meaning: help shows the default that runs, one bare unit, flags override a sweep file.
"$kvroof" prefill --help | grep -qE -- '--gpus .*\[default: .*gb200: 1; --table seed: 8\]' && ok || bad "prefill --help does not show the GPUs plain prefill and --table seed run"
"$kvroof" prefill --table seed --json | grep -q '"gpus": 8' && ok || bad "prefill --table seed does not run 8 GPUs"
l1=$("$kvroof" layers --table seed --c2c-bw 10 | tail -n 1); l2=$("$kvroof" layers --table seed --c2c-bw 10GB/s | tail -n 1); l3=$("$kvroof" layers --table seed --c2c-bw 10GiB/s | tail -n 1)
[ "$l1" = "$l2" ] && [ "$l1" != "$l3" ] && ok || bad "layers --c2c-bw: a bare number is not GB/s"
# prefill and layers take the scenario knobs by the knob table's names, help lines and bounds, as verdict does.
for k in c2c-bw hbm-cap link hardware model; do
    v=$("$kvroof" verdict --help | grep -E -- "^ +--$k " | sed -E 's/\[default:.*//'); l=$("$kvroof" layers --help | grep -E -- "^ +--$k " | sed -E 's/\[default:.*//')
    [ -n "$v" ] && [ "$v" = "$l" ] && ok || bad "layers --$k is not verdict's knob: '$l' vs '$v'"
done
for k in c2c-bw gpus kv-dtype eta-compute workload; do
    v=$("$kvroof" verdict --help | grep -E -- "^ +--$k " | sed -E 's/\[default:.*//'); p=$("$kvroof" prefill --help | grep -E -- "^ +--$k " | sed -E 's/\[default:.*//')
    [ -n "$v" ] && [ "$v" = "$p" ] && ok || bad "prefill --$k is not verdict's knob: '$p' vs '$v'"
done
"$kvroof" layers --hbm-cap 100GiB --json | grep -q '"card_budget_bytes": 107374182400' && ok || bad "layers --hbm-cap 100GiB is not a 100 GiB budget"
printf '%s' '{"fixed":{"hardware":"h200"},"grid":["f=0,0.5"]}' >"$tmp/sw.json"
"$kvroof" sweep --config "$tmp/sw.json" --hardware gb200 >"$tmp/sw1.csv" && "$kvroof" sweep --hardware gb200 --grid f=0,0.5 >"$tmp/sw2.csv" \
    && cmp -s "$tmp/sw1.csv" "$tmp/sw2.csv" && ok || bad "sweep --hardware gb200 did not override the file's h200"
"$kvroof" sweep --config "$tmp/sw.json" >"$tmp/sw3.csv" && ! cmp -s "$tmp/sw1.csv" "$tmp/sw3.csv" && ok || bad "sweep file's hardware ignored"
# The command line overrides the file's grid axis of a knob (in its place), its load, and its mix with --isl/--osl.
"$kvroof" sweep --config "$tmp/sw.json" --grid f=0.25 --no-meta >"$tmp/sw4.csv" && "$kvroof" sweep --hardware h200 --grid f=0.25 >"$tmp/sw5.csv" \
    && cmp -s "$tmp/sw4.csv" "$tmp/sw5.csv" && ok || bad "sweep --grid f=... refused or joined the file's f axis"
printf '%s' '{"fixed":{"mix":"long:0.7,short:0.3"},"load":{"concurrency":"4"},"grid":["f=0,0.5"]}' >"$tmp/swl.json"
"$kvroof" sweep --config "$tmp/swl.json" --batch 3 --isl 500 --osl 100 --out "$tmp/swl.csv" \
    && "$kvroof" sweep --batch 3 --isl 500 --osl 100 --grid f=0,0.5 --no-meta | cmp -s - "$tmp/swl.csv" \
    && grep -A1 '"from": "command line, overrides --config"' "$tmp/swl.csv.meta.json" | grep -q '"knob": "workload"' \
    && grep -q "batch (in place of the file's concurrency)" "$tmp/swl.csv.meta.json" \
    && ok || bad "sweep --batch/--isl did not replace the file's concurrency and mix, or the provenance does not say so"

"$kvroof" sweep --threads 2 --grid "f=0:1:0.1" --grid "sparse=0.1,0.5,1" --grid "cpus-per-gpu=0.5,2" | sort >"$tmp/o1.csv"
"$kvroof" sweep --threads 1 --grid "sparse=0.1,0.5,1" --grid "cpus-per-gpu=0.5,2" --grid "f=0:1:0.1" | sort >"$tmp/o2.csv"
[ "$(wc -l <"$tmp/o1.csv")" -eq 67 ] && cmp -s "$tmp/o1.csv" "$tmp/o2.csv" && ok || bad "sweep rows differ with the axis order"

# Provenance: --out FILE writes FILE.meta.json (version, fixed inputs and where each came from, grid);
# a flag on the command line overrides the file's value and the provenance says so; the sidecar reproduces FILE.
printf '%s' '{"fixed":{"hardware":"h200","gpus":"1.5"},"grid":["f=0,0.5"]}' >"$tmp/pv.json"
"$kvroof" sweep --config "$tmp/pv.json" --gpus 2 --grid "sparse=0.5,1" --out "$tmp/pv.csv" && ok || bad "sweep: a command-line --gpus does not replace the file's"
grep -q '"from": "command line, overrides --config"' "$tmp/pv.csv.meta.json" && grep -q '"version": "' "$tmp/pv.csv.meta.json" \
    && ok || bad "sweep provenance lacks the version or the override"
"$kvroof" sweep --config "$tmp/pv.csv.meta.json" | cmp -s - "$tmp/pv.csv" && ok || bad "sweep --config OUT.meta.json does not reproduce OUT"
head -n 1 "$tmp/pv.csv" | grep -q '^sparse,f,' && ok || bad "sweep --out: the first line is not the CSV header"
"$kvroof" sweep --grid "f=0,1" --meta "$tmp/m.json" >/dev/null && grep -q '"grid"' "$tmp/m.json" && ok || bad "sweep --meta FILE for stdout"
# The sidecar of a JSON Lines shard reproduces that shard, as JSON Lines (format and shard were recorded, not read).
"$kvroof" sweep --grid "f=0:1:0.25" --format jsonl --shard 2/2 --out "$tmp/js.jsonl" \
    && "$kvroof" sweep --config "$tmp/js.jsonl.meta.json" | cmp -s - "$tmp/js.jsonl" \
    && "$kvroof" sweep --config "$tmp/js.jsonl.meta.json" --format csv --shard 1/1 | head -n 1 | grep -q '^f,' \
    && ok || bad "sweep --config OUT.meta.json does not reproduce a JSON Lines shard, or flags do not override it"
# Grid values naming files, the sidecar in another folder, replayed from a third: the same bytes (a workload
# list keeps its ';' between values; each file cell shows the path as the first run was given it).
mkdir -p "$tmp/rp/out" "$tmp/elsewhere"
printf '%s' '{"s_cached_tokens": 1000, "a_append_tokens": 100, "o_output_tokens": 50}' >"$tmp/rp/w.json"
cp "$tmp/rp/w.json" "$tmp/rp/w2.json"
(cd "$tmp/rp" && "$kvroof" sweep --grid "workload=w.json;codex;w2.json" --grid "f=0,0.5" --out out/w.csv) \
    && (cd "$tmp/elsewhere" && "$kvroof" sweep --config ../rp/out/w.csv.meta.json | cmp -s - "$tmp/rp/out/w.csv") \
    && grep -q '^w2.json,0.5,' "$tmp/rp/out/w.csv" && ok || bad "a sidecar with file-valued grid values does not replay from another folder"
(cd "$tmp/rp" && "$kvroof" sweep --grid "workload=w.json;codex" --grid "f=0,0.5" --out here.csv) \
    && (cd "$tmp/elsewhere" && "$kvroof" sweep --config ../rp/here.csv.meta.json | cmp -s - "$tmp/rp/here.csv") \
    && ok || bad "a sidecar beside its grid's files does not replay from another folder"

# One knob, one help: every scenario subcommand lists the same knob flags with their units.
for sub in verdict mix sweep parallel ladder disagg compare sim; do
    "$kvroof" $sub --help | grep -qE -- '--c2c-bw .*\[GB/s\]' && "$kvroof" $sub --help | grep -q 'tensor-parallel all-reduces' && ok || bad "$sub --help: knob help not from the table"
done

# kvroof parallel: examples in --help; text, JSON, CSV and the VERDICT line; the same inputs give the same bytes.
"$kvroof" parallel --help | grep -q 'Examples' && ok || bad "parallel --help has examples"
par="--hardware h100-sxm --gpus 8 --model llama-3.1-70b --isl 1000 --osl 1000"
"$kvroof" parallel $par | grep -qE '^VERDICT: TP[0-9]+( EP[0-9]+)?( PP[0-9]+)? x DP[0-9]+ — [0-9]+ tok/s per GPU' && ok || bad "parallel: no VERDICT line"
"$kvroof" parallel $par | grep -q -E 'TP1 x DP8 +weights 141.1 GB per GPU exceed 78 GB of HBM' && ok || bad "parallel: TP1 does not say why it cannot run"
"$kvroof" parallel $par --json | grep -q '"pareto": \[' && ok || bad "parallel --json lacks the frontier"
"$kvroof" parallel $par --csv "$tmp/par.csv" >/dev/null && head -n 1 "$tmp/par.csv" | grep -q '^scenario,tp,pp,dp,ep,attention_dp,clients_per_replica,' \
    && [ "$(grep -c '^llama-3.1-70b,' "$tmp/par.csv")" -ge 10 ] && ok || bad "parallel --csv: header or rows missing"
"$kvroof" parallel $par --json >"$tmp/p1.json" && "$kvroof" parallel $par --json | cmp -s - "$tmp/p1.json" && ok || bad "parallel --json not deterministic"
"$kvroof" parallel $par --plot "$tmp/par.svg" >/dev/null && grep -q 'Pareto frontier' "$tmp/par.svg" && ok || bad "parallel --plot: no frontier"

# Pipeline and data parallelism: the inputs echo and --json show the deployment; --dp doubles the sweep's tok/s, not per GPU.
dep="--hardware h100-sxm --model llama-3.1-70b --tp 2 --pp 2 --dp 3"
"$kvroof" verdict $dep | grep -q '^  deploy    tp 2 x pp 2 x dp 3 = 12 GPUs' && ok || bad "verdict: the deployment is not echoed"
"$kvroof" verdict $dep --json | grep -q '"total_gpus": 12' && ok || bad "verdict --json: no deployment"
"$kvroof" sweep --hardware h100-sxm --model llama-3.1-70b --tp 2 --pp 2 --grid dp=1,2 --out "$tmp/dp.csv" >/dev/null &&
    awk -F, 'NR == 1 { for (i = 1; i <= NF; i++) c[$i] = i }
             NR > 1 { t[NR] = $c["tps_base_con_tok_per_s"]; g[NR] = $c["tps_base_con_per_gpu_tok_per_s"] }
             END { d = t[3] - 2 * t[2]; exit !(t[2] > 0 && d * d < 1e-6 * t[3] * t[3] && g[3] == g[2]) }' "$tmp/dp.csv" &&
    ok || bad "sweep --grid dp: tok/s not x dp or per GPU moved"

# kvroof ladder: examples, the LADDER line, seed 000's 2-GPU ladder climbing from TP to compute-bound, JSON.
"$kvroof" ladder --help | grep -q 'Examples' && ok || bad "ladder --help has examples"
"$kvroof" ladder --gpus 1 --cpus-per-gpu 1 --max-gpus 2 | grep -qE '^LADDER: 39\.6 -> [0-9.]+ tok/s \(ov = 0\) .* --gpus 2, .*then GPU-compute-bound$' \
    && ok || bad "ladder: the default 2-GPU ladder does not start with TP or end compute-bound"
"$kvroof" ladder --gpus 1 --max-gpus 1 --json | grep -q '"rungs": \[' && ok || bad "ladder --json lacks its rungs"
"$kvroof" ladder --gpus 1 --cpus-per-gpu 1 --max-gpus 2 --plot "$tmp/ladder.svg" >/dev/null && grep -q '0. as given' "$tmp/ladder.svg" \
    && grep -q 'tensor parallel over 2 GPUs' "$tmp/ladder.svg" && ok || bad "ladder --plot: the rungs are not drawn"

# kvroof disagg: examples, the DISAGG line with the balance point, the SLO flag, JSON.
"$kvroof" disagg --help | grep -q 'Examples' && ok || bad "disagg --help has examples"
"$kvroof" disagg --slo-tpot none | grep -qE '^DISAGG: [0-9.]+× over the baseline with [0-9.]+ CPU sockets per GPU' && ok || bad "disagg: no DISAGG line"
"$kvroof" disagg | grep -q 'break the TPOT SLO' && ok || bad "disagg: a broken TPOT SLO is not said"
"$kvroof" disagg --json | grep -q '"balance_cpus_per_gpu": ' && ok || bad "disagg --json lacks the balance point"
"$kvroof" disagg --arch gpu-pools --hardware h100-sxm --gpus 8 --model llama-3.1-70b --isl 2000 --osl 500 \
    | grep -qE '^DISAGG: TP[0-9]+: [0-9]+ prefill \+ [0-9]+ decode — [0-9]+ tok/s per GPU .* the aggregated TP' \
    && ok || bad "disagg --arch gpu-pools: no DISAGG line against aggregated"
"$kvroof" disagg --slo-tpot none --plot "$tmp/sockets.svg" >/dev/null && grep -q 'balance point' "$tmp/sockets.svg" \
    && grep -q 'CPU sockets per GPU' "$tmp/sockets.svg" && ok || bad "disagg --plot: no sockets curve"
"$kvroof" disagg --arch gpu-pools --hardware h100-sxm --gpus 8 --model llama-3.1-70b --isl 2000 --osl 500 --plot "$tmp/pools.svg" >/dev/null \
    && grep -q 'prefill instances' "$tmp/pools.svg" && grep -q 'aggregated TP' "$tmp/pools.svg" && ok || bad "disagg --arch gpu-pools --plot"
# Pipeline stages: both architectures answer, and say so.
"$kvroof" disagg --pp 2 --slo-tpot none | grep -q 'GPU(s) (prefill [0-9.]* s per call in 2 pipeline stages' && ok || bad "disagg --pp 2: the feed does not name its stages"
"$kvroof" disagg --arch gpu-pools --hardware h100-sxm --gpus 8 --pp 2 --model llama-3.1-70b --isl 2000 --osl 500 \
    | grep -qE '^DISAGG: TP[0-9]+ PP2: [0-9]+ prefill \+ [0-9]+ decode' && ok || bad "disagg --arch gpu-pools --pp 2: no pipelined split"

# compare shows f as verdict's VERDICT line does (never below the least f that fits: 0.3347 -> 0.34, not 0.33), and
# no time bound where no batch runs at f = 0.
"$kvroof" compare --across hardware=h100-sxm,h200 --gpus 2 | grep 'hardware=h100-sxm' | grep -q 'f=0.34 5.1 .*makes it serve *— *hbm_capacity' \
    && "$kvroof" verdict --hardware h100-sxm --gpus 2 | tail -n 1 | grep -q '^VERDICT: OFFLOAD f=0.34 ' && ok || bad "compare's f is not verdict's"
# kvroof compare: every combination of the --across lists, first axis slowest, and the COMPARE line.
"$kvroof" compare --help | grep -q 'Examples' && ok || bad "compare --help has examples"
out=$("$kvroof" compare --across hardware=h200,b200 --across gpus=1,2)
echo "$out" | grep -E '^  hardware=' | awk '{print $1, $2}' | tr '\n' ';' | grep -qx 'hardware=h200, gpus=1;hardware=h200, gpus=2;hardware=b200, gpus=1;hardware=b200, gpus=2;' \
    && ok || bad "compare: rows are not every combination in order"
echo "$out" | grep -qE '^COMPARE: .* serves the most per GPU' && ok || bad "compare: no COMPARE line"
# --cpus-per-gpu counts CPU sockets, and the inputs echo says so
"$kvroof" verdict | grep -qE '^ +host grace x0\.5 sockets per GPU:' && ok || bad "verdict echo does not count the host in sockets per GPU"
# a row that does not fit shows dashes, not 0.0, and every row names its best lever
out=$("$kvroof" compare --across hardware=h100-sxm,b200)
echo "$out" | grep -E '^  hardware=h100-sxm ' | grep -q '—' && ok || bad "compare: a row that does not fit prints numbers"
echo "$out" | grep -E '^  hardware=b200 ' | grep -qE -- '--[a-z-]+ [a-z0-9.-]+ [0-9.]+×' && ok || bad "compare: no best lever on a row that fits"
"$kvroof" compare --across kv-dtype=bf16,fp8 --json | grep -q '"rows": \[' && ok || bad "compare --json lacks its rows"
# Under --dp the verdict's tok/s are one replica's: a row's tok/s at f = 0 is every replica's, and its GPUs all of them.
out=$("$kvroof" compare --across dp=1,2 --hardware h200 --gpus 2)
one=$(echo "$out" | awk '$1 == "dp=1" { print $2 }')
two=$(echo "$out" | awk '$1 == "dp=2" { print $2 }')
awk -v a="$one" -v b="$two" 'BEGIN { exit !(a > 0 && b > 1.99 * a && b < 2.01 * a) }' && ok || bad "compare --across dp: tok/s $one and $two are not one replica's and twice it"
"$kvroof" compare --across dp=1,2 --hardware h200 --gpus 2 --json | grep -q '"gpus": 4' && ok || bad "compare --json: dp 2 of 2 GPUs is not 4 GPUs"
# compare --config: one row per file, named by its stem, the same numbers as the same scenarios given by flags;
# the command line overrides every file.
cdata=$(cd "$(dirname "$0")/../data/compare" && pwd)
out=$("$kvroof" compare --config "$cdata/h200x2.json" --config "$cdata/b200x2.json")
echo "$out" | grep -E '^  (h200x2|b200x2) ' | awk '{print $1}' | tr '\n' ';' | grep -qx 'h200x2;b200x2;' && ok || bad "compare --config: rows are not the files' stems in order"
flags=$("$kvroof" compare --across hardware=h200,b200 --gpus 2)
[ "$(echo "$out" | grep -E '^  (h200x2|b200x2) ' | cut -c33-)" = "$(echo "$flags" | grep -E '^  hardware=' | cut -c33-)" ] && ok || bad "compare --config differs from the same scenarios given by flags"
out=$("$kvroof" compare --config "$cdata/h200x2.json" --config "$cdata/b200x2.json" --gpus 1 | grep -E '^  (h200x2|b200x2) ' | cut -c33-)
[ "$out" = "$("$kvroof" compare --across hardware=h200,b200 --gpus 1 | grep -E '^  hardware=' | cut -c33-)" ] && ok || bad "compare --config: the command line does not override the files"
"$kvroof" compare --config "$cdata/h200x2.json" --config "$cdata/b200x2.json" --gpus 1 \
    | grep -q 'h200x2.json (the flags override its gpus=2) --config .*b200x2.json (the flags override its gpus=2)' \
    && ok || bad "compare --config: the header does not say which of a file's values the flags replaced"

# kvroof sim: examples, the SIM line first, the same seed gives the same bytes, JSON, the markdown report.
"$kvroof" sim --help | grep -q 'Examples' && ok || bad "sim --help has examples"
sim="--hardware h200 --model llama-3.1-8b --isl 2048 --osl 256 --concurrency 64 --calls 2000"
"$kvroof" sim $sim | head -n 1 | grep -qE '^SIM: [0-9]+ tok/s simulated vs [0-9]+ closed form \([0-9.]+ % (below|above)\)' && ok || bad "sim: the first line is not the SIM summary"
"$kvroof" sim $sim --json >"$tmp/s1.json" && "$kvroof" sim $sim --json | cmp -s - "$tmp/s1.json" && ok || bad "sim --json not deterministic for a seed"
"$kvroof" sim $sim --seed 2 --json | cmp -s - "$tmp/s1.json" && bad "sim: another seed gives the same run" || ok
grep -q '"closed_form": {' "$tmp/s1.json" && grep -q '"littles_law_error": ' "$tmp/s1.json" && ok || bad "sim --json lacks the closed form or Little's law"
"$kvroof" sim --hardware h200 --model llama-3.1-8b --isl 8000 --osl 4000 --concurrency 128 --calls 600 --preempt swap --json | grep -qE '"swaps": [1-9]' && ok || bad "sim --preempt swap: no call swapped under memory pressure"
"$kvroof" sim --hardware h200 --model llama-3.1-8b --tp 1 --pp 2 --isl 2000 --osl 200 --concurrency 64 --calls 500 | head -n 1 | grep -q '^SIM: ' && ok || bad "sim --pp 2: no SIM line"
# The README's MARGINAL threshold is the one the tool prints (kGainUncertainty moves with the accuracy table).
readme="$(cd "$(dirname "$0")/../.." && pwd)/README.md"
shown=$("$kvroof" verdict | grep -o 'a gain under [0-9.]* % is MARGINAL' | grep -o '[0-9.]* %')
grep -q "A gain under $shown is called MARGINAL" "$readme" && ok || bad "README's MARGINAL threshold is not the $shown the tool prints"
# A load that does not fit: every cell but hbm_used_GB is null in JSON Lines, the binding too (it was "").
"$kvroof" sweep --hardware h100-sxm --model llama-3.1-70b --isl 2000 --osl 500 --grid concurrency=32 --format jsonl | grep -q '"binding":null}$' && ok || bad "sweep jsonl: a load that does not fit shows a binding that is not null"
# An SLO the run misses is said in the text, not only in --json's within_slo_tpot.
"$kvroof" sim --hardware h200 --model llama-3.1-8b --isl 2000 --osl 500 --concurrency 64 --calls 300 --slo-tpot 5ms | grep -q '^SLO: the ITL is .* against the TPOT SLO (--slo-tpot) 5.0 ms: both miss it.$' && ok || bad "sim: a missed --slo-tpot is not said in the text"
"$kvroof" sim --hardware h200 --model llama-3.1-8b --isl 2000 --osl 500 --concurrency 64 --calls 300 --slo-tpot 500ms | grep -q '^SLO:' && bad "sim: an SLO met is reported as missed" || ok
# On the bare step: the simulator's mean step carries prefill chunks (55.6 ms here) and was called a miss of 15 ms.
"$kvroof" sim --hardware h200 --model llama-3.1-8b --isl 8000 --osl 100 --concurrency 32 --calls 300 --slo-tpot 15ms --slo-tpot-bounds step | grep -q '^SLO:' && bad "sim: a bare step within --slo-tpot is reported as missed" || ok
# A fit with no two points of one series tests no ratio: the built-in gain uncertainty is written, not a band of 0
# (which made --calibration call a 1.02x gain sure).
fx="$(cd "$(dirname "$0")/.." && pwd)/fixtures/validate_throughput_only.json"
sed -e '0,/"h100-sxm"/s//"h200"/' -e '0,/"h100-sxm"/s//"a100-80g"/' -e '0,/"h100-sxm"/s//"b200"/' -e '0,/"h100-sxm"/s//"gb200"/' "$fx" > "$tmp/p5.json"
"$kvroof" validate --points "$tmp/p5.json" --out "$tmp/fit5.json" | grep -q 'no two points of one series' && ok || bad "validate: zero pairs not said"
"$kvroof" verdict --hardware h100-sxm --model llama-3.1-8b --calibration "$tmp/fit5.json" | grep -q "a gain under 8 %, kvroof's built-in median error on a gain: the fit had no pairs" && ok || bad "verdict --calibration: a fit with no pairs has a gain band other than the built-in"
# One output token: no call decodes, so neither side has an ITL (the closed form's showed its step, null in --json).
"$kvroof" sim --hardware h200 --model llama-3.1-8b --isl 2000 --osl 1 --concurrency 16 --calls 200 | head -n 1 | grep -q ', ITL — vs — ms,' && ok || bad "sim --osl 1: an ITL shown where nothing decodes"
"$kvroof" sim $sim --report "$tmp/sim.md" >/dev/null && grep -q '^## Simulated and closed form' "$tmp/sim.md" && ok || bad "sim --report: no markdown"

# kvroof trace: classify the shipped sample, use it as a mix, synthesize the sample back.
printf '{"session_id":"a","timestamp_s":0,"input_tokens":100,"cached_tokens":0,"output_tokens":10}\n' >"$tmp/one.jsonl"
"$kvroof" trace "$tmp/one.jsonl" | grep -q 'no idle gaps: no session makes a second call' && ok || bad "trace: a gapless trace describes gaps"
data=$(cd "$(dirname "$0")/../data/trace" && pwd)
"$kvroof" trace "$data/sample.jsonl" --method kmeans --out "$tmp/classes.json" | head -n 1 | grep -q '^TRACE: 300 calls in ' && ok || bad "trace: no TRACE summary"
"$kvroof" verdict --mix "$tmp/classes.json" | tail -n 1 | grep -q '^VERDICT: ' && ok || bad "trace -> verdict --mix FILE.json"
"$kvroof" sim --mix "$tmp/classes.json" --calls 2000 | head -n 1 | grep -q '^SIM: ' && ok || bad "trace -> sim --mix FILE.json"
"$kvroof" trace --synthesize "$data/classes.json" --calls 300 --seed 13 | cmp -s - "$data/sample.jsonl" && ok || bad "trace --synthesize does not reproduce tests/data/trace/sample.jsonl"
"$kvroof" trace "$data/sample.jsonl" --json | grep -q '"command": "trace"' && ok || bad "trace --json"
"$kvroof" trace "$data/sample.jsonl" --report "$tmp/trace.md" >/dev/null && grep -q '^| class | share |' "$tmp/trace.md" && ok || bad "trace --report"
# A conversations file (the codex traces' ShareGPT shape): its calls, the given idle gap, and the classes as a mix.
"$kvroof" trace "$data/conversations.json" | head -n 1 | grep -q '^TRACE: 3 calls in 2 sessions ' && ok || bad "trace: a conversations file"
"$kvroof" trace "$data/conversations.json" --idle-median 5.2 --idle-p99 81.4 --out "$tmp/conv.json" >/dev/null &&
    grep -q '"idle_gap_p99_s": 81.4' "$tmp/conv.json" && ok || bad "trace: --idle-median/--idle-p99 on a conversations file"
"$kvroof" sim --mix "$tmp/conv.json" --calls 200 | head -n 1 | grep -q '^SIM: ' && ok || bad "trace (conversations) -> sim --mix FILE.json"
"$kvroof" trace "$data/conversations.json" --json | grep -q '"format": "conversations"' && ok || bad "trace --json: the format"
# kvroof validate: a user's points file, the VALIDATE line first, deterministic JSON, --out read back by verdict --calibration.
pts="$(dirname "$0")/../fixtures/validate_points.json"
"$kvroof" validate --help | grep -q 'Examples' && ok || bad "validate --help has examples"
"$kvroof" validate --points "$pts" --out "$tmp/fit.json" | head -n 1 | grep -qE '^VALIDATE: 4 measured points .*leave-one-out MAPE itl [0-9.]+%' && ok || bad "validate: the first line is not the VALIDATE summary"
"$kvroof" validate --points "$pts" --json >"$tmp/v1.json" && "$kvroof" validate --points "$pts" --json | cmp -s - "$tmp/v1.json" && ok || bad "validate --json not deterministic"
# A metric no point measures has no error: "—" and null, not 0.0 %.
tpo="$(dirname "$0")/../fixtures/validate_throughput_only.json"
"$kvroof" validate --points "$tpo" | grep -qE '^  ITL \(TPOT\) +0 +— +— +— +—$' \
    && "$kvroof" validate --points "$tpo" --json | tr -d ' \n' | grep -q '"itl":{"log_error_q05":null,"log_error_q95":null,"mape_defaults":null' \
    && ok || bad "validate: a metric with no points shows an error"
grep -q '"kind": "kvroof-calibration"' "$tmp/fit.json" && ok || bad "validate --out: not a calibration file"
"$kvroof" verdict --calibration "$tmp/fit.json" | grep -qE '^CALIBRATED VERDICT: [a-z_]+ \(a gain under [0-9]+ %' && ok || bad "verdict --calibration: no CALIBRATED VERDICT line"
"$kvroof" verdict --calibration "$tmp/fit.json" --concurrency 8 --json | grep -q '"calibration": {' && ok || bad "verdict --calibration --json lacks the calibration"
# An f just below 1 keeps the digits that make it fit: the threshold and the lever run.
near1=(--hardware h200 --model llama-3.1-8b --hbm-cap 18.060000016)
"$kvroof" verdict "${near1[@]}" 2>/dev/null | grep -q 'it needs f >= 0.999999$' && ok || bad "needs f just below 1"
"$kvroof" verdict "${near1[@]}" --f 0.999999 2>/dev/null | tail -n 1 | grep -q '^VERDICT: OFFLOAD' && ok || bad "--f 0.999999 does not fit"
# INFEASIBLE quotes the empty step the SLO meets: the weights' read, the all-reduces' latency and the step overhead.
"$kvroof" verdict --hardware h100-sxm --model llama-3.1-70b --isl 2000 --osl 500 --tp 8 --slo-tpot 8ms 2>/dev/null | tail -n 1 \
    | grep -q '^VERDICT: INFEASIBLE — even an empty decode step (8.4 ms) exceeds the TPOT SLO 8.0 ms' && ok || bad "INFEASIBLE's empty step"
# A report's source line is the command as run (less where its outputs go), so it reruns the same run.
(cd "$tmp" && "$kvroof" sim --hardware h200 --model llama-3.1-8b --isl 2048 --osl 256 --concurrency 16 --calls 500 --seed 3 --report s.md >/dev/null) &&
    grep -q '^Generated by kvroof [0-9.]* (`kvroof sim --hardware h200 --model llama-3.1-8b --isl 2048 --osl 256 --concurrency 16 --calls 500 --seed 3`)\.$' "$tmp/s.md" \
    && ok || bad "sim --report: the source line drops the run's flags"
"$kvroof" verdict --workload 's_cached=1000,a_append=100,o_output=10' --f 0.2 --report "$tmp/v.md" >/dev/null &&
    grep -q '^Generated by kvroof [0-9.]* (`kvroof verdict --workload s_cached=1000,a_append=100,o_output=10 --f 0.2`)\.$' "$tmp/v.md" \
    && ok || bad "verdict --report: the source line is not the command"
# Where nothing runs: prefill says its TTFT is a what-if; layers' JSON has no traffic for a card that runs no layer.
"$kvroof" prefill --hardware h100-sxm 2>/dev/null | tail -n 1 | grep -q '; no request runs here: the weights exceed the HBM of 1 GPU(s) by 63.1 GB (the TTFT is a what-if)$' \
    && ok || bad "prefill where the weights do not fit"
"$kvroof" layers --hbm-cap 4GB --json | grep -q '"transfer_bytes_per_token": null' && ok || bad "layers --json: traffic where the card runs no layer"
# A group that spans a fraction of an NVLink domain is warned about, by the flag the user gave.
"$kvroof" verdict --hardware h100-sxm --model llama-3.1-70b --tp 16 --nvlink-domain 3 2>&1 >/dev/null \
    | grep -q "^kvroof: warning: --tp 16: the group spans 5.33 NVLink domains of 3 (--nvlink-domain), which no layout does" \
    && ok || bad "a fractional count of NVLink domains"
"$kvroof" verdict --hardware h100-sxm --model llama-3.1-70b --tp 3 2>&1 >/dev/null | grep -q "^kvroof: warning: --tp 3: llama-3.1-70b's 64 attention heads" \
    && ok || bad "the uneven-heads warning names --tp"
# Where the study picks the deployments, --gpus is every GPU: the inputs echo names no TP group of them all.
"$kvroof" parallel --hardware h100-sxm --gpus 16 --model llama-3.1-70b --isl 2000 --osl 500 2>/dev/null >"$tmp/par.txt" &&
    ! grep -q "tensor parallel x16" "$tmp/par.txt" && grep -q "carries what crosses the NVLink domain of 8" "$tmp/par.txt" \
    && ok || bad "parallel's inputs echo describes a TP16 group it never tries"
# compare --json carries the text's totals over --dp replicas, and null where nothing is served.
"$kvroof" compare --hardware h100-sxm --model llama-3.1-70b --across gpus=1,4 --across dp=2 --json >"$tmp/cmp.json" &&
    grep -q '"baseline_tok_s": null' "$tmp/cmp.json" && grep -q '"baseline_per_gpu_tok_s": null' "$tmp/cmp.json" &&
    grep -q '"baseline_tok_s": 317.05' "$tmp/cmp.json" && grep -q '"throughput_tok_per_s": 158.52' "$tmp/cmp.json" \
    && ok || bad "compare --json: totals over --dp, null where nothing serves"
# The inputs echo says what data-parallel attention exchanges: under EP only the dense FFN blocks are gathered.
"$kvroof" verdict --model deepseek-v3 --gpus 8 --attention-dp 1 --ep 8 --hardware h200 2>/dev/null \
    | grep -q '^            data-parallel attention x8: no attention all-reduce; an all-gather and a reduce-scatter around each of 3 dense FFN blocks (the 58 MoE layers: the EP 8 all-to-alls instead), each 5 us' \
    && ok || bad "the ADP+EP inputs echo"
# The defaults' measured error is stated only at the defaults: a calibration or an η given voids it, and says so.
"$kvroof" verdict --calibration "$tmp/fit.json" --concurrency 8 | grep -q '^Measured error (outputs/accuracy.md) is kvroof.s at its default efficiencies; this run sets --calibration, so it does not apply; the calibration.s intervals below do\.$' \
    && ok || bad "verdict --calibration states the defaults' measured error"
"$kvroof" verdict --concurrency 8 --eta-mem 0.7 --json | grep -A7 '"stated_error"' | grep -q '"applies": false' && ok || bad "stated_error.applies with --eta-mem"
"$kvroof" verdict --concurrency 8 | grep -q '^Measured error at these defaults (dense models' && ok || bad "the defaults' measured error at the defaults"
"$kvroof" verdict --model qwen3-30b-a3b --concurrency 8 --eta-moe-gemm 0.124 2>/dev/null | grep -q '^Measured error at these defaults (MoE models' \
    && ok || bad "--eta-moe-gemm is the condition of the MoE figures, not a move away from them"
# With --f the calibrated throughputs and gains are of the chosen f: the bankable gain is its throughput over f = 0's.
calf=$("$kvroof" verdict --calibration "$tmp/fit.json" --f 0.3 --json)
echo "$calf" | awk -F': ' '/"name": /{n=$2} /"value": /{v[n]=$2+0} END{b=v["\"throughput at f = 0 (ov = 0)\","]; t=v["\"throughput, bankable (ov = 0)\","]; g=v["\"gain, bankable\","]; d=t/b-g; exit !(b>0 && g>0 && d<1e-9*g && d>-1e-9*g)}' \
    && ok || bad "verdict --calibration --f: throughputs at the best f beside gains at the chosen f"
"$kvroof" validate --points "$pts" --report "$tmp/v.md" >/dev/null && grep -q '^## Floor check' "$tmp/v.md" && ok || bad "validate --report: no markdown"
# Networks and deployments: listed by presets, set by --net / --deployment, echoed in --json; EP beyond the experts' divisors.
"$kvroof" presets | grep -q '^Networks (scale-out' && "$kvroof" presets | grep -qE '^  ib-xdr +100 GB/s +14 us' && ok || bad "presets: no Networks group"
"$kvroof" presets | grep -qE '^  hgx-h100x8 +h100-sxm x8, NVLink domain 8, net ib-ndr' && ok || bad "presets: no Deployments group"
"$kvroof" presets --json | grep -q '"ib-ndr-measured": {' && ok || bad "presets --json lacks the networks"
"$kvroof" verdict --deployment hgx-h100x8 --json >"$tmp/d.json" && grep -q '"preset": "h100-sxm"' "$tmp/d.json" && grep -q '"gpus": 8,' "$tmp/d.json" \
    && grep -q '"net": "ib-ndr"' "$tmp/d.json" && ok || bad "verdict --deployment hgx-h100x8: hardware, GPUs or network not set"
"$kvroof" verdict --net ib-xdr --net-latency 3us --json | grep -q '"net_bw_GBps": 100.0,' && ok || bad "--net ib-xdr does not set --net-bw"
# The text echo names the network as the JSON does: preset, bandwidth, latency, and what (if anything) crosses it.
"$kvroof" verdict --deployment hgx-h100x8 | grep -qE '^ +network ib-ndr: 50 GB/s per GPU per direction, 14 us per transfer; unused here \(all traffic within the NVLink domain of 8\)$' \
    && ok || bad "verdict --deployment hgx-h100x8: the text echo does not name the network"
"$kvroof" verdict --hardware h200 --gpus 8 --nvlink-domain 4 --model deepseek-v3 --weight-dtype fp8 --ep 8 --net ib-xdr --net-latency 3us \
    | grep -qE "^ +network ib-xdr: 100 GB/s per GPU per direction, 3 us per transfer; carries the TP 8 all-reduces between domains and EP 8 all-to-alls, 4/8 of each token's expert copies$" \
    && ok || bad "verdict --ep 8 over NVLink domains of 4: the echo does not say the network carries the all-reduces and half the all-to-all"
"$kvroof" verdict | grep -q ' network ' && bad "verdict on one GPU with no --net echoes a network it does not use" || ok
"$kvroof" parallel --deployment hgx-h100x8 --model llama-3.1-8b | grep -qE '^ +network ib-ndr: 50 GB/s per GPU per direction, 14 us per transfer' \
    && ok || bad "parallel --deployment hgx-h100x8: the text echo does not name the network"
"$kvroof" verdict --help | grep -qE -- '--deployment .*\[default: none: --hardware\]' && ok || bad "--deployment --help default"
# DeepSeek-V3 at EP 72: 72 does not divide 256, so the busiest GPU holds 4 experts (1.125 x the mean 3.556).
"$kvroof" verdict --deployment gb200-nvl72 --model deepseek-v3 --ep 72 | grep -q 'EP 72 over 256 routed experts: the busiest GPU holds 4 of them (1.125x the mean 3.556)' \
    && ok || bad "verdict --ep 72: the uneven expert share is not shown"

# -0 is 0: echoed "0", never "-0" (the overrides line repeats the text as given).
"$kvroof" verdict --f -0 --r -0 --ov -0 | grep -v '^ *overrides ' | grep -q -- '-0' && bad "verdict --f -0 --r -0 --ov -0 echoes a negative zero" || ok

# Clients queued for memory hold no KV: where calls have a cached prefix the point says its figures are optimistic.
"$kvroof" verdict --hardware h200 --model llama-3.1-8b --workload codex --concurrency 32 | grep -q 'would likely have evicted that prefix' \
    && ok || bad "verdict --concurrency 32 past memory with a cached prefix: no note that the queued prefixes are held nowhere"
"$kvroof" verdict --hardware h200 --model llama-3.1-8b --isl 8000 --osl 4000 --concurrency 128 | grep -q 'evicted that prefix' \
    && bad "verdict past memory without a cached prefix notes an evicted prefix" || ok

# One session of codex does not fit two H100s at f = 0: the JSON says which part fits, compare words the lever as verdict does.
"$kvroof" verdict --hardware h100-sxm --gpus 2 --json | grep -q '"session_fits": false' && ok || bad "verdict --json: no session_fits false where one session does not fit at f = 0"
"$kvroof" compare --across hardware=h100-sxm --gpus 2 | grep -q -- '--gpus 4 makes it serve  ' && ok || bad "compare: the lever that makes a scenario serve is not worded as verdict words it"
"$kvroof" compare --across hardware=h100-sxm,h200 --gpus 1 | grep -q -- '--gpus 2 makes it fit  ' && ok || bad "compare: the lever that makes a scenario fit is not worded as verdict words it"

# A CSV trace exported with a UTF-8 byte-order mark reads as one without.
printf '\xEF\xBB\xBFsession_id,timestamp_s,input_tokens,cached_tokens,output_tokens\na,0,10,0,1\na,5,20,10,2\n' >"$tmp/bom.csv"
"$kvroof" trace "$tmp/bom.csv" >/dev/null && ok || bad "trace: a CSV with a byte-order mark is refused"
printf 'session_id,model,timestamp_s,input_tokens,cached_tokens,output_tokens,model\na,x,0,10,0,1,x\n' >"$tmp/dup.csv"
"$kvroof" trace "$tmp/dup.csv" >/dev/null && ok || bad "trace: two columns of one name that the trace is not read from are refused"
"$kvroof" prefill --model deepseek-v3 | grep -q 'the weights exceed the HBM by' && ok || bad "prefill: weights past the HBM shown as negative VRAM"

echo "$pass passed, $fail failed"
[ $fail -eq 0 ]

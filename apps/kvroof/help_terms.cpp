// SPDX-License-Identifier: MIT
// `kvroof help [terms]`: the words kvroof's output uses, each in one or two
// sentences, with the flag that sets it. The equations are in docs/model.md.
#include <fmt/format.h>

#include <cstdio>
#include <memory>
#include <string>

#include "commands.hpp"
#include "kvroof/analysis/verdict.hpp"
#include "kvroof/error.hpp"

namespace kvroof::cli {
namespace {

std::string terms_text() {
    std::string s = "Terms kvroof uses (equations: docs/model.md)\n\n";
    const std::pair<const char*, std::string> terms[] = {
        {"f",
         "the fraction of every session's KV cache, and of the decode attention over it, moved from GPU HBM to CPU "
         "DRAM (--f). f = 0 is no offload."},
        {"ov",
         "how much of the CPU's attention and the link transfers overlaps the GPU's work (--ov): 0 = none, they add "
         "to every decode step; 1 = all, hidden behind it."},
        {"bankable / pipelined",
         "the offload gain at ov = 0 (what you get without engineering) and at ov = 1 (what a layer-ahead pipeline could "
         "get), each at its own best f. The VERDICT gives both; the real gain of an engine lies between them."},
        {"band", "the throughput at one f from ov = 0 to ov = 1."},
        {"MARGINAL", fmt::format("a gain under {:.1f} %: kvroof's median error when it predicts the ratio of two measured "
                                 "throughputs (outputs/accuracy.md). Below it the answer is within the model's uncertainty.",
                                 100 * kGainUncertainty)},
        {"time bound by",
         "the rate that sets a decode step's time: GPU compute, HBM bandwidth, CPU compute, CPU DRAM "
         "bandwidth, the GPU-CPU link or the tensor-parallel all-reduces."},
        {"batch limited by",
         "what caps the number of sequences decoding together: HBM capacity, CPU DRAM capacity, or "
         "the TPOT (time per output token) SLO."},
        {"sparse",
         "the fraction of a session's context KV that attention reads per token (--sparse; 1 = dense), on the "
         "GPU and the CPU alike, as sparse-attention methods do."},
        {"r", "the fraction of a session's CPU-resident KV reloaded to the GPU for its next prefill (--r; 1 = all)."},
        {"S_c, A, O",
         "a call's cached context tokens (the prefix, --prefix), new input tokens (ISL minus the prefix) and "
         "output tokens (OSL): workload strings s_cached=…,a_append=…,o_output=…; S = S_c + A."},
        {"ISL / OSL", "input / output sequence length of a benchmark (--isl, --osl)."},
        {"idle hold / park",
         "between a session's calls its KV stays in HBM (hold) or moves to CPU DRAM and is reloaded "
         "(park: --idle park)."},
        {"batch (fractional)",
         "the mean number of sequences decoding in a step, a fluid mean: 0.6 means a session "
         "decodes 60 % of the time."},
        {"TTFT / TPOT / ITL",
         "time to the first token; time per output token of the decode step; inter-token latency a "
         "user sees (the step plus the prefill work interleaved with it)."},
        {"κ_crit",
         "(kvroof prefill) the cached-to-new token ratio above which reloading a request's cached KV over the "
         "link takes longer than computing its new tokens: κ_crit = (prefill FLOP per token / KV bytes per "
         "token) x (link bandwidth / GPU FLOP/s). κ_ratio is the request's own ratio."},
        {"P_OH",
         "(kvroof prefill) link time over GPU time of a prefill, κ_ratio / κ_crit; the link's share of TTFT is "
         "P_OH / (1 + P_OH)."},
        {"CPUs per GPU", "CPU sockets serving each GPU (--cpus-per-gpu): a GB200 has 0.5 (one Grace per two GPUs)."},
    };
    for (const auto& [term, text] : terms) s += fmt::format("  {}\n      {}\n", term, text);
    return s;
}

}  // namespace

Action setup_help(CLI::App& app) {
    auto topic = std::make_shared<std::string>();
    CLI::App* sub = app.add_subcommand("help", "what kvroof's words mean: f, ov, the band, MARGINAL, κ_crit, … (help terms)");
    sub->footer("Examples:\n  kvroof help terms\n  kvroof help          # the same as kvroof --help");
    sub->add_option("topic", *topic, "terms");
    CLI::App* root = &app;
    return [root, topic] {
        std::string s;
        if (topic->empty())
            s = root->get_formatter()->make_help(root, "kvroof", CLI::AppFormatMode::Normal);
        else if (*topic == "terms")
            s = terms_text();
        else
            throw InputError(fmt::format("help: the topic must be terms, got '{}'", *topic));
        std::fwrite(s.data(), 1, s.size(), stdout);
    };
}

}  // namespace kvroof::cli

// SPDX-License-Identifier: MIT
#include <fmt/format.h>

#include <cmath>

#include "kvroof/io/offload_reports.hpp"
#include "kvroof/io/parse.hpp"
#include "kvroof/io/presets.hpp"

namespace kvroof::io {
namespace {

using nlohmann::json;

double gib(Bytes b) { return b.raw() / kGibi; }

std::vector<int> parse_tp_list(const std::string& text) {
    std::vector<int> out;
    size_t start = 0;
    while (start <= text.size()) {
        const size_t comma = text.find(',', start);
        const std::string part = text.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
        const double v = parse_number("--tp", part);
        if (v < 1 || v != std::floor(v) || v > 1024) throw InputError("--tp: each entry must be a whole number in [1, 1024], got '" + part + "'");
        out.push_back(static_cast<int>(v));
        if (comma == std::string::npos) break;
        start = comma + 1;
    }
    return out;
}

std::string tps(double v, bool any) { return any ? fmt::format("{:#.4g}", v) : "—"; }

}  // namespace

Rendered layers_report(const LayersInputs& in) {
    const json& cfg = embedded_config("layers_budget");
    // Checkpoints: given, built from a model, or the seed's set.
    std::vector<Checkpoint> cps;
    if (in.model) {
        if (!in.weight_bits) throw InputError("--model: needs --weight-bits (e.g. 4.25 for FP4 with one 8-bit scale per 32 weights)");
        const double bits = parse_number("--weight-bits", *in.weight_bits);
        check::positive("--weight-bits", bits);
        check::in_range("--weight-bits", bits, limits::kMinWeightBits, limits::kMaxWeightBits);
        const ModelSpec m = load_model("--model", *in.model);
        cps.push_back(checkpoint_from_model(m, bits, fmt::format("{}@{:g}bit", m.name, bits)));
    } else if (in.weight_bits) {
        throw InputError("--weight-bits: only with --model");
    }
    for (const auto& c : in.checkpoints) cps.push_back(load_checkpoint("--checkpoint", c));
    if (cps.empty())
        for (const auto& n : cfg.at("checkpoints")) cps.push_back(load_checkpoint("--checkpoint", n.get<std::string>()));

    const std::vector<int> tps_list = in.tp ? parse_tp_list(*in.tp) : cfg.at("tp").get<std::vector<int>>();
    const HardwareSpec hw = load_hardware("--hardware", in.hardware.value_or(cfg.at("hardware").get<std::string>()));
    LayerHost host;
    host.card_budget = in.budget ? Bytes(parse_quantity("--budget", *in.budget, UnitKind::bytes, "GiB")) : hw.hbm_capacity;
    check::positive("--budget", host.card_budget.raw());
    check::in_range("--budget", host.card_budget.raw(), limits::kMinCapacity, limits::kMaxCapacity);
    const std::string link_name = in.link_bw ? "custom" : in.link.value_or(cfg.at("link").get<std::string>());
    host.link = in.link_bw ? BytesPerSecond(parse_quantity("--link-bw", *in.link_bw, UnitKind::bandwidth, "GB/s"))
                           : load_link("--link", link_name);
    check::positive("--link-bw", host.link.raw());
    check::in_range("--link-bw", host.link.raw(), limits::kMinBandwidth, limits::kMaxBandwidth);
    const double compute_ms = in.compute_ms ? parse_number("--compute-ms", *in.compute_ms) : cfg.at("compute_ms_per_layer").get<double>();
    check::non_negative("--compute-ms", compute_ms);
    check::in_range("--compute-ms", compute_ms, 0.0, limits::kMaxLayerMs);
    host.compute_per_layer = milliseconds(compute_ms);
    if (in.copy_ms) {
        const double v = parse_number("--copy-ms", *in.copy_ms);
        check::positive("--copy-ms", v);
        check::in_range("--copy-ms", v, limits::kMinCopyMs, limits::kMaxLayerMs);
        host.copy_per_layer = milliseconds(v);
    }
    int forced = -1;
    if (in.offload_layers) {
        forced = check::whole_in_range("--offload-layers", parse_number("--offload-layers", *in.offload_layers), 0,
                                       model_field_range("layers").hi);
    }
    int rows = 512;
    if (in.rows) {
        rows = check::whole_in_range("--rows", parse_number("--rows", *in.rows), 1, static_cast<int>(limits::kMaxRows));
    }
    std::optional<double> pf_ms;
    if (in.prefill_compute_ms) {
        pf_ms = parse_number("--prefill-compute-ms", *in.prefill_compute_ms);
        check::non_negative("--prefill-compute-ms", *pf_ms);
        check::in_range("--prefill-compute-ms", *pf_ms, 0.0, limits::kMaxLayerMs);
    }
    std::optional<double> target;
    if (in.target_tps) {
        target = parse_number("--target-tps", *in.target_tps);
        check::positive("--target-tps", *target);
        check::in_range("--target-tps", *target, limits::kMinTargetTps, limits::kMaxTargetTps);
    }

    Rendered out;
    std::string& t = out.text;
    std::string& md = out.markdown;
    t = fmt::format("kvroof {} — layer-offload ceiling\n\n", KVROOF_VERSION);
    t += fmt::format("Host: {} card budget {:.4g} GiB, link {} {:.5g} GiB/s per card, compute {:.3g} ms per offloaded layer per token{}\n\n",
                     hw.name, gib(host.card_budget), link_name, host.link.raw() / kGibi, compute_ms,
                     host.copy_per_layer ? fmt::format(", copy {:.5g} ms per layer (measured, replaces bytes / link)", in_ms(*host.copy_per_layer)) : "");
    md = fmt::format("# kvroof layer-offload ceiling\n\nGenerated by kvroof {} (`kvroof layers", KVROOF_VERSION);
    for (const auto& [k, v] : in.given) md += fmt::format(" {} \"{}\"", k, v);
    md += fmt::format("`).\n\nHost: {}, card budget {:.4g} GiB, link `{}` at {:.5g} GiB/s per card, compute {:.3g} ms per offloaded layer per token.\n\n",
                      hw.name, gib(host.card_budget), link_name, host.link.raw() / kGibi, compute_ms);
    t += fmt::format("{:<22} {:>3} {:>10} {:>8} {:>9} {:>13} {:>10} {:>15} {:>9} {:>9}\n", "checkpoint", "TP", "GiB/layer", "resident",
                     "offloaded", "GiB/token", "serial/s", "perfect-ovl/s", "compute", "hideable");
    md += "| checkpoint | TP | GiB/layer/rank | resident | offloaded | transfer GiB/token | serial tok/s | perfect-overlap tok/s | compute share | max hideable |\n"
          "|---|---|---|---|---|---|---|---|---|---|\n";
    json rows_json = json::array();
    std::string best_name;
    double best_tps = 0;
    const LayerOffloadRow* last = nullptr;
    std::vector<LayerOffloadRow> all;
    all.reserve(cps.size() * tps_list.size());
    for (const auto& c : cps) {
        for (int tp : tps_list) {
            all.push_back(layer_offload(c, host, tp, forced));
            const LayerOffloadRow& r = all.back();
            last = &r;
            const bool any = r.offloaded > 0;
            t += fmt::format("{:<22} {:>3} {:>10.2f} {:>8} {:>9} {:>13} {:>10} {:>15} {:>8} {:>9}\n", c.name, tp, gib(r.layer_rank),
                             r.resident, r.offloaded, any ? fmt::format("{:.2f}", gib(r.transfer_per_token)) : "—", tps(r.serial_tps, any),
                             tps(r.overlap_tps, any), any ? fmt::format("{:.2f}%", 100 * r.compute_share) : "—",
                             any ? fmt::format("{:.2f}%", 100 * r.max_hideable) : "—");
            md += fmt::format("| {} | {} | {:.2f} | {} | {} | {} | {} | {} | {} | {} |\n", c.name, tp, gib(r.layer_rank), r.resident,
                              r.offloaded, any ? fmt::format("{:.2f}", gib(r.transfer_per_token)) : "—", tps(r.serial_tps, any),
                              tps(r.overlap_tps, any), any ? fmt::format("{:.2f} %", 100 * r.compute_share) : "—",
                              any ? fmt::format("{:.2f} %", 100 * r.max_hideable) : "—");
            json j{{"checkpoint", c.name},
                   {"tp", tp},
                   {"layer_bytes_per_rank", r.layer_rank.raw()},
                   {"resident", r.resident},
                   {"offloaded", r.offloaded},
                   {"transfer_bytes_per_token", r.transfer_per_token.raw()},
                   {"copy_s_per_token", r.copy_s},
                   {"compute_s_per_token", r.compute_s},
                   {"serial_tok_per_s", any ? json(r.serial_tps) : json(nullptr)},
                   {"perfect_overlap_tok_per_s", any ? json(r.overlap_tps) : json(nullptr)},
                   {"compute_share", r.compute_share},
                   {"max_hideable", r.max_hideable},
                   {"move_amplification", c.move_amplification()},
                   {"expert_granular",
                    {{"transfer_bytes_per_token", r.expert_transfer_per_token.raw()},
                     {"serial_tok_per_s", any ? json(r.expert_serial_tps) : json(nullptr)},
                     {"perfect_overlap_tok_per_s", any ? json(r.expert_overlap_tps) : json(nullptr)}}}};
            if (pf_ms && any) {
                const PrefillChunk p = layer_offload_prefill(r, rows, milliseconds(*pf_ms));
                j["prefill"] = {{"rows", rows}, {"serial_tok_per_s", p.serial_tps}, {"perfect_overlap_tok_per_s", p.overlap_tps},
                                {"max_hideable", p.max_hideable}};
            }
            rows_json.push_back(j);
            if (any && r.overlap_tps > best_tps) {
                best_tps = r.overlap_tps;
                best_name = fmt::format("{} TP{}", c.name, tp);
            }
        }
    }
    t += "— : zero layers need offloading at that TP, so there is no transfer to ceiling against.\n";
    md += "\n— : zero layers need offloading at that TP, so there is no transfer to ceiling against.\n";

    // Layer vs expert granularity.
    t += "\nLayer vs expert granularity (same resident layers; expert granularity moves only the non-expert weights and the k routed experts a token uses)\n";
    md += "\n## Layer vs expert granularity\n\n| checkpoint | TP | move_amplification | layer GiB/token | expert GiB/token | expert-granular perfect-overlap tok/s |\n|---|---|---|---|---|---|\n";
    for (size_t i = 0; i < all.size(); ++i) {
        const Checkpoint& c = cps[i / tps_list.size()];
        const LayerOffloadRow& r = all[i];
        if (r.offloaded == 0) continue;
        t += fmt::format("  {:<22} TP{:<2} move_amplification {:>6.2f}x  {:>8.2f} -> {:>7.2f} GiB/token  ≤ {:.4g} tok/s\n", c.name, r.tp,
                         c.move_amplification(), gib(r.transfer_per_token), gib(r.expert_transfer_per_token), r.expert_overlap_tps);
        md += fmt::format("| {} | {} | {:.2f}× | {:.2f} | {:.2f} | {:.4g} |\n", c.name, r.tp, c.move_amplification(),
                          gib(r.transfer_per_token), gib(r.expert_transfer_per_token), r.expert_overlap_tps);
    }
    if (pf_ms) {
        t += fmt::format("\nPrefill, {}-row chunks at {:.3g} ms per layer per chunk\n", rows, *pf_ms);
        md += fmt::format("\n## Prefill, {}-row chunks at {:.3g} ms per layer per chunk\n\n| checkpoint | TP | serial tok/s | perfect-overlap tok/s | max hideable |\n|---|---|---|---|---|\n",
                          rows, *pf_ms);
        for (size_t i = 0; i < all.size(); ++i) {
            const LayerOffloadRow& r = all[i];
            if (r.offloaded == 0) continue;
            const PrefillChunk p = layer_offload_prefill(r, rows, milliseconds(*pf_ms));
            const std::string& cn = cps[i / tps_list.size()].name;
            t += fmt::format("  {:<22} TP{:<2} serial {:>8.4g} tok/s  perfect overlap {:>8.4g} tok/s  max hideable {:.2f}%\n", cn, r.tp,
                             p.serial_tps, p.overlap_tps, 100 * p.max_hideable);
            md += fmt::format("| {} | {} | {:.4g} | {:.4g} | {:.2f} % |\n", cn, r.tp, p.serial_tps, p.overlap_tps, 100 * p.max_hideable);
        }
    }
    json target_json = nullptr;
    if (target) {
        t += fmt::format("\nDecode target {:g} tok/s\n", *target);
        md += fmt::format("\n## Decode target {:g} tok/s\n\n", *target);
        target_json = json::array();
        for (const auto& c : cps) {
            for (int tp : tps_list) {
                const DecodeTarget d = decode_target(c, host, tp, *target);
                const std::string line = fmt::format(
                    "{} TP{}: {:.3g} s per token moves at most {:.3g} GiB = {} of {} layers; the other {} layers need {:.3g} GiB resident ({} the {:.3g} GiB card)",
                    c.name, tp, 1.0 / *target, gib(d.movable_per_token), d.max_offloaded, c.layers, c.layers - d.max_offloaded,
                    gib(d.resident_needed + c.non_layer_bytes), d.fits ? "within" : "over", gib(host.card_budget));
                t += "  " + line + "\n";
                md += "- " + line + "\n";
                target_json.push_back({{"checkpoint", c.name}, {"tp", tp}, {"movable_bytes_per_token", d.movable_per_token.raw()},
                                       {"max_offloaded_layers", d.max_offloaded}, {"resident_bytes_needed", d.resident_needed.raw()},
                                       {"fits", d.fits}});
            }
        }
    }

    std::string answer;
    if (all.size() == 1 && last) {
        const Checkpoint& c = cps.front();
        const LayerOffloadRow& r = *last;
        answer = r.offloaded == 0
                     ? fmt::format("LAYERS: {} TP{} — all {} layers fit the {:.4g} GiB card: no offload, no transfer ceiling", c.name, r.tp,
                                   c.layers, gib(host.card_budget))
                     : fmt::format("LAYERS: {} TP{} — {} of {} layers offloaded, {:.2f} GiB/token: ≤ {:.4g} tok/s serial, ≤ {:.4g} tok/s "
                                   "with perfect overlap; the copy is {:.1f}% of the step",
                                   c.name, r.tp, r.offloaded, c.layers, gib(r.transfer_per_token), r.serial_tps, r.overlap_tps,
                                   100 * (1 - r.compute_share));
    } else if (best_tps > 0) {
        answer = fmt::format("LAYERS: transfer-bound — the best offloaded ceiling is {:.4g} tok/s ({}) even with perfect overlap", best_tps, best_name);
    } else {
        answer = "LAYERS: every configuration fits without offload — no transfer ceiling";
    }
    t += "\n" + answer + "\n";
    md += "\n**" + answer + "**\n";

    json given = json::object();
    for (const auto& [k, v] : in.given) given[k] = v;
    out.json = {{"tool", "kvroof"},
                {"version", KVROOF_VERSION},
                {"command", "layers"},
                {"inputs",
                 {{"hardware", hw.name},
                  {"card_budget_bytes", host.card_budget.raw()},
                  {"link", link_name},
                  {"link_bytes_per_s", host.link.raw()},
                  {"compute_s_per_layer", host.compute_per_layer.raw()},
                  {"copy_s_per_layer", host.copy_per_layer ? json(host.copy_per_layer->raw()) : json(nullptr)},
                  {"tp", tps_list},
                  {"given", given}}},
                {"rows", rows_json},
                {"decode_target", target_json},
                {"answer", answer}};
    return out;
}

}  // namespace kvroof::io

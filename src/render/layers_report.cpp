// SPDX-License-Identifier: MIT
// `kvroof layers` as text, markdown and JSON, from one LayersStudy.
#include <fmt/format.h>

#include <algorithm>

#include "kvroof/io/offload_reports.hpp"

namespace kvroof::io {
namespace {

using nlohmann::json;

double gib(Bytes b) { return b.raw() / kGibi; }
std::string tps(double v, bool any) { return any ? fmt::format("{:#.4g}", v) : "—"; }
std::string pct(double share, bool md) { return md ? fmt::format("{:.2f} %", 100 * share) : fmt::format("{:.2f}%", 100 * share); }
std::string cell_name(const LayersStudy& st, const LayersCell& c) { return st.setup.checkpoints[c.checkpoint].name; }

std::string host_line(const LayersSetup& s, bool with_copy) {
    const LayerHost& h = s.host;
    return fmt::format(
        "{}{} card budget {:.4g} GiB, link {}{}{} {:.5g} GiB/s per card, compute {}{}", s.hardware, with_copy ? "" : ",",
        gib(h.card_budget), with_copy ? "" : "`", s.link_name, with_copy ? "" : "` at", h.link.raw() / kGibi,
        s.compute_ms ? fmt::format("{:.3g} ms per offloaded layer per token", *s.compute_ms)
                     : fmt::format("per offloaded layer per token at the decode roofline (what a token reads of the rank's "
                                   "shard at {:.5g} GiB/s)",
                                   h.roofline_read ? h.roofline_read->raw() / kGibi : 0.0),
        with_copy && h.copy_per_layer
            ? fmt::format(", copy {:.5g} ms per layer (measured, replaces bytes / link)", in_ms(*h.copy_per_layer))
            : "");
}

std::string budget_row(const LayersStudy& st, const LayersCell& c, bool md) {
    const LayerOffloadRow& r = c.row;
    const bool any = r.has_ceiling();
    const std::string transfer = any ? fmt::format("{:.2f}", gib(r.transfer_per_token)) : "—";
    const std::string share = any ? pct(r.compute_share, md) : "—";
    const std::string hide = any ? pct(r.max_hideable, md) : "—";
    // A card that runs no layer holds and offloads none: —, as in --json (null).
    const std::string resident = r.runs_on_card ? std::to_string(r.resident) : "—";
    const std::string offloaded = r.runs_on_card ? std::to_string(r.offloaded) : "—";
    if (md)
        return fmt::format("| {} | {} | {:.2f} | {} | {} | {} | {} | {} | {} | {} |\n", cell_name(st, c), r.tp, gib(r.layer_rank),
                           resident, offloaded, transfer, tps(r.serial_tps, any), tps(r.overlap_tps, any), share, hide);
    return fmt::format("{:<22} {:>3} {:>10.2f} {:>8} {:>9} {:>13} {:>10} {:>15} {:>8} {:>9}\n", cell_name(st, c), r.tp,
                       gib(r.layer_rank), resident, offloaded, transfer, tps(r.serial_tps, any), tps(r.overlap_tps, any), share,
                       hide);
}

std::string target_line(const LayersStudy& st, const TargetCell& t) {
    const Checkpoint& c = st.setup.checkpoints[t.checkpoint];
    const DecodeTarget& d = t.target;
    return fmt::format(
        "{} TP{}: {:.3g} s per token moves at most {:.3g} GiB = {} of {} layers; the other {} layers need {:.3g} GiB resident "
        "({} the {:.3g} GiB card)",
        c.name, t.tp, 1.0 / d.target_tps, gib(d.movable_per_token), d.max_offloaded, c.layers, c.layers - d.max_offloaded,
        gib(d.resident_needed + c.non_layer_rank(t.tp)), d.fits ? "within" : "over", gib(st.setup.host.card_budget));
}

// The sections after the budget table, text or markdown.
std::string sections(const LayersStudy& st, bool md) {
    const LayersSetup& s = st.setup;
    std::string o = md ? "\n## Layer vs expert granularity\n\n| checkpoint | TP | move_amplification | layer GiB/token | expert "
                         "GiB/token | expert-granular perfect-overlap tok/s |\n|---|---|---|---|---|---|\n"
                       : "\nLayer vs expert granularity (same resident layers; expert granularity moves only the non-expert "
                         "weights and the k routed experts a token uses)\n";
    for (const LayersCell& c : st.cells) {
        const LayerOffloadRow& r = c.row;
        if (!r.has_ceiling()) continue;
        const Checkpoint& cp = s.checkpoints[c.checkpoint];
        o += md ? fmt::format("| {} | {} | {:.2f}× | {:.2f} | {:.2f} | {:.4g} |\n", cp.name, r.tp, cp.move_amplification(),
                              gib(r.transfer_per_token), gib(r.expert_transfer_per_token), r.expert_overlap_tps)
                : fmt::format("  {:<22} TP{:<2} move_amplification {:>6.2f}x  {:>8.2f} -> {:>7.2f} GiB/token  ≤ {:.4g} tok/s\n",
                              cp.name, r.tp, cp.move_amplification(), gib(r.transfer_per_token), gib(r.expert_transfer_per_token),
                              r.expert_overlap_tps);
    }
    if (s.prefill_compute_ms) {
        o += md ? fmt::format(
                      "\n## Prefill, {}-row chunks at {:.3g} ms per layer per chunk\n\n| checkpoint | TP | serial tok/s | "
                      "perfect-overlap tok/s | max hideable |\n|---|---|---|---|---|\n",
                      s.rows, *s.prefill_compute_ms)
                : fmt::format("\nPrefill, {}-row chunks at {:.3g} ms per layer per chunk\n", s.rows, *s.prefill_compute_ms);
        for (const LayersCell& c : st.cells) {
            if (!c.prefill) continue;
            const PrefillChunk& p = *c.prefill;
            o +=
                md ? fmt::format("| {} | {} | {:.4g} | {:.4g} | {:.2f} % |\n", cell_name(st, c), c.row.tp, p.serial_tps,
                                 p.overlap_tps, 100 * p.max_hideable)
                   : fmt::format("  {:<22} TP{:<2} serial {:>8.4g} tok/s  perfect overlap {:>8.4g} tok/s  max hideable {:.2f}%\n",
                                 cell_name(st, c), c.row.tp, p.serial_tps, p.overlap_tps, 100 * p.max_hideable);
        }
    }
    if (s.target_tps) {
        o += md ? fmt::format("\n## Decode target {:g} tok/s\n\n", *s.target_tps)
                : fmt::format("\nDecode target {:g} tok/s\n", *s.target_tps);
        for (const TargetCell& t : st.targets) o += (md ? "- " : "  ") + target_line(st, t) + "\n";
    }
    return o;
}

constexpr const char* kNoOffloadNote =
    "— : zero layers need offloading at that TP, so there is no transfer to ceiling against; or the card cannot hold the "
    "embeddings, output head and one layer, so nothing runs.\n";

}  // namespace

std::string layers_answer(const LayersStudy& st) {
    if (st.cells.size() == 1) {
        const Checkpoint& c = st.setup.checkpoints.front();
        const LayerOffloadRow& r = st.cells.front().row;
        if (!r.runs_on_card)
            return fmt::format(
                "LAYERS: {} TP{} — DOES NOT FIT: the {:.4g} GiB card cannot hold the {:.4g} GiB of embeddings and output head "
                "every rank keeps and one {:.4g} GiB layer to run",
                c.name, r.tp, gib(st.setup.host.card_budget), gib(c.non_layer_rank(r.tp)), gib(r.layer_rank));
        return r.offloaded == 0
                   ? fmt::format("LAYERS: {} TP{} — all {} layers fit the {:.4g} GiB card: no offload, no transfer ceiling",
                                 c.name, r.tp, c.layers, gib(st.setup.host.card_budget))
                   : fmt::format(
                         "LAYERS: {} TP{} — {} of {} layers offloaded, {:.2f} GiB/token: ≤ {:.4g} tok/s serial, ≤ {:.4g} tok/s "
                         "with perfect overlap; the copy is {:.1f}% of the step",
                         c.name, r.tp, r.offloaded, c.layers, gib(r.transfer_per_token), r.serial_tps, r.overlap_tps,
                         100 * (1 - r.compute_share));
    }
    if (st.best) {
        const LayersCell& b = st.cells[*st.best];
        return fmt::format("LAYERS: transfer-bound — the best offloaded ceiling is {:.4g} tok/s ({}) even with perfect overlap",
                           b.row.overlap_tps, fmt::format("{} TP{}", cell_name(st, b), b.row.tp));
    }
    if (std::any_of(st.cells.begin(), st.cells.end(), [](const LayersCell& c) { return !c.row.runs_on_card; }))
        return "LAYERS: no configuration runs with offload — each card holds every layer or not even the embeddings and "
               "output head";
    return "LAYERS: every configuration fits without offload — no transfer ceiling";
}

std::string layers_text(const LayersStudy& st) {
    std::string t = fmt::format("kvroof {} — layer-offload ceiling\n\n", KVROOF_VERSION);
    t += "Host: " + host_line(st.setup, true) + "\n\n";
    t += fmt::format("{:<22} {:>3} {:>10} {:>8} {:>9} {:>13} {:>10} {:>15} {:>9} {:>9}\n", "checkpoint", "TP", "GiB/layer",
                     "resident", "offloaded", "GiB/token", "serial/s", "perfect-ovl/s", "compute", "hideable");
    for (const LayersCell& c : st.cells) t += budget_row(st, c, false);
    t += kNoOffloadNote;
    t += sections(st, false);
    return t + "\n" + layers_answer(st) + "\n";
}

std::string layers_markdown(const LayersStudy& st, const GivenFlags& given) {
    std::string md = fmt::format("# kvroof layer-offload ceiling\n\nGenerated by kvroof {} (`kvroof layers", KVROOF_VERSION);
    for (const auto& [k, v] : given) md += fmt::format(" {} \"{}\"", k, v);
    md += "`).\n\nHost: " + host_line(st.setup, false) + ".\n\n";
    md +=
        "| checkpoint | TP | GiB/layer/rank | resident | offloaded | transfer GiB/token | serial tok/s | perfect-overlap tok/s | "
        "compute share | max hideable |\n"
        "|---|---|---|---|---|---|---|---|---|---|\n";
    for (const LayersCell& c : st.cells) md += budget_row(st, c, true);
    md += std::string("\n") + kNoOffloadNote;
    md += sections(st, true);
    return md + "\n**" + layers_answer(st) + "**\n";
}

json layers_json(const LayersStudy& st, const GivenFlags& given_flags) {
    const LayersSetup& s = st.setup;
    json rows = json::array();
    for (const LayersCell& c : st.cells) {
        const LayerOffloadRow& r = c.row;
        const Checkpoint& cp = s.checkpoints[c.checkpoint];
        const bool any = r.has_ceiling();
        const auto runs = [&r](auto x) {
            return r.runs_on_card ? json(x) : json(nullptr);
        };  // where the card runs no layer: null
        json j{{"checkpoint", cp.name},
               {"runs_on_card", r.runs_on_card},
               {"non_layer_bytes_per_rank", cp.non_layer_rank(r.tp).raw()},
               {"tp", r.tp},
               {"layer_bytes_per_rank", r.layer_rank.raw()},
               {"resident", runs(r.resident)},
               {"offloaded", runs(r.offloaded)},
               {"transfer_bytes_per_token", runs(r.transfer_per_token.raw())},
               {"copy_s_per_token", runs(r.copy_s)},
               {"compute_s_per_token", runs(r.compute_s)},
               {"compute_s_per_layer", r.compute_per_layer_s},
               {"serial_tok_per_s", any ? json(r.serial_tps) : json(nullptr)},
               {"perfect_overlap_tok_per_s", any ? json(r.overlap_tps) : json(nullptr)},
               {"compute_share", any ? json(r.compute_share) : json(nullptr)},
               {"max_hideable", any ? json(r.max_hideable) : json(nullptr)},
               {"move_amplification", cp.move_amplification()},
               {"expert_granular",
                {{"transfer_bytes_per_token", runs(r.expert_transfer_per_token.raw())},
                 {"serial_tok_per_s", any ? json(r.expert_serial_tps) : json(nullptr)},
                 {"perfect_overlap_tok_per_s", any ? json(r.expert_overlap_tps) : json(nullptr)}}}};
        if (c.prefill)
            j["prefill"] = {{"rows", s.rows},
                            {"serial_tok_per_s", c.prefill->serial_tps},
                            {"perfect_overlap_tok_per_s", c.prefill->overlap_tps},
                            {"max_hideable", c.prefill->max_hideable}};
        rows.push_back(j);
    }
    json target = nullptr;
    if (s.target_tps) {
        target = json::array();
        for (const TargetCell& t : st.targets)
            target.push_back(
                {{"checkpoint", s.checkpoints[t.checkpoint].name},
                 {"tp", t.tp},
                 {"movable_bytes_per_token", t.target.movable_per_token.raw()},
                 {"max_offloaded_layers", t.target.max_offloaded},
                 // With the non-layer tensors, as the text says it (fits compares the same sum).
                 {"resident_bytes_needed", (t.target.resident_needed + s.checkpoints[t.checkpoint].non_layer_rank(t.tp)).raw()},
                 {"fits", t.target.fits}});
    }
    json given = json::object();
    for (const auto& [k, v] : given_flags) given[k] = v;
    return {{"tool", "kvroof"},
            {"version", KVROOF_VERSION},
            {"command", "layers"},
            {"inputs",
             {{"hardware", s.hardware},
              {"card_budget_bytes", s.host.card_budget.raw()},
              {"link", s.link_name},
              {"link_bytes_per_s", s.host.link.raw()},
              {"compute_s_per_layer", s.compute_ms ? json(*s.compute_ms / 1e3) : json(nullptr)},
              {"compute_roofline_bytes_per_s", s.host.roofline_read ? json(s.host.roofline_read->raw()) : json(nullptr)},
              {"copy_s_per_layer", s.host.copy_per_layer ? json(s.host.copy_per_layer->raw()) : json(nullptr)},
              {"tp", s.tp},
              {"given", given}}},
            {"rows", rows},
            {"decode_target", target},
            {"answer", layers_answer(st)}};
}

}  // namespace kvroof::io

// SPDX-License-Identifier: MIT
// `kvroof verdict --solve`: the request from its flags, the answer as text, JSON and markdown.
#include "kvroof/io/solve_render.hpp"

#include <fmt/format.h>

#include <cmath>

#include "kvroof/io/parse.hpp"
#include "kvroof/io/verdict_render.hpp"
#include "render_util.hpp"

namespace kvroof::io {
using nlohmann::json;

namespace {
constexpr double kDefaultSpan = 64;  // the default range: the scenario's value / 64 .. · 64

// SI value of one bare unit of the knob ("GB/s" -> 1e9); 1 for plain numbers and the context.
double unit_si(const Knob* k) { return k ? io::bare_si(*k) : 1.0; }
std::string unit_of(const Knob* k) { return k ? (k->type == KnobType::quantity ? " " + std::string(k->bare) : "") : " tokens"; }
std::string flag_of(const SolveSpec& s) { return "--" + s.knob; }

// Which way value_text rounds its last digit.
enum class Toward { nearest, up, down };

// A knob value in its bare unit: 4 significant digits ("1.73", "412.5 GB/s"), whole numbers from 1000.
std::string value_text(const SolveResult& r, double si, Toward toward = Toward::nearest) {
    const Knob* k = r.spec.knob == kContextKnob ? nullptr : find_knob(r.spec.knob);
    double v = si / unit_si(k);
    const double a = std::abs(v);
    if (toward != Toward::nearest && a > 0) {
        const double step = a >= 1000 ? 1.0 : std::pow(10.0, std::floor(std::log10(a)) - 3);  // the last digit shown
        const double q = v / step, near = std::round(q);
        v = (std::abs(q - near) <= 1e-9 * std::abs(q) ? near : toward == Toward::up ? std::ceil(q) : std::floor(q)) * step;
    }
    return fmt::format(fmt::runtime(std::abs(v) >= 1000 ? "{:.0f}{}" : "{:.4g}{}"), v, unit_of(k));
}

// The answer rounded toward the side that meets the target: up for ">=" / "from", down for "<=" / "up to", so the
// printed value plugged back in meets it (">= 2.649" had given 1.19996× for 1.20×). A whole-number knob is exact.
std::string answer_text(const SolveResult& r) {
    if (r.whole) return value_text(r, r.answer);
    return value_text(r, r.answer, r.outcome == SolveOutcome::at_least ? Toward::up : Toward::down);
}

std::string metric_text(const SolveResult& r, double m) {
    switch (r.spec.target) {
        case SolveTarget::fits: return m > 0.5 ? "fits" : "does not fit";
        case SolveTarget::throughput: return fmt::format("{:.1f} tok/s", m);
        default: return m > 0 ? render::fmt_gain(m) : std::string("no offload gain");
    }
}

std::string target_text(const SolveResult& r) {
    const SolveSpec& s = r.spec;
    // The tok/s target counts every replica (solve_metric), where each verdict figure is one replica's.
    const bool replicas = s.knob == "dp" || r.at_answer.facts.scenario.hardware.deployment.dp > 1;
    if (s.target == SolveTarget::throughput && replicas)
        return fmt::format("a best bankable throughput >= {:g} tok/s over all --dp replicas together", s.value);
    switch (s.target) {
        case SolveTarget::gain_bankable: return fmt::format("a bankable offload gain >= {:.2f}× (ov = 0)", s.value);
        case SolveTarget::gain_pipelined: return fmt::format("a pipelined offload gain >= {:.2f}× (ov = 1)", s.value);
        case SolveTarget::throughput: return fmt::format("a best bankable throughput >= {:g} tok/s", s.value);
        case SolveTarget::fits: return "the weights and one session of every class fit without offload";
    }
    return "?";
}

double target_value(std::string_view flag, std::string_view text) {
    const double v = parse_number(flag, text);
    check::above_up_to(flag, v, 0.0, 1e15);
    return v;
}

// --target fits | gain=X | pipelined-gain=X | tps=X; --target-gain X = --target gain=X.
void read_target(const SolveText& t, SolveSpec& s) {
    if (t.target && t.target_gain) throw InputError("--target-gain: give --target or --target-gain, not both");
    if (t.target_gain) {
        s.target = SolveTarget::gain_bankable;
        s.value = target_value("--target-gain", *t.target_gain);
    } else if (!t.target) {
        throw InputError("--solve: needs --target fits|gain=X|pipelined-gain=X|tps=X or --target-gain X");
    } else if (*t.target == "fits") {
        s.target = SolveTarget::fits;
    } else {
        const auto eq = t.target->find('=');
        const std::string key = t.target->substr(0, eq);
        if (eq == std::string::npos || (key != "gain" && key != "pipelined-gain" && key != "tps"))
            throw InputError(fmt::format("--target: must be fits, gain=X, pipelined-gain=X or tps=X, got '{}'", *t.target));
        s.target = key == "gain"  ? SolveTarget::gain_bankable
                   : key == "tps" ? SolveTarget::throughput
                                  : SolveTarget::gain_pipelined;
        s.value = target_value("--target", t.target->substr(eq + 1));
    }
    if (s.target != SolveTarget::throughput && s.target != SolveTarget::fits && s.value < 1)
        throw InputError(fmt::format("--target: a gain target must be >= 1 (1 = offload helps at all), got {:g}", s.value));
}

void read_range(const SolveText& t, const Knob* k, const Scenario& sc, SolveSpec& s) {
    const double lo_bound = k ? k->lo : sc.mix.entries.front().cls.a_append, hi_bound = k ? k->hi : 1e9;
    if (t.range) {
        const auto parts = split(*t.range, ':');
        if (parts.size() != 2) throw InputError(fmt::format("--range: must be LO:HI, got '{}'", *t.range));
        auto one = [&](const std::string& text) {
            return k ? std::get<double>(decode_knob(*k, "--range", trim(text))) : parse_number("--range", trim(text));
        };
        s.lo = one(parts[0]);
        s.hi = one(parts[1]);
        if (!(s.lo < s.hi)) throw InputError(fmt::format("--range: LO must be below HI, got '{}'", *t.range));
        if (s.lo < lo_bound || s.hi > hi_bound)
            throw InputError(fmt::format("--range: {} takes values in [{:g}, {:g}], got '{}'", flag_of(s), lo_bound / unit_si(k),
                                         hi_bound / unit_si(k), *t.range));
        if ((!k || k->type == KnobType::whole) && std::ceil(s.lo) > std::floor(s.hi))
            throw InputError(fmt::format("--range: {} takes whole values and '{}' holds none", flag_of(s), *t.range));
        return;
    }
    const CallClass& c = sc.mix.entries.front().cls;
    const double now = k ? k->access.get(sc) : c.s_cached + c.a_append;
    if (!(now > 0) || !std::isfinite(now))
        throw InputError(fmt::format("--range: {} is {} in this scenario; give the range to search as --range LO:HI", flag_of(s),
                                     std::isnan(now) ? std::string("none") : fmt::format("{:g}", now)));
    s.lo = std::max(lo_bound, now / kDefaultSpan);
    s.hi = std::min(hi_bound, now * kDefaultSpan);
    // Other knobs' rules (hbm-reserve below hbm-cap, …) may forbid the ends: move each toward the scenario's value
    // until the scenario is valid there (a geometric mean each time).
    auto valid = [&](double x) {
        try {
            detail::with_knob(sc, k, x).check_validity();
            return true;
        } catch (const InputError&) {
            return false;
        }
    };
    for (int i = 0; i < 64 && !valid(s.lo); ++i) s.lo = std::sqrt(s.lo * now);
    for (int i = 0; i < 64 && !valid(s.hi); ++i) s.hi = std::sqrt(s.hi * now);
    if (k && k->type == KnobType::whole) {
        s.lo = std::max(1.0, std::ceil(s.lo));
        s.hi = std::floor(s.hi);
    }
}
}  // namespace

SolveSpec solve_spec(const SolveText& t, const Scenario& sc) {
    SolveSpec s;
    s.knob = t.knob;
    const Knob* k = t.knob == kContextKnob ? nullptr : find_knob(t.knob);
    if (t.knob != kContextKnob && (!k || !k->numeric() || k->grid_only || !k->access.get)) {
        std::string names;
        for (const Knob& x : knobs())
            if (x.numeric() && !x.grid_only && x.access.get)
                names += std::string(names.empty() ? "" : ", ") + std::string(x.name);
        throw InputError(fmt::format("--solve: '{}' is not a numeric knob; one of: context, {}", t.knob, names));
    }
    if (!k && sc.mix.entries.size() != 1) throw InputError("--solve: context needs a single-class workload (not a --mix)");
    read_target(t, s);
    read_range(t, k, sc, s);
    return s;
}

std::string solve_line(const SolveResult& r) {
    const std::string flag = flag_of(r.spec), range = value_text(r, r.spec.lo) + " .. " + value_text(r, r.spec.hi);
    // With several changes the target holds on a window, not on every value beyond the first: "from" / "up to", not
    // ">=" / "<=" (--hbm-cap >= 143.1 GB had read as every larger card, and at 500 GB the gain is 1.00×).
    const bool several = r.crossings > 1;
    const std::string tail = several
                                 ? fmt::format(
                                       "; the target changes {} times in the range: the first change is given, it does not hold "
                                       "beyond the next (narrow --range to find it)",
                                       r.crossings)
                                 : "";
    const bool least = r.outcome == SolveOutcome::at_least;
    switch (r.outcome) {
        case SolveOutcome::at_least:
        case SolveOutcome::at_most:
            return fmt::format(
                "SOLVE: {} {} {} for {} ({} there{}), searched {}{}", flag,
                several ? (least ? "from" : "up to") : (least ? ">=" : "<="), answer_text(r), target_text(r),
                metric_text(r, r.metric_at_answer),
                r.whole ? fmt::format("; {} at {}", metric_text(r, r.metric_beyond), value_text(r, r.beyond)) : std::string(),
                range, tail);
        case SolveOutcome::every_value:
            return fmt::format("SOLVE: every {} in {} gives {} ({} at {}, {} at {})", flag, range, target_text(r),
                               metric_text(r, r.metric_lo), value_text(r, r.spec.lo), metric_text(r, r.metric_hi),
                               value_text(r, r.spec.hi));
        case SolveOutcome::no_value:
            return fmt::format("SOLVE: no {} in {} gives {} ({} at {}, {} at {})", flag, range, target_text(r),
                               metric_text(r, r.metric_lo), value_text(r, r.spec.lo), metric_text(r, r.metric_hi),
                               value_text(r, r.spec.hi));
    }
    return "SOLVE: ?";
}

std::string render_solve_text(const SolveResult& r) {
    std::string s = fmt::format("kvroof {} — solve\n\n", KVROOF_VERSION);
    s += fmt::format("Searched {} for {}: {} verdicts ({} scan points, then bisection).\n", flag_of(r.spec), target_text(r),
                     r.evaluations, kSolveScan);
    const bool found = r.outcome == SolveOutcome::at_least || r.outcome == SolveOutcome::at_most;
    s += fmt::format("At {} = {}:\n  {}\n\n", flag_of(r.spec), value_text(r, r.answer), verdict_line(r.at_answer));
    if (!found) s += "(the verdict shown is at the low end of the range)\n\n";
    return s + solve_line(r) + "\n";
}

json solve_json(const SolveResult& r, const BuiltScenario& built) {
    const Knob* k = r.spec.knob == kContextKnob ? nullptr : find_knob(r.spec.knob);
    const double unit = unit_si(k);
    const bool found = r.outcome == SolveOutcome::at_least || r.outcome == SolveOutcome::at_most;
    const char* outcome = r.outcome == SolveOutcome::at_least      ? "at_least"
                          : r.outcome == SolveOutcome::at_most     ? "at_most"
                          : r.outcome == SolveOutcome::every_value ? "every_value"
                                                                   : "no_value";
    return {{"tool", "kvroof"},
            {"version", KVROOF_VERSION},
            {"command", "verdict --solve"},
            {"inputs", inputs_json(built, r.at_answer.facts)},
            {"solve",
             {{"knob", r.spec.knob},
              {"unit", k ? std::string(k->bare) : std::string("tokens")},
              {"target", name(r.spec.target)},
              {"target_value", r.spec.target == SolveTarget::fits ? json(nullptr) : json(r.spec.value)},
              {"range", {r.spec.lo / unit, r.spec.hi / unit}},
              {"outcome", outcome},
              {"answer", found ? json(r.answer / unit) : json(nullptr)},
              {"value_at_answer", found ? render::finite_or_null(r.metric_at_answer) : json(nullptr)},
              {"nearest_miss", found ? json(r.beyond / unit) : json(nullptr)},
              {"value_at_nearest_miss", found ? render::finite_or_null(r.metric_beyond) : json(nullptr)},
              {"value_at_range", {render::finite_or_null(r.metric_lo), render::finite_or_null(r.metric_hi)}},
              {"crossings", r.crossings},
              {"verdicts_evaluated", r.evaluations},
              {"verdict_at_answer", verdict_line(r.at_answer)},
              {"line", solve_line(r)}}}};
}

std::string render_solve_markdown(const SolveResult& r, const BuiltScenario& built, const std::string& command) {
    std::string s =
        fmt::format("# kvroof solve\n\nGenerated by kvroof {} ({}).\n\n", KVROOF_VERSION,
                    command.empty() ? fmt::format("`kvroof verdict --solve {}`{}", r.spec.knob, render::overrides_echo(built))
                                    : "`" + command + "`");
    s += fmt::format("**{}**\n\nThe verdict at {} = {}:\n\n**{}**\n", solve_line(r), flag_of(r.spec), value_text(r, r.answer),
                     verdict_line(r.at_answer));
    return s;
}

}  // namespace kvroof::io

// SPDX-License-Identifier: MIT
// `kvroof validate`: the floor check, the bounded fit of the efficiencies, leave one out.
#include "kvroof/io/validate.hpp"

#include <fmt/format.h>

#include <Eigen/Dense>
#include <algorithm>
#include <atomic>
#include <cmath>
#include <exception>
#include <map>
#include <thread>

#include "kvroof/analysis/verdict.hpp"
#include "kvroof/error.hpp"
#include "kvroof/io/scenario_builder.hpp"
#include "kvroof/physics/attention_layers.hpp"
#include "kvroof/physics/model_quantities.hpp"
#include "kvroof/spec/knobs.hpp"

namespace kvroof::io {
namespace {

constexpr double kMinRatio = 1e-3;  // a prediction of nothing counts as 1000× too small, not as −∞
constexpr int kMaxIterations = 60;
constexpr double kGainCoverage = 0.90;  // the gain band holds this share of the pairs: a 90 % interval, as the others

struct Case {
    MeasuredPoint m;
    Scenario base;
    Metrics observed;
};

Metrics observed_of(const MeasuredPoint& m) {
    Metrics o;
    o.itl = m.itl.value_or(0.0);
    o.throughput = m.throughput.value_or(0.0);
    o.ttft = (m.load == "concurrency" || m.load == "request_rate") ? m.ttft.value_or(0.0) : 0.0;
    return o;
}

Metrics predicted_of(const AccuracyRow& row) {
    return {row.kvroof_itl, row.ttft_compared ? row.kvroof.ttft : 0.0, row.kvroof.throughput};
}

Metrics predict(const Case& c, const std::vector<double>& values) {
    Scenario s = c.base;
    apply_fit(s, values);
    return predicted_of(predict_row(c.m, s));
}

double log_error(double predicted, double measured) { return std::log(std::max(predicted / measured, kMinRatio)); }

// ln(predicted / measured) of every measured metric of the cases, in order.
void append_residuals(const Metrics& p, const Metrics& o, std::vector<double>& out) {
    if (o.itl > 0) out.push_back(log_error(p.itl, o.itl));
    if (o.ttft > 0) out.push_back(log_error(p.ttft, o.ttft));
    if (o.throughput > 0) out.push_back(log_error(p.throughput, o.throughput));
}

Eigen::VectorXd residuals(const std::vector<const Case*>& cases, const std::vector<double>& values) {
    std::vector<double> r;
    for (const Case* c : cases) append_residuals(predict(*c, values), c->observed, r);
    return Eigen::Map<Eigen::VectorXd>(r.data(), static_cast<Eigen::Index>(r.size()));
}

struct Bounds {
    std::vector<double> lo, hi, scale;
};

Bounds fit_bounds() {
    Bounds b;
    for (const std::string_view name : kFitKnobs) {
        const Knob& k = knob(name);
        b.lo.push_back(k.lo);
        b.hi.push_back(k.hi);
    }
    static_assert(kFitKnobs.size() == 4, "one scale per fitted knob");
    b.scale = {0.1, 0.1, 1e-3, 1e-5};  // a unit step of each parameter (per kFitKnobs), for the Jacobian
    return b;
}

std::vector<double> clamp(std::vector<double> v, const Bounds& b) {
    for (std::size_t j = 0; j < v.size(); ++j) v[j] = std::clamp(v[j], b.lo[j], b.hi[j]);
    return v;
}

// Central differences, one-sided at a bound; columns per unit of each parameter.
Eigen::MatrixXd jacobian(const std::vector<const Case*>& cases, const std::vector<double>& v, const Bounds& b,
                         const Eigen::VectorXd& r0) {
    Eigen::MatrixXd J(r0.size(), static_cast<Eigen::Index>(v.size()));
    for (std::size_t j = 0; j < v.size(); ++j) {
        const double h = 1e-4 * b.scale[j];
        std::vector<double> up = v, down = v;
        up[j] = std::min(v[j] + h, b.hi[j]);
        down[j] = std::max(v[j] - h, b.lo[j]);
        const Eigen::VectorXd ru = up[j] == v[j] ? r0 : residuals(cases, up);
        const Eigen::VectorXd rd = down[j] == v[j] ? r0 : residuals(cases, down);
        J.col(static_cast<Eigen::Index>(j)) = (ru - rd) / (up[j] - down[j]);
    }
    return J;
}

FitResult fit_cases(const std::vector<const Case*>& cases, std::vector<double> v) {
    const Bounds b = fit_bounds();
    v = clamp(std::move(v), b);
    Eigen::VectorXd r = residuals(cases, v);
    double ssr = r.squaredNorm(), lambda = 1e-3;
    FitResult out;
    Eigen::MatrixXd J;
    for (out.iterations = 0; out.iterations < kMaxIterations; ++out.iterations) {
        J = jacobian(cases, v, b, r);
        const Eigen::MatrixXd A = J.transpose() * J;
        const Eigen::VectorXd g = J.transpose() * r;
        bool improved = false;
        while (lambda < 1e12) {
            Eigen::MatrixXd D = A;
            for (Eigen::Index j = 0; j < D.rows(); ++j) D(j, j) += lambda * std::max(A(j, j), 1e-12);
            const Eigen::VectorXd step = D.ldlt().solve(-g);
            std::vector<double> trial = v;
            for (std::size_t j = 0; j < v.size(); ++j) trial[j] += step(static_cast<Eigen::Index>(j));
            trial = clamp(std::move(trial), b);
            const Eigen::VectorXd rt = residuals(cases, trial);
            if (rt.squaredNorm() < ssr) {
                const double gain = ssr - rt.squaredNorm();
                v = std::move(trial), r = rt, lambda = std::max(lambda / 10, 1e-9), improved = true;
                ssr = r.squaredNorm();
                if (gain < 1e-12 * std::max(ssr, 1e-30)) improved = false;  // converged
                break;
            }
            lambda *= 10;
        }
        if (!improved) break;
    }
    J = jacobian(cases, v, b, r);
    out.values = v;
    out.ssr = ssr;
    out.residuals = static_cast<std::size_t>(r.size());
    for (std::size_t j = 0; j < v.size(); ++j)  // an exactly zero column: no prediction moves with the knob at the fit
        out.identified.push_back(J.rows() > 0 && J.col(static_cast<Eigen::Index>(j)).cwiseAbs().maxCoeff() > 0);
    const auto fitted = static_cast<double>(std::count(out.identified.begin(), out.identified.end(), true));
    const double dof = static_cast<double>(r.size()) - fitted;  // the fit's rank: a knob that moves nothing costs none
    const Eigen::MatrixXd cov =
        (J.transpose() * J).completeOrthogonalDecomposition().pseudoInverse() * (dof > 0 ? ssr / dof : 0.0);
    for (std::size_t j = 0; j < v.size(); ++j) out.sigma.push_back(out.identified[j] ? std::sqrt(std::max(0.0, cov(j, j))) : 0.0);
    return out;
}

std::vector<double> default_values() {
    std::vector<double> v;
    v.reserve(kFitKnobs.size());
    const Scenario s = build_scenario(ScenarioInputs{}).scenario;  // the knobs' defaults
    for (const std::string_view name : kFitKnobs) v.push_back(knob(name).access.get(s));
    return v;
}

std::vector<Case> cases_of(const std::vector<MeasuredPoint>& points) {
    std::vector<Case> cases;
    for (const MeasuredPoint& m : points) {
        try {
            cases.push_back({m, point_scenario(m), observed_of(m)});
        } catch (const InputError& e) {  // a preset or dtype the point names: say which point
            throw InputError(fmt::format("point {}: {}", m.id, e.what()));
        }
    }
    return cases;
}

double quantile(std::vector<double> v, double q) {
    if (v.empty()) return 0.0;
    std::sort(v.begin(), v.end());
    const double pos = q * static_cast<double>(v.size() - 1);
    const auto i = static_cast<std::size_t>(std::floor(pos));
    const double frac = pos - static_cast<double>(i);
    return i + 1 < v.size() ? v[i] + frac * (v[i + 1] - v[i]) : v[i];
}

MetricSummary summarise(const char* name, const std::vector<ValidatedPoint>& pts, double Metrics::*field) {
    MetricSummary s;
    s.name = name;
    std::vector<double> loo;
    for (const ValidatedPoint& p : pts) {
        const double o = p.observed.*field;
        if (!(o > 0)) continue;
        ++s.n;
        s.mape_defaults += std::abs(p.at_defaults.*field / o - 1);
        s.mape_fitted += std::abs(p.fitted.*field / o - 1);
        s.mape_loo += std::abs(p.loo.*field / o - 1);
        loo.push_back(log_error(p.loo.*field, o));
    }
    if (s.n > 0) {
        const auto n = static_cast<double>(s.n);
        s.mape_defaults /= n, s.mape_fitted /= n, s.mape_loo /= n;
    }
    s.q_lo = quantile(loo, kIntervalLo);
    s.q_hi = quantile(loo, kIntervalHi);
    return s;
}

// The 90th percentile of |difference of LOO throughput log errors| over the pairs of a
// series (accuracy.hpp's RatioError series): the error of a predicted throughput ratio.
void gain_band(ValidationResult& r) {
    std::map<std::string, std::vector<double>> series;
    for (const ValidatedPoint& p : r.points) {
        const MeasuredPoint& m = p.measured;
        if (!(p.observed.throughput > 0)) continue;
        series[fmt::format("{}|{}|{}|{}|{}|{}|{}", m.source_key, m.engine, m.gpu, m.gpus, m.model, m.weight_dtype, m.kv_dtype)]
            .push_back(log_error(p.loo.throughput, p.observed.throughput));
    }
    std::vector<double> d;
    for (const auto& [key, e] : series)
        for (std::size_t i = 0; i < e.size(); ++i)
            for (std::size_t j = i + 1; j < e.size(); ++j) d.push_back(std::abs(e[i] - e[j]));
    r.gain_pairs = d.size();
    // No two points of one series: no ratio was tested, so no band is fitted and the built-in uncertainty stands
    // (a band of 0 from no pairs made every gain above 1.00x a sure one under --calibration).
    r.gain_half_width = d.empty() ? std::log1p(kGainUncertainty) : quantile(d, kGainCoverage);
}
}  // namespace

void apply_fit(Scenario& s, const std::vector<double>& values) {
    for (std::size_t j = 0; j < kFitKnobs.size() && j < values.size(); ++j)
        knob(kFitKnobs[j]).access.apply(s, KnobValue(values[j]));
}

FloorCheck floor_check(const MeasuredPoint& m, const Scenario& s, const AccuracyRow& row) {
    const HardwareSpec& h = s.hardware;
    const ParamCounts pc = param_counts(s.model);
    const double P = pc.active - pc.embedding;  // multiplied per token: the embedding table is looked up
    const double W = P * bytes_per_element(s.policy.weight_dtype);
    const double BW = h.deployment.gpus * h.gpu.hbm_bandwidth.raw(),
                 F = h.deployment.gpus * gemm_peak(h, gemm_dtype(s.policy)).raw();
    // KV read per sequence at context ISL, counted only where the point states its dtype.
    const double kv = m.kv_dtype.empty() ? 0.0
                                         : decode_tokens_read(attention_layout(s.model, s.policy.kv_dtype), m.isl, 1.0) *
                                               kv_bytes_per_token(s.model, s.policy.kv_dtype).raw();
    auto itl_floor = [&](double B) { return std::max((W + B * kv) / BW, 2 * P * B / F); };
    FloorCheck c;
    const double B = m.load == "batch" ? m.load_value : 1.0;
    c.itl_floor = itl_floor(B);
    c.ttft_floor = std::max(2 * P * std::max(m.isl - m.prefix, 1.0) / F, W / BW);
    // Every output token passes the weights once; the pp stages of a pipeline compute side by side.
    c.throughput_ceiling = h.deployment.pp * F / (2 * P);
    if ((m.load == "batch" || m.load == "concurrency") && m.osl >= 2)  // at most C decoding, one token each per step
        c.throughput_ceiling = std::min(c.throughput_ceiling, m.load_value * m.osl / (m.osl - 1) / itl_floor(1.0));
    auto below = [](std::vector<std::string>& out, const char* what, double x, double bound, bool ceiling) {
        if (ceiling ? x > bound * (1 + 1e-9) : x < bound * (1 - 1e-9))
            out.push_back(fmt::format("{} {:.4g} {} the physical {} {:.4g}", what, x, ceiling ? "above" : "below",
                                      ceiling ? "ceiling" : "floor", bound));
    };
    if (m.itl) below(c.data_defects, "measured ITL s", *m.itl, c.itl_floor, false);
    if (m.ttft) below(c.data_defects, "measured TTFT s", *m.ttft, c.ttft_floor, false);
    if (m.throughput) below(c.data_defects, "measured throughput tok/s", *m.throughput, c.throughput_ceiling, true);
    below(c.model_defects, "predicted ITL s", row.kvroof_itl, itl_floor(std::max(row.kvroof.batch, 0.0)), false);
    below(c.model_defects, "predicted TTFT s", row.kvroof.ttft, c.ttft_floor, false);
    below(c.model_defects, "predicted throughput tok/s", row.kvroof.throughput, F / (2 * P), true);
    return c;
}

FitResult fit_efficiencies(const std::vector<MeasuredPoint>& points, const std::vector<double>& starts) {
    const std::vector<Case> cases = cases_of(points);
    std::vector<const Case*> all;
    all.reserve(cases.size());
    for (const Case& c : cases) all.push_back(&c);
    return fit_cases(all, starts.empty() ? default_values() : starts);
}

namespace {
// One point: its predictions at the defaults and at the fit, its floor checks,
// and its leave-one-out prediction (the fit redone without it, from `fit`).
ValidatedPoint validate_point(const std::vector<Case>& cases, std::size_t i, const std::vector<double>& fit) {
    const Case& c = cases[i];
    ValidatedPoint p;
    p.measured = c.m;
    p.observed = c.observed;
    const AccuracyRow row = predict_row(c.m, c.base);
    p.at_defaults = predicted_of(row);
    p.floor = floor_check(c.m, c.base, row);
    Scenario fitted = c.base;
    apply_fit(fitted, fit);
    const AccuracyRow frow = predict_row(c.m, fitted);
    p.fitted = predicted_of(frow);
    for (std::string& d : floor_check(c.m, fitted, frow).model_defects) p.floor.model_defects.push_back("fitted: " + d);
    std::vector<const Case*> others;
    for (std::size_t k = 0; k < cases.size(); ++k)
        if (k != i) others.push_back(&cases[k]);
    p.loo = predict(c, fit_cases(others, fit).values);
    return p;
}

// Runs body(i) for every i < n on up to `threads` workers (0: one per core).
// Each i is independent and writes only its own result, so the results do not
// depend on the thread count; an exception is rethrown, the lowest i's first.
template <class Body>
void for_each_index(std::size_t n, int threads, const Body& body) {
    const unsigned cores = std::max(1u, std::thread::hardware_concurrency());
    const std::size_t workers = std::min<std::size_t>(n, threads > 0 ? static_cast<std::size_t>(threads) : cores);
    std::atomic<std::size_t> next{0};
    std::vector<std::exception_ptr> failed(n);
    auto work = [&] {
        for (std::size_t i; (i = next.fetch_add(1)) < n;) {
            try {
                body(i);
            } catch (...) {
                failed[i] = std::current_exception();
            }
        }
    };
    std::vector<std::thread> pool;
    for (std::size_t t = 1; t < workers; ++t) pool.emplace_back(work);
    work();
    for (auto& t : pool) t.join();
    for (const std::exception_ptr& e : failed)
        if (e) std::rethrow_exception(e);
}
}  // namespace

ValidationResult validate(const std::vector<MeasuredPoint>& points, const std::string& source, int threads) {
    ValidationResult r;
    r.source = source;
    const std::vector<Case> cases = cases_of(points);
    if (points.size() < kFitKnobs.size())
        throw InputError(fmt::format("points: {} has {} points; the fit of {} efficiencies needs at least {}", source,
                                     points.size(), kFitKnobs.size(), kFitKnobs.size()));
    std::vector<const Case*> all;
    all.reserve(cases.size());
    for (const Case& c : cases) all.push_back(&c);
    const std::vector<double> start = default_values();
    r.fit = fit_cases(all, start);
    const Bounds b = fit_bounds();
    for (std::size_t j = 0; j < kFitKnobs.size(); ++j)
        r.params.push_back({std::string(kFitKnobs[j]), b.lo[j], b.hi[j], start[j], r.fit.values[j], r.fit.sigma[j],
                            r.fit.identified[j] && (r.fit.values[j] <= b.lo[j] || r.fit.values[j] >= b.hi[j]),
                            r.fit.identified[j]});
    r.points.resize(cases.size());
    for_each_index(cases.size(), threads, [&](std::size_t i) { r.points[i] = validate_point(cases, i, r.fit.values); });
    for (const ValidatedPoint& p : r.points) {
        r.data_defects += p.floor.data_defects.size();
        r.model_defects += p.floor.model_defects.size();
    }
    r.metrics = {summarise("itl", r.points, &Metrics::itl), summarise("ttft", r.points, &Metrics::ttft),
                 summarise("throughput", r.points, &Metrics::throughput)};
    gain_band(r);
    return r;
}

void check_holdout(ValidationResult& r, const std::vector<MeasuredPoint>& points) {
    std::vector<ValidatedPoint> held;
    for (const Case& c : cases_of(points)) {
        ValidatedPoint p;
        p.observed = c.observed;
        p.at_defaults = predicted_of(predict_row(c.m, c.base));
        p.fitted = p.loo = predict(c, r.fit.values);
        held.push_back(std::move(p));
    }
    r.holdout_points = held.size();
    r.holdout = {summarise("itl", held, &Metrics::itl), summarise("ttft", held, &Metrics::ttft),
                 summarise("throughput", held, &Metrics::throughput)};
}

}  // namespace kvroof::io

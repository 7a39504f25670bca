#include "privacy/dp/rdp_accountant.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <numbers>
#include <utility>

#include "core/check.h"

namespace tributary {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
// The fractional-order series gives up (the order's RDP is then +inf) after this many terms.
constexpr int kMaxSeriesTerms = 1000;
// Wang et al.'s Theorem 9 costs O(alpha^2) (forward differences); above this order the cruder
// term-wise bound is used, as in TF Privacy.
constexpr int kMaxExactWorOrder = 256;

// log(exp(x) + exp(y)).
double LogAdd(double x, double y) {
  const double a = std::min(x, y), b = std::max(x, y);
  if (a == -kInf) return b;
  return b + std::log1p(std::exp(a - b));
}

// log|exp(x) - exp(y)| and whether exp(x) >= exp(y).
std::pair<bool, double> LogSubSign(double x, double y) {
  if (x > y) return {true, x + std::log1p(-std::exp(y - x))};
  if (x < y) return {false, y + std::log1p(-std::exp(x - y))};
  return {true, -kInf};
}

// lgamma_r, not lgamma: lgamma writes the global signgam, a data race between threads.
double LogGamma(double x) {
  int sign = 0;
  return ::lgamma_r(x, &sign);
}

// log|binomial(n, k)| for real n.
double LogComb(double n, double k) {
  return LogGamma(n + 1) - LogGamma(k + 1) - LogGamma(n - k + 1);
}

// log(erfc(x)), accurate where erfc underflows (the Laurent series at infinity, as TF Privacy).
double LogErfc(double x) {
  if (x < 25.0) return std::log(std::erfc(x));
  const double x2 = x * x;
  return -0.5 * std::log(std::numbers::pi) - std::log(x) - x2 - 0.5 / x2 + 0.625 / (x2 * x2) -
         37.0 / 24.0 / (x2 * x2 * x2) + 353.0 / 64.0 / (x2 * x2 * x2 * x2);
}

bool IsInteger(double x) { return std::floor(x) == x; }

// Poisson, integer alpha, 0 < q < 1: A_alpha = sum_i C(alpha, i) q^i (1-q)^(alpha-i)
// exp((i^2 - i) / (2 sigma^2)) (Mironov, Talwar, Zhang 2019, Section 3.3).
double LogAPoissonInt(double q, double sigma, double alpha) {
  const double log_q = std::log(q), log_1mq = std::log1p(-q);
  double log_a = -kInf;
  for (double i = 0; i <= alpha; ++i)
    log_a = LogAdd(log_a, LogComb(alpha, i) + i * log_q + (alpha - i) * log_1mq +
                              (i * i - i) / (2 * sigma * sigma));
  return log_a;
}

// A signed sum in log space: the positive and the negative terms apart.
struct SignedLogSum {
  double pos = -kInf, neg = -kInf;
  void Add(bool positive, double log_term) {
    double& s = positive ? pos : neg;
    s = LogAdd(s, log_term);
  }
  // log(pos - neg); the positive part alone (an upper bound) if rounding made it non-positive.
  double Value() const {
    const auto [positive, mag] = LogSubSign(pos, neg);
    return positive && mag > -kInf ? mag : pos;
  }
};

// Poisson, fractional alpha, 0 < q < 1: the integrals over (-inf, z0] and [z0, inf) as two
// binomial series (Mironov, Talwar, Zhang 2019, Section 3.3). C(alpha, i) < 0 for some i > alpha;
// the signs are kept, as TF Privacy's rdp_accountant.py and Opacus do (Google dp_accounting sums
// |terms|, a marginally larger bound).
double LogAPoissonFrac(double q, double sigma, double alpha) {
  const double log_q = std::log(q), log_1mq = std::log1p(-q);
  const double z0 = sigma * sigma * std::log(1 / q - 1) + 0.5;
  const double floor_alpha = std::floor(alpha);
  SignedLogSum a0, a1;
  double last_s0 = -kInf, last_s1 = -kInf;
  for (int k = 0; k < kMaxSeriesTerms; ++k) {
    const double i = k, j = alpha - i;
    // C(alpha, i) is positive while i <= floor(alpha) + 1, then alternates.
    const bool positive = i <= floor_alpha + 1 || std::fmod(i - floor_alpha - 1, 2.0) == 0.0;
    const double log_coef = LogComb(alpha, i);
    const double log_s0 = log_coef + i * log_q + j * log_1mq + (i * i - i) / (2 * sigma * sigma) +
                          std::log(0.5) + LogErfc((i - z0) / (std::numbers::sqrt2 * sigma));
    const double log_s1 = log_coef + j * log_q + i * log_1mq + (j * j - j) / (2 * sigma * sigma) +
                          std::log(0.5) + LogErfc((z0 - j) / (std::numbers::sqrt2 * sigma));
    a0.Add(positive, log_s0);
    a1.Add(positive, log_s1);
    const double total = LogAdd(a0.Value(), a1.Value());
    // Stop once both series decrease and their terms are below e^-30 of the sum (dp_accounting).
    if (log_s0 < last_s0 && log_s1 < last_s1 && std::max(log_s0, log_s1) < total - 30) return total;
    last_s0 = log_s0;
    last_s1 = log_s1;
  }
  return kInf;
}

// log|k-th forward difference at -1| of f(x) = exp(x (x + 1) / (2 sigma^2)), k = 1..n + 2, at
// index k - 1: the differences Theorem 9 of Wang, Balle, Kasiviswanathan needs. In log space with
// signs, one difference at a time, as TF Privacy's _get_forward_diffs (so the bound is the same).
std::vector<double> WorForwardDiffs(double sigma, int n) {
  auto cgf = [sigma](double x) { return x * (x + 1) / (2 * sigma * sigma); };
  std::vector<double> v(n + 3, 0.0);  // log values; v[0] = log f(-1) = 0
  std::vector<bool> positive(n + 3, true);
  for (int i = 1; i < n + 3; ++i) v[i] = cgf(i - 1);
  std::vector<double> deltas(n + 2);
  for (int i = 0; i < n + 2; ++i) {
    for (int j = 0; j < n + 2 - i; ++j) {
      if (positive[j] == positive[j + 1]) {
        const auto [sign, mag] = LogSubSign(v[j + 1], v[j]);
        positive[j] = positive[j + 1] ? sign : !sign;
        v[j] = mag;
      } else {
        v[j] = LogAdd(v[j], v[j + 1]);
        positive[j] = positive[j + 1];
      }
    }
    deltas[i] = v[0];
  }
  return deltas;
}

// Fixed-size sampling, integer alpha >= 1, 0 < q < 1: log of Wang, Balle, Kasiviswanathan's bound
// on A_alpha, i.e. (alpha - 1) times the RDP bound. `deltas` from WorForwardDiffs, n >= alpha when
// alpha <= kMaxExactWorOrder.
double LogAWorInt(double q, double sigma, int alpha, const std::vector<double>& deltas) {
  if (alpha == 1) return 0.0;
  auto cgf = [sigma](double x) { return x * (x + 1) / (2 * sigma * sigma); };
  const double f2 = 1 / (sigma * sigma);  // the Gaussian's RDP at order 2
  const double log_f2m1 = f2 + std::log1p(-std::exp(-f2));
  const double log_q = std::log(q);
  double log_a = 0.0;
  for (int i = 2; i <= alpha; ++i) {
    double s;
    if (i == 2) {
      s = 2 * log_q + LogComb(alpha, 2) + std::min(std::log(4.0) + log_f2m1, f2 + std::log(2.0));
    } else if (alpha <= kMaxExactWorOrder) {
      const double lo = deltas[2 * (i / 2) - 1], hi = deltas[2 * ((i + 1) / 2) - 1];
      s = std::min(std::log(4.0) + 0.5 * (lo + hi), std::log(2.0) + cgf(i - 1)) + i * log_q +
          LogComb(alpha, i);
    } else {
      s = std::log(2.0) + cgf(i - 1) + i * log_q + LogComb(alpha, i);
    }
    log_a = LogAdd(log_a, s);
  }
  return log_a;
}

void CheckMechanism(double q, double noise_multiplier) {
  TRIB_CHECK(q >= 0.0 && q <= 1.0, "sampling rate outside [0, 1]");
  TRIB_CHECK(noise_multiplier >= 0.0, "negative or NaN noise multiplier");
}

bool ValidOrder(double order) { return order > 1.0 && order <= kMaxRdpOrder; }

void CheckOrder(double order) {
  TRIB_CHECK(ValidOrder(order) || order == kInf, "Rényi order not in (1, kMaxRdpOrder] or inf");
}

}  // namespace

std::string_view DpSamplingName(DpSampling sampling) {
  return sampling == DpSampling::kPoisson ? "poisson" : "fixed";
}

Result<DpSampling> ParseDpSampling(std::string_view name) {
  if (name == "poisson") return DpSampling::kPoisson;
  if (name == "fixed") return DpSampling::kFixedSize;
  return Status::InvalidArgument(
      fmt::format("sampling '{}' must be 'poisson' or 'fixed'", std::string(name)));
}

std::vector<double> DefaultRdpOrders() {
  std::vector<double> orders;
  for (int x = 1; x < 100; ++x) orders.push_back(1 + x / 10.0);
  for (int a = 11; a <= 64; ++a) orders.push_back(a);
  for (double a : {128.0, 256.0, 512.0, 1024.0}) orders.push_back(a);
  return orders;
}

std::vector<double> SampledGaussianRdp(DpSampling sampling, double q, double noise_multiplier,
                                       std::span<const double> orders) {
  CheckMechanism(q, noise_multiplier);
  for (double order : orders) CheckOrder(order);
  const double z = noise_multiplier;
  std::vector<double> rdp(orders.size(), 0.0);
  if (q == 0.0 || std::isinf(z)) return rdp;
  // Forward differences up to the largest integer order the exact fixed-size bound needs.
  std::vector<double> deltas;
  if (sampling == DpSampling::kFixedSize && q < 1.0 && z > 0.0) {
    // Order a uses the integer orders floor(a) and ceil(a); those <= kMaxExactWorOrder need them.
    int n = 0;
    for (double order : orders)
      if (std::isfinite(order))
        n = std::max(n, static_cast<int>(std::min<double>(std::ceil(order), kMaxExactWorOrder)));
    if (n > 0) deltas = WorForwardDiffs(z, n);
  }
  for (size_t k = 0; k < orders.size(); ++k) {
    const double a = orders[k];
    if (z == 0.0 || std::isinf(a)) {
      rdp[k] = kInf;
    } else if (q == 1.0) {
      rdp[k] = a / (2 * z * z);
    } else if (sampling == DpSampling::kPoisson) {
      rdp[k] = (IsInteger(a) ? LogAPoissonInt(q, z, a) : LogAPoissonFrac(q, z, a)) / (a - 1);
    } else if (IsInteger(a)) {
      rdp[k] = LogAWorInt(q, z, static_cast<int>(a), deltas) / (a - 1);
    } else {
      // Wang et al.'s Corollary 10: the bound on log A is convex in alpha; interpolate.
      const double lo = std::floor(a), t = a - lo;
      const double x = LogAWorInt(q, z, static_cast<int>(lo), deltas);
      const double y = LogAWorInt(q, z, static_cast<int>(lo) + 1, deltas);
      rdp[k] = ((1 - t) * x + t * y) / (a - 1);
    }
    // RDP is >= 0; log-sum-exp rounding can leave -1e-17 where it is ~0 (tiny q, huge noise).
    rdp[k] = std::max(rdp[k], 0.0);
  }
  return rdp;
}

double SampledGaussianRdp(DpSampling sampling, double q, double noise_multiplier, double order) {
  return SampledGaussianRdp(sampling, q, noise_multiplier, std::span<const double>(&order, 1))[0];
}

PrivacySpent RdpToEpsilon(std::span<const double> orders, std::span<const double> rdp, double delta,
                          RdpConversion conversion) {
  TRIB_CHECK(!orders.empty() && orders.size() == rdp.size(), "orders and rdp differ in size");
  TRIB_CHECK(delta > 0.0 && delta < 1.0, "delta outside (0, 1)");
  PrivacySpent best{kInf, orders[0]};
  for (size_t k = 0; k < orders.size(); ++k) {
    const double a = orders[k];
    TRIB_CHECK(a > 1.0 && std::isfinite(a), "Rényi order not finite and > 1");
    TRIB_CHECK(!std::isnan(rdp[k]), "NaN RDP");
    const double r = std::max(rdp[k], 0.0);
    double eps;
    if (conversion == RdpConversion::kMironov2017) {
      eps = r - std::log(delta) / (a - 1);
    } else if (delta * delta + std::expm1(-r) > 0) {
      eps = 0.0;  // delta >= sqrt(1 - exp(-KL)) already, and KL <= rdp
    } else if (a > 1.01) {
      eps = r + std::log1p(-1 / a) - std::log(delta * a) / (a - 1);
    } else {
      eps = kInf;  // numerically unstable as a -> 1, and useless there
    }
    if (eps < best.epsilon) best = {eps, a};
  }
  best.epsilon = std::max(best.epsilon, 0.0);
  return best;
}

RdpAccountant::RdpAccountant(std::vector<double> orders) : orders_(std::move(orders)) {
  TRIB_CHECK(!orders_.empty(), "no Rényi orders");
  for (double a : orders_) TRIB_CHECK(ValidOrder(a), "Rényi order not in (1, kMaxRdpOrder]");
  rdp_.assign(orders_.size(), 0.0);
}

void RdpAccountant::Compose(DpSampling sampling, double q, double noise_multiplier, int64_t steps) {
  CheckMechanism(q, noise_multiplier);
  TRIB_CHECK(steps >= 0, "negative steps");
  if (steps == 0) return;
  if (!cached_ || cached_sampling_ != sampling || cached_q_ != q || cached_z_ != noise_multiplier) {
    cached_rdp_ = SampledGaussianRdp(sampling, q, noise_multiplier, orders_);
    cached_ = true;
    cached_sampling_ = sampling;
    cached_q_ = q;
    cached_z_ = noise_multiplier;
  }
  for (size_t k = 0; k < rdp_.size(); ++k) rdp_[k] += static_cast<double>(steps) * cached_rdp_[k];
  steps_ += steps;
}

PrivacySpent RdpAccountant::Spent(double delta, RdpConversion conversion) const {
  return RdpToEpsilon(orders_, rdp_, delta, conversion);
}

Status RdpAccountant::FromState(std::vector<double> orders, std::vector<double> rdp,
                                int64_t steps) {
  auto bad = [](const std::string& what) {
    return Status::InvalidArgument("RDP accountant state: " + what);
  };
  if (orders.empty()) return bad("no orders");
  if (orders.size() != rdp.size())
    return bad(fmt::format("{} orders but {} RDP values", orders.size(), rdp.size()));
  for (size_t k = 0; k < orders.size(); ++k) {
    if (!ValidOrder(orders[k]))
      return bad(fmt::format("order {} is not in (1, {}]", orders[k], kMaxRdpOrder));
    if (!(rdp[k] >= 0.0))
      return bad(fmt::format("RDP {} at order {} is negative or NaN", rdp[k], orders[k]));
  }
  if (steps < 0) return bad(fmt::format("steps {} is negative", steps));
  orders_ = std::move(orders);
  rdp_ = std::move(rdp);
  steps_ = steps;
  cached_ = false;
  return Status::Ok();
}

Result<double> NoiseMultiplierForEpsilon(DpSampling sampling, double q, int64_t rounds,
                                         double delta, double target_epsilon) {
  if (!(q >= 0.0 && q <= 1.0))
    return Status::InvalidArgument(fmt::format("sampling rate q = {} must be in [0, 1]", q));
  if (rounds < 0) return Status::InvalidArgument(fmt::format("rounds = {} must be >= 0", rounds));
  if (!(delta > 0.0 && delta < 1.0))
    return Status::InvalidArgument(fmt::format("delta = {} must be in (0, 1)", delta));
  if (!(target_epsilon > 0.0) || !std::isfinite(target_epsilon))
    return Status::InvalidArgument(
        fmt::format("target epsilon = {} must be a finite number > 0", target_epsilon));
  if (q == 0.0 || rounds == 0) return 0.0;  // no one's data is used: any noise will do
  const std::vector<double> orders = DefaultRdpOrders();
  auto epsilon = [&](double z) {
    RdpAccountant acc(orders);
    acc.Compose(sampling, q, z, rounds);
    return acc.Spent(delta).epsilon;
  };
  constexpr double kMaxZ = 1e3, kMinZ = 1e-4;
  // Bracket [lo, hi] with epsilon(lo) > target >= epsilon(hi); epsilon falls as z grows.
  double hi = 1.0, lo = 0.0;
  if (epsilon(hi) > target_epsilon) {
    do {
      lo = hi;
      hi = std::min(2 * hi, kMaxZ);
      if (hi == kMaxZ && epsilon(hi) > target_epsilon)
        return Status::OutOfRange(fmt::format(
            "even noise multiplier {} spends epsilon {:.4g} > {} in {} rounds at q = {}, delta = "
            "{}",
            kMaxZ, epsilon(kMaxZ), target_epsilon, rounds, q, delta));
    } while (epsilon(hi) > target_epsilon);
  } else {
    lo = hi / 2;
    while (epsilon(lo) <= target_epsilon) {
      hi = lo;
      lo /= 2;
      if (lo < kMinZ)
        return Status::OutOfRange(fmt::format(
            "every noise multiplier down to {} spends at most epsilon {} in {} rounds at q = {}, "
            "delta = {}",
            kMinZ, target_epsilon, rounds, q, delta));
    }
  }
  while (hi - lo > 1e-5 * hi) {
    const double mid = 0.5 * (lo + hi);
    (epsilon(mid) > target_epsilon ? lo : hi) = mid;
  }
  return hi;
}

}  // namespace tributary

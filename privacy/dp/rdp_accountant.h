// Rényi-DP (RDP) accounting of the sampled Gaussian mechanism: the (epsilon, delta) that rounds of
// DP-FedAvg spend, and the noise multiplier a budget needs.
//
// One round releases (sum of the sampled clients' clipped updates) + N(0, sigma^2 I). Its RDP at
// each order alpha (Mironov 2017) is computed here; rounds compose by adding RDP order by order,
// and epsilon at delta is the best conversion over the orders. Everything is computed in log space
// (log-sum-exp, lgamma), so nothing overflows for orders up to 1024, any q in [0, 1], any z >= 0.
//
// noise_multiplier, everywhere in this file, is the noise's standard deviation over the L2
// sensitivity of the released sum under the adjacency the sampling's analysis uses:
//
//  kPoisson ("poisson"): each client joins a round independently with probability q; add/remove-one
//    adjacency. One client moves the clipped sum by at most C, so noise_multiplier = sigma / C = z.
//    The RDP is exact: Mironov, Talwar, Zhang 2019, "Rényi Differential Privacy of the Sampled
//    Gaussian Mechanism" (arXiv:1908.10530), the binomial expansion for integer orders and the
//    two-series expansion of its Section 3.3 for fractional ones.
//
//  kFixedSize ("fixed"): m of n clients without replacement, q = m / n; replace-one adjacency (n is
//    public). Replacing one client moves the clipped sum by up to 2C, so noise_multiplier =
//    sigma / (2C): A CALLER HOLDING z = sigma / C PASSES z / 2 (DpAggregator does). The RDP is an
//    upper bound, not exact: Wang, Balle, Kasiviswanathan 2019, "Subsampled Rényi Differential
//    Privacy and Analytical Moments Accountant" (AISTATS, arXiv:1808.00087), Theorem 9 (TF Privacy
//    cites it as Theorem 27 of the arXiv version) for integer orders <= 256; above 256 the same
//    bound without its forward-difference terms (looser, still valid, O(order)); for a fractional
//    order the convex interpolation of the integer bounds at floor and ceil (their Corollary 10).
//    All exactly as TF Privacy's compute_rdp_sample_wor_gaussian / dp_accounting.
//
// Thread safety: the free functions are thread-safe; RdpAccountant is a value type (copy it to ask
// "what if one more round") and is not synchronized.
#pragma once

#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

#include "tributary/result.h"
#include "tributary/status.h"

namespace tributary {

enum class DpSampling { kPoisson, kFixedSize };

// "poisson" / "fixed", and back (InvalidArgument naming the accepted values).
std::string_view DpSamplingName(DpSampling sampling);
Result<DpSampling> ParseDpSampling(std::string_view name);

// 1.1, 1.2, ..., 10.9, then 11, 12, ..., 64, then 128, 256, 512, 1024: Google dp_accounting's
// default set (DEFAULT_RDP_ORDERS) plus 64.
std::vector<double> DefaultRdpOrders();
// The largest finite order accepted: an integer order costs O(order) terms, and orders past a few
// thousand never give the best epsilon for a useful delta.
inline constexpr double kMaxRdpOrder = 1e6;

// RDP at `order` of one step of the sampled Gaussian mechanism (see above for noise_multiplier).
// q == 0 gives 0; otherwise noise_multiplier == 0 or order == +inf gives +inf, and q == 1 gives
// the plain Gaussian mechanism's order / (2 z^2). +inf also when the fractional-order series does
// not converge (the order is then useless, never wrong).
// Preconditions (checked, abort): q in [0, 1], noise_multiplier >= 0 (+inf allowed: RDP 0),
// order in (1, kMaxRdpOrder] or +inf. Validate outside input first.
double SampledGaussianRdp(DpSampling sampling, double q, double noise_multiplier, double order);
// The same at every order of `orders`; cheaper than one call per order for kFixedSize.
std::vector<double> SampledGaussianRdp(DpSampling sampling, double q, double noise_multiplier,
                                       std::span<const double> orders);

// How an RDP curve becomes (epsilon, delta)-DP.
enum class RdpConversion {
  // Balle, Barthe, Gaboardi, Hsu, Sato 2020, "Hypothesis testing interpretations and Rényi
  // differential privacy" (AISTATS), Theorem 21 of arXiv:1905.09982 (as Opacus cites it; the same
  // bound is Prop. 12 of Canonne, Kamath, Steinke arXiv:2004.00010v4, as TF Privacy and Google
  // dp_accounting cite it); what all three use now:
  //   epsilon = rdp + log((order - 1) / order) - (log(delta) + log(order)) / (order - 1),
  // taken as 0 where delta^2 > 1 - exp(-rdp) (the KL bound), +inf at orders <= 1.01 (unstable),
  // as dp_accounting's compute_epsilon.
  kBalle2020,
  // Mironov 2017, "Rényi Differential Privacy", Prop. 3: epsilon = rdp - log(delta) / (order - 1).
  // Looser; what TF Privacy used at first and Abadi et al.'s moments accountant amounts to.
  kMironov2017,
};

struct PrivacySpent {
  double epsilon = 0.0;  // >= 0; +inf when no order gives a finite bound
  double order = 0.0;    // the order that gave it (the first order when epsilon is +inf)
};

// The smallest epsilon over the orders at `delta`.
// Preconditions (checked, abort): orders.size() == rdp.size() > 0, every order > 1 and finite,
// no rdp is NaN (negative rdp, a rounding artefact, counts as 0), delta in (0, 1).
PrivacySpent RdpToEpsilon(std::span<const double> orders, std::span<const double> rdp, double delta,
                          RdpConversion conversion = RdpConversion::kBalle2020);

// The RDP of a run so far, at a fixed set of orders. Rounds may differ in sampling, q and noise.
class RdpAccountant {
 public:
  // `orders`: non-empty, each in (1, kMaxRdpOrder] (checked, abort).
  explicit RdpAccountant(std::vector<double> orders = DefaultRdpOrders());

  // Charges `steps` steps of the sampled Gaussian mechanism. Preconditions as SampledGaussianRdp's,
  // and steps >= 0 (checked, abort). The last (sampling, q, noise_multiplier)'s RDP is cached, so
  // repeating the same round costs O(orders).
  void Compose(DpSampling sampling, double q, double noise_multiplier, int64_t steps = 1);

  // Epsilon at `delta` (in (0, 1), checked) after everything composed so far.
  PrivacySpent Spent(double delta, RdpConversion conversion = RdpConversion::kBalle2020) const;

  int64_t steps() const { return steps_; }
  const std::vector<double>& orders() const { return orders_; }
  const std::vector<double>& rdp() const { return rdp_; }

  // Restores a saved state (orders(), rdp(), steps()), for checkpoints. InvalidArgument, and no
  // change, unless the sizes match and are non-zero, every order is in (1, kMaxRdpOrder], every rdp
  // is
  // >= 0 or +inf (a round without noise is a legitimate, if unfortunate, state), steps >= 0.
  Status FromState(std::vector<double> orders, std::vector<double> rdp, int64_t steps);

 private:
  std::vector<double> orders_;
  std::vector<double> rdp_;
  int64_t steps_ = 0;
  // The per-step RDP of the last Compose's parameters.
  bool cached_ = false;
  DpSampling cached_sampling_ = DpSampling::kPoisson;
  double cached_q_ = 0.0;
  double cached_z_ = 0.0;
  std::vector<double> cached_rdp_;
};

// The smallest noise_multiplier (relative precision 1e-5, bisection) for which `rounds` steps at
// rate q spend at most `target_epsilon` at `delta` (default orders, kBalle2020). Same unit as
// Compose's: for kFixedSize the run's z = sigma / C is twice the result. 0 when q == 0 or
// rounds == 0. InvalidArgument naming the parameter when q is outside [0, 1], rounds < 0, delta
// outside (0, 1) or target_epsilon is not a finite positive number; OutOfRange when even a noise
// multiplier of 1000 spends more, or when every multiplier down to 1e-4 spends less (the target
// constrains nothing).
Result<double> NoiseMultiplierForEpsilon(DpSampling sampling, double q, int64_t rounds,
                                         double delta, double target_epsilon);

}  // namespace tributary

#include "privacy/secagg/int_domain.h"

#include <fmt/format.h>

#include <algorithm>
#include <bit>
#include <cmath>

namespace tributary {
namespace {

// SplitMix64: the client's stochastic rounding stream (statistical quality is all it needs).
uint64_t Mix(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

}  // namespace

IntDomain::IntDomain(const IntDomainConfig& c, int bits)
    : config_(c),
      sum_bits_(bits),
      mask_(bits == 64 ? ~uint64_t{0} : (uint64_t{1} << bits) - 1),
      levels_((uint64_t{1} << c.quant_bits) - 1) {}

Result<IntDomain> IntDomain::Create(const IntDomainConfig& c) {
  if (!(c.clip > 0.0f) || !std::isfinite(c.clip))
    return Status::InvalidArgument(fmt::format("secagg.clip = {} must be finite and > 0", c.clip));
  if (c.quant_bits < 1 || c.quant_bits > 24)
    return Status::InvalidArgument(
        fmt::format("secagg.quant_bits = {} must be in [1, 24]", c.quant_bits));
  if (c.max_weight < 1 || c.max_weight > (uint64_t{1} << 32))
    return Status::InvalidArgument(
        fmt::format("secagg.max_weight = {} must be in [1, 2^32]", c.max_weight));
  if (c.max_clients < 1 || c.max_clients > (uint64_t{1} << 24))
    return Status::InvalidArgument(
        fmt::format("secagg.max_clients = {} must be in [1, 2^24]", c.max_clients));
  const unsigned __int128 top = static_cast<unsigned __int128>(c.max_clients) * c.max_weight *
                                ((uint64_t{1} << c.quant_bits) - 1);
  int bits = 0;
  while (bits < 128 && (static_cast<unsigned __int128>(1) << bits) <= top) ++bits;
  if (bits > 62)
    return Status::InvalidArgument(fmt::format(
        "secure aggregation of {} clients of weight up to {} at {} bits per value needs a "
        "{}-bit sum; at most 62 are supported: lower secagg.quant_bits or secagg.max_weight",
        c.max_clients, c.max_weight, c.quant_bits, bits));
  return IntDomain(c, std::max(bits, 1));
}

float IntDomain::step() const { return 2.0f * config_.clip / static_cast<float>(levels_); }

uint64_t IntDomain::Weight(uint64_t num_examples) const {
  return std::clamp<uint64_t>(num_examples, 1, config_.max_weight);
}

std::vector<uint64_t> IntDomain::Encode(std::span<const float> x, uint64_t weight,
                                        uint64_t seed) const {
  std::vector<uint64_t> out(x.size() + 1);
  const double clip = config_.clip, scale = static_cast<double>(levels_) / (2.0 * clip);
  const double top = static_cast<double>(levels_);
  for (size_t i = 0; i < x.size(); ++i) {
    double v = std::isfinite(x[i]) ? std::clamp(static_cast<double>(x[i]), -clip, clip) : 0.0;
    const double t = (v + clip) * scale;  // in [0, L]
    const double u = static_cast<double>(Mix(seed + i * 0x9e3779b97f4a7c15ULL) >> 11) * 0x1.0p-53;
    double level = std::floor(t + u);
    level = std::clamp(level, 0.0, top);
    out[i] = static_cast<uint64_t>(level) * weight;
  }
  out[x.size()] = weight;
  return out;
}

Result<std::vector<float>> IntDomain::Decode(std::span<const uint64_t> sum) const {
  if (sum.empty()) return Status::InvalidArgument("an aggregate has at least the weight");
  const uint64_t w = sum.back() & mask_;
  if (w == 0 || w > config_.max_clients * config_.max_weight)
    return Status::FailedPrecondition(fmt::format(
        "the aggregate's total weight {} is not a sum of client weights (at most {} x {})", w,
        config_.max_clients, config_.max_weight));
  std::vector<float> mean(sum.size() - 1);
  const double clip = config_.clip;
  const double per = 2.0 * clip / (static_cast<double>(w) * static_cast<double>(levels_));
  for (size_t i = 0; i < mean.size(); ++i)
    mean[i] = static_cast<float>(static_cast<double>(sum[i] & mask_) * per - clip);
  return mean;
}

}  // namespace tributary

#include "aggregation/partial_sum.h"

#include <fmt/format.h>

#include <cereal/archives/binary.hpp>
#include <sstream>
#include <string>

// GCC 12 inlines BoundedInputArchive::Consume's throwing path (loadBinary(nullptr, n), reached
// only when n exceeds the bytes left, which CheckCount has already refused) into the loaders here
// and reports a null memcpy destination that cannot happen (-Wnonnull, a false positive).
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wnonnull"
#endif
#include "protocol/wire_archive.h"
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif

namespace tributary {
namespace {

constexpr uint32_t kVersion = 1;

// The wire form (see the header): the 128-bit coordinates as two limbs.
struct PartialSumWire {
  uint32_t version = kVersion;
  uint64_t count = 0;
  uint64_t total_weight = 0;
  std::vector<uint64_t> low;
  std::vector<int64_t> high;  // empty when every coordinate fits in an int64

  template <class Ar>
  void serialize(Ar& ar) {
    ar(version, count, total_weight, wire::Capped("partial_sum.low", low, kMaxPartialSumValues),
       wire::Capped("partial_sum.high", high, kMaxPartialSumValues));
  }
};

bool FitsInt64(FixedPoint v) {
  return v >= static_cast<FixedPoint>(INT64_MIN) && v <= static_cast<FixedPoint>(INT64_MAX);
}

}  // namespace

PartialSum PartialSum::Zero(size_t dim) {
  PartialSum p;
  p.sum.Reset(dim);
  return p;
}

Status PartialSum::CheckWeight(uint64_t weight) const {
  if (weight < 1) return Status::InvalidArgument("an update's weight must be at least 1");
  if (weight > kMaxTotalWeight - total_weight)
    return Status::InvalidArgument(fmt::format(
        "the round's total weight {} plus this update's {} would pass 2^53, where the weights "
        "stop being exact in the mean's normaliser",
        total_weight, weight));
  return Status::Ok();
}

Status PartialSum::Add(const PartialSum& other) {
  if (other.sum.size() != sum.size())
    return Status::InvalidArgument(fmt::format(
        "a partial sum of {} values cannot be added to one of {}", other.sum.size(), sum.size()));
  if (other.total_weight > kMaxTotalWeight - total_weight)
    return Status::InvalidArgument(
        fmt::format("partial sums of total weight {} and {} would pass 2^53 together", total_weight,
                    other.total_weight));
  sum.Add(other.sum);
  total_weight += other.total_weight;
  count += other.count;
  return Status::Ok();
}

Status PartialSum::Check(size_t want) const {
  auto bad = [](const std::string& what) {
    return Status::InvalidArgument("partial sum: " + what);
  };
  if (sum.size() != want) return bad(fmt::format("{} values, the model has {}", sum.size(), want));
  if (total_weight > kMaxTotalWeight)
    return bad(fmt::format("total weight {} is past 2^53", total_weight));
  if (count > total_weight)
    return bad(fmt::format("{} updates cannot have a total weight of {} (each weighs >= 1)", count,
                           total_weight));
  // Each term is below 2^62 units in magnitude (kMaxFixedPointTerm * 2^32).
  const FixedPoint bound = static_cast<FixedPoint>(count) << 62;
  for (size_t i = 0; i < sum.size(); ++i) {
    const FixedPoint v = sum.At(i);
    if (v > bound || -v > bound)
      return bad(fmt::format("value {} is larger than {} updates can sum to", i, count));
  }
  return Status::Ok();
}

Result<std::vector<uint8_t>> EncodePartialSum(const PartialSum& p) {
  PartialSumWire w;
  w.count = p.count;
  w.total_weight = p.total_weight;
  w.low.resize(p.sum.size());
  bool narrow = true;
  for (size_t i = 0; i < p.sum.size(); ++i) narrow = narrow && FitsInt64(p.sum.At(i));
  if (!narrow) w.high.resize(p.sum.size());
  for (size_t i = 0; i < p.sum.size(); ++i) {
    const FixedPoint v = p.sum.At(i);
    w.low[i] = static_cast<uint64_t>(v);
    if (!narrow) w.high[i] = static_cast<int64_t>(v >> 64);
  }
  try {
    std::ostringstream os(std::ios::binary);
    {
      cereal::BinaryOutputArchive ar(os);
      ar(w);
    }
    const std::string s = std::move(os).str();
    return std::vector<uint8_t>(s.begin(), s.end());
  } catch (const std::exception& e) {
    return Status::InvalidArgument(std::string("encoding a partial sum: ") + e.what());
  }
}

Result<PartialSum> DecodePartialSum(std::span<const uint8_t> bytes, size_t dim) {
  PartialSumWire w;
  try {
    wire::BoundedInputArchive ar(bytes);
    ar(w);
    if (ar.remaining() != 0)
      return Status::InvalidArgument(fmt::format("partial sum: {} trailing bytes", ar.remaining()));
  } catch (const std::exception& e) {
    return Status::InvalidArgument(std::string("partial sum: ") + e.what());
  }
  if (w.version != kVersion)
    return Status::InvalidArgument(
        fmt::format("partial sum: version {}; this build reads version {}", w.version, kVersion));
  if (w.low.size() != dim)
    return Status::InvalidArgument(
        fmt::format("partial sum: {} values, the model has {}", w.low.size(), dim));
  if (!w.high.empty() && w.high.size() != dim)
    return Status::InvalidArgument(fmt::format(
        "partial sum: {} high limbs for {} values (0 or one each)", w.high.size(), dim));
  PartialSum p;
  p.count = w.count;
  p.total_weight = w.total_weight;
  std::vector<FixedPoint> values(dim);
  for (size_t i = 0; i < dim; ++i) {
    if (w.high.empty()) {
      values[i] = static_cast<int64_t>(w.low[i]);
    } else {
      values[i] = static_cast<FixedPoint>(
          (static_cast<unsigned __int128>(static_cast<uint64_t>(w.high[i])) << 64) | w.low[i]);
    }
  }
  p.sum.Assign(values);
  TRIB_RETURN_IF_ERROR(p.Check(dim));
  return p;
}

}  // namespace tributary

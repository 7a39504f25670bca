#include "sim/device_model.h"

#include <fmt/format.h>

#include <cmath>
#include <sstream>

#include "core/parse_number.h"
#include "core/rng.h"

namespace tributary {
namespace {

constexpr uint64_t kProfileStream = 0xde71ce;
constexpr uint64_t kTaskStream = 0x7a5c;
constexpr uint64_t kAsyncTaskStream = 0xa7a5c;

Status Bad(const char* key, const std::string& why) {
  return Status::InvalidArgument(fmt::format("hetero.{} {}", key, why));
}

Result<std::vector<SpeedTier>> ParseTiers(const std::string& spec) {
  std::vector<SpeedTier> tiers;
  std::stringstream in(spec);
  std::string item;
  double total = 0.0;
  while (std::getline(in, item, ',')) {
    SpeedTier t;
    const size_t a = item.find(':'), b = item.rfind(':');
    if (a == std::string::npos || a == b)
      return Bad("speed_tiers", "'" + item + "' is not name:fraction:samples_per_s");
    t.name = item.substr(0, a);
    const std::string_view text(item);
    t.fraction = ParseWhole<double>(text.substr(a + 1, b - a - 1)).value_or(0.0);
    if (!(t.fraction > 0.0) || t.fraction > 1.0)
      return Bad("speed_tiers", "'" + item + "': the fraction must be in (0, 1]");
    t.samples_per_s = ParseWhole<double>(text.substr(b + 1)).value_or(0.0);
    if (!(t.samples_per_s > 0.0))
      return Bad("speed_tiers", "'" + item + "': samples_per_s must be a positive number");
    if (t.name.empty()) return Bad("speed_tiers", "'" + item + "': the tier needs a name");
    total += t.fraction;
    tiers.push_back(t);
  }
  if (tiers.empty()) return Bad("speed_tiers", "lists no tiers");
  if (std::abs(total - 1.0) > 1e-6)
    return Bad("speed_tiers", fmt::format("fractions sum to {}, not 1", total));
  return tiers;
}

// exp(sigma * N(0,1)): a log-normal factor with median 1.
double Spread(Rng& rng, double sigma) { return sigma > 0.0 ? std::exp(sigma * rng.Normal()) : 1.0; }

}  // namespace

Result<DeviceModel> DeviceModel::Create(const HeterogeneityConfig& c, uint64_t seed) {
  auto prob = [](double p) { return p >= 0.0 && p <= 1.0; };
  if (!prob(c.availability) || c.availability == 0.0)
    return Bad("availability", fmt::format("= {} must be in (0, 1]", c.availability));
  if (!prob(c.dropout) || c.dropout == 1.0)
    return Bad("dropout", fmt::format("= {} must be in [0, 1)", c.dropout));
  if (!(c.samples_per_s > 0.0)) return Bad("samples_per_s", "must be > 0");
  for (auto [key, v] : {std::pair{"speed_sigma", c.speed_sigma},
                        {"down_mbps", c.down_mbps},
                        {"up_mbps", c.up_mbps},
                        {"bandwidth_sigma", c.bandwidth_sigma},
                        {"latency_ms", c.latency_ms}})
    if (!(v >= 0.0) || !std::isfinite(v)) return Bad(key, fmt::format("= {} must be >= 0", v));
  DeviceModel m;
  m.config_ = c;
  m.seed_ = seed;
  if (c.speed_tiers.empty()) {
    m.tiers_ = {SpeedTier{"default", 1.0, c.samples_per_s}};
  } else {
    TRIB_ASSIGN_OR_RETURN(m.tiers_, ParseTiers(c.speed_tiers));
  }
  return m;
}

ClientProfile DeviceModel::Profile(uint64_t client) const {
  Rng rng = Rng::Stream(seed_, {kProfileStream, client});
  ClientProfile p;
  double u = rng.Uniform(), acc = 0.0;
  p.tier = static_cast<int>(tiers_.size()) - 1;
  for (size_t i = 0; i < tiers_.size(); ++i) {
    acc += tiers_[i].fraction;
    if (u < acc) {
      p.tier = static_cast<int>(i);
      break;
    }
  }
  p.samples_per_s =
      tiers_[static_cast<size_t>(p.tier)].samples_per_s * Spread(rng, config_.speed_sigma);
  const double bw = Spread(rng, config_.bandwidth_sigma);
  p.down_bps = config_.down_mbps * 1e6 * bw;
  p.up_bps = config_.up_mbps * 1e6 * bw;
  p.latency_s = config_.latency_ms / 1000.0;
  return p;
}

TaskTiming DeviceModel::Time(uint64_t client, uint64_t round, int64_t attempt, uint64_t bytes_down,
                             uint64_t bytes_up, double samples) const {
  return Draw(Profile(client),
              Rng::Stream(seed_, {kTaskStream, client, round, static_cast<uint64_t>(attempt)}),
              bytes_down, bytes_up, samples);
}

TaskTiming DeviceModel::TimeTask(uint64_t client, uint64_t task, uint64_t bytes_down,
                                 uint64_t bytes_up, double samples) const {
  return Draw(Profile(client), Rng::Stream(seed_, {kAsyncTaskStream, client, task}), bytes_down,
              bytes_up, samples);
}

void DeviceModel::AddSplitExchange(uint64_t client, uint64_t batches, uint64_t bytes_up,
                                   uint64_t bytes_down, TaskTiming* t) const {
  const ClientProfile p = Profile(client);
  auto bits = [](uint64_t bytes, double bps) {
    return bps > 0.0 ? static_cast<double>(bytes) * 8.0 / bps : 0.0;
  };
  t->exchange_s += static_cast<double>(batches) * 2.0 * p.latency_s + bits(bytes_up, p.up_bps) +
                   bits(bytes_down, p.down_bps);
}

TaskTiming DeviceModel::Draw(const ClientProfile& p, Rng rng, uint64_t bytes_down,
                             uint64_t bytes_up, double samples) const {
  TaskTiming t;
  t.available = rng.Uniform() < config_.availability;
  t.drops = rng.Uniform() < config_.dropout;
  const double drop_point = rng.Uniform();
  auto transfer = [&](uint64_t bytes, double bps) {
    return p.latency_s + (bps > 0.0 ? static_cast<double>(bytes) * 8.0 / bps : 0.0);
  };
  t.download_s = transfer(bytes_down, p.down_bps);
  t.compute_s = samples / p.samples_per_s;
  t.upload_s = transfer(bytes_up, p.up_bps);
  t.drop_at_s = t.download_s + drop_point * t.compute_s;
  return t;
}

}  // namespace tributary

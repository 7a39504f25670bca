#include "sim/sim_tier.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>

#include "aggregator/aggregator_service.h"
#include "coordinator/engine_parts.h"
#include "coordinator/group_task.h"
#include "coordinator/tier_config.h"
#include "core/config_schema.h"
#include "sim/population.h"
#include "sim/sim_clock.h"
#include "sim/sim_wire.h"

namespace tributary {

Status TierModelConfig::Validate() const {
  if (aggregators < 0 || aggregators > 100000)
    return KeyError("tier.aggregators", "must be in [0, 100000] (0: no tier)");
  if (!std::isfinite(link_mbps) || link_mbps < 0.0)
    return KeyError("tier.link_mbps", "must be >= 0 (0: unlimited)");
  if (!std::isfinite(latency_ms) || latency_ms < 0.0)
    return KeyError("tier.latency_ms", "must be >= 0");
  return Status::Ok();
}

Result<std::unique_ptr<SimTier>> SimTier::Create(const TierModelConfig& config,
                                                 const RunConfig& run, const Strategy& strategy,
                                                 const ModelWeights& zero) {
  TRIB_RETURN_IF_ERROR(config.Validate());
  if (config.aggregators == 0)
    return Status::InvalidArgument("key 'tier.aggregators' = 0: no tier to model");
  if (std::string why = WhyNotThroughTier(strategy, run.round); !why.empty())
    return KeyError("tier.aggregators", "this run cannot go through an aggregation tier: " + why);
  std::unique_ptr<SimTier> t(new SimTier());
  t->config_ = config;
  // What a real aggregator reads of the run: the coordinator's TOML, read back.
  TRIB_ASSIGN_OR_RETURN(t->tier_, ParseTierConfig(TierConfigToml(run)));
  t->zero_ = zero.ZerosLike();
  for (int64_t k = 0; k < config.aggregators; ++k)
    t->names_.push_back(fmt::format("sim-aggregator-{}", k));
  t->shares_.resize(t->names_.size());
  return t;
}

double SimTier::LinkSeconds(uint64_t bytes) const {
  double s = config_.latency_ms / 1000.0;
  if (config_.link_mbps > 0.0) s += static_cast<double>(bytes) * 8.0 / (config_.link_mbps * 1e6);
  return s;
}

Result<double> SimTier::Begin(const std::vector<RunEngine::Outgoing>& tasks, double t0) {
  for (auto& s : shares_) s.reset();
  // One GroupTask per aggregator, as CoordinatorService::Deliver builds them.
  std::map<int64_t, GroupTask> groups;
  for (const RunEngine::Outgoing& o : tasks) {
    const auto* task = std::get_if<TaskAssignment>(&o.message);
    std::optional<uint64_t> index = Population::IndexOf(o.client_id);
    if (task == nullptr || !index)
      return Status::Internal("simulated tier: a task for '" + o.client_id + "' it cannot route");
    AddToGroupTask(groups[Of(*index)], o.client_id, *task);
  }
  // Each group's task through the wire (the aggregator's decoder), counted; all leave at t0 and
  // are taken to arrive together, after the largest one's transfer.
  std::map<int64_t, GroupTask> received;
  uint64_t largest = 0;
  for (auto& [k, g] : groups) {
    uint64_t bytes = 0;
    TRIB_ASSIGN_OR_RETURN(Message got, ThroughWire(Message(std::move(g)), k + 1, &bytes));
    counts_.bytes_down += bytes;
    largest = std::max(largest, bytes);
    received[k] = std::get<GroupTask>(std::move(got));
  }
  const double arrive = LinkSeconds(largest);
  const TimePoint at = SimTimePoint(t0 + arrive);
  // As AggregatorService::OnGroupTask starts its share: the flush margin before the deadline.
  const std::chrono::milliseconds margin = AggregatorOptions{}.flush_margin;
  for (auto& [k, g] : received) {
    const TimePoint deadline = at + std::chrono::milliseconds(g.task.deadline_ms);
    const double wall = SimWallNow();
    TRIB_ASSIGN_OR_RETURN(shares_[k], GroupShare::Start(tier_, g, zero_, at, deadline - margin));
    counts_.seconds += SimWallNow() - wall;
  }
  return arrive;
}

std::optional<UpdateRefusal> SimTier::OnUpdate(int64_t aggregator, const std::string& id,
                                               const UpdateSubmission& update,
                                               const ClientRecord* sender, double t) {
  GroupShare* share = shares_[aggregator].get();
  if (share == nullptr)
    return UpdateRefusal{ErrorCode::kProtocolViolation, "not assigned",
                         "the aggregator holds no task of this round"};
  const double wall = SimWallNow();
  std::optional<UpdateRefusal> no = share->OnUpdate(id, update, sender, SimTimePoint(t));
  counts_.seconds += SimWallNow() - wall;
  return no;
}

void SimTier::OnLeft(int64_t aggregator, const std::string& id) {
  if (GroupShare* share = shares_[aggregator].get()) share->OnLeft(id);
}

std::optional<double> SimTier::FlushAt(int64_t aggregator) const {
  if (!shares_[aggregator]) return std::nullopt;
  return SimSeconds(shares_[aggregator]->flush_at());
}

Result<std::optional<SimTier::Sent>> SimTier::TakeIfDue(int64_t aggregator, double t) {
  GroupShare* share = shares_[aggregator].get();
  if (share == nullptr || !share->Due(SimTimePoint(t))) return std::optional<Sent>();
  const double wall = SimWallNow();
  Result<GroupResult> taken = share->TakeResult();
  counts_.seconds += SimWallNow() - wall;
  if (!taken.ok()) return taken.status().WithContext(names_[aggregator]);
  uint64_t bytes = 0;
  TRIB_ASSIGN_OR_RETURN(Message got,
                        ThroughWire(Message(std::move(*taken)), aggregator + 1, &bytes));
  counts_.bytes_up += bytes;
  Sent sent;
  sent.arrives = t + LinkSeconds(bytes);
  sent.aggregator = aggregator;
  sent.result = std::get<GroupResult>(std::move(got));
  return std::optional<Sent>(std::move(sent));
}

SimTier::Counts SimTier::TakeCounts() {
  Counts c = counts_;
  counts_ = Counts{};
  return c;
}

}  // namespace tributary

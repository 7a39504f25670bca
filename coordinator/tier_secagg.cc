#include "coordinator/tier_secagg.h"

#include <fmt/format.h>

#include "privacy/secagg/secagg_start.h"
#include "privacy/secagg/secagg_wire.h"

namespace tributary {

Result<std::unique_ptr<TierSecAgg>> TierSecAgg::Start(
    SecAggRound::Options options, std::map<std::string, std::vector<std::string>> groups,
    TimePoint wait_until, size_t min_survivors) {
  TRIB_ASSIGN_OR_RETURN(IntDomain domain, IntDomain::Create(options.domain));
  if (options.session.modulus_mask != domain.modulus_mask())
    return Status::InvalidArgument("secure aggregation: the session's modulus is not the domain's");
  std::unique_ptr<TierSecAgg> t(new TierSecAgg(std::move(options), domain));
  TRIB_ASSIGN_OR_RETURN(t->start_, ToWire(SecAggStart{t->options_.session, t->options_.domain,
                                                      DpOnClients{t->options_.dp_clip_norm,
                                                                  t->options_.dp_noise_stddev,
                                                                  t->options_.dp_noise_seed}}));
  for (auto& [id, members] : groups)
    t->groups_[id].members = std::set<std::string>(members.begin(), members.end());
  t->wait_until_ = wait_until;
  t->min_survivors_ = std::max<size_t>(1, min_survivors);
  t->sum_.assign(t->options_.session.vector_length, 0);
  return t;
}

void TierSecAgg::Add(const std::vector<uint64_t>& sum) {
  const uint64_t mod = domain_.modulus_mask();
  for (size_t i = 0; i < sum_.size(); ++i) sum_[i] = (sum_[i] + sum[i]) & mod;
}

Status TierSecAgg::OnResult(const std::string& aggregator, const GroupResult& g, TimePoint now) {
  const std::string who = "aggregator '" + aggregator + "'";
  auto it = groups_.find(aggregator);
  if (it == groups_.end())
    return Status::FailedPrecondition(who + ": a secure sum for round " + std::to_string(g.round) +
                                      ", where it holds no group");
  Group& group = it->second;
  if (group.over)
    return Status::FailedPrecondition(who + ": a second secure sum for round " +
                                      std::to_string(g.round));
  if (now > wait_until_)
    return Status::FailedPrecondition(who + ": its secure sum for round " +
                                      std::to_string(g.round) + " came after the wait ended");
  if (g.partial.size() == 0) {
    if (!g.records.empty())
      return Status::InvalidArgument(who + ": a failed session that names survivors");
    OnGroupFailed(aggregator, g.secagg_failure.empty() ? "no reason given" : g.secagg_failure);
    return Status::Ok();
  }
  if (g.secagg_bits != static_cast<uint32_t>(domain_.sum_bits()) ||
      g.secagg_length != options_.session.vector_length)
    return Status::InvalidArgument(fmt::format(
        "{}: a secure sum of {} values of {} bits; the round's are {} values of {} bits", who,
        g.secagg_length, g.secagg_bits, options_.session.vector_length, domain_.sum_bits()));
  std::set<std::string_view> seen;
  for (const GroupRecord& rec : g.records) {
    if (!rec.accepted() || !group.members.count(rec.client_id) ||
        !seen.insert(rec.client_id).second)
      return Status::InvalidArgument(fmt::format(
          "{}: its secure sum names '{}', which is not a member of its group, or twice, or "
          "refused",
          who, rec.client_id));
  }
  if (g.records.size() < std::max<size_t>(1, options_.session.min_clients))
    return Status::InvalidArgument(fmt::format(
        "{}: its secure sum holds {} inputs; a group's must hold at least {} (secagg.min_clients)",
        who, g.records.size(), options_.session.min_clients));
  Result<std::vector<uint64_t>> sum =
      UnpackBits(g.partial.span(), g.secagg_length, static_cast<int>(g.secagg_bits));
  if (!sum.ok()) return sum.status().WithContext(who + ": its secure sum");
  Add(*sum);
  survivors_ += g.records.size();
  for (const GroupRecord& rec : g.records) group.survivors.insert(rec.client_id);
  group.summed = true;
  group.over = true;
  return Status::Ok();
}

std::vector<std::string> TierSecAgg::Absent(const std::string& group) const {
  std::vector<std::string> absent;
  auto it = groups_.find(group);
  if (it == groups_.end() || !it->second.summed) return absent;
  for (const std::string& id : it->second.members)
    if (!it->second.survivors.count(id)) absent.push_back(id);
  return absent;
}

void TierSecAgg::OnGroupSum(const std::string& group, const std::vector<uint64_t>& sum,
                            const std::vector<std::string>& survivors) {
  auto it = groups_.find(group);
  if (it == groups_.end() || it->second.over || sum.size() != sum_.size()) return;
  Add(sum);
  survivors_ += survivors.size();
  it->second.survivors.insert(survivors.begin(), survivors.end());
  it->second.summed = true;
  it->second.over = true;
}

void TierSecAgg::OnGroupFailed(const std::string& group, const std::string& why) {
  auto it = groups_.find(group);
  if (it == groups_.end() || it->second.over) return;
  it->second.over = true;
  it->second.failure = why;
}

void TierSecAgg::OnLeft(const std::string& id) {
  for (auto& [name, group] : groups_) {
    if (group.over || !group.members.erase(id) || !group.members.empty()) continue;
    group.over = true;
    group.failure = "every member left";
  }
}

bool TierSecAgg::complete(TimePoint now) const {
  if (now >= wait_until_) return true;
  for (const auto& [name, group] : groups_)
    if (!group.over) return false;
  return true;
}

Result<TierSecAgg::Total> TierSecAgg::Finish() const {
  if (survivors_ < min_survivors_) {
    std::string why;
    for (const auto& [name, group] : groups_) {
      const std::string label = name.empty() ? "direct clients" : "aggregator " + name;
      if (!group.over)
        why += fmt::format("; {}: no sum in time", label);
      else if (!group.failure.empty())
        why += fmt::format("; {}: {}", label, group.failure);
    }
    return Status::FailedPrecondition(
        fmt::format("secure aggregation across the tier: {} inputs were summed; at least {} are "
                    "needed{}",
                    survivors_, min_survivors_, why));
  }
  Total t;
  t.total_weight = sum_.back();
  t.survivors = survivors_;
  TRIB_ASSIGN_OR_RETURN(t.mean, domain_.Decode(sum_));
  return t;
}

}  // namespace tributary

#include "sim/sim_checkpoint.h"

#include <fmt/format.h>

#include <cmath>
#include <filesystem>
#include <span>

#include "core/file_util.h"
#include "crypto/sha256.h"
#include "sim/byte_record.h"
#include "sim/report.h"

namespace tributary {
namespace {

// "TRS6" (TRS5 had no split server seconds, TRS4 no split learning counts, TRS3 no tier counts,
// TRS2 no control variates, TRS1 no settings).
constexpr uint32_t kMagic = 0x54525336;
constexpr size_t kDigestChars = 64;

// Every field of a SimRound, in the file's order; `f` is called with each one (bools as bools).
template <class R, class F>
void VisitRound(R& r, F&& f) {
  f(r.round), f(r.attempts), f(r.selected), f(r.accepted), f(r.refused), f(r.dropped);
  f(r.unavailable), f(r.dropouts), f(r.stragglers), f(r.bytes_up), f(r.bytes_down);
  f(r.cum_bytes_up), f(r.cum_bytes_down), f(r.sim_seconds), f(r.sim_clock), f(r.wall_seconds);
  f(r.wall_clock), f(r.train_loss), f(r.evaluated), f(r.test_accuracy), f(r.test_loss);
  f(r.malicious), f(r.secagg_bytes_up), f(r.secagg_bytes_down), f(r.secagg_clients);
  f(r.secagg_client_seconds), f(r.secagg_server_seconds), f(r.dp), f(r.epsilon);
  f(r.dp_clip_norm), f(r.dp_clipped), f(r.async), f(r.staleness_mean), f(r.staleness_max);
  f(r.in_flight), f(r.coordinator_update_seconds), f(r.tier), f(r.tier_bytes_up);
  f(r.tier_bytes_down), f(r.aggregator_seconds), f(r.split_batches), f(r.split_bytes_up);
  f(r.split_bytes_down), f(r.split_server_seconds);
}

std::string Digest(std::string_view bytes) {
  Sha256 h;
  h.Update(bytes);
  return h.HexDigest();
}

Status Malformed(const std::string& why) { return Status::Corruption("simulator state: " + why); }

}  // namespace

std::string SimCheckpointPath(const std::string& dir, uint64_t rounds_done) {
  return (std::filesystem::path(dir) / fmt::format("sim-state.{}.bin", rounds_done)).string();
}

std::string ResumeSettings(const SimConfig& config) {
  nlohmann::json j = SimConfigJson(config);
  for (const char* key :
       {"log_level", "output.checkpoint_dir", "output.checkpoint_every", "output.keep_checkpoints",
        "output.history", "sim.report_dir", "sim.threads", "run.rounds", "sim.target_accuracy",
        "sim.stop_at_target", "eval.every", "eval.batch_size"})
    j.erase(key);
  return j.dump();
}

std::string ResumeSettingsDifference(const std::string& saved, const std::string& now) {
  const nlohmann::json a = nlohmann::json::parse(saved, nullptr, false);
  const nlohmann::json b = nlohmann::json::parse(now, nullptr, false);
  if (a.is_discarded() || !a.is_object()) return "the saved settings are not readable";
  std::vector<std::string> diffs;
  for (const auto& [key, value] : b.items()) {
    if (!a.contains(key))
      diffs.push_back(fmt::format("{}: not in the saved settings, now {}", key, value.dump()));
    else if (a[key] != value)
      diffs.push_back(fmt::format("{}: was {}, now {}", key, a[key].dump(), value.dump()));
  }
  for (const auto& [key, value] : a.items())
    if (!b.contains(key))
      diffs.push_back(fmt::format("{}: was {}, now unknown", key, value.dump()));
  return fmt::format("{}", fmt::join(diffs, "; "));
}

std::string EncodeSimCheckpoint(const SimCheckpoint& s) {
  ByteWriter w;
  w.Pod(kMagic);
  w.Str(s.run_uid);
  w.Str(s.settings);
  w.Pod(s.rounds_done);
  w.Pod(s.sim_clock);
  w.Pod<uint64_t>(s.cooldowns.size());
  for (const auto& [id, c] : s.cooldowns) {
    w.Str(id);
    w.Pod(c.misses), w.Pod(c.last_miss), w.Pod(c.until_round), w.Pod(c.refused_in);
  }
  w.Pod<uint64_t>(s.residuals.size());
  for (const auto& [client, e] : s.residuals) {
    w.Pod(client);
    w.Str(e.spec);
    w.Pod(e.round), w.Pod(e.size);
    w.PodVec(e.index);
    w.PodVec(e.values);
  }
  w.Pod<uint64_t>(s.controls.size());
  for (const auto& [client, c] : s.controls) {
    w.Pod(client);
    w.PodVec(c);
  }
  w.Pod<uint64_t>(s.rounds.size());
  for (const SimRound& r : s.rounds)
    VisitRound(r, [&w](const auto& v) {
      if constexpr (std::is_same_v<std::decay_t<decltype(v)>, bool>)
        w.Pod<uint8_t>(v ? 1 : 0);
      else
        w.Pod(v);
    });
  w.PodVec(s.kept);
  std::string out = w.Take();
  out += Digest(out);
  return out;
}

Result<SimCheckpoint> DecodeSimCheckpoint(const std::string& bytes) {
  if (bytes.size() < sizeof(kMagic) + kDigestChars) return Malformed("truncated");
  const std::string body = bytes.substr(0, bytes.size() - kDigestChars);
  if (Digest(body) != bytes.substr(body.size()))
    return Malformed("the checksum does not match (the file was changed or cut short)");
  ByteReader r(body);
  SimCheckpoint s;
  uint32_t magic = 0;
  uint64_t n = 0;
  if (!r.Pod(&magic) || magic != kMagic) return Malformed("not a simulator state file");
  if (!r.Str(&s.run_uid) || !r.Str(&s.settings) || !r.Pod(&s.rounds_done) || !r.Pod(&s.sim_clock) ||
      !std::isfinite(s.sim_clock) || s.sim_clock < 0)
    return Malformed("a bad header");
  if (!r.Count(&n, sizeof(uint64_t) * 5)) return Malformed("a bad count of cool-downs");
  for (uint64_t i = 0; i < n; ++i) {
    std::string id;
    Cooldown c;
    if (!r.Str(&id) || !r.Pod(&c.misses) || !r.Pod(&c.last_miss) || !r.Pod(&c.until_round) ||
        !r.Pod(&c.refused_in) || !s.cooldowns.emplace(std::move(id), c).second)
      return Malformed("a bad cool-down");
  }
  if (!r.Count(&n, sizeof(uint64_t) * 6)) return Malformed("a bad count of residuals");
  for (uint64_t i = 0; i < n; ++i) {
    uint64_t client = 0;
    ResidualStore::Entry e;
    if (!r.Pod(&client) || !r.Str(&e.spec) || !r.Pod(&e.round) || !r.Pod(&e.size) ||
        !r.PodVec(&e.index) || !r.PodVec(&e.values) ||
        !s.residuals.emplace(client, std::move(e)).second)
      return Malformed("a bad residual");
  }
  if (!r.Count(&n, sizeof(uint64_t) * 2)) return Malformed("a bad count of control variates");
  for (uint64_t i = 0; i < n; ++i) {
    uint64_t client = 0;
    std::vector<float> c;
    if (!r.Pod(&client) || !r.PodVec(&c) || !s.controls.emplace(client, std::move(c)).second)
      return Malformed("a bad control variate");
  }
  SimRound probe;
  size_t round_bytes = 0;
  VisitRound(probe, [&](auto& v) {
    round_bytes += std::is_same_v<std::decay_t<decltype(v)>, bool> ? 1 : sizeof v;
  });
  if (!r.Count(&n, round_bytes)) return Malformed("a bad count of rounds");
  s.rounds.resize(n);
  for (SimRound& round : s.rounds) {
    bool ok = true;
    VisitRound(round, [&](auto& v) {
      if constexpr (std::is_same_v<std::decay_t<decltype(v)>, bool>) {
        uint8_t b = 0;
        ok = ok && r.Pod(&b) && b <= 1;
        v = b == 1;
      } else {
        ok = ok && r.Pod(&v);
      }
    });
    if (!ok) return Malformed("a bad round record");
  }
  if (!r.PodVec(&s.kept) || !r.done()) return Malformed("a bad list of kept rounds");
  return s;
}

Status SaveSimCheckpoint(Env* env, const std::string& dir, SimCheckpoint& state, int keep) {
  // The rounds kept besides this one: the newest keep - 1 of those before it.
  std::vector<uint64_t> earlier;
  for (uint64_t r : state.kept)
    if (r < state.rounds_done) earlier.push_back(r);
  std::vector<uint64_t> drop;
  const size_t others = static_cast<size_t>(std::max(keep, 1) - 1);
  while (earlier.size() > others) {
    drop.push_back(earlier.front());
    earlier.erase(earlier.begin());
  }
  state.kept = earlier;
  TRIB_RETURN_IF_ERROR(env->CreateDirs(dir));
  const std::string bytes = EncodeSimCheckpoint(state);
  TRIB_RETURN_IF_ERROR(WriteFileAtomic(
      env, SimCheckpointPath(dir, state.rounds_done),
      std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size())));
  for (uint64_t r : drop)
    if (env->FileExists(SimCheckpointPath(dir, r)))
      TRIB_RETURN_IF_ERROR(env->RemoveFile(SimCheckpointPath(dir, r)));
  state.kept.push_back(state.rounds_done);  // for the next save
  return Status::Ok();
}

Result<SimCheckpoint> LoadSimCheckpoint(Env* env, const std::string& dir, uint64_t rounds_done,
                                        const std::string& run_uid) {
  const std::string path = SimCheckpointPath(dir, rounds_done);
  if (!env->FileExists(path))
    return Status::NotFound("there is no simulator state " + path + " for its round " +
                            std::to_string(rounds_done));
  TRIB_ASSIGN_OR_RETURN(std::vector<uint8_t> bytes, env->ReadFile(path, kMaxSimCheckpointBytes));
  Result<SimCheckpoint> s = DecodeSimCheckpoint(std::string(bytes.begin(), bytes.end()));
  if (!s.ok()) return Status::Corruption(path + ": " + s.status().message());
  if (s->rounds_done != rounds_done || s->run_uid != run_uid)
    return Status::Corruption(
        fmt::format("{} belongs to another run or round (run {} round {}, not run {} round {})",
                    path, s->run_uid, s->rounds_done, run_uid, rounds_done));
  if (s->rounds.size() > rounds_done)
    return Status::Corruption(
        fmt::format("{} records {} rounds of {} done", path, s->rounds.size(), rounds_done));
  return s;
}

}  // namespace tributary

#include "aggregation/strategy_factory.h"

#include <cmath>
#include <limits>
#include <optional>
#include <sstream>

#include "aggregation/bulyan.h"
#include "aggregation/coordinate_wise.h"
#include "aggregation/fedavg.h"
#include "aggregation/krum.h"
#include "aggregation/norm_clip.h"
#include "aggregation/scaffold.h"
#include "aggregation/server_optimizer.h"
#include "aggregation/strategy_spec.h"

namespace tributary {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

struct Range {
  double lo, hi;
  bool lo_open, hi_open;
  bool integer = false;
  bool Contains(double v) const {
    if (integer && v != std::floor(v)) return false;
    return (lo_open ? v > lo : v >= lo) && (hi_open ? v < hi : v <= hi);
  }
  std::string Describe() const {
    std::ostringstream os;
    os << (integer ? "an integer in " : "a number in ") << (lo_open ? "(" : "[") << lo << ", ";
    if (hi == kInf) {
      os << "inf)";
    } else {
      os << hi << (hi_open ? ")" : "]");
    }
    return os.str();
  }
};
const Range kPositive{0, kInf, true, true};
const Range kNonNegative{0, kInf, false, true};
const Range kUnit{0, 1, false, true};  // [0, 1)
const Range kCount{0, 1e9, false, false, true};

// Hands out a stage's parameters by key, checking ranges; Finish then rejects keys nobody asked
// for (listing the ones the rule takes) and required keys that are missing. Values handed out
// before Finish succeeds must not be used.
class Params {
 public:
  Params(std::string_view spec, const SpecStage& stage) : spec_(spec), stage_(stage) {}

  Result<double> Get(const std::string& key, std::optional<double> def, const Range& range) {
    allowed_.push_back(key);
    for (const auto& [k, v] : stage_.params) {
      if (k != key) continue;
      if (!range.Contains(v)) {
        std::ostringstream got;
        got << v;
        return Error("key '" + key + "' of " + stage_.name + " must be " + range.Describe() +
                     "; got " + got.str());
      }
      return v;
    }
    // A missing required key is reported by Finish, after unknown keys: "krum(g=2)" is a typo
    // of f, not a missing f.
    if (!def && missing_.empty()) missing_ = key + "' (" + range.Describe() + ")";
    return def.value_or(range.lo);
  }

  Status Finish() const {
    for (const auto& [k, unused] : stage_.params) {
      bool known = false;
      for (const std::string& a : allowed_) known = known || a == k;
      if (known) continue;
      std::string list;
      for (const std::string& a : allowed_) list += (list.empty() ? "" : ", ") + a;
      return Error("unknown key '" + k + "' for " + stage_.name +
                   "; allowed keys: " + (list.empty() ? "none" : list));
    }
    if (!missing_.empty()) return Error(stage_.name + " needs key '" + missing_);
    return Status::Ok();
  }

 private:
  Status Error(const std::string& what) const {
    return Status::InvalidArgument("strategy '" + std::string(spec_) + "': " + what);
  }
  std::string_view spec_;
  const SpecStage& stage_;
  std::vector<std::string> allowed_;
  std::string missing_;
};

Result<RobustOptions> ReadRobust(Params& p) {
  RobustOptions o;
  TRIB_ASSIGN_OR_RETURN(double mb,
                        p.Get("max_buffer_mb", 2048, Range{1, 4194304, false, false, true}));
  TRIB_ASSIGN_OR_RETURN(double threads, p.Get("threads", 0, Range{0, 256, false, false, true}));
  o.max_buffer_bytes = static_cast<size_t>(mb) << 20;
  o.threads = static_cast<size_t>(threads);
  return o;
}

Result<std::unique_ptr<Strategy>> MakeRule(std::string_view spec, const SpecStage& st,
                                           const StrategyOptions& o) {
  Params p(spec, st);
  std::unique_ptr<Strategy> s;
  const std::string& n = st.name;
  if (n == "fedavg" || n == "fedprox") {
    std::optional<double> mu;
    if (n == "fedprox") {
      TRIB_ASSIGN_OR_RETURN(mu, p.Get("mu", std::nullopt, kNonNegative));
    }
    TRIB_ASSIGN_OR_RETURN(double lr, p.Get("server_lr", o.server_lr, kPositive));
    if (mu) {
      s = FedAvg::MakeFedProx(static_cast<float>(*mu), static_cast<float>(lr));
    } else {
      s = std::make_unique<FedAvg>(static_cast<float>(lr));
    }
  } else if (n == "fedavgm" || n == "fedadagrad" || n == "fedadam" || n == "fedyogi") {
    ServerOptimizer::Params sp;
    ServerOptimizer::Kind kind = ServerOptimizer::Kind::kAvgM;
    if (n == "fedavgm") {
      TRIB_ASSIGN_OR_RETURN(sp.server_lr, p.Get("server_lr", o.server_lr, kPositive));
      TRIB_ASSIGN_OR_RETURN(sp.momentum, p.Get("momentum", 0.9, kUnit));
    } else {
      kind = n == "fedadagrad" ? ServerOptimizer::Kind::kAdagrad
             : n == "fedadam"  ? ServerOptimizer::Kind::kAdam
                               : ServerOptimizer::Kind::kYogi;
      TRIB_ASSIGN_OR_RETURN(sp.server_lr,
                            p.Get("server_lr", n == "fedadagrad" ? 0.1 : 0.01, kPositive));
      TRIB_ASSIGN_OR_RETURN(sp.beta1, p.Get("beta1", 0.9, kUnit));
      if (n != "fedadagrad") {
        TRIB_ASSIGN_OR_RETURN(sp.beta2, p.Get("beta2", 0.99, kUnit));
      }
      TRIB_ASSIGN_OR_RETURN(sp.tau, p.Get("tau", 1e-3, kPositive));
    }
    s = std::make_unique<ServerOptimizer>(kind, sp);
  } else if (n == "fednova") {
    if (!(o.local.momentum >= 0.0 && o.local.momentum < 1.0))
      return Status::InvalidArgument("strategy '" + std::string(spec) +
                                     "': fednova needs the clients' momentum (fit.momentum) in "
                                     "[0, 1)");
    TRIB_ASSIGN_OR_RETURN(double lr, p.Get("server_lr", o.server_lr, kPositive));
    s = std::make_unique<FedNova>(o.local, static_cast<float>(lr));
  } else if (n == "scaffold") {
    TRIB_ASSIGN_OR_RETURN(double lr, p.Get("server_lr", o.server_lr, kPositive));
    TRIB_ASSIGN_OR_RETURN(double clients, p.Get("clients", 0, kCount));
    s = std::make_unique<Scaffold>(static_cast<float>(lr), static_cast<uint64_t>(clients));
  } else if (n == "median") {
    TRIB_ASSIGN_OR_RETURN(RobustOptions ro, ReadRobust(p));
    s = CoordinateWise::Median(ro);
  } else if (n == "trimmed_mean") {
    TRIB_ASSIGN_OR_RETURN(double beta, p.Get("beta", 0.1, Range{0, 0.5, false, true}));
    TRIB_ASSIGN_OR_RETURN(RobustOptions ro, ReadRobust(p));
    s = CoordinateWise::TrimmedMean(beta, ro);
  } else if (n == "krum" || n == "multikrum" || n == "bulyan") {
    TRIB_ASSIGN_OR_RETURN(double f, p.Get("f", std::nullopt, kCount));
    double m = 1;
    if (n == "multikrum") {
      TRIB_ASSIGN_OR_RETURN(m, p.Get("m", 0, kCount));
    }
    TRIB_ASSIGN_OR_RETURN(RobustOptions ro, ReadRobust(p));
    if (n == "bulyan") {
      s = std::make_unique<Bulyan>(static_cast<int64_t>(f), ro);
    } else {
      s = std::make_unique<Krum>(static_cast<int64_t>(f), static_cast<int64_t>(m), ro);
    }
  } else {
    std::string known;
    for (const std::string& k : StrategyNames()) known += (known.empty() ? "" : ", ") + k;
    return Status::InvalidArgument("strategy '" + std::string(spec) + "': unknown rule '" + n +
                                   "'; known rules: " + known +
                                   " (optionally after clip(norm=C)+)");
  }
  TRIB_RETURN_IF_ERROR(p.Finish());
  return s;
}

}  // namespace

std::vector<std::string> StrategyNames() {
  return {"fedavg",   "fedprox", "fedavgm",      "fedadagrad", "fedadam",   "fedyogi", "fednova",
          "scaffold", "median",  "trimmed_mean", "krum",       "multikrum", "bulyan"};
}

Result<std::unique_ptr<Strategy>> MakeStrategy(std::string_view spec, const StrategyOptions& o) {
  if (!(o.server_lr > 0.0f) || !std::isfinite(o.server_lr))
    return Status::InvalidArgument("strategy option server_lr must be a positive number");
  TRIB_ASSIGN_OR_RETURN(std::vector<SpecStage> stages, ParseStrategySpec(spec));
  const SpecStage& rule = stages.back();
  if (rule.name == "clip")
    return Status::InvalidArgument("strategy '" + std::string(spec) +
                                   "': clip(norm=C) is a stage before a rule, as in "
                                   "'clip(norm=5)+fedavg'; it needs a rule after it");
  TRIB_ASSIGN_OR_RETURN(std::unique_ptr<Strategy> s, MakeRule(spec, rule, o));
  if (stages.size() == 1) return s;
  if (stages.size() > 2 || stages[0].name != "clip")
    return Status::InvalidArgument("strategy '" + std::string(spec) +
                                   "': only one pre-aggregation stage, clip(norm=C), may come "
                                   "before the rule; got '" +
                                   stages[0].name + "'");
  Params p(spec, stages[0]);
  TRIB_ASSIGN_OR_RETURN(double norm, p.Get("norm", std::nullopt, kPositive));
  TRIB_RETURN_IF_ERROR(p.Finish());
  return std::unique_ptr<Strategy>(std::make_unique<NormClip>(norm, std::move(s)));
}

Status ValidateStrategyFor(const Strategy& strategy, int64_t clients_per_round) {
  return strategy.CheckRoundSize(clients_per_round)
      .WithContext("strategy " + std::string(strategy.name()) + " with clients_per_round " +
                   std::to_string(clients_per_round));
}

}  // namespace tributary

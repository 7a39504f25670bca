// tributary-dp: the privacy DP-FedAvg rounds spend, or the noise a budget needs, from the Rényi-DP
// accountant (privacy/dp/rdp_accountant.h); TF Privacy's compute_dp_sgd_privacy and
// compute_noise_from_budget for federated rounds.
//
//   tributary-dp epsilon (--q Q | --clients N --per-round K) --noise Z --rounds R [--delta D]
//                        [--sampling fixed|poisson] [--json]
//   tributary-dp noise   (--q Q | --clients N --per-round K) --epsilon E --rounds R [--delta D]
//                        [--sampling fixed|poisson] [--json]
//
// --noise is dp.noise_multiplier z: the noise's standard deviation over the clip norm C. --sampling
// defaults to "fixed", as dp.sampling does: K of N clients per round, accounted under replace-one
// adjacency, where one client moves the clipped sum by up to 2C, so the accountant is charged z / 2
// (as a run's DpAggregator is); "poisson" charges z under add/remove-one adjacency. --delta
// defaults to 1 / N^1.1 with --clients, as dp.delta does. Bad flags: a message naming the flag on
// stderr and exit status 2.
#include <fmt/format.h>
#include <CLI/CLI.hpp>
#include <cmath>
#include <cstdio>
#include <exception>
#include <nlohmann/json.hpp>
#include <string>

#include "privacy/dp/rdp_accountant.h"

namespace tributary {
namespace {

struct Flags {
  double q = 0.0;
  int64_t clients = 0;
  int64_t per_round = 0;
  double delta = 0.0;
  std::string sampling = "fixed";
  int64_t rounds = 0;
  double noise = 0.0;
  double epsilon = 0.0;
  bool json = false;
  // Which of the optional flags were given.
  CLI::Option* q_opt = nullptr;
  CLI::Option* clients_opt = nullptr;
  CLI::Option* delta_opt = nullptr;
};

// The run the flags describe, validated.
struct Inputs {
  DpSampling sampling = DpSampling::kFixedSize;
  double q = 0.0;
  int64_t rounds = 0;
  double delta = 0.0;
  bool delta_default = false;
  bool from_clients = false;
};

Status Bad(const std::string& msg) { return Status::InvalidArgument(msg); }

Result<Inputs> Resolve(const Flags& f) {
  Inputs in;
  Result<DpSampling> sampling = ParseDpSampling(f.sampling);
  if (!sampling.ok()) return Bad("--sampling: " + sampling.status().message());
  in.sampling = *sampling;
  if (f.q_opt->count() > 0) {
    if (!(f.q >= 0.0 && f.q <= 1.0)) return Bad(fmt::format("--q {} must be in [0, 1]", f.q));
    in.q = f.q;
  } else if (f.clients_opt->count() > 0) {
    if (f.clients < 1) return Bad(fmt::format("--clients {} must be >= 1", f.clients));
    if (f.per_round < 0 || f.per_round > f.clients)
      return Bad(
          fmt::format("--per-round {} must be in [0, --clients = {}]", f.per_round, f.clients));
    in.q = static_cast<double>(f.per_round) / static_cast<double>(f.clients);
    in.from_clients = true;
  } else {
    return Bad("give the sampling rate: --q Q, or --clients N --per-round K");
  }
  if (f.rounds < 0) return Bad(fmt::format("--rounds {} must be >= 0", f.rounds));
  in.rounds = f.rounds;
  if (f.delta_opt->count() > 0) {
    if (!(f.delta > 0.0 && f.delta < 1.0))
      return Bad(fmt::format("--delta {} must be in (0, 1)", f.delta));
    in.delta = f.delta;
  } else if (in.from_clients) {
    in.delta = std::pow(static_cast<double>(f.clients), -1.1);
    in.delta_default = true;
    if (!(in.delta < 1.0)) return Bad("--delta is needed with --clients 1 (1/N^1.1 = 1)");
  } else {
    return Bad("--delta is required with --q (with --clients it defaults to 1/N^1.1)");
  }
  return in;
}

// The multiplier the accountant is charged for the run's z (see the file comment).
double Accounted(const Inputs& in, double z) {
  return in.sampling == DpSampling::kFixedSize ? z / 2.0 : z;
}

nlohmann::json Number(double v) { return std::isfinite(v) ? nlohmann::json(v) : "inf"; }

nlohmann::json Describe(const Inputs& in, const Flags& f) {
  nlohmann::json j;
  j["sampling"] = std::string(DpSamplingName(in.sampling));
  j["adjacency"] = in.sampling == DpSampling::kFixedSize ? "replace-one" : "add/remove-one";
  j["q"] = in.q;
  if (in.from_clients) {
    j["clients"] = f.clients;
    j["per_round"] = f.per_round;
  }
  j["rounds"] = in.rounds;
  j["delta"] = in.delta;
  j["delta_default"] = in.delta_default;
  return j;
}

void PrintInputs(const Inputs& in, const Flags& f) {
  if (in.from_clients)
    std::printf("  q %.6g (%lld of %lld clients per round), %lld rounds\n", in.q,
                static_cast<long long>(f.per_round), static_cast<long long>(f.clients),
                static_cast<long long>(in.rounds));
  else
    std::printf("  q %.6g, %lld rounds\n", in.q, static_cast<long long>(in.rounds));
  if (in.delta_default)
    std::printf(
        "  delta %.6g = 1/N^1.1 for N = %lld clients (the default with --clients; --delta "
        "sets it)\n",
        in.delta, static_cast<long long>(f.clients));
  if (in.sampling == DpSampling::kFixedSize)
    std::printf(
        "  fixed-size sampling, replace-one adjacency: one client moves the clipped sum by up to "
        "2C, so the accountant is charged noise multiplier z / 2 (Wang, Balle, Kasiviswanathan "
        "2019; an upper bound)\n");
  else
    std::printf(
        "  Poisson sampling, add/remove-one adjacency (Mironov, Talwar, Zhang 2019; exact "
        "RDP)\n");
}

int RunEpsilon(const Flags& f, const Inputs& in) {
  if (!(f.noise >= 0.0) || !std::isfinite(f.noise)) {
    std::fprintf(stderr, "tributary-dp: --noise %g must be a finite number >= 0\n", f.noise);
    return 2;
  }
  RdpAccountant acc;
  acc.Compose(in.sampling, in.q, Accounted(in, f.noise), in.rounds);
  const PrivacySpent spent = acc.Spent(in.delta);
  if (f.json) {
    nlohmann::json j = Describe(in, f);
    j["command"] = "epsilon";
    j["noise_multiplier"] = f.noise;
    j["accounted_noise_multiplier"] = Accounted(in, f.noise);
    j["epsilon"] = Number(spent.epsilon);
    j["order"] = spent.order;
    std::printf("%s\n", j.dump().c_str());
    return 0;
  }
  if (std::isfinite(spent.epsilon))
    std::printf("epsilon %.6g at delta %.6g (best Rényi order %g)\n", spent.epsilon, in.delta,
                spent.order);
  else
    std::printf("epsilon inf at delta %.6g: no finite bound%s\n", in.delta,
                f.noise == 0.0 ? " (--noise 0 adds no noise)" : "");
  std::printf("  noise multiplier z = %g (the noise's standard deviation over the clip norm)\n",
              f.noise);
  PrintInputs(in, f);
  return 0;
}

int RunNoise(const Flags& f, const Inputs& in) {
  if (!(f.epsilon > 0.0) || !std::isfinite(f.epsilon)) {
    std::fprintf(stderr, "tributary-dp: --epsilon %g must be a finite number > 0\n", f.epsilon);
    return 2;
  }
  Result<double> accounted =
      NoiseMultiplierForEpsilon(in.sampling, in.q, in.rounds, in.delta, f.epsilon);
  if (!accounted.ok()) {
    std::fprintf(stderr, "tributary-dp: %s\n", accounted.status().ToString().c_str());
    return 1;
  }
  // Back from the accountant's unit to the run's z, rounded up to the 6 significant digits printed:
  // a z copied from the output must not spend more than the target.
  double z = in.sampling == DpSampling::kFixedSize ? 2.0 * *accounted : *accounted;
  if (z > 0.0) {
    const double unit = std::pow(10.0, std::floor(std::log10(z)) - 5);
    z = std::ceil(z / unit) * unit;
  }
  const double charged = in.sampling == DpSampling::kFixedSize ? z / 2.0 : z;
  RdpAccountant acc;
  acc.Compose(in.sampling, in.q, charged, in.rounds);
  const PrivacySpent spent = acc.Spent(in.delta);
  if (f.json) {
    nlohmann::json j = Describe(in, f);
    j["command"] = "noise";
    j["target_epsilon"] = f.epsilon;
    j["noise_multiplier"] = z;
    j["accounted_noise_multiplier"] = charged;
    j["epsilon"] = Number(spent.epsilon);
    j["order"] = spent.order;
    std::printf("%s\n", j.dump().c_str());
    return 0;
  }
  std::printf("noise multiplier z = %.6g: epsilon %.6g <= %g at delta %.6g (best Rényi order %g)\n",
              z, spent.epsilon, f.epsilon, in.delta, spent.order);
  std::printf("  z is dp.noise_multiplier: the noise's standard deviation over the clip norm\n");
  PrintInputs(in, f);
  return 0;
}

void AddCommon(CLI::App* cmd, Flags* f) {
  f->q_opt = cmd->add_option("--q", f->q, "sampling rate per round (or --clients and --per-round)");
  f->clients_opt = cmd->add_option("--clients", f->clients, "N: the clients rounds sample from");
  CLI::Option* per_round =
      cmd->add_option("--per-round", f->per_round, "K: clients per round (q = K / N)");
  f->clients_opt->needs(per_round);
  per_round->needs(f->clients_opt);
  f->q_opt->excludes(f->clients_opt);
  f->q_opt->excludes(per_round);
  cmd->add_option("--rounds", f->rounds, "rounds run (or to run)")->required();
  f->delta_opt = cmd->add_option("--delta", f->delta, "delta (default with --clients: 1/N^1.1)");
  cmd->add_option("--sampling", f->sampling,
                  "'fixed' (K of N, replace-one adjacency) or 'poisson' (add/remove-one)")
      ->capture_default_str();
  cmd->add_flag("--json", f->json, "print one JSON object");
}

int Main(int argc, char** argv) {
  CLI::App app{
      "tributary-dp: the epsilon DP-FedAvg rounds spend, or the noise a budget needs "
      "(Rényi-DP accountant)"};
  app.require_subcommand(1);
  Flags eps_flags, noise_flags;
  CLI::App* eps = app.add_subcommand("epsilon", "epsilon spent by --rounds rounds at --noise");
  AddCommon(eps, &eps_flags);
  eps->add_option("--noise", eps_flags.noise,
                  "z: the noise's standard deviation over the clip norm")
      ->required();
  CLI::App* noise = app.add_subcommand("noise", "the smallest noise multiplier for --epsilon");
  AddCommon(noise, &noise_flags);
  noise->add_option("--epsilon", noise_flags.epsilon, "the budget at delta")->required();
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int rc = app.exit(e);  // help to stdout (0), errors to stderr
    return rc == 0 ? 0 : 2;
  }
  const Flags& f = eps->parsed() ? eps_flags : noise_flags;
  Result<Inputs> in = Resolve(f);
  if (!in.ok()) {
    std::fprintf(stderr, "tributary-dp: %s\n", in.status().message().c_str());
    return 2;
  }
  return eps->parsed() ? RunEpsilon(f, *in) : RunNoise(f, *in);
}

}  // namespace
}  // namespace tributary

int main(int argc, char** argv) {
  try {
    return tributary::Main(argc, argv);
  } catch (const std::exception& e) {  // e.g. bad_alloc; every expected failure is a Status
    std::fprintf(stderr, "tributary-dp: error: %s\n", e.what());
    return 1;
  }
}

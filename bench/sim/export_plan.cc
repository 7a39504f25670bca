// export_plan: the data partition and per-round client selection of a tributary-sim config, as
// JSON, so a reference implementation (bench/sim/torch_fedavg.py) can train the very same clients
// on the very same examples.
//
//   export_plan --config examples/configs/sim.toml --set run.rounds=40 --out plan.json
//
// Output: {"config": {...every tributary-sim key...}, "partition": [[example indices] per client],
//          "selection": [[client indices] per round], "attempts": [attempts per round]}
//
// How: it runs the real Simulator on the config with the "noop" trainer and no evaluation (both
// cheap, and neither changes selection: the engine selects from (seed, round, attempt, the idle
// clients), and the device model's timing depends on each client's example count, not on what it
// trains). A round's clients are the ones the engine has marked busy when the round starts: right
// after Join for round 1, and in the on_round callback of round r (the engine starts round r+1
// inside the update that closes round r) for the next. Rounds that needed more than one attempt
// are listed in "attempts"; the selection recorded for them is their first attempt's, and a
// warning is printed on stderr (the demo configs have no dropouts, so every round has one).
#include <CLI/CLI.hpp>

#include <cstdio>
#include <span>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/config_cli.h"
#include "core/file_util.h"
#include "sim/report.h"
#include "sim/simulator.h"
#include "tributary/config.h"

namespace tributary {
namespace {

// The clients the engine has marked busy: the selection of the attempt that just started.
std::vector<uint64_t> BusyClients(const Simulator& sim) {
  std::vector<uint64_t> out;
  const ClientRegistry& reg = sim.engine().registry();
  for (uint64_t i = 0; i < sim.population().size(); ++i) {
    const ClientRecord* r = reg.Find(Population::ClientId(i));
    if (r != nullptr && r->busy) out.push_back(i);
  }
  return out;
}

Status Export(const SimConfig& cfg, const std::string& out_path) {
  TRIB_RETURN_IF_ERROR(cfg.Validate());
  const nlohmann::json config_json = SimConfigJson(cfg);  // as the user gave it (trainer, eval)

  SimConfig plan_cfg = cfg;
  plan_cfg.trainer = "noop";
  plan_cfg.run.eval_every = 0;
  TRIB_ASSIGN_OR_RETURN(DataSplits data, LoadDataSplits(plan_cfg.data, true, true));
  TRIB_ASSIGN_OR_RETURN(std::unique_ptr<Simulator> sim, Simulator::Create(plan_cfg, data));
  TRIB_RETURN_IF_ERROR(sim->Join());

  nlohmann::json selection = nlohmann::json::array();
  selection.push_back(BusyClients(*sim));
  nlohmann::json attempts = nlohmann::json::array();
  const Simulator& s = *sim;
  TRIB_ASSIGN_OR_RETURN(SimResult result, sim->Run([&](const SimRound& r) {
    attempts.push_back(r.attempts);
    if (r.attempts > 1)
      std::fprintf(stderr,
                   "export_plan: warning: round %llu took %lld attempts; its recorded selection "
                   "is the first attempt's\n",
                   static_cast<unsigned long long>(r.round), static_cast<long long>(r.attempts));
    if (s.engine().round_in_progress()) selection.push_back(BusyClients(s));
  }));
  if (selection.size() != result.rounds.size())
    return Status::Internal("recorded " + std::to_string(selection.size()) + " selections for " +
                            std::to_string(result.rounds.size()) + " rounds");

  for (const nlohmann::json& sel : selection)
    if (sel.empty()) return Status::Internal("a round started with no busy clients recorded");

  nlohmann::json partition = nlohmann::json::array();
  for (uint64_t c = 0; c < sim->population().size(); ++c)
    partition.push_back(sim->population().Indices(c));
  nlohmann::json out = {{"config", config_json},
                        {"train_size", data.train->size()},
                        {"test_size", data.test->size()},
                        {"partition", std::move(partition)},
                        {"selection", std::move(selection)},
                        {"attempts", std::move(attempts)}};
  const std::string text = out.dump() + "\n";
  return WriteFileAtomic(out_path, std::span<const uint8_t>(
                                       reinterpret_cast<const uint8_t*>(text.data()), text.size()));
}

}  // namespace
}  // namespace tributary

int main(int argc, char** argv) {
  tributary::SimConfig cfg;
  tributary::ConfigSchema schema("tributary-sim");
  tributary::BindSimConfig(schema, &cfg);
  CLI::App app{"export_plan: a tributary-sim config's partition and per-round selection as JSON"};
  tributary::ConfigCommandLine cli(app, schema);
  std::string out;
  app.add_option("--out", out, "where to write the JSON")->required();
  CLI11_PARSE(app, argc, argv);
  tributary::Status s = cli.Apply();
  if (s.ok()) s = tributary::Export(cfg, out);
  if (!s.ok()) {
    std::fprintf(stderr, "export_plan: %s\n", s.ToString().c_str());
    return 1;
  }
  return 0;
}

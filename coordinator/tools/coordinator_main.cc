// tributary-coordinator: runs federated training rounds for clients that connect over mutual TLS.
//
//   tributary-coordinator --config coordinator.toml [--rounds 20] [--set key=value] [--resume]
//   tributary-coordinator ... --resume-or-start  resume if there is a checkpoint, else start
//   tributary-coordinator --print-config        every key with its default
//
// Prints one line per round; writes a checkpoint after every round, a JSON-lines event log and the
// final model (safetensors). SIGINT/SIGTERM end the run cleanly: the last checkpoint is complete
// (it is written atomically after each round) and clients are told Goodbye. See docs/operations.md.
// main() only parses the command line and serves: the coordinator is assembled by the library
// (coordinator/coordinator_assembly.h), the run itself is RunDriver's.
#include <CLI/CLI.hpp>

#include <cstdio>
#include <utility>

#include "coordinator/coordinator_assembly.h"
#include "coordinator/coordinator_config.h"
#include "core/config_cli.h"

namespace tributary {
namespace {

int Fail(const Status& s, int code = 1) {
  std::fprintf(stderr, "tributary-coordinator: %s\n", s.ToString().c_str());
  return code;
}

}  // namespace
}  // namespace tributary

int main(int argc, char** argv) {
  tributary::CoordinatorConfig cfg;
  tributary::ConfigSchema schema("tributary-coordinator");
  tributary::BindCoordinatorConfig(schema, &cfg);
  CLI::App app{"tributary-coordinator: runs federated training rounds over mutual TLS"};
  tributary::ConfigCommandLine cli(app, schema);
  bool resume = false, resume_or_start = false;
  app.add_flag("--resume", resume,
               "continue from the newest good checkpoint in output.checkpoint_dir (an error when "
               "there is none)");
  app.add_flag("--resume-or-start", resume_or_start,
               "continue from a checkpoint when there is one, else start a new run (for a "
               "supervisor that restarts the coordinator)");
  CLI11_PARSE(app, argc, argv);
  if (cli.print_config()) {
    std::fputs(schema.DefaultsToml().c_str(), stdout);
    return 0;
  }
  if (tributary::Status s = cli.Apply(); !s.ok()) return tributary::Fail(s, 2);
  int exit_status = 1;
  auto coordinator =
      tributary::Coordinator::Assemble(std::move(cfg), {resume, resume_or_start}, &exit_status);
  if (!coordinator.ok()) return tributary::Fail(coordinator.status(), exit_status);
  if (tributary::Status s = (*coordinator)->Serve(); !s.ok()) return tributary::Fail(s);
  return 0;
}

// edge_app: an edge application that embeds the Tributary client.
//
// It brings its own model and data (MlpTrainer on synthetic examples) and joins a coordinator
// that runs the "mlp" model:
//
//   edge_app --coordinator 127.0.0.1:7700 --ca pki/ca.crt
//            --cert pki/clients/edge-001.crt --key pki/clients/edge-001.key
//            [--state-dir state/edge-001] [--examples 600] [--seed 1] [--max-attempts 0]
//
// It returns 0 when the coordinator ends the run, 1 when the run fails, 2 for bad arguments.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <string_view>

#include "mlp_trainer.h"
#include "synthetic_data.h"
#include "tributary/client.h"

namespace {

struct Args {
  std::string coordinator, ca, cert, key, state_dir;
  long examples = 600;
  long seed = 1;
  long max_attempts = 0;
};

bool Parse(int argc, char** argv, Args* a) {
  for (int i = 1; i < argc; ++i) {
    const std::string flag = argv[i];
    if (i + 1 >= argc) {
      std::fprintf(stderr, "edge_app: %s needs a value\n", flag.c_str());
      return false;
    }
    const char* v = argv[++i];
    if (flag == "--coordinator")
      a->coordinator = v;
    else if (flag == "--ca")
      a->ca = v;
    else if (flag == "--cert")
      a->cert = v;
    else if (flag == "--key")
      a->key = v;
    else if (flag == "--state-dir")
      a->state_dir = v;
    else if (flag == "--examples")
      a->examples = std::strtol(v, nullptr, 10);
    else if (flag == "--seed")
      a->seed = std::strtol(v, nullptr, 10);
    else if (flag == "--max-attempts")
      a->max_attempts = std::strtol(v, nullptr, 10);
    else {
      std::fprintf(stderr, "edge_app: unknown flag %s\n", flag.c_str());
      return false;
    }
  }
  if (a->coordinator.empty() || a->ca.empty() || a->cert.empty() || a->key.empty()) {
    std::fprintf(stderr,
                 "usage: edge_app --coordinator HOST:PORT --ca CA.crt --cert ME.crt --key ME.key "
                 "[--state-dir DIR] [--examples N] [--seed S] [--max-attempts N]\n");
    return false;
  }
  if (a->examples < 1) {
    std::fprintf(stderr, "edge_app: --examples must be >= 1\n");
    return false;
  }
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  Args args;
  if (!Parse(argc, argv, &args)) return 2;

  // The app's own data: every client learns the same 10-class task (task seed 2024) from its own
  // examples (client seed).
  const uint64_t seed = static_cast<uint64_t>(args.seed);
  auto trainer = std::make_shared<edge_app::MlpTrainer>(
      std::vector<int>{edge_app::kFeatures, 200, 200, edge_app::kClasses},
      edge_app::MakeExamples(args.examples, 2024, seed), edge_app::MakeExamples(200, 2024, ~seed),
      seed);

  tributary::ClientOptions options;
  options.coordinator = args.coordinator;
  options.ca_cert_file = args.ca;
  options.cert_file = args.cert;
  options.key_file = args.key;
  options.state_dir = args.state_dir;
  options.device = "cpu (edge_app)";
  options.num_examples = static_cast<uint64_t>(args.examples);
  options.backoff.max_attempts = args.max_attempts;
  options.backoff.seed = seed;
  options.on_task = [](const tributary::TaskReport& r) {
    if (r.kind == tributary::TaskReport::Kind::kFit && r.status.ok())
      std::printf("edge_app: round %llu trained on %lld examples, loss %.4f, accuracy %.1f%%\n",
                  static_cast<unsigned long long>(r.round), static_cast<long long>(r.num_examples),
                  r.loss, 100.0 * r.accuracy);
  };

  // The library prints nothing unless asked; this app wants its warnings and errors (reconnects,
  // refusals) on stderr. The callback runs on the client's threads, one call at a time.
  options.log_level = tributary::LogLevel::kWarn;
  options.log_callback = [](tributary::LogLevel level, std::string_view message) {
    std::fprintf(stderr, "edge_app: [%s] %.*s\n", tributary::LogLevelName(level).data(),
                 static_cast<int>(message.size()), message.data());
  };

  tributary::Result<std::unique_ptr<tributary::Client>> client =
      tributary::Client::Create(std::move(options), trainer);
  if (!client.ok()) {
    std::fprintf(stderr, "edge_app: %s\n", client.status().ToString().c_str());
    return 2;
  }
  const tributary::Status s = (*client)->run();
  if (!s.ok()) {
    std::fprintf(stderr, "edge_app: %s\n", s.ToString().c_str());
    return 1;
  }
  std::printf("edge_app: the coordinator ended the run; client id %s\n",
              (*client)->client_id().c_str());
  return 0;
}

// tributary-coordinator: runs federated training rounds for clients that connect over mutual TLS.
//
//   tributary-coordinator --config coordinator.toml [--rounds 20] [--resume]
//
// Prints one line per round; writes a checkpoint after every round, a JSON-lines event log and the
// final model (safetensors). SIGINT/SIGTERM end the run cleanly: the last checkpoint is complete
// (it is written atomically after each round) and clients are told Goodbye. See docs/operations.md.
#include <CLI/CLI.hpp>

#include <boost/asio/io_context.hpp>
#include <boost/asio/signal_set.hpp>
#include <boost/asio/steady_timer.hpp>
#include <cstdio>
#include <filesystem>
#include <thread>

#include "aggregation/strategy_factory.h"
#include "coordinator/checkpoint.h"
#include "coordinator/coordinator_config.h"
#include "coordinator/coordinator_service.h"
#include "coordinator/event_log.h"
#include "core/file_util.h"
#include "core/log.h"
#include "crypto/deny_list.h"
#include "crypto/tls_context.h"
#include "protocol/tls_transport.h"
#include "train/data/fashion_mnist.h"
#include "train/native_trainer.h"
#include "tributary/config.h"
#include "tributary/safetensors.h"

namespace tributary {
namespace {

struct Flags {
  std::string config;
  std::string listen, checkpoint_dir, ready_file, log_level;
  int64_t rounds = -1, clients_per_round = -1, min_completed = -1, min_available = -1,
          eval_every = -1;
  bool resume = false;
};

Status ApplyFlags(const Flags& f, CoordinatorConfig* c) {
  if (!f.listen.empty()) c->listen = f.listen;
  if (!f.checkpoint_dir.empty()) c->checkpoint_dir = f.checkpoint_dir;
  if (!f.ready_file.empty()) c->ready_file = f.ready_file;
  if (!f.log_level.empty()) c->log_level = f.log_level;
  if (f.rounds >= 0) c->round.rounds = f.rounds;
  if (f.clients_per_round >= 0) c->round.clients_per_round = f.clients_per_round;
  if (f.min_completed >= 0) c->round.min_completed = f.min_completed;
  if (f.min_available >= 0) c->round.min_available = f.min_available;
  if (f.eval_every >= 0) c->eval_every = f.eval_every;
  if (c->event_log.empty())
    c->event_log = (std::filesystem::path(c->checkpoint_dir) / "events.jsonl").string();
  if (c->final_model.empty())
    c->final_model = (std::filesystem::path(c->checkpoint_dir) / "final.safetensors").string();
  if (c->tls_ca.empty() || c->tls_cert.empty() || c->tls_key.empty())
    return Status::InvalidArgument(
        "keys 'tls.ca', 'tls.cert' and 'tls.key' are required (mutual TLS is always on; "
        "make the files with tributary-certs, see docs/operations.md)");
  return Status::Ok();
}

std::string Megabytes(uint64_t bytes) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.1f MB", static_cast<double>(bytes) / 1e6);
  return buf;
}

int Run(const Flags& flags) {
  CoordinatorConfig cfg;
  if (!flags.config.empty()) {
    Result<Config> file = Config::LoadFile(flags.config);
    Status s = file.ok() ? LoadCoordinatorConfig(*file, &cfg) : file.status();
    if (!s.ok()) {
      std::fprintf(stderr, "tributary-coordinator: %s\n", s.message().c_str());
      return 2;
    }
  }
  auto fail = [](const Status& s) {
    std::fprintf(stderr, "tributary-coordinator: %s\n", s.ToString().c_str());
    return 1;
  };
  if (Status s = ApplyFlags(flags, &cfg); !s.ok()) return fail(s);
  if (Status s = InitLogging(cfg.log_level); !s.ok()) return fail(s);

  Result<ModelSpec> spec = ModelSpecByName(cfg.model);
  if (!spec.ok()) return fail(spec.status().WithContext("key 'run.model'"));
  StrategyOptions so;
  so.server_lr = static_cast<float>(cfg.server_lr);
  Result<std::unique_ptr<Strategy>> strategy = MakeStrategy(cfg.strategy, so);
  if (!strategy.ok()) return fail(strategy.status().WithContext("key 'run.strategy'"));
  // A rule that needs n updates (Krum: n > 2f + 2, ...) must get them in every round that closes.
  if (Status s = ValidateStrategyFor(**strategy, cfg.round.min_completed); !s.ok())
    return fail(s.WithContext("keys 'run.strategy' and 'run.min_completed'"));
  if (float mu = (*strategy)->client_proximal_mu(); mu > 0.0f) cfg.round.fit.proximal_mu = mu;

  // The starting point: a checkpoint when resuming, else fresh weights.
  Result<ModelWeights> init = InitWeights(*spec, cfg.init_seed);
  if (!init.ok()) return fail(init.status());
  ModelWeights model = std::move(*init);
  uint64_t rounds_done = 0, version = 0;
  if (flags.resume) {
    Result<CheckpointState> ck = LoadCheckpoint(Env::Default(), cfg.checkpoint_dir);
    if (ck.ok()) {
      if (ck->model_name != cfg.model || !ck->model.same_layout(model))
        return fail(Status::InvalidArgument("checkpoint in " + cfg.checkpoint_dir +
                                            " holds model '" + ck->model_name +
                                            "', but the config asks for '" + cfg.model + "'"));
      if (ck->strategy != cfg.strategy)
        return fail(Status::InvalidArgument("checkpoint in " + cfg.checkpoint_dir +
                                            " was written by strategy '" + ck->strategy +
                                            "', but the config asks for '" + cfg.strategy + "'"));
      if (Status s = (*strategy)->LoadState(ck->strategy_state, ck->model.size()); !s.ok())
        return fail(s);
      model = std::move(ck->model);
      rounds_done = ck->rounds_done;
      version = ck->model_version;
      std::printf("resuming from %s: %llu rounds done, model version %llu, model hash %016llx\n",
                  CheckpointPath(cfg.checkpoint_dir).c_str(),
                  static_cast<unsigned long long>(rounds_done),
                  static_cast<unsigned long long>(version),
                  static_cast<unsigned long long>(model.content_hash()));
    } else if (ck.status().code() == StatusCode::kNotFound) {
      std::printf("--resume: no checkpoint in %s yet; starting a new run\n",
                  cfg.checkpoint_dir.c_str());
    } else {
      return fail(ck.status());
    }
  }

  // Server-side evaluation on the held-out set.
  std::unique_ptr<NativeTrainer> evaluator;
  if (cfg.eval_every > 0) {
    Result<Dataset> test =
        LoadFashionMnist(cfg.eval_data_dir, FashionMnistSplit::kTest, cfg.eval_max_examples);
    if (!test.ok())
      return fail(test.status().WithContext("server-side evaluation (key 'eval.every')"));
    auto trainer =
        NativeTrainer::Create(*spec, nullptr, std::make_shared<const Dataset>(std::move(*test)), 0);
    if (!trainer.ok()) return fail(trainer.status());
    evaluator = std::move(*trainer);
  }

  std::error_code ec;
  std::filesystem::create_directories(cfg.checkpoint_dir, ec);
  Result<std::unique_ptr<EventLog>> events = EventLog::Open(cfg.event_log);
  if (!events.ok()) return fail(events.status());
  EventLog& log = **events;

  const int64_t total_rounds = cfg.round.rounds;
  RoundEngine::Hooks hooks;
  Strategy* strategy_ptr = strategy->get();
  hooks.on_round_complete = [&](const RoundSummary& s, const ModelWeights& m) {
    CheckpointState ck{s.round, s.model_version, cfg.round.seed, cfg.strategy, cfg.model,
                       m,       ModelWeights()};
    if (auto st = strategy_ptr->SaveState(); st.ok()) ck.strategy_state = std::move(*st);
    Status saved = SaveCheckpoint(Env::Default(), cfg.checkpoint_dir, ck);
    if (!saved.ok()) spdlog::error("checkpoint failed: {}", saved.ToString());
    nlohmann::json ev = {{"round", s.round},           {"model_version", s.model_version},
                         {"attempts", s.attempts},     {"selected", s.selected},
                         {"completed", s.completed},   {"rejected", s.rejected},
                         {"dropped", s.dropped},       {"bytes_up", s.bytes_up},
                         {"bytes_down", s.bytes_down}, {"num_examples", s.num_examples},
                         {"duration_s", s.duration_s}, {"client_metrics", s.client_metrics}};
    std::string acc = "";
    if (evaluator && s.round % static_cast<uint64_t>(cfg.eval_every) == 0) {
      Result<EvalResult> e = evaluator->evaluate(m, EvalConfig{});
      if (e.ok()) {
        ev["test_accuracy"] = e->accuracy;
        ev["test_loss"] = e->loss;
        char buf[64];
        std::snprintf(buf, sizeof(buf), "test-acc %5.2f%%  test-loss %.4f  ", 100 * e->accuracy,
                      e->loss);
        acc = buf;
      }
    }
    log.Write("round_end", ev);
    std::printf(
        "round %3llu/%lld  %supdates %lld/%lld (rejected %lld, dropped %lld)  up %s  down %s  "
        "%.1fs\n",
        static_cast<unsigned long long>(s.round), static_cast<long long>(total_rounds), acc.c_str(),
        static_cast<long long>(s.completed), static_cast<long long>(s.selected),
        static_cast<long long>(s.rejected), static_cast<long long>(s.dropped),
        Megabytes(s.bytes_up).c_str(), Megabytes(s.bytes_down).c_str(), s.duration_s);
    std::fflush(stdout);
  };
  hooks.on_round_failed = [&](uint64_t round, int64_t attempt, const std::string& why) {
    spdlog::warn("round {} attempt {} failed: {}", round, attempt, why);
    log.Write("round_failed", {{"round", round}, {"attempt", attempt}, {"reason", why}});
  };
  hooks.on_rejected = [&](const std::string& id, const Status& why) {
    log.Write("update_rejected", {{"client", id}, {"reason", why.message()}});
  };
  hooks.on_federated_eval = [&](const FederatedEvalSummary& e) {
    log.Write("federated_eval", {{"round", e.round},
                                 {"clients", e.clients},
                                 {"num_examples", e.num_examples},
                                 {"loss", e.loss},
                                 {"accuracy", e.accuracy}});
    spdlog::info("federated evaluation of round {}: accuracy {:.2f}% over {} clients", e.round,
                 100 * e.accuracy, e.clients);
  };
  Result<std::unique_ptr<RoundEngine>> engine =
      RoundEngine::Create(cfg.round, std::move(*strategy), model, rounds_done, version, hooks);
  if (!engine.ok()) return fail(engine.status());

  // Transport: mutual TLS, with the optional deny list of revoked client ids.
  Result<SslContextPtr> tls =
      MakeServerTlsContext(TlsConfig{cfg.tls_ca, cfg.tls_cert, cfg.tls_key});
  if (!tls.ok()) return fail(tls.status());
  TlsTransportOptions topts;
  topts.server_context = *tls;
  if (!cfg.deny_list.empty()) {
    auto deny = std::make_shared<DenyList>();
    if (Status s = deny->LoadFile(cfg.deny_list); !s.ok()) return fail(s);
    topts.transport.deny_list = deny;
  }
  boost::asio::io_context io;
  Result<std::unique_ptr<TlsTransport>> transport = TlsTransport::Create(io, topts);
  if (!transport.ok()) return fail(transport.status());
  CoordinatorServiceOptions sopts;
  sopts.listen_address = cfg.listen;
  sopts.heartbeat_interval =
      std::chrono::milliseconds(static_cast<int64_t>(cfg.heartbeat_interval_s * 1000));
  sopts.client_timeout =
      std::chrono::milliseconds(static_cast<int64_t>(cfg.client_timeout_s * 1000));
  sopts.software_version = TRIBUTARY_VERSION;
  auto service = std::make_shared<CoordinatorService>(io, **transport, **engine, sopts);
  Status result = Status::Aborted("not finished");
  bool stopped_by_signal = false;
  service->set_on_finished([&](Status s) {
    result = s;
    RoundEngine& e = **engine;
    if (s.ok() && e.finished()) {
      Status saved = SaveSafetensors(e.model(), cfg.final_model,
                                     {{"model", cfg.model},
                                      {"rounds", std::to_string(e.rounds_done())},
                                      {"producer", "tributary-coordinator"}});
      if (saved.ok())
        std::printf("final model: %s (hash %016llx)\n", cfg.final_model.c_str(),
                    static_cast<unsigned long long>(e.model().content_hash()));
      else
        spdlog::error("{}", saved.ToString());
    }
    log.Write("run_end", {{"rounds_done", e.rounds_done()}, {"status", s.ToString()}});
    // Give the Goodbyes a moment to leave before stopping the io_context.
    auto timer = std::make_shared<boost::asio::steady_timer>(io, std::chrono::milliseconds(300));
    timer->async_wait([&io, timer](const boost::system::error_code&) { io.stop(); });
  });
  if (Status s = service->Start(); !s.ok()) return fail(s.WithContext("listen on " + cfg.listen));
  log.Write("run_start", {{"model", cfg.model},
                          {"rounds", total_rounds},
                          {"rounds_done", rounds_done},
                          {"strategy", cfg.strategy},
                          {"codec", cfg.round.codec},
                          {"listen", service->address()}});
  std::printf(
      "tributary-coordinator %s: model %s (%zu parameters), strategy %s, %lld rounds of %lld "
      "clients; "
      "listening on %s (mutual TLS)\n",
      TRIBUTARY_VERSION, cfg.model.c_str(), model.size(), cfg.strategy.c_str(),
      static_cast<long long>(total_rounds), static_cast<long long>(cfg.round.clients_per_round),
      service->address().c_str());
  std::fflush(stdout);
  if (!cfg.ready_file.empty()) {
    const std::string addr = service->address() + "\n";
    if (Status s = WriteFileAtomic(
            cfg.ready_file, std::span(reinterpret_cast<const uint8_t*>(addr.data()), addr.size()));
        !s.ok())
      return fail(s);
  }
  boost::asio::signal_set signals(io, SIGINT, SIGTERM);
  signals.async_wait([&](const boost::system::error_code& sec, int sig) {
    if (sec) return;
    stopped_by_signal = true;
    std::printf("signal %d: shutting down (the last checkpoint is complete)\n", sig);
    std::fflush(stdout);
    service->Stop("the coordinator is shutting down");
  });
  std::thread second([&io] { io.run(); });
  io.run();
  second.join();
  if (!result.ok()) return fail(result);
  if (!stopped_by_signal)
    std::printf("run complete: %llu rounds\n",
                static_cast<unsigned long long>((*engine)->rounds_done()));
  return 0;
}

}  // namespace
}  // namespace tributary

int main(int argc, char** argv) {
  tributary::Flags f;
  CLI::App app{"tributary-coordinator: runs federated training rounds over mutual TLS"};
  app.add_option("-c,--config", f.config, "TOML config (see docs/operations.md)")
      ->check(CLI::ExistingFile);
  app.add_option("--listen", f.listen, "host:port to listen on (port 0 picks a free port)");
  app.add_option("--rounds", f.rounds, "rounds to run");
  app.add_option("--clients-per-round", f.clients_per_round, "updates per round");
  app.add_option("--min-completed", f.min_completed,
                 "updates needed to close a round at its deadline");
  app.add_option("--min-available", f.min_available, "idle clients needed to start a round");
  app.add_option("--eval-every", f.eval_every, "server-side evaluation every k rounds (0: never)");
  app.add_option("--checkpoint-dir", f.checkpoint_dir,
                 "where checkpoints, events and the final model go");
  app.add_option("--ready-file", f.ready_file, "write the listening address here once ready");
  app.add_option("--log-level", f.log_level, "trace, debug, info, warn, error");
  app.add_flag("--resume", f.resume, "continue from the checkpoint in the checkpoint directory");
  CLI11_PARSE(app, argc, argv);
  return tributary::Run(f);
}

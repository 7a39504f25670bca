#include "sim/deploy.h"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fmt/format.h>

#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <thread>

#include "core/file_util.h"
#include "crypto/cert_authority.h"
#include "crypto/pem.h"

extern char** environ;

namespace tributary {
namespace {

namespace fs = std::filesystem;
using WallClock = std::chrono::steady_clock;

// A child process with stdout and stderr in a log file; killed when destroyed if still running.
class Child {
 public:
  Child() = default;
  Child(const Child&) = delete;
  Child& operator=(const Child&) = delete;
  ~Child() {
    if (pid_ > 0 && !exited_) {
      ::kill(pid_, SIGKILL);
      int st = 0;
      ::waitpid(pid_, &st, 0);
    }
  }
  Status Start(const std::vector<std::string>& argv, const std::string& log) {
    log_ = log;
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 1, log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    posix_spawn_file_actions_adddup2(&fa, 1, 2);
    std::vector<char*> args;
    for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    const int rc = posix_spawn(&pid_, argv[0].c_str(), &fa, nullptr, args.data(), environ);
    posix_spawn_file_actions_destroy(&fa);
    if (rc != 0) {
      pid_ = -1;
      return Status::Unavailable("cannot start " + argv[0] + ": " + std::strerror(rc));
    }
    return Status::Ok();
  }
  // The exit status (128 + signal when killed) once exited, else -1.
  int Poll() {
    if (exited_ || pid_ <= 0) return code_;
    int st = 0;
    if (::waitpid(pid_, &st, WNOHANG) == pid_) {
      exited_ = true;
      code_ = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
    }
    return exited_ ? code_ : -1;
  }
  void Terminate() {
    if (pid_ > 0 && !exited_) ::kill(pid_, SIGTERM);
  }
  const std::string& log() const { return log_; }

 private:
  pid_t pid_ = -1;
  bool exited_ = false;
  int code_ = -1;
  std::string log_;
};

std::string SelfDir() {
  std::error_code ec;
  fs::path p = fs::read_symlink("/proc/self/exe", ec);
  return ec ? std::string(".") : p.parent_path().string();
}

// `name` next to the running executable, or in the build tree's `folder` beside it.
std::string FindBinary(const std::string& given, const std::string& name,
                       const std::string& folder) {
  if (!given.empty()) return given;
  const fs::path self = SelfDir();
  std::error_code ec;
  if (fs::exists(self / name, ec)) return (self / name).string();
  return (self.parent_path() / folder / name).string();
}

std::string Quote(const std::string& s) { return nlohmann::json(s).dump(); }

}  // namespace

Result<SimResult> RunDeployment(const SimConfig& c, const DeployOptions& options,
                                const std::function<void(const SimRound&)>& on_round) {
  TRIB_RETURN_IF_ERROR(c.Validate());
  if (c.dataset != "fashion-mnist")
    return Status::InvalidArgument("deployment mode needs dataset 'fashion-mnist' (key dataset)");
  if (c.partition.rfind("replacement:", 0) == 0)
    return Status::InvalidArgument(
        "deployment mode needs a partition (iid, dirichlet:A, shards:K), not '" + c.partition +
        "' (key partition)");
  if (c.trainer != "native")
    return Status::InvalidArgument("deployment mode trains for real (key trainer = 'native')");
  if (c.clients > 64)
    return Status::InvalidArgument("deployment mode starts one process per client; clients = " +
                                   std::to_string(c.clients) + " is over its limit of 64");
  const std::string coordinator_bin =
      FindBinary(options.coordinator_bin, "tributary-coordinator", "coordinator");
  const std::string client_bin = FindBinary(options.client_bin, "tributary-client", "client");
  const std::string work =
      options.work_dir.empty() ? (fs::path(c.report_dir) / "deploy").string() : options.work_dir;
  std::error_code ec;
  fs::remove_all(work, ec);
  for (const char* sub : {"pki", "logs", "out", "state"})
    fs::create_directories(fs::path(work) / sub, ec);
  if (ec) return Status::IoError("cannot create " + work + ": " + ec.message());
  const fs::path pki = fs::path(work) / "pki";

  // Certificates, made through the OpenSSL API (as tributary-certs does).
  TRIB_ASSIGN_OR_RETURN(PemPair ca, MakeCaCertificate("tributary-sim deployment CA"));
  TRIB_RETURN_IF_ERROR(
      WritePemPair(ca, (pki / "ca.crt").string(), (pki / "ca.key").string(), true));
  TRIB_ASSIGN_OR_RETURN(PemPair server, MakeServerCertificate(ca, {"localhost"}, {"127.0.0.1"}));
  TRIB_RETURN_IF_ERROR(
      WritePemPair(server, (pki / "server.crt").string(), (pki / "server.key").string(), true));
  for (int64_t i = 0; i < c.clients; ++i) {
    const std::string id = Population::ClientId(static_cast<uint64_t>(i));
    TRIB_ASSIGN_OR_RETURN(PemPair cert, MakeClientCertificate(ca, id));
    TRIB_RETURN_IF_ERROR(
        WritePemPair(cert, (pki / (id + ".crt")).string(), (pki / (id + ".key")).string(), true));
  }

  // The coordinator's config: the simulation's settings, in real seconds.
  const fs::path out = fs::path(work) / "out";
  const std::string ready = (fs::path(work) / "ready").string();
  std::string toml = fmt::format(
      "listen = \"127.0.0.1:0\"\nlog_level = \"info\"\n[tls]\nca = {}\ncert = {}\nkey = {}\n"
      "[run]\nmodel = {}\ninit_seed = {}\nstrategy = {}\nrounds = {}\nclients_per_round = {}\n"
      "min_available = {}\nover_selection = {}\nmin_completed = {}\nround_timeout_s = {}\n"
      "seed = {}\ncodec = {}\nheartbeat_interval_s = 2\nclient_timeout_s = {}\n"
      "[fit]\nepochs = {}\nbatch_size = {}\nlr = {}\nmomentum = {}\nweight_decay = {}\n"
      "proximal_mu = {}\nmax_steps = {}\n[eval]\nevery = {}\ndata_dir = {}\nmax_examples = {}\n"
      "[output]\ncheckpoint_dir = {}\nready_file = {}\n",
      Quote((pki / "ca.crt").string()), Quote((pki / "server.crt").string()),
      Quote((pki / "server.key").string()), Quote(c.model), c.init_seed, Quote(c.strategy),
      c.rounds, c.per_round, c.clients, c.over_selection,
      c.min_completed > 0 ? c.min_completed : c.per_round, c.round_timeout_s, c.seed,
      Quote(c.codec), std::max(60.0, c.round_timeout_s), c.fit.epochs, c.fit.batch_size,
      static_cast<double>(c.fit.lr), static_cast<double>(c.fit.momentum),
      static_cast<double>(c.fit.weight_decay), static_cast<double>(c.fit.proximal_mu),
      c.fit.max_steps, c.eval_every, Quote(c.data_dir), c.test_examples, Quote(out.string()),
      Quote(ready));
  const std::string toml_path = (fs::path(work) / "coordinator.toml").string();
  TRIB_RETURN_IF_ERROR(WriteFileAtomic(toml_path, toml));

  const auto start = WallClock::now();
  Child coordinator;
  TRIB_RETURN_IF_ERROR(coordinator.Start({coordinator_bin, "--config", toml_path},
                                         (fs::path(work) / "logs" / "coordinator.log").string()));
  std::string address;
  while (address.empty()) {
    if (coordinator.Poll() >= 0)
      return Status::Unavailable("tributary-coordinator exited before listening; see " +
                                 coordinator.log());
    if (WallClock::now() - start > std::chrono::seconds(60))
      return Status::Unavailable("tributary-coordinator did not start listening within 60 s; see " +
                                 coordinator.log());
    std::ifstream in(ready);
    std::getline(in, address);
    if (address.empty()) std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  const std::string port = address.substr(address.rfind(':') + 1);
  std::vector<std::unique_ptr<Child>> clients;
  for (int64_t i = 0; i < c.clients; ++i) {
    const std::string id = Population::ClientId(static_cast<uint64_t>(i));
    std::vector<std::string> argv = {client_bin,
                                     "--coordinator",
                                     "localhost:" + port,
                                     "--ca",
                                     (pki / "ca.crt").string(),
                                     "--cert",
                                     (pki / (id + ".crt")).string(),
                                     "--key",
                                     (pki / (id + ".key")).string(),
                                     "--state-dir",
                                     (fs::path(work) / "state" / id).string(),
                                     "--model",
                                     c.model,
                                     "--device",
                                     "cpu",
                                     "--partition",
                                     c.partition,
                                     "--num-clients",
                                     std::to_string(c.clients),
                                     "--client-index",
                                     std::to_string(i),
                                     "--partition-seed",
                                     std::to_string(c.seed),
                                     "--train-examples",
                                     std::to_string(c.train_examples),
                                     "--log-level",
                                     "warn"};
    if (!c.data_dir.empty()) {
      argv.push_back("--data");
      argv.push_back(c.data_dir);
    }
    clients.push_back(std::make_unique<Child>());
    TRIB_RETURN_IF_ERROR(
        clients.back()->Start(argv, (fs::path(work) / "logs" / (id + ".log")).string()));
  }

  // Follow the event log while the coordinator runs.
  const double timeout_s = options.timeout_s > 0
                               ? options.timeout_s
                               : static_cast<double>(c.rounds) * (c.round_timeout_s + 60.0);
  const std::string events_path = (out / "events.jsonl").string();
  SimResult result;
  size_t lines_seen = 0;
  auto read_events = [&] {
    std::ifstream in(events_path);
    std::string line;
    size_t n = 0;
    while (std::getline(in, line)) {
      if (n++ < lines_seen) continue;
      lines_seen = n;
      nlohmann::json ev = nlohmann::json::parse(line, nullptr, false);
      if (ev.is_discarded() || ev.value("event", "") != "round_end") continue;
      SimRound r;
      r.round = ev.value("round", uint64_t{0});
      r.attempts = ev.value("attempts", int64_t{1});
      r.selected = ev.value("selected", int64_t{0});
      r.completed = ev.value("completed", int64_t{0});
      r.rejected = ev.value("rejected", int64_t{0});
      r.dropouts = ev.value("dropped", int64_t{0});
      r.bytes_up = ev.value("bytes_up", uint64_t{0});
      r.bytes_down = ev.value("bytes_down", uint64_t{0});
      r.wall_seconds = ev.value("duration_s", 0.0);
      r.sim_seconds = r.wall_seconds;
      r.wall_clock = std::chrono::duration<double>(WallClock::now() - start).count();
      r.sim_clock = r.wall_clock;
      if (ev.contains("client_metrics") && ev["client_metrics"].contains("train_loss"))
        r.train_loss = ev["client_metrics"]["train_loss"].get<double>();
      if (ev.contains("test_accuracy")) {
        r.evaluated = true;
        r.test_accuracy = ev["test_accuracy"].get<double>();
        r.test_loss = ev.value("test_loss", 0.0);
      }
      const SimRound& stored = result.Append(std::move(r), c.target_accuracy);
      if (on_round) on_round(stored);
    }
  };
  int code = -1;
  while ((code = coordinator.Poll()) < 0) {
    read_events();
    if (std::chrono::duration<double>(WallClock::now() - start).count() > timeout_s) {
      coordinator.Terminate();
      return Status::DeadlineExceeded(fmt::format(
          "the deployment did not finish within {:.0f} s; see {}", timeout_s, coordinator.log()));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  read_events();
  if (code != 0)
    return Status::Unavailable(fmt::format("tributary-coordinator exited with status {}; see {}",
                                           code, coordinator.log()));
  // Clients leave on the coordinator's Goodbye; give them a moment, then stop any straggler.
  const auto grace = WallClock::now() + std::chrono::seconds(10);
  for (auto& ch : clients)
    while (ch->Poll() < 0 && WallClock::now() < grace)
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
  result.wall_seconds = std::chrono::duration<double>(WallClock::now() - start).count();
  result.sim_seconds = result.wall_seconds;
  // The final model's hash, from the coordinator's log line.
  std::ifstream log(coordinator.log());
  std::string line;
  while (std::getline(log, line)) {
    const size_t at = line.find("(hash ");
    if (line.rfind("final model:", 0) == 0 && at != std::string::npos)
      result.model_hash = std::stoull(line.substr(at + 6, 16), nullptr, 16);
  }
  return result;
}

}  // namespace tributary

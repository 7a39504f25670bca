#include "sim/deploy.h"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <optional>
#include <thread>

#include "client/client_config.h"
#include "coordinator/coordinator_config.h"
#include "core/file_util.h"
#include "crypto/cert_authority.h"
#include "crypto/pem.h"
#include "sim/line_follower.h"

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

// Why a changed in-process-only key has no meaning with real processes; null for the others.
const char* InProcessOnly(const std::string& key) {
  if (key == "sim.threads") return "real clients are processes, one per client";
  if (key == "sim.stop_at_target") return "the deployed coordinator runs every round";
  if (key.rfind("hetero.", 0) == 0) return "real clients have real devices and networks";
  if (key.rfind("residual.", 0) == 0)
    return "a real client keeps its whole error-feedback residual in its state directory";
  if (key.rfind("attack.", 0) == 0) return "the real client binary does not attack";
  if (key.rfind("tier.", 0) == 0)
    return "a deployed tier is real tributary-aggregator processes (docs/tier.md)";
  return nullptr;
}

}  // namespace

Status CheckDeployable(const SimConfig& c) {
  TRIB_RETURN_IF_ERROR(c.Validate());
  for (const std::string& key : ChangedSimKeys(c)) {
    if (const char* why = InProcessOnly(key))
      return Status::InvalidArgument(
          "key '" + key + "' has no effect in deployment mode (" + why +
          "); remove it or run in-process (examples/configs/deploy.toml is the demo without "
          "[hetero])");
  }
  if (c.trainer != "native")
    return Status::InvalidArgument("key 'sim.trainer' = '" + c.trainer +
                                   "': deployment mode trains for real (native)");
  if (c.data.partition.rfind("replacement:", 0) == 0)
    return Status::InvalidArgument(
        "key 'data.partition' = '" + c.data.partition +
        "': deployment mode needs a partition real clients can compute (iid, dirichlet:A, "
        "shards:K, labels:K, quantity:B)");
  if (c.data.num_clients > 64)
    return Status::InvalidArgument(
        "key 'data.num_clients' = " + std::to_string(c.data.num_clients) +
        ": deployment mode starts one process per client, at most 64");
  return Status::Ok();
}

Result<SimResult> RunDeployment(const SimConfig& c, const DeployOptions& options,
                                const std::function<void(const SimRound&)>& on_round) {
  TRIB_RETURN_IF_ERROR(CheckDeployable(c));
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
  for (int64_t i = 0; i < c.data.num_clients; ++i) {
    const std::string id = Population::ClientId(static_cast<uint64_t>(i));
    TRIB_ASSIGN_OR_RETURN(PemPair cert, MakeClientCertificate(ca, id));
    TRIB_RETURN_IF_ERROR(
        WritePemPair(cert, (pki / (id + ".crt")).string(), (pki / (id + ".key")).string(), true));
  }

  // The coordinator's config: the run the in-process simulator runs, through the coordinator's
  // own schema. Its outputs go to out/.
  const fs::path out = fs::path(work) / "out";
  const std::string ready = (fs::path(work) / "ready").string();
  CoordinatorConfig cc;
  cc.listen = "127.0.0.1:0";
  cc.log_level = "info";
  cc.tls_ca = (pki / "ca.crt").string();
  cc.tls_cert = (pki / "server.crt").string();
  cc.tls_key = (pki / "server.key").string();
  cc.ready_file = ready;
  cc.heartbeat_interval = std::chrono::seconds(2);
  cc.client_timeout =
      std::max<std::chrono::milliseconds>(std::chrono::seconds(60), c.run.round.round_timeout);
  cc.run = c.EffectiveRun();
  cc.run.checkpoint_dir = out.string();
  cc.run.event_log = (out / "events.jsonl").string();
  cc.run.final_model = (out / "final.safetensors").string();
  cc.data = c.data;
  ConfigSchema coordinator_schema("tributary-coordinator");
  BindCoordinatorConfig(coordinator_schema, &cc);
  const std::string toml_path = (fs::path(work) / "coordinator.toml").string();
  TRIB_RETURN_IF_ERROR(WriteFileAtomic(toml_path, coordinator_schema.ValuesToml()));

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
  for (int64_t i = 0; i < c.data.num_clients; ++i) {
    const std::string id = Population::ClientId(static_cast<uint64_t>(i));
    // Each client's config: the same data keys and model, through the client's own schema.
    ClientConfig cl;
    cl.log_level = "warn";
    cl.coordinator = "localhost:" + port;
    cl.ca = (pki / "ca.crt").string();
    cl.cert = (pki / (id + ".crt")).string();
    cl.key = (pki / (id + ".key")).string();
    cl.state_dir = (fs::path(work) / "state" / id).string();
    cl.device = "cpu";
    cl.threads = 1;  // as each simulated client trains: the same bits as the in-process run
    cl.model = c.run.model;
    cl.init_seed = c.run.init_seed;
    cl.data = c.data;
    cl.client_index = i;
    // A split run: each client trains the device part, through the coordinator's server part.
    cl.split = !c.run.round.split.mode.empty();
    cl.split_cut = c.run.round.split.cut;
    cl.split_head = c.run.round.split.head;
    ConfigSchema client_schema("tributary-client");
    BindClientConfig(client_schema, &cl);
    const std::string client_toml = (fs::path(work) / "state" / (id + ".toml")).string();
    TRIB_RETURN_IF_ERROR(WriteFileAtomic(client_toml, client_schema.ValuesToml()));
    clients.push_back(std::make_unique<Child>());
    TRIB_RETURN_IF_ERROR(clients.back()->Start({client_bin, "--config", client_toml},
                                               (fs::path(work) / "logs" / (id + ".log")).string()));
  }

  // Follow the event log while the coordinator runs: the run's events, read back.
  const double timeout_s =
      options.timeout_s > 0
          ? options.timeout_s
          : static_cast<double>(c.run.round.rounds) *
                (std::chrono::duration<double>(c.run.round.round_timeout).count() + 60.0);
  const std::string events_path = cc.run.event_log;
  SimResult result;
  std::optional<RunFinished> finished;
  LineFollower events(events_path);  // complete lines only: a line being written waits
  auto read_events = [&] {
    for (const std::string& line : events.ReadNew()) {
      Result<RunEvent> ev = RunEventFromJson(nlohmann::json::parse(line, nullptr, false));
      if (!ev.ok()) continue;  // a line from a newer coordinator
      if (const auto* f = std::get_if<RunFinished>(&*ev)) finished = *f;
      const auto* closed = std::get_if<RoundClosed>(&*ev);
      if (!closed) continue;
      SimRound r = SimRoundOf(*closed);
      r.wall_seconds = r.sim_seconds = closed->summary.duration_s;
      r.wall_clock = r.sim_clock = std::chrono::duration<double>(WallClock::now() - start).count();
      const SimRound& stored = result.Append(std::move(r), c.target_accuracy);
      if (on_round) on_round(stored);
    }
  };
  // The last line a process wrote: why a client gave up.
  const auto last_line = [](const std::string& path) {
    std::ifstream in(path);
    std::string line, last;
    while (std::getline(in, line))
      if (!line.empty()) last = line;
    return last;
  };
  int code = -1;
  std::optional<WallClock::time_point> all_gone;  // since when no client runs
  while ((code = coordinator.Poll()) < 0) {
    read_events();
    // Every client gone (for 2 s, and no RunFinished: clients leave at the end too) while the run
    // goes on: no round can close, so say why now rather than after the timeout (a client
    // refused at Hello exits at once).
    if (!finished &&
        std::all_of(clients.begin(), clients.end(), [](auto& ch) { return ch->Poll() >= 0; })) {
      if (!all_gone) all_gone = WallClock::now();
      if (WallClock::now() - *all_gone > std::chrono::seconds(2)) {
        coordinator.Terminate();
        return Status::Unavailable(fmt::format(
            "every tributary-client exited before the run ended (client-0: status {}: {}); see {}",
            clients.front()->Poll(), last_line(clients.front()->log()), clients.front()->log()));
      }
    }
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
  if (!finished || !finished->ok)
    return Status::Unavailable("the coordinator's event log " + events_path +
                               " does not record a finished run" +
                               (finished ? ": " + finished->status : std::string()));
  result.model_hash = finished->model_hash;
  return result;
}

}  // namespace tributary

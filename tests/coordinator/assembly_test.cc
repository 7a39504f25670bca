// The programs' composition root (issue 27, item 13): RunObservers, the standard observers that
// tributary-coordinator and tributary-sim give every run, and Coordinator::Assemble, a whole
// coordinator from its config. What they attach, and what they refuse, naming the key, with the
// exit status a program reports.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

#include "coordinator/coordinator_assembly.h"
#include "coordinator/run_driver.h"
#include "coordinator/run_observers.h"
#include "crypto/cert_authority.h"
#include "tributary/config.h"
#if TRIBUTARY_HAVE_HISTORY
#include "history/history_db.h"
#endif

namespace tributary {
namespace {

class TempDir {
 public:
  TempDir() {
    std::string pattern =
        (std::filesystem::temp_directory_path() / "trib_assembly_XXXXXX").string();
    if (::mkdtemp(pattern.data()) != nullptr) path_ = pattern;
  }
  ~TempDir() {
    std::error_code ec;
    if (!path_.empty()) std::filesystem::remove_all(path_, ec);
  }
  std::string path(const std::string& name) const {
    return (std::filesystem::path(path_) / name).string();
  }

 private:
  std::string path_;
};

[[maybe_unused]] RunStarted Started() {  // unused in a build without history and monitor
  RunStarted s;
  s.model = "mlp";
  s.strategy = "fedavg";
  s.codec = "dense";
  s.download_codec = "dense";
  s.rounds = 7;
  s.clients_per_round = 2;
  return s;
}

TEST(RunObserversTest, AttachesTheEventLogAndTheHistoryWhenOutputHistoryIsSet) {
  TempDir dir;
  int64_t rounds = 7;  // a schema of one key, standing for a program's
  ConfigSchema schema("tributary-test");
  schema.Bind("run.rounds", &rounds, "rounds");
  RunObserversOptions o("tributary-test", dir.path("events.jsonl"), dir.path("h.db"), &schema);
  int exit_status = 0;
  Result<std::unique_ptr<RunObservers>> observers = RunObservers::Create(o, &exit_status);
#if TRIBUTARY_HAVE_HISTORY
  ASSERT_TRUE(observers.ok()) << observers.status();
  EXPECT_TRUE((*observers)->has_history());
  EXPECT_FALSE((*observers)->monitored());
  ASSERT_EQ((*observers)->observers().size(), 2u);  // the event log, then the history
  for (RunObserver* observer : (*observers)->observers()) observer->OnEvent(Started());
  for (RunObserver* observer : (*observers)->observers())
    observer->OnEvent(RunFinished{0, true, "OK", 0, "", ""});
  observers->reset();  // commits
  Result<std::unique_ptr<HistoryDb>> db =
      HistoryDb::Open(dir.path("h.db"), HistoryDb::Mode::kReadOnly);
  ASSERT_TRUE(db.ok()) << db.status();
  Result<std::vector<RunRecord>> runs = (*db)->ListRuns(10);
  ASSERT_TRUE(runs.ok()) << runs.status();
  ASSERT_EQ(runs->size(), 1u);
  EXPECT_EQ((*runs)[0].producer, "tributary-test");
  EXPECT_EQ((*runs)[0].config_json, R"({"run.rounds":7})");
  EXPECT_EQ((*runs)[0].rounds_total, 7);
  EXPECT_EQ(std::filesystem::path((*runs)[0].event_log).filename(), "events.jsonl");
  // The event log has both events, one JSON line each.
  std::ifstream log(dir.path("events.jsonl"));
  std::string first, second;
  ASSERT_TRUE(std::getline(log, first) && std::getline(log, second));
  EXPECT_NE(first.find("\"event\":\"run_started\""), std::string::npos) << first;
  EXPECT_NE(second.find("\"event\":\"run_finished\""), std::string::npos) << second;
#else
  ASSERT_FALSE(observers.ok());
  EXPECT_EQ(observers.status().code(), StatusCode::kUnimplemented);
  EXPECT_NE(observers.status().message().find("key 'output.history'"), std::string::npos);
  EXPECT_EQ(exit_status, 2);
#endif
}

TEST(RunObserversTest, NoHistoryWithNoneAndAConsoleWhenAsked) {
  TempDir dir;
  RunObserversOptions o("tributary-test", "", "none", nullptr);
  o.console = true;
  Result<std::unique_ptr<RunObservers>> observers = RunObservers::Create(o);
  ASSERT_TRUE(observers.ok()) << observers.status();
  EXPECT_FALSE((*observers)->has_history());
  EXPECT_EQ((*observers)->observers().size(), 1u);  // the console alone
  EXPECT_EQ((*observers)->monitor_port(), 0);
}

TEST(RunObserversTest, ABadMonitorListenIsRefusedNamingTheKey) {
  TempDir dir;
  RunObserversOptions o("tributary-test", dir.path("events.jsonl"), "none", nullptr);
  o.monitor_listen = "no-port-here";
  int exit_status = 0;
  Result<std::unique_ptr<RunObservers>> observers = RunObservers::Create(o, &exit_status);
  ASSERT_FALSE(observers.ok());
  EXPECT_NE(observers.status().message().find("key 'monitor.listen'"), std::string::npos)
      << observers.status();
  EXPECT_EQ(exit_status, 2);
}

TEST(RunObserversTest, AnEventLogThatCannotBeOpenedIsTheFileSystemsFault) {
  TempDir dir;
  std::ofstream(dir.path("a-file")) << "x";
  RunObserversOptions o("tributary-test", dir.path("a-file/events.jsonl"), "none", nullptr);
  int exit_status = 0;
  Result<std::unique_ptr<RunObservers>> observers = RunObservers::Create(o, &exit_status);
  ASSERT_FALSE(observers.ok());
  EXPECT_EQ(exit_status, 1);
}

#if TRIBUTARY_HAVE_MONITOR
// GET `path` from 127.0.0.1:port; the whole answer.
std::string HttpGet(uint16_t port, const std::string& path) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(port);
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    ::close(fd);
    return "";
  }
  const std::string request = "GET " + path + " HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n";
  if (::write(fd, request.data(), request.size()) != static_cast<ssize_t>(request.size())) {
    ::close(fd);
    return "";
  }
  std::string answer;
  char buf[4096];
  for (ssize_t n; (n = ::read(fd, buf, sizeof(buf))) > 0;)
    answer.append(buf, static_cast<size_t>(n));
  ::close(fd);
  return answer;
}

TEST(RunObserversTest, MonitorListenServesTheRunsMetricsAndDashboard) {
  RunObserversOptions o("tributary-test", "", "none", nullptr);
  o.monitor_listen = "127.0.0.1:0";
  Result<std::unique_ptr<RunObservers>> observers = RunObservers::Create(o);
  ASSERT_TRUE(observers.ok()) << observers.status();
  ASSERT_TRUE((*observers)->monitored());
  ASSERT_GT((*observers)->monitor_port(), 0);
  // The bound address, with the real port (the log line and the ready file use it).
  EXPECT_EQ((*observers)->monitor_address(),
            "127.0.0.1:" + std::to_string((*observers)->monitor_port()));
  ASSERT_EQ((*observers)->observers().size(), 2u);  // the metrics, then the dashboard's state
  for (RunObserver* observer : (*observers)->observers()) observer->OnEvent(Started());
  (*observers)->RefreshClients();  // no registry: nothing to sample, and no harm
  const std::string metrics = HttpGet((*observers)->monitor_port(), "/metrics");
  EXPECT_NE(metrics.find("tributary_run_rounds 7"), std::string::npos) << metrics;
  const std::string state = HttpGet((*observers)->monitor_port(), "/api/state");
  EXPECT_NE(state.find("\"rounds_total\":7"), std::string::npos) << state;
}
#endif

// A coordinator's config whose files are in `dir` (the TLS ones written when `tls`).
CoordinatorConfig Config(const TempDir& dir, bool tls) {
  CoordinatorConfig c;
  c.listen = "127.0.0.1:0";
  c.run.checkpoint_dir = dir.path("ck");
  c.run.history = "none";
  c.run.eval_every = 0;
  c.data.dataset = "synthetic";
  c.tls_ca = dir.path("ca.crt");
  c.tls_cert = dir.path("server.crt");
  c.tls_key = dir.path("server.key");
  if (tls) {
    PemPair ca = *MakeCaCertificate("assembly test CA");
    PemPair server = *MakeServerCertificate(ca, {"localhost"}, {"127.0.0.1"});
    std::ofstream(c.tls_ca) << ca.cert_pem;
    std::ofstream(c.tls_cert) << server.cert_pem;
    std::ofstream(c.tls_key) << server.key_pem;
  }
  return c;
}

TEST(CoordinatorAssemblyTest, AssemblesTheRunWithItsStandardObservers) {
  TempDir dir;
  CoordinatorConfig c = Config(dir, /*tls=*/true);
  c.run.history = dir.path("h.db");
  int exit_status = 0;
  Result<std::unique_ptr<Coordinator>> coordinator =
      Coordinator::Assemble(c, Coordinator::Options{}, &exit_status);
#if TRIBUTARY_HAVE_HISTORY
  ASSERT_TRUE(coordinator.ok()) << coordinator.status();
  const RunObservers& observers = (*coordinator)->observers();
  EXPECT_TRUE(observers.has_history());
  EXPECT_EQ(observers.observers().size(), 3u);  // the event log, the console and the history
  EXPECT_EQ((*coordinator)->driver().config().event_log, dir.path("ck/events.jsonl"));
  EXPECT_TRUE(std::filesystem::exists(dir.path("ck/events.jsonl")));
  EXPECT_TRUE(std::filesystem::exists(dir.path("h.db")));
#else
  ASSERT_FALSE(coordinator.ok());
  EXPECT_NE(coordinator.status().message().find("key 'output.history'"), std::string::npos);
  EXPECT_EQ(exit_status, 2);
#endif
}

// A coordinator that cannot listen (the port is taken) has started its run: the run ends failed,
// with the reason, in the event log (and the history), instead of staying "running" there.
TEST(CoordinatorAssemblyTest, APortInUseEndsTheStartedRunFailedWithTheReason) {
  TempDir dir;
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  ASSERT_GE(fd, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
  ASSERT_EQ(::listen(fd, 1), 0);
  socklen_t len = sizeof(addr);
  ASSERT_EQ(::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len), 0);
  CoordinatorConfig c = Config(dir, /*tls=*/true);
  c.listen = "127.0.0.1:" + std::to_string(ntohs(addr.sin_port));
  Result<std::unique_ptr<Coordinator>> coordinator = Coordinator::Assemble(c, {}, nullptr);
  ASSERT_TRUE(coordinator.ok()) << coordinator.status();
  const Status served = (*coordinator)->Serve();
  ::close(fd);
  ASSERT_FALSE(served.ok());
  EXPECT_NE(served.message().find("listen on " + c.listen), std::string::npos) << served;
  std::ifstream events(dir.path("ck/events.jsonl"));
  std::string line, last;
  int started = 0;
  while (std::getline(events, line)) {
    if (line.find("\"run_started\"") != std::string::npos) ++started;
    if (!line.empty()) last = line;
  }
  EXPECT_EQ(started, 1);
  EXPECT_NE(last.find("\"run_finished\""), std::string::npos) << last;
  EXPECT_NE(last.find("\"ok\":false"), std::string::npos) << last;
  EXPECT_NE(last.find("listen on " + c.listen), std::string::npos) << last;
}

TEST(CoordinatorAssemblyTest, RefusalsNameTheKeyWithTheConfigurationsExitStatus) {
  TempDir dir;
  int exit_status = 0;
  CoordinatorConfig bad_monitor = Config(dir, /*tls=*/true);
  bad_monitor.monitor_listen = "127.0.0.1:not-a-port";
  Result<std::unique_ptr<Coordinator>> c =
      Coordinator::Assemble(bad_monitor, Coordinator::Options{}, &exit_status);
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.status().message().find("key 'monitor.listen'"), std::string::npos) << c.status();
  EXPECT_EQ(exit_status, 2);

  exit_status = 0;
  Coordinator::Options resume;
  resume.resume = true;
  c = Coordinator::Assemble(Config(dir, true), resume, &exit_status);
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.status().message().find("there is no checkpoint in"), std::string::npos)
      << c.status();
  EXPECT_EQ(exit_status, 2);

  exit_status = 0;
  CoordinatorConfig bad_model = Config(dir, true);
  bad_model.run.model = "no-such-model";
  c = Coordinator::Assemble(bad_model, Coordinator::Options{}, &exit_status);
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.status().message().find("key 'run.model'"), std::string::npos) << c.status();
  EXPECT_EQ(exit_status, 2);
}

// Issue 28: a second coordinator on the same output.checkpoint_dir, or the same event log
// elsewhere, is refused (exit status 1) naming the first's pid; once the first is gone it starts.
TEST(CoordinatorAssemblyTest, ASecondCoordinatorOnTheSameOutputsIsRefusedNamingTheFirst) {
  TempDir dir;
  int exit_status = 0;
  const CoordinatorConfig c = Config(dir, /*tls=*/true);
  Result<std::unique_ptr<Coordinator>> first =
      Coordinator::Assemble(c, Coordinator::Options{}, &exit_status);
  ASSERT_TRUE(first.ok()) << first.status();
  EXPECT_TRUE(std::filesystem::exists(dir.path("ck/LOCK")));

  Result<std::unique_ptr<Coordinator>> second =
      Coordinator::Assemble(c, Coordinator::Options{}, &exit_status);
  ASSERT_FALSE(second.ok());
  EXPECT_EQ(second.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(exit_status, 1);
  const std::string message = second.status().message();
  std::printf("second: %s\n", message.c_str());
  EXPECT_NE(message.find("output.checkpoint_dir " + dir.path("ck") + " is in use by another run"),
            std::string::npos)
      << message;
  EXPECT_NE(message.find("pid " + std::to_string(::getpid()) + " on host"), std::string::npos)
      << message;
  // Resuming is refused just the same, before the checkpoint is read.
  Coordinator::Options resume;
  resume.resume_or_start = true;
  EXPECT_EQ(Coordinator::Assemble(c, resume, &exit_status).status().code(),
            StatusCode::kFailedPrecondition);

  // Another checkpoint dir, but the first's event log: refused, naming the key.
  CoordinatorConfig shares_log = c;
  shares_log.run.checkpoint_dir = dir.path("ck2");
  shares_log.run.event_log = dir.path("logs/events.jsonl");
  CoordinatorConfig owns_log = c;
  owns_log.run.checkpoint_dir = dir.path("ck3");
  owns_log.run.event_log = dir.path("logs/events.jsonl");
  owns_log.run.final_model = dir.path("models/final.safetensors");
  first->reset();  // the first is gone: its lock with it
  Result<std::unique_ptr<Coordinator>> third =
      Coordinator::Assemble(owns_log, Coordinator::Options{}, &exit_status);
  ASSERT_TRUE(third.ok()) << third.status();
  EXPECT_TRUE(std::filesystem::exists(dir.path("logs/events.jsonl.lock")));
  EXPECT_TRUE(std::filesystem::exists(dir.path("models/final.safetensors.lock")));
  EXPECT_FALSE(std::filesystem::exists(dir.path("ck3/events.jsonl.lock")));
  CoordinatorConfig shares_model = c;
  shares_model.run.checkpoint_dir = dir.path("ck4");
  shares_model.run.final_model = dir.path("models/final.safetensors");
  Result<std::unique_ptr<Coordinator>> fifth =
      Coordinator::Assemble(shares_model, Coordinator::Options{}, &exit_status);
  ASSERT_FALSE(fifth.ok());
  EXPECT_NE(
      fifth.status().message().find("output.final_model " + dir.path("models/final.safetensors") +
                                    " is in use by another run"),
      std::string::npos)
      << fifth.status();
  Result<std::unique_ptr<Coordinator>> fourth =
      Coordinator::Assemble(shares_log, Coordinator::Options{}, &exit_status);
  ASSERT_FALSE(fourth.ok());
  EXPECT_NE(fourth.status().message().find("output.event_log " + dir.path("logs/events.jsonl") +
                                           " is in use by another run"),
            std::string::npos)
      << fourth.status();
  // The first's directory is free again: a coordinator on it starts.
  EXPECT_TRUE(Coordinator::Assemble(c, Coordinator::Options{}, &exit_status).ok());
}

TEST(CoordinatorAssemblyTest, MissingTlsFilesAreTheFileSystemsFaultNamingTheFile) {
  TempDir dir;
  int exit_status = 0;
  Result<std::unique_ptr<Coordinator>> c =
      Coordinator::Assemble(Config(dir, /*tls=*/false), Coordinator::Options{}, &exit_status);
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.status().message().find(dir.path("ca.crt")), std::string::npos) << c.status();
  EXPECT_EQ(exit_status, 1);
}

}  // namespace
}  // namespace tributary

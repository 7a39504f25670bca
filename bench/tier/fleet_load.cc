// fleet_load: many clients in one process, each with its own certificate, over real mutual TLS, to
// measure what one coordinator or one aggregator holds (docs/results.md, capacity of one process).
//
//   fleet_load --coordinator HOST:PORT[,HOST:PORT...] --ca-dir PKI --clients N --floats F
//              [--prefix load-] [--threads 1] [--in-flight 8] [--report-s 5]
//
// PKI is a `tributary-certs init` directory (ca.crt and ca.key): the harness mints client i's
// certificate (id PREFIX<i>) in memory, so a fleet of thousands needs no files. Client i connects
// to endpoint i mod E of the list (an aggregation tier: the clients spread evenly), says Hello with
// a model of one tensor "w" of F floats (the run's initial model must have that layout), echoes
// heartbeats at the Welcome's interval, and answers each TaskAssignment at once with the same
// small dense update (no training: what is measured is the serving side). At most --in-flight
// connects run at once (8: the listeners' default cap of handshakes from one address, and the
// harness is one address). A client whose connection is lost before Goodbye reconnects after 1 s.
//
// Prints, on stdout, one line when all N have been welcomed
//   fleet_load: joined N clients in S s (R joins/s)
// then every --report-s seconds a progress line, and at the end (every client told Goodbye, or
// SIGINT/SIGTERM)
//   fleet_load: done: N clients, T tasks answered, L connections lost, W s
// Exit status 0 when every client was told Goodbye, 1 otherwise.
#include <CLI/CLI.hpp>
#include <atomic>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/signal_set.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <chrono>
#include <cstdio>
#include <deque>
#include <fstream>
#include <memory>
#include <mutex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "compression/dense_codec.h"
#include "crypto/cert_authority.h"
#include "crypto/tls_context.h"
#include "protocol/messages.h"
#include "protocol/tls_transport.h"
#include "protocol/transport_util.h"

namespace tributary {
namespace {

namespace asio = boost::asio;
using Clock = std::chrono::steady_clock;

double Seconds(Clock::duration d) { return std::chrono::duration<double>(d).count(); }

Result<std::string> ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return Status::NotFound("cannot read " + path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

struct Fleet;

// One simulated client: its own TLS context (its certificate) and transport.
struct LoadClient : std::enable_shared_from_this<LoadClient> {
  Fleet* fleet = nullptr;
  std::string id;
  std::string endpoint;
  std::unique_ptr<TlsTransport> transport;
  std::shared_ptr<Connection> conn;
  std::unique_ptr<asio::steady_timer> timer;  // heartbeats, and the reconnect delay
  std::chrono::milliseconds heartbeat{0};
  uint64_t sequence = 0;
  bool welcomed_once = false;
  bool done = false;

  void Connect();
  void OnMessage(Message m);
  void OnClosed();
  void Beat();
};

struct Fleet {
  asio::io_context io;
  std::vector<std::shared_ptr<LoadClient>> clients;
  ClientCapabilities caps;
  SharedBytes update;
  uint64_t floats = 0;
  size_t in_flight_limit = 8;
  Clock::time_point start = Clock::now();

  std::mutex mu;
  size_t next_to_connect = 0;  // GUARDED_BY(mu)
  size_t in_flight = 0;        // GUARDED_BY(mu)
  std::atomic<uint64_t> welcomed{0}, tasks{0}, lost{0}, goodbyes{0};
  std::atomic<bool> joined_reported{false};

  // Starts connects while fewer than in_flight_limit are under way.
  void Pump() {
    std::vector<std::shared_ptr<LoadClient>> start_now;
    {
      std::lock_guard<std::mutex> lock(mu);
      while (in_flight < in_flight_limit && next_to_connect < clients.size()) {
        ++in_flight;
        start_now.push_back(clients[next_to_connect++]);
      }
    }
    for (auto& c : start_now) c->Connect();
  }
  void ConnectFinished() {
    {
      std::lock_guard<std::mutex> lock(mu);
      --in_flight;
    }
    Pump();
  }
  void Welcomed() {
    if (++welcomed == clients.size() && !joined_reported.exchange(true)) {
      const double s = Seconds(Clock::now() - start);
      std::printf("fleet_load: joined %zu clients in %.2f s (%.0f joins/s)\n", clients.size(), s,
                  static_cast<double>(clients.size()) / s);
      std::fflush(stdout);
    }
  }
  void Goodbye() {
    if (++goodbyes == clients.size()) io.stop();
  }
};

// Every handler of a client runs on its strand (the timer's executor), so a client's state is
// touched by one thread at a time however many threads run the io_context.
void LoadClient::Connect() {
  auto self = shared_from_this();
  transport->Connect(endpoint, [self](Result<std::shared_ptr<Connection>> c) {
    asio::post(self->timer->get_executor(), [self, c = std::move(c)]() mutable {
      if (!c.ok()) {
        std::fprintf(stderr, "fleet_load: %s: %s\n", self->id.c_str(),
                     c.status().ToString().c_str());
        if (!self->welcomed_once) self->fleet->ConnectFinished();
        return self->OnClosed();
      }
      self->conn = *c;
      const auto strand = self->timer->get_executor();
      self->conn->Start(
          [self, strand](Message m) {
            asio::post(strand,
                       [self, m = std::move(m)]() mutable { self->OnMessage(std::move(m)); });
          },
          [self, strand](Status) { asio::post(strand, [self] { self->OnClosed(); }); });
      self->conn->Send(Hello{kProtocolVersion, self->fleet->caps, "fleet_load"});
    });
  });
}

void LoadClient::OnMessage(Message m) {
  if (auto* w = std::get_if<Welcome>(&m)) {
    heartbeat = std::chrono::milliseconds(w->heartbeat_interval_ms);
    if (!welcomed_once) {
      welcomed_once = true;
      fleet->ConnectFinished();
      fleet->Welcomed();
    }
    if (heartbeat.count() > 0) Beat();
  } else if (auto* t = std::get_if<TaskAssignment>(&m)) {
    UpdateSubmission u;
    u.round = t->round;
    u.task_id = t->task_id;
    u.model_version = t->model_version;
    u.num_examples = fleet->caps.num_examples;
    u.update.codec = "dense";
    u.update.layout_fingerprint = fleet->caps.layout_fingerprint;
    u.update.num_floats = fleet->floats;
    u.update.bytes = fleet->update;
    conn->Send(std::move(u));
    ++fleet->tasks;
  } else if (std::holds_alternative<tributary::Goodbye>(m)) {
    done = true;
    timer->cancel();
    conn->Close();
  } else if (auto* e = std::get_if<Error>(&m)) {
    std::fprintf(stderr, "fleet_load: %s: error %u: %s\n", id.c_str(), e->code, e->message.c_str());
  }
}

void LoadClient::Beat() {
  timer->expires_after(heartbeat);
  timer->async_wait([self = shared_from_this()](const boost::system::error_code& ec) {
    if (ec || self->done || !self->conn) return;  // (a cancelled wait: operation_aborted)
    self->conn->Send(Heartbeat{++self->sequence, 0});
    self->Beat();
  });
}

void LoadClient::OnClosed() {
  timer->cancel();
  conn.reset();
  if (done) return fleet->Goodbye();
  ++fleet->lost;
  timer->expires_after(std::chrono::seconds(1));
  timer->async_wait([self = shared_from_this()](const boost::system::error_code& ec) {
    if (!ec) self->Connect();
  });
}

int Main(int argc, char** argv) {
  CLI::App app{"fleet_load: many mutual-TLS clients in one process"};
  std::string coordinator, ca_dir, prefix = "load-";
  size_t clients = 0, threads = 1, in_flight = 8;
  uint64_t floats = 0;
  double report_s = 5;
  app.add_option("--coordinator", coordinator, "HOST:PORT, or several separated by commas")
      ->required();
  app.add_option("--ca-dir", ca_dir, "a tributary-certs directory (ca.crt, ca.key)")->required();
  app.add_option("--clients", clients, "clients to run")->required()->check(CLI::Range(1, 100000));
  app.add_option("--floats", floats, "floats of the run's model, one tensor 'w'")
      ->required()
      ->check(CLI::Range(1, 100'000'000));
  app.add_option("--prefix", prefix, "client ids are PREFIX<i>");
  app.add_option("--threads", threads, "I/O threads")->check(CLI::Range(1, 64));
  app.add_option("--in-flight", in_flight, "connects at once")->check(CLI::Range(1, 10000));
  app.add_option("--report-s", report_s, "seconds between progress lines")
      ->check(CLI::Range(0.1, 3600.0));
  CLI11_PARSE(app, argc, argv);

  Result<std::vector<std::string>> endpoints = SplitEndpoints(coordinator);
  if (!endpoints.ok()) {
    std::fprintf(stderr, "fleet_load: --coordinator: %s\n", endpoints.status().ToString().c_str());
    return 2;
  }
  Result<std::string> ca_cert = ReadFile(ca_dir + "/ca.crt");
  Result<std::string> ca_key = ReadFile(ca_dir + "/ca.key");
  if (!ca_cert.ok() || !ca_key.ok()) {
    std::fprintf(stderr, "fleet_load: %s\n",
                 (!ca_cert.ok() ? ca_cert.status() : ca_key.status()).ToString().c_str());
    return 2;
  }
  const PemPair ca{*ca_cert, *ca_key};

  Fleet fleet;
  fleet.floats = floats;
  fleet.in_flight_limit = in_flight;
  fleet.caps.device = "fleet_load";
  fleet.caps.codecs = {"dense"};
  fleet.caps.num_examples = 100;
  DeclareLayout(fleet.caps, ModelLayout{{"w", "F32", {static_cast<int64_t>(floats)}}});
  Result<std::vector<uint8_t>> encoded =
      DenseCodec().Encode(std::vector<float>(floats, 1e-3f), nullptr, 0);
  if (!encoded.ok()) {
    std::fprintf(stderr, "fleet_load: %s\n", encoded.status().ToString().c_str());
    return 1;
  }
  fleet.update = SharedBytes(std::move(*encoded));

  const Clock::time_point mint_start = Clock::now();
  for (size_t i = 0; i < clients; ++i) {
    auto c = std::make_shared<LoadClient>();
    c->fleet = &fleet;
    c->id = prefix + std::to_string(i);
    c->endpoint = (*endpoints)[i % endpoints->size()];
    Result<PemPair> cert = MakeClientCertificate(ca, c->id);
    if (!cert.ok()) {
      std::fprintf(stderr, "fleet_load: %s: %s\n", c->id.c_str(), cert.status().ToString().c_str());
      return 1;
    }
    Result<SslContextPtr> ctx =
        MakeClientTlsContext(TlsPem{ca.cert_pem, cert->cert_pem, cert->key_pem});
    if (!ctx.ok()) {
      std::fprintf(stderr, "fleet_load: %s\n", ctx.status().ToString().c_str());
      return 1;
    }
    TlsTransportOptions topts;
    topts.transport.handshake_timeout = std::chrono::seconds(60);
    topts.client_context = std::move(*ctx);
    Result<std::unique_ptr<TlsTransport>> t = TlsTransport::Create(fleet.io, std::move(topts));
    if (!t.ok()) {
      std::fprintf(stderr, "fleet_load: %s\n", t.status().ToString().c_str());
      return 1;
    }
    c->transport = std::move(*t);
    c->timer = std::make_unique<asio::steady_timer>(asio::make_strand(fleet.io));
    fleet.clients.push_back(std::move(c));
  }
  std::fprintf(stderr, "fleet_load: %zu certificates and TLS contexts made in %.2f s\n", clients,
               Seconds(Clock::now() - mint_start));

  auto work = asio::make_work_guard(fleet.io);
  asio::signal_set signals(fleet.io, SIGINT, SIGTERM);
  signals.async_wait([&](const boost::system::error_code& ec, int) {
    if (!ec) fleet.io.stop();
  });
  asio::steady_timer report(fleet.io);
  std::function<void()> tick = [&] {
    report.expires_after(std::chrono::duration_cast<std::chrono::milliseconds>(
        std::chrono::duration<double>(report_s)));
    report.async_wait([&](const boost::system::error_code& ec) {
      if (ec) return;
      std::printf("fleet_load: %.1f s: welcomed %llu, tasks %llu, lost %llu, goodbyes %llu\n",
                  Seconds(Clock::now() - fleet.start),
                  static_cast<unsigned long long>(fleet.welcomed.load()),
                  static_cast<unsigned long long>(fleet.tasks.load()),
                  static_cast<unsigned long long>(fleet.lost.load()),
                  static_cast<unsigned long long>(fleet.goodbyes.load()));
      std::fflush(stdout);
      tick();
    });
  };
  tick();
  fleet.start = Clock::now();
  fleet.Pump();
  std::vector<std::thread> pool;
  for (size_t i = 1; i < threads; ++i) pool.emplace_back([&] { fleet.io.run(); });
  fleet.io.run();
  for (auto& t : pool) t.join();
  std::printf("fleet_load: done: %zu clients, %llu tasks answered, %llu connections lost, %.1f s\n",
              clients, static_cast<unsigned long long>(fleet.tasks.load()),
              static_cast<unsigned long long>(fleet.lost.load()),
              Seconds(Clock::now() - fleet.start));
  std::fflush(stdout);
  const bool all = fleet.goodbyes.load() == clients;
  // The connections are left to the operating system: closing thousands gracefully would only
  // add to the time the caller waits.
  std::_Exit(all ? 0 : 1);
}

}  // namespace
}  // namespace tributary

int main(int argc, char** argv) { return tributary::Main(argc, argv); }

// tributary-aggregator: an aggregator of the aggregation tier (docs/tier.md): clients connect to
// it as to a coordinator, it connects to the coordinator with an aggregator certificate
// (`tributary-certs aggregator`), and it sends the coordinator the exact partial sums of its
// clients' updates.
//
//   tributary-aggregator --coordinator HOST:PORT --listen ADDR:PORT --ca ca.crt
//                        --cert aggregators/ID.crt --key aggregators/ID.key
//
// Prints a line per round it serves. Exits 0 when the coordinator ends its run, 1 when the run
// failed or the coordinator refused it, 2 for bad flags. SIGINT/SIGTERM stop it (its clients are
// told Goodbye and reconnect elsewhere).
#include <CLI/CLI.hpp>

#include <boost/asio/io_context.hpp>
#include <boost/asio/signal_set.hpp>
#include <boost/asio/steady_timer.hpp>
#include <cstdio>

#include "aggregator/aggregator_service.h"
#include "core/stderr_log.h"
#include "crypto/tls_context.h"
#include "protocol/tls_transport.h"
#include "protocol/transfer_budget.h"
#include "protocol/transport_util.h"
#include "tributary/config.h"

namespace tributary {
namespace {

int Fail(const Status& s, int code) {
  std::fprintf(stderr, "tributary-aggregator: %s\n", s.ToString().c_str());
  return code;
}

int Main(int argc, char** argv) {
  CLI::App app{
      "tributary-aggregator: serves clients for a coordinator and sends it their exact "
      "partial sums (the aggregation tier)"};
  AggregatorOptions o;
  std::string ca, cert, key, log_level = "info", ready_file;
  double heartbeat_s = 5, client_timeout_s = 30, flush_margin_s = 2, reconnect_s = 1,
         frame_timeout_s = 30;
  int64_t transfer_budget_mb = 1024, min_upload_rate_kib_s = 1;
  app.add_option("--coordinator", o.coordinator_address, "the coordinator, HOST:PORT")->required();
  app.add_option("--listen", o.listen_address, "where clients connect, ADDR:PORT")
      ->capture_default_str();
  app.add_option("--ca", ca, "the CA certificate (PEM)")->required();
  app.add_option("--cert", cert, "this aggregator's certificate (tributary-certs aggregator)")
      ->required();
  app.add_option("--key", key, "its private key")->required();
  app.add_option("--heartbeat-s", heartbeat_s, "heartbeat interval announced to clients")
      ->check(CLI::Range(0.1, 3600.0))
      ->capture_default_str();
  app.add_option("--client-timeout-s", client_timeout_s, "close a client silent this long")
      ->check(CLI::Range(1.0, 86400.0))
      ->capture_default_str();
  app.add_option("--flush-margin-s", flush_margin_s,
                 "send a round's partial sum this long before its deadline, whoever is missing")
      ->check(CLI::Range(0.0, 3600.0))
      ->capture_default_str();
  app.add_option("--reconnect-s", reconnect_s, "wait before reconnecting to the coordinator")
      ->check(CLI::Range(0.05, 3600.0))
      ->capture_default_str();
  app.add_option("--transfer-budget-mb", transfer_budget_mb,
                 "bytes all clients' partly received updates may hold")
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 20))
      ->capture_default_str();
  app.add_option("--min-upload-rate-kib-s", min_upload_rate_kib_s,
                 "KiB/s a partly received message must average (after a grace of "
                 "--frame-timeout-s) to keep its share of the transfer budget; 0: no minimum")
      ->check(CLI::Range(int64_t{0}, int64_t{1} << 20))
      ->capture_default_str();
  app.add_option("--frame-timeout-s", frame_timeout_s,
                 "a frame that started arriving must be whole, and a chunked message must gain "
                 "bytes, within this")
      ->check(CLI::Range(0.1, 3600.0))
      ->capture_default_str();
  app.add_option("--ready-file", ready_file,
                 "once listening for clients, write the bound ADDR:PORT here (for supervisors "
                 "and tests; with --listen ...:0 the port is a free one)");
  app.add_option("--log-level", log_level, "trace, debug, info, warn, error")
      ->capture_default_str();
  CLI11_PARSE(app, argc, argv);
  if (Status s = InitLogging(log_level); !s.ok()) return Fail(s, 2);
  // Checked now: a bad address was retried for ever (--coordinator) or noticed only after the
  // coordinator had welcomed the aggregator (--listen).
  if (o.coordinator_address.find(',') != std::string::npos)
    return Fail(Status::InvalidArgument("--coordinator '" + o.coordinator_address +
                                        "': one coordinator, HOST:PORT (an aggregator serves one "
                                        "run; its clients are the ones that fail over)"),
                2);
  for (const auto& [flag, address] :
       {std::pair<const char*, const std::string&>{"--coordinator", o.coordinator_address},
        {"--listen", o.listen_address}}) {
    if (auto hp = SplitHostPort(address); !hp.ok())
      return Fail(hp.status().WithContext(std::string(flag) + " '" + address + "'"), 2);
  }
  auto ms = [](double s) { return std::chrono::milliseconds(static_cast<int64_t>(s * 1000)); };
  o.heartbeat_interval = ms(heartbeat_s);
  o.client_timeout = ms(client_timeout_s);
  o.flush_margin = ms(flush_margin_s);
  o.reconnect_delay = ms(reconnect_s);
  o.software_version = TRIBUTARY_VERSION;

  // One certificate for both sides: a server's for the clients, a client's for the coordinator.
  Result<SslContextPtr> server = MakeServerTlsContext(TlsConfig{ca, cert, key});
  if (!server.ok()) return Fail(server.status(), 1);
  Result<SslContextPtr> client = MakeClientTlsContext(TlsConfig{ca, cert, key});
  if (!client.ok()) return Fail(client.status(), 1);
  boost::asio::io_context io;
  TlsTransportOptions topts;
  topts.server_context = *server;
  topts.client_context = *client;
  topts.transport.transfer_budget =
      std::make_shared<TransferBudget>(static_cast<uint64_t>(transfer_budget_mb) << 20);
  topts.transport.min_message_rate = static_cast<uint64_t>(min_upload_rate_kib_s) << 10;
  topts.transport.frame_read_timeout = ms(frame_timeout_s);
  topts.transport.budget_wait_keepalive = o.heartbeat_interval;  // as the coordinator's
  Result<std::unique_ptr<TlsTransport>> transport = TlsTransport::Create(io, topts);
  if (!transport.ok()) return Fail(transport.status(), 1);

  auto service = std::make_shared<AggregatorService>(io, **transport, **transport, o);
  Status result = Status::Aborted("not finished");
  service->set_on_finished([&](Status s) {
    result = s;
    // Stops once every client has its Goodbye (on_closed); the timer only bounds the wait.
    auto timer = std::make_shared<boost::asio::steady_timer>(io, std::chrono::seconds(5));
    timer->async_wait([&io, timer](const boost::system::error_code&) { io.stop(); });
  });
  service->set_on_closed([&io] { io.stop(); });
  if (!ready_file.empty()) {
    service->set_on_listening([ready_file](const std::string& address) {
      const std::string tmp = ready_file + ".tmp";
      if (FILE* f = std::fopen(tmp.c_str(), "w")) {
        std::fprintf(f, "%s\n", address.c_str());
        std::fclose(f);
        std::rename(tmp.c_str(), ready_file.c_str());
      }
    });
  }
  boost::asio::signal_set signals(io, SIGINT, SIGTERM);
  signals.async_wait([&](const boost::system::error_code& ec, int) {
    if (!ec) service->Stop("the aggregator is stopping");
  });
  service->Start();
  io.run();
  if (!result.ok()) return Fail(result, 1);
  return 0;
}

}  // namespace
}  // namespace tributary

int main(int argc, char** argv) {
  try {
    return tributary::Main(argc, argv);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "tributary-aggregator: error: %s\n", e.what());
    return 1;
  }
}

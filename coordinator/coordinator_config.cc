#include "coordinator/coordinator_config.h"

#include <fmt/format.h>

#include <filesystem>

namespace tributary {

CoordinatorConfig::CoordinatorConfig() { run.checkpoint_dir = "runs/coordinator"; }

void BindCoordinatorConfig(ConfigSchema& s, CoordinatorConfig* c) {
  s.Bind("log_level", &c->log_level, "trace, debug, info, warn or error").Flag("--log-level");
  s.Bind("net.listen", &c->listen, "host:port to accept clients on (port 0: any free port)")
      .Flag("--listen");
  s.Bind("net.heartbeat_interval_s", &c->heartbeat_interval,
         "how often clients send a heartbeat (announced in Welcome)");
  s.Bind("net.client_timeout_s", &c->client_timeout, "a connection silent this long is closed");
  s.Bind("net.max_handshakes_per_address", &c->max_handshakes_per_address,
         "TLS handshakes in progress at once from one source address (raise for many clients "
         "behind one NAT)");
  s.Bind("net.transfer_budget_mb", &c->transfer_budget_mb,
         "MiB all connections may hold in partly received updates; over it, uploads wait");
  s.Bind("net.min_upload_rate_kib_s", &c->min_upload_rate_kib_s,
         "KiB/s a partly received update must average (after a grace of net.frame_timeout_s) "
         "to keep its share of the transfer budget (0: no minimum)");
  s.Bind("net.frame_timeout_s", &c->frame_timeout,
         "a frame that started arriving must be whole, and a chunked update must gain bytes, "
         "within this (seconds)");
  s.Bind("eval.threads", &c->eval_threads, "threads of server-side evaluation (0: one per core)");
  s.Bind("tls.ca", &c->tls_ca, "CA certificate (PEM); required").Flag("--ca").Path();
  s.Bind("tls.cert", &c->tls_cert, "the coordinator's certificate (PEM); required")
      .Flag("--cert")
      .Path();
  s.Bind("tls.key", &c->tls_key, "the coordinator's private key (PEM); required")
      .Flag("--key")
      .Path();
  s.Bind("tls.deny_list", &c->deny_list, "file of revoked client ids, one per line").Path();
  s.Bind("output.ready_file", &c->ready_file,
         "written once listening: the clients' host:port, then monitor=host:port with a monitor")
      .Flag("--ready-file")
      .Path();
  s.Bind("monitor.listen", &c->monitor_listen,
         "host:port (an IP address) serving Prometheus metrics at /metrics (\"\": off)")
      .Flag("--monitor-listen");
  s.Bind("monitor.token", &c->monitor_token,
         "bearer token the monitor requires (\"\": none; required off loopback)")
      .Secret();
  MonitorLimits* m = &c->monitor_limits;
  s.Bind("monitor.max_connections", &m->max_connections,
         "monitor requests open at once (dashboard streams are not counted)");
  s.Bind("monitor.max_connections_per_address", &m->max_connections_per_address,
         "monitor connections (requests and streams) open at once from one source address");
  s.Bind("monitor.max_streams", &m->max_streams, "dashboard viewers (event streams) at once");
  s.Bind("monitor.first_byte_timeout_s", &m->first_byte_timeout,
         "a monitor connection that sends nothing this long is closed");
  s.Bind("monitor.request_timeout_s", &m->request_timeout,
         "a monitor request's header must have arrived this long after connecting");
  s.Bind("monitor.stream_stall_timeout_s", &m->stream_stall_timeout,
         "a dashboard viewer that reads nothing this long while data waits for it is dropped");
  s.Bind("monitor.stream_send_buffer_kb", &m->stream_send_buffer_kb,
         "KiB the kernel may buffer for one dashboard viewer (0: the kernel's own, megabytes)");
  s.Bind("monitor.linger_s", &c->monitor_linger,
         "after the run, the monitor serves its final state this long before the coordinator "
         "exits (at least the scrape interval; 0: exit at once)");
  BindRunConfig(s, &c->run);
  BindDataConfig(s, &c->data, /*partitioned=*/false);
  s.Rename("listen", "net.listen");
  s.Rename("run.heartbeat_interval_s", "net.heartbeat_interval_s");
  s.Rename("run.client_timeout_s", "net.client_timeout_s");
  s.Rename("eval.data_dir", "data.dir");
  s.Rename("eval.max_examples", "data.test_examples");
}

void CoordinatorConfig::ResolveOutputs() {
  const std::filesystem::path dir(run.checkpoint_dir);
  if (run.event_log.empty()) run.event_log = (dir / "events.jsonl").string();
  if (run.final_model.empty()) run.final_model = (dir / "final.safetensors").string();
}

namespace {

bool IsLoopback(const std::string& listen) {
  return listen.rfind("127.", 0) == 0 || listen.rfind("[::1]:", 0) == 0;
}

// "host:port" whose host is a name, not an IPv4 or bracketed IPv6 address.
bool HostIsAName(const std::string& listen) {
  if (listen.empty() || listen[0] == '[') return false;
  const std::string host = listen.substr(0, listen.rfind(':'));
  return host.find_first_not_of("0123456789.") != std::string::npos;
}

Status InRange(const char* key, int64_t value, int64_t lo, int64_t hi) {
  if (value >= lo && value <= hi) return Status::Ok();
  return Status::InvalidArgument(
      fmt::format("key '{}' = {} must be in [{}, {}]", key, value, lo, hi));
}

Status ValidateMonitorLimits(const MonitorLimits& m) {
  using std::chrono::milliseconds;
  TRIB_RETURN_IF_ERROR(InRange("monitor.max_connections", m.max_connections, 1, 4096));
  TRIB_RETURN_IF_ERROR(
      InRange("monitor.max_connections_per_address", m.max_connections_per_address, 1, 4096));
  TRIB_RETURN_IF_ERROR(InRange("monitor.max_streams", m.max_streams, 1, 4096));
  TRIB_RETURN_IF_ERROR(
      InRange("monitor.stream_send_buffer_kb", m.stream_send_buffer_kb, 0, 64 * 1024));
  if (m.request_timeout <= milliseconds(0) || m.request_timeout > milliseconds(300'000))
    return Status::InvalidArgument(
        fmt::format("key 'monitor.request_timeout_s' = {} s must be in (0, 300]",
                    m.request_timeout.count() / 1e3));
  if (m.first_byte_timeout <= milliseconds(0) || m.first_byte_timeout > m.request_timeout)
    return Status::InvalidArgument(
        fmt::format("key 'monitor.first_byte_timeout_s' = {} s must be in (0, "
                    "monitor.request_timeout_s = {} s]",
                    m.first_byte_timeout.count() / 1e3, m.request_timeout.count() / 1e3));
  if (m.stream_stall_timeout < milliseconds(1'000) ||
      m.stream_stall_timeout > milliseconds(3'600'000))
    return Status::InvalidArgument(
        fmt::format("key 'monitor.stream_stall_timeout_s' = {} s must be in [1, 3600]",
                    m.stream_stall_timeout.count() / 1e3));
  return Status::Ok();
}

}  // namespace

Status CoordinatorConfig::Validate() const {
  if (HostIsAName(monitor_listen))
    return Status::InvalidArgument("key 'monitor.listen' = '" + monitor_listen +
                                   "' needs an IP address (127.0.0.1:9090, 0.0.0.0:9090, "
                                   "[::1]:9090), not a host name");
  if (!monitor_listen.empty() && monitor_token.empty() && !IsLoopback(monitor_listen))
    return Status::InvalidArgument(
        "key 'monitor.listen' = '" + monitor_listen +
        "' is reachable from other machines: set 'monitor.token' (operators send it as "
        "Authorization: Bearer <token>), or listen on 127.0.0.1");
  TRIB_RETURN_IF_ERROR(ValidateMonitorLimits(monitor_limits));
  if (monitor_linger > std::chrono::milliseconds(3'600'000))  // the schema refuses < 0
    return Status::InvalidArgument(fmt::format("key 'monitor.linger_s' = {} s must be in [0, 3600]",
                                               monitor_linger.count() / 1e3));
  if (monitor_linger.count() > 0 && monitor_listen.empty())
    return Status::InvalidArgument(
        "key 'monitor.linger_s' keeps the monitor serving after the run, but monitor.listen is "
        "empty (no monitor)");
  if (tls_ca.empty() || tls_cert.empty() || tls_key.empty())
    return Status::InvalidArgument(
        "keys 'tls.ca', 'tls.cert' and 'tls.key' are required (mutual TLS is always on; make the "
        "files with tributary-certs, see docs/operations.md)");
  if (heartbeat_interval.count() <= 0 || client_timeout <= heartbeat_interval)
    return Status::InvalidArgument(
        "keys 'net.heartbeat_interval_s' and 'net.client_timeout_s' need 0 < heartbeat interval < "
        "client timeout");
  if (max_handshakes_per_address < 1 || max_handshakes_per_address > 4096)
    return Status::InvalidArgument(
        fmt::format("key 'net.max_handshakes_per_address' = {} must be in [1, 4096]",
                    max_handshakes_per_address));
  if (transfer_budget_mb < 1 || transfer_budget_mb > (int64_t{1} << 20))
    return Status::InvalidArgument(fmt::format(
        "key 'net.transfer_budget_mb' = {} must be in [1, 1048576]", transfer_budget_mb));
  if (min_upload_rate_kib_s < 0 || min_upload_rate_kib_s > (int64_t{1} << 20))
    return Status::InvalidArgument(
        fmt::format("key 'net.min_upload_rate_kib_s' = {} must be in [0, 1048576] (0: no minimum)",
                    min_upload_rate_kib_s));
  if (frame_timeout.count() < 100 || frame_timeout > std::chrono::hours(1))
    return Status::InvalidArgument(
        fmt::format("key 'net.frame_timeout_s' = {} must be in [0.1, 3600]",
                    static_cast<double>(frame_timeout.count()) / 1000));
  if (eval_threads < 0 || eval_threads > 1024)
    return Status::InvalidArgument(fmt::format(
        "key 'eval.threads' = {} must be in [0, 1024] (0: one per core)", eval_threads));
  if (run.checkpoint_dir.empty())
    return Status::InvalidArgument("key 'output.checkpoint_dir' must name a directory");
  TRIB_RETURN_IF_ERROR(run.Validate());
  return data.Validate();
}

}  // namespace tributary

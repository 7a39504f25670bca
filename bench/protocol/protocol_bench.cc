// Protocol throughput:
//   BM_EncodeDecodeUpdate     encode + decode of an UpdateSubmission carrying a 10M-float update
//                             (40 MB), reusing buffers as a steady-state peer does and decoding
//                             as a receiver does (the update points into the body); bytes/s over
//                             the update bytes (target >= 2 GB/s)
//   BM_EncodeDecodeUpdateFresh  fresh buffers each time, and a decode that copies the update out
//                             (DecodeMessageBody without an owner): page faults included
//   BM_FrameAndReassemble     the same through EncodeOutbound + MessageReader (1 MiB chunks): the
//                             path a connection takes, where the update's bytes are framed in
//                             place and the decoded update points into the reassembled buffer
//   BM_EncodeDecodeModel      a TaskAssignment carrying a 10M-float model (ModelPayload floats),
//                             reusing buffers
//   BM_TransferLoopback/tls   a 64 MiB update sent client -> server over loopback mutual TLS in
//                             chunks, timed until the server's acknowledgement arrives; each end
//                             has its own io_context and I/O thread, as two processes would (both
//                             share this machine's cores); bytes/s over the update bytes
//   BM_TransferLoopback/mem   the same over InMemoryTransport
//   BM_TcpLoopback            the kernel's share: 64 MiB over a plain loopback TCP connection in
//                             1 MiB writes, acknowledged with one byte (no TLS, no framing); the
//                             ceiling any transport over loopback TCP on this machine can reach
// bench/protocol/run.sh runs this next to `openssl speed -evp aes-128-gcm` on one core and prints
// the TLS transfer rate as a fraction of it.
#include <benchmark/benchmark.h>

#include <time.h>

#include <algorithm>
#include <atomic>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/read.hpp>
#include <boost/asio/write.hpp>
#include <condition_variable>
#include <mutex>
#include <optional>
#include <thread>

#include "bench/protocol/connect_wait.h"
#include "core/check.h"
#include "crypto/cert_authority.h"
#include "crypto/tls_context.h"
#include "protocol/frame.h"
#include "protocol/in_memory_transport.h"
#include "protocol/message_codec.h"
#include "protocol/message_reader.h"
#include "protocol/tls_transport.h"

namespace tributary {
namespace {

constexpr size_t kUpdateFloats = 10'000'000;

UpdateSubmission MakeUpdate(size_t bytes) {
  UpdateSubmission u;
  u.round = 7;
  u.num_examples = 600;
  u.metrics = {{"train_loss", 0.3}};
  u.update.codec = "dense";
  u.update.num_floats = bytes / 4;
  std::vector<uint8_t> data(bytes);
  for (size_t i = 0; i < bytes; ++i) data[i] = static_cast<uint8_t>(i * 131);
  u.update.bytes = std::move(data);
  return u;
}

// Steady state: one update after another through the same buffer. The encoder reuses the body
// vector's capacity; the decoder is handed the body as its owner, as MessageReader hands over a
// reassembled body, so the update's bytes are not copied out. (The message is dropped before the
// next encode, as a coordinator drops an update once it is aggregated.)
void BM_EncodeDecodeUpdate(benchmark::State& state) {
  const Message m = MakeUpdate(kUpdateFloats * 4);
  auto body = std::make_shared<std::vector<uint8_t>>();
  Message back;
  for (auto _ : state) {
    back = Message();
    TRIB_CHECK(body.use_count() == 1);
    TRIB_CHECK(EncodeMessageBodyInto(m, body.get()).ok());
    TRIB_CHECK(DecodeMessageBodySharing(MessageType::kUpdateSubmission, body, *body, &back).ok());
    benchmark::DoNotOptimize(std::get<UpdateSubmission>(back).update.bytes.data());
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * kUpdateFloats * 4));
}
BENCHMARK(BM_EncodeDecodeUpdate)->Unit(benchmark::kMillisecond)->UseRealTime();

// Cold: fresh 40 MB buffers every time, so page faults are part of the cost.
void BM_EncodeDecodeUpdateFresh(benchmark::State& state) {
  const Message m = MakeUpdate(kUpdateFloats * 4);
  for (auto _ : state) {
    Result<std::vector<uint8_t>> body = EncodeMessageBody(m);
    TRIB_CHECK(body.ok());
    Result<Message> back = DecodeMessageBody(MessageType::kUpdateSubmission, *body);
    TRIB_CHECK(back.ok());
    benchmark::DoNotOptimize(std::get<UpdateSubmission>(*back).update.bytes.data());
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * kUpdateFloats * 4));
}
BENCHMARK(BM_EncodeDecodeUpdateFresh)->Unit(benchmark::kMillisecond)->UseRealTime();

void BM_FrameAndReassemble(benchmark::State& state) {
  const Message m = MakeUpdate(kUpdateFloats * 4);
  ProtocolLimits limits;  // 1 MiB chunks, 4 MiB frame cap, 1 GiB message cap
  for (auto _ : state) {
    Result<OutboundMessage> out = EncodeOutbound(m, limits, 1);
    TRIB_CHECK(out.ok());
    MessageReader reader(limits);
    std::vector<Message> got;
    // Feed frame by frame, as a connection would read them.
    for (const OutboundMessage::FrameRef& f : out->frames) {
      TRIB_CHECK(reader.Feed(std::span(f.header.data(), f.header_length), &got).ok());
      out->ForEachBodyPiece(f.body_offset, f.body_length, [&](const uint8_t* p, size_t n) {
        TRIB_CHECK(reader.Feed(std::span(p, n), &got).ok());
      });
    }
    TRIB_CHECK(got.size() == 1);
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * kUpdateFloats * 4));
}
BENCHMARK(BM_FrameAndReassemble)->Unit(benchmark::kMillisecond)->UseRealTime();

void BM_EncodeDecodeModel(benchmark::State& state) {
  TaskAssignment t;
  t.model.layout_fingerprint = 1;
  t.model.values.mutable_values().assign(kUpdateFloats, 0.5f);
  const Message m = t;
  std::vector<uint8_t> body;
  Message back;
  for (auto _ : state) {
    TRIB_CHECK(EncodeMessageBodyInto(m, &body).ok());
    TRIB_CHECK(DecodeMessageBodyInto(MessageType::kTaskAssignment, body, &back).ok());
    benchmark::DoNotOptimize(std::get<TaskAssignment>(back).model.values.data());
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * kUpdateFloats * 4));
}
BENCHMARK(BM_EncodeDecodeModel)->Unit(benchmark::kMillisecond)->UseRealTime();

// A server that acknowledges every UpdateSubmission with a Heartbeat, and one connected client.
class Loopback {
 public:
  explicit Loopback(bool tls) {
    TransportOptions options;
    options.limits.max_message_bytes = 256 << 20;
    if (tls) {
      PemPair ca = *MakeCaCertificate("bench CA");
      PemPair server = *MakeServerCertificate(ca, {"localhost"}, {"127.0.0.1"});
      PemPair client = *MakeClientCertificate(ca, "bench-client");
      server_ = std::move(*TlsTransport::Create(
          server_io_,
          {options, *MakeServerTlsContext(TlsPem{ca.cert_pem, server.cert_pem, server.key_pem}),
           nullptr}));
      client_ = std::move(*TlsTransport::Create(
          client_io_,
          {options, nullptr,
           *MakeClientTlsContext(TlsPem{ca.cert_pem, client.cert_pem, client.key_pem})}));
    } else {
      auto net = std::make_shared<InMemoryNetwork>();
      server_ = std::move(*InMemoryTransport::Create(server_io_, net, {options, "", 4 << 20}));
      client_ = std::move(
          *InMemoryTransport::Create(client_io_, net, {options, "bench-client", 4 << 20}));
    }
    listener_ = *server_->Listen(tls ? "127.0.0.1:0" : "", [](std::shared_ptr<Connection> c) {
      std::weak_ptr<Connection> weak = c;
      c->Start(
          [weak](Message m) {
            if (auto self = weak.lock(); self && std::holds_alternative<UpdateSubmission>(m)) {
              self->Send(Heartbeat{std::get<UpdateSubmission>(m).round, 0});
            }
          },
          [](Status) {});
    });
    // One I/O thread per end, as in two processes (a client and the coordinator).
    threads_.emplace_back([this] { server_io_.run(); });
    threads_.emplace_back([this] { client_io_.run(); });
    connection_ = ConnectAndWait(*client_, listener_->address());
    connection_->Start(
        [this](Message m) {
          if (std::holds_alternative<Heartbeat>(m)) {
            std::lock_guard<std::mutex> l(ack_mu_);
            ++acks_;
            ack_cv_.notify_all();
          }
        },
        [](Status) {});
  }

  ~Loopback() {
    connection_->Close();
    listener_->Stop();
    server_work_.reset();
    client_work_.reset();
    server_io_.stop();
    client_io_.stop();
    for (std::thread& t : threads_) t.join();
  }

  // Sends `m` and waits for the server's acknowledgement.
  void RoundTrip(const Message& m) {
    uint64_t want;
    {
      std::lock_guard<std::mutex> l(ack_mu_);
      want = acks_ + 1;
    }
    connection_->Send(m);
    std::unique_lock<std::mutex> l(ack_mu_);
    ack_cv_.wait(l, [&] { return acks_ >= want; });
  }

 private:
  using WorkGuard = boost::asio::executor_work_guard<boost::asio::io_context::executor_type>;
  boost::asio::io_context server_io_{1};
  boost::asio::io_context client_io_{1};
  std::optional<WorkGuard> server_work_{boost::asio::make_work_guard(server_io_)};
  std::optional<WorkGuard> client_work_{boost::asio::make_work_guard(client_io_)};
  std::vector<std::thread> threads_;
  std::unique_ptr<Transport> server_;
  std::unique_ptr<Transport> client_;
  std::shared_ptr<Listener> listener_;
  std::shared_ptr<Connection> connection_;
  std::mutex ack_mu_;
  std::condition_variable ack_cv_;
  uint64_t acks_ = 0;
};

double ProcessCpuSeconds() {
  timespec ts{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
}

// Reports wall-clock bytes/s (bytes_per_second) and, because the shared CI machine is often
// overloaded, also bytes per CPU-second of the whole process, all threads and both ends
// (cpu_bytes_per_second): what one core would move if this were the only work on it.
void BM_TransferLoopback(benchmark::State& state, bool tls) {
  const size_t bytes = size_t{64} << 20;
  const Message update = MakeUpdate(bytes);
  Loopback loop(tls);
  loop.RoundTrip(update);  // warm up (first allocation of the big buffers)
  const double cpu_start = ProcessCpuSeconds();
  for (auto _ : state) loop.RoundTrip(update);
  const double cpu = ProcessCpuSeconds() - cpu_start;
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * bytes));
  state.counters["cpu_bytes_per_second"] =
      static_cast<double>(state.iterations() * bytes) / std::max(cpu, 1e-9);
}
// Plain TCP over loopback, blocking sockets, one thread per end.
void BM_TcpLoopback(benchmark::State& state) {
  namespace asio = boost::asio;
  using asio::ip::tcp;
  const size_t bytes = size_t{64} << 20;
  const size_t write_bytes = size_t{1} << 20;
  asio::io_context io;
  tcp::acceptor acceptor(io, tcp::endpoint(asio::ip::make_address("127.0.0.1"), 0));
  tcp::socket sender(io);
  sender.connect(acceptor.local_endpoint());
  tcp::socket receiver = acceptor.accept();
  std::vector<uint8_t> out(bytes, 0x5a);
  std::vector<uint8_t> in(bytes);
  std::atomic<bool> stop{false};
  std::thread sink([&] {
    uint8_t ack = 1;
    while (!stop.load()) {
      boost::system::error_code ec;
      asio::read(receiver, asio::buffer(in), ec);
      if (ec) return;
      asio::write(receiver, asio::buffer(&ack, 1), ec);
      if (ec) return;
    }
  });
  auto round_trip = [&] {
    for (size_t off = 0; off < bytes; off += write_bytes) {
      asio::write(sender, asio::buffer(out.data() + off, std::min(write_bytes, bytes - off)));
    }
    uint8_t ack = 0;
    asio::read(sender, asio::buffer(&ack, 1));
  };
  round_trip();  // warm up
  const double cpu_start = ProcessCpuSeconds();
  for (auto _ : state) round_trip();
  const double cpu = ProcessCpuSeconds() - cpu_start;
  stop.store(true);
  sender.shutdown(tcp::socket::shutdown_both);
  sender.close();
  sink.join();
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * bytes));
  state.counters["cpu_bytes_per_second"] =
      static_cast<double>(state.iterations() * bytes) / std::max(cpu, 1e-9);
}
BENCHMARK(BM_TcpLoopback)->Unit(benchmark::kMillisecond)->UseRealTime();

BENCHMARK_CAPTURE(BM_TransferLoopback, tls, true)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK_CAPTURE(BM_TransferLoopback, mem, false)->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace
}  // namespace tributary

BENCHMARK_MAIN();

// Memory of idle mutual-TLS connections, the coordinator's steady state between rounds: N clients
// connect to one TlsTransport listener, each exchanges a Hello (echoed), and then all sit idle.
// Both ends live in this process, so the figure per connection covers a client side and a server
// side (a TlsStream, its SSL, a FramedConnection and their buffers on each).
//
//   idle_connections [N] [idle]    (default 500; `idle`: stop after the idle figures, for a heap
//                                   profiler whose peak should be the idle state)
//
// Prints the RSS before and after, and the growth per connection. Then it streams one 16 MiB
// update over one of the connections and prints RSS again: the large TLS read buffer and the
// reassembly buffer come back when that connection goes quiet.
#include <malloc.h>

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "bench/protocol/connect_wait.h"
#include "core/check.h"
#include "core/process_stats.h"
#include "crypto/cert_authority.h"
#include "crypto/tls_context.h"
#include "protocol/tls_transport.h"

namespace tributary {
namespace {

// Counts messages echoed back to the clients.
struct Echoes {
  std::mutex mu;
  std::condition_variable cv;
  uint64_t count = 0;
  void Add() {
    std::lock_guard<std::mutex> l(mu);
    ++count;
    cv.notify_all();
  }
  void WaitFor(uint64_t n) {
    std::unique_lock<std::mutex> l(mu);
    cv.wait(l, [&] { return count >= n; });
  }
};

double MiB(uint64_t bytes) { return static_cast<double>(bytes) / (1 << 20); }

int Run(int n, bool stream) {
  boost::asio::io_context io;
  auto work = boost::asio::make_work_guard(io);
  const PemPair ca = *MakeCaCertificate("idle CA");
  const PemPair server_cert = *MakeServerCertificate(ca, {"localhost"}, {"127.0.0.1"});
  const PemPair client_cert = *MakeClientCertificate(ca, "idle-client");
  TransportOptions options;
  options.handshake_timeout = std::chrono::seconds(60);
  auto server = std::move(*TlsTransport::Create(
      io, {options,
           *MakeServerTlsContext(TlsPem{ca.cert_pem, server_cert.cert_pem, server_cert.key_pem}),
           nullptr}));
  auto client = std::move(*TlsTransport::Create(
      io, {options, nullptr,
           *MakeClientTlsContext(TlsPem{ca.cert_pem, client_cert.cert_pem, client_cert.key_pem})}));
  std::mutex mu;
  std::vector<std::shared_ptr<Connection>> accepted, connections;
  std::shared_ptr<Listener> listener =
      *server->Listen("127.0.0.1:0", [&](std::shared_ptr<Connection> c) {
        std::weak_ptr<Connection> weak = c;
        c->Start(
            [weak](Message m) {
              if (auto self = weak.lock()) self->Send(m);
            },
            [](Status) {});
        std::lock_guard<std::mutex> l(mu);
        accepted.push_back(std::move(c));
      });
  std::vector<std::thread> threads;
  for (int i = 0; i < 2; ++i) threads.emplace_back([&] { io.run(); });

  Echoes echoes;
  auto connect_one = [&] {
    std::shared_ptr<Connection> c = ConnectAndWait(*client, listener->address());
    c->Start([&echoes](Message) { echoes.Add(); }, [](Status) {});
    Hello hello;
    hello.software_version = "idle";
    c->Send(hello);
    connections.push_back(std::move(c));
  };

  connect_one();  // warm up: contexts, first allocations
  echoes.WaitFor(1);
  malloc_trim(0);
  const uint64_t before = CurrentRssBytes();
  const size_t heap_before = mallinfo2().uordblks;
  for (int i = 0; i < n; ++i) {
    connect_one();
    if ((i + 1) % 100 == 0) std::fprintf(stderr, "connected %d/%d\n", i + 1, n);
  }
  echoes.WaitFor(static_cast<uint64_t>(n) + 1);
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  const uint64_t after = CurrentRssBytes();
  const size_t heap_after = mallinfo2().uordblks;
  std::printf("idle mutual-TLS connections: %d (both ends in this process)\n", n);
  std::printf("RSS before %.1f MiB, after %.1f MiB: %.1f KiB per connection (client + server)\n",
              MiB(before), MiB(after),
              static_cast<double>(after - before) / 1024.0 / static_cast<double>(n));
  std::printf("heap in use: %.1f KiB per connection (client + server)\n",
              static_cast<double>(heap_after - heap_before) / 1024.0 / static_cast<double>(n));

  // One connection streams a 16 MiB update, then goes quiet (a few heartbeats).
  if (!stream) {
    std::fflush(stdout);
    std::_Exit(0);  // what is allocated now is the idle state (a heap profiler's "leaks")
  }
  {
    UpdateSubmission big;
    big.update.bytes = std::vector<uint8_t>(16 << 20, 7);
    connections[0]->Send(big);
    echoes.WaitFor(static_cast<uint64_t>(n) + 2);
    const uint64_t peak = CurrentRssBytes();
    for (int i = 0; i < 8; ++i) connections[0]->Send(Heartbeat{1, static_cast<uint64_t>(i)});
    echoes.WaitFor(static_cast<uint64_t>(n) + 10);
    big = UpdateSubmission();
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    malloc_trim(0);
    std::printf(
        "after a 16 MiB update on one connection: %.1f MiB; after it went quiet: %.1f MiB\n",
        MiB(peak), MiB(CurrentRssBytes()));
  }

  for (auto& c : connections) c->Close();
  listener->Stop();
  work.reset();
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  io.stop();
  for (auto& t : threads) t.join();
  return 0;
}

}  // namespace
}  // namespace tributary

int main(int argc, char** argv) {
  const int n = argc > 1 ? std::atoi(argv[1]) : 500;
  const bool stream = argc <= 2 || std::string(argv[2]) != "idle";
  if (n <= 0 || argc > 3) {
    std::fprintf(stderr, "usage: %s [connections > 0] [idle]\n", argv[0]);
    return 2;
  }
  return tributary::Run(n, stream);
}

// Helpers for the transport tests: a PKI made in memory, io_context threads, a thread-safe inbox
// for a connection's messages, and a raw byte peer for sending hand-made frames.
#pragma once

#include <boost/asio/io_context.hpp>
#include <boost/asio/ssl/context.hpp>
#include <chrono>
#include <condition_variable>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "crypto/cert_authority.h"
#include "protocol/byte_stream.h"
#include "protocol/transport.h"

namespace tributary::testing {

using namespace std::chrono_literals;

// A CA, a server certificate for localhost / 127.0.0.1, and client certificates made on demand.
class TestPki {
 public:
  // Aborts the test binary (TRIB_CHECK) when OpenSSL cannot make the certificates.
  static const TestPki& Get();

  std::shared_ptr<boost::asio::ssl::context> ServerContext(bool require_client_cert = true) const;
  std::shared_ptr<boost::asio::ssl::context> ClientContext(const std::string& client_id) const;

  PemPair ca;
  PemPair server;

 private:
  mutable std::mutex mu_;
  mutable std::map<std::string, PemPair> clients_;
};

// Runs an io_context on `threads` threads until destroyed.
class IoThreads {
 public:
  explicit IoThreads(int threads = 2);
  ~IoThreads();
  boost::asio::io_context& io() { return io_; }
  void Stop();

 private:
  boost::asio::io_context io_;
  std::optional<boost::asio::executor_work_guard<boost::asio::io_context::executor_type>> work_;
  std::vector<std::thread> threads_;
};

// Collects what a connection delivers; the handlers may run on any thread.
class Inbox {
 public:
  Connection::MessageHandler OnMessage();
  Connection::CloseHandler OnClose();

  // Waits until at least n messages arrived; false on timeout.
  bool WaitForMessages(size_t n, std::chrono::milliseconds timeout = 10s);
  // The close status, or nullopt when the connection did not close within the timeout.
  std::optional<Status> WaitForClose(std::chrono::milliseconds timeout = 10s);
  std::vector<Message> messages();

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<Message> messages_;
  std::optional<Status> closed_;
};

// Waits for a Connect/Listen-style callback result.
template <class T>
class Waiter {
 public:
  std::function<void(T)> Callback() {
    return [this](T value) {
      std::lock_guard<std::mutex> lock(mu_);
      value_.emplace(std::move(value));
      cv_.notify_all();
    };
  }
  std::optional<T> Wait(std::chrono::milliseconds timeout = 10s) {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait_for(lock, timeout, [&] { return value_.has_value(); });
    return std::move(value_);
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::optional<T> value_;
};

// A raw byte peer over a ByteStream: writes hand-made bytes, reads until the other side closes.
class RawPeer {
 public:
  explicit RawPeer(std::unique_ptr<ByteStream> stream);
  ~RawPeer();

  // Writes all of `bytes`; the status of the write.
  Status Write(std::vector<uint8_t> bytes, std::chrono::milliseconds timeout = 10s);
  // Starts reading everything that arrives (call once).
  void StartReading();
  // Waits until the peer closed (eof or error); returns false on timeout.
  bool WaitClosed(std::chrono::milliseconds timeout = 10s);
  std::vector<uint8_t> received();

 private:
  struct State;
  std::shared_ptr<State> state_;
};

// Resident set size of this process in bytes (VmRSS from /proc/self/status).
size_t CurrentRssBytes();

}  // namespace tributary::testing

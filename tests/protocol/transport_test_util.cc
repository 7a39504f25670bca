#include "tests/protocol/transport_test_util.h"

#include <boost/asio/post.hpp>
#include <fstream>
#include <future>
#include <sstream>

#include "core/check.h"
#include "crypto/tls_context.h"

namespace tributary::testing {

namespace asio = boost::asio;

const TestPki& TestPki::Get() {
  static const TestPki* pki = [] {
    auto* p = new TestPki();
    Result<PemPair> ca = MakeCaCertificate("Tributary Test CA");
    TRIB_CHECK(ca.ok(), "test CA");
    p->ca = *ca;
    Result<PemPair> server = MakeServerCertificate(p->ca, {"localhost"}, {"127.0.0.1", "::1"});
    TRIB_CHECK(server.ok(), "test server certificate");
    p->server = *server;
    return p;
  }();
  return *pki;
}

std::shared_ptr<asio::ssl::context> TestPki::ServerContext(bool require_client_cert) const {
  Result<SslContextPtr> ctx = MakeServerTlsContext(
      TlsPem{ca.cert_pem, server.cert_pem, server.key_pem}, require_client_cert);
  TRIB_CHECK(ctx.ok(), "server TLS context");
  return *ctx;
}

std::shared_ptr<asio::ssl::context> TestPki::ClientContext(const std::string& client_id) const {
  PemPair pair;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = clients_.find(client_id);
    if (it == clients_.end()) {
      Result<PemPair> made = MakeClientCertificate(ca, client_id);
      TRIB_CHECK(made.ok(), "test client certificate");
      it = clients_.emplace(client_id, *made).first;
    }
    pair = it->second;
  }
  Result<SslContextPtr> ctx =
      MakeClientTlsContext(TlsPem{ca.cert_pem, pair.cert_pem, pair.key_pem});
  TRIB_CHECK(ctx.ok(), "client TLS context");
  return *ctx;
}

IoThreads::IoThreads(int threads) : work_(asio::make_work_guard(io_)) {
  for (int i = 0; i < threads; ++i) threads_.emplace_back([this] { io_.run(); });
}

IoThreads::~IoThreads() { Stop(); }

void IoThreads::Stop() {
  work_.reset();
  io_.stop();
  for (std::thread& t : threads_) {
    if (t.joinable()) t.join();
  }
}

Connection::MessageHandler Inbox::OnMessage() {
  return [this](Message m) {
    std::lock_guard<std::mutex> lock(mu_);
    messages_.push_back(std::move(m));
    cv_.notify_all();
  };
}

Connection::CloseHandler Inbox::OnClose() {
  return [this](Status s) {
    std::lock_guard<std::mutex> lock(mu_);
    closed_ = std::move(s);
    cv_.notify_all();
  };
}

bool Inbox::WaitForMessages(size_t n, std::chrono::milliseconds timeout) {
  std::unique_lock<std::mutex> lock(mu_);
  return cv_.wait_for(lock, timeout, [&] { return messages_.size() >= n; });
}

std::optional<Status> Inbox::WaitForClose(std::chrono::milliseconds timeout) {
  std::unique_lock<std::mutex> lock(mu_);
  cv_.wait_for(lock, timeout, [&] { return closed_.has_value(); });
  return closed_;
}

std::vector<Message> Inbox::messages() {
  std::lock_guard<std::mutex> lock(mu_);
  return messages_;
}

struct RawPeer::State : std::enable_shared_from_this<RawPeer::State> {
  std::unique_ptr<ByteStream> stream;
  std::mutex mu;
  std::condition_variable cv;
  std::vector<uint8_t> received;  // GUARDED_BY(mu)
  bool closed = false;            // GUARDED_BY(mu)
  bool reading = false;           // GUARDED_BY(mu)
  std::vector<uint8_t> buffer = std::vector<uint8_t>(16384);

  void DoRead() {
    stream->AsyncReadSome(asio::buffer(buffer), [self = shared_from_this()](
                                                    const boost::system::error_code& ec, size_t n) {
      std::lock_guard<std::mutex> lock(self->mu);
      self->received.insert(self->received.end(), self->buffer.begin(),
                            self->buffer.begin() + static_cast<long>(n));
      if (ec) {
        self->closed = true;
        self->reading = false;
        self->cv.notify_all();
        return;
      }
      asio::post(self->stream->executor(), [self] { self->DoRead(); });
    });
  }
};

RawPeer::RawPeer(std::unique_ptr<ByteStream> stream) : state_(std::make_shared<State>()) {
  state_->stream = std::move(stream);
}

RawPeer::~RawPeer() {
  // Close on the stream's strand and wait for the read loop to end before the stream goes away.
  auto closed = std::make_shared<std::promise<void>>();
  std::future<void> done = closed->get_future();
  asio::post(state_->stream->executor(), [s = state_, closed] {
    s->stream->Close();
    closed->set_value();
  });
  done.wait_for(5s);
  std::unique_lock<std::mutex> lock(state_->mu);
  state_->cv.wait_for(lock, 5s, [&] { return !state_->reading; });
}

Status RawPeer::Write(std::vector<uint8_t> bytes, std::chrono::milliseconds timeout) {
  auto data = std::make_shared<std::vector<uint8_t>>(std::move(bytes));
  auto done = std::make_shared<std::promise<Status>>();
  std::future<Status> result = done->get_future();
  asio::post(state_->stream->executor(), [s = state_, data, done] {
    s->stream->AsyncWrite({asio::buffer(*data)},
                          [data, done](const boost::system::error_code& ec, size_t) {
                            done->set_value(ec ? Status::IoError(ec.message()) : Status::Ok());
                          });
  });
  if (result.wait_for(timeout) != std::future_status::ready) {
    return Status::DeadlineExceeded("raw write did not finish");
  }
  return result.get();
}

void RawPeer::StartReading() {
  {
    std::lock_guard<std::mutex> lock(state_->mu);
    state_->reading = true;
  }
  asio::post(state_->stream->executor(), [s = state_] { s->DoRead(); });
}

bool RawPeer::WaitClosed(std::chrono::milliseconds timeout) {
  std::unique_lock<std::mutex> lock(state_->mu);
  return state_->cv.wait_for(lock, timeout, [&] { return state_->closed; });
}

std::vector<uint8_t> RawPeer::received() {
  std::lock_guard<std::mutex> lock(state_->mu);
  return state_->received;
}

size_t CurrentRssBytes() {
  std::ifstream in("/proc/self/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("VmRSS:", 0) == 0) {
      std::istringstream fields(line.substr(6));
      size_t kib = 0;
      fields >> kib;
      return kib * 1024;
    }
  }
  return 0;
}

}  // namespace tributary::testing

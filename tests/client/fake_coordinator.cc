#include "tests/client/fake_coordinator.h"

#include "core/check.h"

namespace tributary::testing {

FakeSession::FakeSession(std::shared_ptr<Connection> connection, FakeCoordinatorOptions options)
    : connection_(std::move(connection)), options_(options) {}

void FakeSession::Start() {
  // The handlers use `this`: FakeCoordinator owns the sessions and waits for each connection to
  // close before they go away.
  connection_->Start([this](Message m) { OnMessage(std::move(m)); },
                     [this](Status why) {
                       std::lock_guard<std::mutex> lock(mu_);
                       closed_ = std::move(why);
                       cv_.notify_all();
                     });
}

void FakeSession::OnMessage(Message m) {
  if (auto* hello = std::get_if<Hello>(&m)) {
    if (options_.refuse_with) {
      // Close once the Error is out: Close() called right here, on the connection's strand,
      // would run before the Send (which is posted) and the Error would never leave.
      connection_->Send(Error{static_cast<uint32_t>(*options_.refuse_with), "refused by the test"},
                        [c = connection_](const Status&) { c->Close(); });
    } else if (options_.answer_hello) {
      Welcome w;
      w.client_id = connection_->peer().id;
      w.software_version = "fake-coordinator";
      w.heartbeat_interval_ms = options_.heartbeat_interval_ms;
      connection_->Send(w);
    }
    std::lock_guard<std::mutex> lock(mu_);
    hello_ = *hello;
    cv_.notify_all();
    return;
  }
  if (auto* hb = std::get_if<Heartbeat>(&m); hb && options_.echo_heartbeats) connection_->Send(*hb);
  std::lock_guard<std::mutex> lock(mu_);
  if (std::holds_alternative<Heartbeat>(m)) {
    ++heartbeats_;
  } else {
    inbox_.push_back(std::move(m));
  }
  cv_.notify_all();
}

std::optional<Hello> FakeSession::hello() {
  std::lock_guard<std::mutex> lock(mu_);
  return hello_;
}

bool FakeSession::WaitHello(std::chrono::milliseconds timeout) {
  std::unique_lock<std::mutex> lock(mu_);
  return cv_.wait_for(lock, timeout, [&] { return hello_.has_value() || closed_.has_value(); }) &&
         hello_.has_value();
}

size_t FakeSession::heartbeats() {
  std::lock_guard<std::mutex> lock(mu_);
  return heartbeats_;
}

bool FakeSession::WaitForHeartbeats(size_t n, std::chrono::milliseconds timeout) {
  std::unique_lock<std::mutex> lock(mu_);
  return cv_.wait_for(lock, timeout, [&] { return heartbeats_ >= n; });
}

std::optional<Status> FakeSession::WaitClosed(std::chrono::milliseconds timeout) {
  std::unique_lock<std::mutex> lock(mu_);
  cv_.wait_for(lock, timeout, [&] { return closed_.has_value(); });
  return closed_;
}

std::unique_ptr<FakeCoordinator> FakeCoordinator::Start(Transport& transport,
                                                        const std::string& address,
                                                        FakeCoordinatorOptions options) {
  auto fc = std::unique_ptr<FakeCoordinator>(new FakeCoordinator());
  fc->options_ = options;
  FakeCoordinator* raw = fc.get();
  Result<std::shared_ptr<Listener>> l =
      transport.Listen(address, [raw](std::shared_ptr<Connection> c) {
        auto session = std::make_shared<FakeSession>(std::move(c), raw->options_);
        {
          std::lock_guard<std::mutex> lock(raw->mu_);
          raw->sessions_.push_back(session);
          raw->cv_.notify_all();
        }
        session->Start();
      });
  TRIB_CHECK(l.ok(), "fake coordinator listen");
  fc->listener_ = *l;
  return fc;
}

FakeCoordinator::~FakeCoordinator() {
  listener_->Stop();
  std::vector<std::shared_ptr<FakeSession>> sessions;
  {
    std::lock_guard<std::mutex> lock(mu_);
    sessions = sessions_;
  }
  for (auto& s : sessions) {
    s->Close();
    s->WaitClosed(std::chrono::seconds(5));
  }
}

std::shared_ptr<FakeSession> FakeCoordinator::WaitSession(size_t index,
                                                          std::chrono::milliseconds timeout) {
  std::shared_ptr<FakeSession> s;
  {
    std::unique_lock<std::mutex> lock(mu_);
    if (!cv_.wait_for(lock, timeout, [&] { return sessions_.size() > index; })) return nullptr;
    s = sessions_[index];
  }
  // Wait for its Hello, so the test starts from a welcomed session.
  s->WaitHello(timeout);
  return s;
}

size_t FakeCoordinator::session_count() {
  std::lock_guard<std::mutex> lock(mu_);
  return sessions_.size();
}

}  // namespace tributary::testing

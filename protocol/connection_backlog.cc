#include "protocol/connection_backlog.h"

#include <utility>

namespace tributary {

ConnectionBacklog::Ticket::Ticket(Ticket&& other) noexcept
    : owner_(std::move(other.owner_)), bytes_(std::exchange(other.bytes_, 0)) {}

ConnectionBacklog::Ticket& ConnectionBacklog::Ticket::operator=(Ticket&& other) noexcept {
  if (this != &other) {
    if (owner_) owner_->Release(bytes_);
    owner_ = std::move(other.owner_);
    bytes_ = std::exchange(other.bytes_, 0);
  }
  return *this;
}

ConnectionBacklog::Ticket::~Ticket() {
  if (owner_) owner_->Release(bytes_);
}

std::shared_ptr<ConnectionBacklog> ConnectionBacklog::Create(
    const std::shared_ptr<Connection>& connection, uint64_t cap_bytes) {
  return std::shared_ptr<ConnectionBacklog>(new ConnectionBacklog(connection, cap_bytes));
}

void ConnectionBacklog::Hold() {
  if (std::shared_ptr<Connection> c = connection_.lock()) c->HoldReading();
}

void ConnectionBacklog::Resume() {
  if (std::shared_ptr<Connection> c = connection_.lock()) c->ResumeReading();
}

ConnectionBacklog::Ticket ConnectionBacklog::Take(uint64_t bytes) {
  const uint64_t waiting = waiting_.fetch_add(bytes) + bytes;
  uint64_t peak = peak_.load();
  while (waiting > peak && !peak_.compare_exchange_weak(peak, waiting)) {
  }
  Ticket ticket(shared_from_this(), bytes);
  if (waiting <= cap_ || held_.load()) return ticket;
  // Holds and resumes are decided, and asked of the connection, under mu_, so they reach it in
  // the order decided: a resume decided before a hold never lands after it.
  std::lock_guard<std::mutex> lock(mu_);
  if (!held_.load() && waiting_.load() > 0) {
    Hold();
    held_.store(true);
    holds_.fetch_add(1);
  }
  return ticket;
}

void ConnectionBacklog::Release(uint64_t bytes) {
  if (waiting_.fetch_sub(bytes) != bytes) return;  // others still wait
  std::lock_guard<std::mutex> lock(mu_);
  // A ticket taken since then keeps the hold; its release resumes.
  if (held_.load() && waiting_.load() == 0) {
    Resume();
    held_.store(false);
  }
}

}  // namespace tributary

#include "protocol/framed_connection.h"

#include <algorithm>

#include <boost/asio/dispatch.hpp>
#include <boost/asio/error.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/ssl/error.hpp>
#include <optional>
#include <utility>

#include "core/log.h"
#include "protocol/tls_failure.h"
#include "protocol/transfer_budget.h"

namespace tributary {
namespace {

namespace asio = boost::asio;
using boost::system::error_code;

// Frame headers and small messages are read here; chunk data mostly goes straight into the
// reassembly buffer. An idle connection (heartbeats) reads into kIdleReadBufferBytes; a read that
// fills it means more is coming, and the next read gets kReadBufferBytes, until a read comes back
// short again. A fleet's idle connections each hold the small one.
constexpr size_t kIdleReadBufferBytes = 1024;
constexpr size_t kReadBufferBytes = 16 * 1024;
// While a chunk frame's data is expected, a read of at least this much goes straight into the
// reassembly buffer (MessageReader::ReadSpace), skipping the copy out of read_buffer_; a smaller
// tail is read with the next frame's header into read_buffer_.
constexpr size_t kMinDirectReadBytes = 16 * 1024;

// The peer ended the stream: a TLS close_notify or TCP FIN (eof), or a TCP FIN without
// close_notify (stream_truncated), which Beast also treats as a normal end.
bool IsEndOfStream(const error_code& ec) {
  return ec == asio::error::eof || ec == asio::ssl::error::stream_truncated;
}

std::string Ms(std::chrono::milliseconds d) { return std::to_string(d.count()) + " ms"; }

}  // namespace

FramedConnection::FramedConnection(std::unique_ptr<ByteStream> stream, PeerInfo peer,
                                   const TransportOptions& options, Origin origin)
    : stream_(std::move(stream)),
      strand_(stream_->executor()),
      peer_(std::move(peer)),
      options_(options),
      origin_(origin),
      reader_(options.limits),
      read_timer_(strand_),
      write_timer_(strand_),
      shutdown_timer_(strand_),
      budget_timer_(strand_),
      hold_timer_(strand_) {}

FramedConnection::~FramedConnection() = default;

void FramedConnection::Start(MessageHandler on_message, CloseHandler on_close) {
  asio::post(strand_, [self = shared_from_this(), on_message = std::move(on_message),
                       on_close = std::move(on_close)]() mutable {
    if (self->started_) return;
    self->started_ = true;
    if (self->state_ == State::kClosed) {  // closed before anyone listened
      if (on_close) on_close(self->close_reason_);
      return;
    }
    self->on_message_ = std::move(on_message);
    self->on_close_ = std::move(on_close);
    if (self->state_ == State::kOpen) self->do_read();
  });
}

namespace {

// An Error's or Goodbye's text longer than the wire allows (a refusal listing what a client
// offered, say) is cut to kMaxTextBytes rather than failing the encode, which would close the
// connection without telling the peer why. Null when `message` needs no cut.
std::optional<Message> WithTextThatFits(const Message& message) {
  if (const auto* e = std::get_if<Error>(&message); e && e->message.size() > kMaxTextBytes) {
    Error cut = *e;
    cut.message.resize(kMaxTextBytes);
    return Message(std::move(cut));
  }
  if (const auto* g = std::get_if<Goodbye>(&message); g && g->reason.size() > kMaxTextBytes) {
    Goodbye cut = *g;
    cut.reason.resize(kMaxTextBytes);
    return Message(std::move(cut));
  }
  return std::nullopt;
}

}  // namespace

void FramedConnection::Send(const Message& message, SendHandler done) {
  const std::optional<Message> cut = WithTextThatFits(message);
  Result<OutboundMessage> encoded =
      EncodeOutbound(cut ? *cut : message, options_.limits, next_transfer_id_.fetch_add(1));
  if (!encoded.ok()) {
    asio::post(strand_, [done = std::move(done), status = encoded.status()] {
      if (done) done(status);
    });
    return;
  }
  SendEncoded(std::make_shared<const OutboundMessage>(std::move(*encoded)), std::move(done));
}

void FramedConnection::SendEncoded(std::shared_ptr<const OutboundMessage> message,
                                   SendHandler done) {
  asio::post(strand_, [self = shared_from_this(), message = std::move(message),
                       done = std::move(done)]() mutable {
    if (!message || message->frames.empty()) {
      if (done) done(Status::InvalidArgument("SendEncoded needs a message from EncodeOutbound"));
      return;
    }
    if (self->state_ != State::kOpen) {
      if (done) done(Status::Aborted("connection to " + self->peer_.address + " is closed"));
      return;
    }
    self->enqueue(Outgoing{std::move(message), 0, std::move(done)});
  });
}

void FramedConnection::SetMaxMessageBytes(uint64_t max_bytes) {
  asio::dispatch(strand_, [self = shared_from_this(), max_bytes] {
    self->reader_.set_max_message_bytes(
        std::min(max_bytes, self->options_.limits.max_message_bytes));
  });
}

// Posted, never run inline: a hold asked on this strand must not overtake a resume already queued
// from another thread (ConnectionBacklog orders its calls; the strand keeps that order).
void FramedConnection::HoldReading() {
  asio::post(strand_, [self = shared_from_this()] { self->held_ = true; });
}

void FramedConnection::ResumeReading() {
  asio::post(strand_, [self = shared_from_this()] {
    if (!self->held_) return;
    self->held_ = false;
    if (!self->stopped_for_hold_ || self->state_ != State::kOpen) return;
    self->stopped_for_hold_ = false;
    self->hold_timer_.cancel();
    self->end_pause();
    self->update_read_deadline();
    self->do_read();  // the budget was settled before the hold (on_read, retry_budget)
  });
}

void FramedConnection::Close() {
  asio::dispatch(strand_, [self = shared_from_this()] {
    if (self->state_ != State::kOpen) return;
    self->state_ = State::kClosing;
    self->StopReadDeadlines();
    self->do_close();
  });
}

void FramedConnection::Reject(Status reason) {
  asio::post(strand_, [self = shared_from_this(), reason = std::move(reason)] {
    self->fail(reason, /*send_error=*/true);
  });
}

// ---- Reading

void FramedConnection::do_read() {
  reading_ = true;
  const std::span<uint8_t> space = reader_.ReadSpace();
  direct_read_ = space.size() >= kMinDirectReadBytes;
  if (!direct_read_) {
    const size_t want = read_filled_ ? kReadBufferBytes : kIdleReadBufferBytes;
    if (want != read_capacity_) {
      read_buffer_ = std::make_unique_for_overwrite<uint8_t[]>(want);
      read_capacity_ = want;
    }
  }
  stream_->AsyncReadSome(
      direct_read_ ? asio::buffer(space.data(), space.size())
                   : asio::buffer(read_buffer_.get(), read_capacity_),
      [self = shared_from_this()](const error_code& ec, size_t n) { self->on_read(ec, n); });
}

void FramedConnection::on_read(const error_code& ec, size_t n) {
  reading_ = false;
  if (state_ == State::kClosed) return;
  if (state_ == State::kClosing) return do_close();
  if (ec) {
    if (IsEndOfStream(ec)) {
      Status why;
      if (reader_.mid_frame() || reader_.mid_message()) {
        why = Status::Unavailable("peer " + peer_.address +
                                  " closed the connection in the middle of a message");
      }
      return fail(std::move(why), /*send_error=*/false);
    }
    if (close_reason_.ok()) {
      // A TLS alert refusing our certificate is PermissionDenied (tls_failure.h).
      close_reason_ = TlsFailureStatus(ec, "read from " + peer_.address);
    }
    return finish();
  }
  received_.clear();
  if (!direct_read_) read_filled_ = n == read_capacity_;
  const Status decoded = direct_read_ ? reader_.CommitRead(n, &received_)
                                      : reader_.Feed(std::span(read_buffer_.get(), n), &received_);
  for (Message& m : received_) {
    if (state_ != State::kOpen) break;  // a handler closed the connection
    if (std::holds_alternative<Heartbeat>(m)) heard_during_write_ = true;
    if (on_message_) on_message_(std::move(m));
  }
  received_.clear();
  if (!decoded.ok()) return fail(decoded, /*send_error=*/true);
  if (state_ != State::kOpen) return;
  update_read_deadline();
  // The budget first, so a held connection keeps no reservation for a message already delivered.
  if (!reserve_transfer()) return;    // paused until the budget has room (then held, if asked)
  if (held_) return stop_for_hold();  // ResumeReading goes on from here
  do_read();
}

bool FramedConnection::reserve_transfer() {
  TransferBudget* budget = options_.transfer_budget.get();
  if (!budget) return true;
  const uint64_t want = reader_.message_total();
  if (want == reserved_) return true;
  release_transfer();
  if (want == 0) return true;
  if (budget->TryReserve(want)) {
    reserved_ = want;
    return true;
  }
  // Said before the wait is counted, so whoever sees the count sees the connection waiting.
  waiting_for_budget_ = true;
  budget->CountWait();
  // Reading stops here by our choice, not the peer's: its frame deadline stops too, and starts
  // afresh when reading resumes (else a client queued behind others is dropped as too slow); the
  // minimum rate's clock does not run meanwhile.
  StopReadDeadlines();
  paused_at_ = keepalive_sent_ = std::chrono::steady_clock::now();
  budget_timer_.expires_after(std::chrono::milliseconds(10));
  budget_timer_.async_wait(
      [self = shared_from_this()](const error_code& e) { self->retry_budget(e); });
  return false;
}

void FramedConnection::retry_budget(const error_code& ec) {
  if (ec == asio::error::operation_aborted || state_ != State::kOpen) return;
  const uint64_t want = reader_.message_total();
  if (want != 0 && !options_.transfer_budget->TryReserve(want)) {
    keep_peer_alive(std::chrono::steady_clock::now());
    budget_timer_.expires_after(std::chrono::milliseconds(10));
    budget_timer_.async_wait(
        [self = shared_from_this()](const error_code& e) { self->retry_budget(e); });
    return;
  }
  reserved_ = want;
  end_pause();
  waiting_for_budget_ = false;
  if (held_) return stop_for_hold();
  update_read_deadline();
  do_read();
}

void FramedConnection::end_pause() {
  if (paused_at_ && message_started_)
    *message_started_ += std::chrono::steady_clock::now() - *paused_at_;
  paused_at_.reset();
}

void FramedConnection::stop_for_hold() {
  stopped_for_hold_ = true;
  StopReadDeadlines();
  paused_at_ = keepalive_sent_ = std::chrono::steady_clock::now();
  if (options_.budget_wait_keepalive.count() <= 0) return;
  hold_timer_.expires_after(options_.budget_wait_keepalive);
  hold_timer_.async_wait(
      [self = shared_from_this()](const error_code& e) { self->on_hold_keepalive(e); });
}

void FramedConnection::on_hold_keepalive(const error_code& ec) {
  if (ec == asio::error::operation_aborted || !stopped_for_hold_ || state_ != State::kOpen) return;
  send_keepalive(std::chrono::steady_clock::now());  // the timer keeps the spacing, without drift
  hold_timer_.expires_at(hold_timer_.expiry() + options_.budget_wait_keepalive);
  hold_timer_.async_wait(
      [self = shared_from_this()](const error_code& e) { self->on_hold_keepalive(e); });
}

void FramedConnection::keep_peer_alive(std::chrono::steady_clock::time_point now) {
  const std::chrono::milliseconds every = options_.budget_wait_keepalive;
  if (every.count() <= 0 || now - keepalive_sent_ < every) return;
  send_keepalive(now);
}

void FramedConnection::send_keepalive(std::chrono::steady_clock::time_point now) {
  keepalive_sent_ = now;
  const auto unix_ms = std::chrono::duration_cast<std::chrono::milliseconds>(
      std::chrono::system_clock::now().time_since_epoch());
  Send(Heartbeat{0, static_cast<uint64_t>(unix_ms.count())});
}

void FramedConnection::release_transfer() {
  if (reserved_ == 0) return;
  options_.transfer_budget->Release(reserved_);
  reserved_ = 0;
}

void FramedConnection::StopReadDeadlines() {
  frame_deadline_.reset();
  message_deadline_.reset();
  rate_deadline_.reset();
  if (read_deadline_armed_) {
    read_deadline_armed_ = false;
    read_timer_.cancel();
  }
}

void FramedConnection::update_read_deadline() {
  const auto now = std::chrono::steady_clock::now();
  // A frame must end within frame_read_timeout of the read that brought its first bytes.
  if (!reader_.mid_frame()) {
    frame_deadline_.reset();
  } else if (!frame_deadline_ || reader_.frames_decoded() != frames_at_deadline_) {
    frames_at_deadline_ = reader_.frames_decoded();
    frame_deadline_ = now + options_.frame_read_timeout;
  }
  // A chunked message must gain bytes within frame_read_timeout: frames between its chunks
  // (heartbeats) do not count, so its transfer reservation cannot be held by sending only those.
  if (!reader_.mid_message()) {
    message_deadline_.reset();
    message_started_.reset();
  } else {
    if (reader_.messages_begun() != message_number_) {
      // A new message (one may end and the next begin in one read): its clock starts now.
      message_number_ = reader_.messages_begun();
      message_started_ = now;
      message_deadline_.reset();
    }
    if (!message_deadline_ || reader_.message_received() != message_mark_) {
      message_mark_ = reader_.message_received();
      message_deadline_ = now + options_.frame_read_timeout;
    }
  }
  // A message holding a share of the transfer budget must keep to the minimum rate: the bytes
  // received so far buy received / rate seconds past the grace (mod_reqtimeout's MinRate).
  rate_deadline_.reset();
  if (message_started_ && options_.transfer_budget && options_.min_message_rate > 0) {
    const std::chrono::duration<double> bought(static_cast<double>(reader_.message_received()) /
                                               static_cast<double>(options_.min_message_rate));
    rate_deadline_ = *message_started_ + options_.frame_read_timeout +
                     std::chrono::duration_cast<std::chrono::steady_clock::duration>(bought);
  }
  std::optional<std::chrono::steady_clock::time_point> next = frame_deadline_;
  for (const auto& d : {message_deadline_, rate_deadline_})
    if (d && (!next || *d < *next)) next = d;
  if (!next) return StopReadDeadlines();  // neither is set
  if (read_deadline_armed_ && read_timer_.expiry() == *next) return;
  read_deadline_armed_ = true;
  read_timer_.expires_at(*next);
  read_timer_.async_wait(
      [self = shared_from_this()](const error_code& e) { self->on_read_deadline(e); });
}

void FramedConnection::on_read_deadline(const error_code& ec) {
  if (ec == asio::error::operation_aborted || state_ != State::kOpen || !read_deadline_armed_) {
    return;
  }
  const auto now = std::chrono::steady_clock::now();
  if (read_timer_.expiry() > now) return;  // re-armed meanwhile
  if (frame_deadline_ && *frame_deadline_ <= now) {
    return fail(ProtocolError(ErrorCode::kTimeout, "a frame from " + peer_.address +
                                                       " was not completed within " +
                                                       Ms(options_.frame_read_timeout)),
                /*send_error=*/true);
  }
  if (rate_deadline_ && *rate_deadline_ <= now && message_started_) {
    const double seconds = std::chrono::duration<double>(now - *message_started_).count();
    return fail(
        ProtocolError(
            ErrorCode::kTimeout,
            fmt::format("a chunked message from {} came slower than the minimum rate of "
                        "{} bytes/s after a grace of {}: {} of {} bytes in {:.1f} s",
                        peer_.address, options_.min_message_rate, Ms(options_.frame_read_timeout),
                        reader_.message_received(), reader_.message_total(), seconds)),
        /*send_error=*/true);
  }
  fail(ProtocolError(ErrorCode::kTimeout,
                     "a chunked message from " + peer_.address + " gained no bytes within " +
                         Ms(options_.frame_read_timeout) + " (" +
                         std::to_string(reader_.message_received()) + " of " +
                         std::to_string(reader_.message_total()) + " bytes received)"),
       /*send_error=*/true);
}

// ---- Writing

void FramedConnection::enqueue(Outgoing out) {
  queue_.push_back(std::move(out));
  do_write();
}

void FramedConnection::do_write() {
  if (writing_ || queue_.empty() || state_ == State::kClosed) return;
  size_t pick = 0;
  if (queue_[0].next_frame > 0) {  // mid-transfer: let a waiting Heartbeat go between chunks
    for (size_t i = 1; i < queue_.size(); ++i) {
      if (queue_[i].is_heartbeat() && queue_[i].next_frame == 0) {
        pick = i;
        break;
      }
    }
  }
  const Outgoing& out = queue_[pick];
  const OutboundMessage::FrameRef& f = out.message->frames[out.next_frame];
  std::vector<asio::const_buffer> buffers{asio::buffer(f.header.data(), f.header_length)};
  out.message->ForEachBodyPiece(f.body_offset, f.body_length, [&](const uint8_t* p, size_t n) {
    buffers.push_back(asio::buffer(p, n));
  });
  writing_ = true;
  writing_index_ = pick;
  in_flight_ = out.message;
  arm_write_deadline();
  stream_->AsyncWrite(
      std::move(buffers),
      [self = shared_from_this()](const error_code& ec, size_t n) { self->on_write(ec, n); });
}

void FramedConnection::on_write(const error_code& ec, size_t /*n*/) {
  writing_ = false;
  in_flight_.reset();
  write_timer_.cancel();
  if (state_ == State::kClosed) return;
  if (ec) {
    if (close_reason_.ok()) {
      close_reason_ = TlsFailureStatus(ec, "write to " + peer_.address);
    }
    return finish();
  }
  Outgoing& out = queue_[writing_index_];
  ++out.next_frame;
  const bool sent_all = out.next_frame == out.message->frames.size();
  if (sent_all || state_ != State::kOpen) {
    // While closing, a chunked message stops after the frame in flight (fail() dropped it).
    SendHandler done = std::move(out.done);
    queue_.erase(queue_.begin() + static_cast<std::ptrdiff_t>(writing_index_));
    if (done) {
      done(sent_all ? Status::Ok()
                    : Status::Aborted("connection to " + peer_.address +
                                      " closed in the middle of a message"));
    }
  }
  if (state_ == State::kOpen) return do_write();
  do_close();
}

void FramedConnection::arm_write_deadline() {
  heard_during_write_ = false;
  write_timer_.expires_after(options_.write_timeout);
  write_timer_.async_wait(
      [self = shared_from_this()](const error_code& ec) { self->on_write_deadline(ec); });
}

void FramedConnection::on_write_deadline(const error_code& ec) {
  if (ec == asio::error::operation_aborted || !writing_ || state_ == State::kClosed) return;
  if (write_timer_.expiry() > std::chrono::steady_clock::now()) return;
  // The server we dialed reads nothing from us but keeps telling us it is there: it waits for
  // its transfer budget (budget_wait_keepalive). Our frame goes when our turn comes.
  if (origin_ == Origin::kDialed && heard_during_write_ && state_ == State::kOpen) {
    return arm_write_deadline();
  }
  if (close_reason_.ok()) {
    close_reason_ =
        ProtocolError(ErrorCode::kTimeout, "writing a frame to " + peer_.address +
                                               " took longer than " + Ms(options_.write_timeout));
  }
  stream_->Close();  // the pending write (and read) complete with errors; on_write finishes
}

// ---- Closing

void FramedConnection::fail(Status reason, bool send_error) {
  if (state_ != State::kOpen) return;  // the first reason wins
  state_ = State::kClosing;
  close_reason_ = std::move(reason);
  StopReadDeadlines();
  // Drop what has not started; the frame in flight finishes (a stream cannot stop mid-frame).
  std::deque<Outgoing> dropped;
  dropped.swap(queue_);
  if (writing_) {
    queue_.push_back(std::move(dropped[writing_index_]));
    dropped.erase(dropped.begin() + static_cast<std::ptrdiff_t>(writing_index_));
    writing_index_ = 0;
  }
  for (Outgoing& out : dropped) {
    if (out.done) out.done(Status::Aborted("connection to " + peer_.address + " is closing"));
  }
  if (send_error && !close_reason_.ok()) {
    const Message error =
        Error{static_cast<uint32_t>(ProtocolErrorCodeOf(close_reason_)), close_reason_.message()};
    const std::optional<Message> cut = WithTextThatFits(error);
    Result<OutboundMessage> encoded = EncodeOutbound(cut ? *cut : error, options_.limits, 0);
    if (encoded.ok()) {
      queue_.push_back(
          Outgoing{std::make_shared<const OutboundMessage>(std::move(*encoded)), 0, nullptr});
    }
  }
  do_close();
}

void FramedConnection::do_close() {
  if (state_ == State::kClosed || shutdown_started_) return;
  if (writing_) return;  // on_write comes back here
  if (!queue_.empty()) return do_write();
  if (reading_) {
    stream_->Cancel();  // on_read comes back here
    return;
  }
  do_shutdown();
}

void FramedConnection::do_shutdown() {
  shutdown_started_ = true;
  // A peer may never send close_notify; the timer closes the socket, which ends the shutdown.
  shutdown_timer_.expires_after(options_.shutdown_timeout);
  shutdown_timer_.async_wait([self = shared_from_this()](const error_code& ec) {
    if (ec != asio::error::operation_aborted && self->state_ != State::kClosed) {
      self->stream_->Close();
    }
  });
  stream_->AsyncGracefulClose(
      [self = shared_from_this()](const error_code& ec) { self->on_shutdown(ec); });
}

void FramedConnection::on_shutdown(const error_code& /*ec*/) {
  // Errors here (stream_truncated, a peer that already closed) change nothing: we are closing.
  shutdown_timer_.cancel();
  finish();
}

void FramedConnection::finish() {
  if (state_ == State::kClosed) return;
  state_ = State::kClosed;
  read_timer_.cancel();
  write_timer_.cancel();
  shutdown_timer_.cancel();
  budget_timer_.cancel();
  hold_timer_.cancel();
  release_transfer();
  stream_->Close();
  std::deque<Outgoing> aborted;
  aborted.swap(queue_);
  for (Outgoing& out : aborted) {
    if (out.done) out.done(Status::Aborted("connection to " + peer_.address + " closed"));
  }
  if (!close_reason_.ok()) {
    Log().debug("connection {} ({}) closed: {}", peer_.address, peer_.id, close_reason_.ToString());
  }
  on_message_ = nullptr;
  CloseHandler on_close = std::move(on_close_);
  on_close_ = nullptr;
  if (on_close) on_close(close_reason_);
}

}  // namespace tributary

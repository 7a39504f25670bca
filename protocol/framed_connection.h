// FramedConnection: a Connection over any ByteStream. Both transports use it, so framing, caps,
// timeouts and the close sequence are the same code for TLS and in-memory links.
//
// A session in the style of Beast's async examples: it lives in a shared_ptr, every step runs on
// the stream's strand, and each step pairs do_x() with on_x(ec, n):
//   read loop    do_read -> on_read -> MessageReader -> on_message handler -> do_read
//                (chunk data is read straight into the reassembly buffer: MessageReader::ReadSpace)
//   write queue  do_write -> on_write (one frame per write, under write_timeout)
//   close        fail/Close -> flush queue -> cancel read -> do_shutdown (graceful close: TLS
//                close_notify, FIN, drain; under shutdown_timeout) -> on_shutdown -> finish
// Bad input from the peer (a ProtocolError from MessageReader, a frame not finished within
// frame_read_timeout, or a chunked message that gains no bytes for frame_read_timeout, whatever
// other frames come between its chunks) queues an Error message carrying the code, sends it, then
// closes; the close handler gets the same Status. A write that times out or a network error closes
// at once. With a transfer budget, a chunked message's size is reserved as its first chunk
// arrives, and reading pauses (backpressure) while it does not fit; the deadlines do not run while
// it pauses. So a peer that starts a large message and then sends only heartbeats gives its
// reservation back within frame_read_timeout instead of holding it for good, and one that sends a
// tiny chunk now and then gives it back when it falls below TransportOptions::min_message_rate.
// A waiting connection sends its peer a Heartbeat every budget_wait_keepalive instead. On a
// connection we dialed (Origin::kDialed: a client's link to its coordinator, an aggregator's to
// the coordinator), a frame write that outlasts write_timeout is not given up while the peer keeps
// sending heartbeats (at least one in each write_timeout): the server has paused reading us for
// its budget (or its owner's hold) and says so. Accepted connections never wait so: there a peer
// that stops reading and sends heartbeats would hold a write, and its buffers, for good.
// HoldReading pauses reading as the budget does (once the read in flight is delivered and its
// reservation settled; deadlines stopped, keepalives sent) until ResumeReading.
//
// Thread safety: the public methods may be called from any thread; they post to the strand.
#pragma once

#include <atomic>
#include <boost/asio/steady_timer.hpp>
#include <deque>
#include <memory>
#include <optional>

#include "protocol/byte_stream.h"
#include "protocol/frame.h"
#include "protocol/message_reader.h"
#include "protocol/transport.h"

namespace tributary {

class FramedConnection final : public Connection,
                               public std::enable_shared_from_this<FramedConnection> {
 public:
  // Who opened the connection: a listener accepted it, or our transport dialed it (above).
  enum class Origin { kAccepted, kDialed };

  FramedConnection(std::unique_ptr<ByteStream> stream, PeerInfo peer,
                   const TransportOptions& options, Origin origin = Origin::kAccepted);
  ~FramedConnection() override;

  void Start(MessageHandler on_message, CloseHandler on_close) override;
  void Send(const Message& message, SendHandler done = nullptr) override;
  void SendEncoded(std::shared_ptr<const OutboundMessage> message,
                   SendHandler done = nullptr) override;
  void Close() override;
  void SetMaxMessageBytes(uint64_t max_bytes) override;
  void HoldReading() override;
  void ResumeReading() override;
  const PeerInfo& peer() const override { return peer_; }
  bool waiting_for_budget() const override { return waiting_for_budget_.load(); }

  // Refuses the connection: sends an Error carrying the code of `reason` (a ProtocolError), then
  // closes without delivering any message. Used by listeners (revoked or missing client id).
  void Reject(Status reason);

 private:
  enum class State { kOpen, kClosing, kClosed };
  struct Outgoing {
    std::shared_ptr<const OutboundMessage> message;
    size_t next_frame = 0;
    SendHandler done;
    bool is_heartbeat() const { return message->type == MessageType::kHeartbeat; }
  };

  void do_read();
  void on_read(const boost::system::error_code& ec, size_t n);
  // Sets, moves or clears the frame and message deadlines after a read, and arms read_timer_ for
  // the earlier; StopReadDeadlines clears both (reading paused by us, or closing).
  void update_read_deadline();
  void StopReadDeadlines();
  void on_read_deadline(const boost::system::error_code& ec);
  // Keeps the transfer budget's reservation equal to the open message's size; false when a new
  // message does not fit and reading pauses (retry_budget resumes it).
  bool reserve_transfer();
  void retry_budget(const boost::system::error_code& ec);
  // While waiting: a Heartbeat to the peer every options_.budget_wait_keepalive.
  void keep_peer_alive(std::chrono::steady_clock::time_point now);
  void send_keepalive(std::chrono::steady_clock::time_point now);
  // Reading stops for HoldReading (held_): deadlines stop, paused_at_ is set, keepalives start.
  void stop_for_hold();
  void on_hold_keepalive(const boost::system::error_code& ec);
  // Ends a pause (for the budget or a hold): the chunked message's clock skips it.
  void end_pause();
  void release_transfer();

  void enqueue(Outgoing out);
  void do_write();
  void on_write(const boost::system::error_code& ec, size_t n);
  // Arms write_timer_ for the frame being written (and forgets the heartbeats heard before).
  void arm_write_deadline();
  void on_write_deadline(const boost::system::error_code& ec);

  // Begins closing because of `reason`; with send_error, first tells the peer in an Error message.
  void fail(Status reason, bool send_error);
  void do_close();
  void do_shutdown();
  void on_shutdown(const boost::system::error_code& ec);
  void finish();

  std::unique_ptr<ByteStream> stream_;
  boost::asio::any_io_executor strand_;
  PeerInfo peer_;
  TransportOptions options_;
  Origin origin_;
  MessageReader reader_;
  std::unique_ptr<uint8_t[]> read_buffer_;  // of read_capacity_ bytes (framed_connection.cc)
  size_t read_capacity_ = 0;
  bool read_filled_ = false;  // the last read into read_buffer_ filled it: the peer sends more
  std::vector<Message> received_;
  boost::asio::steady_timer read_timer_;
  boost::asio::steady_timer write_timer_;
  boost::asio::steady_timer shutdown_timer_;
  boost::asio::steady_timer budget_timer_;
  boost::asio::steady_timer hold_timer_;  // keepalives while stopped for a hold
  uint64_t reserved_ = 0;                 // bytes of options_.transfer_budget this connection holds
  std::deque<Outgoing> queue_;
  size_t writing_index_ = 0;  // which queue_ entry the write in flight belongs to
  // Keeps the buffers of the write in flight alive even when finish() drops the queue.
  std::shared_ptr<const OutboundMessage> in_flight_;
  std::atomic<uint64_t> next_transfer_id_{1};  // Send encodes on the caller's thread
  uint64_t frames_at_deadline_ = 0;            // FrameDecoder count when the frame deadline was set
  uint64_t message_mark_ = 0;    // the chunked message's bytes when its deadline was set
  uint64_t message_number_ = 0;  // MessageReader::messages_begun() of the message being received
  // Reading's deadlines (unset: none runs): the frame begun must end by frame_deadline_, the
  // chunked message begun must gain bytes by message_deadline_ and keep to the minimum rate by
  // rate_deadline_ (with a transfer budget); read_timer_ waits for the earliest.
  std::optional<std::chrono::steady_clock::time_point> frame_deadline_, message_deadline_,
      rate_deadline_;
  // When the chunked message being received began, moved later by the time reading paused for
  // the transfer budget (paused_at_: since when it is paused).
  std::optional<std::chrono::steady_clock::time_point> message_started_, paused_at_;
  std::chrono::steady_clock::time_point keepalive_sent_;  // the last keepalive, or the pause
  std::atomic<bool> waiting_for_budget_{false};           // paused_at_ is set (any thread reads)
  bool started_ = false;
  bool reading_ = false;
  bool held_ = false;              // HoldReading was called, ResumeReading not since
  bool stopped_for_hold_ = false;  // reading stopped because of held_ (hold_timer_ runs)
  bool direct_read_ = false;  // the read in flight goes to reader_.ReadSpace(), not read_buffer_
  bool writing_ = false;
  // A Heartbeat came from the peer since the write deadline was last armed (Origin::kDialed).
  bool heard_during_write_ = false;
  bool read_deadline_armed_ = false;
  bool shutdown_started_ = false;
  State state_ = State::kOpen;
  Status close_reason_;
  MessageHandler on_message_;
  CloseHandler on_close_;
};

}  // namespace tributary

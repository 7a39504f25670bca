// ConnectionBacklog against a connection that records its holds and resumes, and from two threads
// at once (the reading strand takes tickets while the consumer lets them go).
#include "protocol/connection_backlog.h"

#include <gtest/gtest.h>

#include <mutex>
#include <thread>
#include <vector>

#include "protocol/message_codec.h"

namespace tributary {
namespace {

// Records HoldReading and ResumeReading in the order they come; nothing else is used.
class RecordingConnection final : public Connection {
 public:
  void Start(MessageHandler, CloseHandler) override {}
  void Send(const Message&, SendHandler) override {}
  void SendEncoded(std::shared_ptr<const OutboundMessage>, SendHandler) override {}
  void Close() override {}
  void SetMaxMessageBytes(uint64_t) override {}
  void HoldReading() override { Record('h'); }
  void ResumeReading() override { Record('r'); }
  const PeerInfo& peer() const override { return peer_; }

  std::string calls() {
    std::lock_guard<std::mutex> lock(mu_);
    return calls_;
  }

 private:
  void Record(char c) {
    std::lock_guard<std::mutex> lock(mu_);
    calls_ += c;
  }
  PeerInfo peer_;
  std::mutex mu_;
  std::string calls_;
};

TEST(ConnectionBacklogTest, HoldsPastTheCapAndResumesOnceEveryTicketHasGone) {
  auto conn = std::make_shared<RecordingConnection>();
  auto backlog = ConnectionBacklog::Create(conn, 1000);
  std::vector<ConnectionBacklog::Ticket> tickets;
  tickets.push_back(backlog->Take(600));
  tickets.push_back(backlog->Take(400));  // 1,000: at the cap, not past it
  EXPECT_EQ(conn->calls(), "");
  EXPECT_FALSE(backlog->held());
  tickets.push_back(backlog->Take(1));  // 1,001
  EXPECT_EQ(conn->calls(), "h");
  EXPECT_TRUE(backlog->held());
  tickets.push_back(backlog->Take(5000));  // already held: no second hold
  EXPECT_EQ(conn->calls(), "h");
  EXPECT_EQ(backlog->waiting_bytes(), 6001u);
  EXPECT_EQ(backlog->peak_bytes(), 6001u);

  tickets.erase(tickets.begin(), tickets.begin() + 3);  // 5,000 still wait: below the cap is not
  EXPECT_EQ(backlog->waiting_bytes(), 5000u);           // enough, the backlog must drain
  EXPECT_EQ(conn->calls(), "h");
  tickets.clear();
  EXPECT_EQ(conn->calls(), "hr");
  EXPECT_FALSE(backlog->held());
  EXPECT_EQ(backlog->waiting_bytes(), 0u);
  EXPECT_EQ(backlog->holds(), 1u);
  EXPECT_EQ(backlog->peak_bytes(), 6001u);
}

TEST(ConnectionBacklogTest, AMovedTicketReleasesOnceAndAMessageThatWaitsAloneIsNeverHeld) {
  auto conn = std::make_shared<RecordingConnection>();
  auto backlog = ConnectionBacklog::Create(conn, 100);
  for (int i = 0; i < 3; ++i) {  // one update-sized message at a time, answered before the next
    ConnectionBacklog::Ticket t = backlog->Take(100);
    ConnectionBacklog::Ticket moved = std::move(t);
    ConnectionBacklog::Ticket assigned;
    assigned = std::move(moved);
    EXPECT_EQ(backlog->waiting_bytes(), 100u);
  }
  EXPECT_EQ(backlog->waiting_bytes(), 0u);
  EXPECT_EQ(conn->calls(), "");
  {
    ConnectionBacklog::Ticket a = backlog->Take(80), b = backlog->Take(80);
    EXPECT_EQ(conn->calls(), "h");
    a = backlog->Take(10);  // a's 80 go, the new 10 wait
    EXPECT_EQ(backlog->waiting_bytes(), 90u);
  }
  EXPECT_EQ(conn->calls(), "hr");
}

// The reading strand and the consumer race: tickets taken on one thread, let go on another, a
// hold at every few. Whatever the interleaving, holds and resumes alternate, starting with a hold,
// every hold is resumed, and nothing is left counted.
TEST(ConnectionBacklogTest, HoldsAndResumesAlternateWhenTicketsGoOnAnotherThread) {
  auto conn = std::make_shared<RecordingConnection>();
  auto backlog = ConnectionBacklog::Create(conn, 3000);
  constexpr int kMessages = 200'000;
  std::mutex mu;
  std::condition_variable cv;
  std::vector<ConnectionBacklog::Ticket> handed;
  bool done = false;
  std::thread consumer([&] {
    for (;;) {
      std::vector<ConnectionBacklog::Ticket> batch;
      {
        std::unique_lock<std::mutex> lock(mu);
        cv.wait(lock, [&] { return done || !handed.empty(); });
        if (handed.empty() && done) return;
        batch.swap(handed);
      }
      batch.clear();  // the consumer is done with them
    }
  });
  for (int i = 0; i < kMessages; ++i) {
    ConnectionBacklog::Ticket t = backlog->Take(1000);
    std::lock_guard<std::mutex> lock(mu);
    handed.push_back(std::move(t));
    cv.notify_one();
  }
  {
    std::lock_guard<std::mutex> lock(mu);
    done = true;
    cv.notify_one();
  }
  consumer.join();
  const std::string calls = conn->calls();
  ASSERT_FALSE(calls.empty()) << "never held: the test did not race";
  for (size_t i = 0; i < calls.size(); ++i) ASSERT_EQ(calls[i], i % 2 == 0 ? 'h' : 'r') << i;
  EXPECT_EQ(calls.size() % 2, 0u) << "a hold was never resumed";
  EXPECT_EQ(backlog->holds() * 2, calls.size());
  EXPECT_EQ(backlog->waiting_bytes(), 0u);
  EXPECT_FALSE(backlog->held());
}

// The backlog holds its connection weakly: a connection's read handler may hold the backlog (no
// cycle), and a ticket that outlives the connection (an engine job dropped at shutdown, after the
// I/O is gone) neither keeps it alive nor asks anything of it.
TEST(ConnectionBacklogTest, ATicketThatOutlivesItsConnectionNeitherKeepsItNorTouchesIt) {
  auto conn = std::make_shared<RecordingConnection>();
  std::weak_ptr<RecordingConnection> weak = conn;
  auto backlog = ConnectionBacklog::Create(conn, 10);
  ConnectionBacklog::Ticket a = backlog->Take(8), b = backlog->Take(8);
  EXPECT_EQ(conn->calls(), "h");
  conn.reset();
  EXPECT_TRUE(weak.expired());
  a = ConnectionBacklog::Ticket{};
  b = ConnectionBacklog::Ticket{};  // the resume finds no connection
  EXPECT_EQ(backlog->waiting_bytes(), 0u);
  EXPECT_FALSE(backlog->held());
}

TEST(ConnectionBacklogTest, AMessageIsCountedByItsBodyOnTheWire) {
  UpdateSubmission u;
  u.update.codec = "dense";
  u.update.bytes = SharedBytes(std::vector<uint8_t>(500'000, 1));
  const Message m = u;
  EXPECT_EQ(EncodedBodyBytes(m), EncodeMessageBody(m)->size());
  EXPECT_GT(EncodedBodyBytes(m), 500'000u);
  EXPECT_EQ(EncodedBodyBytes(Message(Heartbeat{1, 2})), EncodeMessageBody(Heartbeat{1, 2})->size());
}

}  // namespace
}  // namespace tributary

// AggregatorService between a scripted coordinator and scripted clients over the in-memory
// transport: what goes up, and in which order. The coordinator refuses a GroupResult whole when a
// record names a client that is no longer the aggregator's (it heard the client left), so a
// member's update must go up before its departure does.
#include "aggregator/aggregator_service.h"

#include <gtest/gtest.h>

#include <boost/asio/post.hpp>

#include <algorithm>
#include <atomic>
#include <deque>
#include <future>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "compression/dense_codec.h"
#include "coordinator/tier_config.h"
#include "core/model_layout.h"
#include "protocol/in_memory_transport.h"
#include "tests/core/log_capture.h"
#include "tests/protocol/transport_test_util.h"

namespace tributary {
namespace {

using namespace std::chrono_literals;
using testing::Inbox;
using testing::IoThreads;
using testing::Waiter;

class AggregatorServiceTest : public ::testing::Test {
 protected:
  AggregatorServiceTest() : model_(*ModelWeights::Create({{"w", {4}}})) {}
  ~AggregatorServiceTest() override {
    for (auto& c : clients_) c.conn->Close();
    if (service_) service_->Stop("the test is over");
    if (coordinator_listener_) coordinator_listener_->Stop();
    if (service_io_) service_io_->Stop();
    io_.Stop();
  }

  std::unique_ptr<InMemoryTransport> Transport(const std::string& id, PeerRole role) {
    InMemoryTransportOptions o;
    o.client_id = id;
    o.role = role;
    o.transport.handshake_timeout = 5s;
    return std::move(*InMemoryTransport::Create(io_.io(), network_, o));
  }

  // The aggregator connects to the scripted coordinator, is welcomed to a FedAvg run of the dense
  // codec, and listens for clients.
  // With own_thread, the service runs on an io_context and thread of its own (service_io_), so a
  // test can keep its strand busy by keeping that thread busy.
  void StartAggregator(bool own_thread = false) {
    coordinator_transport_ = Transport("coordinator", PeerRole::kClient);
    Result<std::shared_ptr<Listener>> l =
        coordinator_transport_->Listen("coord", [this](std::shared_ptr<Connection> c) {
          if (upstream_accepted_++ > 0) {  // the aggregator came back (after a Goodbye)
            c->Start(up_again_.OnMessage(), up_again_.OnClose());
            reconnected_.Callback()(c);
            return;
          }
          c->Start(up_.OnMessage(), up_.OnClose());
          upstream_.set_value(c);
        });
    ASSERT_TRUE(l.ok()) << l.status();
    coordinator_listener_ = *l;
    upstream_transport_ = Transport("agg-1", PeerRole::kAggregator);
    clients_transport_ = Transport("", PeerRole::kClient);
    AggregatorOptions o;
    o.listen_address = "agg-clients";
    o.coordinator_address = "coord";
    o.software_version = "test";
    o.flush_margin = 1s;
    if (own_thread) service_io_.emplace(1);
    service_ = std::make_shared<AggregatorService>(service_io_ ? service_io_->io() : io_.io(),
                                                   *clients_transport_, *upstream_transport_, o);
    std::promise<std::string> listening;
    service_->set_on_listening([&](const std::string& a) { listening.set_value(a); });
    service_->Start();
    std::future<std::shared_ptr<Connection>> up = upstream_.get_future();
    ASSERT_EQ(up.wait_for(10s), std::future_status::ready);
    coordinator_ = up.get();
    ASSERT_TRUE(up_.WaitForMessages(1));
    ASSERT_TRUE(std::holds_alternative<AggregatorHello>(up_.messages()[0]));
    RunConfig run;
    run.round.clients_per_round = 2;
    run.round.codec = "dense";
    run.round.round_timeout = 60s;
    coordinator_->Send(AggregatorWelcome{kProtocolVersion, "agg-1", "test", 1000,
                                         TierConfigToml(run), model_.fingerprint(),
                                         LayoutOf(model_)});
    std::future<std::string> address = listening.get_future();
    ASSERT_EQ(address.wait_for(10s), std::future_status::ready);
    aggregator_address_ = address.get();
  }

  struct TestClient {
    std::string id;
    std::unique_ptr<InMemoryTransport> transport;
    std::shared_ptr<Connection> conn;
    std::shared_ptr<Inbox> inbox;
  };

  // `id` connects to the aggregator and says Hello; returns once welcomed.
  TestClient& Join(const std::string& id) {
    TestClient c;
    c.id = id;
    c.transport = Transport(id, PeerRole::kClient);
    Waiter<Result<std::shared_ptr<Connection>>> connected;
    c.transport->Connect(aggregator_address_, connected.Callback());
    std::optional<Result<std::shared_ptr<Connection>>> conn = connected.Wait(10s);
    EXPECT_TRUE(conn && conn->ok());
    c.conn = **conn;
    c.inbox = std::make_shared<Inbox>();
    c.conn->Start(c.inbox->OnMessage(), c.inbox->OnClose());
    Hello hello;
    hello.capabilities.device = "cpu";
    hello.capabilities.codecs = {"dense"};
    hello.capabilities.num_examples = 100;
    hello.capabilities.layout = LayoutOf(model_);
    hello.capabilities.layout_fingerprint = model_.fingerprint();
    c.conn->Send(hello);
    EXPECT_TRUE(c.inbox->WaitForMessages(1));
    EXPECT_TRUE(std::holds_alternative<Welcome>(c.inbox->messages()[0])) << id;
    clients_.push_back(std::move(c));
    return clients_.back();
  }

  // A client that closed its connection: kept (its inbox still hears the close, on an I/O
  // thread) until the fixture stops the I/O threads, but no longer among clients_.
  void Gone(std::deque<TestClient>::iterator c) {
    gone_.push_back(std::move(*c));
    clients_.erase(c);
  }

  // The coordinator's messages of type T so far, in order.
  template <class T>
  std::vector<T> Up() {
    std::vector<T> out;
    for (const Message& m : up_.messages())
      if (const auto* t = std::get_if<T>(&m)) out.push_back(*t);
    return out;
  }

  // Waits until `pred` holds over the coordinator's messages (true) or 10 s pass (false).
  template <class Pred>
  bool WaitUp(Pred pred) {
    for (int i = 0; i < 1000; ++i) {
      if (pred()) return true;
      std::this_thread::sleep_for(10ms);
    }
    return false;
  }

  GroupTask Round1(const std::vector<std::string>& members) {
    GroupTask g;
    for (size_t i = 0; i < members.size(); ++i) g.members.push_back({members[i], 100 + i});
    g.task.round = 1;
    g.task.model_version = 0;
    g.task.fit.epochs = 1;
    g.task.codec.spec = "dense";
    g.task.deadline_ms = 60'000;
    g.task.model.layout_fingerprint = model_.fingerprint();
    g.task.model.values.mutable_values().assign(4, 0.0f);
    return g;
  }

  UpdateSubmission Update(float value) {
    UpdateSubmission u;
    u.round = 1;
    u.model_version = 0;
    u.num_examples = 100;
    u.update.codec = "dense";
    u.update.layout_fingerprint = model_.fingerprint();
    u.update.num_floats = 4;
    u.update.bytes = *DenseCodec().Encode(std::vector<float>(4, value));
    return u;
  }

  IoThreads io_{2};
  // StartAggregator(true): the service's own; stopped with io_, destroyed after the service.
  std::optional<IoThreads> service_io_;
  std::shared_ptr<InMemoryNetwork> network_ = std::make_shared<InMemoryNetwork>();
  ModelWeights model_;
  std::unique_ptr<InMemoryTransport> coordinator_transport_, upstream_transport_,
      clients_transport_;
  std::shared_ptr<Listener> coordinator_listener_;
  std::promise<std::shared_ptr<Connection>> upstream_;
  std::atomic<int> upstream_accepted_{0};
  Waiter<std::shared_ptr<Connection>> reconnected_;  // its next connection to the coordinator
  std::shared_ptr<Connection> coordinator_;
  Inbox up_;
  Inbox up_again_;  // what the next connection brings
  std::shared_ptr<AggregatorService> service_;
  std::string aggregator_address_;
  std::deque<TestClient> clients_;  // Join hands out references: they must stay put
  std::deque<TestClient> gone_;     // closed; destroyed after the I/O threads stop
};

// A client sending update after update while the aggregator's strand is busy (here its one thread
// is held for 2.5 s) is read no further than about one update ahead of it
// (protocol/connection_backlog.h): before, every message read waited, decoded, for the strand.
// It hears keepalives meanwhile, and when the strand is free every update is judged (refused
// here: no task) and the client stays.
TEST_F(AggregatorServiceTest, AClientIsReadNoFurtherAheadOfABusyStrandThanAboutOneUpdate) {
  StartAggregator(/*own_thread=*/true);
  TestClient& c = Join("edge-flood");
  std::promise<void> release;
  std::shared_future<void> released = release.get_future().share();
  boost::asio::post(service_io_->io(), [released] { released.wait(); });
  UpdateSubmission u = Update(1.0f);
  u.update.bytes = SharedBytes(std::vector<uint8_t>(500'000, 1));  // under the cap of 524,320
  auto encoded = std::make_shared<const OutboundMessage>(*EncodeOutbound(u, ProtocolLimits{}, 1));
  constexpr int kSent = 64;
  std::atomic<int> written{0};
  for (int i = 0; i < kSent; ++i)
    c.conn->SendEncoded(encoded, [&written](Status st) { written += st.ok(); });
  std::this_thread::sleep_for(2500ms);  // over two keepalive intervals (the heartbeat's, 1 s)
  EXPECT_LE(written.load(), kSent / 2);
  EXPECT_GE(written.load(), 2);
  size_t keepalives = 0;
  for (const Message& m : c.inbox->messages())
    if (const auto* h = std::get_if<Heartbeat>(&m); h && h->sequence == 0) ++keepalives;
  EXPECT_GE(keepalives, 1u);

  release.set_value();
  for (int i = 0; i < 2000 && written.load() < kSent; ++i) std::this_thread::sleep_for(10ms);
  EXPECT_EQ(written.load(), kSent);
  const auto refusals = [&c] {
    size_t n = 0;
    for (const Message& m : c.inbox->messages()) n += std::holds_alternative<Error>(m);
    return n;
  };
  for (int i = 0; i < 2000 && refusals() < kSent; ++i) std::this_thread::sleep_for(10ms);
  EXPECT_EQ(refusals(), static_cast<size_t>(kSent));
  EXPECT_FALSE(c.inbox->WaitForClose(0ms).has_value());
}

// A coordinator stopped by a signal says SHUTTING_DOWN in its Goodbye: the aggregator does not end
// (it did, as if the run were over, and took its clients with it); it reconnects, and its
// clients stay connected to it meanwhile.
TEST_F(AggregatorServiceTest, ACoordinatorShuttingDownIsReconnectedToAndTheClientsStay) {
  StartAggregator();
  TestClient& client = Join("edge-1");
  coordinator_->Send(
      Goodbye{"the coordinator is shutting down", static_cast<uint32_t>(ErrorCode::kShuttingDown)});
  coordinator_->Close();
  std::optional<std::shared_ptr<Connection>> again = reconnected_.Wait(20s);
  ASSERT_TRUE(again.has_value()) << "the aggregator did not reconnect";
  ASSERT_TRUE(up_again_.WaitForMessages(1));
  EXPECT_TRUE(std::holds_alternative<AggregatorHello>(up_again_.messages()[0]));
  EXPECT_FALSE(client.inbox->WaitForClose(200ms).has_value()) << "the client was let go";
  EXPECT_EQ(client.inbox->messages().size(), 1u);  // its Welcome, no Goodbye
  (*again)->Close();
  service_->Stop("the test is over");
  // Stopped itself, the aggregator tells its clients SHUTTING_DOWN: they reconnect (to it when
  // it is back, or to another aggregator) instead of ending their run.
  ASSERT_TRUE(client.inbox->WaitForClose().has_value());
  const std::vector<Message> got = client.inbox->messages();  // a copy: bye points into it
  ASSERT_EQ(got.size(), 2u);
  const auto* bye = std::get_if<Goodbye>(&got[1]);
  ASSERT_NE(bye, nullptr);
  EXPECT_EQ(bye->code, static_cast<uint32_t>(ErrorCode::kShuttingDown));
}

// A member that sends its update and leaves while the other member still trains: its update goes
// up before its departure. It used to go up after, at the flush or the last answer, naming a
// client the coordinator no longer counted as the aggregator's, and the coordinator refused the
// result whole, the other member's update with it.
TEST_F(AggregatorServiceTest, AMembersUpdateGoesUpBeforeItsDeparture) {
  StartAggregator();
  TestClient& a = Join("edge-a");
  Join("edge-b");
  ASSERT_TRUE(WaitUp([&] {
    size_t joined = 0;
    for (const GroupMembership& m : Up<GroupMembership>()) joined += m.joined.size();
    return joined == 2;
  }));
  coordinator_->Send(Round1({"edge-a", "edge-b"}));
  ASSERT_TRUE(a.inbox->WaitForMessages(2));  // Welcome, then its task
  ASSERT_TRUE(std::holds_alternative<TaskAssignment>(a.inbox->messages()[1]));
  a.conn->Send(Update(0.5f));
  a.conn->Close();  // after the update (a close flushes what was queued)
  ASSERT_TRUE(WaitUp([&] {
    for (const GroupMembership& m : Up<GroupMembership>())
      if (!m.left.empty()) return true;
    return false;
  }));
  // In the order the coordinator reads them: the result naming edge-a, then edge-a's departure.
  int result_at = -1, left_at = -1;
  const std::vector<Message> up = up_.messages();
  for (size_t i = 0; i < up.size(); ++i) {
    if (const auto* r = std::get_if<GroupResult>(&up[i]); r && result_at < 0) {
      ASSERT_EQ(r->records.size(), 1u);
      EXPECT_EQ(r->records[0].client_id, "edge-a");
      EXPECT_TRUE(r->records[0].accepted());
      result_at = static_cast<int>(i);
    }
    if (const auto* m = std::get_if<GroupMembership>(&up[i]); m && !m->left.empty()) {
      EXPECT_EQ(m->left, std::vector<std::string>{"edge-a"});
      left_at = static_cast<int>(i);
    }
  }
  ASSERT_GE(result_at, 0);
  EXPECT_LT(result_at, left_at);
}

// The coordinator reads a GroupMembership's joins before its departures. Whatever lands in one
// batch, the coordinator's view, replayed that way, must end as who is connected: a client that
// leaves and comes back is there, one that comes and goes is not.
TEST_F(AggregatorServiceTest, TheCoordinatorsViewOfMembersEndsAsWhoIsConnected) {
  StartAggregator();
  Join("edge-a");
  Join("edge-b");
  for (int i = 0; i < 5; ++i) {
    auto a = std::find_if(clients_.begin(), clients_.end(),
                          [](const TestClient& c) { return c.id == "edge-a"; });
    a->conn->Close();  // edge-a leaves ...
    Gone(a);
    Join("edge-a");  // ... and is back at once
    TestClient& c = Join("edge-c");
    c.conn->Close();  // edge-c comes and goes
    Gone(std::prev(clients_.end()));
  }
  auto view = [&] {
    std::set<std::string> members;
    for (const GroupMembership& m : Up<GroupMembership>()) {
      for (const GroupMember& j : m.joined) members.insert(j.client_id);
      for (const std::string& l : m.left) members.erase(l);
    }
    return members;
  };
  const std::set<std::string> want = {"edge-a", "edge-b"};
  EXPECT_TRUE(WaitUp([&] { return view() == want; }));
  std::this_thread::sleep_for(200ms);  // nothing later changes it
  EXPECT_EQ(view(), want);
  // edge-b leaves, comes back and leaves again, quickly: it is gone.
  for (int i = 0; i < 2; ++i) {
    auto b = std::find_if(clients_.begin(), clients_.end(),
                          [](const TestClient& c) { return c.id == "edge-b"; });
    b->conn->Close();
    Gone(b);
    if (i == 0) Join("edge-b");
  }
  const std::set<std::string> only_a = {"edge-a"};
  EXPECT_TRUE(WaitUp([&] { return view() == only_a; }));
  std::this_thread::sleep_for(200ms);
  EXPECT_EQ(view(), only_a);
}

// Hostile input to an aggregator is a security event at the default level, naming the aggregator
// and the peer, as at the coordinator.
TEST_F(AggregatorServiceTest, BadInputFromAClientIsASecurityWarningNamingIt) {
  StartAggregator();
  testing::LogCapture log(LogLevel::kInfo);  // the programs' default level
  std::unique_ptr<InMemoryTransport> t = Transport("edge-bad", PeerRole::kClient);
  Waiter<Result<std::unique_ptr<ByteStream>>> connected;
  t->ConnectRaw(aggregator_address_, connected.Callback());
  std::optional<Result<std::unique_ptr<ByteStream>>> stream = connected.Wait(10s);
  ASSERT_TRUE(stream && stream->ok());
  testing::RawPeer peer(std::move(**stream));
  peer.StartReading();
  ASSERT_TRUE(peer.Write(std::vector<uint8_t>(16, 0x5a)).ok());  // not a frame header
  ASSERT_TRUE(peer.WaitClosed(10s));
  const auto warned = [&] {
    for (const std::string& line : log.lines())
      if (line.rfind("warn|security: connection closed for bad input from ", 0) == 0 &&
          line.find("aggregator agg-1: edge-bad before Hello") != std::string::npos &&
          line.find("BAD_MAGIC") != std::string::npos)
        return true;
    return false;
  };
  EXPECT_TRUE(WaitUp(warned)) << ::testing::PrintToString(log.lines());
}

}  // namespace
}  // namespace tributary

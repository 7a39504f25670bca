// One behaviour suite run over both transports (INSTANTIATE_TEST_SUITE_P over kInMemory and kTls):
// message round trips, chunked transfers, graceful close, and each kind of bad input, which must
// get an Error naming what was wrong, close that connection, and leave other sessions working.
#include <gtest/gtest.h>

#include <atomic>
#include <cstring>
#include <functional>
#include <future>
#include <thread>

#include "crypto/deny_list.h"
#include "protocol/frame.h"
#include "protocol/in_memory_transport.h"
#include "protocol/message_codec.h"
#include "protocol/message_reader.h"
#include "protocol/schema_caps.h"
#include "protocol/tls_transport.h"
#include "protocol/transfer_budget.h"
#include "tests/protocol/transport_test_util.h"

namespace tributary {
namespace {

using namespace tributary::testing;

enum class Kind { kInMemory, kTls };

TransportOptions TestOptions() {
  TransportOptions o;
  o.handshake_timeout = 5s;
  o.frame_read_timeout = 5s;
  o.write_timeout = 5s;
  o.shutdown_timeout = 500ms;
  return o;
}

// TestOptions with frames of 64 KiB, chunks of 60 KiB and messages up to 64 MiB: a 2 MiB message
// travels in 35 chunks.
TransportOptions ChunkedOptions() {
  TransportOptions o = TestOptions();
  o.limits.max_frame_payload = 64 << 10;
  o.limits.chunk_data_bytes = 60 << 10;
  o.limits.max_message_bytes = 64 << 20;
  return o;
}

// A task carrying a 2 MiB model.
TaskAssignment TwoMiBTask() {
  TaskAssignment task;
  task.model.layout_fingerprint = 7;
  task.model.values.mutable_values().assign(size_t{512} << 10, 0.25f);
  return task;
}

// The bytes of `out`'s frames from index `first` on, back to back.
std::vector<uint8_t> FramesFrom(const OutboundMessage& out, size_t first) {
  std::vector<uint8_t> bytes;
  for (size_t i = first; i < out.frames.size(); ++i) {
    const std::vector<uint8_t> f = out.FrameBytes(i);
    bytes.insert(bytes.end(), f.begin(), f.end());
  }
  return bytes;
}

// Polls `done` every 5 ms for up to 20 s; its last answer.
bool WaitUntil(const std::function<bool()>& done) {
  const auto end = std::chrono::steady_clock::now() + 20s;
  while (!done() && std::chrono::steady_clock::now() < end) std::this_thread::sleep_for(5ms);
  return done();
}

// Decodes whatever a raw peer received (it should be well-formed frames from our side).
std::vector<Message> ParseAll(const std::vector<uint8_t>& bytes) {
  MessageReader reader(ProtocolLimits{});
  std::vector<Message> out;
  EXPECT_TRUE(reader.Feed(bytes, &out).ok());
  EXPECT_FALSE(reader.mid_frame());
  return out;
}

std::vector<uint8_t> HeaderBytes(uint16_t version, MessageType type, uint64_t length,
                                 uint32_t magic = kFrameMagic) {
  FrameHeader h;
  h.magic = magic;
  h.version = version;
  h.type = type;
  h.payload_length = length;
  const FrameHeaderBytes b = EncodeFrameHeader(h);
  return {b.begin(), b.end()};
}

class TransportTest : public ::testing::TestWithParam<Kind> {
 protected:
  struct Accepted {
    std::shared_ptr<Connection> connection;
    std::shared_ptr<Inbox> inbox;
  };

  ~TransportTest() override {
    if (listener_) listener_->Stop();
    io_.Stop();
  }

  bool is_tls() const { return GetParam() == Kind::kTls; }

  // Starts a server that records every accepted connection and echoes each message back.
  void StartServer(TransportOptions options = TestOptions()) {
    if (is_tls()) {
      TlsTransportOptions o{options, TestPki::Get().ServerContext(), nullptr};
      server_ = std::move(*TlsTransport::Create(io_.io(), o));
    } else {
      server_ = std::move(*InMemoryTransport::Create(io_.io(), network_, {options, "", 1 << 20}));
    }
    Result<std::shared_ptr<Listener>> l = server_->Listen(
        is_tls() ? "127.0.0.1:0" : "", [this](std::shared_ptr<Connection> c) { OnAccept(c); });
    ASSERT_TRUE(l.ok()) << l.status();
    listener_ = *l;
  }

  // Starts the server with `o` and a transfer budget of `bytes` shared by its connections.
  std::shared_ptr<TransferBudget> StartServerWithBudget(const TransportOptions& o, uint64_t bytes) {
    auto budget = std::make_shared<TransferBudget>(bytes);
    TransportOptions server_options = o;
    server_options.transfer_budget = budget;
    StartServer(server_options);
    return budget;
  }

  void OnAccept(std::shared_ptr<Connection> c) {
    auto inbox = std::make_shared<Inbox>();
    std::weak_ptr<Connection> weak = c;
    Connection::MessageHandler record = inbox->OnMessage();
    c->Start(
        [weak, record](Message m) {
          if (auto self = weak.lock()) self->Send(m);
          record(std::move(m));
        },
        inbox->OnClose());
    std::lock_guard<std::mutex> lock(mu_);
    accepted_.push_back({c, inbox});
    cv_.notify_all();
  }

  // The accepted connection whose authenticated id is `id` (waits for it).
  std::optional<Accepted> AcceptedById(const std::string& id) {
    std::unique_lock<std::mutex> lock(mu_);
    std::optional<Accepted> found;
    cv_.wait_for(lock, 10s, [&] {
      for (const Accepted& a : accepted_) {
        if (a.connection->peer().id == id) found = a;
      }
      return found.has_value();
    });
    return found;
  }

  size_t accepted_count() {
    std::lock_guard<std::mutex> lock(mu_);
    return accepted_.size();
  }

  Transport& ClientTransport(const std::string& id, TransportOptions options) {
    std::unique_ptr<Transport> t;
    if (is_tls()) {
      TlsTransportOptions o{options, nullptr, TestPki::Get().ClientContext(id)};
      t = std::move(*TlsTransport::Create(io_.io(), o));
    } else {
      t = std::move(*InMemoryTransport::Create(io_.io(), network_, {options, id, 1 << 20}));
    }
    clients_.push_back(std::move(t));
    return *clients_.back();
  }

  Result<std::shared_ptr<Connection>> Connect(const std::string& id, Inbox& inbox,
                                              TransportOptions options = TestOptions()) {
    Waiter<Result<std::shared_ptr<Connection>>> waiter;
    ClientTransport(id, options).Connect(listener_->address(), waiter.Callback());
    std::optional<Result<std::shared_ptr<Connection>>> c = waiter.Wait();
    if (!c) return Status::DeadlineExceeded("connect did not finish");
    if (c->ok()) (**c)->Start(inbox.OnMessage(), inbox.OnClose());
    return std::move(*c);
  }

  // A raw peer "edge-trickler" that begins a 2 MiB chunked message, then sends one 256-byte chunk
  // every 50 ms, for 1.5 s or until it is closed, to a server with a 3 MiB transfer budget, a
  // frame_read_timeout of 400 ms and `min_rate`; `elapsed` runs from its reservation.
  struct Trickle {
    std::unique_ptr<RawPeer> peer;
    std::shared_ptr<TransferBudget> budget;
    std::chrono::steady_clock::duration elapsed{};
  };
  Trickle TrickleTinyChunks(uint64_t min_rate) {
    TransportOptions o = ChunkedOptions();
    o.frame_read_timeout = 400ms;
    o.min_message_rate = min_rate;
    Trickle t;
    t.budget = StartServerWithBudget(o, uint64_t{3} << 20);
    ProtocolLimits tiny = o.limits;
    tiny.chunk_data_bytes = 256;
    const OutboundMessage out = *EncodeOutbound(TwoMiBTask(), tiny, 1);
    t.peer = ConnectRaw("edge-trickler");
    if (!t.peer || out.frames.size() < 40) return {};
    t.peer->StartReading();
    if (!t.peer->Write(out.FrameBytes(0)).ok()) return {};
    for (int i = 0; i < 100 && t.budget->used() == 0; ++i) std::this_thread::sleep_for(5ms);
    if (t.budget->used() == 0) return {};  // it reserved nothing
    const auto t0 = std::chrono::steady_clock::now();
    for (size_t i = 1; i <= 30; ++i) {
      std::this_thread::sleep_for(50ms);
      if (!t.peer->Write(out.FrameBytes(i), 1s).ok() || t.peer->WaitClosed(0ms)) break;
    }
    t.elapsed = std::chrono::steady_clock::now() - t0;
    return t;
  }

  // A client writing while the server waits for its budget. The server (a 48 MiB transfer
  // budget, budget_wait_keepalive `keepalive`) reads a raw peer's 32 MiB message, which holds
  // 32 MiB, when a client whose write deadline is 300 ms sends one of 32 MiB (more than loopback
  // socket buffers hold, so its writes stall). After 2 s the raw peer sends the rest. Returns what
  // became of the client's message: OK once the server has it whole, else the client's close.
  Status SendWhileAnotherHoldsTheBudget(std::chrono::milliseconds keepalive) {
    TransportOptions o = ChunkedOptions();
    o.frame_read_timeout = 20s;  // the holder sends nothing for 2 s
    o.budget_wait_keepalive = keepalive;
    auto budget = StartServerWithBudget(o, uint64_t{48} << 20);
    UpdateSubmission big;
    big.update.bytes = std::vector<uint8_t>(size_t{32} << 20, 0x5a);
    const OutboundMessage out = *EncodeOutbound(big, o.limits, 1);
    std::unique_ptr<RawPeer> holder = ConnectRaw("edge-holder");
    if (!holder) return Status::Internal("the holder did not connect");
    holder->StartReading();  // the server echoes its message
    if (!holder->Write(out.FrameBytes(0)).ok() || !WaitUntil([&] { return budget->used() > 0; })) {
      return Status::Internal("the holder reserved nothing");
    }
    TransportOptions client = ChunkedOptions();
    client.write_timeout = 300ms;
    Inbox inbox;
    Result<std::shared_ptr<Connection>> c = Connect("edge-waiter", inbox, client);
    if (!c.ok()) return c.status();
    Waiter<Status> sent;
    (*c)->Send(big, sent.Callback());
    if (!WaitUntil([&] { return budget->waits() > 0; })) {
      return Status::Internal("the client never waited");
    }
    std::this_thread::sleep_for(2s);  // six of the client's write deadlines
    if (!holder->Write(FramesFrom(out, 1), 30s).ok()) {
      return Status::Internal("the holder could not finish");
    }
    if (std::optional<Status> closed = inbox.WaitForClose(0ms)) return *closed;
    std::optional<Status> s = sent.Wait();
    if (!s || !s->ok()) return s ? *s : Status::DeadlineExceeded("the send never finished");
    std::optional<Accepted> at_server = AcceptedById("edge-waiter");
    if (!at_server || !at_server->inbox->WaitForMessages(1, 30s)) {
      return Status::Internal("the server never got the client's message");
    }
    EXPECT_EQ(at_server->inbox->messages()[0], Message(big));
    EXPECT_TRUE(WaitUntil([&] { return budget->used() == 0; })) << budget->used();
    return Status::Ok();
  }

  std::unique_ptr<RawPeer> ConnectRaw(const std::string& id) {
    Transport& t = ClientTransport(id, TestOptions());
    Waiter<Result<std::unique_ptr<ByteStream>>> waiter;
    if (is_tls()) {
      static_cast<TlsTransport&>(t).ConnectRaw(listener_->address(), waiter.Callback());
    } else {
      static_cast<InMemoryTransport&>(t).ConnectRaw(listener_->address(), waiter.Callback());
    }
    std::optional<Result<std::unique_ptr<ByteStream>>> s = waiter.Wait();
    if (!s || !s->ok()) {
      ADD_FAILURE() << "raw connect failed: " << (s ? s->status() : Status::DeadlineExceeded(""));
      return nullptr;
    }
    return std::make_unique<RawPeer>(std::move(**s));
  }

  // An honest session that says Hello and gets it echoed; used to show other sessions survive.
  struct Honest {
    std::shared_ptr<Connection> connection;
    std::shared_ptr<Inbox> inbox = std::make_shared<Inbox>();
  };
  Honest ConnectHonest(const std::string& id = "edge-honest") {
    Honest h;
    Result<std::shared_ptr<Connection>> c = Connect(id, *h.inbox);
    EXPECT_TRUE(c.ok()) << c.status();
    if (c.ok()) h.connection = *c;
    ExpectExchange(h);
    return h;
  }
  void ExpectExchange(Honest& h) {
    if (!h.connection) return;
    const size_t before = h.inbox->messages().size();
    Hello hello;
    hello.software_version = "exchange-" + std::to_string(before);
    h.connection->Send(hello);
    ASSERT_TRUE(h.inbox->WaitForMessages(before + 1)) << "honest session got no echo";
    EXPECT_EQ(h.inbox->messages()[before], Message(hello));
    EXPECT_FALSE(h.inbox->WaitForClose(0ms).has_value());
  }

  // Sends `bytes` from a raw peer and returns what came back before the server closed.
  std::vector<Message> SendRawExpectClose(const std::string& id, std::vector<uint8_t> bytes) {
    std::unique_ptr<RawPeer> raw = ConnectRaw(id);
    if (!raw) return {};
    raw->StartReading();
    EXPECT_TRUE(raw->Write(std::move(bytes)).ok());
    EXPECT_TRUE(raw->WaitClosed()) << "server did not close the connection";
    return ParseAll(raw->received());
  }

  Status ServerCloseStatus(const std::string& id) {
    std::optional<Accepted> a = AcceptedById(id);
    if (!a) return Status::NotFound("no accepted connection for " + id);
    std::optional<Status> s = a->inbox->WaitForClose();
    return s ? *s : Status::DeadlineExceeded("server connection did not close");
  }

  IoThreads io_{2};
  std::shared_ptr<InMemoryNetwork> network_ = std::make_shared<InMemoryNetwork>();
  std::unique_ptr<Transport> server_;
  std::shared_ptr<Listener> listener_;
  std::vector<std::unique_ptr<Transport>> clients_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<Accepted> accepted_;
};

std::vector<Message> AllMessageKinds() {
  Hello hello;
  hello.capabilities = {"cpu", {"dense", "topk"}, 600, 0, {}};
  DeclareLayout(hello.capabilities, {{"w", "F32", {3, 2}}});
  hello.software_version = "0.1.0";
  TaskAssignment task;
  task.round = 4;
  task.model = {42, {1.0f, 2.0f, 3.0f}};
  UpdateSubmission update;
  update.round = 4;
  update.metrics = {{"loss", 0.5}};
  update.update = {"dense", 42, 3, {1, 2, 3}};
  return {hello,
          Welcome{1, "edge-1", "0.1.0", 1000},
          task,
          EvaluateTask{4, 3, 32, 10, 100, {}, {42, {0.5f}}},
          update,
          EvaluateResult{4, 3, 10, 0.2, 0.9, {}},
          Heartbeat{1, 2},
          Error{static_cast<uint32_t>(ErrorCode::kProtocolViolation), "x"},
          Goodbye{"bye"}};
}

TEST_P(TransportTest, EveryMessageTypeRoundTripsInOrderAndServerSeesClientId) {
  StartServer();
  Inbox inbox;
  Result<std::shared_ptr<Connection>> c = Connect("edge-1", inbox);
  ASSERT_TRUE(c.ok()) << c.status();
  const std::vector<Message> sent = AllMessageKinds();
  for (int rep = 0; rep < 20; ++rep) {
    for (const Message& m : sent) (*c)->Send(m);
  }
  ASSERT_TRUE(inbox.WaitForMessages(sent.size() * 20));
  const std::vector<Message> got = inbox.messages();
  for (size_t i = 0; i < got.size(); ++i) EXPECT_EQ(got[i], sent[i % sent.size()]) << i;
  std::optional<Accepted> server_side = AcceptedById("edge-1");
  ASSERT_TRUE(server_side.has_value());
  EXPECT_EQ(server_side->connection->peer().id, "edge-1");
  EXPECT_EQ((*c)->peer().id, is_tls() ? "127.0.0.1" : listener_->address());
}

// A refusal longer than the wire's text cap (a Hello offering many long codec names is answered
// with all of them) reaches the peer cut to kMaxTextBytes; it used to fail its encode, and the
// peer saw the connection close with no reason.
TEST_P(TransportTest, AnErrorOrGoodbyeTooLongForTheWireArrivesCutToTheCap) {
  StartServer();
  Inbox inbox;
  Result<std::shared_ptr<Connection>> c = Connect("edge-1", inbox);
  ASSERT_TRUE(c.ok()) << c.status();
  const std::string text = "refusing edge-1: " + std::string(3 * kMaxTextBytes, 'x') + " the end";
  Waiter<Status> sent;
  (*c)->Send(Error{7, text}, sent.Callback());
  (*c)->Send(Goodbye{text, 0, 0});
  std::optional<Status> s = sent.Wait();
  ASSERT_TRUE(s.has_value());
  EXPECT_TRUE(s->ok()) << *s;
  std::optional<Accepted> server_side = AcceptedById("edge-1");
  ASSERT_TRUE(server_side.has_value());
  ASSERT_TRUE(server_side->inbox->WaitForMessages(2));
  const std::vector<Message> got = server_side->inbox->messages();
  const auto* error = std::get_if<Error>(&got[0]);
  ASSERT_NE(error, nullptr);
  EXPECT_EQ(error->code, 7u);
  EXPECT_EQ(error->message, text.substr(0, kMaxTextBytes));
  const auto* goodbye = std::get_if<Goodbye>(&got[1]);
  ASSERT_NE(goodbye, nullptr);
  EXPECT_EQ(goodbye->reason, text.substr(0, kMaxTextBytes));
  // The server echoes both back to `inbox`, a local of this test: wait for them and for the close,
  // so that no handler runs on it after the test returns (under qemu one used to, aborting on its
  // destroyed mutex).
  ASSERT_TRUE(inbox.WaitForMessages(2));
  (*c)->Close();
  EXPECT_TRUE(inbox.WaitForClose().has_value());
}

TEST_P(TransportTest, LargeModelTravelsInChunksUnderSmallFrameCap) {
  TransportOptions o = ChunkedOptions();
  StartServer(o);
  Inbox inbox;
  Result<std::shared_ptr<Connection>> c = Connect("edge-1", inbox, o);
  ASSERT_TRUE(c.ok()) << c.status();
  TaskAssignment task;
  task.model.layout_fingerprint = 7;
  std::vector<float>& values = task.model.values.mutable_values();
  values.resize(2'000'000);  // 8 MB: 131 chunks of 60 KiB
  for (size_t i = 0; i < values.size(); ++i) values[i] = float(i) * 0.5f;
  Waiter<Status> sent;
  (*c)->Send(task, sent.Callback());
  std::optional<Status> s = sent.Wait();
  ASSERT_TRUE(s.has_value());
  EXPECT_TRUE(s->ok()) << *s;
  ASSERT_TRUE(inbox.WaitForMessages(1, 20s));
  EXPECT_EQ(inbox.messages()[0], Message(task));
}

// A transfer budget shared by the server's connections (#19): twenty clients each send a 2 MiB
// message at once to a server allowed to hold 3 MiB of partial messages. They take turns (the
// others stop being read, their bytes wait in TCP) and every message arrives, whole.
TEST_P(TransportTest, ASharedTransferBudgetMakesLargeMessagesTakeTurnsAndAllArrive) {
  // A client whose server has stopped reading waits in its write for its turn. Under
  // ThreadSanitizer the others' turns take longer than TestOptions' 5 s write timeout; the
  // server's keepalives (every second) keep the clients' writes waiting (they used to give up).
  TransportOptions o = ChunkedOptions();
  auto budget = StartServerWithBudget(o, uint64_t{3} << 20);
  const TaskAssignment task = TwoMiBTask();
  auto encoded = std::make_shared<const OutboundMessage>(*EncodeOutbound(task, o.limits, 1));
  std::vector<std::unique_ptr<Inbox>> inboxes;
  std::vector<std::shared_ptr<Connection>> connections;
  for (int i = 0; i < 20; ++i) {
    inboxes.push_back(std::make_unique<Inbox>());
    Result<std::shared_ptr<Connection>> c =
        Connect("edge-" + std::to_string(i), *inboxes.back(), o);
    ASSERT_TRUE(c.ok()) << c.status();
    connections.push_back(*c);
  }
  for (auto& c : connections) c->SendEncoded(encoded);
  // The server's echo says it got the whole message. Before it, a client that waited for its turn
  // longer than budget_wait_keepalive (1 s; under ThreadSanitizer) heard the server's keepalives.
  for (auto& inbox : inboxes) {
    std::vector<Message> got;
    const auto end = std::chrono::steady_clock::now() + 120s;
    while (std::chrono::steady_clock::now() < end) {
      got = inbox->messages();
      if (!got.empty() && !std::holds_alternative<Heartbeat>(got.back())) break;
      inbox->WaitForMessages(got.size() + 1, 100ms);
    }
    ASSERT_FALSE(got.empty());
    EXPECT_EQ(got.back(), Message(task));
    for (size_t i = 0; i + 1 < got.size(); ++i) {
      const auto* beat = std::get_if<Heartbeat>(&got[i]);
      ASSERT_TRUE(beat != nullptr) << MessageTypeName(TypeOf(got[i]));
      EXPECT_EQ(beat->sequence, 0u);
    }
  }
  EXPECT_LE(budget->peak(), uint64_t{3} << 20);
  EXPECT_GT(budget->waits(), 0u) << "no transfer ever waited for the budget";
  EXPECT_EQ(budget->used(), 0u);
}

// A connection that waits for the transfer budget has stopped reading, so its peer is not late:
// the frame deadline stops while it waits (CI under ThreadSanitizer once dropped waiting clients
// with kTimeout). One peer's 2 MiB transfer holds the budget for three times the frame deadline
// (sending a chunk every 200 ms: a message that gains nothing for a deadline is closed) while
// another peer's first frame has begun; both messages then arrive whole.
TEST_P(TransportTest, WaitingForTheTransferBudgetDoesNotCountAgainstTheFrameDeadline) {
  TransportOptions o = ChunkedOptions();
  o.frame_read_timeout = 1s;
  auto budget = StartServerWithBudget(o, uint64_t{3} << 20);
  const TaskAssignment task = TwoMiBTask();
  const OutboundMessage out = *EncodeOutbound(task, o.limits, 1);
  constexpr size_t kHeld = 15;  // frames the holder trickles, one per 200 ms
  ASSERT_GT(out.frames.size(), kHeld + 2);
  const std::vector<uint8_t> rest = FramesFrom(out, kHeld + 1);  // after the trickled ones

  std::unique_ptr<RawPeer> holder = ConnectRaw("edge-holder");
  std::unique_ptr<RawPeer> waiter = ConnectRaw("edge-waiter");
  ASSERT_TRUE(holder && waiter);
  holder->StartReading();
  waiter->StartReading();
  ASSERT_TRUE(holder->Write(out.FrameBytes(0)).ok());
  ASSERT_TRUE(WaitUntil([&] { return budget->used() > 0; })) << "the holder reserved nothing";
  const std::vector<uint8_t> first = out.FrameBytes(0);
  ASSERT_TRUE(waiter->Write({first.begin(), first.begin() + 100}).ok());  // a frame has begun
  ASSERT_TRUE(WaitUntil([&] { return budget->waits() > 0; })) << "the waiter never waited";
  for (size_t i = 1; i <= kHeld; ++i) {  // three frame deadlines
    std::this_thread::sleep_for(200ms);
    ASSERT_TRUE(holder->Write(out.FrameBytes(i)).ok()) << i;
  }

  // The waiter's remaining bytes go out on another thread (the server reads them only once the
  // budget has room), then the holder finishes its message and frees the budget.
  std::vector<uint8_t> waiter_rest(first.begin() + 100, first.end());
  for (size_t i = 1; i <= kHeld; ++i) {
    const std::vector<uint8_t> f = out.FrameBytes(i);
    waiter_rest.insert(waiter_rest.end(), f.begin(), f.end());
  }
  waiter_rest.insert(waiter_rest.end(), rest.begin(), rest.end());
  std::future<Status> waiter_sent =
      std::async(std::launch::async, [&] { return waiter->Write(std::move(waiter_rest), 20s); });
  ASSERT_TRUE(holder->Write(rest, 20s).ok());
  EXPECT_TRUE(waiter_sent.get().ok());
  for (const char* id : {"edge-holder", "edge-waiter"}) {
    std::optional<Accepted> a = AcceptedById(id);
    ASSERT_TRUE(a.has_value()) << id;
    ASSERT_TRUE(a->inbox->WaitForMessages(1, 20s))
        << id << " closed: " << a->inbox->WaitForClose(0ms).value_or(Status::Ok());
    EXPECT_EQ(a->inbox->messages()[0], Message(task)) << id;
  }
  EXPECT_TRUE(WaitUntil([&] { return budget->used() == 0; })) << budget->used();
}

// A connection waiting for the transfer budget reads nothing, so its peer's heartbeats go
// unanswered and tributary-client would drop the link after three heartbeat intervals of silence,
// to send its upload again later. Instead the waiting side sends the peer a Heartbeat (sequence 0)
// every budget_wait_keepalive, says waiting_for_budget() (a silence sweep then does not count the
// peer silent), and stops both once its message fits. The connection holding the budget gets none.
TEST_P(TransportTest, AConnectionWaitingForTheBudgetKeepsItsPeerHearingFromIt) {
  TransportOptions o = ChunkedOptions();
  o.budget_wait_keepalive = 200ms;
  auto budget = StartServerWithBudget(o, uint64_t{3} << 20);
  const TaskAssignment task = TwoMiBTask();
  const OutboundMessage out = *EncodeOutbound(task, o.limits, 1);
  const std::vector<uint8_t> rest = FramesFrom(out, 1);  // every frame after the first
  // The keepalives a raw peer has received (the fixture's server echoes each message it receives,
  // so the waiter's own message comes back at the end, possibly still arriving).
  const auto keepalives = [](RawPeer& p) {
    MessageReader reader(ProtocolLimits{});
    std::vector<Message> got;
    EXPECT_TRUE(reader.Feed(p.received(), &got).ok());
    int n = 0;
    for (const Message& m : got)
      if (const auto* beat = std::get_if<Heartbeat>(&m); beat && beat->sequence == 0) {
        EXPECT_GT(beat->sent_unix_ms, 0u);
        ++n;
      }
    return n;
  };

  std::unique_ptr<RawPeer> holder = ConnectRaw("edge-holder");
  std::unique_ptr<RawPeer> waiter = ConnectRaw("edge-waiter");
  ASSERT_TRUE(holder && waiter);
  holder->StartReading();
  waiter->StartReading();
  ASSERT_TRUE(holder->Write(out.FrameBytes(0)).ok());
  ASSERT_TRUE(WaitUntil([&] { return budget->used() > 0; })) << "the holder reserved nothing";
  ASSERT_TRUE(waiter->Write(out.FrameBytes(0)).ok());
  ASSERT_TRUE(WaitUntil([&] { return budget->waits() > 0; })) << "the waiter never waited";
  std::optional<Accepted> held = AcceptedById("edge-holder");
  std::optional<Accepted> waiting = AcceptedById("edge-waiter");
  ASSERT_TRUE(held && waiting);
  EXPECT_TRUE(WaitUntil([&] { return waiting->connection->waiting_for_budget(); }));
  EXPECT_FALSE(held->connection->waiting_for_budget());

  std::this_thread::sleep_for(1100ms);  // five keepalive intervals
  const int during = keepalives(*waiter);
  EXPECT_EQ(ParseAll(waiter->received()).size(), static_cast<size_t>(during));  // nothing else
  EXPECT_GE(during, 3);  // 5 on an idle machine; the timer may run late under load
  EXPECT_LE(during, 6);
  EXPECT_EQ(keepalives(*holder), 0);

  std::future<Status> waiter_sent =
      std::async(std::launch::async, [&] { return waiter->Write(rest, 20s); });
  ASSERT_TRUE(holder->Write(rest, 20s).ok());
  EXPECT_TRUE(waiter_sent.get().ok());
  for (const std::optional<Accepted>* a : {&held, &waiting}) {
    ASSERT_TRUE((*a)->inbox->WaitForMessages(1, 20s));
    EXPECT_EQ((*a)->inbox->messages()[0], Message(task));
  }
  EXPECT_FALSE(waiting->connection->waiting_for_budget());
  const int after = keepalives(*waiter);
  std::this_thread::sleep_for(500ms);
  EXPECT_EQ(keepalives(*waiter), after) << "keepalives went on after the message fitted";
  EXPECT_TRUE(WaitUntil([&] { return budget->used() == 0; })) << budget->used();
}

// The owner's hold (Connection::HoldReading; CoordinatorService holds a client far ahead of its
// engine): reading stops after the messages of the read in hand, the frame deadline (300 ms) does
// not run meanwhile though a frame may have begun, and the peer hears a keepalive every 200 ms. On
// resuming, what the peer sent in the meantime arrives, in order, and the keepalives stop.
TEST_P(TransportTest, AHeldConnectionReadsNothingMoreUntilResumedAndKeepsItsPeerHearingFromIt) {
  TransportOptions o = TestOptions();
  o.frame_read_timeout = 300ms;
  o.budget_wait_keepalive = 200ms;
  StartServer(o);
  std::unique_ptr<RawPeer> peer = ConnectRaw("edge-held");
  ASSERT_TRUE(peer);
  peer->StartReading();
  std::optional<Accepted> at_server = AcceptedById("edge-held");
  ASSERT_TRUE(at_server);
  at_server->connection->HoldReading();
  // A message sent after the hold reaches the peer after the hold took effect (one strand).
  at_server->connection->Send(Heartbeat{7, 0});
  const auto beats = [&peer](uint64_t seq) {
    size_t n = 0;
    for (const Message& m : ParseAll(peer->received()))
      if (const auto* h = std::get_if<Heartbeat>(&m); h && h->sequence == seq) ++n;
    return n;
  };
  ASSERT_TRUE(WaitUntil([&] { return beats(7) == 1; }));

  Hello a, b, c;
  a.software_version = "a";
  b.software_version = "b";
  c.software_version = "c";
  std::vector<uint8_t> bytes = EncodeOutbound(a, {}, 1)->Flatten();
  std::vector<uint8_t> rest = EncodeOutbound(b, {}, 2)->Flatten();
  bytes.insert(bytes.end(), rest.begin(), rest.begin() + 20);  // b's header and 4 bytes more
  rest.erase(rest.begin(), rest.begin() + 20);
  const std::vector<uint8_t> c_bytes = EncodeOutbound(c, {}, 3)->Flatten();
  rest.insert(rest.end(), c_bytes.begin(), c_bytes.end());
  ASSERT_TRUE(peer->Write(bytes).ok());
  ASSERT_TRUE(at_server->inbox->WaitForMessages(1));  // a: the read in hand is delivered
  ASSERT_TRUE(peer->Write(rest).ok());                // the rest waits in the socket
  std::this_thread::sleep_for(1100ms);                // over three frame deadlines
  EXPECT_EQ(at_server->inbox->messages().size(), 1u);
  EXPECT_FALSE(at_server->inbox->WaitForClose(0ms).has_value());
  EXPECT_FALSE(peer->WaitClosed(0ms));
  const size_t during = beats(0);
  EXPECT_GE(during, 3u);  // 5 on an idle machine; the timer may run late under load
  EXPECT_LE(during, 6u);

  at_server->connection->ResumeReading();
  ASSERT_TRUE(at_server->inbox->WaitForMessages(3));
  EXPECT_EQ(at_server->inbox->messages()[0], Message(a));
  EXPECT_EQ(at_server->inbox->messages()[1], Message(b));
  EXPECT_EQ(at_server->inbox->messages()[2], Message(c));
  // The server echoes every message: b's and c's come back after the resume.
  ASSERT_TRUE(WaitUntil([&] { return ParseAll(peer->received()).size() >= during + 4; }));
  const size_t after = beats(0);
  std::this_thread::sleep_for(500ms);
  EXPECT_EQ(beats(0), after) << "keepalives went on after the resume";
  EXPECT_FALSE(at_server->inbox->WaitForClose(0ms).has_value());
}

// A client's frame write outlasts its write deadline when the server has paused reading it for
// the transfer budget. While the server's keepalives come, the client (it dialed the connection)
// waits for its turn instead of giving up and sending its update again later; tributary-client's
// 30 s deadline used to bound the wait.
TEST_P(TransportTest, ADialedWriteWaitsForItsTurnWhileTheServerSaysItWaits) {
  const Status s = SendWhileAnotherHoldsTheBudget(100ms);
  EXPECT_TRUE(s.ok()) << s;
}

// The same without keepalives: the stalled write times out at the client's deadline, as for a
// server that stopped reading (this is what shows the write above really stalled).
TEST_P(TransportTest, WithoutKeepalivesADialedWriteStalledByTheBudgetTimesOut) {
  const Status s = SendWhileAnotherHoldsTheBudget(0ms);
  EXPECT_EQ(ProtocolErrorCodeOf(s), ErrorCode::kTimeout) << s;
  EXPECT_NE(s.message().find("writing a frame"), std::string::npos) << s;
}

// A peer that begins a large chunked message and then sends only heartbeats would hold its
// transfer reservation for good (and with a budget that fits one such message, every other
// upload waits behind it). The message must gain bytes within the frame deadline: the peer is
// answered with TIMEOUT and closed, the reservation is returned, and another peer's message
// arrives whole.
TEST_P(TransportTest, AChunkedMessageThatGainsNoBytesLosesItsReservation) {
  TransportOptions o = ChunkedOptions();
  o.frame_read_timeout = 500ms;
  auto budget = StartServerWithBudget(o, uint64_t{3} << 20);
  const TaskAssignment task = TwoMiBTask();
  const OutboundMessage out = *EncodeOutbound(task, o.limits, 1);
  const OutboundMessage beat = *EncodeOutbound(Heartbeat{1, 0}, o.limits, 2);
  ASSERT_EQ(beat.frames.size(), 1u);
  std::unique_ptr<RawPeer> staller = ConnectRaw("edge-staller");
  ASSERT_TRUE(staller);
  staller->StartReading();
  ASSERT_TRUE(staller->Write(out.FrameBytes(0)).ok());
  const auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < 100 && budget->used() == 0; ++i) std::this_thread::sleep_for(5ms);
  ASSERT_GT(budget->used(), 0u) << "the staller reserved nothing";
  // Heartbeats every 100 ms: frames complete on time, the message gains nothing.
  bool closed = false;
  for (int i = 0; i < 30 && !closed; ++i) {
    std::this_thread::sleep_for(100ms);
    closed = !staller->Write(beat.FrameBytes(0), 1s).ok() || staller->WaitClosed(0ms);
  }
  ASSERT_TRUE(staller->WaitClosed(5s)) << "the staller was never closed";
  EXPECT_LT(std::chrono::steady_clock::now() - t0, 2500ms);
  std::optional<Accepted> server_side = AcceptedById("edge-staller");
  ASSERT_TRUE(server_side.has_value());
  std::optional<Status> why = server_side->inbox->WaitForClose(5s);
  ASSERT_TRUE(why.has_value());
  EXPECT_EQ(ProtocolErrorCodeOf(*why), ErrorCode::kTimeout) << *why;
  EXPECT_NE(why->message().find("gained no bytes within 500 ms"), std::string::npos) << *why;
  for (int i = 0; i < 400 && budget->used() != 0; ++i) std::this_thread::sleep_for(5ms);
  EXPECT_EQ(budget->used(), 0u);
  // The budget serves the next upload.
  Inbox inbox;
  Result<std::shared_ptr<Connection>> c = Connect("edge-next", inbox, o);
  ASSERT_TRUE(c.ok()) << c.status();
  (*c)->Send(task);
  ASSERT_TRUE(inbox.WaitForMessages(1, 20s));  // the server's echo: it got the whole message
  EXPECT_EQ(inbox.messages()[0], Message(task));
}

// A peer that keeps its chunked message alive with a tiny chunk inside every frame deadline
// gains bytes each time, so the deadline above never fires. It sends 256 bytes every 50 ms (5
// KiB/s) under TransportOptions::min_message_rate = 64 KiB/s after a 400 ms grace: the message must
// have (t - 0.4 s) x 64 KiB by time t, so the peer is answered with TIMEOUT about 0.45 s in and
// closed, and its reservation is returned.
TEST_P(TransportTest, AChunkedMessageBelowTheMinimumRateLosesItsReservation) {
  const Trickle t = TrickleTinyChunks(uint64_t{64} << 10);
  ASSERT_TRUE(t.peer && t.budget);
  ASSERT_TRUE(t.peer->WaitClosed(5s)) << "the trickler was never closed";
  EXPECT_LT(t.elapsed, 1500ms);
  std::optional<Accepted> server_side = AcceptedById("edge-trickler");
  ASSERT_TRUE(server_side.has_value());
  std::optional<Status> why = server_side->inbox->WaitForClose(5s);
  ASSERT_TRUE(why.has_value());
  EXPECT_EQ(ProtocolErrorCodeOf(*why), ErrorCode::kTimeout) << *why;
  EXPECT_NE(
      why->message().find("slower than the minimum rate of 65536 bytes/s after a grace of 400 ms"),
      std::string::npos)
      << *why;
  for (int i = 0; i < 400 && t.budget->used() != 0; ++i) std::this_thread::sleep_for(5ms);
  EXPECT_EQ(t.budget->used(), 0u);
}

// The same trickle with no minimum rate (0) still holds its reservation after 1.5 s: the rule
// above is what returns it.
TEST_P(TransportTest, WithNoMinimumRateATrickleKeepsItsReservation) {
  const Trickle t = TrickleTinyChunks(0);
  ASSERT_TRUE(t.peer && t.budget);
  EXPECT_FALSE(t.peer->WaitClosed(0ms)) << "closed with no minimum rate";
  EXPECT_GT(t.budget->used(), 0u);
}

// The minimum rate's clock is per message: when one slow message ends and the next begins in the
// same write, the next starts with a full grace. Two 10 KiB messages in 1 KiB chunks at 10 KiB/s
// (above the 4 KiB/s minimum) each take about 1 s, over twice the 400 ms grace; the last chunk
// of the first and the first chunk of the second go in one write. Both arrive, and the
// connection stays open.
TEST_P(TransportTest, TheMinimumRateTimesEachMessageFromItsOwnFirstChunk) {
  TransportOptions o = ChunkedOptions();
  o.frame_read_timeout = 400ms;
  o.min_message_rate = 4 << 10;
  auto budget = StartServerWithBudget(o, uint64_t{3} << 20);
  ProtocolLimits small = o.limits;
  small.chunk_data_bytes = 1 << 10;
  TaskAssignment a, b;
  a.model.values.mutable_values().assign(5 << 9, 0.5f);
  b.model.values.mutable_values().assign(5 << 9, -0.5f);
  const OutboundMessage out_a = *EncodeOutbound(a, small, 1), out_b = *EncodeOutbound(b, small, 2);
  ASSERT_GT(out_a.frames.size(), 9u);
  std::unique_ptr<RawPeer> peer = ConnectRaw("edge-steady");
  ASSERT_TRUE(peer);
  peer->StartReading();
  for (size_t i = 0; i + 1 < out_a.frames.size(); ++i) {
    ASSERT_TRUE(peer->Write(out_a.FrameBytes(i)).ok()) << i;
    std::this_thread::sleep_for(100ms);
  }
  std::vector<uint8_t> joined = out_a.FrameBytes(out_a.frames.size() - 1);
  const std::vector<uint8_t> first_b = out_b.FrameBytes(0);
  joined.insert(joined.end(), first_b.begin(), first_b.end());
  ASSERT_TRUE(peer->Write(joined).ok());
  for (size_t i = 1; i < out_b.frames.size(); ++i) {
    std::this_thread::sleep_for(100ms);
    ASSERT_TRUE(peer->Write(out_b.FrameBytes(i)).ok()) << i;
  }
  std::optional<Accepted> server_side = AcceptedById("edge-steady");
  ASSERT_TRUE(server_side.has_value());
  ASSERT_TRUE(server_side->inbox->WaitForMessages(2, 10s))
      << server_side->inbox->WaitForClose(0ms).value_or(Status::Ok());
  EXPECT_EQ(server_side->inbox->messages()[0], Message(a));
  EXPECT_EQ(server_side->inbox->messages()[1], Message(b));
  EXPECT_FALSE(server_side->inbox->WaitForClose(0ms).has_value());
}

TEST_P(TransportTest, OneEncodedTaskGoesToManyClients) {
  TransportOptions o = TestOptions();
  o.limits.chunk_data_bytes = 256 << 10;  // the 2 MB model travels in chunks
  StartServer(o);
  Inbox a_inbox, b_inbox;
  Result<std::shared_ptr<Connection>> a = Connect("edge-a", a_inbox, o);
  Result<std::shared_ptr<Connection>> b = Connect("edge-b", b_inbox, o);
  ASSERT_TRUE(a.ok() && b.ok());
  TaskAssignment task;
  task.round = 9;
  task.model.values.mutable_values().assign(500'000, 1.25f);
  Result<OutboundMessage> encoded = EncodeOutbound(task, o.limits, 1);
  ASSERT_TRUE(encoded.ok()) << encoded.status();
  ASSERT_GT(encoded->frames.size(), 1u);
  auto shared = std::make_shared<const OutboundMessage>(std::move(*encoded));
  for (const std::string id : {"edge-a", "edge-b"}) {
    std::optional<Accepted> server_side = AcceptedById(id);
    ASSERT_TRUE(server_side.has_value());
    Waiter<Status> sent;
    server_side->connection->SendEncoded(shared, sent.Callback());
    std::optional<Status> s = sent.Wait();
    ASSERT_TRUE(s.has_value() && s->ok());
  }
  ASSERT_TRUE(a_inbox.WaitForMessages(1));
  ASSERT_TRUE(b_inbox.WaitForMessages(1));
  EXPECT_EQ(a_inbox.messages()[0], Message(task));
  EXPECT_EQ(b_inbox.messages()[0], Message(task));
}

TEST_P(TransportTest, CloseFlushesQueuedMessagesThenClosesCleanly) {
  StartServer();
  Inbox inbox;
  Result<std::shared_ptr<Connection>> c = Connect("edge-1", inbox);
  ASSERT_TRUE(c.ok()) << c.status();
  for (uint64_t i = 0; i < 50; ++i) (*c)->Send(Heartbeat{i, 0});
  (*c)->Close();
  std::optional<Status> closed = inbox.WaitForClose();
  ASSERT_TRUE(closed.has_value());
  EXPECT_TRUE(closed->ok()) << *closed;
  std::optional<Accepted> server_side = AcceptedById("edge-1");
  ASSERT_TRUE(server_side.has_value());
  ASSERT_TRUE(server_side->inbox->WaitForMessages(50));
  EXPECT_EQ(server_side->inbox->messages()[49], Message(Heartbeat{49, 0}));
  std::optional<Status> server_closed = server_side->inbox->WaitForClose();
  ASSERT_TRUE(server_closed.has_value());
  EXPECT_TRUE(server_closed->ok()) << *server_closed;

  Waiter<Status> late;
  (*c)->Send(Heartbeat{}, late.Callback());
  std::optional<Status> s = late.Wait();
  ASSERT_TRUE(s.has_value());
  EXPECT_EQ(s->code(), StatusCode::kAborted);
}

TEST_P(TransportTest, LengthPrefixOfTwoToTheFortyIsFrameTooLargeWithoutAllocating) {
  StartServer();
  Honest honest = ConnectHonest();
  const size_t rss_before = CurrentRssBytes();
  std::vector<Message> got = SendRawExpectClose(
      "edge-attacker", HeaderBytes(kProtocolVersion, MessageType::kUpdateSubmission, 1ULL << 40));
  const size_t rss_after = CurrentRssBytes();
  EXPECT_LT(rss_after, rss_before + (10u << 20)) << "RSS grew by " << (rss_after - rss_before);
  ASSERT_EQ(got.size(), 1u);
  const Error& e = std::get<Error>(got[0]);
  EXPECT_EQ(e.code, static_cast<uint32_t>(ErrorCode::kFrameTooLarge));
  EXPECT_NE(e.message.find("1099511627776"), std::string::npos) << e.message;
  const Status server = ServerCloseStatus("edge-attacker");
  EXPECT_EQ(ProtocolErrorCodeOf(server), ErrorCode::kFrameTooLarge) << server;
  ExpectExchange(honest);
}

TEST_P(TransportTest, WrongMagicGetsErrorThenClose) {
  StartServer();
  Honest honest = ConnectHonest();
  const std::string http = "GET / HTTP/1.1\r\nHost: x\r\n\r\n";
  std::vector<Message> got = SendRawExpectClose("edge-http", {http.begin(), http.end()});
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(std::get<Error>(got[0]).code, static_cast<uint32_t>(ErrorCode::kBadMagic));
  EXPECT_EQ(ProtocolErrorCodeOf(ServerCloseStatus("edge-http")), ErrorCode::kBadMagic);
  ExpectExchange(honest);
}

TEST_P(TransportTest, WrongVersionGetsErrorNamingBothVersionsThenClose) {
  StartServer();
  Honest honest = ConnectHonest();
  const uint16_t future = kProtocolVersion + 1;  // a newer peer's
  std::vector<uint8_t> bytes = HeaderBytes(future, MessageType::kHello, 4);
  bytes.insert(bytes.end(), {0, 0, 0, 0});
  std::vector<Message> got = SendRawExpectClose("edge-future", bytes);
  ASSERT_EQ(got.size(), 1u);
  const Error& e = std::get<Error>(got[0]);
  EXPECT_EQ(e.code, static_cast<uint32_t>(ErrorCode::kUnsupportedVersion));
  EXPECT_EQ(e.message, "UNSUPPORTED_VERSION: peer speaks protocol version " +
                           std::to_string(future) + "; this build speaks version " +
                           std::to_string(kProtocolVersion));
  ExpectExchange(honest);
}

TEST_P(TransportTest, VectorSizeTagBeyondBytesLeftGetsMalformedMessage) {
  StartServer();
  Honest honest = ConnectHonest();
  EvaluateTask t;
  t.model.values = std::vector<float>{1, 2, 3};
  std::vector<uint8_t> body = *EncodeMessageBody(t);
  const uint64_t huge = 1ULL << 50;
  std::memcpy(body.data() + body.size() - 12 - 8, &huge, 8);  // the float count
  std::vector<uint8_t> bytes =
      HeaderBytes(kProtocolVersion, MessageType::kEvaluateTask, body.size());
  bytes.insert(bytes.end(), body.begin(), body.end());
  std::vector<Message> got = SendRawExpectClose("edge-liar", bytes);
  ASSERT_EQ(got.size(), 1u);
  const Error& e = std::get<Error>(got[0]);
  EXPECT_EQ(e.code, static_cast<uint32_t>(ErrorCode::kMalformedMessage));
  EXPECT_NE(e.message.find("model.values: size 1125899906842624"), std::string::npos) << e.message;
  ExpectExchange(honest);
}

TEST_P(TransportTest, HalfSentFrameTimesOut) {
  TransportOptions o = TestOptions();
  o.frame_read_timeout = 300ms;
  StartServer(o);
  Honest honest = ConnectHonest();
  std::vector<uint8_t> frame = EncodeOutbound(Heartbeat{1, 2}, {}, 1)->Flatten();
  frame.resize(10);  // not even the whole header
  const auto start = std::chrono::steady_clock::now();
  std::vector<Message> got = SendRawExpectClose("edge-slow", frame);
  const auto waited = std::chrono::steady_clock::now() - start;
  EXPECT_GE(waited, 250ms);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(std::get<Error>(got[0]).code, static_cast<uint32_t>(ErrorCode::kTimeout));
  const Status server = ServerCloseStatus("edge-slow");
  EXPECT_EQ(server.code(), StatusCode::kDeadlineExceeded) << server;
  ExpectExchange(honest);
}

// A peer that vanishes after the first chunk of a 3 MiB update (over TLS: a TCP close with no
// close_notify) ends only its own session, with a status that says so.
TEST_P(TransportTest, PeerThatDropsMidMessageEndsOnlyItsSession) {
  StartServer(TestOptions());
  Honest honest = ConnectHonest();
  UpdateSubmission big;
  big.update.bytes = std::vector<uint8_t>(3 << 20, 5);
  const OutboundMessage out = *EncodeOutbound(big, ProtocolLimits{}, 1);
  ASSERT_GT(out.frames.size(), 2u);
  {
    std::unique_ptr<RawPeer> raw = ConnectRaw("edge-dropper");
    ASSERT_NE(raw, nullptr);
    ASSERT_TRUE(raw->Write(out.FrameBytes(0)).ok());
  }  // ~RawPeer closes the stream abruptly
  const Status server = ServerCloseStatus("edge-dropper");
  EXPECT_EQ(server.code(), StatusCode::kUnavailable) << server;
  EXPECT_NE(server.message().find("in the middle of a message"), std::string::npos) << server;
  ExpectExchange(honest);
}

TEST_P(TransportTest, PeerThatStopsReadingTimesOutTheWrite) {
  TransportOptions o = TestOptions();
  o.write_timeout = 300ms;
  StartServer(o);
  Honest honest = ConnectHonest();
  std::unique_ptr<RawPeer> raw = ConnectRaw("edge-deaf");  // never reads
  ASSERT_NE(raw, nullptr);
  std::optional<Accepted> deaf = AcceptedById("edge-deaf");
  ASSERT_TRUE(deaf.has_value());
  UpdateSubmission big;
  big.update.bytes = std::vector<uint8_t>(32 << 20);  // more than loopback socket buffers hold
  Waiter<Status> sent;
  deaf->connection->Send(big, sent.Callback());
  std::optional<Status> s = sent.Wait();
  ASSERT_TRUE(s.has_value());
  EXPECT_EQ(s->code(), StatusCode::kAborted) << *s;
  std::optional<Status> closed = deaf->inbox->WaitForClose();
  ASSERT_TRUE(closed.has_value());
  EXPECT_EQ(ProtocolErrorCodeOf(*closed), ErrorCode::kTimeout) << *closed;
  EXPECT_NE(closed->message().find("writing a frame"), std::string::npos) << *closed;
  ExpectExchange(honest);
}

// Heartbeats do not keep a write waiting on an accepted connection: a peer that stops reading
// but sends heartbeats would otherwise hold the server's write (and the message's buffers) for
// good.
TEST_P(TransportTest, APeerThatStopsReadingButSendsHeartbeatsStillTimesOutTheWrite) {
  TransportOptions o = TestOptions();
  o.write_timeout = 300ms;
  StartServer(o);
  std::unique_ptr<RawPeer> raw = ConnectRaw("edge-deaf");  // never reads
  ASSERT_NE(raw, nullptr);
  std::optional<Accepted> deaf = AcceptedById("edge-deaf");
  ASSERT_TRUE(deaf.has_value());
  const OutboundMessage beat = *EncodeOutbound(Heartbeat{0, 1}, o.limits, 1);
  std::atomic<bool> stop{false};
  std::thread beating([&] {  // a heartbeat every 50 ms, six to each write deadline
    while (!stop && raw->Write(beat.FrameBytes(0), 1s).ok() && !raw->WaitClosed(0ms))
      std::this_thread::sleep_for(50ms);
  });
  UpdateSubmission big;
  big.update.bytes = std::vector<uint8_t>(32 << 20);  // more than loopback socket buffers hold
  Waiter<Status> sent;
  const auto t0 = std::chrono::steady_clock::now();
  deaf->connection->Send(big, sent.Callback());
  std::optional<Status> s = sent.Wait();
  const auto took = std::chrono::steady_clock::now() - t0;
  stop = true;
  beating.join();
  ASSERT_TRUE(s.has_value());
  EXPECT_EQ(s->code(), StatusCode::kAborted) << *s;
  EXPECT_LT(took, 5s);
  std::optional<Status> closed = deaf->inbox->WaitForClose();
  ASSERT_TRUE(closed.has_value());
  EXPECT_EQ(ProtocolErrorCodeOf(*closed), ErrorCode::kTimeout) << *closed;
  EXPECT_NE(closed->message().find("writing a frame"), std::string::npos) << *closed;
  EXPECT_GT(deaf->inbox->messages().size(), 0u) << "no heartbeat reached the server";
}

TEST_P(TransportTest, MessageOverReceiverCapIsRefused) {
  TransportOptions o = TestOptions();
  o.limits.max_message_bytes = 1 << 20;
  StartServer(o);
  Honest honest = ConnectHonest();
  Inbox inbox;
  TransportOptions client = TestOptions();  // the client would send up to 1 GiB
  Result<std::shared_ptr<Connection>> c = Connect("edge-big", inbox, client);
  ASSERT_TRUE(c.ok()) << c.status();
  UpdateSubmission big;
  big.update.bytes = std::vector<uint8_t>(3 << 20);
  (*c)->Send(big);
  const Status server = ServerCloseStatus("edge-big");
  EXPECT_EQ(ProtocolErrorCodeOf(server), ErrorCode::kMessageTooLarge) << server;
  EXPECT_NE(server.message().find("the cap is 1048576"), std::string::npos) << server;
  ASSERT_TRUE(inbox.WaitForClose().has_value());
  for (const Message& m : inbox.messages()) {  // the Error, unless the close won the race
    EXPECT_EQ(std::get<Error>(m).code, static_cast<uint32_t>(ErrorCode::kMessageTooLarge));
  }
  ExpectExchange(honest);
}

TEST_P(TransportTest, RevokedClientGetsErrorAndNeverReachesTheServer) {
  auto deny = std::make_shared<DenyList>();
  ASSERT_TRUE(deny->Add("edge-revoked").ok());
  TransportOptions o = TestOptions();
  o.deny_list = deny;
  StartServer(o);
  Honest honest = ConnectHonest();
  Inbox inbox;
  Result<std::shared_ptr<Connection>> c = Connect("edge-revoked", inbox);
  ASSERT_TRUE(c.ok()) << c.status();
  std::optional<Status> closed = inbox.WaitForClose();
  ASSERT_TRUE(closed.has_value());
  const std::vector<Message> got = inbox.messages();
  ASSERT_EQ(got.size(), 1u);
  const Error& e = std::get<Error>(got[0]);
  EXPECT_EQ(e.code, static_cast<uint32_t>(ErrorCode::kRevoked));
  EXPECT_EQ(e.message, "REVOKED: client id 'edge-revoked' is revoked");
  EXPECT_EQ(accepted_count(), 1u);  // only the honest session
  ExpectExchange(honest);
}

TEST_P(TransportTest, ConnectToNothingFails) {
  StartServer();
  Waiter<Result<std::shared_ptr<Connection>>> waiter;
  const std::string nowhere = is_tls() ? "127.0.0.1:1" : "no-such-listener";
  ClientTransport("edge-1", TestOptions()).Connect(nowhere, waiter.Callback());
  std::optional<Result<std::shared_ptr<Connection>>> c = waiter.Wait();
  ASSERT_TRUE(c.has_value());
  ASSERT_FALSE(c->ok());
  EXPECT_EQ(c->status().code(), StatusCode::kUnavailable) << c->status();
}

INSTANTIATE_TEST_SUITE_P(Transports, TransportTest, ::testing::Values(Kind::kInMemory, Kind::kTls),
                         [](const ::testing::TestParamInfo<Kind>& p) {
                           return p.param == Kind::kTls ? std::string("Tls")
                                                        : std::string("InMemory");
                         });

}  // namespace
}  // namespace tributary

// In-memory specifics: the listener name registry, identity admission, and the pipe's bounded
// buffering (a writer waits for the reader). Shared behaviour is in transport_test.cc.
#include <gtest/gtest.h>

#include <boost/asio/post.hpp>
#include <boost/asio/strand.hpp>
#include <future>

#include "protocol/framed_connection.h"
#include "protocol/in_memory_stream.h"
#include "protocol/in_memory_transport.h"
#include "tests/protocol/transport_test_util.h"

namespace tributary {
namespace {

using namespace tributary::testing;
namespace asio = boost::asio;

TEST(InMemoryTransportTest, ListenerNamesAreUniqueAndStopFreesTheName) {
  IoThreads io;
  auto network = std::make_shared<InMemoryNetwork>();
  auto t = std::move(*InMemoryTransport::Create(io.io(), network, {}));
  auto noop = [](std::shared_ptr<Connection>) {};
  std::shared_ptr<Listener> a = *t->Listen("coordinator", noop);
  Result<std::shared_ptr<Listener>> again = t->Listen("coordinator", noop);
  ASSERT_FALSE(again.ok());
  EXPECT_NE(again.status().message().find("already listening"), std::string::npos);
  std::shared_ptr<Listener> fresh = *t->Listen("", noop);
  EXPECT_EQ(fresh->address().rfind("mem-", 0), 0u) << fresh->address();
  a->Stop();
  EXPECT_TRUE(t->Listen("coordinator", noop).ok());
}

TEST(InMemoryTransportTest, ClientWithoutIdentityIsUnauthenticated) {
  IoThreads io;
  auto network = std::make_shared<InMemoryNetwork>();
  auto server = std::move(*InMemoryTransport::Create(io.io(), network, {}));
  std::atomic<int> accepted{0};
  std::shared_ptr<Listener> l =
      *server->Listen("", [&](std::shared_ptr<Connection>) { ++accepted; });
  auto anonymous = std::move(*InMemoryTransport::Create(io.io(), network, {}));  // client_id ""
  Waiter<Result<std::shared_ptr<Connection>>> waiter;
  anonymous->Connect(l->address(), waiter.Callback());
  std::optional<Result<std::shared_ptr<Connection>>> c = waiter.Wait();
  ASSERT_TRUE(c.has_value() && c->ok());
  Inbox inbox;
  (**c)->Start(inbox.OnMessage(), inbox.OnClose());
  ASSERT_TRUE(inbox.WaitForClose().has_value());
  const std::vector<Message> got = inbox.messages();
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(std::get<Error>(got[0]).code, static_cast<uint32_t>(ErrorCode::kUnauthenticated));
  EXPECT_EQ(accepted.load(), 0);
}

TEST(InMemoryTransportTest, CreateRejectsBadOptions) {
  asio::io_context io;
  InMemoryTransportOptions o;
  o.transport.limits.chunk_data_bytes = o.transport.limits.max_frame_payload;
  EXPECT_EQ(InMemoryTransport::Create(io, std::make_shared<InMemoryNetwork>(), o).status().code(),
            StatusCode::kInvalidArgument);
  o = {};
  o.pipe_capacity = 0;
  EXPECT_FALSE(InMemoryTransport::Create(io, std::make_shared<InMemoryNetwork>(), o).ok());
}

// A write larger than the pipe's capacity completes only as the reader drains it.
TEST(InMemoryStreamTest, WriterWaitsForReaderWhenThePipeIsFull) {
  IoThreads io;
  auto [a, b] =
      InMemoryStream::MakePair(asio::make_strand(io.io()), asio::make_strand(io.io()), 1000);
  std::vector<uint8_t> data(5000);
  for (size_t i = 0; i < data.size(); ++i) data[i] = static_cast<uint8_t>(i);
  std::promise<size_t> written;
  asio::post(a->executor(), [&, s = a.get()] {
    s->AsyncWrite({asio::buffer(data)}, [&](const boost::system::error_code& ec, size_t n) {
      written.set_value(ec ? 0 : n);
    });
  });
  std::future<size_t> done = written.get_future();
  EXPECT_EQ(done.wait_for(100ms), std::future_status::timeout);  // 4000 bytes still waiting

  std::vector<uint8_t> got;
  std::vector<uint8_t> buf(700);
  while (got.size() < data.size()) {
    std::promise<size_t> read;
    asio::post(b->executor(), [&, s = b.get()] {
      s->AsyncReadSome(asio::buffer(buf), [&](const boost::system::error_code& ec, size_t n) {
        read.set_value(ec ? 0 : n);
      });
    });
    const size_t n = read.get_future().get();
    ASSERT_GT(n, 0u);
    ASSERT_LE(n, 700u);
    got.insert(got.end(), buf.begin(), buf.begin() + static_cast<long>(n));
  }
  EXPECT_EQ(done.get(), data.size());
  EXPECT_EQ(got, data);

  // After the writer closes, the reader sees eof.
  std::promise<boost::system::error_code> eof;
  asio::post(a->executor(), [s = a.get()] { s->Close(); });
  asio::post(b->executor(), [&, s = b.get()] {
    s->AsyncReadSome(asio::buffer(buf),
                     [&](const boost::system::error_code& ec, size_t) { eof.set_value(ec); });
  });
  EXPECT_EQ(eof.get_future().get(), asio::error::eof);
}

// FramedConnection lets a Heartbeat go between the chunks of a large message it is sending, and
// keeps every other message in order.
TEST(FramedConnectionTest, HeartbeatOvertakesAChunkedMessageButNothingElseDoes) {
  IoThreads io;
  const asio::any_io_executor a_strand = asio::make_strand(io.io());
  auto [a, b] = InMemoryStream::MakePair(a_strand, asio::make_strand(io.io()), 16 << 10);
  TransportOptions options;
  options.limits.max_frame_payload = 128 << 10;
  options.limits.chunk_data_bytes = 64 << 10;
  auto sender = std::make_shared<FramedConnection>(std::move(a), PeerInfo{"b", "b"}, options);
  auto receiver = std::make_shared<FramedConnection>(std::move(b), PeerInfo{"a", "a"}, options);
  Inbox inbox;
  sender->Start([](Message) {}, [](Status) {});

  UpdateSubmission big;
  big.update.bytes =
      std::vector<uint8_t>(1 << 20, 3);  // 16 chunks; the first blocks on the 16 KiB pipe
  sender->Send(big);
  sender->Send(Goodbye{"after the update"});
  sender->Send(Heartbeat{1, 2});
  // Every Send has been queued once this runs (the strand is FIFO); nobody has read a byte yet.
  std::promise<void> queued;
  asio::post(a_strand, [&] { queued.set_value(); });
  queued.get_future().wait();
  receiver->Start(inbox.OnMessage(), inbox.OnClose());

  ASSERT_TRUE(inbox.WaitForMessages(3));
  const std::vector<Message> got = inbox.messages();
  EXPECT_EQ(got[0], Message(Heartbeat{1, 2}));
  EXPECT_EQ(got[1], Message(big));
  EXPECT_EQ(got[2], Message(Goodbye{"after the update"}));
  sender->Close();
  EXPECT_TRUE(inbox.WaitForClose().has_value());
}

}  // namespace
}  // namespace tributary

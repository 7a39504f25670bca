// InMemoryStream: a ByteStream whose peer is another InMemoryStream in the same process, joined by
// two bounded byte channels (one per direction).
//
// It behaves like a socket where it matters to FramedConnection: reads return what is buffered (at
// least one byte), writes complete once all their bytes are in the peer's channel and block while
// the channel is full (so a peer that stops reading makes writes time out, as over TCP),
// AsyncGracefulClose ends our direction (the peer reads eof after the buffered bytes) and drains,
// and Close()
// makes the peer's writes fail with broken_pipe and its reads end with eof.
//
// Thread safety: each end runs its handlers on its own executor (a strand). A channel's state is
// guarded by its mutex; handlers are always posted, never run inside a call.
#pragma once

#include <memory>
#include <utility>
#include <vector>

#include "protocol/byte_stream.h"

namespace tributary {

class InMemoryStream final : public ByteStream {
 public:
  struct Channel;  // defined in the .cc

  // Two connected ends. `a_executor` and `b_executor` must be strands. Each direction buffers at
  // most `capacity` bytes (> 0).
  static std::pair<std::unique_ptr<InMemoryStream>, std::unique_ptr<InMemoryStream>> MakePair(
      boost::asio::any_io_executor a_executor, boost::asio::any_io_executor b_executor,
      size_t capacity);

  InMemoryStream(boost::asio::any_io_executor executor, std::shared_ptr<Channel> in,
                 std::shared_ptr<Channel> out);
  ~InMemoryStream() override;

  boost::asio::any_io_executor executor() override { return executor_; }
  void AsyncReadSome(boost::asio::mutable_buffer buffer, IoHandler handler) override;
  void AsyncWrite(std::vector<boost::asio::const_buffer> buffers, IoHandler handler) override;
  void AsyncGracefulClose(Handler handler) override;
  void Cancel() override;
  void Close() override;

 private:
  void Drain(Handler handler);

  boost::asio::any_io_executor executor_;
  std::vector<uint8_t> drain_buffer_;
  std::shared_ptr<Channel> in_;   // we read it
  std::shared_ptr<Channel> out_;  // we write it
};

}  // namespace tributary

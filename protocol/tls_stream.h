// TlsStream: a ByteStream over an established boost::asio::ssl::stream<tcp::socket>.
//
// The socket's executor must be a strand: asio runs the completion handlers (plain
// std::functions, with no executor of their own) on it, so every operation of the session,
// including the intermediate steps of the SSL composed operations, stays on that one strand.
#pragma once

#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl/context.hpp>
#include <boost/asio/ssl/stream.hpp>
#include <memory>
#include <vector>

#include "protocol/byte_stream.h"

namespace tributary {

using TlsSocketStream = boost::asio::ssl::stream<boost::asio::ip::tcp::socket>;

class TlsStream final : public ByteStream {
 public:
  // `context` is the ssl::context the stream was made with; the stream keeps it alive (asio's
  // context owns callbacks that OpenSSL may still call for this connection).
  TlsStream(std::unique_ptr<TlsSocketStream> stream,
            std::shared_ptr<boost::asio::ssl::context> context)
      : context_(std::move(context)), stream_(std::move(stream)) {}
  ~TlsStream() override { stream_.reset(); }

  boost::asio::any_io_executor executor() override { return stream_->get_executor(); }
  void AsyncReadSome(boost::asio::mutable_buffer buffer, IoHandler handler) override;
  void AsyncWrite(std::vector<boost::asio::const_buffer> buffers, IoHandler handler) override;
  void AsyncGracefulClose(Handler handler) override;
  void Cancel() override;
  void Close() override;

 private:
  void Drain(Handler handler);

  std::shared_ptr<boost::asio::ssl::context> context_;
  std::unique_ptr<TlsSocketStream> stream_;
  std::vector<uint8_t> drain_buffer_;
};

}  // namespace tributary

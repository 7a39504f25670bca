#include "protocol/tls_stream.h"

#include <boost/asio/write.hpp>

namespace tributary {

void TlsStream::AsyncReadSome(boost::asio::mutable_buffer buffer, IoHandler handler) {
  stream_->async_read_some(buffer, std::move(handler));
}

void TlsStream::AsyncWrite(std::vector<boost::asio::const_buffer> buffers, IoHandler handler) {
  boost::asio::async_write(*stream_, std::move(buffers), std::move(handler));
}

// The handlers below capture `this`: the caller's handler keeps the owner of this stream alive
// until it runs, and it runs last.
void TlsStream::AsyncGracefulClose(Handler handler) {
  stream_->async_shutdown([this, handler = std::move(handler)](const boost::system::error_code&) {
    // TLS is finished either way (stream_truncated or app data after close_notify are common);
    // send our FIN and read the TCP stream dry.
    boost::system::error_code ignored;
    stream_->lowest_layer().shutdown(boost::asio::ip::tcp::socket::shutdown_send, ignored);
    drain_buffer_.resize(16 * 1024);
    Drain(handler);
  });
}

void TlsStream::Drain(Handler handler) {
  stream_->next_layer().async_read_some(
      boost::asio::buffer(drain_buffer_),
      [this, handler = std::move(handler)](const boost::system::error_code& ec, size_t) {
        if (!ec) return Drain(handler);
        Close();
        handler(ec == boost::asio::error::eof ? boost::system::error_code() : ec);
      });
}

void TlsStream::Cancel() {
  boost::system::error_code ignored;
  stream_->lowest_layer().cancel(ignored);
}

void TlsStream::Close() {
  boost::system::error_code ignored;
  if (!stream_->lowest_layer().is_open()) return;
  stream_->lowest_layer().shutdown(boost::asio::ip::tcp::socket::shutdown_both, ignored);
  stream_->lowest_layer().close(ignored);
}

}  // namespace tributary

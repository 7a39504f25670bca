// ByteStream: the byte pipe under a FramedConnection, implemented over TLS (tls_stream.h) and in
// memory (in_memory_stream.h). Keeping this seam small lets both transports share one framing,
// timeout and close implementation.
//
// Contract: every completion handler runs on executor(), which is a strand; callers start
// operations from that strand, with at most one read and one write outstanding. Cancel() makes
// pending operations complete with operation_aborted; Close() tears the stream down (pending
// operations complete with an error) and is idempotent. Handlers always run, also after Close().
#pragma once

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/buffer.hpp>
#include <boost/system/error_code.hpp>
#include <cstddef>
#include <functional>
#include <vector>

namespace tributary {

class ByteStream {
 public:
  using IoHandler = std::function<void(const boost::system::error_code&, size_t)>;
  using Handler = std::function<void(const boost::system::error_code&)>;

  virtual ~ByteStream() = default;

  virtual boost::asio::any_io_executor executor() = 0;
  // Reads at least one byte (or fails: boost::asio::error::eof when the peer closed cleanly).
  virtual void AsyncReadSome(boost::asio::mutable_buffer buffer, IoHandler handler) = 0;
  // Writes all of `buffers`; the caller keeps the memory alive until the handler runs.
  virtual void AsyncWrite(std::vector<boost::asio::const_buffer> buffers, IoHandler handler) = 0;
  // Closes gracefully: ends our direction (TLS close_notify, then TCP FIN; in-memory end of
  // stream), then reads and discards whatever the peer still sends until it closes its side, then
  // closes. Draining matters: closing a socket with unread input sends a TCP RST, which can destroy
  // data the peer has received but not yet read (our last messages). Errors only end it sooner;
  // the caller bounds it with a timer that calls Close(). Start it with no read outstanding.
  virtual void AsyncGracefulClose(Handler handler) = 0;
  virtual void Cancel() = 0;
  virtual void Close() = 0;
};

}  // namespace tributary

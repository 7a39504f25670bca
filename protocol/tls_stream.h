// TlsStream: TLS 1.3 over a TCP socket, as a ByteStream. OpenSSL does the protocol; this class
// moves the bytes, through a BIO of its own (tls_bio.h) instead of asio's ssl::stream.
//
// Why not boost::asio::ssl::stream: it feeds OpenSSL through a 17 KiB BIO pair, so every 16 KiB
// TLS record costs one send and one recv system call (about 4,000 of each per 64 MiB), and the
// kernel's loopback path dominated the transfer. Here a write encrypts up to kWriteSliceBytes of
// plaintext into one buffer and hands it to the socket in one async_write; a read takes whatever
// the socket has (up to kLargeReadBytes) and decrypts as many records as fit the caller's buffer.
//
// Use: Create() with a connected (client) or accepted (server) socket whose executor is a strand,
// set per-connection options on native_handle() (SNI, verify mode, minimum version), then
// AsyncHandshake(); after it succeeds the ByteStream operations may be used. Every completion
// handler runs on the socket's strand, never inside the call that started it. At most one read and
// one write may be outstanding, and the handshake and AsyncGracefulClose each run alone.
//
// Lifetime: handlers capture `this`; the owner keeps the stream alive until every started
// operation's handler has run (FramedConnection does: its handlers hold it). Only a read may leave
// TLS output behind (a KeyUpdate reply or an alert): it goes out with the next write or close.
//
// Memory per connection: while the peer is quiet, no read buffer (the socket is waited on until
// it is readable); a 16 KiB read buffer, grown to kLargeReadBytes while the peer streams (a read
// filled the buffer) and shrunk after kSmallReadsToShrink short reads in a row; while large frames
// are written, room for two slices of ciphertext; the write buffers are given back after the
// handshake and after each short write. So an idle connection holds OpenSSL's state only
// (SSL_MODE_RELEASE_BUFFERS releases its record buffers).
#pragma once

#include <openssl/ssl.h>

#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl/context.hpp>
#include <memory>
#include <vector>

#include "protocol/byte_stream.h"
#include "protocol/tls_bio.h"
#include "tributary/result.h"

namespace tributary {

class TlsStream final : public ByteStream {
 public:
  enum class Role { kClient, kServer };

  // Plaintext encrypted per socket write, and the largest socket read.
  static constexpr size_t kWriteSliceBytes = 1024 * 1024;
  static constexpr size_t kSmallReadBytes = 16 * 1024;
  static constexpr size_t kLargeReadBytes = 1024 * 1024;
  static constexpr size_t kSmallReadsToShrink = 4;
  // Room for one slice's ciphertext (records add 22 bytes per 16 KiB).
  static constexpr size_t kOutReserveBytes = kWriteSliceBytes + kWriteSliceBytes / 64 + 4096;
  // Consecutive pieces smaller than this are gathered into one TLS record.
  static constexpr size_t kRecordBytes = 16 * 1024;

  // `context` must outlive nothing: the stream keeps it alive. Internal error (OpenSSL could not
  // allocate) when SSL_new fails.
  static Result<std::unique_ptr<TlsStream>> Create(
      boost::asio::ip::tcp::socket socket, std::shared_ptr<boost::asio::ssl::context> context);
  ~TlsStream() override;

  SSL* native_handle() { return ssl_.get(); }
  boost::asio::ip::tcp::socket& socket() { return socket_; }

  // Runs the handshake as `role`. Errors carry OpenSSL's reason (asio's ssl error category), or
  // the socket error; SSL_get_verify_result(native_handle()) tells a certificate failure apart.
  void AsyncHandshake(Role role, Handler handler);

  boost::asio::any_io_executor executor() override { return socket_.get_executor(); }
  // Completes with as many plaintext bytes as are ready, up to the buffer's size. End of stream:
  // boost::asio::error::eof after the peer's close_notify, ssl::error::stream_truncated when the
  // TCP stream ended without one.
  void AsyncReadSome(boost::asio::mutable_buffer buffer, IoHandler handler) override;
  void AsyncWrite(std::vector<boost::asio::const_buffer> buffers, IoHandler handler) override;
  // Sends close_notify, then our FIN, then reads the socket dry (discarding) until the peer's FIN.
  void AsyncGracefulClose(Handler handler) override;
  void Cancel() override;
  void Close() override;

 private:
  struct SslFree {
    void operator()(SSL* ssl) const { SSL_free(ssl); }
  };

  TlsStream(boost::asio::ip::tcp::socket socket, std::shared_ptr<boost::asio::ssl::context> context,
            SSL* ssl);

  // Reads from the socket into in_buf_ (all earlier input consumed), then calls `then`.
  void ReadSocket(Handler then);
  // Writes out_ (everything OpenSSL produced so far) to the socket, then calls `then`.
  void Flush(Handler then);
  // Gives back the write buffers' memory (none is in flight; out_ only when empty).
  void ReleaseWriteBuffers();

  void HandshakeStep(Handler handler);
  void ReadStep(boost::asio::mutable_buffer buffer, IoHandler handler);
  void WriteStep(IoHandler handler);
  void Drain(Handler handler);

  // The error for an SSL call whose SSL_get_error was `ssl_error`; takes OpenSSL's error queue.
  static boost::system::error_code SslError(int ssl_error);

  std::shared_ptr<boost::asio::ssl::context> context_;
  boost::asio::ip::tcp::socket socket_;
  std::unique_ptr<SSL, SslFree> ssl_;
  TlsBioState bio_;                    // what the BIO attached to ssl_ reads from and appends to
  std::unique_ptr<uint8_t[]> in_buf_;  // socket input, of in_capacity_ bytes
  size_t in_capacity_ = 0;
  size_t last_read_ = 0;          // bytes the last socket read returned
  size_t small_reads_ = 0;        // consecutive socket reads shorter than kSmallReadBytes
  std::vector<uint8_t> out_;      // ciphertext not yet handed to the socket
  std::vector<uint8_t> writing_;  // ciphertext of the socket write in flight
  std::vector<uint8_t> stage_;    // small plaintext pieces gathered into one record
  // The write in progress: remaining plaintext, and how much of it has been consumed.
  std::vector<boost::asio::const_buffer> write_buffers_;
  size_t write_index_ = 0;
  size_t write_offset_ = 0;
  size_t write_total_ = 0;
};

}  // namespace tributary

#include "protocol/tls_stream.h"

#include <openssl/err.h>

#include <algorithm>
#include <boost/asio/post.hpp>
#include <boost/asio/ssl/error.hpp>
#include <boost/asio/write.hpp>

namespace tributary {

namespace asio = boost::asio;
using boost::system::error_code;

Result<std::unique_ptr<TlsStream>> TlsStream::Create(asio::ip::tcp::socket socket,
                                                     std::shared_ptr<asio::ssl::context> context) {
  // Small messages (heartbeats and their echoes, errors, acknowledgements of a sort) go out at
  // once: with Nagle's algorithm a heartbeat's echo waited for the peer's delayed ACK, which
  // came with its next heartbeat (10 ms round trips at a 10 ms period). Bulk data is written in
  // records of up to 1 MiB, so this costs it nothing.
  boost::system::error_code ignored;
  socket.set_option(asio::ip::tcp::no_delay(true), ignored);
  SSL* ssl = SSL_new(context->native_handle());
  if (ssl == nullptr) return Status::Internal("SSL_new failed (out of memory?)");
  std::unique_ptr<TlsStream> stream(new TlsStream(std::move(socket), std::move(context), ssl));
  BIO* bio = NewTlsBio(&stream->bio_);
  if (bio == nullptr) return Status::Internal("cannot make the TLS BIO (out of memory?)");
  SSL_set_bio(ssl, bio, bio);  // ssl owns the one reference
  // Idle connections give their record buffers back (many idle clients on a coordinator).
  SSL_set_mode(ssl, SSL_MODE_RELEASE_BUFFERS);
  return stream;
}

TlsStream::TlsStream(asio::ip::tcp::socket socket, std::shared_ptr<asio::ssl::context> context,
                     SSL* ssl)
    : context_(std::move(context)), socket_(std::move(socket)), ssl_(ssl) {
  bio_.out = &out_;
}

TlsStream::~TlsStream() {
  ssl_.reset();  // before context_: the SSL holds callbacks of the context
}

error_code TlsStream::SslError(int ssl_error) {
  const unsigned long queued = ERR_get_error();
  ERR_clear_error();
  if (ssl_error == SSL_ERROR_ZERO_RETURN) return asio::error::eof;
  if (queued != 0) return error_code(static_cast<int>(queued), asio::error::get_ssl_category());
  return asio::ssl::error::unspecified_system_error;
}

// ---- Socket I/O shared by every operation

void TlsStream::ReadSocket(Handler then) {
  // While the peer streams (the last read filled the buffer) read in large blocks; when it stops,
  // give the large buffer back.
  // A few short reads in a row mean it stopped (one short read happens mid-stream too, and
  // flapping would reallocate the large buffer again and again).
  small_reads_ = last_read_ < kSmallReadBytes ? small_reads_ + 1 : 0;
  const bool streaming = last_read_ == in_capacity_ && in_capacity_ > 0;
  size_t want = in_capacity_;
  if (streaming) want = kLargeReadBytes;
  if (small_reads_ >= kSmallReadsToShrink || in_capacity_ == 0) want = kSmallReadBytes;
  bio_.in = nullptr;
  bio_.in_left = 0;
  auto read = [this, want](Handler done) {
    if (want != in_capacity_ || !in_buf_) {
      in_buf_ = std::make_unique_for_overwrite<uint8_t[]>(want);
      in_capacity_ = want;
    }
    socket_.async_read_some(asio::buffer(in_buf_.get(), in_capacity_),
                            [this, done = std::move(done)](const error_code& ec, size_t n) {
                              last_read_ = n;
                              bio_.in = in_buf_.get();
                              bio_.in_left = n;
                              done(ec);
                            });
  };
  // More is on its way (the last read filled the buffer), or a large transfer paused: read at
  // once, into the buffer we have.
  if (streaming || want != kSmallReadBytes) return read(std::move(then));
  // Quiet: wait for the socket to become readable without holding a buffer, so that an idle
  // connection holds none (kSmallReadBytes on each connection of a fleet); asio then reads at
  // once.
  in_buf_.reset();
  in_capacity_ = 0;
  socket_.async_wait(asio::ip::tcp::socket::wait_read,
                     [this, read, then = std::move(then)](const error_code& ec) mutable {
                       if (ec) {
                         last_read_ = 0;
                         return then(ec);
                       }
                       read(std::move(then));
                     });
}

void TlsStream::ReleaseWriteBuffers() {
  writing_ = {};
  stage_ = {};
  if (out_.empty()) out_ = {};
}

void TlsStream::Flush(Handler then) {
  std::swap(out_, writing_);  // writing_ was empty: one flush at a time
  asio::async_write(socket_, asio::buffer(writing_),
                    [this, then = std::move(then)](const error_code& ec, size_t) {
                      writing_.clear();
                      then(ec);
                    });
}

// ---- Handshake

void TlsStream::AsyncHandshake(Role role, Handler handler) {
  if (role == Role::kClient) {
    SSL_set_connect_state(ssl_.get());
  } else {
    SSL_set_accept_state(ssl_.get());
  }
  HandshakeStep(std::move(handler));
}

void TlsStream::HandshakeStep(Handler handler) {
  ERR_clear_error();
  const int ret = SSL_do_handshake(ssl_.get());
  const int ssl_error = SSL_get_error(ssl_.get(), ret);
  const bool done = ret == 1;
  const error_code failed =
      done || ssl_error == SSL_ERROR_WANT_READ ? error_code() : SslError(ssl_error);
  auto next = [this, done, failed, handler = std::move(handler)](const error_code& ec) mutable {
    if (failed) return handler(failed);  // OpenSSL's reason first (its alert has been sent)
    if (ec) return handler(ec);
    if (done) {
      ReleaseWriteBuffers();  // the handshake's flights (certificates) are gone
      return handler(error_code());
    }
    ReadSocket([this, handler = std::move(handler)](const error_code& e) mutable {
      if (e) return handler(e);
      HandshakeStep(std::move(handler));
    });
  };
  if (!out_.empty()) return Flush(std::move(next));
  if (failed || done) {
    return asio::post(socket_.get_executor(), [next = std::move(next)]() mutable { next({}); });
  }
  next(error_code());  // wants input: read (asynchronous)
}

// ---- Reading

void TlsStream::AsyncReadSome(asio::mutable_buffer buffer, IoHandler handler) {
  ReadStep(buffer, std::move(handler));
}

void TlsStream::ReadStep(asio::mutable_buffer buffer, IoHandler handler) {
  auto* p = static_cast<uint8_t*>(buffer.data());
  size_t total = 0;
  error_code failed;
  ERR_clear_error();
  // Decrypt as many records as the input holds and the buffer takes.
  while (total < buffer.size()) {
    size_t got = 0;
    const int ret = SSL_read_ex(ssl_.get(), p + total, buffer.size() - total, &got);
    if (ret == 1) {
      total += got;
      continue;
    }
    const int ssl_error = SSL_get_error(ssl_.get(), ret);
    if (ssl_error != SSL_ERROR_WANT_READ) failed = SslError(ssl_error);
    break;
  }
  // An error after some data shows again on the next read (OpenSSL keeps its failed state).
  if (total > 0 || failed || buffer.size() == 0) {
    return asio::post(socket_.get_executor(), [handler = std::move(handler), total, failed] {
      handler(total > 0 ? error_code() : failed, total);
    });
  }
  ReadSocket([this, buffer, handler = std::move(handler)](error_code ec) mutable {
    if (ec == asio::error::eof && (SSL_get_shutdown(ssl_.get()) & SSL_RECEIVED_SHUTDOWN) == 0) {
      ec = asio::ssl::error::stream_truncated;  // TCP ended without close_notify
    }
    if (ec) return handler(ec, 0);
    ReadStep(buffer, std::move(handler));
  });
}

// ---- Writing

void TlsStream::AsyncWrite(std::vector<asio::const_buffer> buffers, IoHandler handler) {
  write_buffers_ = std::move(buffers);
  write_index_ = 0;
  write_offset_ = 0;
  write_total_ = 0;
  WriteStep(std::move(handler));
}

void TlsStream::WriteStep(IoHandler handler) {
  // Encrypt the next slice into out_ (behind any output a read left there). While large writes
  // stream, out_ keeps room for a whole slice, so encrypting never reallocates.
  size_t budget = kWriteSliceBytes;
  if (write_total_ == 0 && write_index_ < write_buffers_.size() &&
      write_buffers_[write_index_].size() >= kRecordBytes && out_.capacity() < kOutReserveBytes) {
    out_.reserve(kOutReserveBytes);
  }
  error_code failed;
  ERR_clear_error();
  while (budget > 0 && write_index_ < write_buffers_.size() && !failed) {
    const asio::const_buffer& b = write_buffers_[write_index_];
    const auto* data = static_cast<const uint8_t*>(b.data()) + write_offset_;
    size_t n = std::min(b.size() - write_offset_, budget);
    if (n < kRecordBytes && write_index_ + 1 < write_buffers_.size()) {
      // Small pieces (a frame header, a short body) are gathered into one TLS record.
      stage_.clear();
      while (write_index_ < write_buffers_.size() && stage_.size() < kRecordBytes) {
        const asio::const_buffer& piece = write_buffers_[write_index_];
        const size_t take = std::min(piece.size() - write_offset_, kRecordBytes - stage_.size());
        const auto* from = static_cast<const uint8_t*>(piece.data()) + write_offset_;
        stage_.insert(stage_.end(), from, from + take);
        write_offset_ += take;
        if (write_offset_ == piece.size()) {
          ++write_index_;
          write_offset_ = 0;
        }
      }
      data = stage_.data();
      n = stage_.size();
    } else {
      write_offset_ += n;
      if (write_offset_ == b.size()) {
        ++write_index_;
        write_offset_ = 0;
      }
    }
    size_t written = 0;
    if (n > 0) {
      const int ret = SSL_write_ex(ssl_.get(), data, n, &written);
      if (ret != 1) failed = SslError(SSL_get_error(ssl_.get(), ret));
    }
    write_total_ += written;
    budget -= std::min(budget, n);
  }
  if (failed || out_.empty()) {
    write_buffers_.clear();
    // The buffers go back after a small write (the stream has gone quiet: an idle connection
    // holds none); a connection that streams large frames keeps them.
    if (write_total_ < kRecordBytes) ReleaseWriteBuffers();
    return asio::post(socket_.get_executor(), [handler = std::move(handler), failed,
                                               total = write_total_] { handler(failed, total); });
  }
  Flush([this, handler = std::move(handler)](const error_code& ec) mutable {
    if (ec) {
      write_buffers_.clear();
      return handler(ec, write_total_);
    }
    WriteStep(std::move(handler));
  });
}

// ---- Closing

void TlsStream::AsyncGracefulClose(Handler handler) {
  ERR_clear_error();
  SSL_shutdown(ssl_.get());  // queues our close_notify; the peer's is not awaited
  ERR_clear_error();
  auto after = [this, handler = std::move(handler)](const error_code&) mutable {
    // TLS is finished either way; send our FIN and read the TCP stream dry.
    error_code ignored;
    socket_.shutdown(asio::ip::tcp::socket::shutdown_send, ignored);
    last_read_ = 0;
    Drain(std::move(handler));
  };
  if (!out_.empty()) return Flush(std::move(after));
  asio::post(socket_.get_executor(), [after = std::move(after)]() mutable { after({}); });
}

void TlsStream::Drain(Handler handler) {
  ReadSocket([this, handler = std::move(handler)](const error_code& ec) mutable {
    if (!ec) return Drain(std::move(handler));
    Close();
    handler(ec == asio::error::eof ? error_code() : ec);
  });
}

void TlsStream::Cancel() {
  error_code ignored;
  socket_.cancel(ignored);
}

void TlsStream::Close() {
  error_code ignored;
  if (!socket_.is_open()) return;
  socket_.shutdown(asio::ip::tcp::socket::shutdown_both, ignored);
  socket_.close(ignored);
}

}  // namespace tributary

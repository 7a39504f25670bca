#include "protocol/in_memory_stream.h"

#include <algorithm>
#include <boost/asio/error.hpp>
#include <boost/asio/execution_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/query.hpp>
#include <cstring>
#include <memory>
#include <mutex>
#include <optional>

#include "core/check.h"

namespace tributary {

namespace asio = boost::asio;
using boost::system::error_code;

// One direction. Bytes sit in a ring buffer (`ring`, `ring_size` bytes, the oldest at `head`),
// allocated when bytes first arrive, grown as needed up to `capacity`, and freed again once it is
// empty with no write pending, so an idle connection holds no buffer. Reusing one block instead of
// allocating a fresh one per write keeps the copies in warm memory: fresh blocks page-fault on
// every transfer, which made this transport slower than loopback TLS.
struct InMemoryStream::Channel {
  struct PendingRead {
    asio::mutable_buffer buffer;
    IoHandler handler;
    asio::any_io_executor executor;
  };
  struct PendingWrite {
    std::vector<asio::const_buffer> buffers;
    size_t index = 0;   // current buffer
    size_t offset = 0;  // bytes of it already copied
    size_t written = 0;
    IoHandler handler;
    asio::any_io_executor executor;
  };
  // A completion to post once the mutex is released.
  struct Completion {
    IoHandler handler;
    asio::any_io_executor executor;
    error_code ec;
    size_t n;
  };

  explicit Channel(size_t cap) : capacity(cap) {}

  // Appends n bytes (buffered + n <= capacity). Call with `mu` held.
  void RingPush(const uint8_t* p, size_t n) {
    if (n == 0) return;
    if (buffered + n > ring_size) {
      constexpr size_t kMinRing = 64 * 1024;
      const size_t grown = std::min(capacity, std::max({buffered + n, 2 * ring_size, kMinRing}));
      std::unique_ptr<uint8_t[]> bigger(new uint8_t[grown]);  // not zero-filled
      RingPop(bigger.get(), buffered, /*consume=*/false);
      ring = std::move(bigger);
      ring_size = grown;
      head = 0;
    }
    const size_t tail = (head + buffered) % ring_size;
    const size_t first = std::min(n, ring_size - tail);
    std::memcpy(ring.get() + tail, p, first);
    std::memcpy(ring.get(), p + first, n - first);
    buffered += n;
  }

  // Copies min(n, buffered) of the oldest bytes to dst, removing them when `consume`; returns the
  // count. Call with `mu` held.
  size_t RingPop(uint8_t* dst, size_t n, bool consume = true) {
    const size_t take = std::min(n, buffered);
    if (take == 0) return 0;
    const size_t first = std::min(take, ring_size - head);
    std::memcpy(dst, ring.get() + head, first);
    std::memcpy(dst + first, ring.get(), take - first);
    if (consume) {
      head = (head + take) % ring_size;
      buffered -= take;
      if (buffered == 0) head = 0;
    }
    return take;
  }

  void RingRelease() {
    ring.reset();
    ring_size = 0;
    head = 0;
    buffered = 0;
  }

  // Moves bytes along and collects whatever completes. Call with `mu` held.
  void Pump(std::vector<Completion>& done) {
    if (reader_closed) {
      RingRelease();
      if (write) {
        done.push_back(
            {std::move(write->handler), write->executor, asio::error::broken_pipe, write->written});
        write.reset();
      }
    }
    if (write) {
      PendingWrite& w = *write;
      while (w.index < w.buffers.size() && buffered < capacity) {
        const asio::const_buffer& b = w.buffers[w.index];
        const size_t take = std::min(b.size() - w.offset, capacity - buffered);
        RingPush(static_cast<const uint8_t*>(b.data()) + w.offset, take);
        w.offset += take;
        w.written += take;
        if (w.offset == b.size()) {
          ++w.index;
          w.offset = 0;
        }
      }
      if (w.index == w.buffers.size()) {
        done.push_back({std::move(w.handler), w.executor, error_code(), w.written});
        write.reset();
      }
    }
    if (read && (buffered > 0 || writer_closed)) {
      PendingRead& r = *read;
      const size_t n = RingPop(static_cast<uint8_t*>(r.buffer.data()), r.buffer.size());
      done.push_back({std::move(r.handler), r.executor,
                      n == 0 ? error_code(asio::error::eof) : error_code(), n});
      read.reset();
      if (n > 0 && write) Pump(done);  // room freed for a blocked writer
    }
    if (buffered == 0 && !write && ring) RingRelease();
  }

  std::mutex mu;
  const size_t capacity;
  std::unique_ptr<uint8_t[]> ring;    // GUARDED_BY(mu)
  size_t ring_size = 0;               // GUARDED_BY(mu)
  size_t head = 0;                    // GUARDED_BY(mu)
  size_t buffered = 0;                // GUARDED_BY(mu)
  bool writer_closed = false;         // GUARDED_BY(mu): eof after the buffered bytes
  bool reader_closed = false;         // GUARDED_BY(mu): writes fail
  std::optional<PendingRead> read;    // GUARDED_BY(mu)
  std::optional<PendingWrite> write;  // GUARDED_BY(mu)
};

namespace {

using Channel = InMemoryStream::Channel;

// Pending operations live in a Channel, not in the io_context, and their handlers usually hold
// the FramedConnection that owns the stream, which owns the Channel: a cycle that only the
// operation's completion breaks. Like asio's own I/O services, this service destroys every
// pending handler when its io_context shuts down, so connections nobody closed are freed.
class PipeService : public asio::execution_context::service {
 public:
  using key_type = PipeService;
  static inline asio::execution_context::id id;

  explicit PipeService(asio::execution_context& ctx) : asio::execution_context::service(ctx) {}

  void Register(const std::shared_ptr<Channel>& channel) {
    std::lock_guard<std::mutex> lock(mu_);
    if (channels_.size() >= prune_at_) {  // amortized O(1) per registration
      std::erase_if(channels_, [](const std::weak_ptr<Channel>& c) { return c.expired(); });
      prune_at_ = std::max<size_t>(64, 2 * channels_.size());
    }
    channels_.push_back(channel);
  }

 private:
  void shutdown() override {
    std::vector<std::weak_ptr<Channel>> channels;
    {
      std::lock_guard<std::mutex> lock(mu_);
      channels.swap(channels_);
    }
    std::vector<ByteStream::IoHandler> doomed;  // destroyed outside every lock
    for (const std::weak_ptr<Channel>& weak : channels) {
      if (std::shared_ptr<Channel> c = weak.lock()) {
        std::lock_guard<std::mutex> lock(c->mu);
        if (c->read) doomed.push_back(std::move(c->read->handler));
        if (c->write) doomed.push_back(std::move(c->write->handler));
        c->read.reset();
        c->write.reset();
      }
    }
  }

  std::mutex mu_;
  std::vector<std::weak_ptr<Channel>> channels_;  // GUARDED_BY(mu_)
  size_t prune_at_ = 64;                          // GUARDED_BY(mu_)
};

void RegisterWith(const asio::any_io_executor& executor, const std::shared_ptr<Channel>& a,
                  const std::shared_ptr<Channel>& b) {
  PipeService& service =
      asio::use_service<PipeService>(asio::query(executor, asio::execution::context));
  service.Register(a);
  service.Register(b);
}

void PostAll(std::vector<Channel::Completion>& done) {
  for (Channel::Completion& c : done) {
    asio::post(c.executor, [h = std::move(c.handler), ec = c.ec, n = c.n] { h(ec, n); });
  }
}

template <class Fn>
void WithChannel(Channel& ch, Fn&& fn) {
  std::vector<Channel::Completion> done;
  {
    std::lock_guard<std::mutex> lock(ch.mu);
    fn(done);
    ch.Pump(done);
  }
  PostAll(done);
}

}  // namespace

std::pair<std::unique_ptr<InMemoryStream>, std::unique_ptr<InMemoryStream>>
InMemoryStream::MakePair(asio::any_io_executor a_executor, asio::any_io_executor b_executor,
                         size_t capacity) {
  TRIB_CHECK(capacity > 0);
  auto a_to_b = std::make_shared<Channel>(capacity);
  auto b_to_a = std::make_shared<Channel>(capacity);
  RegisterWith(a_executor, a_to_b, b_to_a);
  RegisterWith(b_executor, a_to_b, b_to_a);
  return {std::make_unique<InMemoryStream>(std::move(a_executor), b_to_a, a_to_b),
          std::make_unique<InMemoryStream>(std::move(b_executor), a_to_b, b_to_a)};
}

InMemoryStream::InMemoryStream(asio::any_io_executor executor, std::shared_ptr<Channel> in,
                               std::shared_ptr<Channel> out)
    : executor_(std::move(executor)), in_(std::move(in)), out_(std::move(out)) {}

InMemoryStream::~InMemoryStream() { Close(); }

void InMemoryStream::AsyncReadSome(asio::mutable_buffer buffer, IoHandler handler) {
  if (buffer.size() == 0) {
    asio::post(executor_, [h = std::move(handler)] { h(error_code(), 0); });
    return;
  }
  WithChannel(*in_, [&](std::vector<Channel::Completion>& done) {
    TRIB_CHECK(!in_->read, "one read at a time");
    if (in_->reader_closed) {
      done.push_back({std::move(handler), executor_, asio::error::operation_aborted, 0});
      return;
    }
    in_->read = Channel::PendingRead{buffer, std::move(handler), executor_};
  });
}

void InMemoryStream::AsyncWrite(std::vector<asio::const_buffer> buffers, IoHandler handler) {
  WithChannel(*out_, [&](std::vector<Channel::Completion>& done) {
    TRIB_CHECK(!out_->write, "one write at a time");
    if (out_->writer_closed) {
      done.push_back({std::move(handler), executor_, asio::error::shut_down, 0});
      return;
    }
    Channel::PendingWrite w;
    w.buffers = std::move(buffers);
    w.handler = std::move(handler);
    w.executor = executor_;
    out_->write = std::move(w);
  });
}

void InMemoryStream::AsyncGracefulClose(Handler handler) {
  WithChannel(*out_, [&](std::vector<Channel::Completion>&) { out_->writer_closed = true; });
  drain_buffer_.resize(16 * 1024);
  Drain(std::move(handler));
}

// Captures `this`: the caller's handler keeps this stream's owner alive until it runs.
void InMemoryStream::Drain(Handler handler) {
  AsyncReadSome(asio::buffer(drain_buffer_),
                [this, handler = std::move(handler)](const error_code& ec, size_t) {
                  if (!ec) return Drain(handler);
                  Close();
                  handler(ec == asio::error::eof ? error_code() : ec);
                });
}

void InMemoryStream::Cancel() {
  WithChannel(*in_, [&](std::vector<Channel::Completion>& done) {
    if (in_->read) {
      done.push_back({std::move(in_->read->handler), executor_, asio::error::operation_aborted, 0});
      in_->read.reset();
    }
  });
  WithChannel(*out_, [&](std::vector<Channel::Completion>& done) {
    if (out_->write) {
      done.push_back({std::move(out_->write->handler), executor_, asio::error::operation_aborted,
                      out_->write->written});
      out_->write.reset();
    }
  });
}

void InMemoryStream::Close() {
  Cancel();
  WithChannel(*in_, [&](std::vector<Channel::Completion>&) { in_->reader_closed = true; });
  WithChannel(*out_, [&](std::vector<Channel::Completion>&) { out_->writer_closed = true; });
}

}  // namespace tributary

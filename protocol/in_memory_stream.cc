#include "protocol/in_memory_stream.h"

#include <algorithm>
#include <boost/asio/error.hpp>
#include <boost/asio/execution_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/query.hpp>
#include <cstring>
#include <deque>
#include <mutex>
#include <optional>

#include "core/check.h"

namespace tributary {

namespace asio = boost::asio;
using boost::system::error_code;

// One direction. Bytes sit in `chunks` (front chunk consumed from `front_offset`).
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

  // Moves bytes along and collects whatever completes. Call with `mu` held.
  void Pump(std::vector<Completion>& done) {
    if (reader_closed) {
      chunks.clear();
      front_offset = 0;
      buffered = 0;
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
        const auto* p = static_cast<const uint8_t*>(b.data()) + w.offset;
        chunks.emplace_back(p, p + take);
        buffered += take;
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
      size_t n = 0;
      auto* dst = static_cast<uint8_t*>(r.buffer.data());
      while (n < r.buffer.size() && !chunks.empty()) {
        std::vector<uint8_t>& front = chunks.front();
        const size_t take = std::min(r.buffer.size() - n, front.size() - front_offset);
        std::memcpy(dst + n, front.data() + front_offset, take);
        n += take;
        front_offset += take;
        if (front_offset == front.size()) {
          chunks.pop_front();
          front_offset = 0;
        }
      }
      buffered -= n;
      done.push_back({std::move(r.handler), r.executor,
                      n == 0 ? error_code(asio::error::eof) : error_code(), n});
      read.reset();
      if (n > 0 && write) Pump(done);  // room freed for a blocked writer
    }
  }

  std::mutex mu;
  const size_t capacity;
  std::deque<std::vector<uint8_t>> chunks;  // GUARDED_BY(mu)
  size_t front_offset = 0;                  // GUARDED_BY(mu)
  size_t buffered = 0;                      // GUARDED_BY(mu)
  bool writer_closed = false;               // GUARDED_BY(mu): eof after the buffered bytes
  bool reader_closed = false;               // GUARDED_BY(mu): writes fail
  std::optional<PendingRead> read;          // GUARDED_BY(mu)
  std::optional<PendingWrite> write;        // GUARDED_BY(mu)
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

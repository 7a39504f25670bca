#include "protocol/in_memory_transport.h"

#include <boost/asio/post.hpp>
#include <boost/asio/strand.hpp>
#include <utility>

#include "protocol/framed_connection.h"
#include "protocol/in_memory_stream.h"
#include "protocol/transport_util.h"

namespace tributary {

namespace asio = boost::asio;

// The accepting end of an in-memory name. Registered in the network under a weak_ptr; the owner
// (whoever called Listen) keeps it alive.
class InMemoryListener final : public Listener,
                               public std::enable_shared_from_this<InMemoryListener> {
 public:
  InMemoryListener(asio::io_context& io, std::shared_ptr<InMemoryNetwork> network, std::string name,
                   TransportOptions options, Transport::AcceptHandler on_accept)
      : io_(io),
        network_(std::move(network)),
        name_(std::move(name)),
        options_(std::move(options)),
        on_accept_(std::move(on_accept)) {}
  ~InMemoryListener() override { Stop(); }

  std::string address() const override { return name_; }

  void Stop() override {
    std::lock_guard<std::mutex> lock(network_->mu_);
    auto it = network_->listeners_.find(name_);
    if (it == network_->listeners_.end()) return;
    // Another listener may have taken the name since; erase only our own (or a dead) entry.
    std::shared_ptr<InMemoryListener> current = it->second.lock();
    if (!current || current.get() == this) network_->listeners_.erase(it);
  }

  asio::any_io_executor MakeStrand() { return asio::make_strand(io_); }

  // Takes the server end of a new pair; admits or rejects the client id like the TLS listener.
  void Accept(std::unique_ptr<InMemoryStream> stream, const std::string& client_id, PeerRole role) {
    PeerInfo peer{client_id, "memory:" + (client_id.empty() ? std::string("anonymous") : client_id),
                  role};
    const asio::any_io_executor strand = stream->executor();  // the connection's strand
    auto connection = std::make_shared<FramedConnection>(std::move(stream), peer, options_);
    const Status admitted = CheckClientIdentity(options_, client_id);
    if (!admitted.ok()) {
      connection->Reject(admitted);
      return;
    }
    asio::post(strand, [on_accept = on_accept_, connection] { on_accept(connection); });
  }

 private:
  asio::io_context& io_;
  std::shared_ptr<InMemoryNetwork> network_;
  const std::string name_;
  const TransportOptions options_;
  const Transport::AcceptHandler on_accept_;
};

Result<std::unique_ptr<InMemoryTransport>> InMemoryTransport::Create(
    asio::io_context& io, std::shared_ptr<InMemoryNetwork> network,
    InMemoryTransportOptions options) {
  TRIB_RETURN_IF_ERROR(options.transport.Validate());
  if (options.pipe_capacity == 0) return Status::InvalidArgument("pipe_capacity must be > 0");
  if (!network) return Status::InvalidArgument("InMemoryTransport needs a network");
  return std::unique_ptr<InMemoryTransport>(
      new InMemoryTransport(io, std::move(network), std::move(options)));
}

InMemoryTransport::InMemoryTransport(asio::io_context& io, std::shared_ptr<InMemoryNetwork> network,
                                     InMemoryTransportOptions options)
    : io_(io), network_(std::move(network)), options_(std::move(options)) {}

Result<std::shared_ptr<Listener>> InMemoryTransport::Listen(const std::string& address,
                                                            AcceptHandler on_accept) {
  if (!on_accept) return Status::InvalidArgument("Listen needs an accept handler");
  std::lock_guard<std::mutex> lock(network_->mu_);
  std::string name = address;
  if (name.empty()) {
    do {
      name = "mem-" + std::to_string(network_->next_name_++);
    } while (network_->listeners_.count(name) > 0);
  }
  auto it = network_->listeners_.find(name);
  if (it != network_->listeners_.end() && !it->second.expired()) {
    return Status::InvalidArgument("in-memory address '" + name + "' is already listening");
  }
  auto listener = std::make_shared<InMemoryListener>(io_, network_, name, options_.transport,
                                                     std::move(on_accept));
  network_->listeners_[name] = listener;
  return std::shared_ptr<Listener>(listener);
}

std::shared_ptr<InMemoryListener> InMemoryTransport::Find(const std::string& address) {
  std::lock_guard<std::mutex> lock(network_->mu_);
  auto it = network_->listeners_.find(address);
  return it == network_->listeners_.end() ? nullptr : it->second.lock();
}

void InMemoryTransport::ConnectRaw(const std::string& address, RawConnectHandler on_connect) {
  asio::any_io_executor client_strand = asio::make_strand(io_);
  std::shared_ptr<InMemoryListener> listener = Find(address);
  if (!listener) {
    asio::post(client_strand, [on_connect = std::move(on_connect), address] {
      on_connect(Status::Unavailable("no in-memory listener named '" + address + "'"));
    });
    return;
  }
  auto [client_end, server_end] =
      InMemoryStream::MakePair(client_strand, listener->MakeStrand(), options_.pipe_capacity);
  listener->Accept(std::move(server_end), options_.client_id, options_.role);
  asio::post(client_strand,
             [on_connect = std::move(on_connect), stream = std::move(client_end)]() mutable {
               on_connect(std::unique_ptr<ByteStream>(std::move(stream)));
             });
}

void InMemoryTransport::Connect(const std::string& address, ConnectHandler on_connect) {
  TransportOptions options = options_.transport;
  ConnectRaw(address, [on_connect = std::move(on_connect), options,
                       address](Result<std::unique_ptr<ByteStream>> stream) mutable {
    if (!stream.ok()) return on_connect(stream.status());
    on_connect(std::shared_ptr<Connection>(std::make_shared<FramedConnection>(
        std::move(*stream), PeerInfo{address, "memory:" + address}, options,
        FramedConnection::Origin::kDialed)));
  });
}

}  // namespace tributary

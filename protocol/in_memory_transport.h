// InMemoryTransport: the Transport for the simulator and tests. Connections are pairs of
// InMemoryStreams inside one process, carrying the same frames through the same FramedConnection as
// TLS, so caps, Error-then-close and timeouts behave the same; only the TLS handshake is missing
// (and with it the handshake timeout and cap).
//
// Transports that should reach each other share an InMemoryNetwork, the registry of listener names.
// Each InMemoryTransport stands for one endpoint; its `client_id` plays the role of the client
// certificate, and the accepting side applies TransportOptions::require_client_identity and the
// deny list to it exactly as TlsTransport does to a certificate.
//
// Thread safety: all methods may be called from any thread.
#pragma once

#include <boost/asio/io_context.hpp>
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "protocol/byte_stream.h"
#include "protocol/transport.h"

namespace tributary {

class InMemoryListener;

class InMemoryNetwork {
 public:
  InMemoryNetwork() = default;
  InMemoryNetwork(const InMemoryNetwork&) = delete;
  InMemoryNetwork& operator=(const InMemoryNetwork&) = delete;

 private:
  friend class InMemoryTransport;
  friend class InMemoryListener;
  std::mutex mu_;
  std::map<std::string, std::weak_ptr<InMemoryListener>> listeners_;  // GUARDED_BY(mu_)
  uint64_t next_name_ = 1;                                            // GUARDED_BY(mu_)
};

struct InMemoryTransportOptions {
  TransportOptions transport;
  // The identity this endpoint's outgoing connections present (its "certificate").
  std::string client_id;
  // Bytes buffered per direction before a writer waits for the reader.
  size_t pipe_capacity = size_t{1} << 20;
  // The role that identity has (an aggregator's "certificate", for tests of the tier).
  PeerRole role = PeerRole::kClient;
};

class InMemoryTransport final : public Transport {
 public:
  using RawConnectHandler = std::function<void(Result<std::unique_ptr<ByteStream>>)>;

  // InvalidArgument when the options are out of range.
  static Result<std::unique_ptr<InMemoryTransport>> Create(boost::asio::io_context& io,
                                                           std::shared_ptr<InMemoryNetwork> network,
                                                           InMemoryTransportOptions options);

  // `address` is a listener name; "" picks a fresh one ("mem-1", ...). AlreadyExists-style
  // InvalidArgument when the name is taken by a live listener.
  Result<std::shared_ptr<Listener>> Listen(const std::string& address,
                                           AcceptHandler on_accept) override;
  // Unavailable (to the handler) when no listener has that name.
  void Connect(const std::string& address, ConnectHandler on_connect) override;

  // Like Connect, but hands back the raw byte stream instead of a framed connection, so a test can
  // send hand-made (or hostile) bytes to an ordinary accepted connection. Its executor is a strand
  // of this transport's io_context.
  void ConnectRaw(const std::string& address, RawConnectHandler on_connect);

 private:
  InMemoryTransport(boost::asio::io_context& io, std::shared_ptr<InMemoryNetwork> network,
                    InMemoryTransportOptions options);
  std::shared_ptr<InMemoryListener> Find(const std::string& address);

  boost::asio::io_context& io_;
  std::shared_ptr<InMemoryNetwork> network_;
  InMemoryTransportOptions options_;
};

}  // namespace tributary

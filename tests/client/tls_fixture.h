// A fake coordinator behind real mutual TLS on 127.0.0.1 (a free port), and PEM files for a
// client: what tests of tributary::Client and the C API run against.
#pragma once

#include <memory>
#include <string>

#include "core/file_util.h"
#include "crypto/cert_authority.h"
#include "protocol/tls_transport.h"
#include "tests/client/fake_coordinator.h"
#include "tests/client/temp_dir.h"
#include "tests/protocol/transport_test_util.h"

namespace tributary::testing {

class TlsCoordinatorFixture {
 public:
  // Listens on `address` (by default a free port of 127.0.0.1).
  explicit TlsCoordinatorFixture(FakeCoordinatorOptions options = {},
                                 const std::string& address = "127.0.0.1:0") {
    TlsTransportOptions o;
    o.server_context = TestPki::Get().ServerContext();
    server_ = std::move(*TlsTransport::Create(io_.io(), o));
    coordinator_ = FakeCoordinator::Start(*server_, address, options);
  }
  ~TlsCoordinatorFixture() {
    coordinator_.reset();
    io_.Stop();
  }

  FakeCoordinator& coordinator() { return *coordinator_; }
  std::string address() const { return coordinator_->address(); }

  // Writes ca.crt, <id>.crt and <id>.key into the temp dir; the certificate comes from `ca`
  // (the coordinator's CA unless another is given).
  struct Files {
    std::string ca, cert, key;
  };
  // `cert` sets the certificate's lifetime (an expired one, say).
  Files ClientFiles(const std::string& id, const PemPair* ca = nullptr,
                    const CertOptions& cert = {}) {
    const PemPair& issuer = ca ? *ca : TestPki::Get().ca;
    Result<PemPair> pair = MakeClientCertificate(issuer, id, cert);
    TRIB_CHECK(pair.ok(), "client certificate");
    Files f{dir_.file("ca.crt"), dir_.file(id + ".crt"), dir_.file(id + ".key")};
    Write(f.ca, TestPki::Get().ca.cert_pem);
    Write(f.cert, pair->cert_pem);
    Write(f.key, pair->key_pem);
    return f;
  }
  const TempDir& dir() const { return dir_; }

  static void Write(const std::string& path, const std::string& text) {
    TRIB_CHECK(
        WriteFileAtomic(path, {reinterpret_cast<const uint8_t*>(text.data()), text.size()}).ok(),
        "write test file");
  }

 private:
  TempDir dir_;
  IoThreads io_{2};
  std::unique_ptr<TlsTransport> server_;
  std::unique_ptr<FakeCoordinator> coordinator_;
};

}  // namespace tributary::testing

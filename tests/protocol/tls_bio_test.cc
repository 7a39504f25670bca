// TlsBio: the BIO TlsStream drives OpenSSL through. Checked on its own (retry semantics, appends)
// and under a real TLS 1.3 handshake and transfer between two SSLs, shuttling bytes by hand.
#include "protocol/tls_bio.h"

#include <gtest/gtest.h>
#include <openssl/ssl.h>

#include <numeric>
#include <vector>

#include "crypto/cert_authority.h"
#include "crypto/tls_context.h"

namespace tributary {
namespace {

TEST(TlsBioTest, ReadsTheSpanThenAsksToRetryAndAppendsWrites) {
  const std::vector<uint8_t> input = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10};
  std::vector<uint8_t> out = {42};
  TlsBioState state{input.data(), input.size(), &out};
  BIO* bio = NewTlsBio(&state);
  ASSERT_NE(bio, nullptr);
  EXPECT_EQ(BIO_pending(bio), 10);
  char buf[64];
  EXPECT_EQ(BIO_read(bio, buf, 4), 4);
  EXPECT_EQ(buf[0], 1);
  EXPECT_EQ(buf[3], 4);
  EXPECT_EQ(BIO_read(bio, buf, 64), 6);
  EXPECT_EQ(buf[5], 10);
  EXPECT_EQ(state.in_left, 0u);
  EXPECT_EQ(BIO_read(bio, buf, 64), -1);  // empty: "try again", not end of file
  EXPECT_TRUE(BIO_should_retry(bio));
  EXPECT_TRUE(BIO_should_read(bio));

  EXPECT_EQ(BIO_write(bio, "abc", 3), 3);
  EXPECT_EQ(BIO_write(bio, "de", 2), 2);
  EXPECT_EQ(BIO_flush(bio), 1);
  EXPECT_EQ(out, (std::vector<uint8_t>{42, 'a', 'b', 'c', 'd', 'e'}));
  BIO_free(bio);
}

// One end of a TLS connection over a TlsBio.
struct End {
  End(SSL_CTX* ctx, bool server) : ssl(SSL_new(ctx)) {
    BIO* bio = NewTlsBio(&state);
    SSL_set_bio(ssl, bio, bio);
    state.out = &out;
    if (server) {
      SSL_set_accept_state(ssl);
    } else {
      SSL_set_connect_state(ssl);
      SSL_set_tlsext_host_name(ssl, "localhost");
    }
  }
  ~End() { SSL_free(ssl); }
  // Makes what `from` wrote this end's input (which must have been consumed).
  void Take(End& from) {
    in = std::move(from.out);
    from.out.clear();
    state.in = in.data();
    state.in_left = in.size();
  }
  SSL* ssl;
  TlsBioState state;
  std::vector<uint8_t> in, out;
};

TEST(TlsBioTest, CarriesAHandshakeAndAMultiRecordTransfer) {
  const PemPair ca = *MakeCaCertificate("bio CA");
  const PemPair server_cert = *MakeServerCertificate(ca, {"localhost"}, {});
  const PemPair client_cert = *MakeClientCertificate(ca, "bio-client");
  SslContextPtr server_ctx =
      *MakeServerTlsContext(TlsPem{ca.cert_pem, server_cert.cert_pem, server_cert.key_pem});
  SslContextPtr client_ctx =
      *MakeClientTlsContext(TlsPem{ca.cert_pem, client_cert.cert_pem, client_cert.key_pem});
  End server(server_ctx->native_handle(), /*server=*/true);
  End client(client_ctx->native_handle(), /*server=*/false);

  int client_done = 0, server_done = 0;
  for (int step = 0; step < 10 && (client_done != 1 || server_done != 1); ++step) {
    client_done = SSL_do_handshake(client.ssl);
    server.Take(client);
    server_done = SSL_do_handshake(server.ssl);
    client.Take(server);
  }
  ASSERT_EQ(client_done, 1);
  ASSERT_EQ(server_done, 1);
  EXPECT_EQ(SSL_version(server.ssl), TLS1_3_VERSION);
  ASSERT_NE(SSL_get0_peer_certificate(server.ssl), nullptr);

  // 100,000 bytes: seven records in one write, all appended to the sink.
  std::vector<uint8_t> sent(100000);
  std::iota(sent.begin(), sent.end(), uint8_t{0});
  size_t written = 0;
  ASSERT_EQ(SSL_write_ex(client.ssl, sent.data(), sent.size(), &written), 1);
  EXPECT_EQ(written, sent.size());
  EXPECT_GT(client.out.size(), sent.size());           // plus record overhead
  EXPECT_LE(client.out.size(), sent.size() + 7 * 22);  // 5-byte header + type + 16-byte tag
  server.Take(client);
  std::vector<uint8_t> got(sent.size());
  size_t total = 0;
  while (total < got.size()) {
    size_t n = 0;
    if (SSL_read_ex(server.ssl, got.data() + total, got.size() - total, &n) != 1) break;
    total += n;
  }
  EXPECT_EQ(total, sent.size());
  EXPECT_EQ(got, sent);
  // Input exhausted: OpenSSL asks for more rather than failing.
  size_t n = 0;
  EXPECT_EQ(SSL_read_ex(server.ssl, got.data(), got.size(), &n), 0);
  EXPECT_EQ(SSL_get_error(server.ssl, 0), SSL_ERROR_WANT_READ);
}

}  // namespace
}  // namespace tributary

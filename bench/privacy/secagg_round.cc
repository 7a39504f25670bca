// secagg_round: the cost of one round of secure aggregation, against plaintext uploads.
//
// n clients (each with its own certificate from a test CA) run SecAggClient against one
// SecAggServer in this process, one after another on one core, with `--dropout` of them leaving
// after sharing keys (before their masked input), so the server rebuilds their mask keys. Each
// input is a random d-vector put through IntDomain (clip 1, --bits bits per value, every client
// with --examples examples, the weight cap the coordinator picks for such a round). Reported:
//   client compute   per client, each phase (median over the clients; encode is IntDomain's
//                    clip, quantization and weighting, mask the masks; not training)
//   client upload    per client: keys + shares + masked input (packed to sum_bits per value) +
//                    unmask response, in bytes as they would be framed (lengths and ids counted),
//                    against the masked vector alone, plaintext dense (4 d) and plaintext q8
//   server           each phase's close, and the unmask (rebuilding secrets, removing masks)
//   plaintext        the same round without secure aggregation, measured in the same run: each
//                    client encodes its update with `dense` and with `q8` (median time, bytes),
//                    and the server decodes and folds the survivors' updates (what RoundEngine
//                    does per update)
// The last line, `row ...`, holds the figures scripts/bench-secagg tabulates.
//
//   build/ci/bench/privacy/secagg_round --clients 100 --dim 1000000 --dropout 0.3
#include <CLI/CLI.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <map>
#include <memory>
#include <random>

#include "compression/codec.h"
#include "compression/update_sink.h"
#include "crypto/cert_authority.h"
#include "crypto/signing.h"
#include "privacy/secagg/int_domain.h"
#include "privacy/secagg/neighbour_graph.h"
#include "privacy/secagg/secagg_client.h"
#include "privacy/secagg/secagg_server.h"

namespace tributary {
namespace {

using Clock = std::chrono::steady_clock;
double Seconds(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double>(b - a).count();
}

double Median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// Framed sizes: a string is a u64 length and its bytes; a list a u64 count.
size_t Str(const std::string& s) { return 8 + s.size(); }
size_t KeysBytes(const SecAggKeys& k) {
  return Str(k.client_id) + 32 + 32 + Str(k.cert_pem) + 8 + k.signature.size();
}
size_t SharesBytes(const SecAggShares& s) {
  size_t b = Str(s.from) + 8;
  for (const auto& x : s.shares) b += Str(x.from) + Str(x.to) + 8 + x.sealed.size();
  return b;
}
size_t MaskedBytes(size_t len, int bits) {
  return 8 + 8 + (len * static_cast<size_t>(bits) + 7) / 8;
}
size_t UnmaskBytes(const SecAggUnmaskResponse& r) {
  size_t b = Str(r.from) + 8;
  for (const auto& s : r.shares) b += Str(s.owner) + 1 + 4 + 8 + 8 * s.share.y.size();
  return b;
}

// Plaintext: the median client's encode time and bytes with `spec`, and the server's time to
// decode and fold `survivors` such updates into a float sum.
struct Plain {
  double client_s = 0, bytes = 0, server_s = 0;
};
Plain MeasurePlain(const char* spec, size_t d, size_t survivors, std::mt19937& rng) {
  std::unique_ptr<Codec> codec = *MakeCodec(spec);
  std::uniform_real_distribution<float> val(-0.1f, 0.1f);
  std::vector<float> x(d), sum(d, 0.0f);
  std::vector<double> enc;
  Plain p;
  std::vector<uint8_t> bytes;
  for (int i = 0; i < 5; ++i) {
    for (float& v : x) v = val(rng);
    auto a = Clock::now();
    bytes = *codec->Encode(x);
    enc.push_back(Seconds(a, Clock::now()));
  }
  p.client_s = Median(enc);
  p.bytes = static_cast<double>(bytes.size() + 64);  // the update's framing: round, counts, codec
  BufferSink sink(sum);
  auto a = Clock::now();
  for (size_t i = 0; i < survivors; ++i) {
    if (!codec->Validate(bytes, d).ok()) return p;
    codec->DecodeInto(bytes, sink, 1.0f / static_cast<float>(survivors));
  }
  p.server_s = Seconds(a, Clock::now());
  return p;
}

int Run(size_t n, size_t d, double dropout, int bits, size_t degree, uint64_t examples,
        double max_dropout) {
  std::fprintf(stderr, "making %zu client certificates...\n", n);
  const PemPair ca = *MakeCaCertificate("Bench CA");
  const CertificateVerifier verifier = *CertificateVerifier::FromPem(ca.cert_pem);
  std::vector<std::string> ids;
  std::vector<PemPair> certs;
  std::vector<SigningKey> keys;
  for (size_t i = 0; i < n; ++i) {
    char id[32];
    std::snprintf(id, sizeof id, "edge-%05zu", i);
    ids.push_back(id);
    certs.push_back(*MakeClientCertificate(ca, id));
    keys.push_back(*SigningKey::FromPem(certs.back().key_pem));
  }
  IntDomainConfig dc;
  dc.quant_bits = bits;
  dc.max_clients = n;
  dc.max_weight = examples;
  const IntDomain domain = *IntDomain::Create(dc);
  SecAggSession session;
  session.run_id = "bench";
  session.round = 1;
  session.vector_length = d + 1;
  session.modulus_mask = domain.modulus_mask();
  session.degree = degree;
  session.max_dropout = max_dropout;
  const size_t k = session.DegreeFor(n), t = session.ThresholdFor(n);
  std::fprintf(stderr, "n=%zu d=%zu k=%zu t=%zu sum_bits=%d dropout=%.2f\n", n, d, k, t,
               domain.sum_bits(), dropout);

  std::vector<std::unique_ptr<SecAggClient>> clients;
  SecAggServer server(session);
  std::vector<double> t_adv(n), t_share(n), t_encode, t_mask, t_unmask;
  std::vector<size_t> up(n, 0);
  double server_adv = 0, server_share = 0, server_mask_close = 0, server_fold = 0;
  for (size_t i = 0; i < n; ++i) {
    clients.push_back(
        std::make_unique<SecAggClient>(session, ids[i], &keys[i], certs[i].cert_pem, &verifier));
    auto a = Clock::now();
    SecAggKeys kk = *clients[i]->AdvertiseKeys();
    t_adv[i] = Seconds(a, Clock::now());
    up[i] += KeysBytes(kk);
    auto s0 = Clock::now();
    if (!server.AddKeys(kk).ok()) return 1;
    server_adv += Seconds(s0, Clock::now());
  }
  auto s0 = Clock::now();
  const SecAggRoster roster = *server.CloseAdvertise();
  server_adv += Seconds(s0, Clock::now());
  for (size_t i = 0; i < n; ++i) {
    auto a = Clock::now();
    SecAggShares sh = *clients[i]->ShareKeys(roster);
    t_share[i] = Seconds(a, Clock::now());
    up[i] += SharesBytes(sh);
    auto b = Clock::now();
    if (!server.AddShares(std::move(sh)).ok()) return 1;
    server_share += Seconds(b, Clock::now());
  }
  s0 = Clock::now();
  auto inboxes = *server.CloseShares();
  server_share += Seconds(s0, Clock::now());
  std::mt19937 rng(1);
  std::vector<size_t> order(n);
  for (size_t i = 0; i < n; ++i) order[i] = i;
  std::shuffle(order.begin(), order.end(), rng);
  const size_t drop = static_cast<size_t>(dropout * static_cast<double>(n) + 0.5);
  std::vector<bool> dropped(n, false);
  for (size_t i = 0; i < drop; ++i) dropped[order[i]] = true;
  std::uniform_real_distribution<float> val(-0.1f, 0.1f);
  std::vector<float> x(d);
  for (size_t i = 0; i < n; ++i) {
    if (dropped[i]) continue;
    for (float& v : x) v = val(rng);
    auto e = Clock::now();
    const std::vector<uint64_t> input = domain.Encode(x, domain.Weight(examples), i);
    t_encode.push_back(Seconds(e, Clock::now()));
    auto a = Clock::now();
    SecAggMaskedInput y = *clients[i]->MaskInput(inboxes[ids[i]], input);
    t_mask.push_back(Seconds(a, Clock::now()));
    up[i] += MaskedBytes(y.masked.size(), domain.sum_bits());
    auto b = Clock::now();
    if (!server.AddMaskedInput(std::move(y)).ok()) return 1;
    server_fold += Seconds(b, Clock::now());
  }
  s0 = Clock::now();
  const SecAggUnmaskRequest request = *server.CloseMaskedInput();
  server_mask_close = Seconds(s0, Clock::now());
  for (size_t i = 0; i < n; ++i) {
    if (dropped[i]) continue;
    auto a = Clock::now();
    SecAggUnmaskResponse r = *clients[i]->Unmask(request);
    t_unmask.push_back(Seconds(a, Clock::now()));
    up[i] += UnmaskBytes(r);
    if (!server.AddUnmaskResponse(std::move(r)).ok()) return 1;
  }
  s0 = Clock::now();
  Result<std::vector<uint64_t>> sum = server.Finish();
  const double unmask = Seconds(s0, Clock::now());
  if (!sum.ok()) {
    std::fprintf(stderr, "round failed: %s\n", sum.status().ToString().c_str());
    return 1;
  }
  std::vector<double> upload;
  for (size_t i = 0; i < n; ++i)
    if (!dropped[i]) upload.push_back(static_cast<double>(up[i]));
  const double masked_alone = static_cast<double>(MaskedBytes(d + 1, domain.sum_bits()));
  const Plain dense = MeasurePlain("dense", d, n - drop, rng);
  const Plain q8p = MeasurePlain("q8", d, n - drop, rng);
  const double q8 = q8p.bytes;
  const double client_total =
      Median(t_adv) + Median(t_share) + Median(t_encode) + Median(t_mask) + Median(t_unmask);
  std::printf("n=%zu d=%zu k=%zu t=%zu bits=%d sum_bits=%d dropout=%.0f%%\n", n, d, k, t, bits,
              domain.sum_bits(), 100 * dropout);
  std::printf(
      "client compute (median s): advertise %.4f  share %.4f  encode %.4f  mask %.4f  "
      "unmask %.4f  total %.4f\n",
      Median(t_adv), Median(t_share), Median(t_encode), Median(t_mask), Median(t_unmask),
      client_total);
  std::printf(
      "client upload (median bytes): %.0f = %.4fx the masked vector (%.0f); plaintext "
      "dense %.0f (%.3fx), q8 %.0f (%.3fx)\n",
      Median(upload), Median(upload) / masked_alone, masked_alone, dense.bytes,
      Median(upload) / dense.bytes, q8, Median(upload) / q8);
  std::printf("server (s): keys %.4f  shares %.4f  fold %zu inputs %.4f  close %.4f  unmask %.4f\n",
              server_adv, server_share, n - drop, server_fold, server_mask_close, unmask);
  std::printf(
      "plaintext: dense client %.4f s, server fold %.4f s; q8 client %.4f s, server fold %.4f s\n",
      dense.client_s, dense.server_s, q8p.client_s, q8p.server_s);
  const double server_total = server_adv + server_share + server_fold + server_mask_close + unmask;
  std::printf(
      "row n=%zu d=%zu k=%zu t=%zu sum_bits=%d upload=%.0f masked=%.0f client_s=%.6f "
      "server_s=%.4f unmask_s=%.4f dense_bytes=%.0f dense_client_s=%.6f dense_server_s=%.6f "
      "q8_bytes=%.0f q8_client_s=%.6f q8_server_s=%.6f\n",
      n, d, k, t, domain.sum_bits(), Median(upload), masked_alone, client_total, server_total,
      unmask, dense.bytes, dense.client_s, dense.server_s, q8, q8p.client_s, q8p.server_s);
  return 0;
}

}  // namespace
}  // namespace tributary

int main(int argc, char** argv) {
  CLI::App app{"One round of secure aggregation, timed"};
  size_t n = 100, d = 100000, degree = 0;
  double dropout = 0.3;
  int bits = 8;
  uint64_t examples = 600;
  double max_dropout = 0.3;
  app.add_option("--clients", n, "clients")->check(CLI::Range(3, 100000));
  app.add_option("--dim", d, "values per update")->check(CLI::Range(1, 100000000));
  app.add_option("--dropout", dropout, "fraction leaving before their masked input")
      ->check(CLI::Range(0.0, 0.9));
  app.add_option("--bits", bits, "quantization bits per value")->check(CLI::Range(1, 24));
  app.add_option("--degree", degree, "neighbours per client (0: sized for --max-dropout)");
  app.add_option("--max-dropout", max_dropout, "the dropout the default degree is sized for")
      ->check(CLI::Range(0.0, 0.49));
  app.add_option("--examples", examples, "each client's examples (its weight, and the cap)")
      ->check(CLI::Range(1, 1 << 24));
  CLI11_PARSE(app, argc, argv);
  return tributary::Run(n, d, dropout, bits, degree, examples, max_dropout);
}

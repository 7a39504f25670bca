#include "protocol/secagg_messages.h"

namespace tributary {
namespace {

constexpr uint64_t kTag = 8;  // a size tag (u64), or a u64 field
uint64_t Str(const std::string& s) { return kTag + s.size(); }
template <class T>
uint64_t Vec(const std::vector<T>& v) {
  return kTag + v.size() * sizeof(T);
}
uint64_t Names(const std::vector<std::string>& v) {
  uint64_t n = kTag;
  for (const std::string& s : v) n += Str(s);
  return n;
}

}  // namespace

uint64_t WireBytes(const SecAggStartMsg& m) {
  return kTag + Str(m.run_id) + kTag + 4 + 4 + 4 + 5 * kTag + 8 + 8 + kTag + 8;
}

uint64_t WireBytes(const SecAggKeysMsg& m) {
  return kTag + Str(m.client_id) + Vec(m.enc_public) + Vec(m.mask_public) + Str(m.cert_pem) +
         Vec(m.signature);
}

uint64_t WireBytes(const SecAggRosterMsg& m) {
  uint64_t n = kTag + kTag;
  for (const SecAggKeysMsg& k : m.clients) n += WireBytes(k);
  return n;
}

uint64_t WireBytes(const SecAggSealedShareMsg& m) {
  return Str(m.from) + Str(m.to) + Vec(m.sealed);
}

uint64_t WireBytes(const SecAggSharesMsg& m) {
  uint64_t n = kTag + kTag;
  for (const SecAggSealedShareMsg& s : m.shares) n += WireBytes(s);
  return n;
}

uint64_t WireBytes(const SecAggInboxMsg& m) {
  uint64_t n = kTag + Names(m.senders) + kTag;
  for (const SecAggSealedShareMsg& s : m.shares) n += WireBytes(s);
  return n;
}

uint64_t WireBytes(const SecAggMaskedInputMsg& m) {
  return kTag + 4 + kTag + kTag + m.packed.size();
}

uint64_t WireBytes(const SecAggUnmaskRequestMsg& m) {
  return kTag + Names(m.survivors) + Names(m.dropped);
}

uint64_t WireBytes(const SecAggUnmaskResponseMsg& m) {
  uint64_t n = kTag + kTag;
  for (const SecAggRevealedShareMsg& s : m.shares) n += Str(s.owner) + 1 + 4 + Vec(s.y);
  return n;
}

}  // namespace tributary

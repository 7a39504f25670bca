#include "privacy/secagg/secagg_wire.h"

#include <fmt/format.h>

#include <algorithm>

namespace tributary {
namespace {

std::vector<uint8_t> KeyBytes(const Key32& k) { return {k.begin(), k.end()}; }

Status ToKey(const std::vector<uint8_t>& bytes, const char* field, const std::string& id,
             Key32* out) {
  if (bytes.size() != out->size())
    return Status::InvalidArgument(fmt::format(
        "secure aggregation: {} of '{}' has {} bytes, not 32", field, id, bytes.size()));
  std::copy(bytes.begin(), bytes.end(), out->begin());
  return Status::Ok();
}

}  // namespace

std::vector<uint8_t> PackBits(std::span<const uint64_t> values, int bits) {
  std::vector<uint8_t> out((values.size() * static_cast<size_t>(bits) + 7) / 8, 0);
  size_t bit = 0;
  for (uint64_t v : values) {
    for (int done = 0; done < bits;) {
      const size_t byte = bit / 8, shift = bit % 8;
      const int take = std::min<int>(bits - done, 8 - static_cast<int>(shift));
      out[byte] |= static_cast<uint8_t>(((v >> done) & ((1u << take) - 1)) << shift);
      done += take;
      bit += static_cast<size_t>(take);
    }
  }
  return out;
}

Result<std::vector<uint64_t>> UnpackBits(std::span<const uint8_t> packed, uint64_t length,
                                         int bits) {
  if (bits < 1 || bits > 64)
    return Status::InvalidArgument(fmt::format("secure aggregation: {} bits per value", bits));
  if (length > (uint64_t{1} << 40))
    return Status::InvalidArgument(fmt::format("secure aggregation: {} values", length));
  const uint64_t want = (length * static_cast<uint64_t>(bits) + 7) / 8;
  if (packed.size() != want)
    return Status::InvalidArgument(fmt::format(
        "secure aggregation: a masked input of {} values of {} bits has {} bytes, not {}", length,
        bits, packed.size(), want));
  std::vector<uint64_t> out(length, 0);
  size_t bit = 0;
  for (uint64_t& v : out) {
    for (int done = 0; done < bits;) {
      const size_t byte = bit / 8, shift = bit % 8;
      const int take = std::min<int>(bits - done, 8 - static_cast<int>(shift));
      v |= static_cast<uint64_t>((packed[byte] >> shift) & ((1u << take) - 1)) << done;
      done += take;
      bit += static_cast<size_t>(take);
    }
  }
  if (bit % 8 != 0 && (packed.back() >> (bit % 8)) != 0)
    return Status::InvalidArgument("secure aggregation: a masked input's padding bits are not 0");
  return out;
}

SecAggKeysMsg ToWire(const SecAggKeys& k, uint64_t round) {
  return {round,      k.client_id, KeyBytes(k.enc_public), KeyBytes(k.mask_public),
          k.cert_pem, k.signature};
}

Result<SecAggKeys> FromWire(const SecAggKeysMsg& m) {
  SecAggKeys k;
  k.client_id = m.client_id;
  TRIB_RETURN_IF_ERROR(ToKey(m.enc_public, "enc_public", m.client_id, &k.enc_public));
  TRIB_RETURN_IF_ERROR(ToKey(m.mask_public, "mask_public", m.client_id, &k.mask_public));
  k.cert_pem = m.cert_pem;
  k.signature = m.signature;
  return k;
}

SecAggRosterMsg RosterFor(const SecAggRoster& roster, const NeighbourGraph& graph, size_t recipient,
                          uint64_t round) {
  SecAggRosterMsg m;
  m.round = round;
  m.clients.reserve(roster.clients.size());
  for (size_t i = 0; i < roster.clients.size(); ++i) {
    m.clients.push_back(ToWire(roster.clients[i], round));
    if (i != recipient && !graph.Joined(recipient, i)) {
      m.clients.back().cert_pem.clear();
      m.clients.back().signature.clear();
    }
  }
  return m;
}

Result<SecAggRoster> FromWire(const SecAggRosterMsg& m) {
  SecAggRoster r;
  r.clients.reserve(m.clients.size());
  for (const SecAggKeysMsg& k : m.clients) {
    TRIB_ASSIGN_OR_RETURN(SecAggKeys keys, FromWire(k));
    r.clients.push_back(std::move(keys));
  }
  return r;
}

SecAggSharesMsg ToWire(const SecAggShares& s, uint64_t round) {
  SecAggSharesMsg m;
  m.round = round;
  for (const SecAggSealedShare& x : s.shares) m.shares.push_back({x.from, x.to, x.sealed});
  return m;
}

Result<SecAggShares> FromWire(const SecAggSharesMsg& m, const std::string& from) {
  SecAggShares s;
  s.from = from;
  for (const SecAggSealedShareMsg& x : m.shares) {
    if (x.from != from)
      return Status::InvalidArgument(fmt::format(
          "secure aggregation: '{}' sent a share that says it is from '{}'", from, x.from));
    s.shares.push_back({x.from, x.to, x.sealed});
  }
  return s;
}

SecAggInboxMsg ToWire(const SecAggInbox& inbox, uint64_t round) {
  SecAggInboxMsg m;
  m.round = round;
  m.senders = inbox.senders;
  for (const SecAggSealedShare& x : inbox.shares) m.shares.push_back({x.from, x.to, x.sealed});
  return m;
}

SecAggInbox FromWire(const SecAggInboxMsg& m) {
  SecAggInbox inbox;
  inbox.senders = m.senders;
  for (const SecAggSealedShareMsg& x : m.shares) inbox.shares.push_back({x.from, x.to, x.sealed});
  return inbox;
}

SecAggMaskedInputMsg ToWire(const SecAggMaskedInput& input, uint64_t round, int bits) {
  return {round, static_cast<uint32_t>(bits), input.masked.size(),
          SharedBytes(PackBits(input.masked, bits))};
}

Result<SecAggMaskedInput> FromWire(const SecAggMaskedInputMsg& m, const std::string& from,
                                   int bits) {
  if (m.bits != static_cast<uint32_t>(bits))
    return Status::InvalidArgument(fmt::format(
        "secure aggregation: the masked input of '{}' has {} bits per value; the round uses {}",
        from, m.bits, bits));
  TRIB_ASSIGN_OR_RETURN(std::vector<uint64_t> values, UnpackBits(m.packed.span(), m.length, bits));
  return SecAggMaskedInput{from, std::move(values)};
}

SecAggUnmaskRequestMsg ToWire(const SecAggUnmaskRequest& r, uint64_t round) {
  return {round, r.survivors, r.dropped};
}

SecAggUnmaskRequest FromWire(const SecAggUnmaskRequestMsg& m) { return {m.survivors, m.dropped}; }

SecAggUnmaskResponseMsg ToWire(const SecAggUnmaskResponse& r, uint64_t round) {
  SecAggUnmaskResponseMsg m;
  m.round = round;
  for (const SecAggRevealedShare& s : r.shares)
    m.shares.push_back({s.owner, static_cast<uint8_t>(s.kind), s.share.x, s.share.y});
  return m;
}

Result<SecAggUnmaskResponse> FromWire(const SecAggUnmaskResponseMsg& m, const std::string& from) {
  SecAggUnmaskResponse r;
  r.from = from;
  for (const SecAggRevealedShareMsg& s : m.shares) {
    if (s.kind != static_cast<uint8_t>(ShareKind::kSelfMaskSeed) &&
        s.kind != static_cast<uint8_t>(ShareKind::kMaskKey))
      return Status::InvalidArgument(fmt::format(
          "secure aggregation: '{}' revealed a share of unknown kind {}", from, s.kind));
    r.shares.push_back({s.owner, static_cast<ShareKind>(s.kind), ShamirShare{s.x, s.y}});
  }
  return r;
}

}  // namespace tributary

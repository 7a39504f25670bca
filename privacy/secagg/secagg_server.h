// SecAggServer: the coordinator's side of one round of secure aggregation. Messages of a phase are
// added as they arrive; Close* ends the phase at its deadline and yields what goes back out.
//
//   SecAggServer s(session);
//   s.AddKeys(k) ...;                  SecAggRoster roster = *s.CloseAdvertise();
//   s.AddShares(sh) ...;               std::map<id, SecAggInbox> inboxes = *s.CloseShares();
//   s.AddMaskedInput(y) ...;           SecAggUnmaskRequest req = *s.CloseMaskedInput();
//   s.AddUnmaskResponse(r) ...;        std::vector<uint64_t> sum = *s.Finish();
//
// Masked inputs are summed as they arrive: the server holds one vector, not one per client.
// Finish reconstructs the self-mask seed of every survivor and the mask key of every client that
// dropped after sharing keys, removes their masks, and returns the sum of the survivors' inputs
// modulo 2^sum_bits: exactly. A client is a survivor or dropped, never both, so the server never
// asks for, and refuses to accept, both secrets of one client (received_kinds() shows what it
// holds). Too few clients in any phase, or too few shares to unmask, is FailedPrecondition: the
// round fails, and what the server holds (fewer than `threshold` shares of any secret, masked
// inputs) reveals no input. A message out of phase, from a client not in the phase, or a second
// one from a client, is FailedPrecondition naming it; the others' messages are kept.
// Not thread-safe (the round engine calls it from its strand).
#pragma once

#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "privacy/secagg/neighbour_graph.h"
#include "privacy/secagg/secagg_messages.h"
#include "privacy/secagg/secagg_session.h"

namespace tributary {

class SecAggServer {
 public:
  explicit SecAggServer(SecAggSession session);

  Status AddKeys(SecAggKeys keys);
  Result<SecAggRoster> CloseAdvertise();
  Status AddShares(SecAggShares shares);
  Result<std::map<std::string, SecAggInbox>> CloseShares();
  Status AddMaskedInput(SecAggMaskedInput input);
  Result<SecAggUnmaskRequest> CloseMaskedInput();
  Status AddUnmaskResponse(SecAggUnmaskResponse response);
  Result<std::vector<uint64_t>> Finish();

  // For each client, the kinds of its secrets' shares that reached the server.
  const std::map<std::string, std::set<ShareKind>>& received_kinds() const { return kinds_; }
  size_t threshold() const { return threshold_; }
  // The neighbour graph over the roster (after CloseAdvertise): what RosterFor needs.
  const NeighbourGraph& graph() const { return *graph_; }

 private:
  enum class Phase { kAdvertise, kShare, kMask, kUnmask, kDone, kFailed };
  Status Expect(Phase phase, const std::string& what, const std::string& from) const;
  Status Fail(Status why);
  size_t IndexOf(const std::string& id) const;

  SecAggSession session_;
  Phase phase_ = Phase::kAdvertise;
  std::map<std::string, SecAggKeys> keys_;
  SecAggRoster roster_;
  std::optional<NeighbourGraph> graph_;
  size_t threshold_ = 0;
  std::map<std::string, SecAggShares> shares_;  // U2, by sender
  std::set<std::string> masked_;                // U3: whose masked input is folded into sum_
  std::vector<uint64_t> sum_;                   // of the masked inputs, modulo 2^sum_bits
  SecAggUnmaskRequest request_;
  std::set<std::string> answered_;
  // Revealed shares: owner -> shares of the one kind asked for.
  std::map<std::string, std::vector<ShamirShare>> revealed_;
  std::map<std::string, std::set<ShareKind>> kinds_;
};

}  // namespace tributary

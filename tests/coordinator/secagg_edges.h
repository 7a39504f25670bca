// Clients of secure aggregation for engine tests: each Edge is a real SecAggClient with its own
// certificate, which answers an engine's SecAggStart, roster, inbox and unmask request through the
// wire structs; what it masks is its own delta at its own weight. Shared by the synchronous
// (round_engine_secagg_test.cc) and asynchronous (async_engine_secagg_test.cc) engines' tests.
#pragma once

#include <gtest/gtest.h>

#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "coordinator/run_engine.h"
#include "crypto/cert_authority.h"
#include "crypto/signing.h"
#include "privacy/secagg/int_domain.h"
#include "privacy/secagg/secagg_client.h"
#include "privacy/secagg/secagg_wire.h"

namespace tributary::testing {

struct SecAggEdge {
  PemPair cert;
  std::unique_ptr<SigningKey> key;
  std::unique_ptr<SecAggClient> client;
  std::optional<SecAggStartMsg> start;
  std::vector<float> delta;
  uint64_t examples = 0;
  int tasks = 0;  // TaskAssignments received
};

// What an engine's hooks report (closed rounds with their models, failed attempts), kept for the
// test to read.
struct RoundLog {
  std::vector<RoundSummary> summaries;
  std::vector<ModelWeights> models;
  std::vector<std::string> failures;

  RunEngine::Hooks Hooks() {
    RunEngine::Hooks hooks;
    hooks.on_round_complete = [this](const RoundSummary& s, const ModelWeights& m) {
      summaries.push_back(s);
      models.push_back(m);
    };
    hooks.on_round_failed = [this](uint64_t, int64_t, const std::string& why) {
      failures.push_back(why);
    };
    return hooks;
  }
  void Clear() { *this = RoundLog{}; }
  // The first failure, or "" (for assertion messages).
  std::string first_failure() const { return failures.empty() ? "" : failures[0]; }
};

// An edge for `id` with a certificate of `ca`.
inline SecAggEdge MakeSecAggEdge(const PemPair& ca, const std::string& id, uint64_t examples,
                                 std::vector<float> delta) {
  SecAggEdge e;
  e.cert = *MakeClientCertificate(ca, id);
  e.key = std::make_unique<SigningKey>(*SigningKey::FromPem(e.cert.key_pem));
  e.examples = examples;
  e.delta = std::move(delta);
  return e;
}

// Plays the edges (all but `silent`) against `engine` (a RunEngine, or an aggregator's
// SecureGroupShare) until it sends nothing new. A task comes after its SecAggStart; each answer
// goes back at `now`. The edges in `quit_after_sharing` advertise keys and share them, then send
// no masked input: they drop out after their pairwise masks exist.
template <class Server>
void PlaySecAgg(Server& engine, std::map<std::string, SecAggEdge>& edges,
                const CertificateVerifier& verifier, TimePoint now,
                const std::set<std::string>& silent,
                const std::set<std::string>& quit_after_sharing = {}) {
  for (int step = 0; step < 16; ++step) {
    auto out = engine.TakeOutbox();
    if (out.empty()) return;
    for (auto& o : out) {
      if (silent.count(o.client_id) || !edges.count(o.client_id)) continue;
      if (quit_after_sharing.count(o.client_id) &&
          std::holds_alternative<SecAggInboxMsg>(o.message))
        continue;
      SecAggEdge& e = edges[o.client_id];
      const std::string& id = o.client_id;
      if (auto* st = std::get_if<SecAggStartMsg>(&o.message)) {
        e.start = *st;
        SecAggSession s;
        s.run_id = st->run_id;
        s.round = st->round;
        s.vector_length = st->vector_length;
        s.modulus_mask = (uint64_t{1} << st->sum_bits) - 1;
        s.degree = st->degree;
        s.threshold = st->threshold;
        s.min_clients = st->min_clients;
        e.client = std::make_unique<SecAggClient>(s, id, e.key.get(), e.cert.cert_pem, &verifier);
        ASSERT_TRUE(engine.OnSecAgg(id, ToWire(*e.client->AdvertiseKeys(), st->round), now).ok());
      } else if (auto* t = std::get_if<TaskAssignment>(&o.message)) {
        ASSERT_TRUE(e.start.has_value()) << "SecAggStart must come before the task";
        EXPECT_EQ(t->round, e.start->round) << "a task carries its session's round";
        ++e.tasks;
      } else if (auto* r = std::get_if<SecAggRosterMsg>(&o.message)) {
        Result<SecAggShares> sh = e.client->ShareKeys(*FromWire(*r));
        ASSERT_TRUE(sh.ok()) << sh.status();
        ASSERT_TRUE(engine.OnSecAgg(id, ToWire(*sh, r->round), now).ok());
      } else if (auto* in = std::get_if<SecAggInboxMsg>(&o.message)) {
        IntDomainConfig dc{e.start->clip, static_cast<int>(e.start->quant_bits),
                           e.start->max_weight, e.start->max_clients};
        const IntDomain domain = *IntDomain::Create(dc);
        ASSERT_EQ(domain.sum_bits(), static_cast<int>(e.start->sum_bits));
        Result<SecAggMaskedInput> y = e.client->MaskInput(
            FromWire(*in), domain.Encode(e.delta, domain.Weight(e.examples), 3));
        ASSERT_TRUE(y.ok()) << y.status();
        ASSERT_TRUE(engine.OnSecAgg(id, ToWire(*y, in->round, domain.sum_bits()), now).ok());
      } else if (auto* rq = std::get_if<SecAggUnmaskRequestMsg>(&o.message)) {
        Result<SecAggUnmaskResponse> u = e.client->Unmask(FromWire(*rq));
        ASSERT_TRUE(u.ok()) << u.status();
        ASSERT_TRUE(engine.OnSecAgg(id, ToWire(*u, rq->round), now).ok());
      }
    }
  }
}

}  // namespace tributary::testing

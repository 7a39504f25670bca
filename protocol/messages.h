// The messages of protocol version kProtocolVersion (wire.h), as plain structs with cereal
// serialize().
//
// A connection carries a std::variant of these (Message). On the wire each message is one cereal
// binary body behind a frame header whose type byte says which struct it is (frame.h); there are no
// pointers, no polymorphic types and no class-version tags on the wire: the frame's protocol
// version versions the whole schema. Fields are written in declaration order; every string, list
// and map goes through a Capped() wrapper with the cap named here (wire_archive.h), so decoding
// never allocates more than the schema allows or the bytes that arrived.
//
// Model payloads are ModelWeights-compatible: a flat float buffer (ModelWeights::data()), or that
// buffer encoded with a codec pipeline, plus the layout fingerprint (ModelWeights::fingerprint())
// that the receiver checks against its own layout.
// Large messages travel in chunks (frame.h); a struct never has to fit in one frame.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "core/model_layout.h"
#include "core/shared_bytes.h"
#include "protocol/schema_caps.h"
#include "protocol/secagg_messages.h"
#include "protocol/shared_floats.h"
#include "protocol/wire.h"
#include "protocol/wire_archive.h"
#include "tributary/trainer.h"

namespace tributary {

using WireMetrics = std::map<std::string, double>;

// One tensor of a declared layout (core/model_layout.h): name, dtype ("F32"), shape.
template <class Ar>
void serialize(Ar& ar, TensorLayout& t) {
  ar(wire::Capped("layout.name", t.name, kMaxTensorNameBytes),
     wire::Capped("layout.dtype", t.dtype, kMaxNameBytes),
     wire::Capped("layout.shape", t.shape, kMaxTensorRank));
}
// Each tensor takes at least its three size tags on the wire.
inline constexpr uint64_t kMinTensorLayoutWireBytes = 3 * sizeof(uint64_t);

struct ClientCapabilities {
  std::string device;               // e.g. "cpu", "cuda:0 NVIDIA H200"
  std::vector<std::string> codecs;  // codec names this client can encode
  uint64_t num_examples = 0;        // local training examples
  // The model the client trains: LayoutFingerprint(layout), and the tensor list, so that a
  // coordinator whose run has another layout can refuse the client at once, naming the first
  // tensor that differs (LAYOUT_MISMATCH).
  uint64_t layout_fingerprint = 0;
  ModelLayout layout;

  template <class Ar>
  void serialize(Ar& ar) {
    ar(wire::Capped("capabilities.device", device, kMaxNameBytes),
       wire::Capped("capabilities.codecs", codecs, kMaxCodecs, kMaxNameBytes), num_examples,
       layout_fingerprint,
       wire::CappedObjects("capabilities.layout", layout, kMaxTensors, kMinTensorLayoutWireBytes));
  }
  friend bool operator==(const ClientCapabilities&, const ClientCapabilities&) = default;
};

// Sets caps' layout and layout_fingerprint: the declaration of a client that trains `layout`.
inline void DeclareLayout(ClientCapabilities& caps, ModelLayout layout) {
  caps.layout_fingerprint = LayoutFingerprint(layout);
  caps.layout = std::move(layout);
}

// Client -> coordinator, first message after the (TLS) handshake. Carries no client id: the
// coordinator takes the id from the client's certificate.
struct Hello {
  uint32_t protocol_version = kProtocolVersion;
  ClientCapabilities capabilities;
  std::string software_version;

  template <class Ar>
  void serialize(Ar& ar) {
    ar(protocol_version, capabilities,
       wire::Capped("software_version", software_version, kMaxNameBytes));
  }
  friend bool operator==(const Hello&, const Hello&) = default;
};

// Coordinator -> client, the answer to Hello.
struct Welcome {
  uint32_t protocol_version = kProtocolVersion;
  std::string client_id;         // the id the coordinator read from the client's certificate
  std::string software_version;  // the coordinator's
  uint32_t heartbeat_interval_ms = 0;

  template <class Ar>
  void serialize(Ar& ar) {
    ar(protocol_version, wire::Capped("client_id", client_id, kMaxNameBytes),
       wire::Capped("software_version", software_version, kMaxNameBytes), heartbeat_interval_ms);
  }
  friend bool operator==(const Welcome&, const Welcome&) = default;
};

// A flat float model: ModelWeights::data() plus ModelWeights::fingerprint(), sent either raw or
// encoded.
//   encoding == "":  `values` holds the floats; `encoded` is empty.
//   otherwise:       `encoded` holds the model encoded with the codec pipeline `encoding` names
//                    (compression/codec.h, e.g. "q8": the run's download codec), which decodes to
//                    as many floats as the receiver's layout has; `values` is empty.
// On the wire: fingerprint, encoding, then the floats or the encoded bytes (whichever the encoding
// says; the payload's data is always the last bytes of the message, see message_codec.h). Both
// buffers are shared (SharedFloats, SharedBytes): copying a payload, or a message holding one,
// never copies the model, so one round's assignments to 1,000 clients hold one model between them.
struct ModelPayload {
  ModelPayload() = default;
  // A raw payload: ModelPayload{fingerprint, std::move(floats)}.
  ModelPayload(uint64_t fingerprint, SharedFloats floats)
      : layout_fingerprint(fingerprint), values(std::move(floats)) {}

  uint64_t layout_fingerprint = 0;
  SharedFloats values;
  std::string encoding;  // "" = raw float32 values
  SharedBytes encoded;

  bool is_encoded() const { return !encoding.empty(); }
  // The bytes of model data this payload carries (floats or encoded bytes), for traffic counts.
  uint64_t data_bytes() const { return values.size() * sizeof(float) + encoded.size(); }

  template <class Ar>
  void serialize(Ar& ar) {
    ar(layout_fingerprint, wire::Capped("model.encoding", encoding, kMaxNameBytes));
    if constexpr (Ar::is_saving::value) {
      if (encoding.empty() ? !encoded.empty() : !values.empty())
        throw wire::WireException(ErrorCode::kMalformedMessage,
                                  "model: a payload carries both raw values and encoded bytes");
    }
    if (encoding.empty()) {
      ar(wire::Capped("model.values", values, kMaxPayloadFloats));
      if constexpr (Ar::is_loading::value) encoded = SharedBytes();
    } else {
      ar(wire::Capped("model.encoded", encoded, kMaxPayloadBytes));
      if constexpr (Ar::is_loading::value) values = SharedFloats();
    }
  }
  friend bool operator==(const ModelPayload&, const ModelPayload&) = default;
};

// A run that federates only its model's unfrozen tensors (run.federate = "unfrozen"; since
// protocol version 10): the task's `model` then holds only the tensors `federated` lists (indices
// into the whole model's tensors, strictly increasing), and the client joins them with the frozen
// rest: `values` when the coordinator sends them (the first task or evaluation a client gets on a
// connection), else the copy the client kept from an earlier task. `hash` is the frozen rest's
// ModelWeights::content_hash() (the frozen tensors, in order, as one model): a client whose copy
// has another hash, or that holds none, fails the task saying so. Empty `federated`: the task's
// model is the whole model and the other fields are empty.
struct FrozenPart {
  std::vector<uint32_t> federated;
  uint64_t hash = 0;
  SharedFloats values;

  bool active() const { return !federated.empty(); }

  template <class Ar>
  void serialize(Ar& ar) {
    ar(wire::Capped("frozen.federated", federated, kMaxTensors), hash,
       wire::Capped("frozen.values", values, kMaxPayloadFloats));
  }
  friend bool operator==(const FrozenPart&, const FrozenPart&) = default;
};

// tributary::FitConfig (trainer.h) travels as it is: epochs i32, batch_size i32, lr f32, momentum
// f32, weight_decay f32, proximal_mu f32, max_steps i64, seed u64 (cereal's fixed-width binary),
// and since protocol version 8 the optimizer's name (capped), beta1, beta2, eps f32 and
// optimizer_state (capped).
static_assert(sizeof(int) == 4, "FitConfig's int fields are 32-bit on the wire");
template <class Ar>
void serialize(Ar& ar, FitConfig& c) {
  ar(c.epochs, c.batch_size, c.lr, c.momentum, c.weight_decay, c.proximal_mu, c.max_steps, c.seed,
     wire::Capped("fit.optimizer", c.optimizer, kMaxNameBytes), c.beta1, c.beta2, c.eps,
     wire::Capped("fit.optimizer_state", c.optimizer_state, kMaxNameBytes));
}

// How the client must encode its update, e.g. "topk(0.01)+q8+zstd"; compression/ parses it.
struct CodecSpec {
  std::string spec;

  template <class Ar>
  void serialize(Ar& ar) {
    ar(wire::Capped("codec.spec", spec, kMaxNameBytes));
  }
  friend bool operator==(const CodecSpec&, const CodecSpec&) = default;
};

// Coordinator -> client: train round `round` starting from `model` (version `model_version`).
// `control` is SCAFFOLD's server control variate c (one float per parameter, raw, since protocol
// version 4), empty unless the run's strategy is scaffold; a client given one applies the
// correction c - c_i while it trains and answers with UpdateSubmission::control_delta.
// `split_cut` (since protocol version 7) is nonzero in a split-learning run (docs/split.md): the
// model is the device part of a model cut before that layer, and the client trains it by sending
// each batch's activations (SplitActivations, encoded with `split_codec`) and applying the
// gradient the coordinator answers with (SplitGradient), then submits its update as usual.
// `split_head` (since version 9) is nonzero in a U-shaped (label-private) split: the model is then
// the device's front (layers before split_cut) followed by its head (layers from split_head on),
// and each batch takes two round trips (docs/split.md): the activations without labels up, the
// server part's output down (SplitActivations), the head's input gradient up and the gradient at
// the first cut down (SplitGradient).
// `task_id` (since version 11) names the task within its round: the client echoes it in its
// UpdateSubmission (and an aggregator in its GroupResult), so that the coordinator tells an answer
// to an earlier task of the same round (a failed attempt's, a re-dispatched client's) from one to
// the current task. Synchronous rounds number their attempts 1, 2, ...; asynchronous runs use the
// run's dispatch counter. Opaque to clients.
struct TaskAssignment {
  uint64_t round = 0;
  uint64_t task_id = 0;
  uint64_t model_version = 0;
  FitConfig fit;
  CodecSpec codec;
  uint64_t deadline_ms = 0;  // the update must arrive within this many ms of the assignment
  uint32_t split_cut = 0;
  CodecSpec split_codec;
  uint32_t split_head = 0;
  SharedFloats control;  // before the model: the model's data stays the message's last bytes
  FrozenPart frozen;
  ModelPayload model;

  template <class Ar>
  void serialize(Ar& ar) {
    ar(round, task_id, model_version, fit, codec, deadline_ms, split_cut, split_codec, split_head,
       wire::Capped("task.control", control, kMaxPayloadFloats), frozen, model);
  }
  friend bool operator==(const TaskAssignment&, const TaskAssignment&) = default;
};

// Coordinator -> client: evaluate `model` on local evaluation data.
struct EvaluateTask {
  uint64_t round = 0;
  uint64_t model_version = 0;
  int32_t batch_size = 256;
  int64_t max_examples = 0;  // 0: the whole evaluation set
  uint64_t deadline_ms = 0;
  FrozenPart frozen;  // since protocol version 10; as TaskAssignment's
  ModelPayload model;

  template <class Ar>
  void serialize(Ar& ar) {
    ar(round, model_version, batch_size, max_examples, deadline_ms, frozen, model);
  }
  friend bool operator==(const EvaluateTask&, const EvaluateTask&) = default;
};

// An update as the client's codec pipeline produced it.
struct EncodedUpdate {
  std::string codec;  // the CodecSpec::spec it was encoded with
  uint64_t layout_fingerprint = 0;
  uint64_t num_floats = 0;  // the dense size the update decodes to
  // Shared, not copied: a received update points into the receive buffer, and a sent one is
  // framed without copying it (EncodeMessageBodySharingPayload).
  SharedBytes bytes;

  template <class Ar>
  void serialize(Ar& ar) {
    ar(wire::Capped("update.codec", codec, kMaxNameBytes), layout_fingerprint, num_floats,
       wire::Capped("update.bytes", bytes, kMaxPayloadBytes));
  }
  friend bool operator==(const EncodedUpdate&, const EncodedUpdate&) = default;
};

// Client -> coordinator: the result of a TaskAssignment. `control_delta` (since protocol version
// 4) is SCAFFOLD's c_i+ - c_i, raw floats, one per parameter, when the task carried a control
// variate; empty otherwise. The coordinator refuses an update whose control_delta is present when
// it was not asked for, absent when it was, of another length, or not finite. `task_id` (since
// version 11) is the answered TaskAssignment's.
struct UpdateSubmission {
  uint64_t round = 0;
  uint64_t task_id = 0;
  uint64_t model_version = 0;  // the version the update is a delta against
  uint64_t num_examples = 0;
  WireMetrics metrics;
  SharedFloats control_delta;  // before the update: its bytes stay the message's last bytes
  EncodedUpdate update;

  template <class Ar>
  void serialize(Ar& ar) {
    ar(round, task_id, model_version, num_examples,
       wire::Capped("metrics", metrics, kMaxMetrics, kMaxNameBytes),
       wire::Capped("update.control_delta", control_delta, kMaxPayloadFloats), update);
  }
  friend bool operator==(const UpdateSubmission&, const UpdateSubmission&) = default;
};

// Client -> coordinator: the result of an EvaluateTask.
struct EvaluateResult {
  uint64_t round = 0;
  uint64_t model_version = 0;
  uint64_t num_examples = 0;
  double loss = 0.0;
  double accuracy = 0.0;
  WireMetrics metrics;

  template <class Ar>
  void serialize(Ar& ar) {
    ar(round, model_version, num_examples, loss, accuracy,
       wire::Capped("metrics", metrics, kMaxMetrics, kMaxNameBytes));
  }
  friend bool operator==(const EvaluateResult&, const EvaluateResult&) = default;
};

// Either direction: liveness. The receiver may echo `sequence`.
struct Heartbeat {
  uint64_t sequence = 0;
  uint64_t sent_unix_ms = 0;

  template <class Ar>
  void serialize(Ar& ar) {
    ar(sequence, sent_unix_ms);
  }
  friend bool operator==(const Heartbeat&, const Heartbeat&) = default;
};

// Either direction: something went wrong. `code` is an ErrorCode value, kept raw so that codes
// from newer peers survive.
struct Error {
  uint32_t code = 0;
  std::string message;

  template <class Ar>
  void serialize(Ar& ar) {
    ar(code, wire::Capped("error.message", message, kMaxTextBytes));
  }
  friend bool operator==(const Error&, const Error&) = default;
};

// Either direction: an orderly end of the session. From the coordinator, `code` says how the run
// ended: 0 (kUnspecified) when it completed or was stopped, RUN_FAILED when it failed (the reason
// says why), so a client can report a failed run as an error. Kept raw like Error::code.
// Pace steering (docs/tier.md): a Goodbye whose come_back_window_ms is not 0 ends the session, not
// the run: the client reconnects at a time it draws uniformly in [come_back_after_ms,
// come_back_after_ms + come_back_window_ms] from now.
struct Goodbye {
  std::string reason;
  uint32_t code = 0;
  uint64_t come_back_after_ms = 0;
  uint64_t come_back_window_ms = 0;

  bool come_back() const { return come_back_window_ms != 0; }

  template <class Ar>
  void serialize(Ar& ar) {
    ar(wire::Capped("goodbye.reason", reason, kMaxTextBytes), code, come_back_after_ms,
       come_back_window_ms);
  }
  friend bool operator==(const Goodbye&, const Goodbye&) = default;
};

// The messages of the aggregation tier (docs/tier.md), types 18-22 (protocol version 5). Only a
// tributary-aggregator and the coordinator send them, over a connection whose certificate is an
// aggregator's (crypto/client_id.h: PeerRole::kAggregator); a client that sends one is refused,
// and a coordinator never sends one to a client.
//
//   18 AggregatorHello    aggregator -> coordinator  first message: the protocol version
//   19 AggregatorWelcome  coordinator -> aggregator  the run: its configuration (TOML) and layout
//   20 GroupMembership    aggregator -> coordinator  clients that joined it (with their Hello's
//                                                    capabilities) and clients that left
//   21 GroupTask          coordinator -> aggregator  one round's task for the aggregator's
//                                                    selected clients: the task once (one model),
//                                                    each client's fit seed
//   22 GroupResult        aggregator -> coordinator  the exact partial sum of the updates it
//                                                    accepted (aggregation/partial_sum.h) and one
//                                                    record per client it judged
// The bulk fields (the model, the partial sum) are each message's last field, so that a send shares
// them instead of copying (message_codec.h). Every list is capped by count and by the bytes each
// element takes on the wire at least.

inline constexpr uint64_t kMaxGroupMembers = uint64_t{1} << 22;  // clients in one message
inline constexpr uint64_t kMaxRunConfigBytes = uint64_t{1} << 20;

struct AggregatorHello {
  uint32_t protocol_version = kProtocolVersion;
  std::string software_version;

  template <class Ar>
  void serialize(Ar& ar) {
    ar(protocol_version,
       wire::Capped("aggregator.software_version", software_version, kMaxNameBytes));
  }
  friend bool operator==(const AggregatorHello&, const AggregatorHello&) = default;
};

// What an aggregator needs to judge and fold updates as the coordinator would: the run's
// configuration as TOML (RunConfig's keys: the codec, the strategy, run.max_weight, the bounds on
// num_examples, ...) and the model's layout.
struct AggregatorWelcome {
  uint32_t protocol_version = kProtocolVersion;
  std::string aggregator_id;  // the id the coordinator read from the aggregator's certificate
  std::string software_version;
  uint32_t heartbeat_interval_ms = 0;
  std::string run_config;
  uint64_t layout_fingerprint = 0;
  ModelLayout layout;

  template <class Ar>
  void serialize(Ar& ar) {
    ar(protocol_version, wire::Capped("aggregator.id", aggregator_id, kMaxNameBytes),
       wire::Capped("aggregator.software_version", software_version, kMaxNameBytes),
       heartbeat_interval_ms, wire::Capped("aggregator.run_config", run_config, kMaxRunConfigBytes),
       layout_fingerprint,
       wire::CappedObjects("aggregator.layout", layout, kMaxTensors, kMinTensorLayoutWireBytes));
  }
  friend bool operator==(const AggregatorWelcome&, const AggregatorWelcome&) = default;
};

// A client that completed Hello with an aggregator. Its capabilities are the Hello's, without the
// tensor list (the aggregator checked the layout; the fingerprint stays).
struct GroupMember {
  std::string client_id;
  ClientCapabilities capabilities;

  template <class Ar>
  void serialize(Ar& ar) {
    ar(wire::Capped("group.client_id", client_id, kMaxNameBytes), capabilities);
  }
  friend bool operator==(const GroupMember&, const GroupMember&) = default;
};
// A member's size tag, and its capabilities' four tags and two u64s.
inline constexpr uint64_t kMinGroupMemberWireBytes = 7 * sizeof(uint64_t);

struct GroupMembership {
  std::vector<GroupMember> joined;
  std::vector<std::string> left;

  template <class Ar>
  void serialize(Ar& ar) {
    ar(wire::CappedObjects("group.joined", joined, kMaxGroupMembers, kMinGroupMemberWireBytes),
       wire::Capped("group.left", left, kMaxGroupMembers, kMaxNameBytes));
  }
  friend bool operator==(const GroupMembership&, const GroupMembership&) = default;
};

struct GroupAssignee {
  std::string client_id;
  uint64_t fit_seed = 0;  // the TaskAssignment's fit.seed for this client

  template <class Ar>
  void serialize(Ar& ar) {
    ar(wire::Capped("group.client_id", client_id, kMaxNameBytes), fit_seed);
  }
  friend bool operator==(const GroupAssignee&, const GroupAssignee&) = default;
};
inline constexpr uint64_t kMinGroupAssigneeWireBytes = 2 * sizeof(uint64_t);

// The aggregator sends each member `task` with fit.seed set to the member's seed. With secure
// aggregation (secagg.round != 0) it first runs one session over its members with `secagg`'s
// parameters, which the coordinator chose for the whole round (every group's sum shares one
// integer domain and modulus, so the coordinator can add them), and `task` is dense.
struct GroupTask {
  std::vector<GroupAssignee> members;
  SecAggStartMsg secagg;  // round 0: no secure aggregation
  TaskAssignment task;    // last: its model stays the message's last bytes

  template <class Ar>
  void serialize(Ar& ar) {
    ar(wire::CappedObjects("group.members", members, kMaxGroupMembers, kMinGroupAssigneeWireBytes),
       secagg, task);
  }
  friend bool operator==(const GroupTask&, const GroupTask&) = default;
};

// The aggregator's verdict on one client's update. code 0: accepted, folded into the partial sum
// with `weight` (run.max_weight applied to num_examples); otherwise the ErrorCode the client was
// sent, the kind of reason (coordinator/update_check.h) and the reason.
struct GroupRecord {
  std::string client_id;
  uint64_t num_examples = 0;
  uint64_t weight = 0;
  uint64_t bytes_up = 0;  // the update's encoded bytes
  WireMetrics metrics;
  uint32_t code = 0;
  std::string kind;
  std::string reason;

  bool accepted() const { return code == 0; }

  template <class Ar>
  void serialize(Ar& ar) {
    ar(wire::Capped("group.client_id", client_id, kMaxNameBytes), num_examples, weight, bytes_up,
       wire::Capped("group.metrics", metrics, kMaxMetrics, kMaxNameBytes), code,
       wire::Capped("group.kind", kind, kMaxNameBytes),
       wire::Capped("group.reason", reason, kMaxTextBytes));
  }
  friend bool operator==(const GroupRecord&, const GroupRecord&) = default;
};
inline constexpr uint64_t kMinGroupRecordWireBytes = 9 * sizeof(uint64_t);

// A partial sum of round `round` (updates against `model_version`): `partial` is
// EncodePartialSum's wire form of the accepted records' updates; records may also name refused
// ones. An aggregator may send several for one round (each holding updates not sent before).
//
// With secure aggregation (secagg_bits != 0) there is one result per round: `partial` is the
// group's unmasked integer sum, secagg_length values of secagg_bits bits packed like a masked
// input (SecAggMaskedInputMsg), the records name the survivors whose inputs it holds (their
// num_examples and weight are 0: only the sum's last value, the total weight, is known), and
// members it does not name dropped out. An empty `partial` says the group's session failed,
// with the reason in `secagg_failure`. `task_id` (since version 11) is the GroupTask's task's.
struct GroupResult {
  uint64_t round = 0;
  uint64_t task_id = 0;
  uint64_t model_version = 0;
  std::vector<GroupRecord> records;
  uint32_t secagg_bits = 0;
  uint64_t secagg_length = 0;
  std::string secagg_failure;
  SharedBytes partial;  // last: shared, not copied, when sent

  template <class Ar>
  void serialize(Ar& ar) {
    ar(round, task_id, model_version,
       wire::CappedObjects("group.records", records, kMaxGroupMembers, kMinGroupRecordWireBytes),
       secagg_bits, secagg_length,
       wire::Capped("group.secagg_failure", secagg_failure, kMaxTextBytes),
       wire::Capped("group.partial", partial, kMaxPayloadBytes));
  }
  friend bool operator==(const GroupResult&, const GroupResult&) = default;
};

// Split learning (docs/split.md). Client -> coordinator, during a split task: the activations at
// the cut of batch `batch` (0, 1, ... within the task) of `samples` samples, with their labels,
// encoded with the task's split_codec as `samples * cut size` floats
// (activations.layout_fingerprint is the device part's). The coordinator checks the sizes against
// the task (at most its batch size; the cut's shape) before decoding, trains its server part on
// them and answers with the SplitGradient of the same batch. In a U-shaped split (the task's
// split_head) `labels` is empty both ways: up, the activations at the first cut; down, the
// coordinator's answer, the server part's output at the second cut (`samples * head cut size`
// floats), to which the client answers with a SplitGradient (the head's input gradient).
// (`samples` since protocol version 9; labels.size() before.)
struct SplitActivations {
  uint64_t round = 0;
  uint64_t batch = 0;
  uint32_t samples = 0;
  std::vector<uint8_t> labels;
  EncodedUpdate activations;  // last: its bytes stay the message's last bytes

  template <class Ar>
  void serialize(Ar& ar) {
    ar(round, batch, samples, wire::Capped("split.labels", labels, kMaxSplitBatch), activations);
  }
  friend bool operator==(const SplitActivations&, const SplitActivations&) = default;
};

// Coordinator -> client: the gradient of the batch's mean loss with respect to its activations
// (the same size, encoded with the task's split_codec), and the server part's loss summed over the
// batch and its correct predictions, for the client's training metrics. In a U-shaped split the
// client sends one first (the gradient at the second cut, with its head's loss and correct count)
// and the coordinator answers with the gradient at the first cut (echoing them).
struct SplitGradient {
  uint64_t round = 0;
  uint64_t batch = 0;
  double loss_sum = 0.0;
  uint64_t correct = 0;
  EncodedUpdate gradient;

  template <class Ar>
  void serialize(Ar& ar) {
    ar(round, batch, loss_sum, correct, gradient);
  }
  friend bool operator==(const SplitGradient&, const SplitGradient&) = default;
};

// Client -> coordinator (or the client's aggregator), since protocol version 12: the client could
// not do a task (its trainer failed or threw, its result was not finite, its update could not be
// encoded or masked), so the round need not wait for it until the task's deadline. `kind` says
// which task: kFit for a TaskAssignment (`round` and `task_id` are the task's), kEvaluate for an
// EvaluateTask (`round` is the evaluation's; `task_id` 0); another value names no task. `code` is
// the ErrorCode of the failure as the client saw it (kept raw, like Error's), `reason` its text. A
// TaskFailed that names no task the sender holds changes nothing.
struct TaskFailed {
  static constexpr uint8_t kFit = 0;
  static constexpr uint8_t kEvaluate = 1;

  uint64_t round = 0;
  uint64_t task_id = 0;
  uint8_t kind = kFit;
  uint32_t code = 0;
  std::string reason;

  bool fit() const { return kind == kFit; }
  bool evaluate() const { return kind == kEvaluate; }

  template <class Ar>
  void serialize(Ar& ar) {
    ar(round, task_id, kind, code, wire::Capped("task_failed.reason", reason, kMaxTextBytes));
  }
  friend bool operator==(const TaskFailed&, const TaskFailed&) = default;
};

// The variant's alternative index + 1 equals the MessageType value.
using Message = std::variant<Hello, Welcome, TaskAssignment, EvaluateTask, UpdateSubmission,
                             EvaluateResult, Heartbeat, Error, Goodbye, SecAggKeysMsg,
                             SecAggRosterMsg, SecAggSharesMsg, SecAggInboxMsg, SecAggMaskedInputMsg,
                             SecAggUnmaskRequestMsg, SecAggUnmaskResponseMsg, SecAggStartMsg,
                             AggregatorHello, AggregatorWelcome, GroupMembership, GroupTask,
                             GroupResult, SplitActivations, SplitGradient, TaskFailed>;

inline MessageType TypeOf(const Message& m) { return static_cast<MessageType>(m.index() + 1); }

}  // namespace tributary

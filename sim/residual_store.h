// ResidualStore: the error-feedback state of every virtual client that has trained, in memory.
//
// A real client keeps its residual in its state dir (ClientState); the simulator keeps them all
// here and hands each selected client its own through TaskExecutor::set_codec_state. Two knobs
// bound the memory of large populations:
//   max_age_rounds  a residual unused for more than this many rounds is dropped (0: never);
//   keep_fraction   only the largest-|r| fraction of entries is kept, as (index, value) pairs
//                   (1: the whole residual, dense). Dropping small entries loses a little of the
//                   error feedback's memory; that is the trade.
//
// Thread-safe: pool threads Get and Put different clients concurrently.
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "compression/codec.h"
#include "tributary/result.h"

namespace tributary {

class ResidualStore {
 public:
  ResidualStore(int64_t max_age_rounds, double keep_fraction)
      : max_age_(max_age_rounds), keep_fraction_(keep_fraction) {}

  // The client's state for `round` as a dense CodecState, or nullopt when it has none (or it
  // expired).
  std::optional<CodecState> Get(uint64_t client, uint64_t round) const;
  // Stores the state the client's executor ended `round` with (an empty residual erases it).
  void Put(uint64_t client, uint64_t round, CodecState state);
  // Drops residuals older than max_age_rounds as of `round`.
  void Expire(uint64_t round);

  size_t size() const;
  // Bytes held in residual values and indices.
  uint64_t bytes() const;

  // One client's stored state: dense (index empty, values of length size) or sparse (the kept
  // entries' ascending indices into [0, size), and their values).
  struct Entry {
    std::string spec;
    uint64_t round = 0;
    uint64_t size = 0;            // dense length
    std::vector<uint32_t> index;  // empty when dense
    std::vector<float> values;    // dense, or the kept entries
  };
  // Every client's entry, by population index (a checkpoint's copy: sim/sim_checkpoint.h).
  std::map<uint64_t, Entry> Snapshot() const;
  // Replaces every entry with `entries` (a Snapshot read back). Every entry's dense length must be
  // `model_size` (the run's parameter count: a residual is one value per parameter), so that Get
  // never allocates a length read from a file. InvalidArgument naming the client when an entry is
  // not well formed (lengths, indices out of range or not ascending, values not finite); then
  // nothing changes.
  Status Restore(std::map<uint64_t, Entry> entries, uint64_t model_size);

 private:
  bool Expired(const Entry& e, uint64_t round) const {
    return max_age_ > 0 && round > e.round + static_cast<uint64_t>(max_age_);
  }

  int64_t max_age_;
  double keep_fraction_;
  mutable std::mutex mu_;
  std::map<uint64_t, Entry> entries_;  // GUARDED_BY(mu_)
  uint64_t bytes_ = 0;                 // GUARDED_BY(mu_)
};

}  // namespace tributary

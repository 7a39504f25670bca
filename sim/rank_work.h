// The messages between rank 0 and the other ranks of a distributed simulation (sim/rank_link.h).
//
//   RankHello    a rank -> rank 0, once: what it loaded (the population's fingerprint), so that
//                ranks whose config or data differ are refused before the first round.
//   RankWork     rank 0 -> a rank, per batch of jobs: the distinct models once each (a task's
//                TaskAssignment in the wire format, with SCAFFOLD's server control variate) and,
//                per job, its task without the model and control variate, its device-model key
//                (attempt, or an asynchronous run's task number), the download's framed size, the
//                client's error-feedback state and SCAFFOLD control variate; in an SFLV1 split run,
//                the round's server part and its training settings, which each job's server copy
//                starts from; or the global model's values and the server-side evaluation's slices
//                to evaluate (ModelEvaluator); or `stop`.
//   RankResults  the rank -> rank 0: per job, its status, the update as the coordinator's decoder
//                receives it (the reassembled body of its frames, sim_wire.h's ToWire), the framed
//                size and the client's new error-feedback state and control variate; in a split
//                run, its batches' counts and framed bytes and (SFLV1) its trained server copy
//                with what that cost; per evaluation slice, its result.
//
// Rank 0 keeps every client's error-feedback state and ships it with the job, so any rank can
// train any client and the assignment (sim/rank_schedule.h) changes nothing the run computes.
// The ranks are processes of one job that trust each other; the decoders still check every
// length against the message's size before allocating.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "compression/codec.h"
#include "tributary/result.h"

namespace tributary {

struct RankHello {
  int rank = 0;
  uint64_t fingerprint = 0;
};

struct RankJob {
  uint64_t slot = 0;             // the job's place in rank 0's batch
  uint64_t client = 0;           // population index
  std::optional<uint64_t> task;  // an asynchronous run's task number
  int64_t attempt = 0;
  uint64_t bytes_down = 0;
  uint32_t model = 0;          // index into RankWork::models
  std::vector<uint8_t> shell;  // the TaskAssignment with an empty model, wire format
  std::optional<CodecState> state;
  std::vector<float> control;  // SCAFFOLD's c_i; empty: none yet (zeros), or not SCAFFOLD
};

struct RankWork {
  bool stop = false;
  std::vector<std::vector<uint8_t>> models;  // TaskAssignments with their models, wire format
  std::vector<RankJob> jobs;
  // An evaluation: the model's values (in the run's layout) and the slices to evaluate.
  std::vector<float> eval_model;
  std::vector<uint32_t> eval_slices;
  // SFLV1 split learning (empty split_server otherwise): the round, the server part it opened
  // with, and the settings its copies train with (SplitServer::round_fit).
  uint64_t split_round = 0;
  std::vector<float> split_server;
  int32_t split_batch_size = 0;
  float split_lr = 0.0f, split_momentum = 0.0f, split_weight_decay = 0.0f;
  std::string split_optimizer;  // FitConfig::optimizer and Adam's settings
  float split_beta1 = 0.0f, split_beta2 = 0.0f, split_eps = 0.0f;
};

struct RankJobResult {
  uint64_t slot = 0;
  int32_t code = 0;  // StatusCode
  std::string message;
  bool abandoned = false;
  uint64_t bytes_up = 0;
  std::vector<uint8_t> body;  // the update's reassembled body; empty when it sent nothing
  std::optional<CodecState> state;
  std::vector<float> control;  // SCAFFOLD's new c_i; empty when it made no update
  // Split learning: the job's batches and their framed bytes each way (its timing), and its SFLV1
  // server copy after them (empty: none) with the copy's samples, codec bytes and compute time.
  uint64_t split_batches = 0, split_bytes_up = 0, split_bytes_down = 0;
  std::vector<float> split_copy;
  uint64_t split_samples = 0, split_bytes_in = 0, split_bytes_out = 0;
  double split_seconds = 0.0;
};

struct RankSliceResult {
  uint32_t slice = 0;
  int32_t code = 0;  // StatusCode
  std::string message;
  double loss = 0.0, accuracy = 0.0;
  int64_t num_examples = 0;
};

struct RankResults {
  std::vector<RankJobResult> jobs;
  std::vector<RankSliceResult> slices;
  double busy_seconds = 0.0;  // the rank's wall time from the work's arrival to the results
};

std::string EncodeRankHello(const RankHello& m);
Result<RankHello> DecodeRankHello(const std::string& bytes);
std::string EncodeRankWork(const RankWork& m);
Result<RankWork> DecodeRankWork(const std::string& bytes);
std::string EncodeRankResults(const RankResults& m);
Result<RankResults> DecodeRankResults(const std::string& bytes);

}  // namespace tributary

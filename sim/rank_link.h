// RankLink: the simulator's link between the processes (ranks) of one distributed simulation.
//
// Rank 0 runs the run's driver and engine; every other rank serves it, training the jobs rank 0
// sends (Simulator::Serve). A link carries whole byte messages between rank 0 and one other rank,
// in order per pair; Send and Receive block. Implementations: MpiLink (sim/mpi_link.h, under
// mpirun) and, in tests, ranks as threads of one process. The link's size is at least 1; a link of
// size 1 is one process.
//
// Only the thread that runs the simulation calls a link.
#pragma once

#include <string>

#include "tributary/result.h"

namespace tributary {

class RankLink {
 public:
  virtual ~RankLink() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;
  // `bytes` to rank `to` (not this rank).
  virtual Status Send(int to, const std::string& bytes) = 0;
  // The next message from rank `from` (not this rank).
  virtual Result<std::string> Receive(int from) = 0;
};

}  // namespace tributary

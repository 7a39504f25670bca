// MpiLink: the ranks of a distributed simulation as the processes of an MPI job (mpirun, srun).
//
// tributary-sim started by an MPI launcher as more than one process (MpiLaunchedRanks > 1) makes
// one: Init calls MPI_Init_thread (only the main thread calls MPI), the destructor
// MPI_Finalize. Messages are sent whole: their length, then the bytes in pieces of at most 1 GiB
// (MPI counts are ints). A rank that waits (to send or to receive) sleeps between polls, up to
// 1 ms, instead of spinning in MPI's blocking calls: more ranks than cores (mpirun
// --oversubscribe) then leaves the cores to the ranks that train. A build without MPI
// (TRIBUTARY_MPI=OFF, or no libopenmpi-dev) has the class, and Init says it was built without MPI.
#pragma once

#include <memory>

#include "sim/rank_link.h"

namespace tributary {

// The number of processes the MPI launcher started, read from its environment (Open MPI's
// OMPI_COMM_WORLD_SIZE, the PMI's PMI_SIZE, Slurm's SLURM_NTASKS under srun with PMIx), before MPI
// is initialized; 0 when the program was not started by one.
int MpiLaunchedRanks();

// Whether this build can run over MPI.
bool MpiBuilt();

class MpiLink : public RankLink {
 public:
  static Result<std::unique_ptr<MpiLink>> Init(int* argc, char*** argv);
  ~MpiLink() override;

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  Status Send(int to, const std::string& bytes) override;
  Result<std::string> Receive(int from) override;
  // Ends every rank of the job (MPI_Abort): what a rank that cannot go on does.
  [[noreturn]] void Abort(int code);

 private:
  MpiLink() = default;
  int rank_ = 0;
  int size_ = 1;
};

}  // namespace tributary

#include "sim/mpi_link.h"

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>
#include <thread>

#include <fmt/format.h>

#if TRIBUTARY_HAVE_MPI
// The C API only: Open MPI's and MPICH's mpi.h otherwise pull in their deprecated C++ bindings.
#define OMPI_SKIP_MPICXX 1
#define MPICH_SKIP_MPICXX 1
#include <dlfcn.h>
#include <mpi.h>
#endif

namespace tributary {

int MpiLaunchedRanks() {
  // SLURM_NTASKS is set in a whole allocation; only a job step (srun) has started the ranks.
  const bool srun = std::getenv("SLURM_STEP_ID") != nullptr;
  for (const char* name : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_SIZE", "SLURM_NTASKS"}) {
    if (std::string_view(name) == "SLURM_NTASKS" && !srun) continue;
    if (const char* v = std::getenv(name); v && *v) return std::max(0, std::atoi(v));
  }
  return 0;
}

#if TRIBUTARY_HAVE_MPI

namespace {

constexpr int kTag = 7;
constexpr size_t kPiece = size_t{1} << 30;

Status MpiError(const char* what, int code) {
  char text[MPI_MAX_ERROR_STRING];
  int len = 0;
  MPI_Error_string(code, text, &len);
  return Status::Unavailable(fmt::format("MPI: {} failed: {}", what, std::string(text, len)));
}

// Waits for `request` without holding a core. Open MPI's blocking calls poll for as long as they
// wait, so a rank waiting for its next task (or rank 0 for the ranks' results) would take a whole
// core from the ranks that train whenever a machine runs more ranks than it has cores. This polls
// MPI_Test (which also drives MPI's progress) a few times, then sleeps between polls, from 50 us
// doubling to 1 ms: a message waits at most about 1 ms more, against rounds of local training.
Status Await(MPI_Request* request, const char* what) {
  using std::chrono::microseconds;
  constexpr int kBusyPolls = 64;
  constexpr microseconds kLongestPause{1000};
  microseconds pause{50};
  for (int polls = 0;; ++polls) {
    int done = 0;
    if (int rc = MPI_Test(request, &done, MPI_STATUS_IGNORE); rc != MPI_SUCCESS)
      return MpiError(what, rc);
    if (done) return Status::Ok();
    if (polls < kBusyPolls) continue;
    std::this_thread::sleep_for(pause);
    pause = std::min(pause * 2, kLongestPause);
  }
}

Status SendPiece(const void* data, int count, MPI_Datatype type, int to) {
  MPI_Request request;
  if (int rc = MPI_Isend(data, count, type, to, kTag, MPI_COMM_WORLD, &request); rc != MPI_SUCCESS)
    return MpiError("MPI_Isend", rc);
  return Await(&request, "MPI_Isend");
}

Status ReceivePiece(void* data, int count, MPI_Datatype type, int from) {
  MPI_Request request;
  if (int rc = MPI_Irecv(data, count, type, from, kTag, MPI_COMM_WORLD, &request);
      rc != MPI_SUCCESS)
    return MpiError("MPI_Irecv", rc);
  return Await(&request, "MPI_Irecv");
}

}  // namespace

bool MpiBuilt() { return true; }

Result<std::unique_ptr<MpiLink>> MpiLink::Init(int* argc, char*** argv) {
  // Open MPI loads its components with dlopen, and they need libmpi's symbols: in a process that
  // loaded libmpi privately (the Python module, opened RTLD_LOCAL), make them global first.
  Dl_info info;
  if (dladdr(reinterpret_cast<void*>(&MPI_Init_thread), &info) != 0 && info.dli_fname)
    dlopen(info.dli_fname, RTLD_NOW | RTLD_GLOBAL | RTLD_NOLOAD);
  int provided = 0;
  if (int rc = MPI_Init_thread(argc, argv, MPI_THREAD_FUNNELED, &provided); rc != MPI_SUCCESS)
    return MpiError("MPI_Init_thread", rc);
  // Errors come back as codes, not as an abort inside the library.
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  std::unique_ptr<MpiLink> link(new MpiLink());
  MPI_Comm_rank(MPI_COMM_WORLD, &link->rank_);
  MPI_Comm_size(MPI_COMM_WORLD, &link->size_);
  if (provided < MPI_THREAD_FUNNELED)
    return Status::Unimplemented("MPI: the library does not support MPI_THREAD_FUNNELED");
  return link;
}

MpiLink::~MpiLink() { MPI_Finalize(); }

Status MpiLink::Send(int to, const std::string& bytes) {
  const uint64_t n = bytes.size();
  TRIB_RETURN_IF_ERROR(SendPiece(&n, 1, MPI_UINT64_T, to));
  for (size_t at = 0; at < bytes.size(); at += kPiece) {
    const int count = static_cast<int>(std::min(kPiece, bytes.size() - at));
    TRIB_RETURN_IF_ERROR(SendPiece(bytes.data() + at, count, MPI_BYTE, to));
  }
  return Status::Ok();
}

Result<std::string> MpiLink::Receive(int from) {
  uint64_t n = 0;
  TRIB_RETURN_IF_ERROR(ReceivePiece(&n, 1, MPI_UINT64_T, from));
  std::string bytes(n, '\0');
  for (size_t at = 0; at < bytes.size(); at += kPiece) {
    const int count = static_cast<int>(std::min(kPiece, bytes.size() - at));
    TRIB_RETURN_IF_ERROR(ReceivePiece(bytes.data() + at, count, MPI_BYTE, from));
  }
  return bytes;
}

void MpiLink::Abort(int code) {
  MPI_Abort(MPI_COMM_WORLD, code);
  std::exit(code);
}

#else

bool MpiBuilt() { return false; }

Result<std::unique_ptr<MpiLink>> MpiLink::Init(int*, char***) {
  return Status::Unimplemented(
      "this tributary-sim was built without MPI (TRIBUTARY_MPI=OFF, or no MPI library when it "
      "was configured: install libopenmpi-dev and openmpi-bin, scripts/setup-deps does, and "
      "rebuild)");
}

MpiLink::~MpiLink() = default;
Status MpiLink::Send(int, const std::string&) { return Status::Unimplemented("no MPI"); }
Result<std::string> MpiLink::Receive(int) { return Status::Unimplemented("no MPI"); }
void MpiLink::Abort(int code) { std::exit(code); }

#endif

}  // namespace tributary

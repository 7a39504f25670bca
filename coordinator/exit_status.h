// Fail(s, code, exit_status): the factories of the composition root (coordinator_assembly.h,
// run_observers.h) report, beside the error, the exit code a program should end with: 2 when the
// configuration is at fault, 1 when the environment is (a file that cannot be written). Records
// `code` in *exit_status when exit_status is given, and returns s.
#pragma once

#include "tributary/status.h"

namespace tributary {

inline Status Fail(Status s, int code, int* exit_status) {
  if (exit_status) *exit_status = code;
  return s;
}

}  // namespace tributary

// What the C entry points share (internal, not installed): writing a Status into the caller's
// error buffer without letting an exception cross the C boundary, and the tributary_client handle
// made around any Trainer. tributary_client_create (c_api.cc) makes it around the app's callbacks;
// tributary_client_create_native (native/native_c_api.cc) around Tributary's own engine.
#pragma once

#include <cstddef>
#include <exception>
#include <memory>
#include <string>

#include "tributary/c_api.h"
#include "tributary/status.h"
#include "tributary/trainer.h"

namespace tributary::capi {

// Copies `text` into buffer[0..size) with a NUL (truncating); nothing when buffer is NULL or size
// 0.
void CopyOut(const std::string& text, char* buffer, size_t size);

// Runs `body` (returning the call's Status) for an entry point that reports into the caller's
// buffer: the message ("" on success) goes to `error`, the code is returned, and no exception
// crosses the C boundary.
template <class F>
int Reported(char* error, size_t error_size, F&& body) {
  Status s;
  try {
    s = body();
  } catch (const std::exception& e) {
    s = Status::Internal(std::string("unexpected exception: ") + e.what());
  } catch (...) {
    s = Status::Internal("unexpected exception");
  }
  CopyOut(s.ok() ? std::string() : s.ToString(), error, error_size);
  return static_cast<int>(s.code());
}

// The client handle for `options` (its connection, TLS, backoff and logging fields; the model
// layout comes from trainer->get_parameters()) around `trainer`. predict_output_size > 0 enables
// tributary_client_predict with that many outputs per sample. NULL on failure, with the reason in
// `error`. Never throws.
tributary_client* CreateClientHandle(const tributary_client_options& options,
                                     std::shared_ptr<Trainer> trainer, size_t predict_output_size,
                                     char* error, size_t error_size);

}  // namespace tributary::capi

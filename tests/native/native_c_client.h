// The C half of native_api_test: a client made through the native C API, compiled as strict C11
// (native_c_client.c) so that tributary/native_c_api.h is checked as C.
#pragma once

#include <stddef.h>
#include <stdint.h>

#include "tributary/native_c_api.h"

#ifdef __cplusplus
extern "C" {
#endif

// A native trainer on `model_toml` (8x8 single-channel samples of 10 classes: count of them) and
// a client around it for the coordinator at `address`; NULL with the reason in `error`. With
// `streaming`, the trainer reads the samples through read_train (one at a time in the process)
// instead of copying them.
tributary_client* trib_native_c_create(const char* address, const char* ca, const char* cert,
                                       const char* key, const char* model_toml,
                                       const float* features, const uint8_t* labels, size_t count,
                                       int streaming, size_t* num_parameters, char* error,
                                       size_t error_size);
// How many batches the streaming trainer has read.
size_t trib_native_c_reads(void);

#ifdef __cplusplus
}
#endif

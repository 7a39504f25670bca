// Benchmarks' blocking connect: Transport::Connect, waited for on the calling thread (which must
// not be one of the transport's I/O threads). Aborts when the connect fails.
#pragma once

#include <condition_variable>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include "core/check.h"
#include "protocol/transport.h"

namespace tributary {

inline std::shared_ptr<Connection> ConnectAndWait(Transport& transport,
                                                  const std::string& address) {
  std::mutex mu;
  std::condition_variable cv;
  std::optional<Result<std::shared_ptr<Connection>>> got;
  transport.Connect(address, [&](Result<std::shared_ptr<Connection>> c) {
    std::lock_guard<std::mutex> lock(mu);
    got.emplace(std::move(c));
    cv.notify_all();
  });
  std::unique_lock<std::mutex> lock(mu);
  cv.wait(lock, [&] { return got.has_value(); });
  TRIB_CHECK(got->ok(), "benchmark connect");
  return **got;
}

}  // namespace tributary

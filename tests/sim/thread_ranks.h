// ThreadRanks: the ranks of a distributed simulation as threads of one process (sim/rank_link.h),
// for tests that check the distribution without MPI (and under the sanitizers): one mailbox per
// (from, to) pair, Send appends, Receive waits.
#pragma once

#include <condition_variable>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <utility>

#include "sim/rank_link.h"

namespace tributary::testing {

class ThreadRanks {
 public:
  explicit ThreadRanks(int size) : size_(size) {
    for (int r = 0; r < size; ++r) links_.push_back(std::make_unique<Link>(this, r));
  }
  RankLink* link(int rank) { return links_[static_cast<size_t>(rank)].get(); }
  // Messages sent so far, and their bytes.
  uint64_t messages() {
    std::lock_guard<std::mutex> l(mu_);
    return messages_;
  }
  uint64_t bytes() {
    std::lock_guard<std::mutex> l(mu_);
    return bytes_;
  }

 private:
  class Link : public RankLink {
   public:
    Link(ThreadRanks* world, int rank) : world_(world), rank_(rank) {}
    int rank() const override { return rank_; }
    int size() const override { return world_->size_; }
    Status Send(int to, const std::string& bytes) override {
      std::lock_guard<std::mutex> l(world_->mu_);
      world_->boxes_[{rank_, to}].push_back(bytes);
      ++world_->messages_;
      world_->bytes_ += bytes.size();
      world_->cv_.notify_all();
      return Status::Ok();
    }
    Result<std::string> Receive(int from) override {
      std::unique_lock<std::mutex> l(world_->mu_);
      auto& box = world_->boxes_[{from, rank_}];
      world_->cv_.wait(l, [&] { return !box.empty(); });
      std::string m = std::move(box.front());
      box.pop_front();
      return m;
    }

   private:
    ThreadRanks* world_;
    int rank_;
  };

  int size_;
  std::vector<std::unique_ptr<Link>> links_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::map<std::pair<int, int>, std::deque<std::string>> boxes_;  // GUARDED_BY(mu_)
  uint64_t messages_ = 0, bytes_ = 0;                             // GUARDED_BY(mu_)
};

}  // namespace tributary::testing

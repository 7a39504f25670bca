// ComputePartitionStats and FormatPartitionStats (declared in partition.h).
#include <algorithm>
#include <cmath>
#include <limits>

#include <fmt/format.h>

#include "core/check.h"
#include "train/data/partition.h"

namespace tributary {

PartitionStats ComputePartitionStats(const Partition& partition, std::span<const uint8_t> labels,
                                     int num_classes) {
  TRIB_CHECK(num_classes >= 1, "num_classes must be >= 1");
  PartitionStats st;
  st.num_clients = static_cast<int>(partition.size());
  st.num_classes = num_classes;
  st.sizes.resize(partition.size());
  st.class_counts.assign(partition.size(), std::vector<int64_t>(num_classes, 0));
  st.label_tv.assign(partition.size(), 0.0);
  std::vector<int64_t> global(num_classes, 0);
  for (size_t k = 0; k < partition.size(); ++k) {
    st.sizes[k] = static_cast<int64_t>(partition[k].size());
    st.total += st.sizes[k];
    for (uint32_t i : partition[k]) {
      TRIB_CHECK(i < labels.size(), "partition index out of range");
      TRIB_CHECK(labels[i] < num_classes, "label out of range");
      ++st.class_counts[k][labels[i]];
      ++global[labels[i]];
    }
  }
  if (partition.empty()) return st;

  st.min_size = *std::min_element(st.sizes.begin(), st.sizes.end());
  st.max_size = *std::max_element(st.sizes.begin(), st.sizes.end());
  st.mean_size = static_cast<double>(st.total) / static_cast<double>(partition.size());
  st.min_classes = std::numeric_limits<int>::max();
  int non_empty = 0;
  double tv_sum = 0;
  int64_t classes_sum = 0;
  for (size_t k = 0; k < partition.size(); ++k) {
    if (st.sizes[k] == 0) {
      ++st.empty_clients;
      continue;
    }
    // TV(p, q) = 1/2 sum_c |p_c - q_c|, with p this client's and q the global label mix.
    double tv = 0;
    int classes = 0;
    for (int c = 0; c < num_classes; ++c) {
      const double p =
          static_cast<double>(st.class_counts[k][c]) / static_cast<double>(st.sizes[k]);
      const double q = static_cast<double>(global[c]) / static_cast<double>(st.total);
      tv += std::abs(p - q);
      classes += st.class_counts[k][c] > 0 ? 1 : 0;
    }
    st.label_tv[k] = 0.5 * tv;
    tv_sum += st.label_tv[k];
    st.max_label_tv = std::max(st.max_label_tv, st.label_tv[k]);
    classes_sum += classes;
    st.min_classes = std::min(st.min_classes, classes);
    st.max_classes = std::max(st.max_classes, classes);
    ++non_empty;
  }
  if (non_empty == 0) {
    st.min_classes = 0;
    return st;
  }
  st.mean_label_tv = tv_sum / non_empty;
  st.mean_classes = static_cast<double>(classes_sum) / non_empty;
  return st;
}

std::string FormatPartitionStats(const PartitionStats& st, int max_clients_listed) {
  std::string out =
      fmt::format("{} clients, {} samples, {} classes\n", st.num_clients, st.total, st.num_classes);
  out += fmt::format("client size: min {} / mean {:.1f} / max {}", st.min_size, st.mean_size,
                     st.max_size);
  out += st.empty_clients > 0 ? fmt::format(" ({} empty)\n", st.empty_clients) : "\n";
  out += fmt::format(
      "label skew: mean TV to global {:.3f} (max {:.3f}); classes per client: min {} / mean "
      "{:.1f} / max {}\n",
      st.mean_label_tv, st.max_label_tv, st.min_classes, st.mean_classes, st.max_classes);
  const int listed = std::min(max_clients_listed, st.num_clients);
  for (int k = 0; k < listed; ++k)
    out += fmt::format("client {}: {} samples, TV {:.3f}, per class [{}]\n", k, st.sizes[k],
                       st.label_tv[k], fmt::join(st.class_counts[k], " "));
  if (listed > 0 && listed < st.num_clients)
    out += fmt::format("... {} more clients\n", st.num_clients - listed);
  return out;
}

}  // namespace tributary

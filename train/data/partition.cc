#include "train/data/partition.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <limits>
#include <numeric>

#include <fmt/format.h>

#include "core/parse_number.h"
#include "core/progress.h"
#include "core/rng.h"
#include "train/data/feature_noise.h"

namespace tributary {
namespace {

// Rng streams per partitioner, so that the same seed gives unrelated draws across kinds.
constexpr uint64_t kStreamIid = 1;
constexpr uint64_t kStreamDirichlet = 2;
constexpr uint64_t kStreamShards = 3;
constexpr uint64_t kStreamLabels = 4;
constexpr uint64_t kStreamQuantity = 5;

Status CheckClients(size_t num_samples, int num_clients) {
  if (num_clients < 1)
    return Status::InvalidArgument(fmt::format("num_clients must be >= 1, got {}", num_clients));
  if (num_samples > std::numeric_limits<uint32_t>::max())
    return Status::InvalidArgument(
        fmt::format("{} samples do not fit 32-bit indices", num_samples));
  if (static_cast<size_t>(num_clients) > num_samples)
    return Status::InvalidArgument(fmt::format(
        "more clients ({}) than samples ({}): every client needs data", num_clients, num_samples));
  return Status::Ok();
}

Status CheckLabels(std::span<const uint8_t> labels, int num_classes) {
  if (num_classes < 1 || num_classes > 256)
    return Status::InvalidArgument(
        fmt::format("num_classes must be in 1..256, got {}", num_classes));
  for (size_t i = 0; i < labels.size(); ++i)
    if (labels[i] >= num_classes)
      return Status::InvalidArgument(
          fmt::format("label {} of sample {} is not < num_classes {}", labels[i], i, num_classes));
  return Status::Ok();
}

std::vector<std::vector<uint32_t>> IndicesByClass(std::span<const uint8_t> labels,
                                                  int num_classes) {
  std::vector<std::vector<uint32_t>> by_class(num_classes);
  for (size_t i = 0; i < labels.size(); ++i)
    by_class[labels[i]].push_back(static_cast<uint32_t>(i));
  return by_class;
}

void SortClients(Partition& p) {
  for (auto& client : p) std::sort(client.begin(), client.end());
}

int64_t MinSize(const Partition& p) {
  int64_t m = std::numeric_limits<int64_t>::max();
  for (const auto& client : p) m = std::min<int64_t>(m, static_cast<int64_t>(client.size()));
  return m;
}

// Client proportions ~ Dirichlet(alpha), unnormalised: fills props with Gamma(alpha) draws and
// returns their sum. If every draw underflowed (possible for tiny alpha), one random client gets
// everything.
double DrawProportions(std::vector<double>& props, double alpha, Rng& rng) {
  double sum = 0;
  for (double& x : props) sum += (x = rng.Gamma(alpha));
  if (!(sum > 0) || !std::isfinite(sum)) {
    std::fill(props.begin(), props.end(), 0.0);
    props[rng.UniformInt(props.size())] = 1.0;
    sum = 1.0;
  }
  return sum;
}

// Where n items are cut by the cumulative proportions: client k gets [ends[k-1], ends[k]), the
// last one up to n.
std::vector<size_t> CutEnds(const std::vector<double>& props, double sum, size_t n) {
  std::vector<size_t> ends(props.size());
  double cum = 0;
  size_t start = 0;
  for (size_t k = 0; k < props.size(); ++k) {
    cum += props[k];
    size_t end = k + 1 == props.size()
                     ? n
                     : static_cast<size_t>(std::llround(cum / sum * static_cast<double>(n)));
    ends[k] = start = std::clamp(end, start, n);
  }
  return ends;
}

// One Dirichlet draw: each class's (shuffled) samples cut by cumulative client proportions.
Partition DrawDirichlet(const std::vector<std::vector<uint32_t>>& by_class, int num_clients,
                        double alpha, Rng& rng) {
  Partition p(num_clients);
  std::vector<double> props(num_clients);
  for (const auto& class_indices : by_class) {
    std::vector<uint32_t> idx = class_indices;
    rng.Shuffle(std::span<uint32_t>(idx));
    const double sum = DrawProportions(props, alpha, rng);
    const std::vector<size_t> ends = CutEnds(props, sum, idx.size());
    size_t start = 0;
    for (int k = 0; k < num_clients; ++k) {
      p[k].insert(p[k].end(), idx.begin() + start, idx.begin() + ends[k]);
      start = ends[k];
    }
  }
  return p;
}

Status CheckDirichletOptions(const char* kind, const DirichletOptions& options, size_t num_samples,
                             int num_clients) {
  if (!(options.alpha > 0) || !std::isfinite(options.alpha))
    return Status::InvalidArgument(
        fmt::format("{} must be a finite number > 0, got {}", kind, options.alpha));
  if (options.min_size < 0 || options.min_size > static_cast<int64_t>(num_samples) / num_clients)
    return Status::InvalidArgument(
        fmt::format("min_size {} is impossible: {} clients x {} > {} samples (or negative)",
                    options.min_size, num_clients, options.min_size, num_samples));
  return Status::Ok();
}

// Moves random samples from the largest client to each client below min_size. Terminates
// because the caller checked num_clients * min_size <= total, so while some client is short the
// largest one has more than min_size.
void FillShortClients(Partition& p, int64_t min_size, Rng& rng) {
  for (auto& client : p) {
    while (static_cast<int64_t>(client.size()) < min_size) {
      auto donor = std::max_element(
          p.begin(), p.end(), [](const auto& a, const auto& b) { return a.size() < b.size(); });
      const size_t pick = rng.UniformInt(donor->size());
      client.push_back((*donor)[pick]);
      (*donor)[pick] = donor->back();
      donor->pop_back();
    }
  }
}

// Parses all of `text` as a T (an integer or a finite double); false on anything else.
template <typename T>
bool ParseNumber(std::string_view text, T& out) {
  const std::optional<T> v = ParseWhole<T>(text);
  if (v) out = *v;
  return v.has_value();
}

}  // namespace

Result<Partition> PartitionIid(size_t num_samples, int num_clients, uint64_t seed) {
  TRIB_RETURN_IF_ERROR(CheckClients(num_samples, num_clients));
  std::vector<uint32_t> perm(num_samples);
  std::iota(perm.begin(), perm.end(), 0u);
  Rng rng = Rng::Stream(seed, {kStreamIid});
  rng.Shuffle(std::span<uint32_t>(perm));
  Partition p(num_clients);
  const size_t base = num_samples / num_clients;
  const size_t extra = num_samples % num_clients;
  size_t start = 0;
  for (int k = 0; k < num_clients; ++k) {
    const size_t len = base + (static_cast<size_t>(k) < extra ? 1 : 0);
    p[k].assign(perm.begin() + start, perm.begin() + start + len);
    start += len;
  }
  SortClients(p);
  return p;
}

Result<Partition> PartitionDirichlet(std::span<const uint8_t> labels, int num_classes,
                                     int num_clients, const DirichletOptions& options,
                                     uint64_t seed) {
  TRIB_RETURN_IF_ERROR(CheckClients(labels.size(), num_clients));
  TRIB_RETURN_IF_ERROR(
      CheckDirichletOptions("dirichlet alpha", options, labels.size(), num_clients));
  TRIB_RETURN_IF_ERROR(CheckLabels(labels, num_classes));
  const auto by_class = IndicesByClass(labels, num_classes);

  Rng rng = Rng::Stream(seed, {kStreamDirichlet});
  Partition best;
  int64_t best_min = -1;
  // Many clients make each draw slow and (with min_size) every redraw likely: report the draws.
  const int draws = std::max(1, options.max_redraws);
  Progress::Options every_draw = Progress::Defaults();
  every_draw.check_every = 1;
  Progress progress(fmt::format("partitioning {} examples among {} clients (dirichlet, alpha {})",
                                labels.size(), num_clients, options.alpha),
                    static_cast<uint64_t>(draws), "draws", every_draw);
  for (int attempt = 0; attempt < draws; ++attempt) {
    Partition p = DrawDirichlet(by_class, num_clients, options.alpha, rng);
    progress.Advance();
    const int64_t m = MinSize(p);
    if (m > best_min) {
      best_min = m;
      best = std::move(p);
    }
    if (best_min >= options.min_size) break;
  }
  if (best_min < options.min_size) FillShortClients(best, options.min_size, rng);
  SortClients(best);
  progress.Done();
  return best;
}

Result<Partition> PartitionShards(std::span<const uint8_t> labels, int num_clients,
                                  int shards_per_client, uint64_t seed) {
  TRIB_RETURN_IF_ERROR(CheckClients(labels.size(), num_clients));
  if (shards_per_client < 1)
    return Status::InvalidArgument(
        fmt::format("shards per client must be >= 1, got {}", shards_per_client));
  const uint64_t num_shards = static_cast<uint64_t>(num_clients) * shards_per_client;
  if (labels.size() % num_shards != 0)
    return Status::InvalidArgument(fmt::format(
        "{} samples do not divide into {} clients x {} shards = {} equal shards (remainder {})",
        labels.size(), num_clients, shards_per_client, num_shards, labels.size() % num_shards));
  const size_t shard_size = labels.size() / num_shards;

  // Shuffle first so each shard is a random sample of its class, then sort by label.
  Rng rng = Rng::Stream(seed, {kStreamShards});
  std::vector<uint32_t> order(labels.size());
  std::iota(order.begin(), order.end(), 0u);
  rng.Shuffle(std::span<uint32_t>(order));
  std::stable_sort(order.begin(), order.end(),
                   [&](uint32_t a, uint32_t b) { return labels[a] < labels[b]; });
  std::vector<uint32_t> shard_ids(num_shards);
  std::iota(shard_ids.begin(), shard_ids.end(), 0u);
  rng.Shuffle(std::span<uint32_t>(shard_ids));

  Partition p(num_clients);
  for (uint64_t s = 0; s < num_shards; ++s) {
    auto first = order.begin() + static_cast<ptrdiff_t>(shard_ids[s] * shard_size);
    auto& client = p[s / shards_per_client];
    client.insert(client.end(), first, first + static_cast<ptrdiff_t>(shard_size));
  }
  SortClients(p);
  return p;
}

Result<Partition> PartitionLabels(std::span<const uint8_t> labels, int num_classes, int num_clients,
                                  int labels_per_client, uint64_t seed) {
  TRIB_RETURN_IF_ERROR(CheckClients(labels.size(), num_clients));
  TRIB_RETURN_IF_ERROR(CheckLabels(labels, num_classes));
  if (labels_per_client < 1 || labels_per_client > num_classes)
    return Status::InvalidArgument(
        fmt::format("labels per client must be in 1..{} (the number of classes), got {}",
                    num_classes, labels_per_client));
  Rng rng = Rng::Stream(seed, {kStreamLabels});
  // Which clients hold each label, in client order: label i mod C first, then distinct others.
  std::vector<std::vector<int>> holders(num_classes);
  std::vector<char> held(num_classes);
  for (int i = 0; i < num_clients; ++i) {
    std::fill(held.begin(), held.end(), 0);
    const int first = i % num_classes;
    held[first] = 1;
    holders[first].push_back(i);
    for (int j = 1; j < labels_per_client;) {
      const auto c = static_cast<int>(rng.UniformInt(static_cast<uint64_t>(num_classes)));
      if (held[c]) continue;
      held[c] = 1;
      holders[c].push_back(i);
      ++j;
    }
  }
  // Each label's samples, shuffled, in near-equal parts among its holders (the first n mod h
  // holders get one more).
  Partition p(num_clients);
  const auto by_class = IndicesByClass(labels, num_classes);
  for (int c = 0; c < num_classes; ++c) {
    std::vector<uint32_t> idx = by_class[c];
    const std::vector<int>& h = holders[c];
    if (idx.empty()) continue;
    if (h.empty())
      return Status::InvalidArgument(fmt::format(
          "label {} ({} samples) is held by no client: {} clients x {} labels do not cover "
          "the {} classes with this seed; use more clients, more labels per client or another "
          "seed",
          c, idx.size(), num_clients, labels_per_client, num_classes));
    rng.Shuffle(std::span<uint32_t>(idx));
    const size_t base = idx.size() / h.size(), extra = idx.size() % h.size();
    size_t start = 0;
    for (size_t j = 0; j < h.size(); ++j) {
      const size_t len = base + (j < extra ? 1 : 0);
      p[h[j]].insert(p[h[j]].end(), idx.begin() + start, idx.begin() + start + len);
      start += len;
    }
  }
  for (int i = 0; i < num_clients; ++i)
    if (p[i].empty())
      return Status::InvalidArgument(fmt::format(
          "client {} got no sample: its {} labels have fewer samples than clients holding them", i,
          labels_per_client));
  SortClients(p);
  return p;
}

Result<Partition> PartitionQuantity(size_t num_samples, int num_clients,
                                    const DirichletOptions& options, uint64_t seed) {
  TRIB_RETURN_IF_ERROR(CheckClients(num_samples, num_clients));
  TRIB_RETURN_IF_ERROR(CheckDirichletOptions("quantity beta", options, num_samples, num_clients));
  Rng rng = Rng::Stream(seed, {kStreamQuantity});
  std::vector<uint32_t> perm(num_samples);
  std::iota(perm.begin(), perm.end(), 0u);
  rng.Shuffle(std::span<uint32_t>(perm));
  // Sizes from Dirichlet(beta) proportions, redrawn until every client has min_size.
  std::vector<int64_t> best;
  int64_t best_min = -1;
  std::vector<double> props(num_clients);
  for (int attempt = 0; attempt < std::max(1, options.max_redraws); ++attempt) {
    const double sum = DrawProportions(props, options.alpha, rng);
    const std::vector<size_t> ends = CutEnds(props, sum, num_samples);
    std::vector<int64_t> sizes(num_clients);
    for (int k = 0; k < num_clients; ++k)
      sizes[k] = static_cast<int64_t>(ends[k] - (k == 0 ? 0 : ends[k - 1]));
    const int64_t m = *std::min_element(sizes.begin(), sizes.end());
    if (m > best_min) {
      best_min = m;
      best = std::move(sizes);
    }
    if (best_min >= options.min_size) break;
  }
  // No draw had min_size everywhere: short clients take from the largest (checked possible).
  for (int64_t& size : best) {
    while (size < options.min_size) {
      --*std::max_element(best.begin(), best.end());
      ++size;
    }
  }
  Partition p(num_clients);
  size_t start = 0;
  for (int k = 0; k < num_clients; ++k) {
    const auto len = static_cast<size_t>(best[k]);
    p[k].assign(perm.begin() + start, perm.begin() + start + len);
    start += len;
  }
  SortClients(p);
  return p;
}

Result<Partition> MakePartition(std::string_view full_spec, std::span<const uint8_t> labels,
                                int num_classes, int num_clients, uint64_t seed) {
  const auto bad = [&](std::string_view why) {
    return Status::InvalidArgument(fmt::format("partition spec '{}': {}", full_spec, why));
  };
  // A "+noise:SIGMA" part changes the clients' images, not which examples they hold.
  TRIB_ASSIGN_OR_RETURN(const FeatureNoiseSpec noise, SplitFeatureNoise(full_spec));
  const std::string_view spec = noise.base;
  const size_t colon = spec.find(':');
  const std::string_view kind = spec.substr(0, colon);
  const std::string_view arg =
      colon == std::string_view::npos ? std::string_view() : spec.substr(colon + 1);

  // Parse the whole spec before looking at the data.
  DirichletOptions dirichlet;
  int count = 0;  // shards:K's or labels:K's K
  if (kind == "iid") {
    if (colon != std::string_view::npos) return bad("iid takes no parameter");
  } else if (kind == "dirichlet" || kind == "quantity") {
    const char* name = kind == "dirichlet" ? "ALPHA" : "BETA";
    const size_t comma = arg.find(',');
    if (!ParseNumber(arg.substr(0, comma), dirichlet.alpha))
      return bad(
          fmt::format("expected {0}:{1} with a finite number {1}, e.g. {0}:0.5", kind, name));
    if (!(dirichlet.alpha > 0) || !std::isfinite(dirichlet.alpha))
      return bad(fmt::format("{} must be a finite number > 0, got {}",
                             kind == "dirichlet" ? "alpha" : "beta", dirichlet.alpha));
    if (comma != std::string_view::npos) {
      const std::string_view option = arg.substr(comma + 1);
      constexpr std::string_view kMinSize = "min_size=";
      if (!option.starts_with(kMinSize) ||
          !ParseNumber(option.substr(kMinSize.size()), dirichlet.min_size) ||
          dirichlet.min_size < 0)
        return bad(fmt::format("the only {} option is min_size=N with an integer N >= 0", kind));
    }
  } else if (kind == "shards") {
    if (!ParseNumber(arg, count) || count < 1)
      return bad("expected shards:K with an integer K >= 1 shards per client, e.g. shards:2");
  } else if (kind == "labels") {
    if (!ParseNumber(arg, count) || count < 1)
      return bad("expected labels:K with an integer K >= 1 labels per client, e.g. labels:2");
  } else {
    return bad(fmt::format(
        "unknown kind '{}'; expected iid, dirichlet:ALPHA, shards:K, labels:K or quantity:BETA",
        kind));
  }

  if (Status s = CheckLabels(labels, num_classes); !s.ok()) return bad(s.message());
  Result<Partition> result =
      kind == "iid"         ? PartitionIid(labels.size(), num_clients, seed)
      : kind == "dirichlet" ? PartitionDirichlet(labels, num_classes, num_clients, dirichlet, seed)
      : kind == "quantity"  ? PartitionQuantity(labels.size(), num_clients, dirichlet, seed)
      : kind == "labels"    ? PartitionLabels(labels, num_classes, num_clients, count, seed)
                            : PartitionShards(labels, num_clients, count, seed);
  if (!result.ok()) return bad(result.status().message());
  return result;
}

Status ValidatePartition(const Partition& partition, size_t num_samples, bool require_complete) {
  std::vector<int> owner(num_samples, -1);
  for (size_t k = 0; k < partition.size(); ++k) {
    for (uint32_t i : partition[k]) {
      if (i >= num_samples)
        return Status::InvalidArgument(
            fmt::format("client {} holds index {}, not < {} samples", k, i, num_samples));
      if (owner[i] >= 0)
        return Status::InvalidArgument(
            fmt::format("sample {} is assigned twice (client {} and client {})", i, owner[i], k));
      owner[i] = static_cast<int>(k);
    }
  }
  if (require_complete) {
    const auto it = std::find(owner.begin(), owner.end(), -1);
    if (it != owner.end())
      return Status::InvalidArgument(
          fmt::format("sample {} is assigned to no client", it - owner.begin()));
  }
  return Status::Ok();
}

}  // namespace tributary

#include "coordinator/console_observer.h"

#include <fmt/format.h>

#include <cstdio>

#include "core/human_units.h"
#include "core/log.h"

namespace tributary {
namespace {

template <class... Ts>
struct Overloaded : Ts... {
  using Ts::operator()...;
};
template <class... Ts>
Overloaded(Ts...) -> Overloaded<Ts...>;

}  // namespace

std::string RoundLine(const RoundClosed& e, int64_t total_rounds) {
  const RoundSummary& s = e.summary;
  const std::string acc = e.evaluation
                              ? fmt::format("test-acc {:5.2f}%  test-loss {:.4f}  ",
                                            100 * e.evaluation->accuracy, e.evaluation->loss)
                              : std::string();
  const std::string dp =
      s.dp ? fmt::format("  eps {:.3f}  clip {:.3g}", s.dp->epsilon, s.dp->clip_norm)
           : std::string();
  // An asynchronous step: "step", and how stale its updates were.
  const std::string stale =
      s.staleness ? fmt::format("  staleness {:.2f} (max {}), {} in flight", s.staleness->mean,
                                s.staleness->max, s.staleness->in_flight)
                  : std::string();
  return fmt::format("{} {:3}/{}  {}updates {}/{} (refused {}, dropped {})  up {}  down {}  {}{}{}",
                     s.staleness ? "step" : "round", s.round, total_rounds, acc, s.accepted,
                     s.selected, s.refused, s.dropped, FormatBytes(static_cast<double>(s.bytes_up)),
                     FormatBytes(static_cast<double>(s.bytes_down)), FormatDuration(s.duration_s),
                     dp, stale);
}

void ConsoleObserver::OnEvent(const RunEvent& event) {
  std::visit(
      Overloaded{
          [&](const RunStarted& e) {
            total_rounds_ = e.rounds;
            if (!e.resumed_from.empty())
              std::printf(
                  "resuming from %s: %llu rounds done, model version %llu, model hash "
                  "%016llx\n",
                  e.resumed_from.c_str(), static_cast<unsigned long long>(e.rounds_done),
                  static_cast<unsigned long long>(e.model_version),
                  static_cast<unsigned long long>(e.model_hash));
          },
          [&](const RoundClosed& e) { std::printf("%s\n", RoundLine(e, total_rounds_).c_str()); },
          [](const RoundFailed& e) {
            Log().warn("round {} attempt {} failed: {}", e.round, e.attempt, e.reason);
          },
          [](const UpdateRefused& e) {
            Log().warn("update from {} for round {} refused: {}", e.client, e.round, e.reason);
          },
          [](const CheckpointWritten& e) {
            if (!e.error.empty())
              Log().error("round {}: checkpoint not written: {}", e.round, e.error);
          },
          [](const FederatedEvaluated& e) {
            Log().info("federated evaluation of round {}: accuracy {:.2f}% over {} clients",
                       e.summary.round, 100 * e.summary.accuracy, e.summary.clients);
          },
          [](const RunFinished& e) {
            if (!e.stopped.empty()) std::printf("stopped: %s\n", e.stopped.c_str());
            if (!e.final_model.empty())
              std::printf("final model: %s (hash %016llx)\n", e.final_model.c_str(),
                          static_cast<unsigned long long>(e.model_hash));
          },
          [](const auto&) {},
      },
      event);
  std::fflush(stdout);
}

}  // namespace tributary

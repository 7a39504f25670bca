// The simulator's report directory.
//
//   rounds.csv   one row per round: round, attempts, selected, accepted, refused, dropped,
//                unavailable, dropouts, stragglers, bytes_up, bytes_down, cum_bytes_up,
//                cum_bytes_down, sim_seconds, sim_clock, wall_seconds, wall_clock, train_loss,
//                test_accuracy, test_loss (empty when the round was not evaluated), malicious
//                (sim/sim_result.h says what each counts, and which are in-process only)
//   report.json  {"config": {...}, "rounds": [...], "totals": {...}}
//   report.html  self-contained (its data, style and scripts inline; nothing from the network):
//                charts of test accuracy against round, against cumulative upload bytes and (with
//                differential privacy) against epsilon, and of round durations, drawn in the
//                browser by the chart code the coordinator's dashboard uses (web/charts.js); the
//                totals and the configuration as tables.
//
// Files are written atomically (temp + rename), so a reader never sees half a report.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "sim/sim_config.h"
#include "sim/sim_result.h"

namespace tributary {

// The configuration as JSON: every key tributary-sim uses (BindSimConfig), with its value.
nlohmann::json SimConfigJson(const SimConfig& config);

// `extra` is merged into report.json's "totals" (e.g. the mode, memory figures).
Status WriteReport(const std::string& dir, const SimConfig& config, const SimResult& result,
                   const nlohmann::json& extra = nlohmann::json::object());

// The report pages, exposed for tests.
std::string RoundsCsv(const SimResult& result);
std::string ReportHtml(const SimConfig& config, const SimResult& result,
                       const nlohmann::json& totals);

}  // namespace tributary

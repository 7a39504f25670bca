// The simulator's report directory.
//
//   rounds.csv   one row per round: round, attempts, selected, accepted, refused, dropped,
//                unavailable, dropouts, stragglers, bytes_up, bytes_down, cum_bytes_up,
//                cum_bytes_down, sim_seconds, sim_clock, wall_seconds, wall_clock, train_loss,
//                test_accuracy, test_loss (empty when the round was not evaluated), malicious
//                (sim/sim_result.h says what each counts, and which are in-process only)
//   report.json  {"config": {...}, "rounds": [...], "totals": {...}, "partition": {...}}; the
//                partition (spec, every client's size, class counts and label skew, and feature
//                noise level with "+noise:") when SimResult::partition has it
//   report.html  self-contained (its data, style and scripts inline; nothing from the network):
//                a summary first (final and best test accuracy with their rounds, the round that
//                reached sim.target_accuracy when one is set, the final test loss, rounds, bytes
//                up and down, wall and simulated time, epsilon with DP), in units a person reads
//                (core/human_units.h); charts of test accuracy against round, of training and
//                test loss against round, of test accuracy against cumulative upload bytes and
//                (with differential privacy) against epsilon, and of round durations, drawn in
//                the browser by the chart code the coordinator's dashboard uses (web/charts.js);
//                the totals (each in its unit, the raw number in the tooltip); the keys that
//                differ from their defaults, with the default, and every key in a <details>;
//                the partition's summary and its first 100 clients (table#partition).
//                report.json keeps the raw numbers for programs.
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

// A report.json total as report.html shows it, by its key: accuracies as percentages, bytes in
// KiB/MiB/..., seconds in ms/s/min/h (core/human_units.h), integers as they are, other numbers
// (losses, epsilon, delta) to 4 significant digits; a null epsilon is infinity.
std::string HumanTotal(const std::string& key, const nlohmann::json& value);

// The report pages, exposed for tests.
std::string RoundsCsv(const SimResult& result);
std::string ReportHtml(const SimConfig& config, const SimResult& result,
                       const nlohmann::json& totals);

}  // namespace tributary

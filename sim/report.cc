#include "sim/report.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <filesystem>

#include "core/file_util.h"
#include "web/web_assets.h"

namespace tributary {
namespace {

std::string Escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    switch (c) {
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '&':
        out += "&amp;";
        break;
      case '"':
        out += "&quot;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

}  // namespace

nlohmann::json SimConfigJson(const SimConfig& config) {
  // Every key through the simulator's schema: one list of keys, whatever is added to it.
  SimConfig copy = config;
  ConfigSchema schema("tributary-sim");
  BindSimConfig(schema, &copy);
  nlohmann::json out = nlohmann::json::object();
  for (const ConfigSchema::Key* k : schema.keys()) {
    if (!k->refusal().empty()) continue;
    // A key's TOML value text (a quoted string, a number, true or false) is valid JSON too.
    out[k->name()] = nlohmann::json::parse(k->value_text());
  }
  return out;
}

std::string RoundsCsv(const SimResult& result) {
  std::string out =
      "round,attempts,selected,accepted,refused,dropped,unavailable,dropouts,stragglers,bytes_up,"
      "bytes_down,cum_bytes_up,cum_bytes_down,sim_seconds,sim_clock,wall_seconds,wall_clock,"
      "train_loss,test_accuracy,test_loss,malicious,secagg_bytes_up,secagg_bytes_down,secagg_"
      "clients,"
      "secagg_client_seconds,secagg_server_seconds,epsilon,dp_clip_norm,dp_clipped\n";
  for (const SimRound& r : result.rounds) {
    out += fmt::format("{},{},{},{},{},{},{},{},{},{},{},{},{},{:.6f},{:.6f},{:.6f},{:.6f},{:.6f},",
                       r.round, r.attempts, r.selected, r.accepted, r.refused, r.dropped,
                       r.unavailable, r.dropouts, r.stragglers, r.bytes_up, r.bytes_down,
                       r.cum_bytes_up, r.cum_bytes_down, r.sim_seconds, r.sim_clock, r.wall_seconds,
                       r.wall_clock, r.train_loss);
    out += r.evaluated ? fmt::format("{:.6f},{:.6f},", r.test_accuracy, r.test_loss) : ",,";
    out += fmt::format("{},{},{},{},{:.6f},{:.6f},", r.malicious, r.secagg_bytes_up,
                       r.secagg_bytes_down, r.secagg_clients, r.secagg_client_seconds,
                       r.secagg_server_seconds);
    out +=
        r.dp ? fmt::format("{:.6f},{:.6g},{}\n", r.epsilon, r.dp_clip_norm, r.dp_clipped) : ",,\n";
  }
  return out;
}

std::string ReportHtml(const SimConfig& config, const SimResult& result,
                       const nlohmann::json& totals) {
  // The charts are drawn in the browser by the chart code the coordinator's dashboard uses
  // (web/charts.js), from these rows, embedded in the page.
  nlohmann::json rows = nlohmann::json::array();
  for (const SimRound& r : result.rounds) {
    nlohmann::json row = {
        {"round", r.round}, {"cum_bytes_up", r.cum_bytes_up}, {"wall_seconds", r.wall_seconds}};
    if (r.evaluated) row["test_accuracy"] = r.test_accuracy;
    if (r.dp && std::isfinite(r.epsilon)) row["epsilon"] = r.epsilon;
    rows.push_back(std::move(row));
  }
  const bool dp = config.run.round.dp.enabled;
  const nlohmann::json data = {{"rounds", std::move(rows)}, {"dp", dp}};
  std::string html =
      "<!DOCTYPE html>\n<html lang='en'><head><meta charset='utf-8'>"
      "<title>Tributary simulation report</title>\n<style>" +
      std::string(web::StyleCss()) + "</style></head><body>\n";
  html += fmt::format("<h1>Tributary simulation: {} on {}, {} clients, {} per round</h1>\n",
                      Escape(config.run.model), Escape(config.data.dataset),
                      config.data.num_clients, config.run.round.clients_per_round);
  html += "<div class='charts'><div id='chart-round'></div><div id='chart-upload'></div>";
  if (dp) html += "<div id='chart-epsilon'></div>";
  html += "<div id='chart-duration'></div></div>\n<h2>Totals</h2>\n<table>\n";
  for (const auto& item : totals.items())
    html += "<tr><th>" + Escape(item.key()) + "</th><td>" + Escape(item.value().dump()) +
            "</td></tr>\n";
  html += "</table>\n<h2>Configuration</h2>\n<table>\n";
  const nlohmann::json cj = SimConfigJson(config);
  for (const auto& item : cj.items())
    html += "<tr><th>" + Escape(item.key()) + "</th><td>" + Escape(item.value().dump()) +
            "</td></tr>\n";
  html += "</table>\n<script type='application/json' id='report-data'>" +
          web::ScriptSafeJson(data.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace)) +
          "</script>\n<script>" + std::string(web::ChartsJs()) + "</script>\n<script>" +
          std::string(web::ReportJs()) + "</script>\n</body></html>\n";
  return html;
}

Status WriteReport(const std::string& dir, const SimConfig& config, const SimResult& result,
                   const nlohmann::json& extra) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) return Status::IoError("cannot create report_dir '" + dir + "': " + ec.message());
  nlohmann::json rounds = nlohmann::json::array();
  for (const SimRound& r : result.rounds) {
    nlohmann::json j = {{"round", r.round},
                        {"attempts", r.attempts},
                        {"selected", r.selected},
                        {"accepted", r.accepted},
                        {"refused", r.refused},
                        {"dropped", r.dropped},
                        {"unavailable", r.unavailable},
                        {"dropouts", r.dropouts},
                        {"stragglers", r.stragglers},
                        {"bytes_up", r.bytes_up},
                        {"bytes_down", r.bytes_down},
                        {"cum_bytes_up", r.cum_bytes_up},
                        {"cum_bytes_down", r.cum_bytes_down},
                        {"sim_seconds", r.sim_seconds},
                        {"sim_clock", r.sim_clock},
                        {"wall_seconds", r.wall_seconds},
                        {"wall_clock", r.wall_clock},
                        {"train_loss", r.train_loss},
                        {"malicious", r.malicious}};
    if (r.secagg_clients > 0) {
      j["secagg_bytes_up"] = r.secagg_bytes_up;
      j["secagg_bytes_down"] = r.secagg_bytes_down;
      j["secagg_clients"] = r.secagg_clients;
      j["secagg_client_seconds"] = r.secagg_client_seconds;
      j["secagg_server_seconds"] = r.secagg_server_seconds;
    }
    if (r.dp) {
      j["epsilon"] = std::isfinite(r.epsilon) ? nlohmann::json(r.epsilon) : nlohmann::json(nullptr);
      j["dp_clip_norm"] = r.dp_clip_norm;
      j["dp_clipped"] = r.dp_clipped;
    }
    if (r.evaluated) {
      j["test_accuracy"] = r.test_accuracy;
      j["test_loss"] = r.test_loss;
    }
    rounds.push_back(std::move(j));
  }
  nlohmann::json totals = {
      {"rounds", result.rounds.size()},
      {"wall_seconds", result.wall_seconds},
      {"sim_seconds", result.sim_seconds},
      {"join_seconds", result.join_seconds},
      {"model_hash", fmt::format("{:016x}", result.model_hash)},
      {"bytes_up", result.rounds.empty() ? 0 : result.rounds.back().cum_bytes_up},
      {"bytes_down", result.rounds.empty() ? 0 : result.rounds.back().cum_bytes_down}};
  if (config.run.round.secagg.enabled) {
    const SimRound sum = result.SecAggTotals();
    totals["secagg_bytes_up"] = sum.secagg_bytes_up;
    totals["secagg_bytes_down"] = sum.secagg_bytes_down;
    totals["secagg_client_seconds_per_client_round"] =
        sum.secagg_client_seconds / static_cast<double>(std::max<int64_t>(1, sum.secagg_clients));
    totals["secagg_server_seconds_per_round"] =
        sum.secagg_server_seconds / static_cast<double>(std::max<size_t>(1, result.rounds.size()));
  }
  if (config.run.round.dp.enabled) {
    const DpConfig dp = config.EffectiveRun().round.dp;
    const double eps = result.rounds.empty() ? 0.0 : result.rounds.back().epsilon;
    totals["epsilon"] = std::isfinite(eps) ? nlohmann::json(eps) : nlohmann::json(nullptr);
    totals["delta"] = dp.EffectiveDelta();
    totals["noise_multiplier"] = dp.noise_multiplier;
    totals["dp_sampling"] = dp.sampling;
    totals["dp_placement"] = dp.placement;
  }
  if (!result.stopped.empty()) totals["stopped"] = result.stopped;
  for (auto it = result.rounds.rbegin(); it != result.rounds.rend(); ++it) {
    if (!it->evaluated) continue;
    totals["final_test_accuracy"] = it->test_accuracy;
    totals["final_test_loss"] = it->test_loss;
    break;
  }
  if (config.target_accuracy > 0) {
    totals["target_accuracy"] = config.target_accuracy;
    totals["target_round"] = result.target_round;
    totals["target_wall_seconds"] = result.target_wall_seconds;
    totals["target_sim_seconds"] = result.target_sim_seconds;
  }
  totals.update(extra);
  nlohmann::json report = {
      {"config", SimConfigJson(config)}, {"rounds", rounds}, {"totals", totals}};
  namespace fs = std::filesystem;
  const std::string json = report.dump(2) + "\n";
  TRIB_RETURN_IF_ERROR(WriteFileAtomic((fs::path(dir) / "report.json").string(), json));
  TRIB_RETURN_IF_ERROR(WriteFileAtomic((fs::path(dir) / "rounds.csv").string(), RoundsCsv(result)));
  return WriteFileAtomic((fs::path(dir) / "report.html").string(),
                         ReportHtml(config, result, totals));
}

}  // namespace tributary

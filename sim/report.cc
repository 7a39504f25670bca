#include "sim/report.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <string_view>

#include "core/file_util.h"
#include "core/human_units.h"
#include "train/data/feature_noise.h"
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
      case '\'':  // attributes are in single quotes
        out += "&#39;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

std::string Percent(double fraction) { return fmt::format("{:.2f}%", 100 * fraction); }

bool EndsWith(const std::string& s, std::string_view tail) {
  return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
}

// The best evaluated round (the first of equals); nullptr when none was evaluated.
const SimRound* BestRound(const SimResult& result) {
  const SimRound* best = nullptr;
  for (const SimRound& r : result.rounds)
    if (r.evaluated && (!best || r.test_accuracy > best->test_accuracy)) best = &r;
  return best;
}

const SimRound* LastEvaluated(const SimResult& result) {
  for (auto it = result.rounds.rbegin(); it != result.rounds.rend(); ++it)
    if (it->evaluated) return &*it;
  return nullptr;
}

// A summary box: a label, the value in bold, and an optional note under it.
std::string Box(const std::string& id, const std::string& label, const std::string& value,
                const std::string& note = "") {
  return "<div data-summary='" + id + "'>" + Escape(label) + " <b>" + Escape(value) + "</b>" +
         (note.empty() ? "" : "<small>" + Escape(note) + "</small>") + "</div>\n";
}

// A JSON value as text: a string without its quotes, anything else as report.json writes it.
std::string CellText(const nlohmann::json& v) {
  return v.is_string() ? v.get<std::string>() : v.dump();
}

}  // namespace

std::string HumanTotal(const std::string& key, const nlohmann::json& v) {
  if (v.is_null()) return key == "epsilon" ? "\xE2\x88\x9E (no noise)" : "n/a";
  if (!v.is_number()) return CellText(v);
  const double x = v.get<double>();
  if (key == "target_round" && x == 0) return "not reached";
  if (EndsWith(key, "accuracy")) return Percent(x);
  if (key.find("bytes") != std::string::npos) return FormatBytes(x);
  if (EndsWith(key, "seconds") || key.find("_seconds_per_") != std::string::npos)
    return FormatDuration(x);
  if (key.find("_ms_per_") != std::string::npos) return FormatDuration(x / 1000);
  if (v.is_number_integer() || v.is_number_unsigned()) return v.dump();
  return fmt::format("{:.4g}", x);  // losses, epsilon, delta, noise multiplier: 4 digits
}

nlohmann::json SimConfigJson(const SimConfig& config) {
  // Every key through the simulator's schema: one list of keys, whatever is added to it.
  SimConfig copy = config;
  ConfigSchema schema("tributary-sim");
  BindSimConfig(schema, &copy);
  nlohmann::json out = nlohmann::json::object();
  for (const ConfigSchema::Key* k : schema.keys()) {
    if (!k->refusal().empty()) continue;
    // A key's TOML value text (a quoted string, a number, true or false) is valid JSON too;
    // a secret key (dp.noise_seed) is recorded as "<redacted>" once set.
    out[k->name()] = nlohmann::json::parse(k->recorded_text());
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

namespace {

constexpr int kHtmlClientsListed = 100;  // clients report.html's partition table lists

// Client i's feature-noise level under the run's partition spec (0 without "+noise:").
double NoiseLevelOf(const SimConfig& config, uint64_t client) {
  Result<FeatureNoiseSpec> noise = SplitFeatureNoise(config.data.partition);
  if (!noise.ok()) return 0.0;
  return FeatureNoiseLevel(noise->sigma, client, static_cast<uint64_t>(config.data.num_clients));
}

// The partition section of report.html: the summary and the first clients' sizes, classes and
// label skew (report.json has every client).
std::string PartitionHtml(const SimConfig& config, const PartitionStats& st) {
  const bool noisy = NoiseLevelOf(config, st.num_clients > 1 ? 1 : 0) > 0;
  std::string html = fmt::format(
      "<h2>Partition</h2>\n<p id='partition-summary'>{}: {} clients, {} examples; sizes {} / "
      "{:.1f} / {} (min / mean / max); {} to {} classes a client (mean {:.1f}); label skew (total "
      "variation to the global mix) {:.3f} on average, at most {:.3f}.</p>\n",
      Escape(config.data.partition), st.num_clients, st.total, st.min_size, st.mean_size,
      st.max_size, st.min_classes, st.max_classes, st.mean_classes, st.mean_label_tv,
      st.max_label_tv);
  html += "<table id='partition'>\n<tr><th>client</th><th>examples</th>";
  for (int c = 0; c < st.num_classes; ++c) html += fmt::format("<th>class {}</th>", c);
  html += noisy ? "<th>TV</th><th>noise</th></tr>\n" : "<th>TV</th></tr>\n";
  const int listed = std::min(kHtmlClientsListed, st.num_clients);
  for (int k = 0; k < listed; ++k) {
    html += fmt::format("<tr><th>{}</th><td>{}</td>", k, st.sizes[k]);
    for (int64_t n : st.class_counts[k]) html += fmt::format("<td>{}</td>", n);
    html += fmt::format("<td>{:.3f}</td>", st.label_tv[k]);
    if (noisy) html += fmt::format("<td>{:.4g}</td>", NoiseLevelOf(config, k));
    html += "</tr>\n";
  }
  html += "</table>\n";
  if (listed < st.num_clients)
    html += fmt::format("<p>... and {} more clients (report.json lists every one).</p>\n",
                        st.num_clients - listed);
  return html;
}

nlohmann::json PartitionJson(const SimConfig& config, const PartitionStats& st) {
  nlohmann::json j = {{"spec", config.data.partition},
                      {"clients", st.num_clients},
                      {"classes", st.num_classes},
                      {"examples", st.total},
                      {"mean_label_tv", st.mean_label_tv},
                      {"max_label_tv", st.max_label_tv},
                      {"min_classes", st.min_classes},
                      {"max_classes", st.max_classes},
                      {"sizes", st.sizes},
                      {"class_counts", st.class_counts},
                      {"label_tv", st.label_tv}};
  if (NoiseLevelOf(config, st.num_clients > 1 ? 1 : 0) > 0) {
    std::vector<double> levels(static_cast<size_t>(st.num_clients));
    for (size_t k = 0; k < levels.size(); ++k) levels[k] = NoiseLevelOf(config, k);
    j["noise_levels"] = std::move(levels);
  }
  return j;
}

}  // namespace

std::string ReportHtml(const SimConfig& config, const SimResult& result,
                       const nlohmann::json& totals) {
  // The charts are drawn in the browser by the chart code the coordinator's dashboard uses
  // (web/charts.js), from these rows, embedded in the page.
  nlohmann::json rows = nlohmann::json::array();
  for (const SimRound& r : result.rounds) {
    nlohmann::json row = {
        {"round", r.round}, {"cum_bytes_up", r.cum_bytes_up}, {"wall_seconds", r.wall_seconds}};
    // A training loss of exactly 0 is one no client reported (the noop trainer's rounds).
    if (r.train_loss > 0 && std::isfinite(r.train_loss)) row["train_loss"] = r.train_loss;
    if (r.evaluated) {
      row["test_accuracy"] = r.test_accuracy;
      row["test_loss"] = r.test_loss;
    }
    if (r.dp && std::isfinite(r.epsilon)) row["epsilon"] = r.epsilon;
    rows.push_back(std::move(row));
  }
  const bool dp = config.run.round.dp.enabled;
  const nlohmann::json data = {{"rounds", std::move(rows)}, {"dp", dp}};
  std::string html =
      "<!DOCTYPE html>\n<html lang='en'><head><meta charset='utf-8'>"
      "<title>Tributary simulation report</title>\n<style>" +
      std::string(web::StyleCss()) + "</style></head><body>\n";
  // An asynchronous run's "rounds" are steps: said so wherever a person reads them.
  const bool async = config.run.round.asynchronous();
  const char* unit = async ? "step" : "round";
  if (async)
    html += fmt::format(
        "<h1>Tributary simulation: {} on {}, {} clients, asynchronous: {} training at once, a "
        "step every {} updates</h1>\n",
        Escape(config.run.model), Escape(config.data.dataset), config.data.num_clients,
        config.run.round.Concurrency(), config.run.round.BufferSize());
  else
    html += fmt::format("<h1>Tributary simulation: {} on {}, {} clients, {} per round</h1>\n",
                        Escape(config.run.model), Escape(config.data.dataset),
                        config.data.num_clients, config.run.round.clients_per_round);

  // What a person asks first: how good the model got, when the target was reached, what it cost.
  html += "<div class='summary' id='summary'>\n";
  const SimRound* last = LastEvaluated(result);
  const SimRound* best = BestRound(result);
  if (last) {
    html += Box("final_accuracy", "final test accuracy", Percent(last->test_accuracy),
                fmt::format("{} {}", unit, last->round));
    html += Box("best_accuracy", "best test accuracy", Percent(best->test_accuracy),
                fmt::format("{} {}", unit, best->round));
  } else {
    html += Box("final_accuracy", "final test accuracy", "not evaluated");
  }
  if (config.target_accuracy > 0) {
    const std::string label = "target " + Percent(config.target_accuracy);
    html += result.target_round > 0
                ? Box("target", label, fmt::format("{} {}", unit, result.target_round),
                      "after " + FormatDuration(result.target_wall_seconds) + " wall, " +
                          FormatDuration(result.target_sim_seconds) + " simulated")
                : Box("target", label, "not reached");
  }
  if (last) html += Box("final_loss", "final test loss", fmt::format("{:.4g}", last->test_loss));
  html += Box("rounds", async ? "steps" : "rounds",
              fmt::format("{} of {}", result.rounds.size(), config.run.round.rounds));
  const uint64_t up = result.rounds.empty() ? 0 : result.rounds.back().cum_bytes_up;
  const uint64_t down = result.rounds.empty() ? 0 : result.rounds.back().cum_bytes_down;
  html += Box("bytes_up", "uploaded", FormatBytes(static_cast<double>(up)));
  html += Box("bytes_down", "downloaded", FormatBytes(static_cast<double>(down)));
  html += Box("wall_time", "wall time", FormatDuration(result.wall_seconds),
              FormatDuration(result.sim_seconds) + " simulated");
  if (dp && totals.contains("epsilon"))
    html += Box("epsilon", "privacy spent (\xCE\xB5)", HumanTotal("epsilon", totals["epsilon"]),
                fmt::format("at \xCE\xB4 = {:.3g}", totals.value("delta", 0.0)));
  if (!result.stopped.empty()) html += Box("stopped", "stopped early", result.stopped);
  html += "</div>\n";

  html +=
      "<div class='charts'><div id='chart-round'></div><div id='chart-loss'></div>"
      "<div id='chart-upload'></div>";
  if (dp) html += "<div id='chart-epsilon'></div>";
  html += "<div id='chart-duration'></div></div>\n<h2>Totals</h2>\n<table id='totals'>\n";
  // Each in the unit that fits; the raw number (as report.json has it) in the cell's tooltip.
  // The times of a target never reached are 0 in report.json: here they say so.
  const bool missed = totals.value("target_round", uint64_t{1}) == 0;
  for (const auto& item : totals.items()) {
    const bool unreached =
        missed && item.key().rfind("target_", 0) == 0 && EndsWith(item.key(), "seconds");
    html += "<tr><th>" + Escape(item.key()) + "</th><td title='" + Escape(CellText(item.value())) +
            "'>" + Escape(unreached ? "not reached" : HumanTotal(item.key(), item.value())) +
            "</td></tr>\n";
  }
  html += "</table>\n";
  if (result.partition) html += PartitionHtml(config, *result.partition);

  // The configuration: what this run changed, then every key on demand.
  const nlohmann::json cj = SimConfigJson(config);
  const nlohmann::json defaults = SimConfigJson(SimConfig());
  std::string changed;
  int changed_count = 0;
  for (const std::string& key : ChangedSimKeys(config)) {
    if (!cj.contains(key)) continue;  // a key this program refuses
    ++changed_count;
    changed += "<tr><th>" + Escape(key) + "</th><td>" + Escape(CellText(cj[key])) + "</td><td>" +
               Escape(defaults.contains(key) ? CellText(defaults[key]) : "") + "</td></tr>\n";
  }
  html += fmt::format(
      "<h2>Configuration</h2>\n<p>{} of the {} keys differ from their "
      "defaults.</p>\n",
      changed_count, cj.size());
  if (changed_count > 0)
    html += "<table id='config-changed'>\n<tr><th>key</th><th>value</th><th>default</th></tr>\n" +
            changed + "</table>\n";
  html +=
      fmt::format("<details id='config-all'><summary>All {} keys</summary>\n<table>\n", cj.size());
  for (const auto& item : cj.items())
    html += "<tr><th>" + Escape(item.key()) + "</th><td>" + Escape(CellText(item.value())) +
            "</td></tr>\n";
  html += "</table>\n</details>\n<script type='application/json' id='report-data'>" +
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
    j["coordinator_update_seconds"] = r.coordinator_update_seconds;
    if (r.split_batches > 0) {
      j["split_batches"] = r.split_batches;
      j["split_bytes_up"] = r.split_bytes_up;
      j["split_bytes_down"] = r.split_bytes_down;
      j["split_server_seconds"] = r.split_server_seconds;
    }
    if (r.tier) {
      j["tier_bytes_up"] = r.tier_bytes_up;
      j["tier_bytes_down"] = r.tier_bytes_down;
      j["aggregator_seconds"] = r.aggregator_seconds;
    }
    if (r.async) {
      j["staleness_mean"] = r.staleness_mean;
      j["staleness_max"] = r.staleness_max;
      j["in_flight"] = r.in_flight;
    }
    rounds.push_back(std::move(j));
  }
  nlohmann::json totals = {
      {"run_mode", config.run.round.mode},
      {"rounds", result.rounds.size()},
      {"wall_seconds", result.wall_seconds},
      {"sim_seconds", result.sim_seconds},
      {"join_seconds", result.join_seconds},
      {"model_hash", fmt::format("{:016x}", result.model_hash)},
      {"bytes_up", result.rounds.empty() ? 0 : result.rounds.back().cum_bytes_up},
      {"bytes_down", result.rounds.empty() ? 0 : result.rounds.back().cum_bytes_down}};
  {
    const SimRound sum = result.TierTotals();
    const double n = static_cast<double>(std::max<size_t>(1, result.rounds.size()));
    totals["coordinator_update_seconds_per_round"] = sum.coordinator_update_seconds / n;
    if (config.tier.aggregators > 0) {
      totals["aggregators"] = config.tier.aggregators;
      totals["tier_bytes_up"] = sum.tier_bytes_up;
      totals["tier_bytes_down"] = sum.tier_bytes_down;
      totals["aggregator_seconds_per_round"] = sum.aggregator_seconds / n;
    }
  }
  if (config.run.round.secagg.enabled) {
    const SimRound sum = result.SecAggTotals();
    totals["secagg_bytes_up"] = sum.secagg_bytes_up;
    totals["secagg_bytes_down"] = sum.secagg_bytes_down;
    totals["secagg_client_seconds_per_client_round"] =
        sum.secagg_client_seconds / static_cast<double>(std::max<int64_t>(1, sum.secagg_clients));
    totals["secagg_server_seconds_per_round"] =
        sum.secagg_server_seconds / static_cast<double>(std::max<size_t>(1, result.rounds.size()));
  }
  if (config.run.round.split.enabled()) {
    // Split learning: per batch each way (activations up, gradients down), and the server part's
    // compute per round (report.html's totals table shows them too).
    const SimRound sum = result.SplitTotals();
    const double per = static_cast<double>(std::max<uint64_t>(1, sum.split_batches));
    totals["split_mode"] = config.run.round.split.mode;
    totals["split_batches"] = sum.split_batches;
    totals["split_bytes_up_per_batch"] = static_cast<double>(sum.split_bytes_up) / per;
    totals["split_bytes_down_per_batch"] = static_cast<double>(sum.split_bytes_down) / per;
    totals["split_server_seconds_per_round"] =
        sum.split_server_seconds / static_cast<double>(std::max<size_t>(1, result.rounds.size()));
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
  if (const SimRound* last = LastEvaluated(result)) {
    totals["final_test_accuracy"] = last->test_accuracy;
    totals["final_test_loss"] = last->test_loss;
    const SimRound* best = BestRound(result);
    totals["best_test_accuracy"] = best->test_accuracy;
    totals["best_test_round"] = best->round;
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
  if (result.partition) report["partition"] = PartitionJson(config, *result.partition);
  namespace fs = std::filesystem;
  const std::string json = report.dump(2) + "\n";
  TRIB_RETURN_IF_ERROR(WriteFileAtomic((fs::path(dir) / "report.json").string(), json));
  TRIB_RETURN_IF_ERROR(WriteFileAtomic((fs::path(dir) / "rounds.csv").string(), RoundsCsv(result)));
  return WriteFileAtomic((fs::path(dir) / "report.html").string(),
                         ReportHtml(config, result, totals));
}

}  // namespace tributary

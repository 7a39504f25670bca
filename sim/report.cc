#include "sim/report.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <filesystem>

#include "core/file_util.h"

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

struct Point {
  double x, y;
};

// An SVG line chart of `points` (y in [0, 1] shown as percent). log_x plots x on a log10 axis.
std::string Chart(const std::string& title, const std::string& xlabel,
                  const std::vector<Point>& points, bool log_x) {
  const double W = 560, H = 320, L = 60, R = 20, T = 36, B = 48;
  std::string svg = fmt::format(
      "<svg xmlns='http://www.w3.org/2000/svg' width='{}' height='{}' viewBox='0 0 {} {}' "
      "role='img' aria-label='{}'>\n<rect width='100%' height='100%' fill='white'/>\n"
      "<text x='{}' y='22' font-size='15' text-anchor='middle' "
      "font-family='sans-serif'>{}</text>\n",
      W, H, W, H, Escape(title), W / 2, Escape(title));
  if (points.empty())
    return svg + "<text x='280' y='160' text-anchor='middle'>no evaluated rounds</text></svg>\n";
  auto fx = [&](double x) { return log_x ? std::log10(std::max(x, 1.0)) : x; };
  double x0 = fx(points.front().x), x1 = x0, y0 = 1.0, y1 = 0.0;
  for (const Point& p : points) {
    x0 = std::min(x0, fx(p.x));
    x1 = std::max(x1, fx(p.x));
    y0 = std::min(y0, p.y);
    y1 = std::max(y1, p.y);
  }
  if (x1 <= x0) x1 = x0 + 1;
  y0 = std::floor(y0 * 10) / 10;
  y1 = std::min(1.0, std::ceil(y1 * 10 + 1e-9) / 10);
  if (y1 <= y0) y1 = y0 + 0.1;
  auto px = [&](double x) { return L + (fx(x) - x0) / (x1 - x0) * (W - L - R); };
  auto py = [&](double y) { return T + (y1 - y) / (y1 - y0) * (H - T - B); };
  // Axes, grid and tick labels.
  for (int i = 0; i <= 5; ++i) {
    const double y = y0 + (y1 - y0) * i / 5;
    svg += fmt::format(
        "<line x1='{:.1f}' y1='{:.1f}' x2='{:.1f}' y2='{:.1f}' stroke='#ddd'/>"
        "<text x='{:.1f}' y='{:.1f}' font-size='11' text-anchor='end' "
        "font-family='sans-serif'>{:.0f}%</text>\n",
        L, py(y), W - R, py(y), L - 6, py(y) + 4, 100 * y);
  }
  for (int i = 0; i <= 5; ++i) {
    const double v = x0 + (x1 - x0) * i / 5;
    const double xv = log_x ? std::pow(10.0, v) : v;
    const std::string label = log_x ? (xv >= 1e9   ? fmt::format("{:.1f} GB", xv / 1e9)
                                       : xv >= 1e6 ? fmt::format("{:.1f} MB", xv / 1e6)
                                                   : fmt::format("{:.0f} kB", xv / 1e3))
                                    : fmt::format("{:.0f}", xv);
    const double x = L + (v - x0) / (x1 - x0) * (W - L - R);
    svg += fmt::format(
        "<text x='{:.1f}' y='{:.1f}' font-size='11' text-anchor='middle' "
        "font-family='sans-serif'>{}</text>\n",
        x, H - B + 16, label);
  }
  svg += fmt::format(
      "<line x1='{0}' y1='{1}' x2='{0}' y2='{2}' stroke='black'/>"
      "<line x1='{0}' y1='{2}' x2='{3}' y2='{2}' stroke='black'/>\n"
      "<text x='{4}' y='{5}' font-size='12' text-anchor='middle' font-family='sans-serif'>{6}"
      "</text>\n<text x='14' y='{7}' font-size='12' text-anchor='middle' font-family='sans-serif' "
      "transform='rotate(-90 14 {7})'>test accuracy</text>\n",
      L, T, H - B, W - R, (L + W - R) / 2, H - 8, Escape(xlabel), (T + H - B) / 2);
  std::string pts;
  for (const Point& p : points) pts += fmt::format("{:.1f},{:.1f} ", px(p.x), py(p.y));
  svg += "<polyline fill='none' stroke='#1f77b4' stroke-width='2' points='" + pts + "'/>\n";
  for (const Point& p : points)
    svg +=
        fmt::format("<circle cx='{:.1f}' cy='{:.1f}' r='2.5' fill='#1f77b4'/>", px(p.x), py(p.y));
  return svg + "\n</svg>\n";
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
      "round,attempts,selected,completed,rejected,dropped,unavailable,dropouts,stragglers,bytes_up,"
      "bytes_down,cum_bytes_up,cum_bytes_down,sim_seconds,sim_clock,wall_seconds,wall_clock,"
      "train_loss,test_accuracy,test_loss,malicious,secagg_bytes_up,secagg_bytes_down,secagg_"
      "clients,"
      "secagg_client_seconds,secagg_server_seconds,epsilon,dp_clip_norm,dp_clipped\n";
  for (const SimRound& r : result.rounds) {
    out += fmt::format("{},{},{},{},{},{},{},{},{},{},{},{},{},{:.6f},{:.6f},{:.6f},{:.6f},{:.6f},",
                       r.round, r.attempts, r.selected, r.completed, r.rejected, r.dropped,
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
  std::vector<Point> by_round, by_bytes, by_epsilon;
  for (const SimRound& r : result.rounds) {
    if (!r.evaluated) continue;
    by_round.push_back({static_cast<double>(r.round), r.test_accuracy});
    by_bytes.push_back({static_cast<double>(r.cum_bytes_up), r.test_accuracy});
    if (r.dp && std::isfinite(r.epsilon)) by_epsilon.push_back({r.epsilon, r.test_accuracy});
  }
  std::string html =
      "<!DOCTYPE html>\n<html lang='en'><head><meta charset='utf-8'>"
      "<title>Tributary simulation report</title>\n<style>body{font-family:sans-serif;"
      "margin:2em;max-width:1200px}table{border-collapse:collapse}td,th{border:1px solid #ccc;"
      "padding:3px 8px;text-align:left}.charts{display:flex;flex-wrap:wrap;gap:16px}</style>"
      "</head><body>\n";
  html += fmt::format("<h1>Tributary simulation: {} on {}, {} clients, {} per round</h1>\n",
                      Escape(config.run.model), Escape(config.data.dataset),
                      config.data.num_clients, config.run.round.clients_per_round);
  html += "<div class='charts'>\n" + Chart("Test accuracy by round", "round", by_round, false) +
          Chart("Test accuracy by cumulative upload", "upload bytes (log scale)", by_bytes, true) +
          (config.run.round.dp.enabled
               ? Chart("Test accuracy against privacy spent", "epsilon", by_epsilon, false)
               : std::string()) +
          "</div>\n<h2>Totals</h2>\n<table>\n";
  for (const auto& item : totals.items())
    html += "<tr><th>" + Escape(item.key()) + "</th><td>" + Escape(item.value().dump()) +
            "</td></tr>\n";
  html += "</table>\n<h2>Configuration</h2>\n<table>\n";
  const nlohmann::json cj = SimConfigJson(config);
  for (const auto& item : cj.items())
    html += "<tr><th>" + Escape(item.key()) + "</th><td>" + Escape(item.value().dump()) +
            "</td></tr>\n";
  html += "</table>\n</body></html>\n";
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
                        {"completed", r.completed},
                        {"rejected", r.rejected},
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

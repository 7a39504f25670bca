#include "history/history_views.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <ctime>
#include <filesystem>

#include <nlohmann/json.hpp>

#include "core/human_units.h"

namespace tributary {
namespace {

std::string LocalTime(double unix_seconds) {
  const std::time_t t = static_cast<std::time_t>(unix_seconds);
  std::tm tm{};
  localtime_r(&t, &tm);
  char text[32];
  std::strftime(text, sizeof(text), "%Y-%m-%d %H:%M:%S", &tm);
  return text;
}

std::string Elapsed(double seconds) {
  if (seconds < 60) return fmt::format("{:.1f}s", std::max(0.0, seconds));
  const int64_t s = static_cast<int64_t>(seconds);
  if (s < 3600) return fmt::format("{}m {:02}s", s / 60, s % 60);
  return fmt::format("{}h {:02}m", s / 3600, (s % 3600) / 60);
}

std::string Bytes(int64_t b) { return FormatBytes(static_cast<double>(b)); }

// A model file's name, not its path, in tables.
std::string ShortModel(const std::string& model) {
  if (model.find('/') == std::string::npos) return model;
  return std::filesystem::path(model).filename().string();
}

nlohmann::json Optional(const std::optional<double>& v) {
  return v ? nlohmann::json(*v) : nlohmann::json(nullptr);
}

std::string Optional(const std::optional<double>& v, const char* format_spec) {
  return v ? fmt::format(fmt::runtime(format_spec), *v) : std::string("-");
}

// Columns padded to their widest cell; the first `right` columns align right.
std::string Table(const std::vector<std::vector<std::string>>& rows, size_t right) {
  std::vector<size_t> width;
  for (const auto& row : rows) {
    width.resize(std::max(width.size(), row.size()), 0);
    for (size_t i = 0; i < row.size(); ++i) width[i] = std::max(width[i], row[i].size());
  }
  std::string out;
  for (const auto& row : rows) {
    std::string line;
    for (size_t i = 0; i < row.size(); ++i) {
      if (i > 0) line += "  ";
      const std::string pad(width[i] - row[i].size(), ' ');
      line += i < right ? pad + row[i] : row[i] + (i + 1 < row.size() ? pad : "");
    }
    out += line + "\n";
  }
  return out;
}

}  // namespace

nlohmann::ordered_json RunJson(const RunRecord& r) {
  nlohmann::ordered_json j;
  j["id"] = r.id;
  j["status"] = ReportedStatus(r);
  j["recorded_status"] = r.status;
  j["producer"] = r.producer;
  j["model"] = r.model;
  j["strategy"] = r.strategy;
  j["rounds_total"] = r.rounds_total;
  j["rounds_done"] = r.rounds_done;
  j["error"] = r.error;
  j["started_at"] = r.started_at;
  j["ended_at"] = Optional(r.ended_at);
  j["updated_at"] = r.updated_at;
  j["host"] = r.host;
  j["pid"] = r.pid;
  j["resumes"] = r.resumes;
  j["run_uid"] = r.run_uid;
  j["checkpoint_dir"] = r.checkpoint_dir;
  j["event_log"] = r.event_log;
  j["final_model"] = r.final_model;
  nlohmann::ordered_json config = nlohmann::ordered_json::parse(r.config_json, nullptr, false);
  j["config"] = config.is_discarded() ? nlohmann::ordered_json(r.config_json) : config;
  return j;
}

nlohmann::ordered_json RoundJson(const RoundRecord& r) {
  nlohmann::ordered_json j;
  j["round"] = r.round;
  j["attempts"] = r.attempts;
  j["selected"] = r.selected;
  j["opened_at"] = r.opened_at;
  j["closed_at"] = Optional(r.closed_at);
  j["duration_seconds"] = r.duration_seconds;
  j["accepted"] = r.accepted;
  j["refused"] = r.refused;
  j["dropped"] = r.dropped;
  j["bytes_up"] = r.bytes_up;
  j["bytes_down"] = r.bytes_down;
  j["num_examples"] = r.num_examples;
  j["eval_loss"] = Optional(r.eval_loss);
  j["eval_accuracy"] = Optional(r.eval_accuracy);
  j["federated_loss"] = Optional(r.federated_loss);
  j["federated_accuracy"] = Optional(r.federated_accuracy);
  j["epsilon"] = Optional(r.epsilon);
  j["checkpoint_path"] = r.checkpoint_path;
  return j;
}

nlohmann::ordered_json EventJson(const EventRecord& e) {
  nlohmann::ordered_json j;
  j["run_id"] = e.run_id;
  j["seq"] = e.seq;
  j["at"] = e.at;
  const nlohmann::ordered_json fields = nlohmann::ordered_json::parse(e.json, nullptr, false);
  if (fields.is_object()) {
    for (const auto& [key, value] : fields.items()) j[key] = value;
  } else {
    j["event"] = "unreadable";
    j["json"] = e.json;
  }
  return j;
}

std::string RunsTable(const std::vector<RunRecord>& runs) {
  std::vector<std::vector<std::string>> rows{
      {"ID", "STATUS", "PRODUCER", "MODEL", "STRATEGY", "ROUNDS", "STARTED", "DURATION"}};
  for (const RunRecord& r : runs) {
    const double end = r.ended_at.value_or(r.updated_at);
    rows.push_back({std::to_string(r.id), ReportedStatus(r), r.producer, ShortModel(r.model),
                    r.strategy, fmt::format("{}/{}", r.rounds_done, r.rounds_total),
                    LocalTime(r.started_at), Elapsed(end - r.started_at)});
  }
  return Table(rows, 1);
}

namespace {

// A run recorded with run.mode = "async": its rounds are steps.
bool Asynchronous(const RunRecord& r) {
  const nlohmann::json config = nlohmann::json::parse(r.config_json, nullptr, false);
  return config.is_object() && config.value("run.mode", std::string()) == "async";
}

}  // namespace

std::string RunText(const RunRecord& r, const std::vector<RoundRecord>& rounds) {
  const std::string status = ReportedStatus(r);
  const bool async = Asynchronous(r);
  std::vector<std::vector<std::string>> fields;
  fields.push_back({"status", status});
  fields.push_back({"producer", fmt::format("{} (pid {} on {})", r.producer, r.pid, r.host)});
  fields.push_back({"model", r.model});
  fields.push_back({"strategy", r.strategy});
  fields.push_back({async ? "steps" : "rounds",
                    fmt::format("{} of {} done{}", r.rounds_done, r.rounds_total,
                                async ? " (asynchronous: a step per buffer of updates)" : "")});
  fields.push_back({"started", LocalTime(r.started_at)});
  if (r.ended_at)
    fields.push_back({"ended", fmt::format("{} (after {})", LocalTime(*r.ended_at),
                                           Elapsed(*r.ended_at - r.started_at))});
  else
    fields.push_back({"last update", LocalTime(r.updated_at)});
  if (r.resumes > 0)
    fields.push_back({"resumed", r.resumes == 1 ? "once" : fmt::format("{} times", r.resumes)});
  if (!r.run_uid.empty()) fields.push_back({"run uid", r.run_uid});
  fields.push_back({"checkpoints", r.checkpoint_dir.empty() ? "-" : r.checkpoint_dir});
  fields.push_back({"event log", r.event_log.empty() ? "-" : r.event_log});
  fields.push_back({"final model", r.final_model.empty() ? "-" : r.final_model});
  if (!r.error.empty()) fields.push_back({status == "finished" ? "stopped" : "error", r.error});
  if (status == "interrupted")
    fields.push_back(
        {"note", std::any_of(rounds.begin(), rounds.end(),
                             [](const RoundRecord& k) { return !k.checkpoint_path.empty(); })
                     ? fmt::format("process {} is gone without recording an end; the checkpoints "
                                   "resume it (tributary-coordinator --resume)",
                                   r.pid)
                     : fmt::format("process {} is gone without recording an end, before its "
                                   "first checkpoint: start it again (there is nothing to resume)",
                                   r.pid)});
  for (auto& f : fields) f[0] += ":";
  std::string out = fmt::format("run {}\n", r.id) + Table(fields, 0) + "\n";
  std::vector<std::vector<std::string>> rows{{async ? "STEP" : "ROUND", "ATTEMPTS", "ACCEPTED",
                                              "REFUSED", "DROPPED", "UP", "DOWN", "SECONDS", "LOSS",
                                              "ACCURACY", "CHECKPOINT"}};
  for (const RoundRecord& x : rounds) {
    rows.push_back({std::to_string(x.round), std::to_string(x.attempts), std::to_string(x.accepted),
                    std::to_string(x.refused), std::to_string(x.dropped), Bytes(x.bytes_up),
                    Bytes(x.bytes_down),
                    x.closed_at ? fmt::format("{:.2f}", x.duration_seconds) : "open",
                    Optional(x.eval_loss, "{:.4f}"),
                    x.eval_accuracy ? fmt::format("{:.2f}%", 100 * *x.eval_accuracy) : "-",
                    x.checkpoint_path.empty() ? "-" : x.checkpoint_path});
  }
  return out + Table(rows, 10);
}

std::string EventLine(const EventRecord& e) {
  const nlohmann::ordered_json fields = nlohmann::ordered_json::parse(e.json, nullptr, false);
  std::string name = "unreadable";
  std::string rest;
  if (fields.is_object()) {
    if (fields.contains("event") && fields["event"].is_string()) name = fields["event"];
    // The round first, where there is one: it is what a reader scans the lines for.
    std::vector<std::pair<std::string, nlohmann::ordered_json>> items;
    for (const auto& [key, value] : fields.items()) {
      if (key == "round")
        items.insert(items.begin(), {key, value});
      else if (key != "event")
        items.emplace_back(key, value);
    }
    for (const auto& [key, value] : items) {
      // Strings bare when they are one word of printable characters, else quoted and escaped as
      // JSON, so that the line still splits and a client id or a reason from the network cannot
      // send escape sequences to the terminal.
      const auto printable = [](const std::string& s) {
        for (unsigned char c : s)
          if (c < 0x20 || c == 0x7f || c == ' ' || c == '"' || c == '=') return false;
        return !s.empty();
      };
      const bool bare = value.is_string() && printable(value.get<std::string>());
      rest += " " + key + "=" +
              (bare ? value.get<std::string>()
                    : value.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
    }
  } else {
    rest = " " + e.json;
  }
  return fmt::format("{}  {:>5}  {}{}", LocalTime(e.at), e.seq, name, rest);
}

}  // namespace tributary

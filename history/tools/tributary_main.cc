// tributary: inspects the run history that tributary-coordinator and tributary-sim record (key
// output.history; docs/operations.md, "Run history").
//
//   tributary runs ls [--json] [--limit N] [--db PATH]   the runs, newest first
//   tributary runs show ID [--json] [--db PATH]          a run, with every round
//   tributary runs log ID [--follow] [--json] [--db PATH]
//                                       its events; --follow waits for new ones until the run ends
//
// --db defaults to output.history's default (history/history_path.h). The database is opened
// read-only and never created, so this runs safely beside live runs. A run whose process is gone
// without recording its end is shown as "interrupted". --json prints JSON (an array for ls, an
// object for show, one object per line for log). Exit status: 0; 1 when the database or the run
// cannot be read (the message says why); 2 for bad arguments.
#include <CLI/CLI.hpp>

#include <chrono>
#include <cstdio>
#include <exception>
#include <string>
#include <thread>

#include "history/history_db.h"
#include "history/history_path.h"
#include "history/history_views.h"

namespace tributary {
namespace {

constexpr auto kFollowInterval = std::chrono::milliseconds(500);
constexpr int64_t kEventBatch = 1000;

void Print(const std::string& text) {
  std::fwrite(text.data(), 1, text.size(), stdout);
  std::fflush(stdout);
}

Result<std::unique_ptr<HistoryDb>> OpenDb(const std::string& path) {
  if (path.empty())
    return Status::NotFound(
        "no home directory, so no default run history: name the database with --db");
  return HistoryDb::Open(path, HistoryDb::Mode::kReadOnly);
}

Status ListRuns(const std::string& path, bool json, int64_t limit) {
  TRIB_ASSIGN_OR_RETURN(std::unique_ptr<HistoryDb> db, OpenDb(path));
  TRIB_ASSIGN_OR_RETURN(std::vector<RunRecord> runs, db->ListRuns(limit));
  if (json) {
    nlohmann::ordered_json out = nlohmann::ordered_json::array();
    for (const RunRecord& r : runs) out.push_back(RunJson(r));
    Print(out.dump(2) + "\n");
  } else if (runs.empty()) {
    Print("no runs in " + db->path() + "\n");
  } else {
    Print(RunsTable(runs));
  }
  return Status::Ok();
}

Status ShowRun(const std::string& path, int64_t id, bool json) {
  TRIB_ASSIGN_OR_RETURN(std::unique_ptr<HistoryDb> db, OpenDb(path));
  // One read transaction, so that the run and its rounds are of the same moment.
  TRIB_RETURN_IF_ERROR(db->BeginRead());
  TRIB_ASSIGN_OR_RETURN(RunRecord run, db->GetRun(id));
  TRIB_ASSIGN_OR_RETURN(std::vector<RoundRecord> rounds, db->GetRounds(id));
  db->Rollback();
  if (json) {
    nlohmann::ordered_json out = RunJson(run);
    out["rounds"] = nlohmann::ordered_json::array();
    for (const RoundRecord& r : rounds) out["rounds"].push_back(RoundJson(r));
    Print(out.dump(2) + "\n");
  } else {
    Print(RunText(run, rounds));
  }
  return Status::Ok();
}

Status RunLog(const std::string& path, int64_t id, bool follow, bool json) {
  TRIB_ASSIGN_OR_RETURN(std::unique_ptr<HistoryDb> db, OpenDb(path));
  int64_t last = 0;
  while (true) {
    // The run's status before its events: a run's last events are committed with its end, so
    // the events read after seeing it end are all of them.
    TRIB_ASSIGN_OR_RETURN(RunRecord run, db->GetRun(id));
    const std::string status = ReportedStatus(run);
    while (true) {
      TRIB_ASSIGN_OR_RETURN(std::vector<EventRecord> events,
                            db->EventsAfter(id, last, kEventBatch));
      std::string text;
      for (const EventRecord& e : events)
        text += (json ? EventJson(e).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace)
                      : EventLine(e)) +
                "\n";
      if (!events.empty()) last = events.back().seq;
      Print(text);
      if (static_cast<int64_t>(events.size()) < kEventBatch) break;
    }
    if (!follow || status != "running") {
      if (follow && status == "interrupted")
        std::fprintf(stderr, "tributary: run %lld is interrupted (process %lld is gone)\n",
                     static_cast<long long>(id), static_cast<long long>(run.pid));
      return Status::Ok();
    }
    std::this_thread::sleep_for(kFollowInterval);
  }
}

int Main(int argc, char** argv) {
  CLI::App app{"tributary: inspect the run history of tributary-coordinator and tributary-sim"};
  app.require_subcommand(1);
  CLI::App* runs = app.add_subcommand("runs", "the runs recorded in the run history");
  runs->require_subcommand(1);

  std::string db = ResolveHistoryPath("");
  auto add_db = [&db](CLI::App* cmd) {
    cmd->add_option("--db", db, "the run history database (output.history)")->capture_default_str();
  };
  bool json = false, follow = false;
  int64_t limit = 0, id = 0;

  CLI::App* ls = runs->add_subcommand("ls", "list the runs, newest first");
  add_db(ls);
  ls->add_flag("--json", json, "print a JSON array");
  ls->add_option("--limit", limit, "only the newest N runs (0: all)")
      ->check(CLI::NonNegativeNumber);

  CLI::App* show = runs->add_subcommand("show", "a run, with every round");
  add_db(show);
  show->add_option("ID", id, "the run's id (runs ls)")->required();
  show->add_flag("--json", json, "print a JSON object");

  CLI::App* log = runs->add_subcommand("log", "a run's events, oldest first");
  add_db(log);
  log->add_option("ID", id, "the run's id (runs ls)")->required();
  log->add_flag("--follow,-f", follow,
                "keep printing new events until the run is no longer running");
  log->add_flag("--json", json, "print one JSON object per event and line");

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    // --help is 0; every bad argument is 2 (CLI11's own codes vary by the error).
    return app.exit(e) == 0 ? 0 : 2;
  }

  Status status;
  if (ls->parsed())
    status = ListRuns(db, json, limit);
  else if (show->parsed())
    status = ShowRun(db, id, json);
  else if (log->parsed())
    status = RunLog(db, id, follow, json);
  if (!status.ok()) {
    std::fprintf(stderr, "tributary: %s\n", status.ToString().c_str());
    return 1;
  }
  return 0;
}

}  // namespace
}  // namespace tributary

int main(int argc, char** argv) {
  try {
    return tributary::Main(argc, argv);
  } catch (const std::exception& e) {  // e.g. bad_alloc; every expected failure is a Status
    std::fprintf(stderr, "tributary: %s\n", e.what());
    return 1;
  }
}

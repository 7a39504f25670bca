// What `tributary runs` prints of the run history: JSON objects for --json, and text for people.
//
// Every view reports a run's status as ReportedStatus does ("interrupted" for a run whose writer
// is gone). Times in JSON are unix seconds; in text, local time. Thread-safe (pure functions).
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "history/history_db.h"

namespace tributary {

// The run's fields, "status" as reported, and "config" as an object.
nlohmann::ordered_json RunJson(const RunRecord& run);
nlohmann::ordered_json RoundJson(const RoundRecord& round);
// {"run_id", "seq", "at", "event", ...the event's fields}.
nlohmann::ordered_json EventJson(const EventRecord& event);

// `runs ls`: a header and a line per run.
std::string RunsTable(const std::vector<RunRecord>& runs);
// `runs show`: the run's fields, then a table of its rounds.
std::string RunText(const RunRecord& run, const std::vector<RoundRecord>& rounds);
// `runs log`: one line, "<time>  <seq>  <event>  key=value ...".
std::string EventLine(const EventRecord& event);

}  // namespace tributary

// SqliteStatement: one prepared SQLite statement, finalized when destroyed, for HistoryDb.
//
//   TRIB_ASSIGN_OR_RETURN(SqliteStatement st, SqliteStatement::Prepare(db, "SELECT ... ?1", what));
//   st.Bind(1, run_id);
//   while (true) { TRIB_ASSIGN_OR_RETURN(bool row, st.Step()); if (!row) break; ... st.Int(0) ... }
//
// Errors are Status with SQLite's message, prefixed by `what` (the database and the operation)
// and coded by SQLiteError. A failed Bind is reported by the next Step or Run.
//
// Move-only. Not thread-safe (one connection, one thread).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "tributary/result.h"

struct sqlite3;
struct sqlite3_stmt;

namespace tributary {

// A Status for SQLite result code `rc`: Corruption for a file that is not a database or is
// damaged, Unavailable for a lock held too long, PermissionDenied, NotFound (cannot open), IoError
// for the rest of the OS's failures, Internal otherwise. The message is "<what>: <SQLite's>".
Status SqliteError(int rc, sqlite3* db, std::string_view what);

class SqliteStatement {
 public:
  static Result<SqliteStatement> Prepare(sqlite3* db, std::string_view sql, std::string what);
  SqliteStatement(SqliteStatement&& other) noexcept;
  SqliteStatement& operator=(SqliteStatement&& other) noexcept;
  SqliteStatement(const SqliteStatement&) = delete;
  SqliteStatement& operator=(const SqliteStatement&) = delete;
  ~SqliteStatement();

  // Parameters are 1-based (?1, ?2, ...).
  SqliteStatement& Bind(int index, int64_t value);
  SqliteStatement& Bind(int index, double value);
  SqliteStatement& Bind(int index, std::string_view text);
  SqliteStatement& Bind(int index, std::optional<double> value);  // NULL when empty
  SqliteStatement& BindNull(int index);

  // True with a row to read, false when done.
  Result<bool> Step();
  // Steps until done (statements that return no rows).
  Status Run();
  // Clears the bindings and rewinds, to run the statement again.
  void Reset();

  // Column values of the current row (0-based).
  int64_t Int(int column) const;
  double Real(int column) const;
  std::optional<double> OptionalReal(int column) const;  // empty for NULL
  std::string Text(int column) const;                    // "" for NULL

 private:
  SqliteStatement(sqlite3* db, sqlite3_stmt* stmt, std::string what)
      : db_(db), stmt_(stmt), what_(std::move(what)) {}
  void Check(int rc);

  sqlite3* db_ = nullptr;
  sqlite3_stmt* stmt_ = nullptr;
  std::string what_;
  int bind_error_ = 0;  // the first failed Bind's result code
};

}  // namespace tributary

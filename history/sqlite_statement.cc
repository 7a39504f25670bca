#include "history/sqlite_statement.h"

#include <sqlite3.h>

#include <string>
#include <utility>

namespace tributary {

Status SqliteError(int rc, sqlite3* db, std::string_view what) {
  // The extended code's message when the connection has one for this failure, else the code's.
  std::string message =
      db != nullptr && sqlite3_errcode(db) == rc ? sqlite3_errmsg(db) : sqlite3_errstr(rc);
  message = std::string(what) + ": " + message;
  switch (rc & 0xff) {
    case SQLITE_NOTADB:
    case SQLITE_CORRUPT:
    case SQLITE_FORMAT:
      return Status::Corruption(std::move(message));
    case SQLITE_BUSY:
    case SQLITE_LOCKED:
      return Status::Unavailable(std::move(message));
    case SQLITE_PERM:
    case SQLITE_READONLY:
    case SQLITE_AUTH:
      return Status::PermissionDenied(std::move(message));
    case SQLITE_CANTOPEN:
      return Status::NotFound(std::move(message));
    case SQLITE_IOERR:
    case SQLITE_FULL:
    case SQLITE_NOLFS:
    case SQLITE_PROTOCOL:
      return Status::IoError(std::move(message));
    default:
      return Status::Internal(std::move(message));
  }
}

Result<SqliteStatement> SqliteStatement::Prepare(sqlite3* db, std::string_view sql,
                                                 std::string what) {
  sqlite3_stmt* stmt = nullptr;
  const int rc = sqlite3_prepare_v2(db, sql.data(), static_cast<int>(sql.size()), &stmt, nullptr);
  if (rc != SQLITE_OK) {
    sqlite3_finalize(stmt);
    return SqliteError(rc, db, what);
  }
  return SqliteStatement(db, stmt, std::move(what));
}

SqliteStatement::SqliteStatement(SqliteStatement&& other) noexcept
    : db_(other.db_),
      stmt_(std::exchange(other.stmt_, nullptr)),
      what_(std::move(other.what_)),
      bind_error_(other.bind_error_) {}

SqliteStatement& SqliteStatement::operator=(SqliteStatement&& other) noexcept {
  if (this != &other) {
    sqlite3_finalize(stmt_);
    db_ = other.db_;
    stmt_ = std::exchange(other.stmt_, nullptr);
    what_ = std::move(other.what_);
    bind_error_ = other.bind_error_;
  }
  return *this;
}

SqliteStatement::~SqliteStatement() { sqlite3_finalize(stmt_); }

void SqliteStatement::Check(int rc) {
  if (rc != SQLITE_OK && bind_error_ == 0) bind_error_ = rc;
}

SqliteStatement& SqliteStatement::Bind(int index, int64_t value) {
  Check(sqlite3_bind_int64(stmt_, index, value));
  return *this;
}

SqliteStatement& SqliteStatement::Bind(int index, double value) {
  Check(sqlite3_bind_double(stmt_, index, value));
  return *this;
}

SqliteStatement& SqliteStatement::Bind(int index, std::string_view text) {
  Check(sqlite3_bind_text(stmt_, index, text.data(), static_cast<int>(text.size()),
                          SQLITE_TRANSIENT));
  return *this;
}

SqliteStatement& SqliteStatement::Bind(int index, std::optional<double> value) {
  return value ? Bind(index, *value) : BindNull(index);
}

SqliteStatement& SqliteStatement::BindNull(int index) {
  Check(sqlite3_bind_null(stmt_, index));
  return *this;
}

Result<bool> SqliteStatement::Step() {
  if (bind_error_ != 0) return SqliteError(bind_error_, db_, what_);
  const int rc = sqlite3_step(stmt_);
  if (rc == SQLITE_ROW) return true;
  if (rc == SQLITE_DONE) return false;
  return SqliteError(rc, db_, what_);
}

Status SqliteStatement::Run() {
  while (true) {
    TRIB_ASSIGN_OR_RETURN(bool row, Step());
    if (!row) return Status::Ok();
  }
}

void SqliteStatement::Reset() {
  sqlite3_reset(stmt_);
  sqlite3_clear_bindings(stmt_);
  bind_error_ = 0;
}

int64_t SqliteStatement::Int(int column) const { return sqlite3_column_int64(stmt_, column); }

double SqliteStatement::Real(int column) const { return sqlite3_column_double(stmt_, column); }

std::optional<double> SqliteStatement::OptionalReal(int column) const {
  if (sqlite3_column_type(stmt_, column) == SQLITE_NULL) return std::nullopt;
  return sqlite3_column_double(stmt_, column);
}

std::string SqliteStatement::Text(int column) const {
  const unsigned char* text = sqlite3_column_text(stmt_, column);
  if (text == nullptr) return "";
  return std::string(reinterpret_cast<const char*>(text),
                     static_cast<size_t>(sqlite3_column_bytes(stmt_, column)));
}

}  // namespace tributary

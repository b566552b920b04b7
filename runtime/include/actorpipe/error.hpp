#pragma once

/// Errors as values: every fallible call in the runtime returns a Result.
///
/// An Error carries a code that the CLI maps to an exit status and a message. Where it
/// is about a key of an input file ("model.width"), the key and the place it was written
/// (FILE:LINE:COL) travel as data beside the message, which renders them in front
/// ("job.toml:4:9: model.width: …"). An error about a key whose place its producer does
/// not know carries the key alone; whoever knows the place puts it there (placed():
/// config::place_in_job for a job's keys, the Lua job reader for a table's).

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <variant>

namespace actorpipe {

/// What kind of failure an error is; decides the CLI's exit status.
enum class ErrorCode {
  bad_input,   ///< the user's input is wrong (config, profile, plugin file): exit 2
  run_failed,  ///< the input was fine but the work failed: exit 1
  unsupported, ///< a plugin or build lacks an operation: exit 2
};

/// The process exit status for an error code (0 ok, 1 failed run, 2 bad input).
constexpr int exit_status(ErrorCode code) noexcept { return code == ErrorCode::run_failed ? 1 : 2; }

/// Where in an input something was written.
struct SourcePlace {
  std::string file;         ///< a file's path, or an origin such as "--set KEY=VALUE"
  std::uint32_t line = 0;   ///< from 1; 0: the file as a whole
  std::uint32_t column = 0; ///< from 1; 0: the line as a whole
  /// "FILE:LINE:COL", "FILE:LINE" or "FILE".
  std::string text() const {
    if (line == 0) return file;
    return file + ":" + std::to_string(line) + (column == 0 ? "" : ":" + std::to_string(column));
  }
  friend bool operator==(const SourcePlace&, const SourcePlace&) = default;
};

struct Error {
  ErrorCode code = ErrorCode::bad_input;
  /// What a user reads: with `place` and `key` rendered in front where they are set.
  std::string message;
  /// The input key the error is about ("data.samples", "cluster.servers[1].nic"); empty
  /// when it is about no key.
  std::string key = {};
  /// Where `key` was written; none while its producer does not know (`message` then
  /// holds "KEY: WHAT", or WHAT alone where there is no key).
  std::optional<SourcePlace> place = {};

  static Error bad_input(std::string message) { return {ErrorCode::bad_input, std::move(message)}; }
  /// Bad input about the key `key`, whose place whoever holds the input puts in front
  /// (placed()).
  static Error bad_key(std::string key, const std::string& what) {
    Error e{ErrorCode::bad_input, key + ": " + what, std::move(key)};
    return e;
  }
  /// Bad input about `key` as it was written at `place`: "PLACE: KEY: WHAT".
  static Error bad_key_at(SourcePlace place, std::string key, const std::string& what) {
    Error e{ErrorCode::bad_input, place.text() + ": " + key + ": " + what, std::move(key), std::move(place)};
    return e;
  }
  static Error run_failed(std::string message) { return {ErrorCode::run_failed, std::move(message)}; }
  static Error unsupported(std::string message) { return {ErrorCode::unsupported, std::move(message)}; }

  /// Prefixes the message with a context such as "FILE: " or "stage 3: ".
  Error&& with_context(const std::string& context) && {
    message = context + message;
    return std::move(*this);
  }

  /// The error with `where` as its place, rendered in front of the message. A place it
  /// has already is kept: the first to know it knew best.
  Error&& placed(SourcePlace where) && {
    if (place) return std::move(*this);
    message = where.text() + ": " + message;
    place = std::move(where);
    return std::move(*this);
  }
};

/// Either a value or an Error. Access to the wrong side is a programming error.
template <class T> class [[nodiscard]] Result {
public:
  Result(T value) : data_(std::in_place_index<0>, std::move(value)) {}
  Result(Error error) : data_(std::in_place_index<1>, std::move(error)) {}

  bool ok() const noexcept { return data_.index() == 0; }
  explicit operator bool() const noexcept { return ok(); }

  T& value() & { return std::get<0>(data_); }
  const T& value() const& { return std::get<0>(data_); }
  T&& value() && { return std::get<0>(std::move(data_)); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }

  const Error& error() const& { return std::get<1>(data_); }
  Error&& error() && { return std::get<1>(std::move(data_)); }

private:
  std::variant<T, Error> data_;
};

/// A Result that carries no value.
struct Ok {};
using Status = Result<Ok>;

} // namespace actorpipe

/// Returns the error of `expr` (a Result or Status, or a variable holding one) from the
/// calling function, which returns a Result too; goes on when it holds a value:
///   ACTORPIPE_TRY(validate(schedule));
///   auto table = read_table(path);
///   ACTORPIPE_TRY(table);
#define ACTORPIPE_TRY(expr)                                                                                            \
  do {                                                                                                                 \
    if (auto&& actorpipe_try_result_ = (expr); !actorpipe_try_result_)                                                 \
      return std::move(actorpipe_try_result_).error();                                                                 \
  } while (false)

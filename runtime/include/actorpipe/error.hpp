#pragma once

/// Errors as values: every fallible call in the runtime returns a Result.
///
/// An Error carries a code that the CLI maps to an exit status and a message. Where
/// the error is about a key of a job ("model.width") whose file the producer does not
/// know, the key travels as data beside the message, and whoever holds the job puts
/// both in its place (config::place_in_job: "job.toml:4:9: model.width: …"); every other
/// message already names the file, line, key or plugin it is about.

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

struct Error {
  ErrorCode code = ErrorCode::bad_input;
  std::string message;
  /// The job key the error is about ("data.samples"), not yet in `message`; empty when
  /// the message says where it is about.
  std::string key = {};

  static Error bad_input(std::string message) { return {ErrorCode::bad_input, std::move(message)}; }
  /// Bad input about the job key `key`, which its job places (config::place_in_job).
  static Error bad_key(std::string key, std::string message) {
    return {ErrorCode::bad_input, std::move(message), std::move(key)};
  }
  static Error run_failed(std::string message) { return {ErrorCode::run_failed, std::move(message)}; }
  static Error unsupported(std::string message) { return {ErrorCode::unsupported, std::move(message)}; }

  /// Prefixes the message with a context such as "FILE: " or "stage 3: ".
  Error&& with_context(const std::string& context) && {
    message = context + message;
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

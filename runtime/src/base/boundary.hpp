#pragma once

/// The public API's promise that errors are values: an exception that escapes the code
/// behind it (LibTorch's, a failed allocation, a caller's callback) becomes an Error.

#include <actorpipe/error.hpp>

#include "base/text.hpp"

#include <exception>
#include <string>

namespace actorpipe {

/// `f()`, or an Error "WHAT: first line of the exception" when it throws.
template <class F> auto at_boundary(const std::string& what, F&& f) -> decltype(f()) {
  try {
    return f();
  } catch (const std::exception& e) {
    return Error::run_failed(what + ": " + text::message_of(e));
  } catch (...) {
    return Error::run_failed(what + ": an exception that is not a std::exception");
  }
}

} // namespace actorpipe

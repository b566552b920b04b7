#pragma once

/// Work that must run however a scope is left (return, error, exception): the one
/// guard for it, until the standard library's std::scope_exit (library fundamentals
/// v3) reaches the compilers this builds with.

#include <utility>

namespace actorpipe {

template <class F> class ScopeExit {
public:
  explicit ScopeExit(F f) : f_(std::move(f)) {}
  ~ScopeExit() { f_(); }
  ScopeExit(const ScopeExit&) = delete;
  ScopeExit& operator=(const ScopeExit&) = delete;

private:
  F f_;
};

} // namespace actorpipe

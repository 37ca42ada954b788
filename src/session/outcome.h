// Outcome<T>: a value, or a Failure that says what kind of failure it is, so
// that the caller (the CLI, a server) can map it to an exit status or an HTTP
// status without reading the message. The session layer never prints and
// never picks an exit status; it returns these.
#pragma once

#include <string>
#include <utility>
#include <variant>

#include "base/check.h"
#include "base/result.h"

namespace quip::session {

enum class FailureKind {
  Usage,    // the request is wrong (options, a prompt that does not fit, a bad template file)
  BadData,  // a model, a conversation database or another data file cannot be used
  Runtime,  // anything else (no such conversation, an unreachable folder)
};

struct Failure {
  FailureKind kind;
  std::string message;  // one line, naming the subject, the value and what was expected
};

template <class T>
class [[nodiscard]] Outcome {
 public:
  Outcome(T value) : v_(std::in_place_index<0>, std::move(value)) {}  // NOLINT: implicit by design
  Outcome(Failure failure) : v_(std::in_place_index<1>, std::move(failure)) {}  // NOLINT

  bool ok() const { return v_.index() == 0; }
  explicit operator bool() const { return ok(); }

  // PRECONDITIONS: ok().
  T& value() & {
    CHECK(ok());
    return std::get<0>(v_);
  }
  const T& value() const& {
    CHECK(ok());
    return std::get<0>(v_);
  }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }

  // PRECONDITIONS: !ok().
  const Failure& failure() const {
    CHECK(!ok());
    return std::get<1>(v_);
  }

 private:
  std::variant<T, Failure> v_;
};

// An Error from a lower layer, given its kind.
inline Failure failure(FailureKind kind, const Error& e) {
  return Failure{kind, e.message};
}

}  // namespace quip::session

// Result<T>: a value or an Error with a one-line, human-readable message.
// Everything that reads outside input returns one; corrupt input is expected,
// not exceptional. Each layer that passes an error up may prefix context
// ("model.gguf: hyper-parameters: ...").
#pragma once

#include <string>
#include <utility>
#include <variant>

#include "base/check.h"

namespace quip {

struct Error {
  std::string message;

  // Returns this error with "context: " in front of its message.
  [[nodiscard]] Error with_context(std::string_view context) const {
    std::string m(context);
    m += ": ";
    m += message;
    return Error{std::move(m)};
  }
};

template <class T>
class [[nodiscard]] Result {
 public:
  Result(T value) : v_(std::in_place_index<0>, std::move(value)) {}  // NOLINT: implicit by design
  Result(Error error) : v_(std::in_place_index<1>, std::move(error)) {}  // NOLINT

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
  T&& value() && {
    CHECK(ok());
    return std::get<0>(std::move(v_));
  }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }

  // PRECONDITIONS: !ok().
  const Error& error() const {
    CHECK(!ok());
    return std::get<1>(v_);
  }

 private:
  std::variant<T, Error> v_;
};

template <>
class [[nodiscard]] Result<void> {
 public:
  Result() = default;
  Result(Error error) : error_(std::move(error)), ok_(false) {}  // NOLINT: implicit by design

  bool ok() const { return ok_; }
  explicit operator bool() const { return ok_; }
  const Error& error() const {
    CHECK(!ok_);
    return error_;
  }

 private:
  Error error_;
  bool ok_ = true;
};

}  // namespace quip

#include "gguf/writer.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "base/checked.h"
#include "gguf/types.h"

namespace quip::gguf {

namespace {

template <class T>
void put(std::vector<std::byte>& out, T v) {
  std::byte buf[sizeof(T)];
  std::memcpy(buf, &v, sizeof(T));
  out.insert(out.end(), buf, buf + sizeof(T));
}

void put_bytes(std::vector<std::byte>& out, std::string_view s) {
  const auto* p = reinterpret_cast<const std::byte*>(s.data());
  out.insert(out.end(), p, p + s.size());
}

void put_string(std::vector<std::byte>& out, std::string_view s) {
  put<uint64_t>(out, s.size());
  put_bytes(out, s);
}

// Encodes the value only (its type is written by the caller).
void put_value(std::vector<std::byte>& out, const OwnedValue& value) {
  std::visit(
      [&](const auto& v) {
        using T = std::decay_t<decltype(v)>;
        if constexpr (std::is_same_v<T, std::string>) {
          put_string(out, v);
        } else if constexpr (std::is_same_v<T, OwnedArray>) {
          put<uint32_t>(out, static_cast<uint32_t>(v.elem_type));
          put<uint64_t>(out, v.items.size());
          for (const OwnedValue& item : v.items) put_value(out, item);
        } else if constexpr (std::is_same_v<T, bool>) {
          put<uint8_t>(out, v ? 1 : 0);
        } else {
          put<T>(out, v);
        }
      },
      static_cast<const OwnedValue::variant&>(value));
}

Error errno_error(const std::string& path, const char* what) {
  return Error{path + ": " + what + ": " + std::strerror(errno)};
}

Result<void> write_all(int fd, const std::byte* p, size_t n, const std::string& path) {
  while (n > 0) {
    const ssize_t w = ::write(fd, p, n);
    if (w < 0) {
      if (errno == EINTR) continue;
      return errno_error(path, "cannot write");
    }
    p += w;
    n -= static_cast<size_t>(w);
  }
  return {};
}

}  // namespace

void GgufWriter::set(std::string key, OwnedValue value) {
  Entry e{std::move(key), static_cast<uint32_t>(value.index()), {}};
  put_value(e.payload, value);
  entries_.push_back(std::move(e));
}

void GgufWriter::set_raw(std::string key, uint32_t type, std::vector<std::byte> payload) {
  entries_.push_back(Entry{std::move(key), type, std::move(payload)});
}

void GgufWriter::add_tensor(std::string name, uint32_t type, std::vector<uint64_t> shape,
                            std::vector<std::byte> data) {
  const uint64_t size = data.size();
  tensors_.push_back(
      Tensor{std::move(name), type, std::move(shape), std::move(data), size, {}, {}});
}

void GgufWriter::add_zero_tensor(std::string name, uint32_t type, std::vector<uint64_t> shape,
                                 uint64_t zero_bytes) {
  tensors_.push_back(Tensor{std::move(name), type, std::move(shape), {}, zero_bytes, {}, {}});
}

void GgufWriter::add_generated_tensor(std::string name, uint32_t type, std::vector<uint64_t> shape,
                                      uint64_t n_bytes, Fill fill) {
  tensors_.push_back(
      Tensor{std::move(name), type, std::move(shape), {}, n_bytes, {}, std::move(fill)});
}

void GgufWriter::set_tensor_offset(size_t i, uint64_t offset) {
  CHECK(i < tensors_.size());
  tensors_[i].offset_override = offset;
}

uint64_t GgufWriter::alignment() const {
  for (const Entry& e : entries_) {
    if (e.key == "general.alignment" && e.type == static_cast<uint32_t>(ValueType::U32) &&
        e.payload.size() == 4) {
      uint32_t a;
      std::memcpy(&a, e.payload.data(), 4);
      if (is_power_of_two(a)) return a;
    }
  }
  return 32;
}

std::vector<uint64_t> GgufWriter::offsets() const {
  const uint64_t align = alignment();
  std::vector<uint64_t> out;
  uint64_t next = 0;
  for (const Tensor& t : tensors_) {
    const uint64_t at = t.offset_override.value_or(next);
    out.push_back(at);
    uint64_t end;
    if (checked_add(at, t.size, &end) && checked_align_up(end, align, &end)) next = end;
  }
  return out;
}

std::vector<std::byte> GgufWriter::head() const {
  std::vector<std::byte> out;
  out.reserve(4096);  // also keeps GCC 12's -Wstringop-overflow from a false alarm on growth
  put_bytes(out, "GGUF");
  put<uint32_t>(out, version_);
  put<uint64_t>(out, tensors_.size());
  put<uint64_t>(out, entries_.size());
  for (const Entry& e : entries_) {
    put_string(out, e.key);
    put<uint32_t>(out, e.type);
    out.insert(out.end(), e.payload.begin(), e.payload.end());
  }
  const std::vector<uint64_t> at = offsets();
  for (size_t i = 0; i < tensors_.size(); ++i) {
    const Tensor& t = tensors_[i];
    put_string(out, t.name);
    put<uint32_t>(out, static_cast<uint32_t>(t.shape.size()));
    for (uint64_t d : t.shape) put<uint64_t>(out, d);
    put<uint32_t>(out, t.type);
    put<uint64_t>(out, at[i]);
  }
  if (!tensors_.empty()) {
    uint64_t padded;
    CHECK(checked_align_up(out.size(), alignment(), &padded));
    out.resize(padded);
  }
  return out;
}

std::vector<std::byte> GgufWriter::bytes() const {
  std::vector<std::byte> out = head();
  const size_t base = out.size();
  const std::vector<uint64_t> at = offsets();
  for (size_t i = 0; i < tensors_.size(); ++i) {
    const Tensor& t = tensors_[i];
    uint64_t begin, end;
    // An overridden offset that wraps (a broken file on purpose) gets no data.
    if (!checked_add(base, at[i], &begin) || !checked_add(begin, t.size, &end)) continue;
    out.resize(std::max<uint64_t>(out.size(), end));
    if (!t.data.empty()) std::memcpy(out.data() + begin, t.data.data(), t.data.size());
    if (t.fill) t.fill(std::span(out.data() + begin, t.size));
  }
  return out;
}

Result<void> GgufWriter::write(const std::string& path) const {
  std::string tmp = path + ".tmp.XXXXXX";
  const int fd = ::mkstemp(tmp.data());
  if (fd < 0) return errno_error(tmp, "cannot create");
  auto fail = [&](Error e) {
    ::close(fd);
    ::unlink(tmp.c_str());
    return e;
  };

  const std::vector<std::byte> header = head();
  if (auto r = write_all(fd, header.data(), header.size(), path); !r) return fail(r.error());
  const uint64_t base = header.size();
  uint64_t end = base;
  const std::vector<uint64_t> at = offsets();
  for (size_t i = 0; i < tensors_.size(); ++i) {
    const Tensor& t = tensors_[i];
    uint64_t begin, t_end;
    if (!checked_add(base, at[i], &begin) || !checked_add(begin, t.size, &t_end)) continue;
    end = std::max(end, t_end);
    if (t.data.empty() && !t.fill) continue;  // zeros: a hole, sized by ftruncate below
    if (::lseek(fd, static_cast<off_t>(begin), SEEK_SET) < 0) {
      return fail(errno_error(path, "cannot seek"));
    }
    std::vector<std::byte> made;
    if (t.fill) {
      made.resize(t.size);
      t.fill(made);
    }
    const std::vector<std::byte>& data = t.fill ? made : t.data;
    if (auto r = write_all(fd, data.data(), data.size(), path); !r) return fail(r.error());
  }
  if (::ftruncate(fd, static_cast<off_t>(end)) != 0) return fail(errno_error(path, "cannot size"));
  if (::fchmod(fd, 0644) != 0) return fail(errno_error(path, "cannot chmod"));
  if (::fsync(fd) != 0) return fail(errno_error(path, "cannot sync"));
  if (::close(fd) != 0) {
    ::unlink(tmp.c_str());
    return errno_error(path, "cannot close");
  }
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    const Error e = errno_error(path, "cannot rename into place");
    ::unlink(tmp.c_str());
    return e;
  }
  return {};
}

}  // namespace quip::gguf

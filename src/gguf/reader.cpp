#include "gguf/reader.h"

#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <numeric>
#include <type_traits>

#include "base/checked.h"
#include "base/text.h"

namespace quip::gguf {

namespace {

std::string u64s(uint64_t v) {
  return std::to_string(v);
}

std::string shape_string(const TensorInfo& t) {
  std::string s = "[";
  for (uint32_t d = 0; d < t.n_dims; ++d) {
    if (d > 0) s += ", ";
    s += u64s(t.shape[d]);
  }
  return s + "]";
}

}  // namespace

// What a read is for, as a message fragment ("the key of metadata entry 3"),
// built only when a message needs it: a 128k-token vocabulary would otherwise
// build 128k strings that nobody reads. Non-owning, like a string_view: the
// callable it refers to must outlive it.
class What {
 public:
  What(const char* text)  // NOLINT: implicit by design
      : obj_(text), call_([](const void* o) { return std::string(static_cast<const char*>(o)); }) {}

  template <class F>
  requires std::is_invocable_r_v<std::string, const F&> What(
      const F& f)  // NOLINT: implicit by design
      : obj_(&f), call_([](const void* o) { return (*static_cast<const F*>(o))(); }) {}

  std::string operator()() const { return call_(obj_); }

 private:
  const void* obj_;
  std::string (*call_)(const void*);
};

// Walks the bytes once, front to back. Every read checks the bytes left first;
// every count is checked against what the bytes left could hold before
// anything is allocated for it.
class GgufFile::Parser {
 public:
  explicit Parser(GgufFile& f) : f_(f), bytes_(f.bytes_) {}

  Result<void> run() {
    if (auto r = header(); !r) return r;
    const uint64_t metadata_begin = pos_;
    if (auto r = metadata(); !r) return r;
    f_.metadata_bytes_ = bytes_.subspan(metadata_begin, pos_ - metadata_begin);
    if (auto r = alignment(); !r) return r;
    if (auto r = tensor_infos(); !r) return r;
    return tensor_data();
  }

 private:
  Error fail(const std::string& what) const { return Error{f_.prefix_ + what}; }

  uint64_t left() const { return bytes_.size() - pos_; }

  // An error for `need` bytes of `what` that the file does not have.
  Error truncated(uint64_t need, What what) const {
    return fail("truncated: " + what() + " needs " + u64s(need) + " bytes at offset " + u64s(pos_) +
                ", the file has " + u64s(left()) + " left");
  }

  template <class T>
  bool read(T* out) {
    if (left() < sizeof(T)) return false;
    std::memcpy(out, bytes_.data() + pos_, sizeof(T));
    pos_ += sizeof(T);
    return true;
  }

  Result<uint64_t> read_u64(What what) {
    uint64_t v;
    if (!read(&v)) return truncated(8, what);
    return v;
  }

  Result<uint32_t> read_u32(What what) {
    uint32_t v;
    if (!read(&v)) return truncated(4, what);
    return v;
  }

  Result<std::string_view> read_string(What what) {
    uint64_t len;
    if (!read(&len)) return truncated(8, [&] { return "the length of " + what(); });
    // Compared with the bytes left before any arithmetic: a length near 2^64
    // must not wrap into a small number.
    if (len > left()) {
      return fail(what() + ": length " + u64s(len) + " runs past the end of the file (" +
                  u64s(left()) + " bytes left at offset " + u64s(pos_) + ")");
    }
    std::string_view s(reinterpret_cast<const char*>(bytes_.data() + pos_), len);
    pos_ += len;
    return s;
  }

  // Smallest encoding of one element of `type`, to bound counts by the bytes left.
  static uint64_t min_bytes(ValueType type) {
    switch (type) {
      case ValueType::String: return 8;     // length
      case ValueType::Array: return 4 + 8;  // element type, length
      default: return value_type_size(type);
    }
  }

  Result<ValueType> read_value_type(What what) {
    uint32_t t;
    if (!read(&t)) return truncated(4, what);
    if (t >= kValueTypeCount) {
      return fail(what() + ": unknown value type " + u64s(t) + ", expected 0 to " +
                  u64s(kValueTypeCount - 1));
    }
    return static_cast<ValueType>(t);
  }

  template <class T>
  Result<Value> scalar(What what) {
    T v;
    if (!read(&v)) return truncated(sizeof(T), what);
    return Value(std::in_place_type<T>, v);
  }

  Result<Value> value(ValueType type, What what, uint32_t nesting) {
    switch (type) {
      case ValueType::U8: return scalar<uint8_t>(what);
      case ValueType::I8: return scalar<int8_t>(what);
      case ValueType::U16: return scalar<uint16_t>(what);
      case ValueType::I16: return scalar<int16_t>(what);
      case ValueType::U32: return scalar<uint32_t>(what);
      case ValueType::I32: return scalar<int32_t>(what);
      case ValueType::F32: return scalar<float>(what);
      case ValueType::U64: return scalar<uint64_t>(what);
      case ValueType::I64: return scalar<int64_t>(what);
      case ValueType::F64: return scalar<double>(what);
      case ValueType::Bool: {
        uint8_t b;
        if (!read(&b)) return truncated(1, what);
        if (b > 1) return fail(what() + ": bool value " + u64s(b) + ", expected 0 or 1");
        return Value(b == 1);
      }
      case ValueType::String: {
        auto s = read_string(what);
        if (!s) return s.error();
        return Value(std::in_place_type<std::string_view>, *s);
      }
      case ValueType::Array: {
        auto a = array(what, nesting + 1);
        if (!a) return a.error();
        return Value(std::in_place_type<ArrayView>, std::move(*a));
      }
    }
    CHECK(false);
    return Error{};
  }

  Result<ArrayView> array(What what, uint32_t nesting) {
    if (nesting > kMaxArrayNesting) {
      return fail(what() + ": arrays nested " + u64s(nesting) + " deep, expected at most " +
                  u64s(kMaxArrayNesting));
    }
    ArrayView a;
    auto elem = read_value_type([&] { return "the elements of " + what(); });
    if (!elem) return elem.error();
    a.elem_type = *elem;
    auto len = read_u64([&] { return "the length of " + what(); });
    if (!len) return len.error();
    a.length = *len;

    uint64_t need;
    if (!checked_mul(a.length, min_bytes(a.elem_type), &need) || need > left()) {
      return fail(what() + ": array of " + u64s(a.length) + " " +
                  std::string(value_type_name(a.elem_type)) +
                  " elements runs past the end of the file (" + u64s(left()) +
                  " bytes left at offset " + u64s(pos_) + ")");
    }
    uint64_t i = 0;
    const auto element = [&] { return what() + " element " + u64s(i); };
    switch (a.elem_type) {
      case ValueType::String:
        a.strings.reserve(a.length);
        for (; i < a.length; ++i) {
          auto s = read_string(element);
          if (!s) return s.error();
          a.strings.push_back(*s);
        }
        break;
      case ValueType::Array:
        a.arrays.reserve(a.length);
        for (; i < a.length; ++i) {
          auto inner = array(element, nesting + 1);
          if (!inner) return inner.error();
          a.arrays.push_back(std::move(*inner));
        }
        break;
      case ValueType::Bool:
        a.raw = bytes_.data() + pos_;
        for (; i < a.length; ++i) {
          const auto b = static_cast<uint8_t>(a.raw[i]);
          if (b > 1) return fail(element() + ": bool value " + u64s(b) + ", expected 0 or 1");
        }
        pos_ += need;
        break;
      default:
        a.raw = bytes_.data() + pos_;
        pos_ += need;
        break;
    }
    return a;
  }

  Result<void> header() {
    char magic[4];
    if (!read(&magic)) return truncated(4, "the magic");
    if (std::memcmp(magic, "GGUF", 4) != 0) {
      return fail("not a GGUF file: magic is '" + printable(std::string_view(magic, 4)) +
                  "', expected 'GGUF'");
    }
    auto version = read_u32("the version");
    if (!version) return version.error();
    if (*version != 2 && *version != 3) {
      return fail("unsupported GGUF version " + u64s(*version) + ", expected 2 or 3");
    }
    f_.version_ = *version;

    auto n_tensors = read_u64("the tensor count");
    if (!n_tensors) return n_tensors.error();
    auto n_kv = read_u64("the metadata count");
    if (!n_kv) return n_kv.error();
    n_tensors_ = *n_tensors;
    n_kv_ = *n_kv;

    // Smallest encodings: a key length, a type and a u8; a name length, a
    // dimension count, a type and an offset. (Entries this small are invalid,
    // but are then reported for what is wrong with them.)
    constexpr uint64_t kMinKv = 8 + 4 + 1;
    constexpr uint64_t kMinTensor = 8 + 4 + 4 + 8;
    if (n_kv_ > left() / kMinKv) {
      return fail("metadata count " + u64s(n_kv_) + " is more than the file can hold (at most " +
                  u64s(left() / kMinKv) + " in the " + u64s(left()) + " bytes after the header)");
    }
    if (n_tensors_ > left() / kMinTensor) {
      return fail("tensor count " + u64s(n_tensors_) + " is more than the file can hold (at most " +
                  u64s(left() / kMinTensor) + " in the " + u64s(left()) +
                  " bytes after the header)");
    }
    return {};
  }

  Result<void> metadata() {
    f_.metadata_.reserve(n_kv_);
    for (uint64_t i = 0; i < n_kv_; ++i) {
      const auto entry = [&] { return "metadata entry " + u64s(i); };
      auto key = read_string([&] { return "the key of " + entry(); });
      if (!key) return key.error();
      if (key->empty()) return fail(entry() + ": empty key");
      if (key->size() > kMaxKeyBytes) {
        return fail(entry() + ": key is " + u64s(key->size()) + " bytes long, expected at most " +
                    u64s(kMaxKeyBytes));
      }
      const auto what = [&] { return "key '" + printable(*key) + "'"; };
      auto [it, inserted] = f_.metadata_index_.emplace(*key, i);
      if (!inserted) {
        return fail("duplicate " + what() + " (metadata entries " + u64s(it->second) + " and " +
                    u64s(i) + ")");
      }
      auto type = read_value_type(what);
      if (!type) return type.error();
      auto v = value(*type, what, 0);
      if (!v) return v.error();
      f_.metadata_.push_back(KeyValue{*key, std::move(*v)});
    }
    return {};
  }

  Result<void> alignment() {
    const Value* v = f_.find("general.alignment");
    if (v == nullptr) return {};
    const uint32_t* a = std::get_if<uint32_t>(v);
    if (a == nullptr) {
      return f_.key_type_error("general.alignment", type_of(*v), ValueType::U32);
    }
    if (!is_power_of_two(*a)) {
      return fail("key 'general.alignment' is " + u64s(*a) + ", expected a power of two");
    }
    f_.alignment_ = *a;
    return {};
  }

  Result<void> tensor_infos() {
    f_.tensors_.reserve(n_tensors_);
    for (uint64_t i = 0; i < n_tensors_; ++i) {
      TensorInfo t;
      auto name = read_string([&] { return "the name of tensor " + u64s(i); });
      if (!name) return name.error();
      t.name = *name;
      const auto what = [&] { return "tensor " + u64s(i) + " '" + printable(t.name) + "'"; };
      if (t.name.empty()) return fail("tensor " + u64s(i) + ": empty name");
      if (t.name.size() > kMaxTensorNameBytes) {
        return fail(what() + ": name is " + u64s(t.name.size()) + " bytes long, expected at most " +
                    u64s(kMaxTensorNameBytes));
      }
      auto [it, inserted] = f_.tensor_index_.emplace(t.name, i);
      if (!inserted) {
        return fail("duplicate tensor name '" + printable(t.name) + "' (tensors " +
                    u64s(it->second) + " and " + u64s(i) + ")");
      }

      auto n_dims = read_u32([&] { return "the dimension count of " + what(); });
      if (!n_dims) return n_dims.error();
      if (*n_dims < 1 || *n_dims > kMaxDims) {
        return fail(what() + ": " + u64s(*n_dims) + " dimensions, expected 1 to " + u64s(kMaxDims));
      }
      t.n_dims = *n_dims;
      t.n_elements = 1;
      for (uint32_t d = 0; d < t.n_dims; ++d) {
        auto dim = read_u64([&] { return "dimension " + u64s(d) + " of " + what(); });
        if (!dim) return dim.error();
        if (*dim == 0 || *dim > uint64_t{INT64_MAX}) {
          return fail(what() + ": dimension " + u64s(d) + " is " +
                      (*dim == 0 ? std::string("0")
                                 : std::to_string(static_cast<int64_t>(*dim)) + " (as int64)") +
                      ", expected at least 1");
        }
        t.shape[d] = *dim;
        if (!checked_mul(t.n_elements, *dim, &t.n_elements) || t.n_elements > uint64_t{INT64_MAX}) {
          return fail(what() + ": element count of shape " + shape_string(t) +
                      " overflows 63 bits");
        }
      }

      auto type = read_u32([&] { return "the type of " + what(); });
      if (!type) return type.error();
      const std::optional<TypeTraits> traits = type_traits(*type);
      if (!traits) {
        return fail(what() + ": invalid type " + u64s(*type) + ", expected a ggml type id below " +
                    u64s(kGgmlTypeIdEnd) + " (not 4, 5, 31-33 or 36-38)");
      }
      t.type = *traits;
      if (t.shape[0] % t.type.block_size != 0) {
        return fail(what() + ": first dimension " + u64s(t.shape[0]) +
                    " is not a multiple of the " + std::string(t.type.name) + " block size " +
                    u64s(t.type.block_size));
      }
      if (!checked_mul(t.n_elements / t.type.block_size, t.type.block_bytes, &t.n_bytes)) {
        return fail(what() + ": byte size of " + u64s(t.n_elements) + " " +
                    std::string(t.type.name) + " elements overflows 64 bits");
      }

      auto offset = read_u64([&] { return "the data offset of " + what(); });
      if (!offset) return offset.error();
      t.offset = *offset;
      if (t.offset % f_.alignment_ != 0) {
        return fail(what() + ": data offset " + u64s(t.offset) +
                    " is not a multiple of the alignment " + u64s(f_.alignment_));
      }
      f_.tensors_.push_back(t);
    }
    return {};
  }

  Result<void> tensor_data() {
    uint64_t data_offset;
    if (!checked_align_up(pos_, f_.alignment_, &data_offset)) {
      return fail("data section offset overflows");  // unreachable for real sizes
    }
    if (f_.tensors_.empty()) {
      // A file without tensors (a vocabulary) may end right after its metadata.
      f_.data_offset_ = std::min<uint64_t>(data_offset, bytes_.size());
      return {};
    }
    if (data_offset > bytes_.size()) {
      return fail("truncated: the tensor data section starts at offset " + u64s(data_offset) +
                  ", past the end of the file (size " + u64s(bytes_.size()) + ")");
    }
    f_.data_offset_ = data_offset;
    const uint64_t data_size = bytes_.size() - data_offset;

    for (TensorInfo& t : f_.tensors_) {
      uint64_t end;
      if (!checked_add(t.offset, t.n_bytes, &end) || end > data_size) {
        return fail("tensor '" + printable(t.name) + "': data at offset " + u64s(t.offset) +
                    " of " + u64s(t.n_bytes) +
                    " bytes runs past the end of the file (the data "
                    "section holds " +
                    u64s(data_size) + " bytes)");
      }
      t.data = bytes_.subspan(data_offset + t.offset, t.n_bytes);
    }

    std::vector<size_t> order(f_.tensors_.size());
    std::iota(order.begin(), order.end(), size_t{0});
    std::sort(order.begin(), order.end(),
              [&](size_t a, size_t b) { return f_.tensors_[a].offset < f_.tensors_[b].offset; });
    for (size_t k = 1; k < order.size(); ++k) {
      const TensorInfo& prev = f_.tensors_[order[k - 1]];
      const TensorInfo& cur = f_.tensors_[order[k]];
      if (prev.offset + prev.n_bytes > cur.offset) {
        return fail("tensors '" + printable(prev.name) + "' and '" + printable(cur.name) +
                    "' overlap: the first occupies [" + u64s(prev.offset) + ", " +
                    u64s(prev.offset + prev.n_bytes) + "), the second starts at " +
                    u64s(cur.offset));
      }
    }
    return {};
  }

  GgufFile& f_;
  std::span<const std::byte> bytes_;
  uint64_t pos_ = 0;
  uint64_t n_tensors_ = 0;
  uint64_t n_kv_ = 0;
};

Result<GgufFile> GgufFile::parse(std::string name, std::span<const std::byte> bytes) {
  GgufFile f;
  f.name_ = std::move(name);
  f.prefix_ = printable(f.name_, 4096) + ": ";
  f.bytes_ = bytes;
  if (auto r = Parser(f).run(); !r) return r.error();
  return f;
}

Result<GgufFile> GgufFile::open_one(const std::string& path) {
  auto mapping = MappedFile::open(path);
  if (!mapping) return mapping.error();
  const std::span<const std::byte> bytes = mapping->bytes();
  auto f = parse(path, bytes);
  if (!f) return f.error();
  f->mapping_ = std::move(*mapping);  // the mapped addresses do not move with it
  return f;
}

Result<GgufFile> GgufFile::open(const std::string& path) {
  auto f = open_one(path);
  if (!f) return f.error();
  if (auto r = f->open_parts(); !r) return r.error();
  return f;
}

// llama.cpp's gguf-split writes split.no (from 0), split.count and
// split.tensors.count into every part, the model's other metadata into the
// first only, and names part i PREFIX-0000i-of-0000N.gguf (llama_split_path).
Result<void> GgufFile::open_parts() {
  constexpr std::string_view kCount = "split.count", kNo = "split.no",
                             kTensors = "split.tensors.count";
  if (find(kCount) == nullptr) return {};
  auto count = get_uint(kCount);
  if (!count) return count.error();
  if (*count <= 1) return {};
  if (*count > 99999) {
    return Error{prefix_ + "key 'split.count' is " + u64s(*count) + ", expected at most 99999"};
  }
  auto no = get_uint(kNo);
  if (!no) return no.error();
  char tail[64];
  std::snprintf(tail, sizeof tail, "-00001-of-%05" PRIu64 ".gguf", *count);
  if (*no != 0) {
    return Error{prefix_ + "part " + u64s(*no + 1) + " of " + u64s(*count) +
                 " of a split model: open its first part (" + tail + ")"};
  }
  if (!name_.ends_with(tail)) {
    return Error{prefix_ + "the first of " + u64s(*count) +
                 " parts of a split model must be named PREFIX" + tail + " to find the others"};
  }
  const std::string base = name_.substr(0, name_.size() - std::strlen(tail));
  for (uint64_t i = 1; i < *count; ++i) {
    std::snprintf(tail, sizeof tail, "-%05" PRIu64 "-of-%05" PRIu64 ".gguf", i + 1, *count);
    auto part = open_one(base + tail);
    if (!part)
      return part.error().with_context(printable(name_, 4096) + ": split part " + u64s(i + 1));
    auto part_no = part->get_uint(kNo);
    if (!part_no) return part_no.error();
    auto part_count = part->get_uint(kCount);
    if (!part_count) return part_count.error();
    if (*part_no != i || *part_count != *count) {
      return Error{part->prefix_ + "key 'split.no' is " + u64s(*part_no) + " of 'split.count' " +
                   u64s(*part_count) + ", expected " + u64s(i) + " of " + u64s(*count)};
    }
    for (const TensorInfo& t : part->tensors_) {
      if (!tensor_index_.emplace(t.name, tensors_.size()).second) {
        return Error{part->prefix_ + "tensor '" + printable(t.name) +
                     "' is in an earlier part of the split model too"};
      }
      tensors_.push_back(t);
    }
    parts_.push_back(std::move(*part));
  }
  if (find(kTensors) != nullptr) {
    auto n = get_uint(kTensors);
    if (!n) return n.error();
    if (*n != tensors_.size()) {
      return Error{prefix_ + "key 'split.tensors.count' is " + u64s(*n) + ", but the " +
                   u64s(*count) + " parts hold " + u64s(tensors_.size()) + " tensors"};
    }
  }
  return {};
}

uint64_t GgufFile::total_size() const {
  uint64_t n = file_size();
  for (const GgufFile& p : parts_) n += p.file_size();
  return n;
}

const Value* GgufFile::find(std::string_view key) const {
  auto it = metadata_index_.find(key);
  return it == metadata_index_.end() ? nullptr : &metadata_[it->second].value;
}

const TensorInfo* GgufFile::find_tensor(std::string_view name) const {
  auto it = tensor_index_.find(name);
  return it == tensor_index_.end() ? nullptr : &tensors_[it->second];
}

Error GgufFile::key_type_error(std::string_view key, ValueType found, ValueType expected) const {
  return Error{prefix_ + "key '" + printable(key) + "' has type " +
               std::string(value_type_name(found)) + ", expected " +
               std::string(value_type_name(expected))};
}

Result<uint64_t> GgufFile::get_uint(std::string_view key) const {
  const Value* v = find(key);
  if (v == nullptr) return Error{prefix_ + "key '" + printable(key) + "' not found"};
  return std::visit(
      [&](const auto& x) -> Result<uint64_t> {
        using T = std::decay_t<decltype(x)>;
        if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) {
          if constexpr (std::is_signed_v<T>) {
            if (x < 0) {
              return Error{prefix_ + "key '" + printable(key) + "' is " + std::to_string(x) +
                           ", expected a non-negative integer"};
            }
          }
          return static_cast<uint64_t>(x);
        } else {
          return Error{prefix_ + "key '" + printable(key) + "' has type " +
                       std::string(value_type_name(type_of(*v))) + ", expected an integer"};
        }
      },
      *v);
}

Result<const ArrayView*> GgufFile::get_array(std::string_view key, ValueType elem) const {
  const Value* v = find(key);
  if (v == nullptr) return Error{prefix_ + "key '" + printable(key) + "' not found"};
  const auto* p = std::get_if<ArrayView>(v);
  if (p == nullptr) return key_type_error(key, type_of(*v), ValueType::Array);
  if (p->elem_type != elem) {
    return Error{prefix_ + "key '" + printable(key) + "' is an array of " +
                 std::string(value_type_name(p->elem_type)) + ", expected an array of " +
                 std::string(value_type_name(elem))};
  }
  return p;
}

}  // namespace quip::gguf

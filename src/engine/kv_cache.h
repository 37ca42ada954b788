// The keys and values of every evaluated position, in half precision as
// llama.cpp keeps them by default. Grows to the positions actually used;
// can be cut back to a prefix and its rows saved and restored byte for byte
// (the prefix cache keeps these bytes on disk).
//
// Layout, per layer: k (capacity, n_head_kv * head_dim) halves, v the same;
// position p's row starts at p * row_width(). With values in the keys
// (latent attention, whose value is the first part of each key row), there
// is no v of its own: v(layer) is k(layer).
// Thread safety: none; one Forward owns and writes it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "base/result.h"

namespace quip::engine {

class KvCache {
 public:
  KvCache(uint32_t n_layer, uint32_t row_width, bool values_in_keys = false)
      : row_width_(row_width),
        values_in_keys_(values_in_keys),
        k_(n_layer),
        v_(values_in_keys ? 0 : n_layer) {}

  size_t size() const { return size_; }
  size_t capacity() const { return capacity_; }
  uint32_t row_width() const { return row_width_; }
  uint32_t n_layer() const { return static_cast<uint32_t>(k_.size()); }
  bool values_in_keys() const { return values_in_keys_; }

  // Makes room for n_pos positions, keeping what is held.
  void reserve(size_t n_pos);

  // Keeps the first n_pos positions. PRECONDITIONS: n_pos <= size().
  void truncate(size_t n_pos);

  // Marks positions [size(), n_pos) as written. PRECONDITIONS: n_pos <= capacity().
  void grow_to(size_t n_pos);

  uint16_t* k(uint32_t layer) { return k_[layer].data(); }
  uint16_t* v(uint32_t layer) { return values_in_keys_ ? k(layer) : v_[layer].data(); }
  const uint16_t* k(uint32_t layer) const { return k_[layer].data(); }
  const uint16_t* v(uint32_t layer) const { return values_in_keys_ ? k(layer) : v_[layer].data(); }

  // Bytes that save() writes per position: every layer's key and value row
  // (its key row alone with values in the keys).
  size_t position_bytes() const { return (k_.size() + v_.size()) * row_width_ * sizeof(uint16_t); }

  // Appends the rows of positions [begin, end) to `out`: for each layer, its
  // key rows, then its value rows (where it has its own). PRECONDITIONS: begin <= end <= size().
  void save(size_t begin, size_t end, std::vector<uint8_t>& out) const;

  // Appends n_pos positions from bytes written by save(). Errors when the
  // byte count does not fit n_pos positions of this cache's shape.
  [[nodiscard]] Result<void> restore(std::span<const uint8_t> bytes, size_t n_pos);

 private:
  uint32_t row_width_;
  bool values_in_keys_;
  size_t size_ = 0, capacity_ = 0;
  std::vector<std::vector<uint16_t>> k_,
      v_;  // (layer) (capacity, row_width); v_ empty with values in keys
};

}  // namespace quip::engine

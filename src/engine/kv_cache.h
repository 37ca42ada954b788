// The keys and values of every evaluated position, in half precision as
// llama.cpp keeps them by default. Grows to the positions actually used;
// can be cut back to a prefix and its rows saved and restored byte for byte
// (the prefix cache keeps these bytes on disk).
//
// Layout, per layer: k (capacity, n_head_kv * head_dim) halves, v the same;
// position p's row starts at p * row_width(layer). A layer may have no rows
// (gemma4's layers that read an earlier layer's). With values in the keys
// (latent attention, whose value is the first part of each key row), there
// is no v of its own: v(layer) is k(layer).
//
// A recurrent layer (Gated DeltaNet) has no rows: it carries floats from
// each token to the next instead (a convolution's last inputs, and a
// state), which describe the whole sequence so far. Those cannot be cut
// back to a prefix, only saved whole and restored whole (the prefix cache
// keeps such snapshots at some positions).
// Thread safety: none; one Forward owns and writes it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "base/result.h"

namespace quip::engine {

// What each recurrent layer carries: floats of its convolution's inputs
// and of its state.
struct RecurrentShape {
  uint64_t conv_floats = 0, state_floats = 0;
};

class KvCache {
 public:
  // `recurrent`: per layer, 1 where it is recurrent (of `shape`), or empty
  // where none is.
  KvCache(uint32_t n_layer, uint32_t row_width, bool values_in_keys = false,
          const std::vector<uint8_t>& recurrent = {}, RecurrentShape shape = {});
  // A cache whose layers' rows differ in width (gemma4): widths[l] halves
  // per key and value row of layer l, 0 in a layer without rows of its own
  // (one that reads another layer's).
  explicit KvCache(std::vector<uint32_t> widths);

  size_t size() const { return size_; }
  size_t capacity() const { return capacity_; }
  // The widest layer's row (all layers' in most models).
  uint32_t row_width() const { return row_width_; }
  uint32_t row_width(uint32_t layer) const { return widths_[layer]; }
  // The rows a position holds, as layers of one width (what the prefix
  // cache's files record): row_layers() of row_width(), or where the
  // widths differ, one layer of all their widths.
  struct RowShape {
    uint32_t n_layer, row_width;
  };
  RowShape row_shape() const;
  uint32_t n_layer() const { return static_cast<uint32_t>(k_.size()); }
  // The layers with rows (all but the recurrent ones and those that read
  // another's).
  uint32_t row_layers() const { return n_row_layers_; }
  bool values_in_keys() const { return values_in_keys_; }
  bool has_recurrent() const { return n_recurrent_ != 0; }

  // Makes room for n_pos positions, keeping what is held.
  void reserve(size_t n_pos);

  // Keeps the first n_pos positions; 0 also starts the recurrent layers
  // anew. PRECONDITIONS: n_pos <= size(), and with recurrent layers n_pos
  // is size() or 0.
  void truncate(size_t n_pos);

  // Marks positions [size(), n_pos) as written. PRECONDITIONS: n_pos <= capacity().
  void grow_to(size_t n_pos);

  uint16_t* k(uint32_t layer) { return k_[layer].data(); }
  uint16_t* v(uint32_t layer) { return values_in_keys_ ? k(layer) : v_[layer].data(); }
  const uint16_t* k(uint32_t layer) const { return k_[layer].data(); }
  const uint16_t* v(uint32_t layer) const { return values_in_keys_ ? k(layer) : v_[layer].data(); }

  // A recurrent layer's convolution inputs ((conv_kernel - 1) x channels,
  // the oldest first) and state (per value head, head_dim x head_dim).
  float* conv(uint32_t layer) { return conv_[layer].data(); }
  float* state(uint32_t layer) { return state_[layer].data(); }

  // Bytes that save() writes per position: every layer's key and value row
  // (its key row alone with values in the keys).
  size_t position_bytes() const {
    return size_t{halves_per_position_} * (values_in_keys_ ? 1 : 2) * sizeof(uint16_t);
  }

  // Bytes that save_state() writes: every recurrent layer's floats (0
  // without recurrent layers).
  size_t state_bytes() const;
  // Appends the recurrent layers' floats after size() positions.
  void save_state(std::vector<uint8_t>& out) const;
  // Sets them from bytes written by save_state() (after the positions the
  // cache holds, which the caller restores too). Errors when the byte count
  // does not fit.
  [[nodiscard]] Result<void> restore_state(std::span<const uint8_t> bytes);

  // Appends the rows of positions [begin, end) to `out`: for each layer, its
  // key rows, then its value rows (where it has its own). PRECONDITIONS: begin <= end <= size().
  void save(size_t begin, size_t end, std::vector<uint8_t>& out) const;

  // Appends n_pos positions from bytes written by save(). Errors when the
  // byte count does not fit n_pos positions of this cache's shape.
  [[nodiscard]] Result<void> restore(std::span<const uint8_t> bytes, size_t n_pos);

 private:
  void count_rows();  // n_row_layers_ and halves_per_position_ from widths_

  uint32_t row_width_;
  std::vector<uint32_t> widths_;  // (layer), 0 where it has no rows
  uint32_t n_row_layers_ = 0;
  size_t halves_per_position_ = 0;  // of one side: the widths' sum
  bool values_in_keys_;
  size_t size_ = 0, capacity_ = 0;
  // (layer) (capacity, row_width); v_ empty with values in keys; both
  // empty in a recurrent layer.
  std::vector<std::vector<uint16_t>> k_, v_;
  uint32_t n_recurrent_ = 0;
  std::vector<std::vector<float>> conv_, state_;  // (layer), empty but in recurrent ones
};

}  // namespace quip::engine

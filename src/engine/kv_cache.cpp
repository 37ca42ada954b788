#include "engine/kv_cache.h"

#include <algorithm>
#include <cstring>
#include <string>

#include "base/check.h"

namespace quip::engine {

KvCache::KvCache(uint32_t n_layer, uint32_t row_width, bool values_in_keys,
                 const std::vector<uint8_t>& recurrent, RecurrentShape shape)
    : row_width_(row_width),
      values_in_keys_(values_in_keys),
      k_(n_layer),
      v_(values_in_keys ? 0 : n_layer),
      conv_(n_layer),
      state_(n_layer) {
  CHECK(recurrent.empty() || recurrent.size() == n_layer);
  widths_.assign(n_layer, row_width);
  for (uint32_t l = 0; l < recurrent.size(); ++l) {
    if (recurrent[l] == 0) continue;
    ++n_recurrent_;
    widths_[l] = 0;
    conv_[l].assign(shape.conv_floats, 0.0f);
    state_[l].assign(shape.state_floats, 0.0f);
  }
  count_rows();
}

KvCache::KvCache(std::vector<uint32_t> widths)
    : row_width_(widths.empty() ? 0 : *std::max_element(widths.begin(), widths.end())),
      widths_(std::move(widths)),
      values_in_keys_(false),
      k_(widths_.size()),
      v_(widths_.size()),
      conv_(widths_.size()),
      state_(widths_.size()) {
  count_rows();
}

void KvCache::count_rows() {
  n_row_layers_ = 0, halves_per_position_ = 0;
  for (uint32_t w : widths_) {
    n_row_layers_ += w != 0 ? 1 : 0;
    halves_per_position_ += w;
  }
}

KvCache::RowShape KvCache::row_shape() const {
  const bool uniform = std::all_of(widths_.begin(), widths_.end(),
                                   [&](uint32_t w) { return w == 0 || w == row_width_; });
  if (uniform) return {n_row_layers_, row_width_};
  return {1, static_cast<uint32_t>(halves_per_position_)};
}

void KvCache::reserve(size_t n_pos) {
  if (n_pos <= capacity_) return;
  for (auto* side : {&k_, &v_}) {
    for (size_t l = 0; l < side->size(); ++l) {
      if (widths_[l] != 0) (*side)[l].resize(n_pos * widths_[l]);
    }
  }
  capacity_ = n_pos;
}

void KvCache::truncate(size_t n_pos) {
  CHECK(n_pos <= size_);
  if (n_pos == size_) return;
  CHECK(n_recurrent_ == 0 || n_pos == 0);
  for (auto* floats : {&conv_, &state_}) {
    for (auto& layer : *floats) std::fill(layer.begin(), layer.end(), 0.0f);
  }
  size_ = n_pos;
}

size_t KvCache::state_bytes() const {
  size_t floats = 0;
  for (size_t l = 0; l < conv_.size(); ++l) floats += conv_[l].size() + state_[l].size();
  return floats * sizeof(float);
}

void KvCache::save_state(std::vector<uint8_t>& out) const {
  for (size_t l = 0; l < conv_.size(); ++l) {
    for (const auto* floats : {&conv_[l], &state_[l]}) {
      if (floats->empty()) continue;  // a layer with rows
      const auto* p = reinterpret_cast<const uint8_t*>(floats->data());
      out.insert(out.end(), p, p + floats->size() * sizeof(float));
    }
  }
}

Result<void> KvCache::restore_state(std::span<const uint8_t> bytes) {
  if (bytes.size() != state_bytes()) {
    return Error{"a recurrent state of " + std::to_string(bytes.size()) + " bytes, expected " +
                 std::to_string(state_bytes())};
  }
  const uint8_t* p = bytes.data();
  for (size_t l = 0; l < conv_.size(); ++l) {
    for (auto* floats : {&conv_[l], &state_[l]}) {
      if (floats->empty()) continue;  // a layer with rows
      std::memcpy(floats->data(), p, floats->size() * sizeof(float));
      p += floats->size() * sizeof(float);
    }
  }
  return {};
}

void KvCache::grow_to(size_t n_pos) {
  CHECK(n_pos <= capacity_);
  size_ = std::max(size_, n_pos);
}

void KvCache::save(size_t begin, size_t end, std::vector<uint8_t>& out) const {
  CHECK(begin <= end && end <= size_);
  for (size_t l = 0; l < k_.size(); ++l) {
    if (widths_[l] == 0) continue;
    const size_t bytes = (end - begin) * widths_[l] * sizeof(uint16_t);
    for (const auto* side : {&k_, &v_}) {
      if (side->empty()) continue;
      const auto* p = reinterpret_cast<const uint8_t*>((*side)[l].data() + begin * widths_[l]);
      out.insert(out.end(), p, p + bytes);
    }
  }
}

Result<void> KvCache::restore(std::span<const uint8_t> bytes, size_t n_pos) {
  if (bytes.size() != n_pos * position_bytes()) {
    return Error{"KV rows of " + std::to_string(bytes.size()) + " bytes do not hold " +
                 std::to_string(n_pos) + " positions of " + std::to_string(position_bytes()) +
                 " bytes"};
  }
  reserve(size_ + n_pos);
  const uint8_t* p = bytes.data();
  for (size_t l = 0; l < k_.size(); ++l) {
    if (widths_[l] == 0) continue;
    const size_t side_bytes = n_pos * widths_[l] * sizeof(uint16_t);
    for (auto* side : {&k_, &v_}) {
      if (side->empty()) continue;
      std::memcpy((*side)[l].data() + size_ * widths_[l], p, side_bytes);
      p += side_bytes;
    }
  }
  size_ += n_pos;
  return {};
}

}  // namespace quip::engine

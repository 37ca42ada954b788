#include "engine/kv_cache.h"

#include <cstring>
#include <string>

#include "base/check.h"

namespace quip::engine {

void KvCache::reserve(size_t n_pos) {
  if (n_pos <= capacity_) return;
  for (auto* side : {&k_, &v_}) {
    for (auto& rows : *side) rows.resize(n_pos * row_width_);
  }
  capacity_ = n_pos;
}

void KvCache::truncate(size_t n_pos) {
  CHECK(n_pos <= size_);
  size_ = n_pos;
}

void KvCache::grow_to(size_t n_pos) {
  CHECK(n_pos <= capacity_);
  size_ = std::max(size_, n_pos);
}

void KvCache::save(size_t begin, size_t end, std::vector<uint8_t>& out) const {
  CHECK(begin <= end && end <= size_);
  const size_t bytes = (end - begin) * row_width_ * sizeof(uint16_t);
  for (size_t l = 0; l < k_.size(); ++l) {
    for (const auto* side : {&k_, &v_}) {
      if (side->empty()) continue;
      const auto* p = reinterpret_cast<const uint8_t*>((*side)[l].data() + begin * row_width_);
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
  const size_t side_bytes = n_pos * row_width_ * sizeof(uint16_t);
  const uint8_t* p = bytes.data();
  for (size_t l = 0; l < k_.size(); ++l) {
    for (auto* side : {&k_, &v_}) {
      if (side->empty()) continue;
      std::memcpy((*side)[l].data() + size_ * row_width_, p, side_bytes);
      p += side_bytes;
    }
  }
  size_ += n_pos;
  return {};
}

}  // namespace quip::engine

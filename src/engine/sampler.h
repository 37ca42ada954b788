// Choosing the next token from logits: repetition penalty, then top-k,
// top-p and min-p truncation, then temperature, then a draw from a seeded
// generator (llama.cpp's default order). Temperature 0 is greedy: the
// highest logit after the penalty.
//
// Deterministic: the same settings, seed and sequence of calls give the same
// tokens on any machine (the generator and the draw are quip's own, not
// the standard library's implementation-defined distributions).
// Thread safety: one Sampler per generation; it is not shared.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "base/result.h"

namespace quip::engine {

struct SamplerSettings {
  float temperature = 0.0f;     // 0: greedy
  int32_t top_k = 40;           // 0: no limit
  float top_p = 0.95f;          // 1: no limit
  float min_p = 0.05f;          // 0: no limit
  float repeat_penalty = 1.0f;  // 1: none (CTRL, Keskar et al. 2019)
  int32_t repeat_last_n = 64;   // how many recent tokens the penalty looks at
  uint64_t seed = 0;
};

class Sampler {
 public:
  // Errors name the setting, its value and the range allowed.
  static Result<Sampler> create(const SamplerSettings& settings);

  // The next token. `history` is the tokens so far (prompt and generated);
  // the penalty reads its last repeat_last_n.
  // PRECONDITIONS: logits is not empty.
  int32_t sample(std::span<const float> logits, std::span<const int32_t> history);

 private:
  explicit Sampler(const SamplerSettings& s) : s_(s), state_(s.seed) {}
  uint64_t next_u64();  // splitmix64
  double next_unit();   // uniform in [0, 1)

  SamplerSettings s_;
  uint64_t state_;
  struct Candidate {
    int32_t id;
    float logit;
  };
  std::vector<Candidate> candidates_;
  std::vector<float> penalized_;
};

}  // namespace quip::engine

#include "engine/sampler.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>
#include <unordered_set>

#include "base/check.h"

namespace quip::engine {

Result<Sampler> Sampler::create(const SamplerSettings& s) {
  const auto bad = [](const char* name, double v, const char* allowed) {
    char value[32];
    std::snprintf(value, sizeof value, "%g", v);  // -1, not -1.000000
    return Error{std::string("sampler setting ") + name + " is " + value + ", expected " + allowed};
  };
  if (!(s.temperature >= 0.0f) || !std::isfinite(s.temperature)) {
    return bad("temperature", s.temperature, "a number >= 0");
  }
  if (s.top_k < 0) return bad("top_k", s.top_k, "an integer >= 0 (0: no limit)");
  if (!(s.top_p > 0.0f && s.top_p <= 1.0f)) return bad("top_p", s.top_p, "a number in (0, 1]");
  if (!(s.min_p >= 0.0f && s.min_p <= 1.0f)) return bad("min_p", s.min_p, "a number in [0, 1]");
  if (!(s.repeat_penalty > 0.0f) || !std::isfinite(s.repeat_penalty)) {
    return bad("repeat_penalty", s.repeat_penalty, "a number > 0 (1: none)");
  }
  if (s.repeat_last_n < 0) return bad("repeat_last_n", s.repeat_last_n, "an integer >= 0");
  return Sampler(s);
}

uint64_t Sampler::next_u64() {
  uint64_t z = (state_ += 0x9E3779B97F4A7C15ULL);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  return z ^ (z >> 31);
}

double Sampler::next_unit() {
  return static_cast<double>(next_u64() >> 11) * 0x1.0p-53;
}

int32_t Sampler::sample(std::span<const float> logits, std::span<const int32_t> history) {
  CHECK(!logits.empty());
  // Repetition penalty: a logit of a recent token is divided by the penalty
  // when positive and multiplied by it when negative, once per token.
  std::span<const float> x = logits;
  if (s_.repeat_penalty != 1.0f && s_.repeat_last_n > 0 && !history.empty()) {
    penalized_.assign(logits.begin(), logits.end());
    const size_t n = std::min<size_t>(history.size(), static_cast<size_t>(s_.repeat_last_n));
    std::unordered_set<int32_t> seen;
    for (int32_t id : history.subspan(history.size() - n)) {
      if (id < 0 || static_cast<size_t>(id) >= penalized_.size() || !seen.insert(id).second)
        continue;
      float& l = penalized_[static_cast<size_t>(id)];
      l = l > 0 ? l / s_.repeat_penalty : l * s_.repeat_penalty;
    }
    x = penalized_;
  }

  if (s_.temperature == 0.0f) {  // greedy; ties go to the lowest id
    return static_cast<int32_t>(std::max_element(x.begin(), x.end()) - x.begin());
  }

  // Candidates by logit, highest first (ties by id, so the order is total).
  candidates_.clear();
  for (size_t i = 0; i < x.size(); ++i) candidates_.push_back({static_cast<int32_t>(i), x[i]});
  const auto by_logit = [](const Candidate& a, const Candidate& b) {
    return a.logit > b.logit || (a.logit == b.logit && a.id < b.id);
  };
  size_t keep = candidates_.size();
  if (s_.top_k > 0 && static_cast<size_t>(s_.top_k) < keep) {
    keep = static_cast<size_t>(s_.top_k);
    std::partial_sort(candidates_.begin(), candidates_.begin() + static_cast<std::ptrdiff_t>(keep),
                      candidates_.end(), by_logit);
  } else {
    std::sort(candidates_.begin(), candidates_.end(), by_logit);
  }
  candidates_.resize(keep);

  // Probabilities at temperature 1 for top-p and min-p (as llama.cpp's chain,
  // where temperature comes after them).
  const float max = candidates_.front().logit;
  std::vector<double> p(candidates_.size());
  double sum = 0;
  for (size_t i = 0; i < p.size(); ++i)
    sum += (p[i] = std::exp(double{candidates_[i].logit} - max));
  // top-p (Holtzman et al. 2019): the smallest prefix whose mass reaches top_p.
  if (s_.top_p < 1.0f) {
    double mass = 0;
    size_t n = 0;
    while (n < p.size()) {
      mass += p[n++] / sum;
      if (mass >= s_.top_p) break;
    }
    candidates_.resize(n);
  }
  // min-p: drop what is less likely than min_p times the most likely.
  if (s_.min_p > 0.0f) {
    size_t n = 1;
    while (n < candidates_.size() && p[n] >= s_.min_p * p[0]) ++n;
    candidates_.resize(n);
  }

  // Temperature, then a draw.
  std::vector<double> w(candidates_.size());
  double total = 0;
  for (size_t i = 0; i < w.size(); ++i) {
    total += (w[i] = std::exp((double{candidates_[i].logit} - max) / s_.temperature));
  }
  double r = next_unit() * total;
  for (size_t i = 0; i < w.size(); ++i) {
    if (r < w[i]) return candidates_[i].id;
    r -= w[i];
  }
  return candidates_.back().id;  // rounding left a sliver
}

}  // namespace quip::engine

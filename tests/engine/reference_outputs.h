// llama.cpp's reference outputs for the shared models (reference.json in
// ../shared/models and ../shared/real) and the comparison rules of
// ../shared/README.md, for the tests of both forward passes.
#pragma once

#include <cstdint>
#include <functional>
#include <nlohmann/json.hpp>
#include <span>
#include <string>

#include "gguf/reader.h"

namespace quip::engine::reference {

// The log-probability tolerance of a model file, by its tensor type: 0.02
// for F32/F16/BF16/Q8_0, 0.25 for Q2_K/Q3_K, 0.1 for the other 4-6 bit types.
double tolerance_for(const std::string& file);

// The same, by the types of the file's weight matrices (the widest
// tolerance any of them needs), for files whose names do not say.
double tolerance_for(const gguf::GgufFile& file);

// The reference entry of a model file ({"model", "completions", "chat"}) in
// shared_dir()/folder/reference.json, or folder/reference.json for an
// absolute folder.
const nlohmann::json& reference_entry(const std::string& file,
                                      const std::string& folder = "models");

// Feeds tokens at the next positions and returns the logits after the last.
using Evaluator = std::function<std::span<const float>(std::span<const int32_t>)>;

struct Comparison {
  double worst = 0;          // the largest |log-probability error| over the reference's top 8
  std::string where;         // the completion and step of it
  size_t argmax_misses = 0;  // steps with a clear reference margin (> 0.05) and another argmax
  bool within(double tolerance) const { return worst <= tolerance && argmax_misses == 0; }
};

// Teacher-forced comparison: for each reference completion, a fresh
// evaluator gets the prompt (in one call), then each reference token.
Comparison compare_teacher_forced(const std::string& file,
                                  const std::function<Evaluator()>& fresh_evaluator,
                                  const std::string& folder = "models");

// Free-running greedy decoding against the reference's `greedy` tokens, up
// to the first step whose reference margin (top two log-probabilities) is
// 0.05 or less: an empty string, or where and how the first token differs.
std::string compare_greedy(const std::string& file,
                           const std::function<Evaluator()>& fresh_evaluator,
                           const std::string& folder = "models");

// Test names for model files: "tiny-qwen2-e64-f16.gguf" -> "tiny_qwen2_e64_f16".
struct ModelTestName {
  template <class ParamInfo>
  std::string operator()(const ParamInfo& info) const {
    std::string n = info.param.substr(0, info.param.size() - 5);  // without ".gguf"
    for (char& ch : n) {
      if (ch == '-' || ch == '.' || ch == '/') ch = '_';
    }
    return n;
  }
};

}  // namespace quip::engine::reference

#include "engine/reference_outputs.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "engine/forward_ref.h"
#include "support/shared.h"

namespace quip::engine::reference {

double tolerance_for(const std::string& file) {
  for (const char* t : {"q2_k", "q3_k"}) {
    if (file.find(t) != std::string::npos) return 0.25;
  }
  for (const char* t : {"f16", "bf16", "q8_0", "llama-2-tiny"}) {
    if (file.find(t) != std::string::npos) return 0.02;
  }
  return 0.1;
}

const nlohmann::json& reference_entry(const std::string& file) {
  static const nlohmann::json ref = nlohmann::json::parse(
      testing::read_file(testing::shared_dir() / "models" / "reference.json"));
  for (const auto& m : ref.at("models")) {
    if (m.at("model") == file) return m;
  }
  throw std::runtime_error("no reference outputs for " + file);
}

Comparison compare_teacher_forced(const std::string& file,
                                  const std::function<Evaluator()>& fresh_evaluator) {
  Comparison result;
  for (const auto& c : reference_entry(file).at("completions")) {
    const Evaluator eval = fresh_evaluator();
    const std::vector<int32_t> prompt = c.at("prompt_tokens");
    std::span<const float> logits = eval(prompt);
    const auto& steps = c.at("steps");
    for (size_t i = 0; i < steps.size(); ++i) {
      if (i > 0) {
        const int32_t t = steps[i - 1].at("id");
        logits = eval({&t, 1});
      }
      const std::vector<double> lp = log_softmax(logits);
      const auto& top = steps[i].at("top");
      for (const auto& pair : top) {
        const double d = std::abs(lp[pair[0].get<size_t>()] - pair[1].get<double>());
        if (d > result.worst) {
          result.worst = d;
          result.where = "prompt '" + c.at("text").get<std::string>().substr(0, 20) + "' step " +
                         std::to_string(i);
        }
      }
      const double gap = top[0][1].get<double>() - top[1][1].get<double>();
      const auto argmax =
          static_cast<size_t>(std::max_element(logits.begin(), logits.end()) - logits.begin());
      if (gap > 0.05 && argmax != top[0][0].get<size_t>()) ++result.argmax_misses;
    }
  }
  return result;
}

}  // namespace quip::engine::reference

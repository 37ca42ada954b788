#include "engine/reference_outputs.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>
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

double tolerance_for(const gguf::GgufFile& file) {
  double tol = 0.02;
  for (const gguf::TensorInfo& t : file.tensors()) {
    if (t.n_dims < 2) continue;                 // norms and biases stay F32
    const std::string_view type = t.type.name;  // as ggml prints it: "Q4_K"
    if (type == "Q2_K" || type == "Q3_K") {
      tol = std::max(tol, 0.25);
    } else if (type != "F32" && type != "F16" && type != "BF16" && type != "Q8_0") {
      tol = std::max(tol, 0.1);
    }
  }
  return tol;
}

const nlohmann::json& reference_entry(const std::string& file, const std::string& folder) {
  static std::map<std::string, nlohmann::json> sets;
  auto it = sets.find(folder);
  if (it == sets.end()) {
    // A folder of ../shared, or an absolute path (this repository's test data).
    const std::filesystem::path dir = std::filesystem::path(folder).is_absolute()
                                          ? std::filesystem::path(folder)
                                          : testing::shared_dir() / folder;
    it = sets.emplace(folder, nlohmann::json::parse(testing::read_file(dir / "reference.json")))
             .first;
  }
  for (const auto& m : it->second.at("models")) {
    if (m.at("model") == file) return m;
  }
  throw std::runtime_error("no reference outputs for " + folder + "/" + file);
}

Comparison compare_teacher_forced(const std::string& file,
                                  const std::function<Evaluator()>& fresh_evaluator,
                                  const std::string& folder) {
  Comparison result;
  for (const auto& c : reference_entry(file, folder).at("completions")) {
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

std::string compare_greedy(const std::string& file,
                           const std::function<Evaluator()>& fresh_evaluator,
                           const std::string& folder) {
  for (const auto& c : reference_entry(file, folder).at("completions")) {
    const Evaluator eval = fresh_evaluator();
    const std::vector<int32_t> prompt = c.at("prompt_tokens");
    const std::vector<int32_t> greedy = c.at("greedy");
    const auto& steps = c.at("steps");
    std::span<const float> logits = eval(prompt);
    for (size_t i = 0; i < greedy.size() && i < steps.size(); ++i) {
      const auto& top = steps[i].at("top");
      if (top[0][1].get<double>() - top[1][1].get<double>() <= 0.05) break;
      const auto next =
          static_cast<int32_t>(std::max_element(logits.begin(), logits.end()) - logits.begin());
      if (next != greedy[i]) {
        return "step " + std::to_string(i) + " of '" + c.at("text").get<std::string>() +
               "': " + std::to_string(next) + ", expected " + std::to_string(greedy[i]);
      }
      logits = eval({&next, 1});
    }
  }
  return {};
}

}  // namespace quip::engine::reference

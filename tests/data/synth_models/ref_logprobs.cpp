// Records llama.cpp's reference outputs for one model, in the format of
// ../shared/*/reference.json: for each prompt, its tokens, greedy decoding
// of N tokens and, per step, the 8 most likely tokens with their
// log-probabilities (a log-softmax over the whole vocabulary, in double).
// Context and batch 4096, 2 threads, otherwise llama.cpp's defaults.
//
// Not part of quip's build: it links llama.cpp's libllama, built outside
// this repository (README.md in this folder says how).
//
//   ref_logprobs MODEL N_PREDICT NAME PROMPT... > entry.json
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "llama.h"

namespace {

std::string json_string(const std::string& s) {
  std::string out = "\"";
  for (unsigned char c : s) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\u%04x", c);
      out += buf;
    } else {
      out += static_cast<char>(c);
    }
  }
  return out + "\"";
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 5) {
    std::fprintf(stderr, "usage: ref_logprobs MODEL N_PREDICT NAME PROMPT...\n");
    return 2;
  }
  llama_log_set([](ggml_log_level, const char*, void*) {}, nullptr);
  llama_backend_init();
  llama_model* model = llama_model_load_from_file(argv[1], llama_model_default_params());
  if (model == nullptr) return 1;
  const llama_vocab* vocab = llama_model_get_vocab(model);
  const int n_vocab = llama_vocab_n_tokens(vocab);
  const int n_predict = std::atoi(argv[2]);
  std::printf("{\"model\": %s, \"completions\": [", json_string(argv[3]).c_str());
  for (int p = 4; p < argc; ++p) {
    llama_context_params cp = llama_context_default_params();
    cp.n_ctx = 4096;
    cp.n_batch = 4096;
    cp.n_threads = cp.n_threads_batch = 2;
    llama_context* ctx = llama_init_from_model(model, cp);
    const std::string text = argv[p];
    std::vector<llama_token> prompt(text.size() + 8);
    const int n = llama_tokenize(vocab, text.c_str(), static_cast<int>(text.size()), prompt.data(),
                                 static_cast<int>(prompt.size()), true, false);
    prompt.resize(n);
    std::printf("%s\n {\"text\": %s, \"prompt_tokens\": [", p > 4 ? "," : "",
                json_string(text).c_str());
    for (int i = 0; i < n; ++i) std::printf("%s%d", i ? ", " : "", prompt[i]);
    std::printf("], ");
    std::string steps, greedy;
    llama_batch batch = llama_batch_get_one(prompt.data(), n);
    llama_token next = 0;
    for (int step = 0; step < n_predict; ++step) {
      if (llama_decode(ctx, batch) != 0) return 1;
      const float* logits = llama_get_logits_ith(ctx, -1);
      double max = -INFINITY, sum = 0;
      for (int v = 0; v < n_vocab; ++v) max = std::max(max, double{logits[v]});
      for (int v = 0; v < n_vocab; ++v) sum += std::exp(double{logits[v]} - max);
      std::vector<std::pair<double, int>> lp(n_vocab);
      for (int v = 0; v < n_vocab; ++v) lp[v] = {double{logits[v]} - max - std::log(sum), v};
      std::partial_sort(lp.begin(), lp.begin() + 8, lp.end(), [](const auto& a, const auto& b) {
        return a.first > b.first || (a.first == b.first && a.second < b.second);
      });
      next = lp[0].second;
      std::string top;
      for (int k = 0; k < 8; ++k) {
        char buf[64];
        std::snprintf(buf, sizeof buf, "%s[%d, %.6f]", k ? ", " : "", lp[k].second, lp[k].first);
        top += buf;
      }
      steps += (step ? ", " : "") + std::string("{\"id\": ") + std::to_string(next) +
               ", \"top\": [" + top + "]}";
      greedy += (step ? ", " : "") + std::to_string(next);
      batch = llama_batch_get_one(&next, 1);
    }
    std::printf("\"greedy\": [%s], \"steps\": [%s]}", greedy.c_str(), steps.c_str());
    llama_free(ctx);
  }
  std::printf("]}\n");
  llama_model_free(model);
  return 0;
}

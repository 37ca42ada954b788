#include "cli/bench.h"

#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <random>

#include "base/text.h"
#include "cli/exit_status.h"
#include "cli/model_names.h"
#include "cli/report.h"
#include "cli/usage.h"
#include "engine/forward.h"
#include "kernels/limits.h"
#include "kernels/thread_pool.h"
#include "session/loaded_model.h"

namespace quip::cli {

namespace {

struct Stats {
  double mean = 0, stddev = 0;
};

Stats stats(const std::vector<double>& v) {
  Stats s;
  for (double x : v) s.mean += x;
  s.mean /= static_cast<double>(v.size());
  for (double x : v) s.stddev += (x - s.mean) * (x - s.mean);
  s.stddev = v.size() > 1 ? std::sqrt(s.stddev / static_cast<double>(v.size() - 1)) : 0;
  return s;
}

double seconds_since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

}  // namespace

int bench_main(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  CLI::App app{"Measure prompt processing (pp) and generation (tg) speed in tokens/s.",
               "quip bench"};
  std::string model_path;
  int n_prompt = 512, n_gen = 128, threads = kernels::physical_cores(), reps = 5, together = 0;
  bool json = false;
  app.add_option("-m,--model", model_path, "GGUF model: a file, an alias or a name (quip models)")
      ->required();
  app.add_option("-p,--n-prompt", n_prompt, "prompt tokens, evaluated as one batch (0: none)")
      ->capture_default_str();
  app.add_option("-n,--n-gen", n_gen, "tokens generated one at a time (0: none)")
      ->capture_default_str();
  app.add_option("-t,--threads", threads, "threads (default: the physical cores)")
      ->capture_default_str();
  app.add_option("-r,--repetitions", reps, "repetitions of each test")->capture_default_str();
  app.add_option("-s,--sequences", together,
                 "also generate this many sequences decoded together (tgNxS)");
  app.add_flag("--json", json, "print a JSON array of results");
  if (std::optional<int> status = parse_args(app, args, out, err)) return *status;
  if (n_prompt < 0 || n_gen < 0 || n_prompt + n_gen == 0 || n_prompt > 65536 || n_gen > 65536) {
    err << "quip bench: -p and -n must be in [0, 65536] and not both 0\n";
    return kExitUsage;
  }
  if (threads < 1 || threads > 1024 || reps < 1 || reps > 1000) {
    err << "quip bench: -t must be in [1, 1024] and -r in [1, 1000]\n";
    return kExitUsage;
  }
  if (together < 0 || together > 512 || (together > 0 && n_gen == 0)) {
    err << "quip bench: -s must be in [0, 512], and needs -n\n";
    return kExitUsage;
  }
  auto resolved = resolve_model_name(model_path);
  if (auto* e = std::get_if<ModelNameError>(&resolved)) {
    print_error(err, "quip bench", e->message);
    return e->status;
  }
  auto loaded = session::load_model(std::get<ModelFile>(resolved).path.string());
  if (!loaded) {
    print_error(err, "quip bench", loaded.error().message);
    return kExitBadData;
  }
  for (const std::string& w : loaded->tokenizer.vocab().warnings()) {
    print_warning(err, "quip bench", w);
  }
  auto isa = kernels::chosen_isa();
  if (!isa) {
    print_error(err, "quip bench", isa.error().message);
    return kExitUsage;
  }
  const engine::Hparams& hp = loaded->model.hparams();
  engine::Forward fwd(loaded->model, {.n_threads = threads, .isa = *isa});
  std::mt19937 rng(42);
  std::uniform_int_distribution<int32_t> any_token(0, static_cast<int32_t>(hp.n_vocab) - 1);

  struct Test {
    std::string name;
    std::vector<double> rates;  // tokens/s per repetition
  };
  std::vector<Test> tests;
  const auto run_pp = [&](int n) {
    std::vector<int32_t> tokens(static_cast<size_t>(n));
    for (int32_t& t : tokens) t = any_token(rng);
    fwd.cache().truncate(0);
    const auto t0 = std::chrono::steady_clock::now();
    fwd.eval(tokens);
    return n / seconds_since(t0);
  };
  const auto run_tg = [&](int n) {
    fwd.cache().truncate(0);
    const auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < n; ++i) {
      const int32_t t = any_token(rng);
      fwd.eval({&t, 1});
    }
    return n / seconds_since(t0);
  };
  // k sequences, each with its own cache, decoded together one step at a
  // time (Forward::decode, as quip serve's continuous batching does): the
  // tokens/s of all of them.
  const auto run_together = [&](int n, int k) {
    std::vector<std::unique_ptr<engine::Forward>> seqs;  // their caches
    for (int i = 0; i < k; ++i) {
      seqs.push_back(std::make_unique<engine::Forward>(loaded->model,
                                                       engine::ForwardOptions{.isa = *isa}));
    }
    std::vector<engine::Forward::Row> rows(static_cast<size_t>(k));
    const auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < n; ++i) {
      for (int j = 0; j < k; ++j) rows[static_cast<size_t>(j)] = {&seqs[j]->cache(), any_token(rng)};
      fwd.decode(rows);
    }
    return static_cast<double>(n) * k / seconds_since(t0);
  };
  // One warm-up of each (page faults, caches), as llama-bench does.
  if (n_prompt > 0) run_pp(std::min(n_prompt, 32));
  if (n_gen > 0) run_tg(std::min(n_gen, 4));
  if (n_prompt > 0) {
    tests.push_back({"pp" + std::to_string(n_prompt), {}});
    for (int r = 0; r < reps; ++r) tests.back().rates.push_back(run_pp(n_prompt));
  }
  if (n_gen > 0) {
    tests.push_back({"tg" + std::to_string(n_gen), {}});
    for (int r = 0; r < reps; ++r) tests.back().rates.push_back(run_tg(n_gen));
  }
  const bool decodes_together = together > 0 && fwd.decodes_rows();
  if (together > 0 && !decodes_together) {
    print_warning(err, "quip bench", "-s: this model's recurrent layers decode one sequence at a time");
  }
  if (decodes_together) {
    tests.push_back({"tg" + std::to_string(n_gen) + "x" + std::to_string(together), {}});
    for (int r = 0; r < reps; ++r) tests.back().rates.push_back(run_together(n_gen, together));
  }
  // A test of sequences decoded together, against one alone.
  const auto is_together = [](const Test& t) { return t.name.find('x') != std::string::npos; };
  double alone_rate = 0;
  for (const Test& t : tests) {
    if (t.name == "tg" + std::to_string(n_gen)) alone_rate = stats(t.rates).mean;
  }

  // Generation reads every weight once per token: its rate in bytes/s,
  // next to what the machine streams on the same threads (measured now,
  // after the tests, so that it shares their conditions).
  const double weight_bytes = static_cast<double>(loaded->model.weight_bytes_per_token());
  // A prompt batch is compute bound: its matrix products per second next to
  // the machine's int8 multiply-add peak (for integer-quantized weights).
  const engine::Model::MatrixWork work = loaded->model.matrix_work_per_token();
  const uint64_t all_products = work.layer_products + work.output_products;
  const bool int8_weights = work.quantized_products * 2 > all_products;
  // Per token of a batch of n_prompt: every layer's, and the output once.
  const double batch_products = static_cast<double>(work.layer_products) +
                                static_cast<double>(work.output_products) / std::max(n_prompt, 1);
  double stream_bytes_per_s = 0, int8_peak = 0;
  {
    kernels::ThreadPool pool(threads);
    if (n_gen > 0) {
      stream_bytes_per_s = kernels::read_bandwidth(pool, kernels::bandwidth_buffer_bytes(), 5);
    }
    if (n_prompt > 0 && int8_weights) int8_peak = kernels::int8_peak(*isa, pool, 3);
  }

  // A file name is anyone's bytes: printable (and valid UTF-8 for the JSON).
  const std::string name = printable(std::filesystem::path(model_path).filename().string(), 200);
  uint64_t params = 0, bytes = 0;
  for (const gguf::TensorInfo& t : loaded->file->tensors()) {
    params += t.n_elements;
    bytes += t.n_bytes;
  }
  if (json) {
    nlohmann::json j = nlohmann::json::array();
    for (const Test& t : tests) {
      const Stats s = stats(t.rates);
      nlohmann::json r = {
          {"model", name},          {"size_bytes", bytes},
          {"params", params},       {"kernels", std::string(kernels::isa_name(*isa))},
          {"threads", threads},     {"test", t.name},
          {"tokens_per_s", s.mean}, {"stddev", s.stddev},
          {"samples", t.rates}};
      if (is_together(t)) {
        r["sequences"] = together;
        r["times_one_sequence"] = alone_rate > 0 ? s.mean / alone_rate : 0;
      } else if (t.name.starts_with("tg")) {
        r["weight_bytes_per_token"] = static_cast<uint64_t>(weight_bytes);
        r["weights_gb_per_s"] = weight_bytes * s.mean / 1e9;
        r["stream_gb_per_s"] = stream_bytes_per_s / 1e9;
      } else {
        r["matrix_products_per_token"] = batch_products;
        r["products_g_per_s"] = batch_products * s.mean / 1e9;
        if (int8_peak > 0) r["int8_peak_g_per_s"] = int8_peak / 1e9;
      }
      j.push_back(std::move(r));
    }
    out << j.dump(2) << '\n';
    return kExitOk;
  }
  char line[256];
  std::snprintf(line, sizeof line, "| %-28s | %10s | %8s | %7s | %7s | %6s | %18s |\n", "model",
                "size", "params", "kernels", "threads", "test", "t/s");
  out << line;
  out << "| " << std::string(28, '-') << " | " << std::string(10, '-') << " | "
      << std::string(8, '-') << " | " << std::string(7, '-') << " | " << std::string(7, '-')
      << " | " << std::string(6, '-') << " | " << std::string(18, '-') << " |\n";
  for (const Test& t : tests) {
    const Stats s = stats(t.rates);
    char size[32], par[32], rate[48];
    std::snprintf(size, sizeof size, "%.2f MiB", static_cast<double>(bytes) / (1 << 20));
    std::snprintf(par, sizeof par, "%.2f M", static_cast<double>(params) / 1e6);
    std::snprintf(rate, sizeof rate, "%.2f ± %.2f", s.mean, s.stddev);
    std::snprintf(line, sizeof line, "| %-28s | %10s | %8s | %7s | %7d | %6s | %18s |\n",
                  name.substr(0, 28).c_str(), size, par,
                  std::string(kernels::isa_name(*isa)).c_str(), threads, t.name.c_str(), rate);
    out << line;
  }
  for (const Test& t : tests) {
    if (!t.name.starts_with("pp")) continue;
    const double g_per_s = batch_products * stats(t.rates).mean / 1e9;
    std::snprintf(line, sizeof line,
                  "%s: %.2f G multiply-adds of matrix products per token, %.1f G/s", t.name.c_str(),
                  batch_products / 1e9, g_per_s);
    out << line;
    if (int8_peak > 0) {
      std::snprintf(line, sizeof line,
                    "; this machine's int8 peak is %.1f G/s on %d threads (%.0f%%)",
                    int8_peak / 1e9, threads, 100 * g_per_s / (int8_peak / 1e9));
      out << line;
    }
    out << '\n';
  }
  for (const Test& t : tests) {
    if (!t.name.starts_with("tg")) continue;
    if (is_together(t)) {
      std::snprintf(line, sizeof line,
                    "%s: %d sequences per step, %.2f tokens/s in all: x%.2f the tokens/s of one\n",
                    t.name.c_str(), together, stats(t.rates).mean,
                    alone_rate > 0 ? stats(t.rates).mean / alone_rate : 0.0);
      out << line;
      continue;
    }
    const double gb_per_s = weight_bytes * stats(t.rates).mean / 1e9;
    std::snprintf(line, sizeof line,
                  "%s: %.1f MiB of weights per token, read at %.1f GB/s; this machine streams "
                  "%.1f GB/s on %d threads (%.0f%%)\n",
                  t.name.c_str(), weight_bytes / (1 << 20), gb_per_s, stream_bytes_per_s / 1e9,
                  threads, 100 * gb_per_s / (stream_bytes_per_s / 1e9));
    out << line;
  }
  return kExitOk;
}

}  // namespace quip::cli

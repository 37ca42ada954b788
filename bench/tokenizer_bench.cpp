// Tokenizer speed, single-threaded, on ../shared/text/war-and-peace.txt.
//
// Reference figures for llama.cpp on this machine class, from issue #3 (not
// measured here: llama.cpp is not packaged for these machines): encoding
// 5.8 MB/s with the Llama 3 vocabulary, 4 MB/s with GPT-2, 1.5 MB/s with
// Llama 2 SentencePiece, and 280 ms to load the Llama 3 vocabulary. Each
// benchmark reports `x_llama_cpp`, its speed as a multiple of that figure.
//
//   BM_Encode/NAME        encode the whole book (3.2 MB), no BOS/EOS
//   BM_Load/NAME          GgufFile::open + Tokenizer::load, in this process
//                         (memory the allocator already has: a lower bound)
//   BM_TokenizeCommand    `quip tokenize -m llama-bpe --ids x` as a new
//                         process, what a one-shot call pays to have its
//                         vocabulary ready: /cached with the merge table
//                         saved by an earlier call (the usual case),
//                         /uncached without a cache folder; BM_HelpCommand
//                         is the same process start without a vocabulary,
//                         the baseline
//
// `x_llama_cpp` is printed as a rate ("/s"); its value is the ratio.
//
// Data: $QUIP_SHARED_DIR, else ../shared from the current folder.
#include <benchmark/benchmark.h>
#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "gguf/reader.h"
#include "tokenizer/tokenizer.h"

extern char** environ;

namespace {

namespace fs = std::filesystem;
using quip::tokenizer::Tokenizer;

fs::path shared() {
  const char* env = std::getenv("QUIP_SHARED_DIR");
  return env != nullptr ? fs::path(env) : fs::path("../shared");
}

const std::string& book() {
  static const std::string text = [] {
    std::ifstream in(shared() / "text" / "war-and-peace.txt", std::ios::binary);
    std::ostringstream ss;
    ss << in.rdbuf();
    return ss.str();
  }();
  return text;
}

struct Vocab {
  const char* file;
  double llama_cpp_mb_per_s;  // 0: no reference figure
};

constexpr Vocab kLlama3{"ggml-vocab-llama-bpe.gguf", 5.8};
constexpr Vocab kGpt2{"ggml-vocab-gpt-2.gguf", 4.0};
constexpr Vocab kSpm{"ggml-vocab-llama-spm.gguf", 1.5};
constexpr Vocab kDeepseek{"ggml-vocab-deepseek-llm.gguf", 0};

void BM_Encode(benchmark::State& state, const Vocab* v) {
  auto file = quip::gguf::GgufFile::open((shared() / "vocab" / v->file).string());
  if (!file || book().empty()) {
    state.SkipWithError("shared test data not found (set QUIP_SHARED_DIR)");
    return;
  }
  auto t = Tokenizer::load(*file);
  if (!t) {
    state.SkipWithError(t.error().message.c_str());
    return;
  }
  size_t n = 0;
  for (auto _ : state) {
    auto ids = t->encode(book(), {.add_special = false});
    n = ids.size();
    benchmark::DoNotOptimize(ids.data());
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * book().size()));
  state.counters["tokens"] = static_cast<double>(n);
  if (v->llama_cpp_mb_per_s > 0) {
    state.counters["x_llama_cpp"] =
        benchmark::Counter(static_cast<double>(book().size()) / 1e6 / v->llama_cpp_mb_per_s,
                           benchmark::Counter::kIsIterationInvariantRate);
  }
}

void BM_Load(benchmark::State& state, const Vocab* v) {
  const std::string path = (shared() / "vocab" / v->file).string();
  for (auto _ : state) {
    auto file = quip::gguf::GgufFile::open(path);
    if (!file) {
      state.SkipWithError("shared test data not found (set QUIP_SHARED_DIR)");
      return;
    }
    auto t = Tokenizer::load(*file);
    benchmark::DoNotOptimize(t.ok());
  }
  if (v == &kLlama3) {
    state.counters["x_llama_cpp"] =
        benchmark::Counter(0.280, benchmark::Counter::kIsIterationInvariantRate);
  }
}

// Runs the quip binary with `args` and waits for it; with QUIP_HOME set to
// `home` when given.
bool run_quip(const std::vector<std::string>& args, const std::string& home = "") {
  std::vector<std::string> argv_strings = {QUIP_BINARY};
  argv_strings.insert(argv_strings.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (std::string& s : argv_strings) argv.push_back(s.data());
  argv.push_back(nullptr);
  std::vector<std::string> env_strings;
  for (char** e = environ; *e != nullptr; ++e) {
    if (std::string_view(*e).substr(0, 10) != "QUIP_HOME=") env_strings.emplace_back(*e);
  }
  if (!home.empty()) env_strings.push_back("QUIP_HOME=" + home);
  std::vector<char*> envp;
  for (std::string& s : env_strings) envp.push_back(s.data());
  envp.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0);
  pid_t pid;
  const int rc = posix_spawn(&pid, QUIP_BINARY, &actions, nullptr, argv.data(), envp.data());
  posix_spawn_file_actions_destroy(&actions);
  if (rc != 0) return false;
  int status = 0;
  return waitpid(pid, &status, 0) == pid && WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

// `quip tokenize` as a new process. cached: with a cache folder holding the
// saved merge table (one warm-up call writes it); uncached: with a cache
// folder that cannot be created, so every call resolves the merges.
void BM_TokenizeCommand(benchmark::State& state, bool cached) {
  const std::string path = (shared() / "vocab" / kLlama3.file).string();
  const fs::path home = fs::temp_directory_path() / ("quip-bench-" + std::to_string(::getpid()));
  fs::remove_all(home);
  const std::string quip_home = cached ? home.string() : "/proc/quip-bench-no-cache";
  const std::vector<std::string> args = {"tokenize", "-m", path, "--ids", "x"};
  if (!run_quip(args, quip_home)) {
    state.SkipWithError("quip tokenize failed (is the shared test data there?)");
    return;
  }
  for (auto _ : state) run_quip(args, quip_home);
  fs::remove_all(home);
  if (cached) {
    state.counters["x_llama_cpp"] = benchmark::Counter(
        0.280, benchmark::Counter::kIsIterationInvariantRate);  // against its load alone
  }
}

void BM_HelpCommand(benchmark::State& state) {
  for (auto _ : state) {
    if (!run_quip({"--help"})) {
      state.SkipWithError("quip --help failed");
      return;
    }
  }
}

}  // namespace

BENCHMARK_CAPTURE(BM_Encode, llama3, &kLlama3)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_Encode, gpt2, &kGpt2)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_Encode, llama_spm, &kSpm)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_Encode, deepseek_llm, &kDeepseek)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_Load, llama3, &kLlama3)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_Load, gpt2, &kGpt2)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_Load, llama_spm, &kSpm)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_TokenizeCommand, cached, true)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK_CAPTURE(BM_TokenizeCommand, uncached, false)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
BENCHMARK(BM_HelpCommand)->Unit(benchmark::kMillisecond)->UseRealTime();

BENCHMARK_MAIN();

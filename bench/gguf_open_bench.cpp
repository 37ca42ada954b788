// Opening a GGUF file.
//
// Claim shown: GgufFile::open does not depend on the file's size. open()
// maps the file and walks only the header, metadata and tensor table; the
// tensor data (all but a few MiB of a model) is never read, so a 1 GiB file
// opens as fast as a 16 MiB one with the same metadata. What open does cost
// grows with the metadata instead: here nearly all of it is the 128256
// strings of the vocabulary (about a millisecond).
//
// How to read the table (all times in microseconds):
//   BM_Open/16MiB, BM_Open/1GiB    GgufFile::open plus its destruction on two
//                                  files with the same metadata and tensor table
//                                  (names, counts, dims per tensor) but 65x the
//                                  bytes: the two times should be about equal.
//                                  `file_bytes` is each file's size.
//   BM_ParseFromMemory/...         GgufFile::parse of the same bytes, already in
//                                  memory: open() less open(2), mmap and munmap.
//   BM_ReadWholeFile/...           read(2) of every byte into a buffer: the cost
//                                  open() avoids, which grows with the file. The
//                                  page cache is warm (and the files are sparse),
//                                  so this is a lower bound on a cold disk.
//   BM_OpenSharedVocab             open of the real Llama 3 tokenizer, 128256
//                                  tokens and 280147 merges, from the test data
//                                  folder: $QUIP_SHARED_DIR, else ../shared from
//                                  the current folder (run from the repository
//                                  root); skipped when absent.
//
// The files are written once per run, sparse (GgufWriter::add_zero_tensor
// leaves holes), into a temporary folder removed at exit.
#include <benchmark/benchmark.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <optional>
#include <random>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "gguf/keys.h"
#include "gguf/reader.h"
#include "gguf/types.h"
#include "gguf/writer.h"

namespace {

namespace fs = std::filesystem;
using quip::gguf::GgmlType;
using quip::gguf::GgufFile;
using quip::gguf::GgufWriter;
using quip::gguf::make_array;

// A llama-style model: the same tensor table and metadata for every size but
// the dims. Shapes are innermost first (ggml's ne); big weights are Q8_0
// (32 elements in 34 bytes), norms F32.
struct ModelShape {
  const char* label;
  uint32_t n_embd, n_ff, n_layer, n_head, n_head_kv, head_dim;
};

constexpr uint32_t kVocab = 128256;  // Llama 3's vocabulary size
// 16.2 MiB: 8.3 MiB of token embeddings, 5.5 MiB of layers, 2.4 MiB of metadata.
constexpr ModelShape kSmall{"16MiB", 64, 1696, 16, 2, 1, 32};
// 1.03 GiB: a Llama 3.2 1B-like shape at 8 bits.
constexpr ModelShape kLarge{"1GiB", 2048, 6144, 16, 32, 8, 64};

uint64_t q8_0_bytes(uint64_t n_elements) {
  return n_elements / 32 * 34;
}

// Token texts that look like a byte-level BPE vocabulary: 1 to 12 letters,
// half of them with the "Ġ" (space) prefix.
std::vector<std::string> make_vocabulary() {
  std::mt19937 rng(42);
  std::uniform_int_distribution<int> length(1, 12);
  std::uniform_int_distribution<int> letter('a', 'z');
  std::vector<std::string> tokens;
  tokens.reserve(kVocab);
  for (uint32_t i = 0; i < kVocab; ++i) {
    std::string t = (i % 2 == 0) ? "\xC4\xA0" : "";
    for (int n = length(rng); n > 0; --n) t += static_cast<char>(letter(rng));
    tokens.push_back(std::move(t));
  }
  return tokens;
}

GgufWriter make_model(const ModelShape& m, const std::vector<std::string>& tokens) {
  namespace k = quip::gguf::keys;
  const auto arch = [](std::string_view suffix) { return k::arch_key("llama", suffix); };
  GgufWriter w;
  w.set(std::string(k::kArchitecture), std::string("llama"));
  w.set(std::string(k::kName), std::string("bench-llama-") + m.label);
  w.set(std::string(k::kFileType), uint32_t{7});  // llama.cpp's LLAMA_FTYPE_MOSTLY_Q8_0
  w.set(arch(k::kContextLength), uint32_t{8192});
  w.set(arch(k::kEmbeddingLength), m.n_embd);
  w.set(arch(k::kBlockCount), m.n_layer);
  w.set(arch(k::kFeedForwardLength), m.n_ff);
  w.set(arch(k::kHeadCount), m.n_head);
  w.set(arch(k::kHeadCountKv), m.n_head_kv);
  w.set(arch(k::kKeyLength), m.head_dim);
  w.set(arch(k::kRopeFreqBase), 500000.0f);
  w.set(arch("attention.layer_norm_rms_epsilon"), 1e-5f);
  w.set(std::string(k::kTokenizerModel), std::string("gpt2"));
  w.set(std::string(k::kTokenizerPre), std::string("llama-bpe"));
  w.set(std::string(k::kTokens), make_array(tokens));
  w.set("tokenizer.ggml.token_type", make_array(std::vector<int32_t>(tokens.size(), 1)));
  w.set(std::string(k::kBosTokenId), uint32_t{128000});
  w.set(std::string(k::kEosTokenId), uint32_t{128009});

  const auto q8 = static_cast<uint32_t>(GgmlType::Q8_0);
  const auto f32 = static_cast<uint32_t>(GgmlType::F32);
  const auto weight = [&](std::string name, uint64_t ne0, uint64_t ne1) {
    w.add_zero_tensor(std::move(name), q8, {ne0, ne1}, q8_0_bytes(ne0 * ne1));
  };
  const auto norm = [&](std::string name) {
    w.add_zero_tensor(std::move(name), f32, {m.n_embd}, uint64_t{m.n_embd} * 4);
  };
  const uint64_t n_embd_kv = uint64_t{m.head_dim} * m.n_head_kv;
  const uint64_t n_embd_q = uint64_t{m.head_dim} * m.n_head;
  weight("token_embd.weight", m.n_embd, kVocab);
  norm("output_norm.weight");
  for (uint32_t l = 0; l < m.n_layer; ++l) {
    const std::string b = "blk." + std::to_string(l) + ".";
    norm(b + "attn_norm.weight");
    weight(b + "attn_q.weight", m.n_embd, n_embd_q);
    weight(b + "attn_k.weight", m.n_embd, n_embd_kv);
    weight(b + "attn_v.weight", m.n_embd, n_embd_kv);
    weight(b + "attn_output.weight", n_embd_q, m.n_embd);
    norm(b + "ffn_norm.weight");
    weight(b + "ffn_gate.weight", m.n_embd, m.n_ff);
    weight(b + "ffn_up.weight", m.n_embd, m.n_ff);
    weight(b + "ffn_down.weight", m.n_ff, m.n_embd);
  }
  return w;
}

struct BenchFile {
  std::string path;
  uint64_t size = 0;
  uint64_t data_offset = 0;  // bytes of header, metadata and tensor table (padded)
  uint64_t n_tensors = 0;
  std::string error;  // why the file is unusable, or empty
};

// The benchmark files, written on first use; the folder is removed at exit.
class BenchFiles {
 public:
  static const BenchFiles& get() {
    static const BenchFiles files;
    return files;
  }

  const BenchFile& file(const ModelShape& m) const { return &m == &kSmall ? small_ : large_; }

  BenchFiles(const BenchFiles&) = delete;
  BenchFiles& operator=(const BenchFiles&) = delete;
  ~BenchFiles() {
    if (dir_.empty()) return;
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }

 private:
  BenchFiles() {
    std::string tmpl = (fs::temp_directory_path() / "quip-bench-XXXXXX").string();
    if (::mkdtemp(tmpl.data()) == nullptr) {
      small_.error = large_.error = tmpl + ": cannot create: " + std::strerror(errno);
      return;
    }
    dir_ = tmpl;
    const std::vector<std::string> tokens = make_vocabulary();
    small_ = write(kSmall, tokens);
    large_ = write(kLarge, tokens);
  }

  BenchFile write(const ModelShape& m, const std::vector<std::string>& tokens) const {
    BenchFile f;
    f.path = (dir_ / (std::string("model-") + m.label + ".gguf")).string();
    if (auto r = make_model(m, tokens).write(f.path); !r) {
      f.error = r.error().message;
      return f;
    }
    auto opened = GgufFile::open(f.path);
    if (!opened) {
      f.error = opened.error().message;
      return f;
    }
    f.size = opened->file_size();
    f.data_offset = opened->data_offset();
    f.n_tensors = opened->tensors().size();
    return f;
  }

  fs::path dir_;
  BenchFile small_;
  BenchFile large_;
};

// An anonymous read-write mapping (RAII). Pages never written cost no memory,
// so a 1 GiB mapping holding only a file's first few MiB is cheap.
class AnonymousMapping {
 public:
  explicit AnonymousMapping(size_t size) : size_(size) {
    void* p = ::mmap(nullptr, size, PROT_READ | PROT_WRITE,
                     MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (p != MAP_FAILED) data_ = static_cast<std::byte*>(p);
  }
  ~AnonymousMapping() {
    if (data_ != nullptr) ::munmap(data_, size_);
  }
  AnonymousMapping(const AnonymousMapping&) = delete;
  AnonymousMapping& operator=(const AnonymousMapping&) = delete;

  std::byte* data() const { return data_; }
  size_t size() const { return size_; }

 private:
  std::byte* data_ = nullptr;
  size_t size_;
};

// Reads [0, n) of `path` into `out`; returns an error message or nullopt.
std::optional<std::string> read_prefix(const std::string& path, std::byte* out, uint64_t n) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return path + ": cannot open: " + std::strerror(errno);
  uint64_t done = 0;
  while (done < n) {
    const ssize_t got = ::read(fd, out + done, n - done);
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) {
      ::close(fd);
      return path + ": short read";
    }
    done += static_cast<uint64_t>(got);
  }
  ::close(fd);
  return std::nullopt;
}

void set_counters(benchmark::State& state, const BenchFile& f) {
  state.counters["file_bytes"] = benchmark::Counter(
      static_cast<double>(f.size), benchmark::Counter::kDefaults, benchmark::Counter::kIs1024);
  state.counters["head_bytes"] =
      benchmark::Counter(static_cast<double>(f.data_offset), benchmark::Counter::kDefaults,
                         benchmark::Counter::kIs1024);
}

// (a) What `quip inspect` and the engine pay to open a model.
void BM_Open(benchmark::State& state, const ModelShape* m) {
  const BenchFile& f = BenchFiles::get().file(*m);
  if (!f.error.empty()) {
    state.SkipWithError(f.error.c_str());
    return;
  }
  for (auto _ : state) {
    auto opened = GgufFile::open(f.path);
    if (!opened) {
      state.SkipWithError(opened.error().message.c_str());
      break;
    }
    benchmark::DoNotOptimize(opened->tensors().data());
  }
  set_counters(state, f);
}

// (b) The parse alone: the file's bytes already in memory.
void BM_ParseFromMemory(benchmark::State& state, const ModelShape* m) {
  const BenchFile& f = BenchFiles::get().file(*m);
  if (!f.error.empty()) {
    state.SkipWithError(f.error.c_str());
    return;
  }
  // The tensor data stays untouched zero pages: parse() checks that it lies
  // inside the span but never reads it.
  AnonymousMapping memory(f.size);
  if (memory.data() == nullptr) {
    state.SkipWithError("cannot map anonymous memory");
    return;
  }
  if (auto e = read_prefix(f.path, memory.data(), f.data_offset)) {
    state.SkipWithError(e->c_str());
    return;
  }
  const std::span<const std::byte> bytes(memory.data(), memory.size());
  for (auto _ : state) {
    auto parsed = GgufFile::parse(f.path, bytes);
    if (!parsed) {
      state.SkipWithError(parsed.error().message.c_str());
      break;
    }
    benchmark::DoNotOptimize(parsed->tensors().data());
  }
  set_counters(state, f);
}

// (c) Baseline: reading every byte, the cost that mapping avoids.
void BM_ReadWholeFile(benchmark::State& state, const ModelShape* m) {
  const BenchFile& f = BenchFiles::get().file(*m);
  if (!f.error.empty()) {
    state.SkipWithError(f.error.c_str());
    return;
  }
  std::vector<std::byte> buffer(f.size);  // allocated and touched once, outside the timing
  // One untimed read first, so that every timed one finds the page cache warm
  // (a sparse file's holes are not in the cache until read once).
  if (auto e = read_prefix(f.path, buffer.data(), f.size)) {
    state.SkipWithError(e->c_str());
    return;
  }
  for (auto _ : state) {
    if (auto e = read_prefix(f.path, buffer.data(), f.size)) {
      state.SkipWithError(e->c_str());
      break;
    }
    benchmark::DoNotOptimize(buffer.data());
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * f.size));
  set_counters(state, f);
}

// A real file: the Llama 3 tokenizer from the test data folder.
void BM_OpenSharedVocab(benchmark::State& state) {
  const char* env = std::getenv("QUIP_SHARED_DIR");
  const fs::path path = fs::path(env != nullptr && *env != '\0' ? env : "../shared") / "vocab" /
                        "ggml-vocab-llama-bpe.gguf";
  std::error_code ec;
  if (!fs::is_regular_file(path, ec)) {
    const std::string message =
        path.string() + " not found (set QUIP_SHARED_DIR or run from the repository root)";
    state.SkipWithError(message.c_str());
    return;
  }
  uint64_t size = 0;
  for (auto _ : state) {
    auto opened = GgufFile::open(path.string());
    if (!opened) {
      state.SkipWithError(opened.error().message.c_str());
      break;
    }
    size = opened->file_size();
    benchmark::DoNotOptimize(opened->metadata().data());
  }
  state.counters["file_bytes"] = benchmark::Counter(
      static_cast<double>(size), benchmark::Counter::kDefaults, benchmark::Counter::kIs1024);
}

BENCHMARK_CAPTURE(BM_Open, 16MiB, &kSmall)->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_Open, 1GiB, &kLarge)->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_ParseFromMemory, 16MiB, &kSmall)->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_ParseFromMemory, 1GiB, &kLarge)->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_ReadWholeFile, 16MiB, &kSmall)->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_ReadWholeFile, 1GiB, &kLarge)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_OpenSharedVocab)->Unit(benchmark::kMicrosecond);

}  // namespace



// libFuzzer target: a conversation database holding any bytes never
// crashes quip: opening it, listing, reading every conversation's turns and
// messages, and recording a turn each give a result or a one-line error.
//
// Each run writes a database file and opens it. The first input byte picks
// the mode: the rest of the input is either the whole file, or edits to a
// real database made at start-up (XOR a byte at an offset, then an optional
// truncation), which get past SQLite's header checks into the schema and
// the rows quip decodes (token blobs, JSON texts). Bit 2 also opens it for
// writing and records a turn.
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <span>
#include <string>
#include <vector>

#include "edits.h"
#include "store/store.h"

namespace fs = std::filesystem;
using quip::store::Store;
using quip::store::TurnRecord;

namespace {

void check(const quip::Error& e) {
  if (e.message.empty() || e.message.find('\n') != std::string::npos) {
    std::fprintf(stderr, "not a one-line error: [%s]\n", e.message.c_str());
    std::abort();
  }
}

TurnRecord turn(const std::string& question) {
  TurnRecord t;
  t.model_path = "/models/m.gguf";
  t.model_fingerprint = "0123456789abcdef";
  t.sampler_json = R"({"temp":0})";
  t.messages_json = R"([{"role":"system","content":"Be brief."},{"role":"user","content":")" +
                    question + R"("}])";
  t.answer = "An answer.";
  t.timings_json = R"({"prompt_ms":1.5})";
  t.prompt_tokens = {1, 2, 3, 4, 5};
  t.answer_tokens = {6, 7};
  t.session = "fuzz";
  return t;
}

struct Fixture {
  fs::path dir;
  std::vector<uint8_t> good;  // a real database: two conversations, one forked

  Fixture() {
    dir = fs::temp_directory_path() / ("quip-fuzz-store-" + std::to_string(getpid()));
    fs::remove_all(dir);
    fs::create_directories(dir);
    const fs::path file = dir / "good.db";
    {
      auto store = Store::open(file);
      if (!store) std::abort();
      auto first = store->record_turn(turn("Hi"));
      if (!first) std::abort();
      TurnRecord next = turn("And?");
      next.conversation = first->conversation;
      if (!store->record_turn(next)) std::abort();
      if (!store->fork(first->conversation, 1, "fuzz")) std::abort();
    }  // closing checkpoints the write-ahead log into the file
    std::ifstream in(file, std::ios::binary);
    good.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
    if (good.empty()) std::abort();
  }
  ~Fixture() { fs::remove_all(dir); }
};

void exercise(Store& store) {
  auto last = store.last_turn_in_session("fuzz");
  if (!last) check(last.error());
  auto list = store.list(0);
  if (!list) return check(list.error());
  for (const auto& c : *list) {
    auto found = store.find(c.id);
    if (!found) check(found.error());
    auto turns = store.turns(c.id);
    if (!turns) {
      check(turns.error());
      continue;
    }
    for (const TurnRecord& t : *turns) (void)quip::store::parse_messages(t.messages_json);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static Fixture fx;
  if (size == 0) return 0;
  const fs::path file = fx.dir / "fuzzed.db";
  for (const char* suffix : {"", "-wal", "-shm", "-journal"}) {
    std::error_code ec;
    fs::remove(file.string() + suffix, ec);
  }
  const std::span<const uint8_t> rest(data + 1, size - 1);
  quip::fuzz::write_file(file, (data[0] & 1) != 0 ? std::vector<uint8_t>(rest.begin(), rest.end())
                                                  : quip::fuzz::edited(fx.good, rest));

  if (auto store = Store::open_read_only(file)) {
    exercise(*store);
  } else {
    check(store.error());
  }
  if ((data[0] & 2) != 0) {
    if (auto store = Store::open(file)) {
      auto recorded = store->record_turn(turn("Fuzz"));
      if (!recorded) check(recorded.error());
      exercise(*store);
    } else {
      check(store.error());
    }
  }
  return 0;
}

// Continuous batching: the calls generating on one model at the same moment
// decode together, one forward step for all of them. Each weight is then
// read once per step for every caller, and reading the weights is what a
// step costs a CPU (its memory bandwidth), so several callers get several
// times one caller's tokens per second.
//
// Each call keeps its own Forward: its cache, and the scratch of its
// prompt. The batcher's thread gathers the calls waiting for their next
// token and runs one step over all their caches (Forward::decode, whose
// rows are bit-identical to steps taken alone). A call joins the steps
// when its first answer token is drawn and leaves when its answer ends.
// Prompts take turns with the steps, in arrival order; while others are
// decoding, a prompt goes in slices of kPromptSlice tokens, so that their
// streams keep their pace (the slices' float orders then differ from one
// whole batch's in the last bits, as llama-server's do).
//
// Thread safety: every member may be called from any thread, each Forward
// by one call at a time.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <span>
#include <thread>
#include <vector>

#include "engine/forward.h"
#include "engine/generate.h"
#include "session/loaded_model.h"

namespace quip::serve {

class Batcher final : public engine::Stepper {
 public:
  // Prompt tokens per turn while others are decoding.
  static constexpr size_t kPromptSlice = 64;

  // Steps of `model`'s calls; `options` as their Forwards' (the context
  // chooses LongRoPE's factors, which must be theirs). `on_step`, when
  // set, hears each shared step's row count (the server's metrics).
  Batcher(std::shared_ptr<const session::LoadedModel> model, const engine::ForwardOptions& options,
          std::function<void(size_t rows)> on_step = {});
  ~Batcher() override;
  Batcher(const Batcher&) = delete;
  Batcher& operator=(const Batcher&) = delete;

  std::span<const float> prompt(engine::Forward& fwd, std::span<const int32_t> tokens) override;
  std::span<const float> decode(engine::Forward& fwd, int32_t id) override;
  void done(engine::Forward& fwd) override;

 private:
  // The forward passes' turns, first come first served: one pass at a time
  // uses the threads.
  class Turns {
   public:
    void take();
    void give();

   private:
    std::mutex mu_;
    std::condition_variable cv_;
    uint64_t next_ = 0, serving_ = 0;
  };
  struct Turn {
    explicit Turn(Turns& t) : turns(t) { turns.take(); }
    ~Turn() { turns.give(); }
    Turns& turns;
  };
  // A call in its answer.
  struct Seat {
    int32_t token = 0;
    bool waiting = false;  // its token is to be stepped
    bool ready = false;    // its logits are there
    std::vector<float> logits;
  };

  void loop();

  std::shared_ptr<const session::LoadedModel> model_;
  engine::Forward fwd_;  // for the shared steps' scratch and threads
  std::function<void(size_t)> on_step_;
  Turns turns_;
  std::mutex mu_;
  std::condition_variable cv_;  // a seat waits or leaves, a step ends, stop
  std::map<engine::Forward*, Seat> seats_;
  size_t waiting_ = 0;
  // When the first seat of the next step began to wait, and how long the
  // last step took: the others are waited for at most half a step.
  std::chrono::steady_clock::time_point first_wait_;
  std::chrono::steady_clock::duration last_step_{};
  bool stop_ = false;
  std::thread thread_;
};

}  // namespace quip::serve

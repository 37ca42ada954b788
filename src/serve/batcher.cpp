#include "serve/batcher.h"

#include <algorithm>

namespace quip::serve {

namespace {

using Clock = std::chrono::steady_clock;

// How long a step waits for callers still busy with their last token
// (sampling it, sending it): half the last step's time, within these.
constexpr auto kMinGather = std::chrono::microseconds(100);
constexpr auto kMaxGather = std::chrono::milliseconds(5);

}  // namespace

void Batcher::Turns::take() {
  std::unique_lock lock(mu_);
  const uint64_t mine = next_++;
  cv_.wait(lock, [&] { return serving_ == mine; });
}

void Batcher::Turns::give() {
  {
    std::lock_guard lock(mu_);
    ++serving_;
  }
  cv_.notify_all();
}

Batcher::Batcher(std::shared_ptr<const session::LoadedModel> model,
                 const engine::ForwardOptions& options, std::function<void(size_t)> on_step)
    : model_(std::move(model)),
      fwd_(model_->model, options),
      on_step_(std::move(on_step)),
      thread_([this] { loop(); }) {}

Batcher::~Batcher() {
  {
    std::lock_guard lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  thread_.join();
}

std::span<const float> Batcher::prompt(engine::Forward& fwd, std::span<const int32_t> tokens) {
  std::span<const float> logits;
  for (size_t begin = 0; begin < tokens.size();) {
    size_t n = tokens.size() - begin;
    {
      std::lock_guard lock(mu_);
      if (!seats_.empty()) n = std::min(n, kPromptSlice);
    }
    Turn turn(turns_);
    logits = fwd.eval(tokens.subspan(begin, n));
    begin += n;
  }
  return logits;
}

std::span<const float> Batcher::decode(engine::Forward& fwd, int32_t id) {
  if (!fwd_.decodes_rows()) {
    // A model whose layers carry a recurrent state steps alone, in turn.
    Turn turn(turns_);
    return fwd.eval({&id, 1});
  }
  std::unique_lock lock(mu_);
  Seat& seat = seats_[&fwd];  // (a map's elements stay where they are)
  seat.token = id;
  seat.waiting = true;
  seat.ready = false;
  if (waiting_++ == 0) first_wait_ = Clock::now();
  cv_.notify_all();
  cv_.wait(lock, [&] { return seat.ready; });
  return seat.logits;
}

void Batcher::done(engine::Forward& fwd) {
  {
    std::lock_guard lock(mu_);
    seats_.erase(&fwd);
  }
  cv_.notify_all();  // a step may be waiting for this seat
}

void Batcher::loop() {
  std::vector<engine::Forward::Row> rows;
  std::vector<Seat*> stepped;
  std::unique_lock lock(mu_);
  while (true) {
    cv_.wait(lock, [&] { return stop_ || waiting_ > 0; });
    if (stop_) return;
    // The seats not waiting yet are drawing their last token: they join
    // this step if they come within half a step.
    const auto gather = std::clamp<Clock::duration>(last_step_ / 2, kMinGather, kMaxGather);
    cv_.wait_until(lock, first_wait_ + gather, [&] { return stop_ || waiting_ == seats_.size(); });
    if (stop_) return;
    rows.clear(), stepped.clear();
    for (auto& [fwd, seat] : seats_) {
      if (!seat.waiting || rows.size() == fwd_.max_batch()) continue;
      // The caller waits in decode() while its cache is stepped here.
      rows.push_back({&fwd->cache(), seat.token});
      stepped.push_back(&seat);
      seat.waiting = false;
    }
    waiting_ -= rows.size();
    lock.unlock();
    const auto start = Clock::now();
    std::span<const float> logits;
    {
      Turn turn(turns_);
      logits = fwd_.decode(rows);
    }
    const size_t n_vocab = model_->model.hparams().n_vocab;
    lock.lock();
    last_step_ = Clock::now() - start;
    for (size_t i = 0; i < stepped.size(); ++i) {
      stepped[i]->logits.assign(logits.begin() + static_cast<long>(i * n_vocab),
                                logits.begin() + static_cast<long>((i + 1) * n_vocab));
      stepped[i]->ready = true;
    }
    // Those that came during the step wait for the others from now.
    if (waiting_ > 0) first_wait_ = Clock::now();
    if (on_step_) on_step_(rows.size());
    cv_.notify_all();
  }
}

}  // namespace quip::serve

#include "serve/model_pool.h"

namespace quip::serve {

namespace fs = std::filesystem;

session::Outcome<std::shared_ptr<const session::LoadedModel>> ModelPool::get(const fs::path& path) {
  std::error_code ec;
  fs::path key = fs::canonical(path, ec);
  if (ec) {
    return session::Failure{session::FailureKind::Runtime, path.string() + ": " + ec.message()};
  }
  std::shared_ptr<Entry> e;
  {
    std::lock_guard lock(mu_);
    auto& slot = entries_[key];
    if (!slot) slot = std::make_shared<Entry>();
    e = slot;
  }
  // One load per model; other callers of the same model wait for it, and
  // the pool's lock is not held while it maps and binds the file.
  std::lock_guard load(e->load);
  std::shared_ptr<const session::LoadedModel> model;
  {
    std::lock_guard lock(mu_);
    model = e->model;
  }
  if (!model) {
    auto loaded = session::load_model(key.string());
    if (!loaded) {
      std::lock_guard lock(mu_);
      if (auto it = entries_.find(key); it != entries_.end() && it->second == e) entries_.erase(it);
      return session::Failure{session::FailureKind::BadData, loaded.error().message};
    }
    model = std::make_shared<const session::LoadedModel>(std::move(*loaded));
  }
  std::lock_guard lock(mu_);
  if (!e->model) {
    e->model = model;
    e->bytes = fs::file_size(key, ec);
  }
  e->last_used = std::chrono::steady_clock::now();
  // An entry the reaper dropped while this call loaded goes back in.
  entries_.try_emplace(key, e);
  return model;
}

std::vector<std::string> ModelPool::unload_idle() {
  std::lock_guard lock(mu_);
  const auto now = std::chrono::steady_clock::now();
  std::vector<std::string> unloaded;
  for (auto it = entries_.begin(); it != entries_.end();) {
    Entry& e = *it->second;
    // use_count 1: only the pool holds it; a call in flight holds another,
    // and the model's idle time starts when the last call ends.
    if (e.model && e.model.use_count() > 1) e.last_used = now;
    const bool idle = e.model && e.model.use_count() == 1 && now - e.last_used >= keep_alive_;
    if (idle) {
      unloaded.push_back(e.model->fingerprint);
      it = entries_.erase(it);
    } else {
      ++it;
    }
  }
  return unloaded;
}

std::vector<ModelPool::Held> ModelPool::held() const {
  std::lock_guard lock(mu_);
  std::vector<Held> out;
  const auto now_steady = std::chrono::steady_clock::now();
  const auto now = std::chrono::system_clock::now();
  for (const auto& [path, e] : entries_) {
    if (!e->model) continue;
    Held h{path, e->bytes, {}, static_cast<int>(e->model.use_count() - 1)};
    h.expires = now + std::chrono::duration_cast<std::chrono::system_clock::duration>(
                          e->last_used + keep_alive_ - now_steady);
    out.push_back(std::move(h));
  }
  return out;
}

}  // namespace quip::serve

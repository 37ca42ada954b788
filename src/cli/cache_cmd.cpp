#include "cli/cache_cmd.h"

#include <nlohmann/json.hpp>

#include "base/file_io.h"
#include "base/paths.h"
#include "base/text.h"
#include "cli/config.h"
#include "cli/exit_status.h"
#include "cli/report.h"
#include "cli/usage.h"
#include "store/prefix_cache.h"

namespace quip::cli {

int cache_main(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  CLI::App app{
      "Manage the prefix cache: the evaluated prompts kept on disk so that a call "
      "starting with them evaluates only the rest.",
      "quip cache"};
  app.require_subcommand(1);
  bool json = false;
  std::optional<std::string> max_size, config_file;
  auto* stats = app.add_subcommand("stats", "files, bytes and the size limit");
  stats->add_flag("--json", json, "print one JSON object");
  app.add_subcommand("clear", "remove every cached prefix (only quip's own files)");
  auto* prune = app.add_subcommand(
      "prune", "remove broken files, then the least recently used beyond the limit");
  prune->add_option("--max-size", max_size, "the limit to prune to (default: the configured one)");
  app.add_option("--config", config_file, "the config file (for [cache] max_size)");
  if (std::optional<int> status = parse_args(app, args, out, err)) return *status;

  auto base = cache_dir();
  if (!base) {
    err << "quip cache: no cache folder (set HOME or QUIP_HOME)\n";
    return kExitFailure;
  }
  const std::filesystem::path dir = *base / "kv";
  auto config =
      load_config(config_file ? std::optional<std::filesystem::path>(*config_file) : std::nullopt);
  if (!config) {
    print_error(err, "quip cache", config.error().message);
    return kExitUsage;
  }
  uint64_t limit = config->cache_max_size.value_or(store::kDefaultCacheBytes);
  if (max_size) {
    auto size = store::parse_size(*max_size);
    if (!size) {
      print_error(err, "quip cache", "--max-size: " + size.error().message);
      return kExitUsage;
    }
    limit = *size;
  }

  if (app.got_subcommand("clear")) {
    auto r = store::clear_cache(dir);
    if (!r) {
      print_error(err, "quip cache", r.error().message);
      return kExitFailure;
    }
    out << "removed " << r->files << (r->files == 1 ? " file" : " files") << " ("
        << human_size(r->bytes) << ") from " << printable(dir.string(), 4096) << '\n';
    if (!r->left.empty()) {
      print_warning(err, "quip cache",
                    "left " + std::to_string(r->left.size()) +
                        (r->left.size() == 1 ? " entry" : " entries") +
                        " that quip did not write, e.g. " + r->left.front().string());
    }
    if (!r->failed.empty()) {
      print_error(
          err, "quip cache",
          "cannot remove " + r->failed.front().string() +
              (r->failed.size() > 1 ? " and " + std::to_string(r->failed.size() - 1) + " more"
                                    : std::string()));
      return kExitFailure;
    }
    return kExitOk;
  }
  if (app.got_subcommand("prune")) {
    auto removed = store::prune_cache(dir, limit, /*remove_broken=*/true);
    if (!removed) {
      print_error(err, "quip cache", removed.error().message);
      return kExitFailure;
    }
    out << "removed " << human_size(*removed) << '\n';
    return kExitOk;
  }
  auto s = store::cache_stats(dir);
  if (!s) {
    print_error(err, "quip cache", s.error().message);
    return kExitFailure;
  }
  if (json) {
    nlohmann::json broken = nlohmann::json::array();
    for (const store::BrokenCacheFile& b : s->broken) {
      broken.push_back({{"file", b.path.string()}, {"bytes", b.bytes}, {"problem", b.problem}});
    }
    out << terminal_safe_json(nlohmann::json{
               {"folder", dir.string()},
               {"files", s->files},
               {"bytes", s->bytes},
               {"models", s->models},
               {"max_bytes", limit},
               {"broken", broken},
               {"foreign",
                s->foreign}}.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace))
        << '\n';
  } else {
    out << "folder  " << printable(dir.string(), 4096) << '\n'
        << "models  " << s->models << '\n'
        << "files   " << s->files << '\n'
        << "size    " << human_size(s->bytes) << " of " << human_size(limit) << '\n';
    if (!s->broken.empty()) {
      out << "broken  " << s->broken.size() << " ('quip cache prune' removes them)\n";
      for (const store::BrokenCacheFile& b : s->broken) {
        out << "  " << printable(b.path.string(), 4096) << ": " << printable(b.problem) << '\n';
      }
    }
    if (s->foreign > 0) out << "other   " << s->foreign << " entries quip did not write\n";
  }
  return kExitOk;
}

}  // namespace quip::cli

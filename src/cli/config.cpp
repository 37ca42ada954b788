#include "cli/config.h"

#include <sys/stat.h>
#include <toml++/toml.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <sstream>

#include "base/file_io.h"
#include "base/paths.h"
#include "base/text.h"
#include "store/prefix_cache.h"

namespace quip::cli {

namespace {

namespace fs = std::filesystem;

// A config file is a few lines; anything this large is not one.
constexpr uint64_t kMaxConfigBytes = uint64_t{16} << 20;

// "FILE:LINE: KEY: what is wrong".
class Reporter {
 public:
  explicit Reporter(const fs::path& file) : file_(file.string()) {}

  Error at(const toml::node& node, const std::string& key, const std::string& what) const {
    // A quoted key may hold any character, a line break included.
    return Error{file_ + ":" + std::to_string(node.source().begin.line) + ": " +
                 printable(key, 200) + ": " + what};
  }

 private:
  std::string file_;
};

const char* type_name(const toml::node& node) {
  switch (node.type()) {
    case toml::node_type::string: return "a string";
    case toml::node_type::integer: return "an integer";
    case toml::node_type::floating_point: return "a number";
    case toml::node_type::boolean: return "a boolean";
    case toml::node_type::table: return "a table";
    case toml::node_type::array: return "an array";
    default: return "a date or time";
  }
}

// A leading "~/" is the home folder; a relative path is relative to the
// config file's folder, so a config can sit beside its models.
fs::path resolve_path(const std::string& text, const fs::path& config_file) {
  if (text == "~" || text.starts_with("~/")) {
    if (const char* home = std::getenv("HOME"); home != nullptr && *home != '\0') {
      return fs::path(home) / text.substr(text.size() > 1 ? 2 : 1);
    }
  }
  const fs::path p(text);
  if (p.is_absolute() || config_file.empty()) return p;
  return config_file.parent_path() / p;
}

struct Reader {
  const Reporter& report;
  const fs::path& file;

  Result<std::string> string(const toml::node& node, const std::string& key) const {
    if (const auto* s = node.as_string()) return s->get();
    return report.at(node, key, std::string("expected a string, got ") + type_name(node));
  }

  Result<double> number(const toml::node& node, const std::string& key, double lo,
                        double hi) const {
    double v = 0;
    if (const auto* f = node.as_floating_point()) {
      v = f->get();
    } else if (const auto* i = node.as_integer()) {
      v = static_cast<double>(i->get());
    } else {
      return report.at(node, key, std::string("expected a number, got ") + type_name(node));
    }
    if (!(v >= lo && v <= hi)) {
      std::ostringstream m;
      m << format_number(v) << " is not in [" << format_number(lo) << ", " << format_number(hi)
        << "]";
      return report.at(node, key, m.str());
    }
    return v;
  }

  Result<int64_t> integer(const toml::node& node, const std::string& key, int64_t lo,
                          int64_t hi) const {
    const auto* i = node.as_integer();
    if (i == nullptr) {
      return report.at(node, key, std::string("expected an integer, got ") + type_name(node));
    }
    if (i->get() < lo || i->get() > hi) {
      return report.at(node, key,
                       std::to_string(i->get()) + " is not in [" + std::to_string(lo) + ", " +
                           std::to_string(hi) + "]");
    }
    return i->get();
  }

  static std::string format_number(double v) {
    std::ostringstream s;
    s << v;
    return s.str();
  }

  // One setting; false when `name` is not a setting at all.
  Result<bool> setting(const std::string& name, const toml::node& node, const std::string& key,
                       Settings& s) const {
    constexpr int64_t kMaxInt = int64_t{1} << 40;
    auto set_double = [&](std::optional<double>& field, double lo, double hi) -> Result<bool> {
      auto v = number(node, key, lo, hi);
      if (!v) return v.error();
      field = *v;
      return true;
    };
    auto set_int = [&](std::optional<int64_t>& field, int64_t lo, int64_t hi) -> Result<bool> {
      auto v = integer(node, key, lo, hi);
      if (!v) return v.error();
      field = *v;
      return true;
    };
    if (name == "system") {
      auto v = string(node, key);
      if (!v) return v.error();
      s.system = *v;
      return true;
    }
    if (name == "template") {
      auto v = string(node, key);
      if (!v) return v.error();
      s.template_file = resolve_path(*v, file);
      return true;
    }
    if (name == "temp") return set_double(s.temp, 0, 100);
    if (name == "top_p") return set_double(s.top_p, 0, 1);
    if (name == "min_p") return set_double(s.min_p, 0, 1);
    if (name == "repeat_penalty") return set_double(s.repeat_penalty, 0.01, 100);
    if (name == "top_k") return set_int(s.top_k, 0, kMaxInt);
    if (name == "seed") return set_int(s.seed, 0, std::numeric_limits<int64_t>::max());
    if (name == "ctx_size") return set_int(s.ctx_size, 0, kMaxInt);
    if (name == "threads") return set_int(s.threads, 1, 1024);
    if (name == "n_predict") return set_int(s.n_predict, -1, kMaxInt);
    return false;
  }
};

Result<void> read_model(const Reader& r, const Reporter& report, const std::string& name,
                        const toml::node& node, Config& config) {
  const std::string prefix = "models." + name;
  if (name.empty()) return report.at(node, "models.\"\"", "an alias needs a name");
  const auto* table = node.as_table();
  if (table == nullptr) {
    return report.at(node, prefix, std::string("expected a table, got ") + type_name(node));
  }
  ModelAlias alias;
  bool has_path = false;
  for (const auto& [k, v] : *table) {
    const std::string key(k.str());
    if (key == "path") {
      auto p = r.string(v, prefix + ".path");
      if (!p) return p.error();
      if (p->empty()) return report.at(v, prefix + ".path", "is empty");
      alias.path = resolve_path(*p, r.file);
      has_path = true;
      continue;
    }
    auto known = r.setting(key, v, prefix + "." + key, alias.settings);
    if (!known) return known.error();
    if (!*known) return report.at(v, prefix + "." + key, "unknown key");
  }
  if (!has_path) return report.at(node, prefix, "has no 'path'");
  config.models.emplace(name, std::move(alias));
  return {};
}

}  // namespace

Result<Config> parse_config(std::string_view text, const fs::path& file) {
  toml::table root;
  try {
    root = toml::parse(text, file.string());
  } catch (const toml::parse_error& e) {
    // toml++ quotes the character it saw, which may be a line break.
    return Error{file.string() + ":" + std::to_string(e.source().begin.line) + ": " +
                 printable(e.description(), 200)};
  }
  Config config;
  config.file = file;
  const Reporter report(file);
  const Reader r{report, file};
  for (const auto& [k, v] : root) {
    const std::string key(k.str());
    if (key == "model") {
      auto m = r.string(v, "model");
      if (!m) return m.error();
      if (m->empty()) return report.at(v, "model", "is empty");
      config.default_model = *m;
      continue;
    }
    if (key == "cache") {
      const auto* cache = v.as_table();
      if (cache == nullptr) {
        return report.at(v, "cache", std::string("expected a table, got ") + type_name(v));
      }
      for (const auto& [ck, cv] : *cache) {
        const std::string name = "cache." + std::string(ck.str());
        if (ck.str() != "max_size") return report.at(cv, name, "unknown key");
        if (const auto* i = cv.as_integer(); i != nullptr && i->get() >= 0) {
          config.cache_max_size = static_cast<uint64_t>(i->get());
          continue;
        }
        const auto* size_text = cv.as_string();
        auto size = size_text != nullptr
                        ? store::parse_size(size_text->get())
                        : Result<uint64_t>(Error{"expected a size such as \"4GiB\""});
        if (!size) return report.at(cv, name, size.error().message);
        config.cache_max_size = *size;
      }
      continue;
    }
    if (key == "models") {
      const auto* models = v.as_table();
      if (models == nullptr) {
        return report.at(v, "models", std::string("expected a table, got ") + type_name(v));
      }
      for (const auto& [name, node] : *models) {
        if (auto ok = read_model(r, report, std::string(name.str()), node, config); !ok) {
          return ok.error();
        }
      }
      continue;
    }
    auto known = r.setting(key, v, key, config.settings);
    if (!known) return known.error();
    if (!*known) return report.at(v, key, "unknown key");
  }
  return config;
}

Result<Config> load_config(const std::optional<fs::path>& explicit_file) {
  fs::path file;
  bool must_exist = true;
  if (explicit_file) {
    file = *explicit_file;
  } else if (const char* env = std::getenv("QUIP_CONFIG"); env != nullptr && *env != '\0') {
    file = env;
  } else if (auto dir = config_dir()) {
    file = *dir / "config.toml";
    must_exist = false;
  } else {
    return Config{};
  }
  if (!must_exist) {
    // The default file may be absent; anything else in its place (a
    // directory, a FIFO) is an error, never a silently empty config.
    struct stat st {};
    if (::lstat(file.c_str(), &st) != 0 && errno == ENOENT) return Config{};
  }
  // A regular file only, opened without blocking (a FIFO would hang).
  auto text = read_regular_file(file, kMaxConfigBytes);
  if (!text) return text.error();
  return parse_config(*text, file);
}

Settings merged(const Settings& base, const Settings& over) {
  Settings s = base;
  auto take = [](auto& field, const auto& value) {
    if (value) field = value;
  };
  take(s.system, over.system);
  take(s.template_file, over.template_file);
  take(s.temp, over.temp);
  take(s.top_p, over.top_p);
  take(s.min_p, over.min_p);
  take(s.repeat_penalty, over.repeat_penalty);
  take(s.top_k, over.top_k);
  take(s.seed, over.seed);
  take(s.ctx_size, over.ctx_size);
  take(s.threads, over.threads);
  take(s.n_predict, over.n_predict);
  return s;
}

}  // namespace quip::cli

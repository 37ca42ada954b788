#include "cli/config.h"

#include <sys/stat.h>
#include <toml++/toml.h>

#include <cerrno>
#include <charconv>
#include <cmath>
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

std::string format_number(double v) {
  std::ostringstream s;
  s << v;
  return s.str();
}

// The numeric settings and what each allows: the same for config.toml and
// the command line, and what the sampler and the engine accept, so that a
// value from either place is refused where it is written, naming it.
constexpr int64_t kMaxInt32 = std::numeric_limits<int32_t>::max();
const RealLimit kRealLimits[] = {
    {"temp", "--temp", &Settings::temp, 0, 100, false, "0: greedy"},
    {"top_p", "--top-p", &Settings::top_p, 0, 1, true, "1: no limit"},
    {"min_p", "--min-p", &Settings::min_p, 0, 1, false, "0: no limit"},
    {"repeat_penalty", "--repeat-penalty", &Settings::repeat_penalty, 0, 100, true, "1: none"},
};
const IntLimit kIntLimits[] = {
    {"top_k", "--top-k", &Settings::top_k, 0, kMaxInt32, "0: all"},
    {"seed", "--seed", &Settings::seed, -1, std::numeric_limits<int64_t>::max(), "-1: a fresh one"},
    {"ctx_size", "--ctx-size", &Settings::ctx_size, 0, kMaxInt32, "0: the model's"},
    {"threads", "--threads", &Settings::threads, 1, 1024, nullptr},
    {"n_predict", "--n-predict", &Settings::n_predict, -1, kMaxInt32, "-1: no limit"},
};

}  // namespace

const RealLimit* real_limit(std::string_view key) {
  for (const RealLimit& l : kRealLimits) {
    if (l.key == key || l.flag == key) return &l;
  }
  return nullptr;
}

const IntLimit* int_limit(std::string_view key) {
  for (const IntLimit& l : kIntLimits) {
    if (l.key == key || l.flag == key) return &l;
  }
  return nullptr;
}

namespace {

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

  Result<double> number(const toml::node& node, const std::string& key,
                        const RealLimit& limit) const {
    double v = 0;
    if (const auto* f = node.as_floating_point()) {
      v = f->get();
    } else if (const auto* i = node.as_integer()) {
      v = static_cast<double>(i->get());
    } else {
      return report.at(node, key, std::string("expected a number, got ") + type_name(node));
    }
    if (!limit.allows(v))
      return report.at(node, key, format_number(v) + " is not in " + limit.range());
    return v;
  }

  Result<int64_t> integer(const toml::node& node, const std::string& key,
                          const IntLimit& limit) const {
    const auto* i = node.as_integer();
    if (i == nullptr) {
      return report.at(node, key, std::string("expected an integer, got ") + type_name(node));
    }
    if (!limit.allows(i->get())) {
      return report.at(node, key, std::to_string(i->get()) + " is not in " + limit.range());
    }
    return i->get();
  }

  // One setting; false when `name` is not a setting at all.
  Result<bool> setting(const std::string& name, const toml::node& node, const std::string& key,
                       Settings& s) const {
    if (name == "system") {
      auto v = string(node, key);
      if (!v) return v.error();
      s.system = *v;
      return true;
    }
    if (name == "think") {
      auto v = string(node, key);
      if (!v) return v.error();
      if (*v != "hide" && *v != "show" && *v != "off" && *v != "inline") {
        // (Built in steps: GCC 12 warns falsely of overlap on one expression.)
        std::string what = "'";
        what += printable(*v, 40);
        what += "' is not one of hide, show, off, inline";
        return report.at(node, key, what);
      }
      s.think = *v;
      return true;
    }
    if (name == "template") {
      auto v = string(node, key);
      if (!v) return v.error();
      s.template_file = resolve_path(*v, file);
      return true;
    }
    if (const RealLimit* limit = real_limit(name)) {
      auto v = number(node, key, *limit);
      if (!v) return v.error();
      s.*(limit->field) = *v;
      return true;
    }
    if (const IntLimit* limit = int_limit(name)) {
      auto v = integer(node, key, *limit);
      if (!v) return v.error();
      s.*(limit->field) = *v;
      return true;
    }
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

bool is_variable_name(std::string_view name) {
  if (name.empty() || (name[0] >= '0' && name[0] <= '9')) return false;
  for (const char c : name) {
    const bool ok = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
                    c == '_';
    if (!ok) return false;
  }
  return true;
}

Result<void> read_backend(const Reader& r, const Reporter& report, const std::string& name,
                          const toml::node& node, Config& config) {
  const std::string prefix = "backends." + name;
  if (name.empty()) return report.at(node, "backends.\"\"", "a backend needs a name");
  const auto* table = node.as_table();
  if (table == nullptr) {
    return report.at(node, prefix, std::string("expected a table, got ") + type_name(node));
  }
  BackendConfig backend;
  bool has_url = false;
  for (const auto& [k, v] : *table) {
    const std::string key(k.str());
    const std::string where = prefix + "." + key;
    if (key == "url" || key == "model" || key == "api_key_env") {
      auto text = r.string(v, where);
      if (!text) return text.error();
      if (text->empty()) return report.at(v, where, "is empty");
      if (key == "url") {
        backend.url = *text;
        has_url = true;
      } else if (key == "model") {
        backend.model = *text;
      } else {
        if (!is_variable_name(*text)) {
          // (Built in steps: GCC 12 warns falsely of overlap on one expression.)
          std::string what = "'";
          what += printable(*text, 40);
          what += "' is not a variable name";
          return report.at(v, where, what);
        }
        backend.api_key_env = *text;
      }
    } else if (key == "timeout") {
      const auto* i = v.as_integer();
      if (i == nullptr || i->get() < 1 || i->get() > 86400) {
        return report.at(v, where, "expected an integer number of seconds in [1, 86400]");
      }
      backend.timeout_s = i->get();
    } else if (key == "api_key" || key == "key") {
      // (The value is not quoted: it is a secret.)
      return report.at(v, where,
                       "a key is not written in the config; name the environment variable that "
                       "holds it with api_key_env");
    } else {
      return report.at(v, where, "unknown key");
    }
  }
  if (!has_url) return report.at(node, prefix, "has no 'url'");
  config.backends.emplace(name, std::move(backend));
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
    if (key == "backends") {
      const auto* backends = v.as_table();
      if (backends == nullptr) {
        return report.at(v, "backends", std::string("expected a table, got ") + type_name(v));
      }
      for (const auto& [name, node] : *backends) {
        if (auto ok = read_backend(r, report, std::string(name.str()), node, config); !ok) {
          return ok.error();
        }
      }
      continue;
    }
    auto known = r.setting(key, v, key, config.settings);
    if (!known) return known.error();
    if (!*known) return report.at(v, key, "unknown key");
  }
  for (const auto& [name, backend] : config.backends) {
    // [models] may come after [backends] in the file.
    if (config.models.contains(name)) {
      return Error{file.string() + ": backends." + printable(name, 200) + ": is also [models." +
                   printable(name, 200) + "]; -m NAME must name one"};
    }
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

bool RealLimit::allows(double v) const {
  return std::isfinite(v) && (lo_open ? v > lo : v >= lo) && v <= hi;
}

std::string RealLimit::range() const {
  std::string d =
      std::string(lo_open ? "(" : "[") + format_number(lo) + ", " + format_number(hi) + "]";
  if (meaning != nullptr) d += std::string(" (") + meaning + ")";
  return d;
}

bool IntLimit::allows(int64_t v) const {
  return v >= lo && v <= hi;
}

std::string IntLimit::range() const {
  // Appended piece by piece: GCC 12 sees a false overlap in "[" + to_string(..).
  std::string d = "[";
  d += std::to_string(lo);
  d += ", ";
  d += std::to_string(hi);
  d += "]";
  if (meaning != nullptr) d += std::string(" (") + meaning + ")";
  return d;
}

Result<void> set_from_flag(std::string_view flag, const std::string& text, Settings& s) {
  const std::string shown = printable(text, 40);
  // The whole text as a decimal number; a leading '+' is allowed.
  const char* begin = text.data();
  const char* end = text.data() + text.size();
  if (text.size() > 1 && text[0] == '+' && text[1] != '-') ++begin;
  if (const RealLimit* limit = real_limit(flag)) {
    // "1e-3" too; "nan" and "inf" parse, and fail the range.
    double v = 0;
    const auto [p, ec] = std::from_chars(begin, end, v);
    if (begin == end || p != end || (ec != std::errc() && ec != std::errc::result_out_of_range)) {
      return Error{std::string(flag) + " '" + shown + "' is not a number in " + limit->range()};
    }
    if (ec == std::errc::result_out_of_range || !limit->allows(v)) {
      return Error{std::string(flag) + " " + shown + " is not in " + limit->range()};
    }
    s.*(limit->field) = v;
    return {};
  }
  const IntLimit* limit = int_limit(flag);
  CHECK(limit != nullptr);
  int64_t v = 0;
  const auto [p, ec] = std::from_chars(begin, end, v);
  if (begin == end || p != end || (ec != std::errc() && ec != std::errc::result_out_of_range)) {
    return Error{std::string(flag) + " '" + shown + "' is not an integer in " + limit->range()};
  }
  // Beyond int64 is beyond the allowed range too: said, not clamped.
  if (ec == std::errc::result_out_of_range || !limit->allows(v)) {
    return Error{std::string(flag) + " " + shown + " is not in " + limit->range()};
  }
  s.*(limit->field) = v;
  return {};
}

Settings merged(const Settings& base, const Settings& over) {
  Settings s = base;
  auto take = [](auto& field, const auto& value) {
    if (value) field = value;
  };
  take(s.system, over.system);
  take(s.think, over.think);
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

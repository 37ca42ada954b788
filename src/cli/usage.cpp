#include "cli/usage.h"

#include <algorithm>
#include <charconv>
#include <cstdlib>
#include <map>

#include "base/text.h"
#include "cli/exit_status.h"
#include "cli/options.h"
#include "cli/report.h"

namespace quip::cli {

namespace {

// `app` and the subcommands it has (parsed or not).
std::vector<const CLI::App*> apps_of(const CLI::App& app) {
  std::vector<const CLI::App*> apps = {&app};
  for (const CLI::App* sub : app.get_subcommands([](const CLI::App*) { return true; })) {
    apps.push_back(sub);
  }
  return apps;
}

std::vector<const CLI::Option*> options_of(const CLI::App& app) {
  std::vector<const CLI::Option*> all;
  for (const CLI::App* a : apps_of(app)) {
    for (const CLI::Option* o : a->get_options()) {
      if (o->get_name() != "--help") all.push_back(o);
    }
  }
  return all;
}

// The option `token` names (as CLI11 reads it: "--name", "--name=value",
// "-x", "-xVALUE"), or nullptr.
const CLI::Option* option_named(const std::vector<const CLI::Option*>& options,
                                std::string_view token) {
  if (token.size() < 2 || token[0] != '-') return nullptr;
  for (const CLI::Option* o : options) {
    if (o->get_positional()) continue;
    if (token.starts_with("--")) {
      const std::string_view name = token.substr(2, token.find('=') - 2);
      const auto& l = o->get_lnames();
      if (std::find(l.begin(), l.end(), name) != l.end()) return o;
    } else {
      const auto& s = o->get_snames();
      if (std::find(s.begin(), s.end(), token.substr(1, 1)) != s.end()) return o;
    }
  }
  return nullptr;
}

// How the user spelt option `o` ("-m" rather than "--model"), or its name.
std::string typed_name(const CLI::Option* o, const std::vector<const CLI::Option*>& options,
                       const std::vector<std::string>& args) {
  for (const std::string& a : args) {
    if (a == "--") break;
    if (option_named(options, a) == o) {
      return a.starts_with("--") ? a.substr(0, a.find('=')) : a.substr(0, 2);
    }
  }
  return o->get_name();
}

// "-m given twice" when an option that takes one value appears more than
// once (CLI11 would say "At Most 1 required but received 2").
std::optional<std::string> repeated_option(const CLI::App& app,
                                           const std::vector<std::string>& args) {
  const std::vector<const CLI::Option*> options = options_of(app);
  std::map<const CLI::Option*, int> seen;
  for (const std::string& a : args) {
    if (a == "--") break;
    const CLI::Option* o = option_named(options, a);
    if (o == nullptr || o->get_items_expected_max() != 1) continue;  // a flag, or a list
    if (++seen[o] == 2) return typed_name(o, options, args) + " given twice";
  }
  return std::nullopt;
}

// The noun for an empty value of an option that names something.
const std::map<std::string, std::string, std::less<>>& kNamedValues() {
  static const std::map<std::string, std::string, std::less<>> m = {
      {"--model", "model name"},   {"--file", "file name"}, {"--template", "file name"},
      {"--config", "file name"},   {"FILE", "file name"},   {"MESSAGES", "file name"},
      {"--cid", "conversation id"}};
  return m;
}

// "-m: empty model name": a name or file given as "" is a mistake (an
// empty --system is a choice, and an empty PROMPT word is just empty).
std::optional<std::string> empty_value(const CLI::App& app, const std::vector<std::string>& args) {
  const std::vector<const CLI::Option*> options = options_of(app);
  for (const CLI::Option* o : options) {
    const auto noun = kNamedValues().find(o->get_name());
    if (noun == kNamedValues().end()) continue;
    for (const std::string& v : o->results()) {
      if (v.empty()) return typed_name(o, options, args) + ": empty " + noun->second;
    }
  }
  return std::nullopt;
}

// CLI11 reads integers with strtoll(base 0): "010" is 8, "0x10" 16, and a
// value past the type's range comes back clamped, all silently. An integer
// option takes decimal digits that fit, or it is an error.
std::optional<std::string> bad_integer(const CLI::App& app, const std::vector<std::string>& args) {
  const std::vector<const CLI::Option*> options = options_of(app);
  for (const CLI::Option* o : options) {
    const std::string type = o->get_type_name();
    if (type != "INT" && type != "UINT") continue;
    for (const std::string& v : o->results()) {
      const std::string_view digits = std::string_view(v).substr(v.starts_with('-') ? 1 : 0);
      const bool decimal =
          !digits.empty() && (digits.size() == 1 || digits[0] != '0') &&
          std::all_of(digits.begin(), digits.end(), [](char c) { return c >= '0' && c <= '9'; });
      const std::string name = typed_name(o, options, args);
      if (!decimal) return name + ": '" + printable(v) + "' is not a decimal integer";
      int64_t value = 0;
      const auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), value);
      if (ec != std::errc() || end != v.data() + v.size() || (type == "UINT" && value < 0)) {
        return name + ": '" + printable(v) + "' is not an integer in range";
      }
    }
  }
  return std::nullopt;
}

// "--name=" is an empty value, as "--name ''" is (CLI11 would take the
// next argument instead).
std::vector<std::string> split_empty_values(const CLI::App& app,
                                            const std::vector<std::string>& args) {
  const std::vector<const CLI::Option*> options = options_of(app);
  std::vector<std::string> out;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a == "--") {
      out.insert(out.end(), args.begin() + static_cast<std::ptrdiff_t>(i), args.end());
      break;
    }
    const CLI::Option* o = option_named(options, a);
    if (o != nullptr && a.starts_with("--") && a.ends_with("=") && a.find('=') == a.size() - 1 &&
        o->get_items_expected_max() > 0) {
      out.push_back(a.substr(0, a.size() - 1));
      out.emplace_back();
      continue;
    }
    out.push_back(a);
  }
  return out;
}

// The text after "PREFIX" in a CLI11 message, or nullopt.
std::optional<std::string> after(const std::string& what, std::string_view prefix) {
  if (!what.starts_with(prefix)) return std::nullopt;
  return what.substr(prefix.size());
}

bool is_integer_text(const std::string& v) {
  if (v.empty()) return false;
  size_t i = v[0] == '-' || v[0] == '+' ? 1 : 0;
  return i < v.size() && std::all_of(v.begin() + static_cast<std::ptrdiff_t>(i), v.end(),
                                     [](char c) { return c >= '0' && c <= '9'; });
}

// CLI11's message made to read like quip's others.
std::string readable(const CLI::ParseError& e, const CLI::App& app,
                     const std::vector<std::string>& args) {
  const std::string what = e.what();
  const std::vector<const CLI::Option*> options = options_of(app);
  const auto option_of = [&](const std::string& name) -> const CLI::Option* {
    for (const CLI::Option* o : options) {
      if (o->get_name() == name || o->check_name(name)) return o;
    }
    return nullptr;
  };
  if (dynamic_cast<const CLI::ConversionError*>(&e) != nullptr) {
    // "Could not convert: --temp = abc"
    if (auto rest = after(what, "Could not convert: ")) {
      const size_t eq = rest->find(" = ");
      if (eq != std::string::npos) {
        const std::string name = rest->substr(0, eq), value = rest->substr(eq + 3);
        const CLI::Option* o = option_of(name);
        const std::string shown = o != nullptr ? typed_name(o, options, args) : name;
        const std::string type = o != nullptr ? o->get_type_name() : "";
        std::string expected = "a valid value";
        if (type == "FLOAT") expected = "a number";
        if (type == "INT" || type == "UINT") {
          expected = is_integer_text(value) ? "an integer in range" : "an integer";
        }
        return shown + ": '" + printable(value) + "' is not " + expected;
      }
    }
  }
  if (dynamic_cast<const CLI::ArgumentMismatch*>(&e) != nullptr) {
    // "--model: 1 required TEXT missing"
    const size_t colon = what.find(": ");
    if (colon != std::string::npos && what.ends_with(" missing")) {
      const CLI::Option* o = option_of(what.substr(0, colon));
      if (o != nullptr) return typed_name(o, options, args) + " needs a value";
    }
  }
  if (dynamic_cast<const CLI::ExtrasError*>(&e) != nullptr) {
    // "The following argument(s) was/were not expected: x y"
    const size_t colon = what.find(": ");
    if (colon != std::string::npos) {
      std::string first = what.substr(colon + 2);
      first = first.substr(0, first.find(' '));
      if (first.size() > 1 && first[0] == '-' && !is_integer_text(first)) {
        return "unknown option " + printable(first);
      }
      return "unexpected argument '" + printable(first) + "'";
    }
  }
  if (dynamic_cast<const CLI::RequiredError*>(&e) != nullptr &&
      what == "A subcommand is required") {
    std::string names;
    for (const CLI::App* sub : app.get_subcommands([](const CLI::App*) { return true; })) {
      names += (names.empty() ? "" : ", ") + sub->get_name();
    }
    for (size_t i = 0; i < args.size(); ++i) {
      const CLI::Option* o = option_named(options, args[i]);
      if (o != nullptr && o->get_items_expected_max() > 0 &&
          args[i].find('=') == std::string::npos &&
          (args[i].starts_with("--") || args[i].size() == 2)) {
        ++i;  // its value
        continue;
      }
      if (!args[i].starts_with("-")) {
        return "unknown command '" + printable(args[i]) + "' (one of " + names + ")";
      }
    }
    return "give a command: one of " + names;
  }
  std::string line = what;
  std::replace(line.begin(), line.end(), '\n', ' ');
  return line;
}

}  // namespace

std::optional<int> parse_args(CLI::App& app, const std::vector<std::string>& args,
                              std::ostream& out, std::ostream& err) {
  const std::string who = app.get_name();
  const auto usage_error = [&](const std::string& message) {
    print_error(err, who, message + " (see '" + who + " --help')");
    return kExitUsage;
  };
  const std::vector<std::string> given = split_empty_values(app, args);
  if (auto repeated = repeated_option(app, given)) return usage_error(*repeated);
  std::vector<std::string> reversed(given.rbegin(), given.rend());  // CLI11 consumes from the back
  try {
    app.parse(reversed);
  } catch (const CLI::CallForHelp&) {
    return print_command_help(app, out, err);
  } catch (const CLI::ParseError& e) {
    return usage_error(readable(e, app, given));
  }
  if (auto empty = empty_value(app, given)) return usage_error(*empty);
  if (auto bad = bad_integer(app, given)) return usage_error(*bad);
  return std::nullopt;
}

}  // namespace quip::cli

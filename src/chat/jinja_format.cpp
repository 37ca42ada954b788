// Python's two string formatting languages: "%s" % x (and |format) and
// "{}".format(x), with the common conversions and format specs.
#include <algorithm>
#include <cmath>
#include <cstdio>

#include "chat/jinja_builtins.h"
#include "chat/jinja_string.h"
#include "tokenizer/unicode.h"

namespace quip::chat::jinja {
namespace {

// Formatted output is bounded by the evaluator's string limit afterwards;
// this bounds one field's width before it is built.
constexpr int64_t kMaxFieldWidth = 1 << 20;

struct Spec {
  char fill = ' ';
  char align = '\0';  // < > ^ =, or none
  char sign = '-';
  bool alternate = false;
  int64_t width = 0;
  int64_t precision = -1;
  char type = '\0';
};

std::string pad(std::string body, const Spec& s, char default_align) {
  const auto len = static_cast<int64_t>(utf8_length(body));
  if (s.width <= len) return body;
  const auto margin = static_cast<size_t>(s.width - len);
  const char align = s.align ? s.align : default_align;
  if (align == '<') return body + std::string(margin, s.fill);
  if (align == '^') return std::string(margin / 2, s.fill) + body + std::string(margin - margin / 2, s.fill);
  if (align == '=' && !body.empty() && (body[0] == '-' || body[0] == '+' || body[0] == ' ')) {
    return body.substr(0, 1) + std::string(margin, s.fill) + body.substr(1);
  }
  return std::string(margin, s.fill) + body;
}

// A number through printf: `conv` is one of d x X o e E f F g G.
std::string printf_number(const Value& v, char conv, const Spec& s) {
  char fmt[32];
  char buf[1024];  // 309 integer digits + 340 decimals at most
  std::string flags;
  if (s.sign == '+') flags += '+';
  if (s.sign == ' ') flags += ' ';
  if (s.alternate) flags += '#';
  if (conv == 'd' || conv == 'x' || conv == 'X' || conv == 'o') {
    std::snprintf(fmt, sizeof fmt, "%%%sll%c", flags.c_str(), conv);
    const long long i = v.is_float() ? static_cast<long long>(std::trunc(v.as_float())) : v.as_int();
    std::snprintf(buf, sizeof buf, fmt, i);
  } else {
    const int prec = static_cast<int>(std::min<int64_t>(s.precision < 0 ? 6 : s.precision, 300));
    std::snprintf(fmt, sizeof fmt, "%%%s.%d%c", flags.c_str(), prec, conv);
    std::snprintf(buf, sizeof buf, fmt, v.as_float());
  }
  return buf;
}

// Python's '%' conversion for one value.
Result<std::string> percent_one(const Value& v, char conv, const Spec& s) {
  switch (conv) {
    case 's':
    case 'r':
    case 'a': {
      std::string t = conv == 's' ? to_str(v) : to_repr(v);
      if (s.precision >= 0) {
        const std::vector<std::string_view> chars = utf8_chars(t);
        if (static_cast<size_t>(s.precision) < chars.size()) {
          std::string cut;
          for (int64_t i = 0; i < s.precision; ++i) cut += chars[static_cast<size_t>(i)];
          t = std::move(cut);
        }
      }
      return pad(std::move(t), s, s.align == '<' ? '<' : '>');
    }
    case 'd':
    case 'i':
    case 'u':
    case 'x':
    case 'X':
    case 'o':
    case 'e':
    case 'E':
    case 'f':
    case 'F':
    case 'g':
    case 'G': {
      if (!v.is_number()) {
        return Error{std::string("%") + conv + " format: a real number is required, not " + v.type_name()};
      }
      const char c = conv == 'i' || conv == 'u' ? 'd' : conv;
      Spec t = s;
      if (t.fill == '0' && t.align == '<') t.fill = ' ';
      return pad(printf_number(v, c, t), t, t.fill == '0' ? '=' : '>');
    }
    case 'c': {
      if (v.is_string() && utf8_length(v.str()) == 1) return pad(v.str(), s, '>');
      if (v.is_int() && v.as_int() >= 0 && v.as_int() <= 0x10FFFF &&
          !(v.as_int() >= 0xD800 && v.as_int() <= 0xDFFF)) {
        std::string out;
        tokenizer::utf8_append(out, static_cast<uint32_t>(v.as_int()));
        return pad(out, s, '>');
      }
      return Error{"%c requires an int or a single character"};
    }
    default: return Error{std::string("unsupported format character '") + conv + "'"};
  }
}

}  // namespace

Result<std::string> percent_format(std::string_view format, const Value& args) {
  ValueList positional;
  const Dict* mapping = nullptr;
  if (args.kind() == Value::Kind::Tuple) {
    positional = args.items();
  } else if (args.kind() == Value::Kind::Dict) {
    mapping = &args.dict_ref();
  } else {
    positional.push_back(args);
  }
  size_t next = 0;
  std::string out;
  for (size_t i = 0; i < format.size(); ++i) {
    if (format[i] != '%') {
      out += format[i];
      continue;
    }
    if (++i >= format.size()) return Error{"incomplete format"};
    const Value* value = nullptr;
    if (format[i] == '(') {
      const size_t close = format.find(')', i);
      if (close == std::string_view::npos) return Error{"incomplete format key"};
      if (mapping == nullptr) return Error{"format requires a mapping"};
      value = mapping->find(format.substr(i + 1, close - i - 1));
      if (value == nullptr) return Error{std::string("KeyError: '") + std::string(format.substr(i + 1, close - i - 1)) + "'"};
      i = close + 1;
    }
    Spec s;
    s.align = '>';
    for (; i < format.size() && std::string_view("-+ #0").find(format[i]) != std::string_view::npos; ++i) {
      if (format[i] == '-') s.align = '<';
      if (format[i] == '+' || format[i] == ' ') s.sign = format[i];
      if (format[i] == '#') s.alternate = true;
      if (format[i] == '0') s.fill = '0';
    }
    const auto number = [&](int64_t& target) -> Result<void> {
      if (i < format.size() && format[i] == '*') {
        if (next >= positional.size()) return Error{"not enough arguments for format string"};
        Result<int64_t> n = to_int_arg(positional[next++], "* width");
        if (!n) return n.error();
        target = *n;
        ++i;
        return {};
      }
      target = 0;
      for (; i < format.size() && format[i] >= '0' && format[i] <= '9'; ++i) {
        target = std::min<int64_t>(target * 10 + (format[i] - '0'), kMaxFieldWidth);
      }
      return {};
    };
    if (auto r = number(s.width); !r) return r.error();
    if (i < format.size() && format[i] == '.') {
      ++i;
      if (auto r = number(s.precision); !r) return r.error();
    }
    if (i >= format.size()) return Error{"incomplete format"};
    const char conv = format[i];
    if (conv == '%') {
      out += '%';
      continue;
    }
    if (value == nullptr) {
      if (mapping != nullptr) {
        value = &args;
      } else {
        if (next >= positional.size()) return Error{"not enough arguments for format string"};
        value = &positional[next++];
      }
    }
    Result<std::string> one = percent_one(*value, conv, s);
    if (!one) return one.error();
    out += *one;
  }
  // Python skips this check for arguments it could index (a list, a dict).
  if (mapping == nullptr && args.kind() != Value::Kind::List && next < positional.size()) {
    return Error{"not all arguments converted during string formatting"};
  }
  return out;
}

namespace {

// The format-spec mini-language: [[fill]align][sign][#][0][width][,][.precision][type].
Result<std::string> format_spec(const Value& v, std::string_view spec) {
  Spec s;
  size_t i = 0;
  const auto is_align = [](char c) { return c == '<' || c == '>' || c == '^' || c == '='; };
  if (spec.size() >= 2 && is_align(spec[1])) {
    s.fill = spec[0];
    s.align = spec[1];
    i = 2;
  } else if (!spec.empty() && is_align(spec[0])) {
    s.align = spec[0];
    i = 1;
  }
  if (i < spec.size() && (spec[i] == '+' || spec[i] == '-' || spec[i] == ' ')) s.sign = spec[i++];
  if (i < spec.size() && spec[i] == '#') s.alternate = true, ++i;
  if (i < spec.size() && spec[i] == '0') {
    if (s.align == '\0') s.fill = '0', s.align = '=';
    ++i;
  }
  for (; i < spec.size() && spec[i] >= '0' && spec[i] <= '9'; ++i) {
    s.width = std::min<int64_t>(s.width * 10 + (spec[i] - '0'), kMaxFieldWidth);
  }
  char grouping = '\0';
  if (i < spec.size() && (spec[i] == ',' || spec[i] == '_')) grouping = spec[i++];
  if (i < spec.size() && spec[i] == '.') {
    s.precision = 0;
    for (++i; i < spec.size() && spec[i] >= '0' && spec[i] <= '9'; ++i) {
      s.precision = std::min<int64_t>(s.precision * 10 + (spec[i] - '0'), 300);
    }
  }
  if (i < spec.size()) s.type = spec[i++];
  if (i != spec.size()) return Error{std::string("Invalid format specifier '") + std::string(spec) + "'"};
  if (v.is_string() || !v.is_number()) {
    if (s.type != '\0' && s.type != 's') {
      return Error{std::string("Unknown format code '") + std::string(1, s.type) + "' for object of type '" + v.type_name() + "'"};
    }
    Spec t = s;
    t.align = s.align ? s.align : '<';
    return percent_one(v, 's', t);
  }
  char type = s.type;
  if (type == '\0') {
    if (!v.is_float()) {
      type = 'd';
    } else if (s.precision < 0) {
      return pad(to_str(v), s, '>');
    } else {
      type = 'g';
    }
  }
  if (type == 'n') type = v.is_float() ? 'g' : 'd';
  if (type == '%') {
    Spec t = s;
    const Value scaled = Value::number(v.as_float() * 100);
    return pad(printf_number(scaled, 'f', t) + "%", s, '>');
  }
  if (type == 'b') {
    if (v.is_float()) return Error{"Unknown format code 'b' for object of type 'float'"};
    const int64_t n = v.as_int();
    uint64_t u = n < 0 ? 0 - static_cast<uint64_t>(n) : static_cast<uint64_t>(n);
    std::string bits;
    do {
      bits.insert(bits.begin(), static_cast<char>('0' + (u & 1)));
      u >>= 1;
    } while (u != 0);
    if (s.alternate) bits = std::string("0b") + bits;
    if (n < 0) bits = std::string("-") + bits;
    else if (s.sign != '-') bits = std::string(1, s.sign) + bits;
    return pad(bits, s, '>');
  }
  if (std::string_view("dxXo").find(type) != std::string_view::npos && v.is_float()) {
    return Error{std::string("Unknown format code '") + std::string(1, type) + "' for object of type 'float'"};
  }
  if (std::string_view("dxXoeEfFgG").find(type) == std::string_view::npos) {
    return Error{std::string("Unknown format code '") + std::string(1, type) + "'"};
  }
  std::string body = printf_number(v, type, s);
  if (grouping != '\0' && (type == 'd' || type == 'f' || type == 'F')) {
    // Separators every three digits of the integer part.
    size_t b = body.find_first_of("0123456789");
    size_t e = body.find_first_not_of("0123456789", b);
    if (e == std::string::npos) e = body.size();
    for (size_t k = e; k > b + 3; k -= 3) body.insert(k - 3, 1, grouping);
  }
  return pad(std::move(body), s, '>');
}

}  // namespace

Result<std::string> brace_format(std::string_view format, const CallArgs& args) {
  std::string out;
  size_t auto_index = 0;
  for (size_t i = 0; i < format.size(); ++i) {
    const char c = format[i];
    if (c == '}') {
      if (i + 1 < format.size() && format[i + 1] == '}') {
        out += '}';
        ++i;
        continue;
      }
      return Error{"Single '}' encountered in format string"};
    }
    if (c != '{') {
      out += c;
      continue;
    }
    if (i + 1 < format.size() && format[i + 1] == '{') {
      out += '{';
      ++i;
      continue;
    }
    const size_t close = format.find('}', i);
    if (close == std::string_view::npos) return Error{"Single '{' encountered in format string"};
    std::string_view field = format.substr(i + 1, close - i - 1);
    i = close;
    std::string_view spec, conversion;
    if (const size_t colon = field.find(':'); colon != std::string_view::npos) {
      spec = field.substr(colon + 1);
      field = field.substr(0, colon);
    }
    if (const size_t bang = field.find('!'); bang != std::string_view::npos) {
      conversion = field.substr(bang + 1);
      field = field.substr(0, bang);
    }
    const size_t name_end = std::min(field.find('.'), field.find('['));
    const std::string_view name = field.substr(0, name_end);
    Value v;
    if (name.empty()) {
      if (auto_index >= args.positional.size()) return Error{std::string("Replacement index ") + std::to_string(auto_index) + " out of range"};
      v = args.positional[auto_index++];
    } else if (std::all_of(name.begin(), name.end(), [](char d) { return d >= '0' && d <= '9'; })) {
      const size_t k = name.size() < 10 ? std::stoul(std::string(name)) : SIZE_MAX;
      if (k >= args.positional.size()) return Error{std::string("Replacement index ") + std::string(name) + " out of range"};
      v = args.positional[k];
    } else {
      bool found = false;
      for (const auto& [key, val] : args.keyword) {
        if (key == name) v = val, found = true;
      }
      if (!found) return Error{std::string("KeyError: '") + std::string(name) + "'"};
    }
    // .attr and [key] after the name.
    for (std::string_view rest = name_end == std::string_view::npos ? "" : field.substr(name_end); !rest.empty();) {
      const bool dot = rest[0] == '.';
      const size_t end = dot ? std::min(rest.find('.', 1), rest.find('[', 1)) : rest.find(']');
      if (!dot && end == std::string_view::npos) return Error{"Missing ']' in format string"};
      const std::string key(rest.substr(1, (end == std::string_view::npos ? rest.size() : end) - 1));
      const Value* found = v.is_mapping() ? v.dict_ref().find(std::string_view(key)) : nullptr;
      if (found == nullptr && v.is_list_like() && !key.empty() && key.size() < 10 &&
          std::all_of(key.begin(), key.end(), [](char d) { return d >= '0' && d <= '9'; })) {
        const size_t k = std::stoul(key);
        if (k < v.items().size()) found = &v.items()[k];
      }
      if (found == nullptr) return Error{std::string("cannot look up '") + key + "' in a format field"};
      const Value next = *found;
      v = next;
      rest = end == std::string_view::npos ? "" : rest.substr(dot ? end : end + 1);
    }
    if (conversion == "r" || conversion == "a") {
      v = Value::string(to_repr(v));
    } else if (conversion == "s") {
      v = Value::string(to_str(v));
    } else if (!conversion.empty()) {
      return Error{std::string("Unknown conversion specifier ") + std::string(conversion)};
    }
    Result<std::string> one = format_spec(v, spec);
    if (!one) return one.error();
    out += *one;
  }
  return out;
}

}  // namespace quip::chat::jinja

// Unit tests of the Jinja engine, one TEST per feature area. The expected
// texts are what Python's jinja2 3.1 prints with Hugging Face's
// apply_chat_template settings (checked with it when written); where quip
// deliberately differs, the jinja2 output is given in a comment.
#include <gtest/gtest.h>

#include <cstdlib>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "chat/chat_template.h"

namespace quip::chat {
namespace {

constexpr int64_t kFixedNow = 1767323045;  // 2026-01-02 03:04:05 UTC

// Renders `source` with the variables in `context` (a JSON object), no
// messages; returns the text, or "ERROR " and the message.
std::string render(std::string_view source, const char* context = "{}") {
  Result<ChatTemplate> t = ChatTemplate::parse(source);
  if (!t) return "ERROR " + t.error().message;
  RenderOptions options;
  options.now = kFixedNow;
  options.extra_ordered = nlohmann::ordered_json::parse(context);
  Result<std::string> out = t->render(nlohmann::ordered_json::array(), options);
  if (!out) return "ERROR " + out.error().message;
  return *out;
}

// The error a template fails with, or "" when it renders.
std::string error_of(std::string_view source, const char* context = "{}") {
  const std::string out = render(source, context);
  return out.starts_with("ERROR ") ? out.substr(6) : "";
}

#define EXPECT_FAILS(...) EXPECT_NE(error_of(__VA_ARGS__), "") << render(__VA_ARGS__)

constexpr const char* kPrintingContext =
    R"j({"x": {"b": 1, "a": [true, null, 2.5, "s"]}})j";
constexpr const char* kMethodsContext =
    R"j({"d": {"a": 1, "b": [2], "items": "key"}})j";
constexpr const char* kFiltersContext =
    R"j({"d": {"b": 2, "a": 1}, "x": {"name": "q", "list": [1, {"k": "v"}], "u": "ü"}, "users": [{"name": "a", "active": true, "n": 1, "age": 30}, {"name": "c", "active": false, "n": 5}, {"name": "b", "active": true, "n": 2}]})j";
constexpr const char* kTestsContext =
    R"j({"x": 1})j";
constexpr const char* kStatementsContext =
    R"j({"x": 2, "items": [1, 2, 3]})j";
constexpr const char* kUndefinedContext =
    R"j({"d": {}})j";

// Values print as Python str() does: repr() inside containers, shortest round-trip floats.
TEST(Jinja, Printing) {
  EXPECT_EQ(render(R"j({{ 1 }}|{{ 1.0 }}|{{ -0.0 }}|{{ 1e-5 }}|{{ 1e20 }}|{{ 0.1 + 0.2 }}|{{ 1e16 }}|{{ 123456789012345.6 }}|{{ 2.5e-4 }})j"),
            R"j(1|1.0|-0.0|1e-05|1e+20|0.30000000000000004|1e+16|123456789012345.6|0.00025)j");
  EXPECT_EQ(render(R"j({{ none }}|{{ None }}|{{ true }}|{{ False }}|{{ "s" }})j"),
            R"j(None|None|True|False|s)j");
  EXPECT_EQ(render(R"j({{ [1, "a", 1.5, none, true] }})j"),
            R"j([1, 'a', 1.5, None, True])j");
  EXPECT_EQ(render(R"j({{ {"k": [1, 2], "n": none} }})j"),
            R"j({'k': [1, 2], 'n': None})j");
  EXPECT_EQ(render(R"j({{ (1, 2) }}|{{ (1,) }}|{{ () }})j"),
            R"j((1, 2)|(1,)|())j");
  EXPECT_EQ(render(R"j({{ ["it's", 'say "hi"', 'both \' "', 'tab\tnew\nline', 'back\\slash'] }})j"),
            R"j(["it's", 'say "hi"', 'both \' "', 'tab\tnew\nline', 'back\\slash'])j");
  EXPECT_EQ(render(R"j({{ ["ü", "\u00a0", "\x01"] }})j"),
            R"j(['ü', '\xa0', '\x01'])j");
  EXPECT_EQ(render(R"j({{ 1, 2 }})j"),
            R"j((1, 2))j");
  EXPECT_EQ(render(R"j({{ [] }}|{{ {} }})j"),
            R"j([]|{})j");
  EXPECT_EQ(render(R"j({{ "a" "b" }})j"),
            R"j(ab)j");
  EXPECT_EQ(render(R"j({{ 0x1F }}|{{ 1_000 }}|{{ 0o17 }}|{{ 0b101 }}|{{ 1.5e3 }}|{{ 2E2 }})j"),
            R"j(31|1000|15|5|1500.0|200.0)j");
  EXPECT_EQ(render(R"j({{ x }})j", kPrintingContext),
            R"j({'b': 1, 'a': [True, None, 2.5, 's']})j");
}

// Python arithmetic: int and float kept apart, floor division and modulo toward
// -inf, ** left-associative as jinja2 parses it.
TEST(Jinja, Arithmetic) {
  EXPECT_EQ(render(R"j({{ 7 / 2 }}|{{ 6 / 2 }}|{{ 7 // 2 }}|{{ -7 // 2 }}|{{ 7 % 3 }}|{{ -7 % 3 }}|{{ 7 % -3 }}|{{ 7.5 % 2 }}|{{ 7.0 // 2 }})j"),
            R"j(3.5|3.0|3|-4|1|2|-2|1.5|3.0)j");
  EXPECT_EQ(render(R"j({{ 2 ** 10 }}|{{ 2 ** -1 }}|{{ 2 ** 3 ** 2 }}|{{ 2.0 ** 2 }}|{{ -2 ** 2 }})j"),
            R"j(1024|0.5|64|4.0|4)j");
  EXPECT_EQ(render(R"j({{ 1 + 1.0 }}|{{ true + 1 }}|{{ 3 - 5 }}|{{ 2 * 3.5 }}|{{ -(3) }}|{{ +4 }}|{{ 10 - 2 - 3 }}|{{ 2 + 3 * 4 }}|{{ (2 + 3) * 4 }})j"),
            R"j(2.0|2|-2|7.0|-3|4|5|14|20)j");
  EXPECT_EQ(render(R"j({{ "a" + "b" }}|{{ "ab" * 3 }}|{{ 2 * "x" }}|{{ [1] * 3 }}|{{ [1] + [2] }}|{{ (1,) + (2,) }}|{{ "x" ~ 1 ~ none ~ [1] ~ 1.0 }})j"),
            R"j(ab|ababab|xx|[1, 1, 1]|[1, 2]|(1, 2)|x1None[1]1.0)j");
  EXPECT_EQ(render(R"j({{ "%s-%d-%05.2f-%r-%x" % ("a", 42, 3.14159, "q", 255) }}|{{ "%(a)s=%(b)s" % {"a": 1, "b": 2} }}|{{ "%s" % [1, 2] }}|{{ "100%%" % () }})j"),
            R"j(a-42-03.14-'q'-ff|1=2|[1, 2]|100%)j");
  EXPECT_FAILS(R"j({{ 1 / 0 }})j");  // ZeroDivisionError: division by zero
  EXPECT_FAILS(R"j({{ 1 // 0 }})j");  // ZeroDivisionError: integer division or modulo by zero
  EXPECT_FAILS(R"j({{ "a" + 1 }})j");  // TypeError: can only concatenate str (not "int") to str
  EXPECT_FAILS(R"j({{ "a" - "b" }})j");  // TypeError: unsupported operand type(s) for -: 'str' and 'str
  EXPECT_FAILS(R"j({{ [1] + (2,) }})j");  // TypeError: can only concatenate list (not "tuple") to list
  EXPECT_FAILS(R"j({{ -"a" }})j");  // TypeError: bad operand type for unary -: 'str'
}

// Comparisons (chained), membership, and/or returning an operand, inline if.
TEST(Jinja, Compare) {
  EXPECT_EQ(render(R"j({{ 1 < 2 < 3 }}|{{ 1 < 3 < 2 }}|{{ 1 == 1.0 }}|{{ 1 == true }}|{{ "a" < "b" }}|{{ [1, 2] < [1, 3] }}|{{ (1, 2) == (1, 2) }}|{{ [1] == (1,) }}|{{ 2 >= 2 }}|{{ 1 != 1 }})j"),
            R"j(True|False|True|True|True|True|True|False|True|False)j");
  EXPECT_EQ(render(R"j({{ "at" in "cat" }}|{{ 1 in [1, 2] }}|{{ "k" in {"k": 1} }}|{{ 3 not in [1] }}|{{ "x" not in "xyz" }}|{{ (1, 2) in [(1, 2)] }})j"),
            R"j(True|True|True|True|False|True)j");
  EXPECT_EQ(render(R"j({{ 0 or "x" }}|{{ "a" and "b" }}|{{ "" and 1 }}|{{ [] or [] }}|{{ not 0 }}|{{ not "a" }}|{{ none or 0 or "last" }}|{{ not 1 == 2 }})j"),
            R"j(x|b||[]|True|False|last|True)j");
  EXPECT_EQ(render(R"j({{ "a" if true else "b" }}|{{ "a" if false else "b" }}|[{{ "a" if false }}]|{{ 1 if 0 else 2 if 0 else 3 }})j"),
            R"j(a|b|[]|3)j");
  EXPECT_FAILS(R"j({{ 1 < "a" }})j");  // TypeError: '<' not supported between instances of 'int' and 
  EXPECT_FAILS(R"j({{ 1 in 5 }})j");  // TypeError: argument of type 'int' is not iterable
  EXPECT_FAILS(R"j({{ 1 in "abc" }})j");  // TypeError: 'in <string>' requires string as left operand, no
  EXPECT_EQ(render(R"j({{ {"a": 1} == {"a": 1.0} }}|{{ {"a": 1} == {"a": 2} }})j"),
            R"j(True|False)j");
}

// str methods and slicing count characters, not bytes.
TEST(Jinja, Strings) {
  EXPECT_EQ(render(R"j({{ "hello"[::-1] }}|{{ "hello"[1:3] }}|{{ "hello"[-2:] }}|{{ "hello"[:-1] }}|{{ "hello"[::2] }}|{{ "hello"[0] }}|{{ "hello"[-1] }}|{{ "hello"[10:] }}|[{{ "hello"[10] }}])j"),
            R"j(olleh|el|lo|hell|hlo|h|o||[])j");
  EXPECT_EQ(render(R"j({{ "naïve 🦙"[::-1] }}|{{ "naïve 🦙"|length }}|{{ "naïve 🦙"[2:4] }}|{{ "🦙ab"[0] }}|{{ [1,2,3,4][1::2] }}|{{ [1,2,3][::-1] }}|{{ (1,2,3)[1:] }}|{{ [1,2,3][5:1:-1] }})j"),
            R"j(🦙 evïan|7|ïv|🦙|[2, 4]|[3, 2, 1]|(2, 3)|[3])j");
  EXPECT_EQ(render(R"j([{{ "  a b  ".strip() }}]|[{{ "xxaxx".strip("x") }}]|[{{ "  a ".lstrip() }}]|[{{ "  a ".rstrip() }}]|[{{ "ab\n".rstrip("\n") }}]|[{{ "<|a|>".lstrip("<|") }}])j"),
            R"j([a b]|[a]|[a ]|[  a]|[ab]|[a|>])j");
  EXPECT_EQ(render(R"j({{ "a b  c".split() }}|{{ "a,b,c".split(",") }}|{{ "a,b,c".split(",", 1) }}|{{ "a b c".rsplit(" ", 1) }}|{{ " a b ".split(" ") }}|{{ "a\nb\r\nc".splitlines() }}|{{ "".split() }}|{{ "  a  b ".split(none, 1) }}|{{ "a b c".rsplit(none, 1) }})j"),
            R"j(['a', 'b', 'c']|['a', 'b', 'c']|['a', 'b,c']|['a b', 'c']|['', 'a', 'b', '']|['a', 'b', 'c']|[]|['a', 'b ']|['a b', 'c'])j");
  EXPECT_EQ(render(R"j({{ "abc".startswith("a") }}|{{ "abc".startswith(("x", "ab")) }}|{{ "abc".endswith("bc") }}|{{ "abc".endswith(("x",)) }}|{{ "abc".startswith("b", 1) }})j"),
            R"j(True|True|True|False|True)j");
  EXPECT_EQ(render(R"j({{ "aaa".replace("a", "b") }}|{{ "aaa".replace("a", "b", 2) }}|{{ "abcabc".find("c") }}|{{ "abc".find("z") }}|{{ "abcabc".rfind("b") }}|{{ "abcabc".count("bc") }}|{{ "ünï".find("ï") }})j"),
            R"j(bbb|bba|2|-1|4|2|2)j");
  EXPECT_EQ(render(R"j({{ "hello World".upper() }}|{{ "HeLLo".lower() }}|{{ "hello wORLD they're".title() }}|{{ "hELLO world".capitalize() }}|{{ "AbC".swapcase() }}|{{ "ÄÖÜ äöü".lower() }}|{{ "straße ñ".upper() }})j"),
            R"j(HELLO WORLD|hello|Hello World They'Re|Hello world|aBc|äöü äöü|STRASSE Ñ)j");
  EXPECT_EQ(render(R"j({{ "{} and {}".format(1, "b") }}|{{ "{0}{1}{0}".format("a", "b") }}|{{ "{name}!".format(name="x") }}|{{ "{:>5}|{:<4}|{:^7}|{:05d}|{:.2f}|{:x}|{:,}".format("a", "b", "c", 42, 3.14159, 255, 1) }})j"),
            R"j(1 and b|aba|x!|    a|b   |   c   |00042|3.14|ff|1)j");
  EXPECT_EQ(render(R"j({{ "{:>5}|{:<4}|{:^7}|{:05d}|{:.2f}|{:x}|{!r}".format("a", "b", "c", 42, 3.14159, 255, "q") }}|{{ "{{}}{}".format(1) }})j"),
            R"j(    a|b   |   c   |00042|3.14|ff|'q'|{}1)j");
  EXPECT_EQ(render(R"j({{ ", ".join(["a", "b"]) }}|{{ "-".join("abc") }}|{{ "12".isdigit() }}|{{ "1a".isdigit() }}|{{ "ab".isalpha() }}|{{ " \t".isspace() }}|{{ "".isspace() }}|{{ "AB".isupper() }}|{{ "ab1".islower() }}|{{ "a1".isalnum() }})j"),
            R"j(a, b|a-b-c|True|False|True|True|False|True|True|True)j");
  EXPECT_EQ(render(R"j({{ "a=b=c".partition("=") }}|{{ "a=b=c".rpartition("=") }}|{{ "abc".partition("x") }}|{{ "ab".center(6, "*") }}|{{ "ab".ljust(4, ".") }}|{{ "ab".rjust(4) }}|{{ "-5".zfill(4) }}|{{ "prefix_x".removeprefix("prefix_") }})j"),
            R"j(('a', '=', 'b=c')|('a=b', '=', 'c')|('abc', '', '')|**ab**|ab..|  ab|-005|x)j");
  EXPECT_FAILS(R"j({{ ", ".join([1, 2]) }})j");  // TypeError: sequence item 0: expected str instance, int found
  EXPECT_FAILS(R"j({{ "a".split("") }})j");  // ValueError: empty separator
  EXPECT_FAILS(R"j({{ "abc".index("z") }})j");  // ValueError: substring not found
}

// dict and list methods. Hugging Face's ImmutableSandboxedEnvironment refuses the
// mutating ones (append, pop, update); quip allows them, as llama.cpp does. Dict views
// (keys(), items()) print as lists.
TEST(Jinja, Methods) {
  // jinja2: R"j(a=1;b=[2];items=key;|dict_keys(['a', 'b', 'items'])|dict_values([1, [2], 'key'])|1|None|0|[2]|[2])j"
  EXPECT_EQ(render(R"j({% for k, v in d.items() %}{{ k }}={{ v }};{% endfor %}|{{ d.keys() }}|{{ d.values() }}|{{ d.get("a") }}|{{ d.get("z") }}|{{ d.get("z", 0) }}|{{ d["b"] }}|{{ d.b }})j", kMethodsContext),
            R"j(a=1;b=[2];items=key;|['a', 'b', 'items']|[1, [2], 'key']|1|None|0|[2]|[2])j");
  // jinja2: R"j(dict_items([('a', 1), ('b', [2]), ('items', 'key')])|['a', 'b', 'items']|3|abitems)j"
  EXPECT_EQ(render(R"j({{ d.items() }}|{{ d|list }}|{{ d|length }}|{% for k in d %}{{ k }}{% endfor %})j", kMethodsContext),
            R"j([('a', 1), ('b', [2]), ('items', 'key')]|['a', 'b', 'items']|3|abitems)j");
  // jinja2 (Hugging Face sandbox): SecurityError: access to attribute 'pop' of 'list' object is unsafe.
  EXPECT_EQ(render(R"j({% set l = [1, 2, 3] %}{{ l.pop() }}{{ l }}{{ l.pop(0) }}{{ l }}{{ [1, 2, 1].index(2) }}{{ [1, 2, 1].count(1) }})j", kMethodsContext),
            R"j(3[1, 2]1[2]12)j");
  // jinja2 (Hugging Face sandbox): SecurityError: access to attribute 'append' of 'list' object is unsafe
  EXPECT_EQ(render(R"j({% set ns = namespace(l=[]) %}{% set _ = ns.l.append(1) %}{% set _ = ns.l.append("x") %}{{ ns.l }}{% set _ = ns.l.extend([2, 3]) %}{{ ns.l }}{% set _ = ns.l.insert(0, 0) %}{{ ns.l }})j", kMethodsContext),
            R"j([1, 'x'][1, 'x', 2, 3][0, 1, 'x', 2, 3])j");
  // jinja2 (Hugging Face sandbox): SecurityError: access to attribute 'update' of 'dict' object is unsafe
  EXPECT_EQ(render(R"j({% set d2 = {} %}{% set _ = d2.update({"a": 1}) %}{{ d2 }}{{ d2.pop("a") }}{{ d2 }}{{ d2.setdefault("k", 5) }}{{ d2 }})j", kMethodsContext),
            R"j({'a': 1}1{}5{'k': 5})j");
  EXPECT_EQ(render(R"j({{ d["items"] }}|{{ d.items is defined }}|{{ d.nope is defined }}|{{ d.nope }})j", kMethodsContext),
            R"j(key|True|False|)j");
}

// Built-in filters with jinja2's defaults, and Hugging Face's tojson (json.dumps,
// ensure_ascii=False).
TEST(Jinja, Filters) {
  EXPECT_EQ(render(R"j([{{ "  a  "|trim }}]|[{{ "xxaxx"|trim("x") }}]|{{ "abc"|length }}|{{ [1, 2]|count }}|{{ ["a", "b"]|join(", ") }}|{{ [1, 2]|join }}|{{ "hi"|upper }}|{{ "HI"|lower }}|{{ "hello wORLD-foo (bar)"|title }}|{{ "hELLO"|capitalize }})j", kFiltersContext),
            R"j([a]|[a]|3|2|a, b|12|HI|hi|Hello World-Foo (Bar)|Hello)j");
  EXPECT_EQ(render(R"j({{ "aXbX"|replace("X", "-") }}|{{ "aXbX"|replace("X", "-", 1) }}|{{ [3, 1]|first }}|{{ [3, 1]|last }}|{{ "abc"|first }}|{{ "abc"|list }}|{{ 12|string }}|{{ [1]|string }}|[{{ []|first }}])j", kFiltersContext),
            R"j(a-b-|a-bX|3|1|a|['a', 'b', 'c']|12|[1]|[])j");
  EXPECT_EQ(render(R"j({{ "42"|int }}|{{ " 42 "|int }}|{{ "3.7"|int }}|{{ "x"|int }}|{{ "x"|int(7) }}|{{ 3.9|int }}|{{ true|int }}|{{ "0x1A"|int(0, 16) }}|{{ "1_000"|int }}|{{ "2"|float }}|{{ "x"|float }}|{{ 3|float }}|{{ "1e3"|float }})j", kFiltersContext),
            R"j(42|42|3|0|7|3|1|26|1000|2.0|0.0|3.0|1000.0)j");
  EXPECT_EQ(render(R"j({{ -3|abs }}|{{ -3.5|abs }}|{{ 2.5|round }}|{{ 3.5|round }}|{{ 2.675|round(2) }}|{{ 2.1|round(0, "ceil") }}|{{ 2.9|round(0, "floor") }}|{{ 3|round }}|{{ 1234.5|round(-2) }}|{{ -0.5|round }})j", kFiltersContext),
            R"j(3|3.5|2.0|4.0|2.67|3.0|2.0|3|1200.0|-0.0)j");
  EXPECT_EQ(render(R"j([{{ missing|default("d") }}]|[{{ ""|default("d") }}]|[{{ ""|default("d", true) }}]|[{{ none|default("d") }}]|[{{ none|d("d", true) }}]|[{{ 0|default(5, boolean=true) }}]|[{{ missing|default }}])j", kFiltersContext),
            R"j([d]|[]|[d]|[None]|[d]|[5]|[])j");
  // jinja2: R"j(<generator object do_items at ...|[('a', 1), ('b', 2)]|[('b', 2), ('a', 1)]|[('A', 2), ('a', 0), ('b', 1)]|[('A', 2), ('a', 0), ('b', 1)]|[('y', 1), ('x', 2)])j"
  EXPECT_EQ(render(R"j({{ d|items }}|{{ d|dictsort }}|{{ d|dictsort(reverse=true) }}|{{ {"b": 1, "A": 2, "a": 0}|dictsort }}|{{ {"b": 1, "A": 2, "a": 0}|dictsort(true) }}|{{ {"x": 2, "y": 1}|dictsort(by="value") }})j", kFiltersContext),
            R"j([('b', 2), ('a', 1)]|[('a', 1), ('b', 2)]|[('b', 2), ('a', 1)]|[('A', 2), ('a', 0), ('b', 1)]|[('A', 2), ('a', 0), ('b', 1)]|[('y', 1), ('x', 2)])j");
  EXPECT_EQ(render(R"j({{ users|selectattr("active")|map(attribute="name")|list }}|{{ users|rejectattr("active")|map(attribute="name")|join(",") }}|{{ users|selectattr("name", "equalto", "b")|list|length }}|{{ users|selectattr("age", "defined")|map(attribute="age")|list }}|{{ users|map(attribute="age", default=0)|list }})j", kFiltersContext),
            R"j(['a', 'b']|c|1|[30]|[30, 0, 0])j");
  EXPECT_EQ(render(R"j({{ [1, 2, 3, 4]|select("odd")|list }}|{{ [1, 2, 3, 4]|reject("odd")|list }}|{{ [0, 1, "", "a"]|select|list }}|{{ [1, 5, 3]|select(">", 2)|list }}|{{ ["a", "b"]|map("upper")|list }}|{{ [1.5, 2.5]|map("round")|list }}|{{ ["a"]|map("replace", "a", "b")|list }})j", kFiltersContext),
            R"j([1, 3]|[2, 4]|[1, 'a']|[5, 3]|['A', 'B']|[2.0, 2.0]|['b'])j");
  EXPECT_EQ(render(R"j({{ [1, 2, 1, "A", "a"]|unique|list }}|{{ ["A", "a"]|unique(case_sensitive=true)|list }}|{{ [1, 2]|reverse|list }}|{{ "abc"|reverse }}|{{ [3, 1, 2]|sort }}|{{ [3, 1, 2]|sort(reverse=true) }}|{{ ["b", "A", "c"]|sort }}|{{ ["b", "A", "c"]|sort(case_sensitive=true) }})j", kFiltersContext),
            R"j([1, 2, 'A']|['A', 'a']|[2, 1]|cba|[1, 2, 3]|[3, 2, 1]|['A', 'b', 'c']|['A', 'b', 'c'])j");
  EXPECT_EQ(render(R"j({{ users|sort(attribute="name", reverse=true)|map(attribute="name")|list }}|{{ users|sum(attribute="n") }}|{{ [1, 2, 3]|sum }}|{{ [1, 2]|sum(start=10) }}|{{ [3, 1, 2]|min }}|{{ [3, 1, 2]|max }}|{{ ["b", "A"]|min }}|{{ users|max(attribute="n")|attr("name") }}|[{{ []|max }}])j", kFiltersContext),
            R"j(['c', 'b', 'a']|8|6|13|1|3|A||[])j");
  EXPECT_EQ(render(R"j({{ "a\nb\n\nc"|indent }}|{{ "a\nb"|indent(2, true) }}|{{ "a\n\nb"|indent(2, blank=true) }}|{{ "a\nb"|indent("> ") }}|{{ "a\nb\n"|indent(1) }})j", kFiltersContext),
            "a\n    b\n\n    c|  a\n  b|a\n  \n  b|a\n> b|a\n b\n");
  EXPECT_EQ(render(R"j({{ "one two, three"|wordcount }}|[{{ "ab"|center(7) }}]|[{{ "ab"|center(6) }}]|{{ "<b>"|safe }}|{{ "<a href='x'>&</a>"|e }}|{{ "<x>"|escape }}|{{ [1, 2, 3, 4, 5]|batch(2)|list }}|{{ [1, 2, 3]|batch(2, 0)|list }})j", kFiltersContext),
            R"j(3|[   ab  ]|[  ab  ]|<b>|&lt;a href=&#39;x&#39;&gt;&amp;&lt;/a&gt;|&lt;x&gt;|[[1, 2], [3, 4], [5]]|[[1, 2], [3, 0]])j");
  EXPECT_EQ(render(R"j({{ "%s=%s"|format("a", 1) }}|{{ "%(x)s"|format(x=5) }}|{{ "hello world foo"|truncate(9) }}|{{ "hello world"|truncate(5, true) }}|{{ "hello"|truncate(100) }}|{{ "<p>a  <b>b</b></p>"|striptags }}|{{ [1, "a"]|pprint }})j", kFiltersContext),
            R"j(a=1|5|hello...|he...|hello|a b|[1, 'a'])j");
  EXPECT_EQ(render(R"j({{ x|tojson }}|{{ "é\n\"\u0001"|tojson }}|{{ x|tojson(indent=2) }}|{{ x|tojson(separators=(",", ":")) }}|{{ {"b": 1, "a": 2}|tojson(sort_keys=true) }}|{{ "é🦙"|tojson(ensure_ascii=true) }}|{{ [1.0, 1e20, -0.5, none, true]|tojson }}|{{ {}|tojson(indent=2) }}|{{ [[]]|tojson(indent=1) }}|{{ (1, 2)|tojson }})j", kFiltersContext),
            "{\"name\": \"q\", \"list\": [1, {\"k\": \"v\"}], \"u\": \"ü\"}|\"é\\n\\\"\\u0001\"|{\n  \"name\": \"q\",\n  \"list\": [\n    1,\n    {\n      \"k\": \"v\"\n    }\n  ],\n  \"u\": \"ü\"\n}|{\"name\":\"q\",\"list\":[1,{\"k\":\"v\"}],\"u\":\"ü\"}|{\"a\": 2, \"b\": 1}|\"\\u00e9\\ud83e\\udd99\"|[1.0, 1e+20, -0.5, null, true]|{}|[\n []\n]|[1, 2]");
  EXPECT_EQ(render(R"j({{ {1: "a", true: "b", none: "c", 1.5: "d"}|tojson }}|{{ x|tojson(indent="\t") }})j", kFiltersContext),
            "{\"1\": \"b\", \"null\": \"c\", \"1.5\": \"d\"}|{\n\t\"name\": \"q\",\n\t\"list\": [\n\t\t1,\n\t\t{\n\t\t\t\"k\": \"v\"\n\t\t}\n\t],\n\t\"u\": \"ü\"\n}");
  EXPECT_FAILS(R"j({{ x|from_json }})j", kFiltersContext);  // TemplateAssertionError: No filter named 'from_json'.
  EXPECT_FAILS(R"j({{ missing|tojson }})j", kFiltersContext);  // TypeError: Object of type Undefined is not JSON serializable
  EXPECT_FAILS(R"j({{ 5|join }})j", kFiltersContext);  // TypeError: 'int' object is not iterable
  EXPECT_FAILS(R"j({{ none|length }})j", kFiltersContext);  // TypeError: object of type 'NoneType' has no len()
}

// `is` tests, including the ones templates use to tell JSON types apart.
TEST(Jinja, Tests) {
  EXPECT_EQ(render(R"j({{ x is defined }}|{{ nope is defined }}|{{ nope is undefined }}|{{ none is none }}|{{ 0 is none }}|{{ "a" is string }}|{{ 1 is string }}|{{ 1 is number }}|{{ 1.5 is number }}|{{ true is number }}|{{ 1 is integer }}|{{ true is integer }}|{{ 1.0 is float }}|{{ 1 is float }}|{{ true is boolean }}|{{ 1 is boolean }})j", kTestsContext),
            R"j(True|False|True|True|False|True|False|True|True|True|True|False|True|False|True|False)j");
  EXPECT_EQ(render(R"j({{ {} is mapping }}|{{ [] is mapping }}|{{ [] is iterable }}|{{ "" is iterable }}|{{ {} is iterable }}|{{ 1 is iterable }}|{{ nope is iterable }}|{{ [] is sequence }}|{{ "a" is sequence }}|{{ 1 is sequence }}|{{ none is iterable }})j", kTestsContext),
            R"j(True|False|True|True|True|False|True|True|True|False|False)j");
  EXPECT_EQ(render(R"j({{ 2 is equalto 2 }}|{{ 2 is eq 3 }}|{{ 2 is ne 3 }}|{{ 3 is gt 2 }}|{{ 3 is ge 3 }}|{{ 2 is lt 3 }}|{{ 2 is le 1 }}|{{ 3 is odd }}|{{ 3 is even }}|{{ 9 is divisibleby 3 }}|{{ 9 is divisibleby(2) }}|{{ true is true }}|{{ 1 is true }}|{{ false is false }})j", kTestsContext),
            R"j(True|False|True|True|True|True|False|True|False|True|False|True|False|True)j");
  EXPECT_EQ(render(R"j({{ range is callable }}|{{ 1 is callable }}|{{ 2 is in [1, 2] }}|{{ "a" is lower }}|{{ "A" is upper }}|{{ none is sameas none }}|{{ x is not none }}|{{ x is not defined }}|{{ not x is defined }}|{{ "upper" is filter }}|{{ "odd" is test }})j", kTestsContext),
            R"j(True|False|True|True|True|True|True|False|False|True|True)j");
  EXPECT_FAILS(R"j({{ x is nosuchtest }})j", kTestsContext);  // TemplateAssertionError: No test named 'nosuchtest'.
}

// Every statement: if, for with loop.*, set, namespace, block set, macro, call,
// filter, raw, generation, with, do.
TEST(Jinja, Statements) {
  EXPECT_EQ(render(R"j({% if x == 1 %}one{% elif x == 2 %}two{% else %}other{% endif %})j", kStatementsContext),
            R"j(two)j");
  EXPECT_EQ(render(R"j({% for i in items %}{{ loop.index }}{{ loop.index0 }}{{ loop.revindex }}{{ loop.revindex0 }}{{ loop.first }}{{ loop.last }}{{ loop.length }};{% endfor %})j", kStatementsContext),
            R"j(1032TrueFalse3;2121FalseFalse3;3210FalseTrue3;)j");
  EXPECT_EQ(render(R"j({% for i in items %}{{ loop.previtem }}-{{ i }}-{{ loop.nextitem }}|{{ loop.cycle("a", "b") }};{% endfor %})j", kStatementsContext),
            R"j(-1-2|a;1-2-3|b;2-3-|a;)j");
  EXPECT_EQ(render(R"j({% for i in [] %}x{% else %}empty{% endfor %}|{% for i in items if i > 1 %}{{ i }}{{ loop.index }}{{ loop.length }}{% else %}none{% endfor %}|{% for i in items if i > 9 %}x{% else %}none{% endfor %})j", kStatementsContext),
            R"j(empty|212322|none)j");
  EXPECT_EQ(render(R"j({% for a, b in [(1, 2), (3, 4)] %}{{ a }}{{ b }}{% endfor %}|{% for a, (b, c) in [(1, (2, 3))] %}{{ a }}{{ b }}{{ c }}{% endfor %}|{% for c in "ab" %}{{ c }}{% endfor %})j", kStatementsContext),
            R"j(1234|123|ab)j");
  EXPECT_EQ(render(R"j({% for i in items %}{% if i == 2 %}{% continue %}{% endif %}{% if i == 3 %}{% break %}{% endif %}{{ i }}{% endfor %})j", kStatementsContext),
            R"j(1)j");
  EXPECT_EQ(render(R"j({% for i in [1, 2] %}{% for j in [3, 4] %}{{ i }}{{ j }}{{ loop.index }} {% endfor %}{{ loop.index }}|{% endfor %})j", kStatementsContext),
            R"j(131 142 1|231 242 2|)j");
  EXPECT_EQ(render(R"j({% for i in [1, 2] %}{% set outer = loop %}{% for j in [3] %}{{ outer.index }}{{ loop.index }}{% endfor %}{% endfor %})j", kStatementsContext),
            R"j(1121)j");
  EXPECT_EQ(render(R"j({% set a = 1 %}{% set b, c = 2, 3 %}{% set t = 4, 5 %}{{ a }}{{ b }}{{ c }}{{ t }})j", kStatementsContext),
            R"j(123(4, 5))j");
  EXPECT_EQ(render(R"j({% set x = 0 %}{% for i in [1, 2] %}{{ x }}{% set x = i %}{{ x }}{% endfor %}{{ x }})j", kStatementsContext),
            R"j(01020)j");
  EXPECT_EQ(render(R"j({% set ns = namespace(count=0, found=false) %}{% for i in [1, 2, 3] %}{% set ns.count = ns.count + i %}{% if i == 2 %}{% set ns.found = true %}{% endif %}{% endfor %}{{ ns.count }}{{ ns.found }}|{{ ns.missing }}|{{ namespace({"a": 1}, b=2).b }})j", kStatementsContext),
            R"j(6True||2)j");
  EXPECT_EQ(render(R"j({% set body %}Hello {{ "w" }}!{% endset %}[{{ body }}]{% set up | upper %}abc{% endset %}{{ up }}{% set tr | trim | replace("a", "b") %}  aa  {% endset %}[{{ tr }}])j", kStatementsContext),
            R"j([Hello w!]ABC[bb])j");
  EXPECT_EQ(render(R"j({% macro greet(name, greeting="Hello") %}{{ greeting }}, {{ name }}!{% endmacro %}{{ greet("A") }} {{ greet("B", "Hi") }} {{ greet(greeting="Yo", name="C") }})j", kStatementsContext),
            R"j(Hello, A! Hi, B! Yo, C!)j");
  EXPECT_EQ(render(R"j({% macro m(a) %}{{ a }}|{{ varargs }}|{{ kwargs }}{% endmacro %}{{ m(1, 2, 3, k=4) }})j", kStatementsContext),
            R"j(1|(2, 3)|{'k': 4})j");
  EXPECT_EQ(render(R"j({% macro wrap(tag) %}<{{ tag }}>{{ caller() }}</{{ tag }}>{% endmacro %}{% call wrap("b") %}inside{% endcall %}|{% macro each(xs) %}{% for x in xs %}{{ caller(x) }}{% endfor %}{% endmacro %}{% call(v) each([1, 2]) %}[{{ v }}]{% endcall %})j", kStatementsContext),
            R"j(<b>inside</b>|[1][2])j");
  EXPECT_EQ(render(R"j({% macro f(n) %}{% if n > 0 %}{{ n }}{{ f(n - 1) }}{% endif %}{% endmacro %}{{ f(3) }}|{% macro g() %}{{ top }}{% endmacro %}{% set top = "T" %}{{ g() }}|{% macro h(a, b=a * 2) %}{{ b }}{% endmacro %}{{ h(3) }})j", kStatementsContext),
            R"j(321|T|6)j");
  EXPECT_EQ(render(R"j({% filter upper %}abc {{ "d" }}{% endfilter %}|{% filter trim|replace("x", "y") %}  x  {% endfilter %})j", kStatementsContext),
            R"j(ABC D|y)j");
  EXPECT_EQ(render(R"j({% raw %}{{ not }} {% if %}{% endraw %}|{# comment #}x|{% generation %}gen{% endgeneration %}|{% with a = 1, b = 2 %}{{ a + b }}{% endwith %}[{{ a }}])j", kStatementsContext),
            R"j({{ not }} {% if %}|x|gen|3[])j");
  EXPECT_EQ(render(R"j({{ range(3)|list }}|{{ range(1, 4)|list }}|{{ range(5, 0, -2)|list }}|{{ range(0)|list }}|{{ dict(a=1, b="x") }}|{% set j = joiner(", ") %}{% for i in [1, 2, 3] %}{{ j() }}{{ i }}{% endfor %})j", kStatementsContext),
            R"j([0, 1, 2]|[1, 2, 3]|[5, 3, 1]|[]|{'a': 1, 'b': 'x'}|1, 2, 3)j");
  EXPECT_EQ(render(R"j({% if true %}{% set y = 5 %}{% endif %}{{ y }}|{% for i in [1] %}{% set z = 1 %}{% endfor %}[{{ z }}])j", kStatementsContext),
            R"j(5|[])j");
  // jinja2 (Hugging Face sandbox): TemplateSyntaxError: Encountered unknown tag 'do'.
  EXPECT_EQ(render(R"j({% do items.append(9) %}{{ items }})j", kStatementsContext),
            R"j([1, 2, 3, 9])j");
  EXPECT_EQ(render(R"j({% set d = {"a": {"b": [10, 20]}} %}{{ d.a.b[1] }}|{{ d["a"]["b"][-1] }}|{{ d.a.b.0 }}|[{{ d.a.c }}]|[{{ d.x }}]|{{ d.a.c is defined }})j", kStatementsContext),
            R"j(20|20|10|[]|[]|False)j");
}

// Whitespace control with Hugging Face's trim_blocks and lstrip_blocks.
TEST(Jinja, Whitespace) {
  EXPECT_EQ(render("a\n{% if true %}\nb\n{% endif %}\nc"),
            "a\nb\nc");
  EXPECT_EQ(render("a\n  {% if true %}\n  b\n  {% endif %}\nc"),
            "a\n  b\nc");
  EXPECT_EQ(render(R"j(a  {%- if true -%}  b  {%- endif -%}  c)j"),
            R"j(abc)j");
  EXPECT_EQ(render(R"j(a {{- " b " -}} c)j"),
            R"j(a b c)j");
  EXPECT_EQ(render(R"j(  {%+ if true %}x{% endif %})j"),
            R"j(  x)j");
  EXPECT_EQ(render("{% if true +%}\nx{% endif %}"),
            "\nx");
  EXPECT_EQ(render("  {# c #}\nx"),
            R"j(x)j");
  EXPECT_EQ(render("x\n"),
            R"j(x)j");
  EXPECT_EQ(render("x\n\n"),
            "x\n");
  EXPECT_EQ(render("a\r\nb\rc"),
            "a\nb\nc");
  EXPECT_EQ(render("{% for i in [1, 2] %}\n  {{ i }}\n{% endfor %}\n"),
            "  1\n  2\n");
  EXPECT_EQ(render("<{% for i in [1,2] -%}\n  {{ i }}\n{%- endfor %}>"),
            R"j(<12>)j");
  EXPECT_EQ(render(R"j(  {{ 1 }}  {% if true %}  x{% endif %})j"),
            R"j(  1    x)j");
  EXPECT_EQ(render("{%- if true %}\n\n  x\n{%- endif %}"),
            "\n  x");
  EXPECT_EQ(render("{% raw %}\n  a {{ b }}\n{% endraw %}\n"),
            "\n  a {{ b }}\n");
  EXPECT_EQ(render("{{ \"a\" }}\n{{ \"b\" }}\n"),
            "a\nb");
  EXPECT_EQ(render(R"j(x {#- c -#} y)j"),
            R"j(xy)j");
  EXPECT_EQ(render("\t{% if true %}\n\tx\n\t{% endif %}"),
            "\tx\n");
}

// jinja2's default Undefined: prints as "", iterates as empty, fails when looked
// into, called or computed with.
TEST(Jinja, Undefined) {
  EXPECT_EQ(render(R"j([{{ nope }}]|{{ nope|length }}|{% for x in nope %}x{% endfor %}|{{ nope ~ "x" }}|{{ nope|default("d") }}|{{ "a" in nope }}|{{ nope == nope }}|{{ nope is none }}|[{{ nope|string }}]|[{{ nope|trim }}]|[{{ nope|join(",") }}])j", kUndefinedContext),
            R"j([]|0||x|d|False|True|False|[]|[]|[])j");
  EXPECT_FAILS(R"j({{ nope.attr }})j", kUndefinedContext);  // UndefinedError: 'nope' is undefined
  EXPECT_FAILS(R"j({{ nope["k"] }})j", kUndefinedContext);  // UndefinedError: 'nope' is undefined
  EXPECT_FAILS(R"j({{ nope + 1 }})j", kUndefinedContext);  // UndefinedError: 'nope' is undefined
  EXPECT_FAILS(R"j({{ nope() }})j", kUndefinedContext);  // UndefinedError: 'nope' is undefined
  EXPECT_FAILS(R"j({{ nope < 1 }})j", kUndefinedContext);  // UndefinedError: 'nope' is undefined
  EXPECT_FAILS(R"j({{ d.missing.x }})j", kUndefinedContext);  // UndefinedError: 'dict object' has no attribute 'missing'
  EXPECT_EQ(render(R"j([{{ none.x }}]|[{{ "s".nope }}]|[{{ [1][5] }}]|[{{ d["missing"] }}])j", kUndefinedContext),
            R"j([]|[]|[]|[])j");
  EXPECT_FAILS(R"j({% for x in none %}{% endfor %})j", kUndefinedContext);  // TypeError: 'NoneType' object is not iterable
  EXPECT_FAILS(R"j({% for x in 5 %}{% endfor %})j", kUndefinedContext);  // TypeError: 'int' object is not iterable
  EXPECT_FAILS(R"j({{ undefined_macro() }})j", kUndefinedContext);  // UndefinedError: 'undefined_macro' is undefined
  EXPECT_FAILS(R"j({{ "x"|nosuchfilter }})j", kUndefinedContext);  // TemplateAssertionError: No filter named 'nosuchfilter'.
  EXPECT_EQ(render(R"j({% if false %}{{ x|nosuchfilter }}{% endif %}ok)j", kUndefinedContext),
            R"j(ok)j");
  EXPECT_FAILS(R"j({{ raise_exception("bad " ~ 1) }})j", kUndefinedContext);  // TemplateError: bad 1
}

// strftime_now uses RenderOptions::now (fixed here).
TEST(Jinja, Globals) {
  EXPECT_EQ(render(R"j({{ strftime_now("%Y-%m-%d %H:%M:%S") }}|{{ strftime_now("%d %b %Y") }}|{{ strftime_now("%A %-d") }})j"),
            R"j(2026-01-02 03:04:05|02 Jan 2026|Friday 2)j");
}

// Differences from jinja2 found by rendering random templates with both.
TEST(Jinja, FoundByDifferentialTesting) {
  EXPECT_FAILS("{{ missing | indent(2) }}");  // indent appends to the value: only strings work
  EXPECT_FAILS("{{ none | indent(2) }}");
  EXPECT_EQ(render("{{ 2.0 is odd }}|{{ 3.0 is odd }}|{{ 2.0 is even }}"), "False|True|True");
  EXPECT_EQ(render("{{ {'k': 1} is lower }}|{{ 12 is upper }}"), "True|False");  // str(value) is tested
  EXPECT_FAILS("{{ 1.5 is float 2 }}");  // a test of the value alone takes no argument
  EXPECT_EQ(render("{{ [1, 2] | truncate(5) }}|[{{ missing | truncate(5) }}]"), "[1, 2]|[]");
  EXPECT_FAILS("{{ true | truncate(5) }}");
  EXPECT_EQ(render("{{ 'x' ~ none | map('upper') | list }}|{{ none | selectattr('a') | list }}"), "x[]|[]");
  EXPECT_EQ(render("{{ 'no slots' % [1, 2] }}|{{ '%s' % [1, 2] }}"), "no slots|[1, 2]");
  EXPECT_FAILS("{{ 'no slots' % (1, 2) }}");
  // Whitespace control strips Unicode spaces too (Python's \s).
  EXPECT_EQ(render("a \u00a0{%- if true -%}\u3000 b{% endif %}"), "ab");
  EXPECT_EQ(render("a\u00a0\n\u00a0 {% if true %}x{% endif %}"), "a\u00a0\nx");
}

TEST(Jinja, ErrorsNameTheLine) {
  EXPECT_EQ(error_of("a\n{% for x in xs %}\n{% endif %}"), "line 3: unexpected 'endif'");
  EXPECT_EQ(error_of("{% if true %}\nx\n{% endfor %}"), "line 3: unexpected 'endfor'");
  EXPECT_EQ(error_of("line one\n{{ raise_exception('System role not supported') }}"),
            "line 2: System role not supported");
  EXPECT_EQ(error_of("\n\n{{ 'x' | nosuch }}"), "line 3: no filter named 'nosuch'");
  EXPECT_EQ(error_of("{% set x = 1 %}\n{{ x + 'a' }}"),
            "line 2: unsupported operand type(s) for +: 'int' and 'str'");
  EXPECT_EQ(error_of("\n{{ functions + 'a' }}"), "line 2: 'functions' is undefined");
  EXPECT_EQ(error_of("{% macro m() %}\n\n{{ raise_exception('inside') }}{% endmacro %}\n{{ m() }}"),
            "line 3: inside");
  EXPECT_EQ(error_of("{{ 'unterminated }}"), "line 1: unterminated string");
  EXPECT_EQ(error_of("\n{% if true %}x"),
            "line 2: unexpected end of template: 'if' from line 2 is not closed (expected 'endif')");
}

TEST(Jinja, UnknownFilterOnlyFailsWhenReached) {
  // jinja2 defers unknown filters inside {% if %} to run time; templates such
  // as DeepSeek V3.2's rely on that (|from_json on a branch not taken).
  EXPECT_EQ(render("{% if false %}{{ x | from_json }}{% endif %}ok"), "ok");
  EXPECT_EQ(error_of("{% if true %}{{ x | from_json }}{% endif %}"), "line 1: no filter named 'from_json'");
}

TEST(Jinja, SortedAndOrderedJson) {
  // nlohmann::json sorts object keys; ordered_json keeps them as given, as
  // Python's dicts do.
  Result<ChatTemplate> t = ChatTemplate::parse("{{ messages[0] | tojson }}");
  ASSERT_TRUE(t.ok());
  RenderOptions options;
  const auto ordered = nlohmann::ordered_json::parse(R"([{"role": "user", "content": "x"}])");
  const auto sorted = nlohmann::json::parse(R"([{"role": "user", "content": "x"}])");
  EXPECT_EQ(*t->render(ordered, options), R"({"role": "user", "content": "x"})");
  EXPECT_EQ(*t->render(sorted, options), R"({"content": "x", "role": "user"})");
}

TEST(Jinja, RenderOptionsAreVariables) {
  Result<ChatTemplate> t = ChatTemplate::parse(
      "{{ bos_token }}|{{ eos_token }}|{{ add_generation_prompt }}|{{ tools | length }}|{{ flag }}|"
      "{{ messages | length }}");
  ASSERT_TRUE(t.ok());
  RenderOptions options;
  options.bos_token = "<s>";
  options.eos_token = "</s>";
  options.add_generation_prompt = false;
  options.extra = {{"flag", true}, {"bos_token", "ignored"}};
  options.extra_ordered["tools"] = nlohmann::ordered_json::array({1, 2});
  EXPECT_EQ(*t->render(nlohmann::json::array({{{"role", "user"}}}), options), "<s>|</s>|False|2|True|1");
}

TEST(Jinja, MessageContentMayBeNullOrAList) {
  Result<ChatTemplate> t = ChatTemplate::parse(
      "{% for m in messages %}{% if m.content is none %}none{% elif m.content is string %}{{ m.content }}"
      "{% else %}{% for p in m.content %}[{{ p.text }}]{% endfor %}{% endif %};{% endfor %}");
  ASSERT_TRUE(t.ok());
  const auto messages = nlohmann::ordered_json::parse(
      R"([{"role": "assistant", "content": null}, {"role": "user", "content": "s"},
          {"role": "user", "content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]}])");
  EXPECT_EQ(*t->render(messages, RenderOptions{}), "none;s;[a][b];");
}

TEST(Jinja, StrftimeNowUsesSourceDateEpochWhenNoTimeIsGiven) {
  Result<ChatTemplate> t = ChatTemplate::parse("{{ strftime_now('%Y-%m-%d %H:%M:%S') }}");
  ASSERT_TRUE(t.ok());
  RenderOptions options;
  options.now = kFixedNow;
  EXPECT_EQ(*t->render(nlohmann::json::array(), options), "2026-01-02 03:04:05");
  options.now.reset();
  const char* saved = std::getenv("SOURCE_DATE_EPOCH");
  const std::string saved_value = saved != nullptr ? saved : "";
  setenv("SOURCE_DATE_EPOCH", "86400", 1);
  EXPECT_EQ(*t->render(nlohmann::json::array(), options), "1970-01-02 00:00:00");
  if (saved != nullptr) {
    setenv("SOURCE_DATE_EPOCH", saved_value.c_str(), 1);
  } else {
    unsetenv("SOURCE_DATE_EPOCH");
  }
}

TEST(Jinja, ChatmlFallback) {
  Result<ChatTemplate> t = ChatTemplate::parse(chatml_template());
  ASSERT_TRUE(t.ok()) << t.error().message;
  const auto messages = nlohmann::ordered_json::parse(
      R"([{"role": "system", "content": "S"}, {"role": "user", "content": [{"type": "text", "text": "U"}]},
          {"role": "assistant", "content": null}])");
  RenderOptions options;
  EXPECT_EQ(*t->render(messages, options),
            "<|im_start|>system\nS<|im_end|>\n<|im_start|>user\nU<|im_end|>\n"
            "<|im_start|>assistant\n<|im_end|>\n<|im_start|>assistant\n");
  options.add_generation_prompt = false;
  EXPECT_EQ(*t->render(nlohmann::json::array({{{"role", "user"}, {"content", "hi"}}}), options),
            "<|im_start|>user\nhi<|im_end|>\n");
}

TEST(Jinja, TemplatesAreCheapToCopyAndReusable) {
  Result<ChatTemplate> t = ChatTemplate::parse("{% set ns = namespace(n=0) %}{% set ns.n = ns.n + 1 %}{{ ns.n }}");
  ASSERT_TRUE(t.ok());
  const ChatTemplate copy = *t;
  ChatTemplate moved = std::move(*t);
  // Each render starts from the template's state, not the last render's.
  EXPECT_EQ(*copy.render(nlohmann::json::array(), RenderOptions{}), "1");
  EXPECT_EQ(*copy.render(nlohmann::json::array(), RenderOptions{}), "1");
  EXPECT_EQ(*moved.render(nlohmann::json::array(), RenderOptions{}), "1");
}

TEST(Jinja, TheTemplateCannotChangeTheCallersMessages) {
  Result<ChatTemplate> t = ChatTemplate::parse("{% set _ = messages.append(1) %}{{ messages | length }}");
  ASSERT_TRUE(t.ok());
  const nlohmann::json messages = nlohmann::json::array({{{"role", "user"}}});
  EXPECT_EQ(*t->render(messages, RenderOptions{}), "2");
  EXPECT_EQ(*t->render(messages, RenderOptions{}), "2");
  EXPECT_EQ(messages.size(), 1u);
}

}  // namespace
}  // namespace quip::chat

// Python str semantics on UTF-8 text, for the Jinja engine: templates count,
// slice and case-map characters (code points) as Python does, not bytes.
//
// A byte that starts no valid UTF-8 sequence counts as one character and is
// kept as it is, so that no operation loses or invents bytes.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "chat/jinja_value.h"

namespace quip::chat::jinja {

// The text split into characters, each a view of its bytes.
std::vector<std::string_view> utf8_chars(std::string_view s);

// Number of characters (len() in Python).
size_t utf8_length(std::string_view s);

// Python's s[start:stop:step] over characters (see slice_range in
// jinja_value.h). Step 1 copies one run of bytes; other steps index the
// character starts (4 bytes per character).
std::string utf8_slice(std::string_view s, std::optional<int64_t> start, std::optional<int64_t> stop,
                       int64_t step);

// Python's s[index] (negative counts from the end); nullopt when out of range.
std::optional<std::string_view> utf8_at(std::string_view s, int64_t index);

// Python's str.isspace() for one code point.
bool is_space(uint32_t cp);

// Case mapping for ASCII, Latin-1, Latin Extended-A, Greek and Cyrillic:
// enough for role names and the words templates upper-case.
uint32_t to_upper(uint32_t cp);
uint32_t to_lower(uint32_t cp);
bool is_alpha(uint32_t cp);

std::string str_upper(std::string_view s);
std::string str_lower(std::string_view s);
std::string str_swapcase(std::string_view s);
// Python's str.capitalize(): first character upper, the rest lower.
std::string str_capitalize(std::string_view s);
// Python's str.title(): a letter after a non-letter is upper, others lower.
std::string str_title(std::string_view s);
// Jinja's |title: words start after whitespace or one of -([{<.
std::string jinja_title(std::string_view s);

// Python's str.strip/lstrip/rstrip: `chars` empty = whitespace.
enum class StripSide { Both, Left, Right };
std::string_view str_strip(std::string_view s, std::optional<std::string_view> chars,
                           StripSide side);

// Python's str.split / rsplit: no separator = runs of whitespace;
// maxsplit < 0 = no limit. PRECONDITIONS: sep, when given, is not empty.
std::vector<std::string> str_split(std::string_view s, std::optional<std::string_view> sep,
                                   int64_t maxsplit, bool from_right);

// Python's str.splitlines(keepends).
std::vector<std::string> str_splitlines(std::string_view s, bool keepends);

// Python's str.replace(old, new, count); count < 0 = all.
std::string str_replace(std::string_view s, std::string_view from, std::string_view to,
                        int64_t count);

// Python's str.count(sub) (non-overlapping; an empty sub counts len + 1).
int64_t str_count(std::string_view s, std::string_view sub);

// Python's str.find / rfind in characters, -1 when absent.
int64_t str_find(std::string_view s, std::string_view sub, bool from_right);

// Python's predicates; all false for the empty string.
bool str_isdigit(std::string_view s);
bool str_isalpha(std::string_view s);
bool str_isalnum(std::string_view s);
bool str_isspace(std::string_view s);
bool str_isupper(std::string_view s);
bool str_islower(std::string_view s);

// repr() of a str: quoted with ' (or " when it holds ' and no "), escapes for
// \\, \n, \r, \t and other control characters, the rest as it is.
std::string str_repr(std::string_view s);

// HTML escaping as markupsafe does it (& < > " ').
std::string html_escape(std::string_view s);

}  // namespace quip::chat::jinja

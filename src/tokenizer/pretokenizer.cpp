#include "tokenizer/pretokenizer.h"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include <string>

#include "base/check.h"

namespace quip::tokenizer {

namespace {

// The patterns, as the vocabularies' Hugging Face tokenizer.json files give
// them (and llama.cpp's llama-vocab.cpp repeats them).
constexpr std::string_view kGpt2 =
    R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S))";
constexpr std::string_view kLlama3 =
    R"((?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
constexpr std::string_view kQwen2 =
    R"((?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
constexpr std::string_view kMistral =
    R"([^\r\n\p{L}\p{N}]?((?=[\p{L}])([^a-z]))*((?=[\p{L}])([^A-Z]))+|[^\r\n\p{L}\p{N}]?((?=[\p{L}])([^a-z]))+((?=[\p{L}])([^A-Z]))*|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
constexpr std::string_view kDeepseekLlmLetters =
    "\\s?[A-Za-z\u00b5\u00c0-\u00d6\u00d8-\u00f6\u00f8-\u01ba\u01bc-\u01bf\u01c4-\u0293\u0295-"
    "\u02af\u0370-\u0373\u0376\u0377\u037b-\u037d\u037f\u0386\u0388-\u038a\u038c\u038e-\u03a1"
    "\u03a3-\u03f5\u03f7-\u0481\u048a-\u052f\u0531-\u0556\u10a0-\u10c5\u13a0-\u13f5\u13f8-"
    "\u13fd\u1c90-\u1cba\u1cbd-\u1cbf\u1d00-\u1d2b\u1d6b-\u1d77\u1d79-\u1d9a\u1e00-\u1f15"
    "\u1f18-\u1f1d\u1f20-\u1f45\u1f48-\u1f4d\u1f50-\u1f57\u1f59\u1f5b\u1f5d\u1f5f-\u1f7d"
    "\u1f80-\u1fb4\u1fb6-\u1fbc\u1fbe\u1fc2-\u1fc4\u1fc6-\u1fcc\u1fd0-\u1fd3\u1fd6-\u1fdb"
    "\u1fe0-\u1fec\u1ff2-\u1ff4\u1ff6-\u1ffc\u2102\u2107\u210a-\u2113\u2115\u2119-\u211d\u2124"
    "\u2126\u2128\u212a-\u212d\u212f-\u2134\u2139\u213c-\u213f\u2145-\u2149\u214e\u2183\u2184"
    "\u2c00-\u2c7b\u2c7e-\u2ce4\u2ceb-\u2cee\u2cf2\u2cf3\ua640-\ua66d\ua680-\ua69b\ua722-"
    "\ua76f\ua771-\ua787\ua78b-\ua78e\uab70-\uabbf\ufb00-\ufb06\ufb13-\ufb17\uff21-\uff3a"
    "\uff41-\uff5a\U00010400-\U0001044f\U000104b0-\U000104d3\U000104d8-\U000104fb\U00010c80-"
    "\U00010cb2\U00010cc0-\U00010cf2\U000118a0-\U000118df\U0001e900-\U0001e943]+";
constexpr std::string_view kDeepseekLlmPunct =
    "\\s?[!-/:-~\uff01-\uff0f\uff1a-\uff5e\u2018-\u201f\u3000-\u3002]+";
constexpr std::string_view kGpt4o =
    R"([^\r\n\p{L}\p{N}]?((?=[\p{L}])([^a-z]))*((?=[\p{L}])([^A-Z]))+(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])?|[^\r\n\p{L}\p{N}]?((?=[\p{L}])([^a-z]))+((?=[\p{L}])([^A-Z]))*(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])?|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
constexpr std::string_view kBloom = " ?[^(\\s|.,!?\u2026\u3002\uff0c\u3001\u0964\u06d4\u060c)]+";
constexpr std::string_view kCjk = "[\u4e00-\u9fa5\u0800-\u4e00\uac00-\ud7ff]+";

// The characters "\s" stands for in these patterns: Unicode's White_Space
// set, which is what the patterns' original engines use (and llama.cpp's
// tables). PCRE2's own \s adds U+180E, so the patterns are rewritten to this.
constexpr std::string_view kWhitespace =
    "\\t-\\r \\x{85}\\x{A0}\\x{1680}\\x{2000}-\\x{200A}\\x{2028}\\x{2029}\\x{202F}"
    "\\x{205F}\\x{3000}";

// `pattern` with \s and \S spelled out as classes of kWhitespace.
std::string spell_out_whitespace(std::string_view pattern) {
  std::string out;
  bool in_class = false;
  for (size_t i = 0; i < pattern.size(); ++i) {
    const char c = pattern[i];
    if (c == '\\' && i + 1 < pattern.size()) {
      const char e = pattern[++i];
      if (e == 's') {
        out += in_class ? std::string(kWhitespace) : "[" + std::string(kWhitespace) + "]";
      } else if (e == 'S') {
        CHECK(!in_class);  // [^\S...] is not used by any pattern here
        out += "[^" + std::string(kWhitespace) + "]";
      } else {
        out += c;
        out += e;
      }
      continue;
    }
    if (c == '[' && !in_class)
      in_class = true;
    else if (c == ']' && in_class)
      in_class = false;
    out += c;
  }
  return out;
}

}  // namespace

std::vector<std::string_view> pre_tokenizer_patterns(Pre pre) {
  switch (pre) {
    case Pre::Default: return {R"([\p{P}\$\+<=>\^~\|]+)", kGpt2, R"(\p{N}+)", "[0-9][0-9][0-9]"};
    case Pre::Gpt2:
    case Pre::Mpt: return {kGpt2};
    case Pre::Llama3:
    case Pre::ChatGlm4: return {kLlama3};
    case Pre::Qwen2: return {kQwen2};
    case Pre::Mistral: return {kMistral};
    case Pre::DeepseekLlm:
      return {"[\\r\\n]", kDeepseekLlmLetters, kDeepseekLlmPunct, "\\s+$", kCjk, "\\p{N}+"};
    case Pre::DeepseekCoder: return {"[\\r\\n]", "\\s?\\p{L}+", "\\s?\\p{P}+", kCjk, "\\p{N}"};
    case Pre::Falcon: return {R"([\p{P}\$\+<=>\^~\|`]+)", kGpt2, "[0-9][0-9][0-9]"};
    case Pre::Starcoder:
    case Pre::Refact:
    case Pre::Smollm: return {R"(\p{N})", kGpt2};
    case Pre::Bloom: return {kBloom};
    case Pre::Viking: return {kBloom, R"(\p{N})"};
    case Pre::Gpt4o: return {kGpt4o};
    // Runs of newlines and runs of other characters: llama.cpp's own split
    // for gemma4 (its merges never span a newline); the text's spaces are
    // already U+2581 here.
    case Pre::Gemma4: return {R"([^\n]+|[\n]+)"};
  }
  CHECK(false);
  return {};
}

struct PreTokenizer::Regex {
  pcre2_code* code = nullptr;
  ~Regex() { pcre2_code_free(code); }
};

struct PreTokenizer::Matcher::Data {
  pcre2_match_data* md = nullptr;
  std::vector<std::string_view> scratch;
  ~Data() { pcre2_match_data_free(md); }
};

PreTokenizer::Matcher::Matcher() : data_(std::make_unique<Data>()) {
  // Room for the whole match and the capture groups of every pattern above.
  data_->md = pcre2_match_data_create(16, nullptr);
  CHECK(data_->md != nullptr);
}
PreTokenizer::Matcher::~Matcher() = default;

PreTokenizer::PreTokenizer() = default;
PreTokenizer::PreTokenizer(PreTokenizer&&) noexcept = default;
PreTokenizer& PreTokenizer::operator=(PreTokenizer&&) noexcept = default;
PreTokenizer::~PreTokenizer() = default;

Result<PreTokenizer> PreTokenizer::create(Pre pre) {
  PreTokenizer p;
  for (std::string_view original : pre_tokenizer_patterns(pre)) {
    const std::string pattern = spell_out_whitespace(original);
    int err = 0;
    PCRE2_SIZE offset = 0;
    // UCP: \s, \d, \w and POSIX classes by Unicode properties. MATCH_INVALID_UTF:
    // bytes that are not UTF-8 never match, and so stay in the pieces between
    // matches instead of failing the match. DOLLAR_ENDONLY: "$" is the end of
    // the piece only, as in the pattern's original engines.
    auto regex = std::make_unique<Regex>();
    regex->code =
        pcre2_compile(reinterpret_cast<PCRE2_SPTR>(pattern.data()), pattern.size(),
                      PCRE2_UTF | PCRE2_UCP | PCRE2_MATCH_INVALID_UTF | PCRE2_DOLLAR_ENDONLY, &err,
                      &offset, nullptr);
    if (regex->code == nullptr) {
      PCRE2_UCHAR msg[256];
      pcre2_get_error_message(err, msg, sizeof msg);
      return Error{"pre-tokenizer pattern does not compile at offset " + std::to_string(offset) +
                   ": " + reinterpret_cast<const char*>(msg)};
    }
    // Without JIT (an unusual build of PCRE2) matching is slower but the same.
    (void)pcre2_jit_compile(regex->code, PCRE2_JIT_COMPLETE);
    p.regexes_.push_back(std::move(regex));
  }
  return p;
}

void PreTokenizer::split(std::string_view text, Matcher& m,
                         std::vector<std::string_view>& out) const {
  if (text.empty()) return;
  std::vector<std::string_view> pieces{text};
  std::vector<std::string_view>& next = m.data_->scratch;
  for (const auto& regex : regexes_) {
    next.clear();
    for (std::string_view piece : pieces) {
      const auto* subject = reinterpret_cast<PCRE2_SPTR>(piece.data());
      size_t gap = 0;  // start of the text not yet emitted
      size_t at = 0;   // where to search next
      while (at < piece.size()) {
        const int rc = pcre2_match(regex->code, subject, piece.size(), at, 0, m.data_->md, nullptr);
        if (rc < 0) break;  // PCRE2_ERROR_NOMATCH, or a resource limit: keep the rest as is
        const PCRE2_SIZE* ov = pcre2_get_ovector_pointer(m.data_->md);
        const size_t begin = ov[0], end = ov[1];
        if (begin > gap) next.push_back(piece.substr(gap, begin - gap));
        if (end > begin) {
          next.push_back(piece.substr(begin, end - begin));
          gap = at = end;
        } else {
          // An empty match: step over one character so the search moves on.
          at = end + 1;
          while (at < piece.size() && (static_cast<unsigned char>(piece[at]) & 0xC0) == 0x80) ++at;
          gap = begin;
        }
      }
      if (gap < piece.size()) next.push_back(piece.substr(gap));
    }
    pieces.swap(next);
  }
  out.insert(out.end(), pieces.begin(), pieces.end());
}

}  // namespace quip::tokenizer

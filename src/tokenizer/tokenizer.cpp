#include "tokenizer/tokenizer.h"

#include <algorithm>
#include <deque>
#include <queue>
#include <unordered_map>

#include "base/text.h"
#include "tokenizer/unicode.h"

namespace quip::tokenizer {

namespace {

constexpr std::string_view kSpmSpace = "\xE2\x96\x81";  // U+2581 LOWER ONE EIGHTH BLOCK

bool starts_with_spm_space(std::string_view s, size_t i) {
  return s.size() - i >= 3 && s.compare(i, 3, kSpmSpace) == 0;
}

}  // namespace

// A piece of the input: a special token matched whole, or raw text.
struct Tokenizer::Fragment {
  TokenId token;          // kNoToken for raw text
  std::string_view text;  // into the input
};

// The state of one encode() call: scratch buffers and a cache of the tokens
// of each word already seen in this text (prose repeats its words).
class Tokenizer::Session {
 public:
  Session(const Vocab& vocab, const PreTokenizer* pre) : vocab_(vocab), pre_(pre) {}

  void encode_text(std::string_view text, bool add_space_prefix, std::vector<TokenId>& out) {
    if (vocab_.model() == Model::Spm) {
      encode_spm(text, add_space_prefix, out);
    } else if (vocab_.pre() == Pre::Gemma4) {
      encode_gemma4(text, out);
    } else {
      encode_bpe(text, out);
    }
  }

 private:
  // `text` with each space written as U+2581 (and one in front with
  // `add_space_prefix`), kept for the whole session: the cache's keys point
  // into it.
  std::string_view escape_spaces(std::string_view text, bool add_space_prefix) {
    std::string& escaped = escaped_.emplace_back();
    escaped.reserve(text.size() + 3);
    if (add_space_prefix) escaped += kSpmSpace;
    for (char c : text) {
      if (c == ' ') {
        escaped += kSpmSpace;
      } else {
        escaped += c;
      }
    }
    return escaped;
  }

  struct Symbol {
    uint32_t start, len;
    int32_t prev, next;
  };

  // symbols_ = the characters of `s`, linked in order. Characters by their
  // lead byte alone, as SentencePiece and llama.cpp split them (a malformed
  // sequence is no token, so it is written as its bytes in the end anyway).
  void split_characters(std::string_view s) {
    symbols_.clear();
    for (size_t i = 0; i < s.size();) {
      static constexpr uint8_t kLength[16] = {1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 3, 4};
      const uint32_t n = std::min<uint32_t>(kLength[static_cast<unsigned char>(s[i]) >> 4],
                                            static_cast<uint32_t>(s.size() - i));
      const auto idx = static_cast<int32_t>(symbols_.size());
      symbols_.push_back(Symbol{static_cast<uint32_t>(i), n, idx - 1, idx + 1});
      i += n;
    }
    if (!symbols_.empty()) symbols_.back().next = -1;
  }

  // ---- SentencePiece ----
  //
  // As sentencepiece's BPE model (Kudo & Richardson 2018): spaces become
  // U+2581, the text is split into characters, and the adjacent pair whose
  // concatenation is the vocabulary's highest-scoring token is merged, again
  // and again (ties: leftmost first). Characters left that are no token are
  // written as byte tokens <0xNN>.

  void encode_spm(std::string_view text, bool add_space_prefix, std::vector<TokenId>& out) {
    const std::string_view s = escape_spaces(text, add_space_prefix);
    if (!vocab_.spm_splits_at_spaces()) {
      spm_piece(s, out);
      return;
    }
    // No token spans a "▁" that follows another character, so each piece
    // from one such "▁" to the next merges on its own, and repeats are cached.
    size_t begin = 0;
    size_t i = 0;
    while (i < s.size()) {
      if (starts_with_spm_space(s, i)) {
        if (i > begin && !(i >= 3 && starts_with_spm_space(s, i - 3))) {
          cached(s.substr(begin, i - begin), out, &Session::spm_piece);
          begin = i;
        }
        i += 3;
      } else {
        ++i;
      }
    }
    if (begin < s.size()) cached(s.substr(begin), out, &Session::spm_piece);
  }

  struct SpmBigram {
    float score;
    int32_t left;
    uint32_t size;
    bool operator<(const SpmBigram& o) const {  // std::priority_queue pops the largest
      return score < o.score || (score == o.score && left > o.left);
    }
  };

  void spm_piece(std::string_view s, std::vector<TokenId>& out) {
    split_characters(s);
    if (symbols_.empty()) return;

    std::priority_queue<SpmBigram> queue;
    const auto try_add = [&](int32_t left, int32_t right) {
      if (left < 0 || right < 0) return;
      const Symbol& l = symbols_[static_cast<size_t>(left)];
      const Symbol& r = symbols_[static_cast<size_t>(right)];
      const TokenId id = vocab_.find(s.substr(l.start, l.len + r.len));
      if (id == kNoToken) return;
      queue.push(SpmBigram{vocab_.score(id), left, l.len + r.len});
    };
    for (size_t i = 1; i < symbols_.size(); ++i) {
      try_add(static_cast<int32_t>(i - 1), static_cast<int32_t>(i));
    }
    while (!queue.empty()) {
      const SpmBigram b = queue.top();
      queue.pop();
      Symbol& l = symbols_[static_cast<size_t>(b.left)];
      if (l.len == 0 || l.next < 0) continue;
      Symbol& r = symbols_[static_cast<size_t>(l.next)];
      if (l.len + r.len != b.size) continue;  // one side changed since: stale
      l.len += r.len;
      r.len = 0;
      l.next = r.next;
      if (l.next >= 0) symbols_[static_cast<size_t>(l.next)].prev = b.left;
      try_add(l.prev, b.left);
      try_add(b.left, l.next);
    }
    // A character no merge reached is written as its bytes' tokens. Where the
    // vocabulary cannot spell it that way (no byte tokens), a run of such
    // characters becomes one unknown token, as SentencePiece without byte
    // fallback does (llama.cpp aborts there); without an unknown token they
    // are left out.
    bool in_unknown = false;
    for (int32_t i = 0; i >= 0; i = symbols_[static_cast<size_t>(i)].next) {
      const Symbol& sym = symbols_[static_cast<size_t>(i)];
      const std::string_view t = s.substr(sym.start, sym.len);
      const TokenId id = vocab_.find(t);
      const bool spelled = id != kNoToken || std::all_of(t.begin(), t.end(), [&](char c) {
                             return vocab_.byte_token(static_cast<uint8_t>(c)) != kNoToken;
                           });
      if (id != kNoToken) {
        out.push_back(id);
      } else if (spelled) {
        for (char c : t) out.push_back(vocab_.byte_token(static_cast<uint8_t>(c)));
      } else if (!in_unknown && vocab_.unk() != kNoToken) {
        out.push_back(vocab_.unk());
      }
      in_unknown = !spelled;
    }
  }

  // ---- Byte-level BPE ----
  //
  // As GPT-2 (Radford et al. 2019): the pre-tokenizer splits the text into
  // words; each word's bytes start as one token each, and the adjacent pair
  // with the lowest merge rank is merged, again and again (ties: leftmost).

  void encode_bpe(std::string_view text, std::vector<TokenId>& out) {
    words_.clear();
    pre_->split(text, matcher_, words_);
    for (std::string_view w : words_) cached(w, out, &Session::bpe_word);
  }

  struct BpeBigram {
    uint32_t rank;
    int32_t left;
    TokenId left_id, right_id;
    bool operator<(const BpeBigram& o) const {  // pops the lowest rank, then leftmost
      return rank > o.rank || (rank == o.rank && left > o.left);
    }
  };

  // Queues the pair of ids_[left] and ids_[right] (symbols; -1: none) at
  // its merge rank, where it has one.
  void queue_ranked(std::priority_queue<BpeBigram>& queue, int32_t left, int32_t right) const {
    if (left < 0 || right < 0) return;
    const TokenId l = ids_[static_cast<size_t>(left)], r = ids_[static_cast<size_t>(right)];
    if (l == kNoToken || r == kNoToken) return;
    const uint32_t rank = vocab_.merge_rank(l, r);
    if (rank != PairIndex::kNoRank) queue.push(BpeBigram{rank, left, l, r});
  }

  void bpe_word(std::string_view word, std::vector<TokenId>& out) {
    const ByteMap& bytes = ByteMap::get();
    if (vocab_.pre() == Pre::Llama3 || vocab_.pre() == Pre::Mistral) {
      // These vocabularies take a word that is a token whole, merges or not.
      mapped_.clear();
      for (char c : word) mapped_ += bytes.encode(static_cast<uint8_t>(c));
      const TokenId id = vocab_.find(mapped_);
      if (id != kNoToken) {
        out.push_back(id);
        return;
      }
    }
    ids_.clear();
    next_.clear();
    prev_.clear();
    for (size_t i = 0; i < word.size(); ++i) {
      ids_.push_back(vocab_.byte_token(static_cast<uint8_t>(word[i])));
      prev_.push_back(static_cast<int32_t>(i) - 1);
      next_.push_back(i + 1 < word.size() ? static_cast<int32_t>(i + 1) : -1);
    }
    std::priority_queue<BpeBigram> queue;
    const auto try_add = [&](int32_t left, int32_t right) { queue_ranked(queue, left, right); };
    for (size_t i = 1; i < word.size(); ++i) {
      try_add(static_cast<int32_t>(i - 1), static_cast<int32_t>(i));
    }
    while (!queue.empty()) {
      const BpeBigram b = queue.top();
      queue.pop();
      const auto left = static_cast<size_t>(b.left);
      const int32_t right = next_[left];
      if (ids_[left] != b.left_id || right < 0 || ids_[static_cast<size_t>(right)] != b.right_id) {
        continue;  // stale
      }
      joined_.assign(vocab_.text(b.left_id));
      joined_ += vocab_.text(b.right_id);
      const TokenId merged = vocab_.find(joined_);
      if (merged == kNoToken) continue;  // a merge into no token: the pair stays apart
      ids_[left] = merged;
      ids_[static_cast<size_t>(right)] = kNoToken;
      next_[left] = next_[static_cast<size_t>(right)];
      if (next_[left] >= 0) prev_[static_cast<size_t>(next_[left])] = b.left;
      try_add(prev_[left], b.left);
      try_add(b.left, next_[left]);
    }
    // A byte the vocabulary has no token for is left out, as llama.cpp does
    // (byte-level vocabularies normally hold all 256).
    for (int32_t i = word.empty() ? -1 : 0; i >= 0; i = next_[static_cast<size_t>(i)]) {
      const TokenId id = ids_[static_cast<size_t>(i)];
      if (id != kNoToken) out.push_back(id);
    }
  }

  // ---- Gemma 4 ----
  //
  // As llama.cpp's BPE session with the gemma4 pre-tokenizer (build 9749):
  // spaces become U+2581 (no space in front), the text is split into runs
  // of newlines and runs of other characters, and each run's UTF-8
  // characters are merged by rank as above (ties: leftmost). A run of
  // newlines that is a token is taken whole. What is left that is no token
  // is written as its bytes' "<0xNN>" tokens (a byte without one is left
  // out, as llama.cpp does).

  void encode_gemma4(std::string_view text, std::vector<TokenId>& out) {
    const std::string_view s = escape_spaces(text, false);
    words_.clear();
    pre_->split(s, matcher_, words_);
    for (std::string_view w : words_) cached(w, out, &Session::gemma4_word);
  }

  void gemma4_word(std::string_view word, std::vector<TokenId>& out) {
    if (word.find_first_not_of('\n') == std::string_view::npos) {
      if (const TokenId id = vocab_.find(word); id != kNoToken) {
        out.push_back(id);
        return;
      }
    }
    split_characters(word);
    ids_.clear();
    for (const Symbol& sym : symbols_) ids_.push_back(vocab_.find(word.substr(sym.start, sym.len)));
    std::priority_queue<BpeBigram> queue;
    const auto try_add = [&](int32_t left, int32_t right) { queue_ranked(queue, left, right); };
    for (size_t i = 1; i < symbols_.size(); ++i) {
      try_add(static_cast<int32_t>(i - 1), static_cast<int32_t>(i));
    }
    while (!queue.empty()) {
      const BpeBigram b = queue.top();
      queue.pop();
      // A symbol that changed since the pair was queued has another id (a
      // longer text is another token), or none.
      Symbol& l = symbols_[static_cast<size_t>(b.left)];
      if (ids_[static_cast<size_t>(b.left)] != b.left_id || l.next < 0) continue;
      const auto right = static_cast<size_t>(l.next);
      if (ids_[right] != b.right_id) continue;
      Symbol& r = symbols_[right];
      // llama.cpp merges a pair by the texts the merge names, whether or not
      // the result is a token (it always is in a vocabulary Hugging Face
      // would load): a result that is none stays one symbol, written as bytes.
      ids_[static_cast<size_t>(b.left)] = vocab_.find(word.substr(l.start, l.len + r.len));
      ids_[right] = kNoToken;
      l.len += r.len;
      r.len = 0;
      l.next = r.next;
      if (l.next >= 0) symbols_[static_cast<size_t>(l.next)].prev = b.left;
      try_add(l.prev, b.left);
      try_add(b.left, l.next);
    }
    for (int32_t i = symbols_.empty() ? -1 : 0; i >= 0; i = symbols_[static_cast<size_t>(i)].next) {
      const Symbol& sym = symbols_[static_cast<size_t>(i)];
      const TokenId id = ids_[static_cast<size_t>(i)];
      if (id != kNoToken) {
        out.push_back(id);
        continue;
      }
      for (char c : word.substr(sym.start, sym.len)) {
        const TokenId byte = vocab_.byte_token(static_cast<uint8_t>(c));
        if (byte != kNoToken) out.push_back(byte);
      }
    }
  }

  // Appends the tokens of `word`, computing them once per distinct word.
  void cached(std::string_view word, std::vector<TokenId>& out,
              void (Session::*compute)(std::string_view, std::vector<TokenId>&)) {
    auto it = cache_.find(word);
    if (it == cache_.end()) {
      const auto begin = static_cast<uint32_t>(pool_.size());
      (this->*compute)(word, pool_);
      it = cache_.emplace(word, std::pair(begin, static_cast<uint32_t>(pool_.size()))).first;
    }
    out.insert(out.end(), pool_.begin() + it->second.first, pool_.begin() + it->second.second);
  }

  const Vocab& vocab_;
  const PreTokenizer* pre_;
  PreTokenizer::Matcher matcher_;
  // Word -> [begin, end) in pool_. Keys are views into the caller's text
  // (byte-level BPE) or into escaped_ (SPM, gemma4), both alive for the
  // whole session.
  std::unordered_map<std::string_view, std::pair<uint32_t, uint32_t>> cache_;
  std::vector<TokenId> pool_;
  std::deque<std::string> escaped_;  // a deque: its strings never move
  std::string mapped_, joined_;
  std::vector<std::string_view> words_;
  std::vector<Symbol> symbols_;
  std::vector<TokenId> ids_;
  std::vector<int32_t> next_, prev_;
};

Tokenizer::Tokenizer() = default;
Tokenizer::Tokenizer(Tokenizer&&) noexcept = default;
Tokenizer& Tokenizer::operator=(Tokenizer&&) noexcept = default;
Tokenizer::~Tokenizer() = default;

Result<Tokenizer> Tokenizer::load(const gguf::GgufFile& file, const Vocab::Options& options) {
  auto vocab = Vocab::load(file, options);
  if (!vocab) return vocab.error();
  Tokenizer t;
  t.vocab_ = std::make_unique<Vocab>(std::move(*vocab));
  if (t.vocab_->model() == Model::Bpe) {
    auto pre = PreTokenizer::create(t.vocab_->pre());
    if (!pre) return pre.error();
    t.pre_ = std::make_unique<PreTokenizer>(std::move(*pre));
  }
  return t;
}

void Tokenizer::partition(std::string_view text, bool parse_special,
                          std::vector<Fragment>& out) const {
  out.assign(1, Fragment{kNoToken, text});
  if (text.empty()) out.clear();
  std::vector<Fragment> pieces;
  for (TokenId id : vocab_->special_tokens()) {
    const TokenType type = vocab_->type(id);
    if (!parse_special && (type == TokenType::Control || type == TokenType::Unknown)) continue;
    const std::string_view needle = vocab_->text(id);
    for (size_t i = 0; i < out.size(); ++i) {
      if (out[i].token != kNoToken) continue;
      std::string_view raw = out[i].text;
      size_t pos = raw.find(needle);
      if (pos == std::string_view::npos) continue;
      pieces.clear();
      const Strip strip = vocab_->strip(id);
      while (pos != std::string_view::npos) {
        std::string_view left = raw.substr(0, pos);
        // llama.cpp strips C isspace around these tokens.
        if (strip == Strip::Left) {
          while (!left.empty() && is_c_space(left.back())) left.remove_suffix(1);
        }
        if (!left.empty()) pieces.push_back(Fragment{kNoToken, left});
        pieces.push_back(Fragment{id, raw.substr(pos, needle.size())});
        raw.remove_prefix(pos + needle.size());
        if (strip == Strip::Right) {
          while (!raw.empty() && is_c_space(raw.front())) raw.remove_prefix(1);
        }
        pos = raw.find(needle);
      }
      if (!raw.empty()) pieces.push_back(Fragment{kNoToken, raw});
      out.erase(out.begin() + static_cast<std::ptrdiff_t>(i));
      out.insert(out.begin() + static_cast<std::ptrdiff_t>(i), pieces.begin(), pieces.end());
      i += pieces.size() - 1;
    }
  }
}

std::vector<TokenId> Tokenizer::encode(std::string_view text, const EncodeOptions& options) const {
  std::vector<TokenId> out;
  const Vocab& v = *vocab_;
  if (options.add_special && v.add_bos() && v.bos() != kNoToken) out.push_back(v.bos());

  std::vector<Fragment> fragments;
  partition(text, options.parse_special, fragments);
  Session session(v, pre_.get());
  bool after_special = true;  // SentencePiece adds its space at the start and after specials
  for (const Fragment& f : fragments) {
    if (f.token != kNoToken) {
      out.push_back(f.token);
      after_special = true;
    } else {
      session.encode_text(f.text, v.add_space_prefix() && after_special, out);
      after_special = false;
    }
  }

  if (options.add_special && v.add_eos() && v.eos() != kNoToken) out.push_back(v.eos());
  return out;
}

std::string Tokenizer::piece(TokenId id, bool special) const {
  const Vocab& v = *vocab_;
  const std::string_view text = v.text(id);
  switch (v.type(id)) {
    case TokenType::Control:
    case TokenType::Unknown: return special ? std::string(text) : std::string();
    case TokenType::UserDefined: return std::string(text);  // as written, whatever the model kind
    case TokenType::Byte: {
      const int b = parse_byte_token(text);
      return b >= 0 ? std::string(1, static_cast<char>(b)) : std::string();
    }
    case TokenType::Undefined:
    case TokenType::Unused: return std::string();
    case TokenType::Normal: break;
  }
  std::string out;
  if (v.escapes_spaces()) {
    for (size_t i = 0; i < text.size();) {
      if (starts_with_spm_space(text, i)) {
        out += ' ';
        i += 3;
      } else {
        out += text[i++];
      }
    }
    return out;
  }
  const ByteMap& bytes = ByteMap::get();
  for (size_t i = 0; i < text.size();) {
    const Utf8Char c = utf8_decode(text, i);
    const int b = c.cp == kInvalidCodepoint ? -1 : bytes.decode(c.cp);
    if (b >= 0) {
      out += static_cast<char>(b);
    } else {
      out.append(text.substr(i, c.len));  // not a byte's character: keep it as written
    }
    i += c.len;
  }
  return out;
}

std::string Tokenizer::decode(std::span<const TokenId> ids, const DecodeOptions& options) const {
  std::string out;
  bool strip = options.strip_leading_space && vocab_->add_space_prefix();
  for (TokenId id : ids) {
    if (!vocab_->valid(id)) continue;
    std::string p = piece(id, options.special);
    if (strip && !p.empty()) {
      if (p[0] == ' ') p.erase(0, 1);
      strip = false;
    }
    out += p;
  }
  return out;
}

std::string StreamDecoder::push(TokenId id) {
  if (!tokenizer_.vocab().valid(id)) return {};
  pending_ += tokenizer_.piece(id, special_);
  // Emit everything up to an incomplete character at the end; a sequence that
  // can never complete (an invalid byte) goes out as it is.
  size_t keep = 0;
  for (size_t back = 1; back <= std::min<size_t>(3, pending_.size()); ++back) {
    const auto c = static_cast<unsigned char>(pending_[pending_.size() - back]);
    if ((c & 0xC0) == 0x80) continue;  // a continuation byte: look further back
    if (c >= 0xC0 && utf8_lead_length(c) > back) keep = back;
    break;
  }
  std::string ready = pending_.substr(0, pending_.size() - keep);
  pending_.erase(0, pending_.size() - keep);
  return ready;
}

std::string StreamDecoder::flush() {
  return std::exchange(pending_, std::string());
}

}  // namespace quip::tokenizer

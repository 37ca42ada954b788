// Attention of one query head over the cached keys and values of n
// positions, computed as ggml's CPU flash attention does with llama.cpp's
// default half-precision cache (ggml_compute_forward_flash_attn_ext_f16): an
// online softmax (Milakov & Gimelshein 2018) over the scores
// scale * q.k_p, whose running weighted sum of value rows is kept in half
// precision, rescaled whenever a new maximum appears. The tiny random test
// models are sensitive enough that a float accumulator misses llama.cpp's
// outputs, so the rounding is part of the contract.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>

#include "kernels/dot.h"
#include "kernels/dot_float.h"

namespace quip::kernels {

// How a query-key dot product becomes an attention score: times the scale,
// or, with a soft cap c (Gemma 2's attention-logit soft-capping),
// c * tanh(dot * (scale / c)), as ggml divides its scale by the cap first.
class Scores {
 public:
  explicit Scores(float scale, float softcap = 0.0f)
      : scale_(softcap != 0.0f ? scale / softcap : scale), softcap_(softcap) {}
  float operator()(float dot) const {
    const float s = dot * scale_;
    return softcap_ != 0.0f ? softcap_ * std::tanh(s) : s;
  }
  float scale() const { return scale_; }  // divided by the cap where there is one
  float softcap() const { return softcap_; }

 private:
  float scale_, softcap_;
};

// The widths of an attention head's query and key (`key`) and of its value
// and output (`value`): one size in most models; deepseek2's latent
// attention has keys of the latent plus its rotated part and values of the
// latent alone (the first `value` halves of each key row).
struct HeadDims {
  HeadDims(size_t both) : key(both), value(both) {}  // NOLINT: one size for both
  HeadDims(size_t key_dim, size_t value_dim) : key(key_dim), value(value_dim) {}
  size_t key, value;
};

// out = attention of each of n_heads query heads over positions 0..n-1,
// whose key and value rows (dims.key and dims.value halves) start at k + p
// * stride and v + p * stride, with scores(q . k_p) as scores; q holds the
// heads one after another, dims.key floats each, and out likewise
// dims.value floats each (the query heads of one grouped-query group).
// With `partial` (2 floats per head), each head's running maximum and sum
// go there and `out` gets its accumulator as it stands, not yet divided by
// the sum: one chunk of a split attention (merge_attention_chunks).
// PRECONDITIONS: n >= 1; q holds half-representable values (the query as
// ggml converts it to the cache's type).
using AttendFn = void (*)(HeadDims dims, size_t n_heads, size_t n, const float* q,
                          const uint16_t* k, const uint16_t* v, size_t stride, Scores scores,
                          float* out, float* partial);

// The attention kernel of `isa` for heads of `dims` (the reference where
// that instruction set has none for these sizes).
AttendFn attend_function(Isa isa, HeadDims dims);

// A single query (decoding) over a long cache takes a third path: ggml
// splits the positions into as many chunks as it has threads, attends each
// as above, and merges the chunks (ggml_flash_attn_ext_reduce_partials)
// when the cache length llama.cpp passes it, the positions in use rounded
// up to a multiple of 256 (at least 256), is 512 or more. The chunks are
// that length divided by the thread count; quip takes the 2 threads of
// llama.cpp's reference outputs, whatever its own thread count.
inline constexpr size_t kSplitAttentionChunks = 2;

// The chunk length for `used` positions, or 0 where ggml does not split.
inline size_t split_attention_chunk(size_t used) {
  const size_t length = std::max<size_t>(256, (used + 255) / 256 * 256);
  return length >= 512 ? (length + kSplitAttentionChunks - 1) / kSplitAttentionChunks : 0;
}

// out = the merge of n_chunks chunks of one head, in order: chunk c's
// maximum and sum at partials[c * partial_stride] and [... + 1], its
// accumulator (value_dim floats) at accs + c * acc_stride. Skipping empty
// chunks, out = fma(out, expf(M - M'), acc * expf(M_c - M')), the sum
// likewise, then out * (1 / sum).
void merge_attention_chunks(size_t value_dim, size_t n_chunks, const float* partials,
                            size_t partial_stride, const float* accs, size_t acc_stride,
                            float* out);

// An attention sink (gpt-oss: a logit s per head that joins the softmax's
// denominator and adds no value), applied as ggml does after a head's last
// position (or, split, to its first chunk): `state` is the head's maximum
// M and sum S as the kernels' partials hold them, `acc` its accumulator.
// Where s > M, acc times expf(M - s) and M = s; S = fma(S, ms, vs), ms and
// vs being expf(M - s) and 1, or 1 and expf(s - M).
inline void add_sink(size_t value_dim, float sink, float* state, float* acc) {
  float ms = 1.0f, vs = 1.0f;
  if (sink > state[0]) {
    ms = std::exp(state[0] - sink);
    state[0] = sink;
    for (size_t d = 0; d < value_dim; ++d) acc[d] *= ms;
  } else {
    vs = std::exp(sink - state[0]);
  }
  state[1] = std::fma(state[1], ms, vs);
}

// A head's output from its state and accumulator: acc times 1 / S (0 where
// S is 0). out may be acc.
inline void finish_head(size_t value_dim, const float* state, const float* acc, float* out) {
  const float inv = state[1] == 0 ? 0.0f : 1.0f / state[1];
  for (size_t d = 0; d < value_dim; ++d) out[d] = acc[d] * inv;
}

// A whole head with its sink: add_sink, then finish_head into acc.
inline void finish_head_with_sink(size_t value_dim, float sink, float* state, float* acc) {
  add_sink(value_dim, sink, state, acc);
  finish_head(value_dim, state, acc, acc);
}

// The first position that a query at `pos` sees through a sliding window
// of `window` positions (0: no window): llama.cpp masks key position p
// when pos - p >= window.
inline size_t first_seen(size_t pos, size_t window) {
  return window != 0 && pos + 1 > window ? pos + 1 - window : 0;
}

// A batch of 64 query rows or more takes another path through ggml
// (ggml_compute_forward_flash_attn_ext_tiled, when the value head is a
// multiple of 16): the queries stay in float, and the keys go in tiles of
// kAttentionKeyTile positions, counted from position 0. For each tile a
// query sees any of: the scores s_j = scores(q . k_j as one fma chain),
// tanh over the whole tile where there is a cap; the tile's maximum and,
// when it is a new maximum M, the accumulator and the sum rescaled by
// expf(M_old - M); weights e_j = ggml_expf(s_j - M) (activation.h); the sum
// plus, in double, each 16 weights' reduce_add_16; and the accumulator
// acc[d] = fma(e_j, v_j[d], acc[d]) for j in order, in float. The output
// is acc * (1 / sum).
inline constexpr size_t kAttentionQueryTile = 64;  // GGML_FA_TILE_Q
inline constexpr size_t kAttentionKeyTile = 64;    // GGML_FA_TILE_KV

inline bool attends_in_tiles(size_t n_queries, size_t value_dim) {
  return n_queries >= kAttentionQueryTile && value_dim % 16 == 0;
}

// One query head for n_q queries: query i (dims.key floats at q + i *
// q_stride) is at position pos0 + i and sees positions first_seen(pos0 +
// i, window)..pos0 + i, whose key and value rows start at k + p *
// kv_stride and v + p * kv_stride; its output goes to out + i * out_stride.
// A tile that a query does not see at all is skipped for it, as ggml skips
// a row whose tile is wholly masked. With `partial` (2 floats per query),
// each query's maximum and sum go there and its output is the accumulator
// not yet divided by the sum (for add_sink and finish_head).
// PRECONDITIONS: attends_in_tiles(n_q, dims.value).
using AttendTilesFn = void (*)(HeadDims dims, size_t n_q, size_t pos0, const float* q,
                               size_t q_stride, const uint16_t* k, const uint16_t* v,
                               size_t kv_stride, Scores scores, size_t window, float* out,
                               size_t out_stride, float* partial);

AttendTilesFn attend_tiles_function(Isa isa);

}  // namespace quip::kernels

// No weight type falls back to the scalar reference on a SIMD instruction
// set: every type the loader accepts (kernels::has_dot, which
// cli::load_model asks of every matrix), in every float order the forward
// pass asks for it (kernels::llama_cpp_order over batch and matrix shapes),
// has a kernel of its own in every table quip dispatches to. A new type, or
// a new order of an old one, must come with its kernels.
#include <gtest/gtest.h>

#include <set>
#include <string>
#include <vector>

#include "gguf/types.h"
#include "kernels/dot.h"
#include "kernels/quantize.h"

namespace quip::kernels {
namespace {

using gguf::GgmlType;

std::string order_name(Order order) {
  switch (order) {
    case Order::kRows: return "kRows";
    case Order::kBlocks: return "kBlocks";
    case Order::kBlocksBy4: return "kBlocksBy4";
    case Order::kTinyBlas: return "kTinyBlas";
  }
  return "?";
}

// Every type id ggml defines that quip multiplies.
std::vector<GgmlType> loadable_weight_types() {
  std::vector<GgmlType> types;
  for (uint32_t id = 0; id < gguf::kGgmlTypeIdEnd; ++id) {
    const auto t = gguf::type_traits(id);
    if (t && has_dot(t->type)) types.push_back(t->type);
  }
  return types;
}

// The orders the forward pass uses for `type`: llama_cpp_order's answer for
// matrices of rows that are and are not multiples of 4 and 8, rows of many
// lengths, and batches of 1 to 9 columns, both parts of each split.
std::set<Order> orders_used(GgmlType type) {
  std::set<Order> orders;
  const size_t block = gguf::traits(type).block_size;
  for (uint64_t rows : {64u, 36u, 33u, 49152u, 50257u}) {
    for (size_t n_in : {size_t{256}, size_t{512}, size_t{576}, size_t{2048}, size_t{4864}}) {
      if (n_in % block != 0) continue;
      for (size_t n = 1; n <= 9; ++n) {
        const BatchOrder split = llama_cpp_order(type, rows, n_in, n);
        if (split.lead > 0) orders.insert(split.lead_order);
        if (split.lead < n) orders.insert(split.rest_order);
      }
    }
  }
  return orders;
}

TEST(DotCoverage, TheLoaderAcceptsTheTypesOfRealModels) {
  const std::vector<GgmlType> types = loadable_weight_types();
  const std::set<GgmlType> got(types.begin(), types.end());
  for (GgmlType t : {GgmlType::F32, GgmlType::F16, GgmlType::BF16, GgmlType::Q8_0, GgmlType::Q4_0,
                     GgmlType::Q4_1, GgmlType::Q5_0, GgmlType::Q5_1, GgmlType::IQ4_NL,
                     GgmlType::Q2_K, GgmlType::Q3_K, GgmlType::Q4_K, GgmlType::Q5_K, GgmlType::Q6_K,
                     GgmlType::IQ4_XS, GgmlType::MXFP4}) {
    EXPECT_EQ(got.count(t), 1u) << gguf::traits(t).name;
  }
}

// quip-synth writes every type the loader accepts with quip's own quantizers.
TEST(DotCoverage, EveryLoadableTypeHasAQuantizer) {
  for (uint32_t id = 0; id < gguf::kGgmlTypeIdEnd; ++id) {
    const auto t = gguf::type_traits(id);
    if (!t) continue;
    EXPECT_EQ(can_quantize(t->type), has_dot(t->type)) << t->name;
  }
}

TEST(DotCoverage, EveryLoadableTypeHasASimdKernelInEveryOrderItIsUsedIn) {
#if !defined(__x86_64__)
  GTEST_SKIP() << "quip has SIMD kernels for x86-64 only";
#endif
  for (GgmlType type : loadable_weight_types()) {
    const std::set<Order> orders = orders_used(type);
    ASSERT_TRUE(orders.count(Order::kRows)) << gguf::traits(type).name;
    for (Order order : orders) {
      const DotFn reference = dot_function(type, Isa::Reference, order);
      // Every table quip may dispatch to, whether or not this CPU runs it:
      // the tables are chosen by pointer, never called here.
      for (Isa isa : {Isa::Avx2, Isa::Avx512}) {
        EXPECT_NE(dot_function(type, isa, order), reference)
            << gguf::traits(type).name << " in " << order_name(order) << " has no " << isa_name(isa)
            << " kernel: it would run on the scalar reference";
      }
    }
  }
}

}  // namespace
}  // namespace quip::kernels

// The recurrent product of a small batch, `out = bias + a @ b` with a [M, K] of few rows (the batch: M up to a
// few dozen) and b [K, N] the same at every step of a sequence, on CPUs with AVX-512 (the kernels are compiled
// with -march=native; elsewhere `packs` is false and the callers use torch's GEMM). In float32, or with b in
// bfloat16 (mixed precision, on CPUs with AVX512-BF16): then a is rounded to bfloat16, the products are
// accumulated in float32 and the result is rounded to bfloat16 before the bias is added, as torch's bfloat16
// GEMM under autocast does.
//
// Used where a sequence has at least kMinSteps products of at most kMaxRowsToPack rows (`pack_for_steps`):
// packing costs about as much as three of torch's products of the ON-LSTM paper config.
//
// Why: a general GEMM packs b into cache-sized panels at every call; for a few rows that copy costs about as
// much as the product itself, so torch's fp32 product of 20 x 1150 by 1150 x 4830 runs at a third of the large-
// GEMM rate. Here b is packed once per sequence into panels of 16 columns (one AVX-512 register wide, each
// panel K x 16 contiguous; in bfloat16, pairs of consecutive k side by side in each 32-bit lane, as the dot
// product instruction takes them), and every product streams each panel once, with all rows of `a` held in
// registers (up to 24 accumulators, one register of b, a broadcast of one value of a per multiply-add).
#pragma once

#include <torch/extension.h>

#include <ATen/Parallel.h>

#include <algorithm>
#include <array>
#include <cstring>
#include <optional>
#include <type_traits>
#include <utility>
#include <variant>
#include <vector>

#if defined(__AVX512F__)
#include <immintrin.h>
#endif

namespace treenets {

namespace skinny {

constexpr int64_t kPanel = 16;    // columns per panel: one register of 16 floats
constexpr int64_t kMaxRows = 24;  // rows of `a` multiplied at once: 24 accumulator registers of the 32
                                  // (measured: 16 rows ran the 20-row batch in two tiles, 10-25 % slower)
using BFloat16 = at::BFloat16;

// Values of k per 32-bit lane: 1 in float32, 2 in bfloat16.
template <typename E>
constexpr int64_t kDepth = static_cast<int64_t>(sizeof(float) / sizeof(E));

// Whether this build multiplies with b in E.
template <typename E>
constexpr bool usable() {
#if defined(__AVX512F__) && defined(__AVX512BF16__)
  return true;
#elif defined(__AVX512F__)
  return std::is_same_v<E, float>;
#else
  return false;
#endif
}

#if defined(__AVX512F__)
// R rows of `a` (a_t [groups, lda, depth]: a transposed, from the tile's first row) times one panel
// ([groups, 16, depth]), into columns n0 .. n0 + width of out, plus bias (if given).
template <typename E, int R>
void tile(const E* a_t, int64_t lda, const E* panel, int64_t groups, int64_t n0, int64_t width, const float* bias,
          int64_t bias_stride, float* out, int64_t out_stride) {
  constexpr int64_t depth = kDepth<E>;
  const __mmask16 mask = width == kPanel ? __mmask16(0xFFFF) : __mmask16((1u << width) - 1);
  __m512 sum[R];  // fully unrolled loops keep these in registers (GCC left 18 or more of them in memory)
#pragma GCC unroll 32
  for (int r = 0; r < R; ++r) sum[r] = _mm512_setzero_ps();
  for (int64_t g = 0; g < groups; ++g) {
    const E* a = a_t + g * lda * depth;
    if constexpr (std::is_same_v<E, float>) {
      const __m512 b = _mm512_loadu_ps(panel + g * kPanel);
#pragma GCC unroll 32
      for (int r = 0; r < R; ++r) sum[r] = _mm512_fmadd_ps(_mm512_set1_ps(a[r]), b, sum[r]);
    } else {
#if defined(__AVX512BF16__)
      const __m512bh b = reinterpret_cast<__m512bh>(_mm512_loadu_si512(panel + g * kPanel * depth));
#pragma GCC unroll 32
      for (int r = 0; r < R; ++r) {  // a's two values of this group, in every lane
        int32_t pair;
        std::memcpy(&pair, a + r * depth, sizeof pair);
        sum[r] = _mm512_dpbf16_ps(sum[r], reinterpret_cast<__m512bh>(_mm512_set1_epi32(pair)), b);
      }
#endif
    }
  }
#pragma GCC unroll 32
  for (int r = 0; r < R; ++r) {
    __m512 result = sum[r];
#if defined(__AVX512BF16__)
    if constexpr (!std::is_same_v<E, float>)  // the bfloat16 product's result is bfloat16: round it, widen it
      result = _mm512_castsi512_ps(_mm512_slli_epi32(
          _mm512_cvtepu16_epi32(reinterpret_cast<__m256i>(_mm512_cvtneps_pbh(result))), 16));
#endif
    if (bias) result = _mm512_add_ps(result, _mm512_maskz_loadu_ps(mask, bias + r * bias_stride + n0));
    _mm512_mask_storeu_ps(out + r * out_stride + n0, mask, result);
  }
}

template <typename E>
using Tile = decltype(&tile<E, 1>);

template <typename E, size_t... R>
constexpr std::array<Tile<E>, sizeof...(R)> tiles_of(std::index_sequence<R...>) {
  return {&tile<E, static_cast<int>(R) + 1>...};
}
template <typename E>
inline constexpr auto kTiles = tiles_of<E>(std::make_index_sequence<kMaxRows>());  // kTiles<E>[R - 1]: R rows
#endif

// b packed with elements E (float or BFloat16).
template <typename E>
class Panels {
 public:
  static constexpr int64_t depth = kDepth<E>;

  // b = w if `transposed` is false (w [K, N]), else b = w^T (w [N, K]); w of dtype E, any strides.
  Panels(const torch::Tensor& w, bool transposed) {
    TORCH_CHECK(usable<E>(), "PackedWeight: this build cannot multiply with a weight of this dtype");
    const auto b = transposed ? w.t() : w;
    K_ = b.size(0), N_ = b.size(1);
    groups_ = (K_ + depth - 1) / depth, panels_ = (N_ + kPanel - 1) / kPanel;
    data_.assign(static_cast<size_t>(panels_ * groups_ * kPanel * depth), E(0));
    const auto acc = b.accessor<E, 2>();
    at::parallel_for(0, panels_, 1, [&](int64_t p0, int64_t p1) {
      for (int64_t p = p0; p < p1; ++p) {
        const int64_t n0 = p * kPanel, width = std::min(kPanel, N_ - n0);
        E* panel = data_.data() + p * groups_ * kPanel * depth;
        const auto at = [&](int64_t k, int64_t j) -> E& {
          return panel[((k / depth) * kPanel + j) * depth + k % depth];
        };
        if (transposed) {  // b's column n is w's row n: read w row by row
          for (int64_t j = 0; j < width; ++j)
            for (int64_t k = 0; k < K_; ++k) at(k, j) = acc[k][n0 + j];
        } else {
          for (int64_t k = 0; k < K_; ++k)
            for (int64_t j = 0; j < width; ++j) at(k, j) = acc[k][n0 + j];
        }
      }
    });
  }

  int64_t rows() const { return K_; }
  int64_t cols() const { return N_; }

  void multiply(const torch::Tensor& a, const torch::Tensor& bias, torch::Tensor& out) {
#if defined(__AVX512F__)
    const int64_t M = a.size(0);
    TORCH_CHECK(out.size(1) <= 1 || out.stride(1) == 1, "PackedWeight.multiply: out must have unit column stride");
    TORCH_CHECK(!bias.defined() || bias.size(1) <= 1 || bias.stride(1) == 1,
                "PackedWeight.multiply: bias must have unit column stride");
    a_t_.resize(static_cast<size_t>(groups_ * M * depth));  // a transposed: a tile's values side by side
    const auto acc = a.accessor<float, 2>();
    for (int64_t m = 0; m < M; ++m) {
      for (int64_t k = 0; k < K_; ++k) a_t_[((k / depth) * M + m) * depth + k % depth] = E(acc[m][k]);
      if (K_ % depth) a_t_[((groups_ - 1) * M + m) * depth + depth - 1] = E(0);  // an odd K's last pair
    }
    const float* bias_data = bias.defined() ? bias.data_ptr<float>() : nullptr;
    const int64_t bias_stride = bias.defined() ? bias.stride(0) : 0;
    float* out_data = out.data_ptr<float>();
    const int64_t tiles = (M + kMaxRows - 1) / kMaxRows;
    at::parallel_for(0, panels_, 4, [&](int64_t p0, int64_t p1) {
      for (int64_t p = p0; p < p1; ++p)
        for (int64_t tile = 0; tile < tiles; ++tile) {  // row tiles of nearly equal size
          const int64_t r0 = tile * M / tiles, r1 = (tile + 1) * M / tiles;
          kTiles<E>[r1 - r0 - 1](a_t_.data() + r0 * depth, M, data_.data() + p * groups_ * kPanel * depth, groups_,
                                 p * kPanel, std::min(kPanel, N_ - p * kPanel),
                                 bias_data ? bias_data + r0 * bias_stride : nullptr, bias_stride,
                                 out_data + r0 * out.stride(0), out.stride(0));
        }
    });
#else
    TORCH_CHECK(false, "PackedWeight.multiply: this build has no AVX-512");
#endif
  }

 private:
  int64_t K_ = 0, N_ = 0, groups_ = 0, panels_ = 0;
  std::vector<E> data_;  // the panels
  std::vector<E> a_t_;   // multiply's transposed a, kept between calls
};

}  // namespace skinny

// A weight packed for a sequence's products: float32, or bfloat16 (mixed precision).
class PackedWeight {
 public:
  // b = w if `transposed` is false (w [K, N]), else b = w^T (w [N, K]); w float32 or bfloat16, any strides.
  PackedWeight(const torch::Tensor& w, bool transposed)
      : panels_(w.scalar_type() == at::kBFloat16
                    ? Variant(std::in_place_type<skinny::Panels<skinny::BFloat16>>, w, transposed)
                    : Variant(std::in_place_type<skinny::Panels<float>>, w, transposed)) {}

  int64_t rows() const { return std::visit([](const auto& p) { return p.rows(); }, panels_); }
  int64_t cols() const { return std::visit([](const auto& p) { return p.cols(); }, panels_); }

  // out [M, N] = bias + a @ b; a [M, K] float32 (any strides), bias [M, N] float32 (or undefined: zero) and out
  // [M, N] float32 with unit column stride (their rows may be strided, as a time step of a [T, B, N] tensor).
  // Not for two threads at once: it keeps its transposed `a` between calls.
  void multiply(const torch::Tensor& a, const torch::Tensor& bias, torch::Tensor& out) {
    std::visit([&](auto& p) { p.multiply(a, bias, out); }, panels_);
  }

 private:
  using Variant = std::variant<skinny::Panels<float>, skinny::Panels<skinny::BFloat16>>;
  Variant panels_;
};

// Where packing pays (benchmarks/packed_gemm.py, 2 threads, the ON-LSTM paper config's weights, sequences of 70):
// from 1.02 to 3.5 times torch's speed up to 64 rows; at 256 rows from 0.73 to 1.63 times.
constexpr int64_t kMinSteps = 8, kMaxRowsToPack = 64;

// Whether this build multiplies with a packed weight of `dtype`: float32 with AVX-512, bfloat16 with AVX512-BF16.
inline bool packable(at::ScalarType dtype) {
  return dtype == at::kFloat ? skinny::usable<float>()
         : dtype == at::kBFloat16 ? skinny::usable<skinny::BFloat16>()
                                  : false;
}

// Whether a sequence of `steps` products of `rows` rows on a weight of `dtype` is packed: `packable`, at least
// kMinSteps steps of at most kMaxRowsToPack rows.
inline bool packs(at::ScalarType dtype, int64_t steps, int64_t rows) {
  return packable(dtype) && steps >= kMinSteps && rows <= kMaxRowsToPack;
}

// The weight of a sequence's products packed when that pays (`packs`): `w_low` (its bfloat16 copy, mixed
// precision) if given, else `w`; b = w^T if `transposed`, else w. Otherwise nothing: the caller uses torch's GEMM.
inline std::optional<PackedWeight> pack_for_steps(const torch::Tensor& w, const c10::optional<torch::Tensor>& w_low,
                                                  bool transposed, int64_t steps, int64_t rows) {
  const auto& weight = w_low.has_value() ? *w_low : w;
  if (!packs(weight.scalar_type(), steps, rows)) return std::nullopt;
  return std::optional<PackedWeight>(std::in_place, weight, transposed);
}

}  // namespace treenets

// The recurrent product of a small batch, `out = bias + a @ b`, with a [M, K] of few rows (the batch: M up to a
// few dozen) and b [K, N] the same at every step of a sequence. In float32 on every CPU: one micro-kernel written
// over the compiler's vector type, which the build's instruction set (-march=native, or $TREENETS_MARCH) turns
// into AVX-512, AVX2, NEON or SSE2 code; with b in bfloat16 (mixed precision) on CPUs with AVX512-BF16, a
// specialisation on its dot-product instruction: a is rounded to bfloat16, the products are accumulated in
// float32 and the result is rounded to bfloat16 before the bias is added, as torch's bfloat16 GEMM under
// autocast does.
//
// Why: a general GEMM packs b into cache-sized panels at every call; for a few rows that copy costs about as
// much as the product itself, so torch's fp32 product of 20 x 1150 by 1150 x 4830 runs at a third of the large-
// GEMM rate. Here b is packed once per sequence into panels of 16 columns (each panel K x 16 contiguous; in
// bfloat16, pairs of consecutive k side by side in each 32-bit lane, as the dot-product instruction takes them),
// and every product streams each panel once per tile of rows, with the tile's accumulators in registers and one
// broadcast value of `a` per multiply-add.
//
// Used where a sequence has at least kMinSteps products of at most kMaxRowsToPack rows (`packs`): packing costs
// about as much as three of torch's products of the ON-LSTM paper config.
#pragma once

#include <ATen/ATen.h>

#include <ATen/Parallel.h>

#include <algorithm>
#include <array>
#include <cstring>
#include <string>
#include <type_traits>
#include <utility>
#include <variant>
#include <vector>

#if defined(__AVX512BF16__)
#include <immintrin.h>
#endif

namespace treenets {

namespace packed {

constexpr int64_t kPanel = 16;  // columns per panel, in every build

// The register tile of the float32 kernel: vectors of kLanes floats, kVectors of them per panel row, up to kMaxRows
// rows of `a` at once; the kMaxRows x kVectors accumulators, a panel row and a broadcast fill the register file.
#if defined(__AVX512F__)
constexpr int kLanes = 16, kMaxRows = 24;  // 32 registers: 24 accumulators (measured: 16 rows ran the 20-row
                                           // batch in two tiles, 10-25 % slower)
constexpr const char* kInstructions = "AVX-512";
#elif defined(__AVX2__) || defined(__AVX__)
constexpr int kLanes = 8, kMaxRows = 6;  // 16 registers: 12 accumulators, the panel row in 2, a broadcast
constexpr const char* kInstructions = "AVX2";
#elif defined(__aarch64__) || defined(__ARM_NEON)
constexpr int kLanes = 4, kMaxRows = 6;  // 32 registers: 24 accumulators, the panel row in 4, a broadcast
constexpr const char* kInstructions = "NEON";
#else
constexpr int kLanes = 4, kMaxRows = 3;  // x86-64's SSE2 (16 registers) or the compiler's scalar code
constexpr const char* kInstructions = "SSE2";
#endif
constexpr int kVectors = kPanel / kLanes;

// kLanes floats in one register (GCC and Clang vector extensions: + and * compile to the build's SIMD
// instructions, a scalar operand is broadcast, and with -ffast-math `sum + b * x` becomes one fused multiply-add).
typedef float Vec __attribute__((vector_size(kLanes * sizeof(float))));

inline Vec load(const float* p) {
  Vec v;
  std::memcpy(&v, p, sizeof v);  // an unaligned load
  return v;
}

inline void store(float* p, const Vec& v) { std::memcpy(p, &v, sizeof v); }

using BFloat16 = at::BFloat16;

// Values of k per 32-bit lane: 1 in float32, 2 in bfloat16.
template <typename E>
constexpr int64_t kDepth = static_cast<int64_t>(sizeof(float) / sizeof(E));

// Whether this build multiplies with b in E: float32 always, bfloat16 with AVX512-BF16.
template <typename E>
constexpr bool usable() {
#if defined(__AVX512BF16__)
  return true;
#else
  return std::is_same_v<E, float>;
#endif
}

// The tile functions: R rows of `a` (a_t [groups, lda, depth]: a transposed, from the tile's first row) times one
// panel ([groups, 16, depth]), into columns n0 .. n0 + width of out, plus bias (if given).
template <int R>
void tile_float(const float* a_t, int64_t lda, const float* panel, int64_t groups, int64_t n0, int64_t width,
                const float* bias, int64_t bias_stride, float* out, int64_t out_stride) {
  Vec sum[R][kVectors];  // fully unrolled loops keep these in registers
#pragma GCC unroll 32
  for (int r = 0; r < R; ++r)
#pragma GCC unroll 4
    for (int v = 0; v < kVectors; ++v) sum[r][v] = Vec{};
  for (int64_t k = 0; k < groups; ++k) {
    const float* a = a_t + k * lda;
    Vec b[kVectors];
#pragma GCC unroll 4
    for (int v = 0; v < kVectors; ++v) b[v] = load(panel + k * kPanel + v * kLanes);
#pragma GCC unroll 32
    for (int r = 0; r < R; ++r) {
      const float x = a[r];
#pragma GCC unroll 4
      for (int v = 0; v < kVectors; ++v) sum[r][v] += b[v] * x;
    }
  }
#pragma GCC unroll 32
  for (int r = 0; r < R; ++r) {
    float* o = out + r * out_stride + n0;
    const float* bi = bias ? bias + r * bias_stride + n0 : nullptr;
    if (width == kPanel) {
#pragma GCC unroll 4
      for (int v = 0; v < kVectors; ++v) store(o + v * kLanes, bi ? sum[r][v] + load(bi + v * kLanes) : sum[r][v]);
    } else {  // the last panel's columns: through a row in memory
      float row[kPanel];
      for (int v = 0; v < kVectors; ++v) store(row + v * kLanes, sum[r][v]);
      for (int64_t j = 0; j < width; ++j) o[j] = bi ? row[j] + bi[j] : row[j];
    }
  }
}

#if defined(__AVX512BF16__)
constexpr int kMaxRowsBFloat16 = 24;  // one 16-float register per panel row: 24 accumulators of the 32

template <int R>
void tile_bfloat16(const BFloat16* a_t, int64_t lda, const BFloat16* panel, int64_t groups, int64_t n0,
                   int64_t width, const float* bias, int64_t bias_stride, float* out, int64_t out_stride) {
  const __mmask16 mask = width == kPanel ? __mmask16(0xFFFF) : __mmask16((1u << width) - 1);
  __m512 sum[R];
#pragma GCC unroll 32
  for (int r = 0; r < R; ++r) sum[r] = _mm512_setzero_ps();
  for (int64_t g = 0; g < groups; ++g) {
    const BFloat16* a = a_t + g * lda * 2;
    const __m512bh b = reinterpret_cast<__m512bh>(_mm512_loadu_si512(panel + g * kPanel * 2));
#pragma GCC unroll 32
    for (int r = 0; r < R; ++r) {  // a's two values of this group, in every lane
      int32_t pair;
      std::memcpy(&pair, a + r * 2, sizeof pair);
      sum[r] = _mm512_dpbf16_ps(sum[r], reinterpret_cast<__m512bh>(_mm512_set1_epi32(pair)), b);
    }
  }
#pragma GCC unroll 32
  for (int r = 0; r < R; ++r) {  // the bfloat16 product's result is bfloat16: round it, widen it
    __m512 result = _mm512_castsi512_ps(_mm512_slli_epi32(
        _mm512_cvtepu16_epi32(reinterpret_cast<__m256i>(_mm512_cvtneps_pbh(sum[r]))), 16));
    if (bias) result = _mm512_add_ps(result, _mm512_maskz_loadu_ps(mask, bias + r * bias_stride + n0));
    _mm512_mask_storeu_ps(out + r * out_stride + n0, mask, result);
  }
}
#endif

// The tiles of 1 .. kMaxRows rows for elements E: Tiles<E>::of[R - 1].
template <typename E>
struct Tiles {
  using Tile = void (*)(const E*, int64_t, const E*, int64_t, int64_t, int64_t, const float*, int64_t, float*,
                        int64_t);
  template <size_t... R>
  static constexpr auto make(std::index_sequence<R...>) {
    if constexpr (std::is_same_v<E, float>) {
      return std::array<Tile, sizeof...(R)>{&tile_float<static_cast<int>(R) + 1>...};
    } else {
#if defined(__AVX512BF16__)
      return std::array<Tile, sizeof...(R)>{&tile_bfloat16<static_cast<int>(R) + 1>...};
#else
      return std::array<Tile, 0>{};
#endif
    }
  }
#if defined(__AVX512BF16__)
  static constexpr int max_rows = std::is_same_v<E, float> ? kMaxRows : kMaxRowsBFloat16;
#else
  static constexpr int max_rows = kMaxRows;
#endif
  static constexpr auto of = make(std::make_index_sequence<usable<E>() ? max_rows : 0>());
};

// b packed with elements E (float or BFloat16).
template <typename E>
class Panels {
 public:
  static constexpr int64_t depth = kDepth<E>;

  // b = w if `transposed` is false (w [K, N]), else b = w^T (w [N, K]); w of dtype E, any strides.
  Panels(const at::Tensor& w, bool transposed) {
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

  void multiply(const at::Tensor& a, const at::Tensor& bias, at::Tensor& out) {
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
    constexpr int64_t max_rows = Tiles<E>::max_rows;
    const int64_t tiles = (M + max_rows - 1) / max_rows;
    at::parallel_for(0, panels_, 4, [&](int64_t p0, int64_t p1) {
      for (int64_t p = p0; p < p1; ++p)
        for (int64_t tile = 0; tile < tiles; ++tile) {  // row tiles of nearly equal size
          const int64_t r0 = tile * M / tiles, r1 = (tile + 1) * M / tiles;
          Tiles<E>::of[r1 - r0 - 1](a_t_.data() + r0 * depth, M, data_.data() + p * groups_ * kPanel * depth,
                                    groups_, p * kPanel, std::min(kPanel, N_ - p * kPanel),
                                    bias_data ? bias_data + r0 * bias_stride : nullptr, bias_stride,
                                    out_data + r0 * out.stride(0), out.stride(0));
        }
    });
  }

 private:
  int64_t K_ = 0, N_ = 0, groups_ = 0, panels_ = 0;
  std::vector<E> data_;  // the panels
  std::vector<E> a_t_;   // multiply's transposed a, kept between calls
};

}  // namespace packed

// A weight packed for a sequence's products: float32, or bfloat16 (mixed precision).
class PackedWeight {
 public:
  // b = w if `transposed` is false (w [K, N]), else b = w^T (w [N, K]); w float32 or bfloat16, any strides.
  PackedWeight(const at::Tensor& w, bool transposed)
      : panels_(w.scalar_type() == at::kBFloat16
                    ? Variant(std::in_place_type<packed::Panels<packed::BFloat16>>, w, transposed)
                    : Variant(std::in_place_type<packed::Panels<float>>, w, transposed)) {}

  int64_t rows() const { return std::visit([](const auto& p) { return p.rows(); }, panels_); }
  int64_t cols() const { return std::visit([](const auto& p) { return p.cols(); }, panels_); }

  // out [M, N] = bias + a @ b; a [M, K] float32 (any strides), bias [M, N] float32 (or undefined: zero) and out
  // [M, N] float32 with unit column stride (their rows may be strided, as a time step of a [T, B, N] tensor).
  // Not for two threads at once: it keeps its transposed `a` between calls.
  void multiply(const at::Tensor& a, const at::Tensor& bias, at::Tensor& out) {
    std::visit([&](auto& p) { p.multiply(a, bias, out); }, panels_);
  }

 private:
  using Variant = std::variant<packed::Panels<float>, packed::Panels<packed::BFloat16>>;
  Variant panels_;
};

// Where packing pays (benchmarks/packed_gemm.py, 2 threads, the ON-LSTM paper config's weights, sequences of 70;
// AVX-512: from 1.02 to 3.5 times torch's speed up to 64 rows, at 256 rows from 0.73 to 1.63 times).
constexpr int64_t kMinSteps = 8, kMaxRowsToPack = 64;

// Whether this build multiplies with a packed weight of `dtype`: float32 always, bfloat16 with AVX512-BF16.
inline bool packable(at::ScalarType dtype) {
  return dtype == at::kFloat ? packed::usable<float>()
         : dtype == at::kBFloat16 ? packed::usable<packed::BFloat16>()
                                  : false;
}

// Whether a sequence of `steps` products of `rows` rows on a weight of `dtype` is packed: `packable`, at least
// kMinSteps steps of at most kMaxRowsToPack rows.
inline bool packs(at::ScalarType dtype, int64_t steps, int64_t rows) {
  return packable(dtype) && steps >= kMinSteps && rows <= kMaxRowsToPack;
}

// The instructions this build's packed products run on, e.g. "AVX-512 with AVX512-BF16" or "AVX2".
inline std::string packed_instructions() {
  return std::string(packed::kInstructions) + (packable(at::kBFloat16) ? " with AVX512-BF16" : "");
}

}  // namespace treenets

// The recurrent product of a small batch, `out = bias + a @ b` with a [M, K] of few rows (the batch: M up to a
// few dozen) and b [K, N] the same at every step of a sequence, on CPUs with AVX-512 (the kernels are compiled
// with -march=native; elsewhere `PackedWeight::usable` is false and the callers use torch's GEMM).
//
// Used where a sequence has at least kMinSteps products of at most kMaxRowsToPack rows (`pack_for_steps`): packing
// costs about as much as three of torch's products of the ON-LSTM paper config.
//
// Why: a general GEMM packs b into cache-sized panels at every call; for a few rows that copy costs about as
// much as the product itself, so torch's fp32 product of 20 x 1150 by 1150 x 4830 runs at a third of the large-
// GEMM rate. Here b is packed once per sequence into panels of 16 columns (one AVX-512 register wide, each
// panel K x 16 contiguous), and every product streams each panel once, with all rows of `a` held in registers
// (up to 24 accumulators, one register of b, a broadcast of one value of a per multiply-add).
#pragma once

#include <torch/extension.h>

#include <ATen/Parallel.h>

#include <algorithm>
#include <array>
#include <optional>
#include <utility>
#include <vector>

#if defined(__AVX512F__)
#include <immintrin.h>
#endif

namespace treenets {

namespace skinny {

constexpr int64_t kPanel = 16;    // columns per panel: one register of 16 floats
constexpr int64_t kMaxRows = 24;  // rows of `a` multiplied at once: 24 accumulator registers of the 32
                                  // (measured: 16 rows ran the 20-row batch in two tiles, 10-25 % slower)

#if defined(__AVX512F__)

// R rows of `a` (a_t [K, lda] transposed, from the tile's first row) times one panel (K x 16), into columns
// n0 .. n0 + width of out, starting from bias (or zero).
template <int R>
void tile(const float* a_t, int64_t lda, const float* panel, int64_t K, int64_t n0, int64_t width,
          const float* bias, int64_t bias_stride, float* out, int64_t out_stride) {
  const __mmask16 mask = width == kPanel ? __mmask16(0xFFFF) : __mmask16((1u << width) - 1);
  __m512 sum[R];  // fully unrolled loops keep these in registers (GCC left 18 or more of them in memory)
#pragma GCC unroll 32
  for (int r = 0; r < R; ++r)
    sum[r] = bias ? _mm512_maskz_loadu_ps(mask, bias + r * bias_stride + n0) : _mm512_setzero_ps();
  for (int64_t k = 0; k < K; ++k) {
    const __m512 b = _mm512_loadu_ps(panel + k * kPanel);
    const float* a = a_t + k * lda;
#pragma GCC unroll 32
    for (int r = 0; r < R; ++r) sum[r] = _mm512_fmadd_ps(_mm512_set1_ps(a[r]), b, sum[r]);
  }
#pragma GCC unroll 32
  for (int r = 0; r < R; ++r) _mm512_mask_storeu_ps(out + r * out_stride + n0, mask, sum[r]);
}

using Tile = decltype(&tile<1>);

template <size_t... R>
constexpr std::array<Tile, sizeof...(R)> tiles_of(std::index_sequence<R...>) {
  return {&tile<static_cast<int>(R) + 1>...};
}
inline constexpr auto kTiles = tiles_of(std::make_index_sequence<kMaxRows>());  // kTiles[R - 1]: R rows
#endif

}  // namespace skinny

class PackedWeight {
 public:
  static constexpr int64_t kPanel = skinny::kPanel, kMaxRows = skinny::kMaxRows;

  // Whether this build packs float32 products (AVX-512 compiled in). Otherwise nothing is packed.
  static constexpr bool usable() {
#if defined(__AVX512F__)
    return true;
#else
    return false;
#endif
  }

  // b = w if `transposed` is false (w [K, N]), else b = w^T (w [N, K]); w float32, any strides.
  PackedWeight(const torch::Tensor& w, bool transposed) {
    const auto b = transposed ? w.t() : w;
    K_ = b.size(0), N_ = b.size(1);
    panels_ = (N_ + kPanel - 1) / kPanel;
    data_.assign(static_cast<size_t>(panels_ * K_ * kPanel), 0.0f);
    const auto acc = b.accessor<float, 2>();
    at::parallel_for(0, panels_, 1, [&](int64_t p0, int64_t p1) {
      for (int64_t p = p0; p < p1; ++p) {
        const int64_t n0 = p * kPanel, width = std::min(kPanel, N_ - n0);
        float* panel = data_.data() + p * K_ * kPanel;
        if (transposed) {  // b's column n is w's row n: read w row by row, write the panel's columns
          for (int64_t j = 0; j < width; ++j)
            for (int64_t k = 0; k < K_; ++k) panel[k * kPanel + j] = acc[k][n0 + j];
        } else {
          for (int64_t k = 0; k < K_; ++k)
            for (int64_t j = 0; j < width; ++j) panel[k * kPanel + j] = acc[k][n0 + j];
        }
      }
    });
  }

  int64_t rows() const { return K_; }
  int64_t cols() const { return N_; }

  // out [M, N] = bias + a @ b; a [M, K] float32, bias [M, N] (or undefined: zero), out [M, N] with unit column
  // stride (rows may be strided, as a time step of a [T, B, N] tensor).
  void multiply(const torch::Tensor& a, const torch::Tensor& bias, torch::Tensor& out) {
#if defined(__AVX512F__)
    const int64_t M = a.size(0);
    a_t_.resize(static_cast<size_t>(K_ * M));  // a transposed, [K, M]: a tile's values for row k side by side
    const auto acc = a.accessor<float, 2>();
    for (int64_t m = 0; m < M; ++m)
      for (int64_t k = 0; k < K_; ++k) a_t_[k * M + m] = acc[m][k];
    const float* bias_data = bias.defined() ? bias.data_ptr<float>() : nullptr;
    const int64_t bias_stride = bias.defined() ? bias.stride(0) : 0;
    float* out_data = out.data_ptr<float>();
    const int64_t tiles = (M + kMaxRows - 1) / kMaxRows;
    at::parallel_for(0, panels_, 4, [&](int64_t p0, int64_t p1) {
      for (int64_t p = p0; p < p1; ++p)
        for (int64_t tile = 0; tile < tiles; ++tile) {  // row tiles of nearly equal size
          const int64_t r0 = tile * M / tiles, r1 = (tile + 1) * M / tiles;
          skinny::kTiles[r1 - r0 - 1](a_t_.data() + r0, M, data_.data() + p * K_ * kPanel, K_, p * kPanel,
                                      std::min(kPanel, N_ - p * kPanel),
                                      bias_data ? bias_data + r0 * bias_stride : nullptr, bias_stride,
                                      out_data + r0 * out.stride(0), out.stride(0));
        }
    });
#else
    TORCH_CHECK(false, "PackedWeight::multiply: this build has no AVX-512");
#endif
  }

 private:
  int64_t K_ = 0, N_ = 0, panels_ = 0;
  std::vector<float> data_;  // the panels
  std::vector<float> a_t_;   // multiply's transposed a, kept between calls
};

// Where packing pays (benchmarks/packed_gemm.py, 2 threads, the ON-LSTM paper config's weights, sequences of 70):
// from 1.02 to 3.5 times torch's speed up to 64 rows; at 256 rows from 0.73 to 1.63 times.
constexpr int64_t kMinSteps = 8, kMaxRowsToPack = 64;

// Whether a sequence of `steps` float32 products of `rows` rows is packed: a build with AVX-512, at least kMinSteps
// steps of at most kMaxRowsToPack rows.
inline bool packs(int64_t steps, int64_t rows) {
  return PackedWeight::usable() && steps >= kMinSteps && rows <= kMaxRowsToPack;
}

// `w` packed for a sequence of `steps` products of `rows` rows (b = w^T if `transposed`, else w) when that pays
// (float32 and `packs`); otherwise nothing, and the caller uses torch's GEMM.
inline std::optional<PackedWeight> pack_for_steps(const torch::Tensor& w, bool transposed, int64_t steps,
                                                  int64_t rows) {
  if (w.scalar_type() != at::kFloat || !packs(steps, rows)) return std::nullopt;
  return std::optional<PackedWeight>(std::in_place, w, transposed);
}

}  // namespace treenets

// csrc/packed_gemm.h's float32 product against the float64 product, over random shapes: every row tile of the
// build (1 to kMaxRows rows, several tiles), a last panel of 1 to 16 columns, depths of a few or of hundreds, a bias
// or none, rows at a stride wider than a row (as a time step of a [T, B, N] tensor), and a second product on the
// same packing. Built with the stand-in ATen/ATen.h beside it; prints the instructions and the worst error over its
// tolerance, and exits 1 if a product is off.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <random>

#include "packed_gemm.h"

int main() {
  std::mt19937_64 generator(0);
  std::normal_distribution<float> normal;
  const auto pick = [&](int64_t low, int64_t high) {
    return std::uniform_int_distribution<int64_t>(low, high)(generator);
  };
  const auto randn = [&](int64_t rows, int64_t cols) {
    at::Tensor t(rows, cols);
    for (int64_t i = 0; i < rows; ++i)
      for (int64_t j = 0; j < cols; ++j) t(i, j) = normal(generator);
    return t;
  };
  double worst = 0;
  const int cases = 400;
  for (int c = 0; c < cases; ++c) {
    const int64_t M = pick(1, 64), K = pick(0, 1) ? pick(1, 40) : pick(250, 800), N = pick(1, 70);
    const bool transposed = pick(0, 1), with_bias = pick(0, 1);
    const int64_t width = pick(0, 1) ? 2 * N : N;  // out and bias: the first N columns of wider rows
    const auto w = transposed ? randn(N, K) : randn(K, N), a = randn(M, K);
    const auto bias = with_bias ? randn(M, width) : at::Tensor();
    at::Tensor out(M, width);
    treenets::PackedWeight packed(w, transposed);
    for (int call = 0; call < 1 + c % 2; ++call) packed.multiply(a, bias, out);
    for (int64_t i = 0; i < M; ++i)
      for (int64_t j = 0; j < N; ++j) {
        double want = with_bias ? bias(i, j) : 0.0;
        for (int64_t k = 0; k < K; ++k) want += double(a(i, k)) * (transposed ? w(j, k) : w(k, j));
        const double tolerance = 1e-5 * std::max(1.0, K / 40.0) + 1e-5 * std::fabs(want);
        worst = std::max(worst, std::fabs(out(i, j) - want) / tolerance);
      }
  }
  std::printf("%s: %d products, worst error / tolerance %.3f\n", treenets::packed_instructions().c_str(), cases,
              worst);
  return worst <= 1.0 ? 0 : 1;
}

// The matrix products of a recurrence, for the ON-LSTM and PRPN kernels: the per-step product with a recurrent
// weight, and the weight's gradient over all steps. Each takes the weight W (float32 or float64) and, under mixed
// precision, its bfloat16 copy `w_low`, and decides once how to multiply.
#pragma once

#include <ATen/ATen.h>

#include <optional>

#include "packed_gemm.h"

namespace treenets {

// The products of one sequence with one recurrent weight: out = bias + a b at every step, b = W^T (`transposed`:
// the forward's h U^T) or W (the backward's d U). Chosen once per sequence:
//   packed (packed_gemm.h) where that pays: float32 on every CPU, bfloat16 (with `w_low`) on CPUs with AVX512-BF16;
//   else torch's product: in bfloat16 with `w_low` (a rounded to bfloat16, accumulated in float32, the result
//   rounded to bfloat16 and then added to the bias in float32, as under autocast), else in W's dtype.
// Not for two threads at once: it keeps its buffers between calls.
class RecurrentProduct {
 public:
  // `steps` products of `rows` rows each.
  RecurrentProduct(const at::Tensor& w, const c10::optional<at::Tensor>& w_low, bool transposed,
                   int64_t steps, int64_t rows) {
    const auto& weight = w_low.has_value() ? *w_low : w;
    if (packs(weight.scalar_type(), steps, rows)) {
      packed_.emplace(weight, transposed);
    } else {
      b_ = transposed ? weight.t() : weight;
      low_ = w_low.has_value();
    }
  }

  // out [M, N] = bias + a b; a [M, K] in W's dtype (any strides), bias [M, N] (undefined: zero), out [M, N] with unit
  // column stride (rows of a, bias and out may be strided, as a time step of a [T, B, N] tensor).
  void multiply(const at::Tensor& a, const at::Tensor& bias, at::Tensor& out) {
    if (packed_) {
      packed_->multiply(a, bias, out);
    } else if (low_) {
      if (!a_low_.defined() || a_low_.size(0) != a.size(0)) {
        a_low_ = at::empty({a.size(0), b_.size(0)}, b_.options());
        product_low_ = at::empty({a.size(0), b_.size(1)}, b_.options());
      }
      a_low_.copy_(a);
      at::mm_out(product_low_, a_low_, b_);
      if (bias.defined()) at::add_out(out, bias, product_low_);
      else out.copy_(product_low_);
    } else if (bias.defined()) {
      at::addmm_out(out, bias, a, b_);
    } else {
      at::mm_out(out, a, b_);
    }
  }

  bool packed() const { return packed_.has_value(); }

 private:
  std::optional<PackedWeight> packed_;
  at::Tensor b_;                    // b for torch's product (W's bfloat16 copy under mixed precision)
  bool low_ = false;                   // whether b_ is bfloat16
  at::Tensor a_low_, product_low_;  // a and the product in bfloat16, kept between calls
};

// A weight's gradient over all steps, d^T x ([out, in], d [rows, out], x [rows, in]): one product instead of one per
// step accumulated; in bfloat16 when the forward's products were (`low`), the result in x's dtype.
inline at::Tensor weight_gradient(const at::Tensor& d, const at::Tensor& x, bool low) {
  if (!low) return at::mm(d.t(), x);
  return at::mm(d.to(at::kBFloat16).t(), x.to(at::kBFloat16)).to(x.scalar_type());
}

}  // namespace treenets

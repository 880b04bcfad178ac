// Helpers shared by the compiled kernels (onlstm_cpu.cpp, prpn_cpu.cpp, treelstm_cpu.cpp).
#pragma once

// Not <torch/extension.h>: it brings the whole C++ frontend (autograd, nn, optim, data, serialisation), which the
// kernels never use, and parsing it took twice as long as the headers below. ATen (tensors, their operators,
// parallel_for) and torch's pybind11 bindings of tensors are all the kernels use; each kernel compiles in 8-12 s
// less without it (16-30 s instead of 27-41 s on a 2-core AMD EPYC).
#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <torch/csrc/utils/pybind.h>

#include <algorithm>
#include <cmath>
#include <string>

namespace treenets {

template <typename T>
inline T sigmoid(T x) { return T(1) / (T(1) + std::exp(-x)); }

// Rows are independent; small problems stay on one thread (a fork/join costs more than they do).
inline int64_t grain_for(int64_t hidden) { return std::max<int64_t>(1, 8192 / std::max<int64_t>(hidden, 1)); }

// Sums over rows without a [rows, F] temporary: `PartialSums` cuts rows 0..n into fixed chunks (as many as the
// threads, fewer for a small n), `for_rows` runs f(r0, r1, sums) on each chunk in parallel, where `sums` [F] is the
// chunk's own row of partial sums, and `total` adds the chunks' rows. Which thread runs a chunk does not matter,
// so the numbers depend on the thread count alone, not on the scheduling.
class PartialSums {
 public:
  PartialSums(int64_t n, int64_t grain, int64_t features, const at::TensorOptions& options)
      : n_(n), chunks_(std::max<int64_t>(1, std::min<int64_t>(at::get_num_threads(), (n + grain - 1) / grain))),
        sums_(at::zeros({chunks_, features}, options)) {}

  template <typename T, typename F>
  void for_rows(const F& f) {
    T* sums = sums_.data_ptr<T>();
    const int64_t features = sums_.size(1);
    at::parallel_for(0, chunks_, 1, [&](int64_t c0, int64_t c1) {
      for (int64_t c = c0; c < c1; ++c) f(c * n_ / chunks_, (c + 1) * n_ / chunks_, sums + c * features);
    });
  }

  at::Tensor total() const { return sums_.sum(0); }

 private:
  int64_t n_, chunks_;
  at::Tensor sums_;
};

// The data of an optional tensor, or nullptr when it is undefined.
template <typename T>
const T* data_or_null(const at::Tensor& t) {
  return t.defined() ? t.data_ptr<T>() : nullptr;
}

}  // namespace treenets

// Input checks: every exported kernel checks its inputs with these at entry, so that a wrong call stops with
// a message naming the kernel (`fn`), the tensor (`name`) and what was expected, never reading bad memory.
namespace treenets {

// A dtype as Python writes it (float32, int64, ...).
inline std::string dtype_name(const at::Tensor& t) {
  switch (t.scalar_type()) {
    case at::kFloat: return "float32";
    case at::kDouble: return "float64";
    case at::kHalf: return "float16";
    case at::kBFloat16: return "bfloat16";
    case at::kLong: return "int64";
    case at::kInt: return "int32";
    default: return c10::toString(t.scalar_type());
  }
}

// Shapes and devices are written into messages as text made here: streaming torch's own types (an
// IntArrayRef) into a TORCH_CHECK message crashed the process (a segfault instead of the error) with torch
// 2.11's CUDA build and the system's g++ 13, while numbers and strings were safe.
inline std::string shape_text(at::IntArrayRef sizes) {
  std::string text = "[";
  for (size_t i = 0; i < sizes.size(); ++i) text += (i ? ", " : "") + std::to_string(sizes[i]);
  return text + "]";
}

inline const char* device_text(const at::Tensor& t) {
  return t.device().is_cpu() ? "cpu" : t.device().is_cuda() ? "cuda" : "another device";
}

// A CPU float32/float64 tensor with `dim` dimensions.
inline void check_float(const at::Tensor& t, int64_t dim, const char* fn, const char* name) {
  TORCH_CHECK(t.defined(), fn, ": ", name, " is missing");
  TORCH_CHECK(t.device().is_cpu(), fn, ": ", name, " must be a CPU tensor, got one on ", device_text(t));
  TORCH_CHECK(t.scalar_type() == at::kFloat || t.scalar_type() == at::kDouble, fn, ": ", name,
              " must be float32 or float64, got ", dtype_name(t));
  TORCH_CHECK(t.dim() == dim, fn, ": ", name, " must have ", dim, " dimensions, got shape ",
              shape_text(t.sizes()));
}

// A CPU tensor with the dtype of `like`, the shape `sizes` and, with `contiguous`, a contiguous layout.
inline void check_tensor(const at::Tensor& t, const at::Tensor& like, at::IntArrayRef sizes, bool contiguous,
                         const char* fn, const char* name) {
  check_float(t, static_cast<int64_t>(sizes.size()), fn, name);
  TORCH_CHECK(t.scalar_type() == like.scalar_type(), fn, ": ", name, " must be ", dtype_name(like),
              " like the other inputs, got ", dtype_name(t));
  TORCH_CHECK(t.sizes() == sizes, fn, ": ", name, " must have shape ", shape_text(sizes), ", got ",
              shape_text(t.sizes()));
  TORCH_CHECK(!contiguous || t.is_contiguous(), fn, ": ", name, " must be contiguous");
}

// `check_tensor` for an optional tensor, when it is given.
inline void check_optional(const c10::optional<at::Tensor>& t, const at::Tensor& like, at::IntArrayRef sizes,
                           const char* fn, const char* name) {
  if (t.has_value() && t->defined()) check_tensor(*t, like, sizes, false, fn, name);
}

// A contiguous CPU int64 tensor of the shape `sizes` (indices a kernel saved, such as an argmax).
// `w_low` (named `low_name`), when given: the weight `w` (named `name`) in bfloat16, which the recurrent products
// of mixed precision run on.
inline void check_low_weight(const c10::optional<at::Tensor>& w_low, const at::Tensor& w, const char* fn,
                             const char* low_name = "w_low", const char* name = "w_hh") {
  if (!w_low.has_value()) return;
  TORCH_CHECK(w.scalar_type() == at::kFloat, fn, ": ", low_name, " is for a float32 ", name, ", got a ",
              dtype_name(w), " one (mixed precision keeps float64 products)");
  TORCH_CHECK(w_low->device().is_cpu(), fn, ": ", low_name, " must be a CPU tensor, got one on ",
              device_text(*w_low));
  TORCH_CHECK(w_low->scalar_type() == at::kBFloat16, fn, ": ", low_name, " must be bfloat16, got ",
              dtype_name(*w_low));
  TORCH_CHECK(w_low->sizes() == w.sizes(), fn, ": ", low_name, " must have the shape of ", name, " ",
              shape_text(w.sizes()), ", got ", shape_text(w_low->sizes()));
}

inline void check_long(const at::Tensor& t, at::IntArrayRef sizes, const char* fn, const char* name) {
  TORCH_CHECK(t.defined(), fn, ": ", name, " is missing");
  TORCH_CHECK(t.device().is_cpu(), fn, ": ", name, " must be a CPU tensor, got one on ", device_text(t));
  TORCH_CHECK(t.scalar_type() == at::kLong, fn, ": ", name, " must be int64, got ", dtype_name(t));
  TORCH_CHECK(t.sizes() == sizes, fn, ": ", name, " must have shape ", shape_text(sizes), ", got ",
              shape_text(t.sizes()));
  TORCH_CHECK(t.is_contiguous(), fn, ": ", name, " must be contiguous");
}

// A contiguous 1-D CPU int64 tensor of indices (a Tree-LSTM schedule), of `length` values unless negative.
inline void check_index(const at::Tensor& t, int64_t length, const char* fn, const char* name) {
  TORCH_CHECK(t.defined() && t.device().is_cpu() && t.scalar_type() == at::kLong && t.dim() == 1 &&
                  t.is_contiguous(),
              fn, ": ", name, " must be a contiguous 1-D CPU int64 tensor, got ",
              t.defined() ? dtype_name(t) + " of shape " + shape_text(t.sizes()) + " on " + device_text(t)
                          : std::string("nothing"));
  TORCH_CHECK(length < 0 || t.size(0) == length, fn, ": ", name, " must have ", length, " values, got ",
              t.size(0));
}

}  // namespace treenets

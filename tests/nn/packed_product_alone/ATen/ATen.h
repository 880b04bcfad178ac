// A stand-in for the few parts of torch's C++ API that csrc/packed_gemm.h uses (2-D float32 tensors with strides,
// bfloat16, at::parallel_for, TORCH_CHECK), so that the header builds and runs where no torch for the CPU is
// installed: tests/nn/test_packed_products.py builds check.cpp with it for 64-bit ARM and runs it in an emulator.
#pragma once

#include <cstdint>
#include <cstring>
#include <memory>
#include <stdexcept>
#include <utility>
#include <vector>

namespace c10 {
struct BFloat16 {  // (only compiled here: the bfloat16 products need AVX512-BF16)
  uint16_t bits = 0;
  BFloat16() = default;
  BFloat16(float f) {
    uint32_t u;
    std::memcpy(&u, &f, sizeof u);
    bits = static_cast<uint16_t>((u + 0x7FFF + ((u >> 16) & 1)) >> 16);
  }
};
enum class ScalarType { Float, BFloat16 };
}  // namespace c10

namespace at {
using c10::BFloat16;
using c10::ScalarType;
constexpr ScalarType kFloat = ScalarType::Float, kBFloat16 = ScalarType::BFloat16;

template <typename T>
struct Row {
  T* data;
  int64_t stride;
  T& operator[](int64_t j) const { return data[j * stride]; }
};

template <typename T>
struct Accessor {
  T* data;
  int64_t stride0, stride1;
  Row<T> operator[](int64_t i) const { return {data + i * stride0, stride1}; }
};

// A float32 matrix, or its transpose (a view of the same values).
class Tensor {
 public:
  Tensor() = default;
  Tensor(int64_t rows, int64_t cols)
      : values_(std::make_shared<std::vector<float>>(rows * cols)), sizes_{rows, cols}, strides_{cols, 1} {}
  bool defined() const { return values_ != nullptr; }
  int64_t size(int dim) const { return sizes_[dim]; }
  int64_t stride(int dim) const { return strides_[dim]; }
  ScalarType scalar_type() const { return ScalarType::Float; }
  Tensor t() const {
    Tensor view = *this;
    std::swap(view.sizes_[0], view.sizes_[1]);
    std::swap(view.strides_[0], view.strides_[1]);
    return view;
  }
  template <typename T>
  T* data_ptr() const { return reinterpret_cast<T*>(values_->data()); }
  template <typename T, int N>
  Accessor<T> accessor() const { return {data_ptr<T>(), strides_[0], strides_[1]}; }
  float& operator()(int64_t i, int64_t j) const { return (*values_)[i * strides_[0] + j * strides_[1]]; }

 private:
  std::shared_ptr<std::vector<float>> values_;
  int64_t sizes_[2] = {0, 0}, strides_[2] = {0, 0};
};

// Two chunks, as two threads take a range, where the grain allows: the chunks' bounds are run too.
template <typename F>
void parallel_for(int64_t begin, int64_t end, int64_t grain, const F& f) {
  if (end - begin > grain) {
    const int64_t middle = begin + (end - begin) / 2;
    f(begin, middle);
    f(middle, end);
  } else if (end > begin) {
    f(begin, end);
  }
}
}  // namespace at

#define TORCH_CHECK(condition, ...) \
  if (!(condition)) throw std::runtime_error("check failed: " #condition)

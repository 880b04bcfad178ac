// The packed recurrent product on its own (packed_gemm.h), for tests and benchmarks: `PackedWeight(w, transposed)`
// packs b (w^T if transposed, else w; float32, or bfloat16 where the build multiplies with it), `multiply(a, bias)`
// returns bias + a @ b (a and bias float32; with b in bfloat16, a is rounded to bfloat16 and so is the product).
// The ON-LSTM and PRPN kernels use the same code through recurrent_product.h.
#include "common.h"
#include "packed_gemm.h"

using namespace treenets;

namespace {

PackedWeight packed_weight(const at::Tensor& w, bool transposed) {
  const char* fn = "PackedWeight";
  TORCH_CHECK(w.defined() && w.device().is_cpu() && w.dim() == 2, fn, ": w must be a 2-D CPU tensor");
  TORCH_CHECK(w.scalar_type() == at::kFloat || w.scalar_type() == at::kBFloat16, fn,
              ": w must be float32 or bfloat16, got ", dtype_name(w));
  TORCH_CHECK(packable(w.scalar_type()), fn, ": this build of the kernels (", packed_instructions(),
              ") does not pack ", dtype_name(w), " products (bfloat16 needs AVX512-BF16)");
  return PackedWeight(w, transposed);
}

at::Tensor packed_multiply(PackedWeight& packed, const at::Tensor& a, const c10::optional<at::Tensor>& bias) {
  const char* fn = "PackedWeight.multiply";
  check_float(a, 2, fn, "a");
  TORCH_CHECK(a.scalar_type() == at::kFloat, fn, ": a must be float32, got ", dtype_name(a));
  TORCH_CHECK(a.size(1) == packed.rows(), fn, ": a must have ", packed.rows(), " columns, got shape ",
              shape_text(a.sizes()));
  if (bias.has_value()) check_tensor(*bias, a, {a.size(0), packed.cols()}, false, fn, "bias");
  auto out = at::empty({a.size(0), packed.cols()}, a.options());
  packed.multiply(a, bias.has_value() ? bias->contiguous() : at::Tensor(), out);
  return out;
}

bool packed_products(int64_t steps, int64_t rows, bool bfloat16) {
  return packs(bfloat16 ? at::kBFloat16 : at::kFloat, steps, rows);
}

}  // namespace

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {
  m.def("packed_products", &packed_products, pybind11::arg("steps"), pybind11::arg("rows"),
        pybind11::arg("bfloat16") = false,
        "whether the kernels pack a sequence of `steps` recurrent products of `rows` rows (float32 or bfloat16)");
  m.def("instructions", &packed_instructions, "the instructions the packed products run on in this build");
  // module_local: builds for two CPUs (or two versions) may be loaded in one process, as benchmarks do
  pybind11::class_<PackedWeight>(m, "PackedWeight", pybind11::module_local())
      .def(pybind11::init(&packed_weight), pybind11::arg("w"), pybind11::arg("transposed"))
      .def("multiply", &packed_multiply, pybind11::arg("a"), pybind11::arg("bias") = pybind11::none());
}

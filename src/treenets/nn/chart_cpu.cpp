// Viterbi's max-plus products for the grammars' charts (treenets/nn/chart.py), in C++: PyTorch has no max-plus
// matrix product, so its Viterbi materialises every candidate ([cells, A, B x C] sums, their keys, sorts and
// gathers) and spends its time moving memory. Here each candidate is summed and compared once, in registers.
// The PyTorch code in chart.py is the specification: the same sums in the same order (so the same floats), the
// same maxima and the same ties (the smallest key); tests check both agree.
//
// max_plus(x [b, n, k], y [b or 1, k, m]) -> values [b, n, m] = max_k x[b, i, k] + y[b, k, j] and its first k
//   (y of batch 1: the same for every sentence, read in place).
//   (The edge tables of chart.py: a preterminal child contracted with its rule block.)
//
// viterbi_middle(lefts [b, c, K, NT], rights [b, c, K, NT], rules [b, A, NT * NT], s)
//   -> best [b, c, A] = max over (k, B, C) of (lefts[k, B] + rights[k, C]) + rules[A, B, C]
//      key  [b, c, A] = (k + 1) * s * s + B * s + C of the smallest such (k, B, C) among those reaching it
//   (The splits of a width whose children are both nonterminals: split index k + 1, as chart.py keys them.)
//
// split_logsumexp(left, right, cells, batch, n, w): the factored inside algorithm's cells of width w (SimplePCFG),
//   cells[w][b, s, A] = log sum_{k=1}^{w-1} exp(left[k][b, s, A] + right[w - k][b, s + k, A])
//   over the chart's flat layout [rows, NT]: width v's rows (b, s), s = 0..n-v, start at `chart_row(batch, n, v)`.
//   chart.py's `_inside_factored` is the specification (its logsumexp over the stacked split points); here each
//   cell's split points are read where they lie, with no [cells, K, NT] stripes copied.
// split_max(left, right, left_symbols, right_symbols, best, keys, batch, n, w, s): the factored Viterbi's cells of
//   width w over the flat chart: best[w][b, c, A] = max_{k=1}^{w-1} left[k][b, c, A] + right[w - k][b, c + k, A]
//   (the first k among ties) and its pointer (k - 1) * s * s + left_symbols[k][b, c, A] * s + right_symbols[w -
//   k][b, c + k, A] (chart.py's `_viterbi_factored`, its specification: the same sums and ties).
// split_logsumexp_backward(left, right, cells, grad, grad_left, grad_right, batch, n, w): its gradient, added to
//   grad_left and grad_right (the rows of widths below w): exp(left + right - cell) * grad per split point.
#include <limits>
#include <vector>

#include "common.h"

using at::Tensor;
using namespace treenets;

namespace {

template <typename T>
void max_plus_rows(const T* xs, const T* ys, T* vs, int64_t* is, int64_t batch, int64_t n, int64_t k, int64_t m,
                   bool shared) {
  at::parallel_for(0, batch * n, 1, [&](int64_t begin, int64_t end) {
    for (int64_t row = begin; row < end; ++row) {
      const T* xr = xs + row * k;
      const T* yb = ys + (shared ? 0 : row / n) * k * m;
      T* v = vs + row * m;
      int64_t* index = is + row * m;
      for (int64_t j = 0; j < m; ++j) v[j] = xr[0] + yb[j];
      for (int64_t kk = 1; kk < k; ++kk) {
        const T xv = xr[kk];
        const T* yr = yb + kk * m;
#pragma omp simd
        for (int64_t j = 0; j < m; ++j) {
          const T candidate = xv + yr[j];
          const bool better = candidate > v[j];  // strictly: the first k keeps a tie
          v[j] = better ? candidate : v[j];
          index[j] = better ? kk : index[j];
        }
      }
    }
  });
}

std::tuple<Tensor, Tensor> max_plus(const Tensor& x_in, const Tensor& y_in) {
  const char* fn = "max_plus";
  check_float(x_in, 3, fn, "x");
  check_float(y_in, 3, fn, "y");
  TORCH_CHECK(y_in.scalar_type() == x_in.scalar_type() && (y_in.size(0) == x_in.size(0) || y_in.size(0) == 1) &&
                  y_in.size(1) == x_in.size(2) && x_in.size(2) > 0,
              fn, ": expected x [b, n, k] and y [b or 1, k, m] of one dtype with k > 0, got ",
              shape_text(x_in.sizes()), " and ", shape_text(y_in.sizes()));
  const Tensor x = x_in.contiguous(), y = y_in.contiguous();
  const int64_t batch = x.size(0), n = x.size(1), k = x.size(2), m = y.size(2);
  Tensor values = at::empty({batch, n, m}, x.options());
  Tensor indices = at::zeros({batch, n, m}, x.options().dtype(at::kLong));
  AT_DISPATCH_FLOATING_TYPES(x.scalar_type(), "max_plus", [&] {
    max_plus_rows(x.data_ptr<scalar_t>(), y.data_ptr<scalar_t>(), values.data_ptr<scalar_t>(),
                  indices.data_ptr<int64_t>(), batch, n, k, m, y.size(0) == 1 && batch > 1);
  });
  return {values, indices};
}

template <typename T>
void viterbi_middle_cells(const T* ls, const T* rs, const T* rule_data, T* bs, int64_t* ks, int64_t batch,
                          int64_t cells, int64_t splits, int64_t nt, int64_t a_n, int64_t s) {
  const int64_t pairs_n = nt * nt;
  at::parallel_for(0, batch * cells, 1, [&](int64_t begin, int64_t end) {
    // per (B, C) of a cell: the best split's left + right, and its rank k * NT * NT + B * NT + C, which orders the
    // candidates as their keys do (int32, as wide as a float32 lane: the reductions below vectorise)
    std::vector<T> pairs(pairs_n);
    std::vector<int32_t> ranks(pairs_n);
    for (int64_t cell = begin; cell < end; ++cell) {
      const T* left = ls + cell * splits * nt;
      const T* right = rs + cell * splits * nt;
      // each (B, C): max over the splits of left + right, the first split among ties (chart.py's max(dim=2))
      for (int64_t k = 0; k < splits; ++k) {
        for (int64_t bb = 0; bb < nt; ++bb) {
          const T l = left[k * nt + bb];
          const T* r = right + k * nt;
          T* p = pairs.data() + bb * nt;
          int32_t* rank = ranks.data() + bb * nt;
          const int32_t first = static_cast<int32_t>(k * pairs_n + bb * nt);
#pragma omp simd
          for (int64_t c = 0; c < nt; ++c) {
            const T candidate = l + r[c];
            const bool better = k == 0 || candidate > p[c];
            p[c] = better ? candidate : p[c];
            rank[c] = better ? first + static_cast<int32_t>(c) : rank[c];
          }
        }
      }
      // each A: the maximum over (B, C) of pairs + rules[A, B, C], then the smallest rank reaching it
      const T* rule_b = rule_data + (cell / cells) * a_n * pairs_n;
      const T* pv = pairs.data();
      const int32_t* rv = ranks.data();
      for (int64_t a = 0; a < a_n; ++a) {
        const T* rule = rule_b + a * pairs_n;
        // (from the first candidate, not -infinity, and no OpenMP reduction, whose start would be -FLT_MAX: a
        // -ffast-math build assumes no infinity, and a cell of no tree is -inf everywhere)
        T top = pv[0] + rule[0];
        for (int64_t q = 1; q < pairs_n; ++q) top = std::max(top, pv[q] + rule[q]);
        int32_t smallest = std::numeric_limits<int32_t>::max();
#pragma omp simd reduction(min : smallest)
        for (int64_t q = 0; q < pairs_n; ++q) {
          const int32_t candidate = pv[q] + rule[q] == top ? rv[q] : std::numeric_limits<int32_t>::max();
          smallest = std::min(smallest, candidate);
        }
        const int64_t k = smallest / pairs_n, bb = smallest % pairs_n / nt, c = smallest % nt;
        bs[cell * a_n + a] = top;
        ks[cell * a_n + a] = (k + 1) * s * s + bb * s + c;
      }
    }
  });
}

std::tuple<Tensor, Tensor> viterbi_middle(const Tensor& lefts_in, const Tensor& rights_in, const Tensor& rules_in,
                                          int64_t s) {
  const char* fn = "viterbi_middle";
  check_float(lefts_in, 4, fn, "lefts");
  check_float(rights_in, 4, fn, "rights");
  check_float(rules_in, 3, fn, "rules");
  const int64_t batch = lefts_in.size(0), cells = lefts_in.size(1), splits = lefts_in.size(2), nt = lefts_in.size(3);
  const int64_t pairs_n = nt * nt, a_n = rules_in.size(1);
  TORCH_CHECK(rights_in.sizes() == lefts_in.sizes() && rules_in.size(0) == batch && rules_in.size(2) == pairs_n &&
                  splits > 0 && rights_in.scalar_type() == lefts_in.scalar_type() &&
                  rules_in.scalar_type() == lefts_in.scalar_type() && s >= nt &&
                  splits * pairs_n < std::numeric_limits<int32_t>::max(),
              fn, ": expected lefts and rights [b, c, K, NT] (K > 0) and rules [b, A, NT * NT] of one dtype, s >= NT, "
              "got ", shape_text(lefts_in.sizes()), ", ", shape_text(rights_in.sizes()), ", ",
              shape_text(rules_in.sizes()), ", s ", s);
  const Tensor lefts = lefts_in.contiguous(), rights = rights_in.contiguous(), rules = rules_in.contiguous();
  Tensor best = at::empty({batch, cells, a_n}, lefts.options());
  Tensor keys = at::empty({batch, cells, a_n}, lefts.options().dtype(at::kLong));
  AT_DISPATCH_FLOATING_TYPES(lefts.scalar_type(), "viterbi_middle", [&] {
    viterbi_middle_cells(lefts.data_ptr<scalar_t>(), rights.data_ptr<scalar_t>(), rules.data_ptr<scalar_t>(),
                         best.data_ptr<scalar_t>(), keys.data_ptr<int64_t>(), batch, cells, splits, nt, a_n, s);
  });
  return {best, keys};
}

// The first row of width v in the flat chart of `batch` sentences of n positions: the widths are laid out one
// after the other, each as [batch, n - v + 1] rows (chart.py's `_chart_row`).
inline int64_t chart_row(int64_t batch, int64_t n, int64_t v) { return batch * ((v - 1) * (n + 1) - (v - 1) * v / 2); }

template <typename T>
void split_logsumexp_cells(const T* ls, const T* rs, T* out, int64_t batch, int64_t n, int64_t w, int64_t nt) {
  const int64_t cells = n - w + 1;
  at::parallel_for(0, batch * cells, 1, [&](int64_t begin, int64_t end) {
    std::vector<T> top(nt), sum(nt);
    for (int64_t row = begin; row < end; ++row) {
      const int64_t b = row / cells, s = row % cells;
      // split k: the left child is width k at s, the right child width w - k at s + k
      auto left = [&](int64_t k) { return ls + (chart_row(batch, n, k) + b * (n - k + 1) + s) * nt; };
      auto right = [&](int64_t k) {
        return rs + (chart_row(batch, n, w - k) + b * (n - w + k + 1) + s + k) * nt;
      };
      T* m = top.data();
      T* acc = sum.data();
      {
        const T* l = left(1);
        const T* r = right(1);
#pragma omp simd
        for (int64_t a = 0; a < nt; ++a) m[a] = l[a] + r[a];
      }
      for (int64_t k = 2; k < w; ++k) {
        const T* l = left(k);
        const T* r = right(k);
#pragma omp simd
        for (int64_t a = 0; a < nt; ++a) m[a] = std::max(m[a], l[a] + r[a]);
      }
      std::fill(acc, acc + nt, T(0));
      for (int64_t k = 1; k < w; ++k) {
        const T* l = left(k);
        const T* r = right(k);
#pragma omp simd
        for (int64_t a = 0; a < nt; ++a) acc[a] += std::exp(l[a] + r[a] - m[a]);
      }
      T* o = out + (chart_row(batch, n, w) + row) * nt;
#pragma omp simd
      for (int64_t a = 0; a < nt; ++a) o[a] = std::log(acc[a]) + m[a];
    }
  });
}

template <typename T>
void split_logsumexp_grad_cells(const T* ls, const T* rs, const T* cells_data, const T* grads, T* gls, T* grs,
                                int64_t batch, int64_t n, int64_t w, int64_t nt) {
  const int64_t cells = n - w + 1;
  // a cell's split points write rows no other cell of this width writes: (k, s) on the left, (w - k, s + k) on the
  // right, one-to-one with (s, k) for a fixed w
  at::parallel_for(0, batch * cells, 1, [&](int64_t begin, int64_t end) {
    for (int64_t row = begin; row < end; ++row) {
      const int64_t b = row / cells, s = row % cells;
      const T* cell = cells_data + (chart_row(batch, n, w) + row) * nt;
      const T* grad = grads + (chart_row(batch, n, w) + row) * nt;
      for (int64_t k = 1; k < w; ++k) {
        const int64_t left_at = (chart_row(batch, n, k) + b * (n - k + 1) + s) * nt;
        const int64_t right_at = (chart_row(batch, n, w - k) + b * (n - w + k + 1) + s + k) * nt;
        const T* l = ls + left_at;
        const T* r = rs + right_at;
        T* gl = gls + left_at;
        T* gr = grs + right_at;
#pragma omp simd
        for (int64_t a = 0; a < nt; ++a) {
          const T g = std::exp(l[a] + r[a] - cell[a]) * grad[a];
          gl[a] += g;
          gr[a] += g;
        }
      }
    }
  });
}

void check_chart(const Tensor& t, const char* fn, const char* name, const Tensor& like, int64_t batch, int64_t n,
                 int64_t w) {
  check_float(t, 2, fn, name);
  TORCH_CHECK(t.is_contiguous() && t.scalar_type() == like.scalar_type() && t.sizes() == like.sizes() &&
                  t.size(0) == chart_row(batch, n, n + 1) && batch > 0 && 2 <= w && w <= n,
              fn, ": expected ", name, " a contiguous chart [rows, NT] of ", chart_row(batch, n, n + 1),
              " rows (batch ", batch, ", n ", n, ") like the left chart, and 2 <= w <= n, got ",
              shape_text(t.sizes()), ", w ", w);
}

void split_logsumexp(const Tensor& left, const Tensor& right, Tensor& cells, int64_t batch, int64_t n, int64_t w) {
  const char* fn = "split_logsumexp";
  check_chart(left, fn, "left", left, batch, n, w);
  check_chart(right, fn, "right", left, batch, n, w);
  check_chart(cells, fn, "cells", left, batch, n, w);
  AT_DISPATCH_FLOATING_TYPES(left.scalar_type(), "split_logsumexp", [&] {
    split_logsumexp_cells(left.data_ptr<scalar_t>(), right.data_ptr<scalar_t>(), cells.data_ptr<scalar_t>(), batch,
                          n, w, left.size(1));
  });
}

void split_logsumexp_backward(const Tensor& left, const Tensor& right, const Tensor& cells, const Tensor& grad,
                              Tensor& grad_left, Tensor& grad_right, int64_t batch, int64_t n, int64_t w) {
  const char* fn = "split_logsumexp_backward";
  check_chart(left, fn, "left", left, batch, n, w);
  check_chart(right, fn, "right", left, batch, n, w);
  check_chart(cells, fn, "cells", left, batch, n, w);
  check_chart(grad, fn, "grad", left, batch, n, w);
  check_chart(grad_left, fn, "grad_left", left, batch, n, w);
  check_chart(grad_right, fn, "grad_right", left, batch, n, w);
  AT_DISPATCH_FLOATING_TYPES(left.scalar_type(), "split_logsumexp_backward", [&] {
    split_logsumexp_grad_cells(left.data_ptr<scalar_t>(), right.data_ptr<scalar_t>(), cells.data_ptr<scalar_t>(),
                               grad.data_ptr<scalar_t>(), grad_left.data_ptr<scalar_t>(),
                               grad_right.data_ptr<scalar_t>(), batch, n, w, left.size(1));
  });
}

template <typename T>
void split_max_cells(const T* ls, const T* rs, const int64_t* lsym, const int64_t* rsym, T* best, int64_t* keys,
                     int64_t batch, int64_t n, int64_t w, int64_t nt, int64_t s) {
  const int64_t cells = n - w + 1;
  at::parallel_for(0, batch * cells, 1, [&](int64_t begin, int64_t end) {
    std::vector<int64_t> first(nt);
    for (int64_t row = begin; row < end; ++row) {
      const int64_t b = row / cells, c = row % cells;
      T* top = best + (chart_row(batch, n, w) + row) * nt;
      int64_t* key = keys + (chart_row(batch, n, w) + row) * nt;
      for (int64_t k = 1; k < w; ++k) {
        const T* l = ls + (chart_row(batch, n, k) + b * (n - k + 1) + c) * nt;
        const T* r = rs + (chart_row(batch, n, w - k) + b * (n - w + k + 1) + c + k) * nt;
        if (k == 1) {
#pragma omp simd
          for (int64_t a = 0; a < nt; ++a) {
            top[a] = l[a] + r[a];
            first[a] = 1;
          }
          continue;
        }
#pragma omp simd
        for (int64_t a = 0; a < nt; ++a) {
          const T candidate = l[a] + r[a];
          const bool better = candidate > top[a];  // strictly: the first split keeps a tie
          top[a] = better ? candidate : top[a];
          first[a] = better ? k : first[a];
        }
      }
      for (int64_t a = 0; a < nt; ++a) {
        const int64_t k = first[a];
        const int64_t left_at = (chart_row(batch, n, k) + b * (n - k + 1) + c) * nt + a;
        const int64_t right_at = (chart_row(batch, n, w - k) + b * (n - w + k + 1) + c + k) * nt + a;
        key[a] = (k - 1) * s * s + lsym[left_at] * s + rsym[right_at];
      }
    }
  });
}

void split_max(const Tensor& left, const Tensor& right, const Tensor& left_symbols, const Tensor& right_symbols,
               Tensor& best, Tensor& keys, int64_t batch, int64_t n, int64_t w, int64_t s) {
  const char* fn = "split_max";
  check_chart(left, fn, "left", left, batch, n, w);
  check_chart(right, fn, "right", left, batch, n, w);
  check_chart(best, fn, "best", left, batch, n, w);
  for (const auto& [t, name] : {std::pair<const Tensor&, const char*>{left_symbols, "left_symbols"},
                                {right_symbols, "right_symbols"}, {keys, "keys"}}) {
    TORCH_CHECK(t.is_contiguous() && t.scalar_type() == at::kLong && t.sizes() == left.sizes(), fn, ": expected ",
                name, " a contiguous int64 chart like the left chart, got ", shape_text(t.sizes()));
  }
  AT_DISPATCH_FLOATING_TYPES(left.scalar_type(), "split_max", [&] {
    split_max_cells(left.data_ptr<scalar_t>(), right.data_ptr<scalar_t>(), left_symbols.data_ptr<int64_t>(),
                    right_symbols.data_ptr<int64_t>(), best.data_ptr<scalar_t>(), keys.data_ptr<int64_t>(), batch, n,
                    w, left.size(1), s);
  });
}

}  // namespace

PYBIND11_MODULE(TORCH_EXTENSION_NAME, module) {
  const auto without_gil = py::call_guard<py::gil_scoped_release>();
  module.def("max_plus", &max_plus, "max_k x[b, i, k] + y[b, k, j] and its first k", without_gil);
  module.def("viterbi_middle", &viterbi_middle, "Viterbi over the NT x NT splits of one width's cells",
             without_gil);
  module.def("split_logsumexp", &split_logsumexp, "the factored inside algorithm's cells of one width", without_gil);
  module.def("split_max", &split_max, "the factored Viterbi's cells of one width and their pointers", without_gil);
  module.def("split_logsumexp_backward", &split_logsumexp_backward, "their gradient, added to the children's",
             without_gil);
}

// Tree-LSTMs over a batch of trees, level by level, forward and hand-derived backward, in C++ so that the
// per-level work runs without Python and autograd overhead. The PyTorch loops in treelstm.py are the
// specification; tests check that both agree (values and gradients).
//
// Schedule (from TreeBatch): for every level, `nodes` [n] (global node indices), and for the edges into these
// nodes `child` [e], `slot` [e] (position of the parent in `nodes`), `order` [e] (child position, N-ary);
// `nodes` and `child` ascending within a level. `parent` [N] is each node's parent (-1 for roots).
// `tree_starts`: the first node of each tree (ascending from 0: a tree's nodes are contiguous).
//
// Parts: a level's products are a few to a few hundred rows, too small to split well across threads (at two
// threads they ran slower than at one). The batch is instead cut into `parts` runs of whole trees, about equal
// in nodes, which share no edge: each thread runs the whole level loop over its own part, with its own products
// (single-threaded inside the parallel region), and writes only its part's rows. One fork and join per batch.
#include <ATen/ThreadLocalState.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "common.h"

using at::Tensor;
using TensorList = std::vector<Tensor>;
using namespace treenets;

namespace {

Tensor zeros_like_rows(const Tensor& like, int64_t rows, int64_t cols) {
  return at::zeros({rows, cols}, like.options());
}

// Whether an index tensor's values ascend strictly (a level's nodes and children do: each once, in order).
bool ascending(const Tensor& t) {
  const int64_t* v = t.data_ptr<int64_t>();
  for (int64_t k = 1; k < t.size(0); ++k)
    if (v[k] <= v[k - 1]) return false;
  return true;
}

// A schedule: per level the nodes and, for the edges into them, the children and the parents' slots (and
// the children's positions, N-ary), all int64 index tensors with one entry per level.
void check_schedule(const TensorList& nodes, const TensorList& child, const TensorList& slot,
                    const TensorList* order, int64_t N, const char* fn) {
  TORCH_CHECK(child.size() == nodes.size() && slot.size() == nodes.size() &&
                  (order == nullptr || order->size() == nodes.size()),
              fn, ": the schedule must have the same number of levels in nodes, child, slot (and order), got ",
              nodes.size(), ", ", child.size(), ", ", slot.size());
  for (size_t l = 0; l < nodes.size(); ++l) {
    check_index(nodes[l], -1, fn, "nodes[level]");
    check_index(child[l], -1, fn, "child[level]");
    check_index(slot[l], child[l].size(0), fn, "slot[level]");
    if (order != nullptr) check_index((*order)[l], child[l].size(0), fn, "order[level]");
    TORCH_CHECK(ascending(nodes[l]) && ascending(child[l]), fn, ": level ", l,
                ": nodes and child must ascend strictly (each node once, in order, as TreeBatch makes them)");
    for (const auto* t : {&nodes[l], &child[l]}) {
      const int64_t* v = t->data_ptr<int64_t>();
      TORCH_CHECK(t->size(0) == 0 || (v[0] >= 0 && v[t->size(0) - 1] < N), fn, ": level ", l,
                  ": nodes and child must lie in [0, ", N, ")");
    }
  }
}

// The node bounds of `parts` runs of whole trees, about equal in nodes: [0, ..., N] (fewer parts when there
// are fewer trees).
std::vector<int64_t> part_bounds(const std::vector<int64_t>& tree_starts, int64_t parts, int64_t N, const char* fn) {
  TORCH_CHECK(parts >= 1, fn, ": parts must be at least 1, got ", parts);
  TORCH_CHECK(N == 0 || (!tree_starts.empty() && tree_starts[0] == 0), fn,
              ": tree_starts must begin with node 0");
  for (size_t t = 1; t < tree_starts.size(); ++t)
    TORCH_CHECK(tree_starts[t - 1] < tree_starts[t] && tree_starts[t] < N, fn,
                ": tree_starts must ascend strictly and lie below the number of nodes ", N);
  std::vector<int64_t> bounds{0};
  for (int64_t p = 1; p < parts; ++p) {  // the first tree that starts at or after p/parts of the nodes
    const auto start = std::lower_bound(tree_starts.begin(), tree_starts.end(), p * N / parts);
    if (start != tree_starts.end() && *start > bounds.back()) bounds.push_back(*start);
  }
  bounds.push_back(N);
  return bounds;
}

// The entries of an ascending index tensor with values in [lo, hi), as [begin, end).
std::pair<int64_t, int64_t> range_of(const Tensor& t, int64_t lo, int64_t hi) {
  const int64_t *v = t.data_ptr<int64_t>(), n = t.size(0);
  return {std::lower_bound(v, v + n, lo) - v, std::lower_bound(v, v + n, hi) - v};
}

// The row of an edge's parent among its part's nodes of the level (`n0`: the part's first entry of the level,
// `n` its number of nodes there); refuses an edge whose parent lies outside the part: `tree_starts` that cut a
// tree.
inline int64_t parent_row(int64_t slot, int64_t n0, int64_t n, int64_t child, int64_t level, const char* fn) {
  const int64_t j = slot - n0;
  TORCH_CHECK(0 <= j && j < n, fn, ": level ", level, ": the edge from node ", child,
              " leaves its tree (tree_starts do not match the schedule)");
  return j;
}

// An N-ary child's position among its siblings: 0..K-1.
inline void check_order(int64_t order, int64_t K, int64_t child, int64_t level, const char* fn) {
  TORCH_CHECK(0 <= order && order < K, fn, ": level ", level, ": order of node ", child, " is ", order,
              ", expected 0..", K - 1);
}

// Runs `part(lo, hi)` for every part [lo, hi) of `bounds`, the parts on the intra-op threads at once (with the
// caller's thread-local state: grad mode, inference mode); the tensor ops inside run single-threaded.
template <typename F>
void for_each_part(const std::vector<int64_t>& bounds, const F& part) {
  const int64_t parts = static_cast<int64_t>(bounds.size()) - 1;
  if (parts == 1) return part(bounds[0], bounds[1]);
  const at::ThreadLocalState state;
  at::parallel_for(0, parts, 1, [&](int64_t p0, int64_t p1) {
    at::ThreadLocalStateGuard guard(state);
    for (int64_t p = p0; p < p1; ++p) part(bounds[p], bounds[p + 1]);
  });
}

}  // namespace

// Child-Sum: returns h, c [N, m] and what the backward needs: act [N, 3m] (sigmoid(i), sigmoid(o), tanh(u)),
// f [N, m] (each node's forget gate towards its parent), h_sum [N, m]. Per level: two matrix products, and
// the element-wise work in two loops (one over the edges, one over the nodes) that read and write the node
// arrays in place of a dozen gathers, scatters and activations (`_Pragma`: a `#pragma` cannot stand inside the
// dispatch macro). The products are formed as h W^T ([rows, out]), so that the loops read contiguous rows (at
// 8-100 rows BLAS ran them as fast as W h^T or faster, and strided reads kept the loops from vectorising), and
// the leaves skip theirs. With `keep` false (inference) only h and c are kept.
TensorList childsum_forward(const Tensor& iou_x, const Tensor& f_x, const Tensor& w_iouh, const Tensor& b_iouh,
                            const Tensor& w_fh, const Tensor& b_fh, const TensorList& nodes, const TensorList& child,
                            const TensorList& slot, const std::vector<int64_t>& tree_starts, int64_t parts,
                            bool keep) {
  const char* fn = "childsum_forward";
  check_float(w_fh, 2, fn, "w_fh");
  check_float(iou_x, 2, fn, "iou_x");
  const int64_t N = iou_x.size(0), m = w_fh.size(0);
  check_tensor(iou_x, w_fh, {N, 3 * m}, true, fn, "iou_x");
  check_tensor(f_x, w_fh, {N, m}, true, fn, "f_x");
  check_tensor(w_iouh, w_fh, {3 * m, m}, false, fn, "w_iouh");
  check_tensor(b_iouh, w_fh, {3 * m}, true, fn, "b_iouh");
  check_tensor(w_fh, w_fh, {m, m}, false, fn, "w_fh");
  check_tensor(b_fh, w_fh, {m}, true, fn, "b_fh");
  check_schedule(nodes, child, slot, nullptr, N, fn);
  const auto bounds = part_bounds(tree_starts, parts, N, fn);
  const auto w_iouh_t = w_iouh.detach().t(), w_fh_t = w_fh.detach().t();  // (no graph inside the kernel)
  // Every node belongs to one level, which writes its rows: only f (absent at roots) needs zeros.
  auto h = at::empty({N, m}, iou_x.options()), c = at::empty({N, m}, iou_x.options());
  auto act = at::empty({keep ? N : 0, 3 * m}, iou_x.options()), f_all = zeros_like_rows(iou_x, keep ? N : 0, m);
  auto h_sum_all = at::empty({keep ? N : 0, m}, iou_x.options());
  AT_DISPATCH_FLOATING_TYPES(iou_x.scalar_type(), "childsum_forward", [&] {
    using T = scalar_t;
    for_each_part(bounds, [&](int64_t lo, int64_t hi) {
      // (pointers taken here, not captured: through a captured pointer GCC did not vectorise the loops)
      T *H = h.data_ptr<T>(), *C = c.data_ptr<T>(), *A = act.data_ptr<T>(), *FA = f_all.data_ptr<T>();
      T* HS = h_sum_all.data_ptr<T>();  // (A, FA, HS: empty unless `keep`)
      const T *IX = iou_x.data_ptr<T>(), *FX = f_x.data_ptr<T>(), *BI = b_iouh.data_ptr<T>(), *BF = b_fh.data_ptr<T>();
      std::vector<T> f_edges;  // f of the level's edges when not kept
      for (size_t l = 0; l < nodes.size(); ++l) {
        const auto [n0, n1] = range_of(nodes[l], lo, hi);
        const auto [e0, e1] = range_of(child[l], lo, hi);
        const int64_t n = n1 - n0, e = e1 - e0;
        const int64_t* nd = nodes[l].data_ptr<int64_t>() + n0;
        auto h_sum = zeros_like_rows(iou_x, n, m), fc = zeros_like_rows(iou_x, n, m);
        T *hs = h_sum.data_ptr<T>(), *fcp = fc.data_ptr<T>();
        if (e > 0) {
          auto pre_f = at::mm(h.index_select(0, child[l].slice(0, e0, e1)), w_fh_t);  // U_f h_k [e, m]
          const T* pf = pre_f.data_ptr<T>();
          if (!keep) f_edges.resize(e * m);
          const int64_t *ch = child[l].data_ptr<int64_t>() + e0, *sl = slot[l].data_ptr<int64_t>() + e0;
          for (int64_t k = 0; k < e; ++k) {
            const int64_t j = parent_row(sl[k], n0, n, ch[k], l, fn);
            const T *hk = H + ch[k] * m, *ck = C + ch[k] * m, *fx = FX + nd[j] * m, *p = pf + k * m;
            T *f = (keep ? FA + ch[k] * m : f_edges.data() + k * m), *sum = hs + j * m, *acc = fcp + j * m;
            _Pragma("omp simd")
            for (int64_t x = 0; x < m; ++x) {
              f[x] = sigmoid(BF[x] + p[x] + fx[x]);  // f_jk = s(W_f x_j + U_f h_k + b_f)
              acc[x] += f[x] * ck[x];
              sum[x] += hk[x];               // h~_j
            }
          }
        }
        // U h~ [n, 3m] (b added below); the leaves (every node of the first level) have h~ = 0 and skip the
        // product: in a batch of dependency trees they are about half of the nodes.
        auto iou = e > 0 ? at::mm(h_sum, w_iouh_t) : zeros_like_rows(iou_x, n, 3 * m);
        const T* pi = iou.data_ptr<T>();
        for (int64_t j = 0; j < n; ++j) {
          const T *p = pi + j * 3 * m, *px = IX + nd[j] * 3 * m;
          const T *acc = fcp + j * m, *sum = hs + j * m;
          T *cj = C + nd[j] * m, *hj = H + nd[j] * m;
          _Pragma("omp simd")
          for (int64_t x = 0; x < m; ++x) {
            const T i = sigmoid(BI[x] + p[x] + px[x]), o = sigmoid(BI[m + x] + p[m + x] + px[m + x]);
            const T u = std::tanh(BI[2 * m + x] + p[2 * m + x] + px[2 * m + x]);
            const T cx = i * u + acc[x];  // c_j = i_j u_j + sum_k f_jk c_k
            cj[x] = cx;
            hj[x] = o * std::tanh(cx);
            if (keep) {
              T* a = A + nd[j] * 3 * m;
              a[x] = i, a[m + x] = o, a[2 * m + x] = u;
              HS[nd[j] * m + x] = sum[x];
            }
          }
        }
      }
    });
  });
  return {h, c, act, f_all, h_sum_all};
}

// Gradients of childsum_forward: d_iou_x, d_f_x, d_w_iouh, d_b_iouh, d_w_fh, d_b_fh.
TensorList childsum_backward(const c10::optional<Tensor>& grad_h, const c10::optional<Tensor>& grad_c,
                             const Tensor& w_iouh, const Tensor& w_fh, const Tensor& h, const Tensor& c,
                             const Tensor& act, const Tensor& f_all, const Tensor& h_sum_all, const Tensor& parent,
                             const TensorList& nodes, const TensorList& child, const TensorList& slot,
                             const std::vector<int64_t>& tree_starts, int64_t parts) {
  const char* fn = "childsum_backward";
  check_float(h, 2, fn, "h");
  const int64_t N = h.size(0), m = h.size(1);
  check_tensor(h, h, {N, m}, true, fn, "h");
  check_tensor(c, h, {N, m}, true, fn, "c");
  check_tensor(act, h, {N, 3 * m}, true, fn, "act");
  check_tensor(f_all, h, {N, m}, true, fn, "f_all");
  check_tensor(h_sum_all, h, {N, m}, true, fn, "h_sum_all");
  check_tensor(w_iouh, h, {3 * m, m}, false, fn, "w_iouh");
  check_tensor(w_fh, h, {m, m}, false, fn, "w_fh");
  check_optional(grad_h, h, {N, m}, fn, "grad_h");
  check_optional(grad_c, h, {N, m}, fn, "grad_c");
  check_index(parent, N, fn, "parent");
  check_schedule(nodes, child, slot, nullptr, N, fn);
  const auto bounds = part_bounds(tree_starts, parts, N, fn);
  const auto w_iouh_d = w_iouh.detach(), w_fh_d = w_fh.detach();
  auto dh = grad_h.has_value() ? grad_h->contiguous().clone() : zeros_like_rows(h, N, m);
  auto dc = grad_c.has_value() ? grad_c->contiguous().clone() : zeros_like_rows(h, N, m);
  auto d_iou = zeros_like_rows(h, N, 3 * m), d_f = zeros_like_rows(h, N, m);
  AT_DISPATCH_FLOATING_TYPES(h.scalar_type(), "childsum_backward", [&] {
    using T = scalar_t;
    for_each_part(bounds, [&](int64_t lo, int64_t hi) {
      T *DH = dh.data_ptr<T>(), *DC = dc.data_ptr<T>(), *DI = d_iou.data_ptr<T>(), *DF = d_f.data_ptr<T>();
      const T *C = c.data_ptr<T>(), *A = act.data_ptr<T>(), *FA = f_all.data_ptr<T>();
      for (int64_t l = static_cast<int64_t>(nodes.size()) - 1; l >= 0; --l) {
        // Every parent of these nodes is higher up and done: their dh, dc are complete.
        const auto [n0, n1] = range_of(nodes[l], lo, hi);
        const auto [e0, e1] = range_of(child[l], lo, hi);
        const int64_t n = n1 - n0, e = e1 - e0;
        const int64_t* nd = nodes[l].data_ptr<int64_t>() + n0;
        auto d_pre = at::empty({n, 3 * m}, h.options()), dc_level = at::empty({n, m}, h.options());
        T *dp = d_pre.data_ptr<T>(), *dcl = dc_level.data_ptr<T>();
        for (int64_t j = 0; j < n; ++j) {
          const T *a = A + nd[j] * 3 * m, *cj = C + nd[j] * m, *dhj = DH + nd[j] * m, *dcj = DC + nd[j] * m;
          T *d = dp + j * 3 * m, *dcx = dcl + j * m, *di = DI + nd[j] * 3 * m;
          _Pragma("omp simd")
          for (int64_t x = 0; x < m; ++x) {
            const T i = a[x], o = a[m + x], u = a[2 * m + x], tc = std::tanh(cj[x]);
            const T dcv = dcj[x] + dhj[x] * o * (T(1) - tc * tc);  // h = o tanh(c)
            dcx[x] = dcv;
            di[x] = d[x] = dcv * u * i * (T(1) - i);
            di[m + x] = d[m + x] = dhj[x] * tc * o * (T(1) - o);
            di[2 * m + x] = d[2 * m + x] = dcv * i * (T(1) - u * u);
          }
        }
        if (e == 0) continue;
        const int64_t *ch = child[l].data_ptr<int64_t>() + e0, *sl = slot[l].data_ptr<int64_t>() + e0;
        auto d_f_pre = at::empty({e, m}, h.options());
        T* dfp = d_f_pre.data_ptr<T>();
        for (int64_t k = 0; k < e; ++k) {  // c = ... + sum_k f_k c_k
          const int64_t j = parent_row(sl[k], n0, n, ch[k], l, fn);
          const T *f = FA + ch[k] * m, *ck = C + ch[k] * m, *dcv = dcl + j * m;
          T *df = dfp + k * m, *dfa = DF + ch[k] * m, *dck = DC + ch[k] * m;
          _Pragma("omp simd")
          for (int64_t x = 0; x < m; ++x) {
            dfa[x] = df[x] = dcv[x] * ck[x] * f[x] * (T(1) - f[x]);
            dck[x] += dcv[x] * f[x];
          }
        }
        // iou = W x + U h~ + b and f_k = s(W_f x + U_f h_k + b_f): the children's dh.
        auto d_h_sum = at::mm(d_pre, w_iouh_d), d_h_f = at::mm(d_f_pre, w_fh_d);
        const T *dhs = d_h_sum.data_ptr<T>(), *dhf = d_h_f.data_ptr<T>();
        for (int64_t k = 0; k < e; ++k) {
          const T *from_sum = dhs + (sl[k] - n0) * m, *from_f = dhf + k * m;
          T* dhk = DH + ch[k] * m;
          _Pragma("omp simd")
          for (int64_t x = 0; x < m; ++x) dhk[x] += from_sum[x] + from_f[x];
        }
      }
    });
  });
  // Weight gradients over all nodes at once.
  auto has_parent = (parent >= 0).nonzero().squeeze(1);
  auto d_f_edges = d_f.index_select(0, has_parent);
  auto d_f_x = zeros_like_rows(h, N, m).index_add_(0, parent.index_select(0, has_parent), d_f_edges);
  return {d_iou, d_f_x, at::mm(d_iou.t(), h_sum_all), d_iou.sum(0),
          at::mm(d_f_edges.t(), h.index_select(0, has_parent)), d_f_edges.sum(0)};
}

// N-ary: x_iou [N, 3m] (W x + b for i, o, u), x_f [N, m] (W_f x); u_w [(3+K)m, K m], u_b [(3+K)m].
// Returns h, c [N, m], and with `keep` what the backward needs: kids_h [N, K m] (children's h in their
// positions), gates [N, (3+K) m] after activation (without keep both have no rows: inference keeps only h, c).
// Per level: one matrix product; the children are placed and the gates computed in two loops.
TensorList nary_forward(const Tensor& x_iou, const Tensor& x_f, const Tensor& u_w, const Tensor& u_b, int64_t K,
                        const TensorList& nodes, const TensorList& child, const TensorList& slot,
                        const TensorList& order, const std::vector<int64_t>& tree_starts, int64_t parts, bool keep) {
  const char* fn = "nary_forward";
  check_float(x_f, 2, fn, "x_f");
  const int64_t N = x_f.size(0), m = x_f.size(1), G = (3 + K) * m;
  TORCH_CHECK(K > 0, fn, ": K (children per node) must be positive, got ", K);
  check_tensor(x_f, x_f, {N, m}, true, fn, "x_f");
  check_tensor(x_iou, x_f, {N, 3 * m}, true, fn, "x_iou");
  check_tensor(u_w, x_f, {G, K * m}, false, fn, "u_w");
  check_tensor(u_b, x_f, {G}, false, fn, "u_b");
  check_schedule(nodes, child, slot, &order, N, fn);
  const auto bounds = part_bounds(tree_starts, parts, N, fn);
  auto h = zeros_like_rows(x_iou, N, m), c = zeros_like_rows(x_iou, N, m);
  auto kids_all = zeros_like_rows(x_iou, keep ? N : 0, K * m), gates_all = zeros_like_rows(x_iou, keep ? N : 0, G);
  const auto u_t = u_w.detach().t(), u_b_d = u_b.detach();
  AT_DISPATCH_FLOATING_TYPES(x_iou.scalar_type(), "nary_forward", [&] {
    using T = scalar_t;
    for_each_part(bounds, [&](int64_t lo, int64_t hi) {
      T *H = h.data_ptr<T>(), *C = c.data_ptr<T>(), *KA = kids_all.data_ptr<T>(), *GA = gates_all.data_ptr<T>();
      const T *XI = x_iou.data_ptr<T>(), *XF = x_f.data_ptr<T>();
      std::vector<T> scratch(keep ? 0 : G);  // one node's gates when they are not kept
      for (size_t l = 0; l < nodes.size(); ++l) {
        const auto [n0, n1] = range_of(nodes[l], lo, hi);
        const auto [e0, e1] = range_of(child[l], lo, hi);
        const int64_t n = n1 - n0, e = e1 - e0;
        const int64_t* nd = nodes[l].data_ptr<int64_t>() + n0;
        auto kids_h = zeros_like_rows(x_iou, n, K * m), kids_c = zeros_like_rows(x_iou, n, K * m);
        T *kh = kids_h.data_ptr<T>(), *kc = kids_c.data_ptr<T>();
        const int64_t *ch = child[l].data_ptr<int64_t>() + e0, *sl = slot[l].data_ptr<int64_t>() + e0;
        const int64_t* od = order[l].data_ptr<int64_t>() + e0;
        for (int64_t k = 0; k < e; ++k) {  // children in their positions; absent ones stay zero
          const int64_t j = parent_row(sl[k], n0, n, ch[k], l, fn);
          check_order(od[k], K, ch[k], l, fn);
          std::copy_n(H + ch[k] * m, m, kh + (j * K + od[k]) * m);
          std::copy_n(C + ch[k] * m, m, kc + (j * K + od[k]) * m);
        }
        // sum_l U^l h_jl + b, for i, o, u and the K forget gates; a level without children (the leaves) has
        // only b, and skips the product
        auto pre = e > 0 ? at::addmm(u_b_d, kids_h, u_t) : u_b_d.expand({n, G}).contiguous();
        const T* pp = pre.data_ptr<T>();
        for (int64_t j = 0; j < n; ++j) {
          const T *p = pp + j * G, *xi = XI + nd[j] * 3 * m, *xf = XF + nd[j] * m, *kcj = kc + j * K * m;
          T *g = keep ? GA + nd[j] * G : scratch.data(), *cj = C + nd[j] * m, *hj = H + nd[j] * m;
          if (keep) std::copy_n(kh + j * K * m, K * m, KA + nd[j] * K * m);
          for (int64_t x = 0; x < m; ++x) cj[x] = 0;
          for (int64_t q = 0; q < K; ++q) {
            _Pragma("omp simd")
            for (int64_t x = 0; x < m; ++x) {
              const T f = sigmoid(p[(3 + q) * m + x] + xf[x]);  // f_jq = s(W_f x_j + sum_l U_f^ql h_jl + b_f)
              g[(3 + q) * m + x] = f;
              cj[x] += f * kcj[q * m + x];
            }
          }
          _Pragma("omp simd")
          for (int64_t x = 0; x < m; ++x) {
            const T i = sigmoid(p[x] + xi[x]), o = sigmoid(p[m + x] + xi[m + x]);
            const T u = std::tanh(p[2 * m + x] + xi[2 * m + x]);
            const T cx = i * u + cj[x];
            g[x] = i, g[m + x] = o, g[2 * m + x] = u;
            cj[x] = cx;
            hj[x] = o * std::tanh(cx);
          }
        }
      }
    });
  });
  return {h, c, kids_all, gates_all};
}

// Gradients of nary_forward: d_x_iou, d_x_f, d_u_w, d_u_b.
TensorList nary_backward(const c10::optional<Tensor>& grad_h, const c10::optional<Tensor>& grad_c,
                         const Tensor& u_w, int64_t K, const Tensor& c, const Tensor& kids_all,
                         const Tensor& gates_all, const TensorList& nodes, const TensorList& child,
                         const TensorList& slot, const TensorList& order, const std::vector<int64_t>& tree_starts,
                         int64_t parts) {
  const char* fn = "nary_backward";
  check_float(c, 2, fn, "c");
  const int64_t N = c.size(0), m = c.size(1), G = (3 + K) * m;
  TORCH_CHECK(K > 0, fn, ": K (children per node) must be positive, got ", K);
  check_tensor(c, c, {N, m}, true, fn, "c");
  check_tensor(kids_all, c, {N, K * m}, true, fn, "kids_all");
  check_tensor(gates_all, c, {N, G}, true, fn, "gates_all");
  check_tensor(u_w, c, {G, K * m}, false, fn, "u_w");
  check_optional(grad_h, c, {N, m}, fn, "grad_h");
  check_optional(grad_c, c, {N, m}, fn, "grad_c");
  check_schedule(nodes, child, slot, &order, N, fn);
  const auto bounds = part_bounds(tree_starts, parts, N, fn);
  const auto u_w_d = u_w.detach();
  auto dh = grad_h.has_value() ? grad_h->contiguous().clone() : zeros_like_rows(c, N, m);
  auto dc = grad_c.has_value() ? grad_c->contiguous().clone() : zeros_like_rows(c, N, m);
  auto d_pre_all = zeros_like_rows(c, N, G);
  AT_DISPATCH_FLOATING_TYPES(c.scalar_type(), "nary_backward", [&] {
    using T = scalar_t;
    for_each_part(bounds, [&](int64_t lo, int64_t hi) {
      T *DH = dh.data_ptr<T>(), *DC = dc.data_ptr<T>(), *DP = d_pre_all.data_ptr<T>();
      const T *C = c.data_ptr<T>(), *GA = gates_all.data_ptr<T>();
      for (int64_t l = static_cast<int64_t>(nodes.size()) - 1; l >= 0; --l) {
        // Every parent of these nodes is higher up and done: their dh, dc are complete.
        const auto [n0, n1] = range_of(nodes[l], lo, hi);
        const auto [e0, e1] = range_of(child[l], lo, hi);
        const int64_t n = n1 - n0, e = e1 - e0;
        const int64_t* nd = nodes[l].data_ptr<int64_t>() + n0;
        const int64_t *ch = child[l].data_ptr<int64_t>() + e0, *sl = slot[l].data_ptr<int64_t>() + e0;
        const int64_t* od = order[l].data_ptr<int64_t>() + e0;
        auto kids_c = zeros_like_rows(c, n, K * m), d_pre = at::empty({n, G}, c.options());
        auto dc_level = at::empty({n, m}, c.options());
        T *kc = kids_c.data_ptr<T>(), *dp = d_pre.data_ptr<T>(), *dcl = dc_level.data_ptr<T>();
        for (int64_t k = 0; k < e; ++k) {
          const int64_t j = parent_row(sl[k], n0, n, ch[k], l, fn);
          check_order(od[k], K, ch[k], l, fn);
          std::copy_n(C + ch[k] * m, m, kc + (j * K + od[k]) * m);
        }
        for (int64_t j = 0; j < n; ++j) {
          const T *g = GA + nd[j] * G, *cj = C + nd[j] * m, *dhj = DH + nd[j] * m, *dcj = DC + nd[j] * m;
          const T* kcj = kc + j * K * m;
          T *d = dp + j * G, *dcx = dcl + j * m;
          _Pragma("omp simd")
          for (int64_t x = 0; x < m; ++x) {
            const T i = g[x], o = g[m + x], u = g[2 * m + x], tc = std::tanh(cj[x]);
            const T dcv = dcj[x] + dhj[x] * o * (T(1) - tc * tc);  // h = o tanh(c)
            dcx[x] = dcv;
            d[x] = dcv * u * i * (T(1) - i);
            d[m + x] = dhj[x] * tc * o * (T(1) - o);
            d[2 * m + x] = dcv * i * (T(1) - u * u);
          }
          for (int64_t q = 0; q < K; ++q) {  // c = ... + sum_q f_q c_q
            const T* f = g + (3 + q) * m;
            _Pragma("omp simd")
            for (int64_t x = 0; x < m; ++x) d[(3 + q) * m + x] = dcx[x] * kcj[q * m + x] * f[x] * (T(1) - f[x]);
          }
          std::copy_n(d, G, DP + nd[j] * G);
        }
        if (e == 0) continue;
        auto d_kids_h = at::mm(d_pre, u_w_d);  // [n, K m]: the children's dh through all the gates
        const T* dkh = d_kids_h.data_ptr<T>();
        for (int64_t k = 0; k < e; ++k) {
          const int64_t j = sl[k] - n0;
          const T *from = dkh + (j * K + od[k]) * m, *f = GA + nd[j] * G + (3 + od[k]) * m;
          const T* dcv = dcl + j * m;
          T *dhk = DH + ch[k] * m, *dck = DC + ch[k] * m;
          _Pragma("omp simd")
          for (int64_t x = 0; x < m; ++x) {
            dhk[x] += from[x];
            dck[x] += dcv[x] * f[x];
          }
        }
      }
    });
  });
  auto d_x_f = d_pre_all.narrow(1, 3 * m, K * m).view({N, K, m}).sum(1);
  return {d_pre_all.narrow(1, 0, 3 * m).contiguous(), d_x_f, at::mm(d_pre_all.t(), kids_all),
          d_pre_all.sum(0)};
}

// The kernels run without the GIL (their arguments are converted before): the threads of the parts run torch
// ops, which under a Python dispatch mode (e.g. FlopCounterMode) call back into Python; with the caller holding
// the GIL at the end of the parallel region, they would wait for each other forever.
PYBIND11_MODULE(TORCH_EXTENSION_NAME, module) {
  const auto without_gil = py::call_guard<py::gil_scoped_release>();
  module.def("childsum_forward", &childsum_forward, "Child-Sum Tree-LSTM over a batch of trees", without_gil);
  module.def("childsum_backward", &childsum_backward, "its backward", without_gil);
  module.def("nary_forward", &nary_forward, "N-ary Tree-LSTM over a batch of trees", without_gil);
  module.def("nary_backward", &nary_backward, "its backward", without_gil);
  module.def("parts_on_threads", [] {
#ifdef _OPENMP
    return true;
#else
    return false;  // built without OpenMP: parts would run one after another
#endif
  }, "whether the parts of a batch run on threads at the same time");
}

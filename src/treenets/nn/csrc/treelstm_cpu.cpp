// Tree-LSTMs over a batch of trees, level by level, forward and hand-derived backward, in C++ so that the
// per-level work runs without Python and autograd overhead. The PyTorch loops in treelstm.py are the
// specification; tests check that both agree (values and gradients).
//
// Schedule (from TreeBatch): for every level, `nodes` [n] (global node indices), and for the edges into these
// nodes `child` [e], `slot` [e] (position of the parent in `nodes`), `order` [e] (child position, N-ary).
// `parent` [N] is each node's parent (-1 for roots).
#include <torch/extension.h>

#include <vector>

using torch::Tensor;
using TensorList = std::vector<Tensor>;

namespace {

Tensor zeros_like_rows(const Tensor& like, int64_t rows, int64_t cols) {
  return torch::zeros({rows, cols}, like.options());
}

}  // namespace

// Child-Sum: returns h, c [N, m] and what the backward needs: act [N, 3m] (sigmoid(i), sigmoid(o), tanh(u)),
// f [N, m] (each node's forget gate towards its parent), h_sum [N, m].
TensorList childsum_forward(const Tensor& iou_x, const Tensor& f_x, const Tensor& w_iouh, const Tensor& b_iouh,
                            const Tensor& w_fh, const Tensor& b_fh, const TensorList& nodes, const TensorList& child,
                            const TensorList& slot, const TensorList& edge_parent) {
  const int64_t N = iou_x.size(0), m = w_fh.size(0);
  auto h = zeros_like_rows(iou_x, N, m), c = zeros_like_rows(iou_x, N, m);
  auto act = zeros_like_rows(iou_x, N, 3 * m), f_all = zeros_like_rows(iou_x, N, m);
  auto h_sum_all = zeros_like_rows(iou_x, N, m);
  const auto w_iouh_t = w_iouh.t(), w_fh_t = w_fh.t();
  for (size_t l = 0; l < nodes.size(); ++l) {
    const int64_t n = nodes[l].size(0);
    auto h_sum = zeros_like_rows(iou_x, n, m), fc = zeros_like_rows(iou_x, n, m);
    if (child[l].numel() > 0) {
      auto child_h = h.index_select(0, child[l]), child_c = c.index_select(0, child[l]);
      h_sum.index_add_(0, slot[l], child_h);
      auto f = torch::sigmoid(torch::addmm(b_fh, child_h, w_fh_t).add_(f_x.index_select(0, edge_parent[l])));
      fc.index_add_(0, slot[l], f * child_c);
      f_all.index_copy_(0, child[l], f);
    }
    auto iou = torch::addmm(b_iouh, h_sum, w_iouh_t).add_(iou_x.index_select(0, nodes[l]));
    auto i = torch::sigmoid(iou.narrow(1, 0, m)), o = torch::sigmoid(iou.narrow(1, m, m));
    auto u = torch::tanh(iou.narrow(1, 2 * m, m));
    auto c_level = i * u + fc;
    auto h_level = o * torch::tanh(c_level);
    act.index_copy_(0, nodes[l], torch::cat({i, o, u}, 1));
    h_sum_all.index_copy_(0, nodes[l], h_sum);
    c.index_copy_(0, nodes[l], c_level);
    h.index_copy_(0, nodes[l], h_level);
  }
  return {h, c, act, f_all, h_sum_all};
}

// Gradients of childsum_forward: d_iou_x, d_f_x, d_w_iouh, d_b_iouh, d_w_fh, d_b_fh.
TensorList childsum_backward(const c10::optional<Tensor>& grad_h, const c10::optional<Tensor>& grad_c,
                             const Tensor& w_iouh, const Tensor& w_fh, const Tensor& h, const Tensor& c,
                             const Tensor& act, const Tensor& f_all, const Tensor& h_sum_all, const Tensor& parent,
                             const TensorList& nodes, const TensorList& child, const TensorList& slot) {
  const int64_t N = h.size(0), m = h.size(1);
  auto dh = grad_h.has_value() ? grad_h->contiguous().clone() : zeros_like_rows(h, N, m);
  auto dc = grad_c.has_value() ? grad_c->contiguous().clone() : zeros_like_rows(h, N, m);
  auto d_iou = zeros_like_rows(h, N, 3 * m), d_f = zeros_like_rows(h, N, m);
  for (int64_t l = static_cast<int64_t>(nodes.size()) - 1; l >= 0; --l) {
    // Every parent of these nodes is higher up and done: their dh, dc are complete.
    auto dh_l = dh.index_select(0, nodes[l]), dc_l = dc.index_select(0, nodes[l]);
    auto a = act.index_select(0, nodes[l]);
    auto i = a.narrow(1, 0, m), o = a.narrow(1, m, m), u = a.narrow(1, 2 * m, m);
    auto tanh_c = torch::tanh(c.index_select(0, nodes[l]));
    auto d_o = dh_l * tanh_c;
    dc_l = dc_l + dh_l * o * (1 - tanh_c * tanh_c);  // h = o tanh(c)
    auto d_pre = torch::cat({dc_l * u * i * (1 - i), d_o * o * (1 - o), dc_l * i * (1 - u * u)}, 1);
    d_iou.index_copy_(0, nodes[l], d_pre);
    if (child[l].numel() > 0) {
      auto d_h_sum = torch::mm(d_pre, w_iouh);          // iou = ... + U h_sum
      auto d_fc = dc_l.index_select(0, slot[l]);        // c = ... + sum_k f_k c_k
      auto f = f_all.index_select(0, child[l]);
      auto d_f_pre = d_fc * c.index_select(0, child[l]) * f * (1 - f);
      d_f.index_copy_(0, child[l], d_f_pre);
      dh.index_add_(0, child[l], d_h_sum.index_select(0, slot[l]) + torch::mm(d_f_pre, w_fh));
      dc.index_add_(0, child[l], d_fc * f);
    }
  }
  // Weight gradients over all nodes at once.
  auto has_parent = (parent >= 0).nonzero().squeeze(1);
  auto d_f_edges = d_f.index_select(0, has_parent);
  auto d_f_x = zeros_like_rows(h, N, m).index_add_(0, parent.index_select(0, has_parent), d_f_edges);
  return {d_iou, d_f_x, torch::mm(d_iou.t(), h_sum_all), d_iou.sum(0),
          torch::mm(d_f_edges.t(), h.index_select(0, has_parent)), d_f_edges.sum(0)};
}

// N-ary: x_iou [N, 3m] (W x + b for i, o, u), x_f [N, m] (W_f x); u_w [(3+K)m, K m], u_b [(3+K)m].
// Returns h, c [N, m], kids_h [N, K m] (children's h in their positions), gates [N, (3+K) m] after activation.
TensorList nary_forward(const Tensor& x_iou, const Tensor& x_f, const Tensor& u_w, const Tensor& u_b, int64_t K,
                        const TensorList& nodes, const TensorList& child, const TensorList& slot,
                        const TensorList& order) {
  const int64_t N = x_iou.size(0), m = x_f.size(1);
  auto h = zeros_like_rows(x_iou, N, m), c = zeros_like_rows(x_iou, N, m);
  auto kids_all = zeros_like_rows(x_iou, N, K * m), gates_all = zeros_like_rows(x_iou, N, (3 + K) * m);
  const auto u_t = u_w.t();
  for (size_t l = 0; l < nodes.size(); ++l) {
    const int64_t n = nodes[l].size(0);
    auto kids_h = torch::zeros({n, K, m}, x_iou.options()), kids_c = torch::zeros({n, K, m}, x_iou.options());
    if (child[l].numel() > 0) {
      kids_h.index_put_({slot[l], order[l]}, h.index_select(0, child[l]));
      kids_c.index_put_({slot[l], order[l]}, c.index_select(0, child[l]));
    }
    auto flat = kids_h.view({n, K * m});
    auto pre = torch::addmm(u_b, flat, u_t);
    pre.narrow(1, 0, 3 * m).add_(x_iou.index_select(0, nodes[l]));
    pre.narrow(1, 3 * m, K * m).view({n, K, m}).add_(x_f.index_select(0, nodes[l]).unsqueeze(1));
    auto i = torch::sigmoid(pre.narrow(1, 0, m)), o = torch::sigmoid(pre.narrow(1, m, m));
    auto u = torch::tanh(pre.narrow(1, 2 * m, m));
    auto f = torch::sigmoid(pre.narrow(1, 3 * m, K * m)).view({n, K, m});
    auto c_level = i * u + (f * kids_c).sum(1);
    auto h_level = o * torch::tanh(c_level);
    kids_all.index_copy_(0, nodes[l], flat);
    gates_all.index_copy_(0, nodes[l], torch::cat({i, o, u, f.view({n, K * m})}, 1));
    c.index_copy_(0, nodes[l], c_level);
    h.index_copy_(0, nodes[l], h_level);
  }
  return {h, c, kids_all, gates_all};
}

// Gradients of nary_forward: d_x_iou, d_x_f, d_u_w, d_u_b.
TensorList nary_backward(const c10::optional<Tensor>& grad_h, const c10::optional<Tensor>& grad_c,
                         const Tensor& u_w, int64_t K, const Tensor& c, const Tensor& kids_all,
                         const Tensor& gates_all, const TensorList& nodes, const TensorList& child,
                         const TensorList& slot, const TensorList& order) {
  const int64_t N = c.size(0), m = c.size(1);
  auto dh = grad_h.has_value() ? grad_h->contiguous().clone() : zeros_like_rows(c, N, m);
  auto dc = grad_c.has_value() ? grad_c->contiguous().clone() : zeros_like_rows(c, N, m);
  auto d_pre_all = zeros_like_rows(c, N, (3 + K) * m);
  for (int64_t l = static_cast<int64_t>(nodes.size()) - 1; l >= 0; --l) {
    const int64_t n = nodes[l].size(0);
    auto dh_l = dh.index_select(0, nodes[l]), dc_l = dc.index_select(0, nodes[l]);
    auto g = gates_all.index_select(0, nodes[l]);
    auto i = g.narrow(1, 0, m), o = g.narrow(1, m, m), u = g.narrow(1, 2 * m, m);
    auto f = g.narrow(1, 3 * m, K * m).view({n, K, m});
    auto tanh_c = torch::tanh(c.index_select(0, nodes[l]));
    dc_l = dc_l + dh_l * o * (1 - tanh_c * tanh_c);
    auto kids_c = torch::zeros({n, K, m}, c.options());
    if (child[l].numel() > 0) kids_c.index_put_({slot[l], order[l]}, c.index_select(0, child[l]));
    auto d_f = dc_l.unsqueeze(1) * kids_c * f * (1 - f);
    auto d_pre = torch::cat({dc_l * u * i * (1 - i), dh_l * tanh_c * o * (1 - o), dc_l * i * (1 - u * u),
                             d_f.view({n, K * m})}, 1);
    d_pre_all.index_copy_(0, nodes[l], d_pre);
    if (child[l].numel() > 0) {
      auto d_kids_h = torch::mm(d_pre, u_w).view({n, K, m});
      auto d_kids_c = dc_l.unsqueeze(1) * f;
      dh.index_add_(0, child[l], d_kids_h.index({slot[l], order[l]}));
      dc.index_add_(0, child[l], d_kids_c.index({slot[l], order[l]}));
    }
  }
  auto d_x_f = d_pre_all.narrow(1, 3 * m, K * m).view({N, K, m}).sum(1);
  return {d_pre_all.narrow(1, 0, 3 * m).contiguous(), d_x_f, torch::mm(d_pre_all.t(), kids_all),
          d_pre_all.sum(0)};
}

PYBIND11_MODULE(TORCH_EXTENSION_NAME, module) {
  module.def("childsum_forward", &childsum_forward, "Child-Sum Tree-LSTM over a batch of trees");
  module.def("childsum_backward", &childsum_backward, "its backward");
  module.def("nary_forward", &nary_forward, "N-ary Tree-LSTM over a batch of trees");
  module.def("nary_backward", &nary_backward, "its backward");
}

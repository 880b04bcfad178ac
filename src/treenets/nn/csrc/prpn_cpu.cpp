// PRPN's reading layer over a whole segment, for evaluation (no dropout, no autograd): the two matrix
// products of a step (query, hidden-to-gates) and everything element-wise between them (attention over the
// slots, masked softmax, the layer norms, the LSTM cell) in plain loops. `ReadingLayer.forward` in prpn.py is
// the specification and the path for training and other devices; tests check that both agree.
//
// The S slots are a ring [S, B, H]: a new state overwrites the oldest one instead of shifting the others.
#include <torch/extension.h>

#include <algorithm>
#include <cmath>
#include <vector>

using torch::Tensor;

namespace {

template <typename T>
inline T sigmoid(T x) { return T(1) / (T(1) + std::exp(-x)); }

// PRPN's layer norm of one row, in place: gamma (x - mean) / (std + eps) + beta, std unbiased.
template <typename T>
void layer_norm(T* x, const T* gamma, const T* beta, T eps, int64_t n) {
  T mean = 0;
  for (int64_t j = 0; j < n; ++j) mean += x[j];
  mean /= n;
  T var = 0;
  for (int64_t j = 0; j < n; ++j) var += (x[j] - mean) * (x[j] - mean);
  const T scale = T(1) / (std::sqrt(var / (n - 1)) + eps);
  for (int64_t j = 0; j < n; ++j) x[j] = gamma[j] * (x[j] - mean) * scale + beta[j];
}

}  // namespace

// gates_x [T, B, 4H] (the input projection, already layer-normalised), query_x [T, B, H] (its part of the
// query, with the bias), memory_gate [T, B, S], mem_h/mem_c [B, S, H] (slot 0 the most recent),
// w_query_h [H, H] (the query's hidden part), w_hh [4H, H], b_hh [4H], the two layer norms' gamma/beta/eps.
// Returns outputs [T, B, H] and the new mem_h, mem_c [B, S, H].
std::vector<Tensor> reading_forward(const Tensor& gates_x, const Tensor& query_x, const Tensor& memory_gate,
                                    const Tensor& mem_h, const Tensor& mem_c, const Tensor& w_query_h,
                                    const Tensor& w_hh, const Tensor& b_hh, const Tensor& hh_gamma,
                                    const Tensor& hh_beta, double hh_eps, const Tensor& c_gamma,
                                    const Tensor& c_beta, double c_eps) {
  const int64_t steps = gates_x.size(0), B = gates_x.size(1), H = mem_h.size(2), S = mem_h.size(1);
  // The ring is written in place: always a copy (the caller's state may be shared, e.g. h and c both zeros).
  auto ring_h = torch::empty({S, B, H}, gates_x.options()).copy_(mem_h.transpose(0, 1));
  auto ring_c = torch::empty({S, B, H}, gates_x.options()).copy_(mem_c.transpose(0, 1));
  auto out = torch::empty({steps, B, H}, gates_x.options());
  auto read_h = torch::empty({B, H}, gates_x.options()), read_c = torch::empty({B, H}, gates_x.options());
  int64_t head = 0;  // ring slot of the most recent state; k steps further back is (head + k) % S
  AT_DISPATCH_FLOATING_TYPES(gates_x.scalar_type(), "reading_forward", [&] {
    using T = scalar_t;
    const T scale = T(1) / std::sqrt(T(H));
    const T *GX = gates_x.data_ptr<T>(), *QX = query_x.data_ptr<T>(), *MG = memory_gate.data_ptr<T>();
    const T *hg = hh_gamma.data_ptr<T>(), *hb = hh_beta.data_ptr<T>();
    const T *cg = c_gamma.data_ptr<T>(), *cb = c_beta.data_ptr<T>();
    T *RH = ring_h.data_ptr<T>(), *RC = ring_c.data_ptr<T>(), *OUT = out.data_ptr<T>();
    T *rh = read_h.data_ptr<T>(), *rc = read_c.data_ptr<T>();
    const T* BH = b_hh.data_ptr<T>();
    std::vector<T> weights(S), qb(H), p(4 * H);
    for (int64_t t = 0; t < steps; ++t) {
      // q_t = W_q [x_t ; h_{t-1}]. Both products of a step are formed as W h^T ([out, B]): at these batch
      // sizes BLAS runs that shape up to twice as fast as h W^T, and the loops read it with stride B.
      auto query = torch::mm(w_query_h, ring_h[head].t());
      const T* q = query.data_ptr<T>();
      for (int64_t b = 0; b < B; ++b) {
        const T *qx = QX + (t * B + b) * H, *gate = MG + (t * B + b) * S;
        for (int64_t x = 0; x < H; ++x) qb[x] = q[x * B + b] + qx[x];
        // p_{t,k}: the official masked softmax, exp(l - max l) * a / (sum + 1e-8), over the slots
        for (int64_t k = 0; k < S; ++k) {
          const T* hk = RH + (((head + k) % S) * B + b) * H;
          T dot = 0;
          for (int64_t x = 0; x < H; ++x) dot += hk[x] * qb[x];
          weights[k] = dot * scale;
        }
        const T top = *std::max_element(weights.begin(), weights.end());
        T total = 0;
        for (int64_t k = 0; k < S; ++k) total += (weights[k] = std::exp(weights[k] - top) * gate[k]);
        for (int64_t k = 0; k < S; ++k) weights[k] /= total + T(1e-8);
        // (h~, c~) = sum_k p_{t,k} (h_{t-1-k}, c_{t-1-k})
        T *rhb = rh + b * H, *rcb = rc + b * H;
        for (int64_t x = 0; x < H; ++x) rhb[x] = rcb[x] = 0;
        for (int64_t k = 0; k < S; ++k) {
          const int64_t slot = ((head + k) % S) * B + b;
          const T *hk = RH + slot * H, *ck = RC + slot * H, w = weights[k];
          for (int64_t x = 0; x < H; ++x) rhb[x] += w * hk[x], rcb[x] += w * ck[x];
        }
      }
      auto hidden = torch::mm(w_hh, read_h.t());  // U h~, [4H, B]
      const T* pre = hidden.data_ptr<T>();
      head = (head + S - 1) % S;  // the new state takes the oldest slot
      for (int64_t b = 0; b < B; ++b) {
        for (int64_t j = 0; j < 4 * H; ++j) p[j] = BH[j] + pre[j * B + b];
        layer_norm(p.data(), hg, hb, T(hh_eps), 4 * H);
        const T* gx = GX + (t * B + b) * 4 * H;
        const T* cr = rc + b * H;
        T *c = RC + (head * B + b) * H, *h = RH + (head * B + b) * H;
        for (int64_t x = 0; x < H; ++x) {  // [i f g o] = LN(W x_t) + LN(U h~); c_t = s(f) c~ + s(i) tanh(g)
          const T i = sigmoid(gx[x] + p[x]), f = sigmoid(gx[H + x] + p[H + x]);
          c[x] = f * cr[x] + i * std::tanh(gx[2 * H + x] + p[2 * H + x]);
          h[x] = c[x];
        }
        layer_norm(h, cg, cb, T(c_eps), H);
        T* o_t = OUT + (t * B + b) * H;
        for (int64_t x = 0; x < H; ++x) o_t[x] = h[x] = sigmoid(gx[3 * H + x] + p[3 * H + x]) * std::tanh(h[x]);
      }
    }
  });
  // Back to slot 0 = the most recent, [B, S, H].
  auto order = torch::remainder(torch::arange(S) + head, S);
  return {out, ring_h.index_select(0, order).transpose(0, 1).contiguous(),
          ring_c.index_select(0, order).transpose(0, 1).contiguous()};
}

PYBIND11_MODULE(TORCH_EXTENSION_NAME, module) {
  module.def("reading_forward", &reading_forward, "PRPN reading layer over a segment, evaluation only");
}
